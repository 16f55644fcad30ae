"""robot_dynamics_demo runs in one command and shows what the node publishes."""

import os
import subprocess
import sys

import ros_harness as harness


def test_demo_runs_for_a_few_seconds_and_reports_live_outputs():
    harness.isolate_ros_environment()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(harness.REPO), env.get("PYTHONPATH")]))
    run = subprocess.run(
        [sys.executable, "-m", "robot_dynamics_ros.demo", "--duration", "6"],
        cwd=harness.REPO, env=env, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = []
    for line in run.stdout.splitlines():
        fields = line.split()
        # time, rate, latency, ||C||, k_c||qd||, ratio, K_c, processed/dropped
        if len(fields) == 9 and fields[1].endswith("/s") and fields[0][0].isdigit():
            rows.append(fields)
    assert len(rows) >= 2, run.stdout
    for fields in rows:
        norm, bound, kc_global = float(fields[4]), float(fields[5]), float(fields[7])
        assert norm <= bound * (1 + 1e-9), f"||C|| above its bound: {fields}"
        assert kc_global > 0
    # 500 Hz in; a loaded 2-core machine may serve fewer, but the stream must flow.
    assert int(rows[-1][1][:-2]) >= 100, f"joint states at 500 Hz, outputs at {rows[-1][1]}"
    processed, _dropped = rows[-1][8].split("/")
    assert int(processed) > 0

"""robot_dynamics_demo runs in one command and shows what the node publishes."""

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

import robots
import ros_harness as harness

# runs the demo for seconds at a time
pytestmark = pytest.mark.slow


def around_the_swap(rows, column, label):
    """Column ``column`` of the monitor's rows before and after the payload
    column first reads ``label``, that row left out: its matrices are the
    last output of its second, its payload column the node's report, and a
    swap takes milliseconds, so the two can fall on either side of it."""
    swapped = [f[13] for f in rows].index(label)
    return ([float(f[column]) for f in rows[:swapped] if f[13] == "none"],
            [float(f[column]) for f in rows[swapped + 1:] if f[13] == label])


def test_demo_shows_live_outputs_and_a_payload_swapped_midway():
    harness.isolate_ros_environment()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(harness.REPO), env.get("PYTHONPATH")]))
    run = subprocess.run(
        [sys.executable, "-m", "robot_dynamics_ros.demo.cli", "--duration", "14"],
        cwd=harness.REPO, env=env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert any("waiting for the /robot_dynamics node's first model" in line for line in lines), run.stdout
    assert any("payload accepted" in line for line in lines), run.stdout
    # One writer on the terminal: after the introduction every line is the
    # monitor's, its time first (or the table's header), the node's log lines
    # among them and none on stderr. Quiet when healthy: the stream starts
    # once the node serves (no joint state dropped for want of a model) and
    # sends at most 8 a tick, one tick at a time however late, so the node's
    # queue of 50 cannot overflow in this process: no WARN.
    first = next(i for i, line in enumerate(lines) if "waiting for the" in line)
    for line in lines[first:]:
        assert re.match(r"\s*(\d+\.\d\s|t\s+out/s\s)", line), f"not a line of the monitor: {line!r}"
    assert any("robot_dynamics INFO: serving 'puma560_mohan_saha'" in line for line in lines), run.stdout
    assert "[INFO]" not in run.stderr and "[WARN]" not in run.stderr, run.stderr
    assert "no_model" not in run.stdout and " WARN: " not in run.stdout, run.stdout
    rows = []
    for line in lines:
        # t, out/s, latency, M[0,0], M[1,1], M[2,2], g[1], g[2], ||C|| <= k_c|qd| <= K_c|qd|, payload
        fields = line.split()
        if len(fields) == 14 and fields[9] == fields[11] == "<=" and fields[0][0].isdigit():
            rows.append(fields)
    assert len(rows) >= 4, run.stdout
    for fields in rows:
        norm, bound, global_bound = float(fields[8]), float(fields[10]), float(fields[12])
        assert norm <= bound * (1 + 1e-3) + 1e-3, f"||C|| above k_c(q) ||qd||: {fields}"
        assert bound <= global_bound * (1 + 1e-3) + 1e-3, f"k_c(q) ||qd|| above K_c ||qd||: {fields}"
    # 500 Hz in; a loaded 2-core machine may serve fewer, but the stream must flow.
    assert max(int(fields[1]) for fields in rows) >= 100, run.stdout
    # The 2 kg on link6 sits ~0.43 m from joint 3's axis: it adds ~0.37 kg m^2 to M[2,2]
    # at every configuration, more than the bare arm's M[2,2] ever is.
    before, after = around_the_swap(rows, 5, "link6:2kg")
    assert before and after, run.stdout
    assert min(after) > max(before), run.stdout


def test_floating_base_demo_shows_the_quadrupeds_mass_and_its_payload():
    """--robot solo12: M[0,0] of a floating base is the robot's whole mass,
    which the 2 kg pack put on its trunk midway raises by 2 kg."""
    harness.isolate_ros_environment()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(harness.REPO), env.get("PYTHONPATH")]))
    run = subprocess.run(
        [sys.executable, "-m", "robot_dynamics_ros.demo.cli", "--robot", "solo12", "--duration", "24",
         "--rate", "200"],
        cwd=harness.REPO, env=env, capture_output=True, text=True, timeout=420)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "payload accepted" in run.stdout, run.stdout
    rows = [line.split() for line in run.stdout.splitlines()]
    # t, out/s, latency, M[0,0], M[3,3], M[4,4], g[2], g[7], ||C|| <= k_c|qd| <= K_c|qd|, payload
    rows = [f for f in rows if len(f) == 14 and f[9] == f[11] == "<=" and f[0][0].isdigit()]
    assert max(int(f[1]) for f in rows) >= 50, run.stdout
    mass = sum(float(m.get("value"))
               for m in ET.parse(robots.example_robot_urdf("solo12")).getroot().iter("mass"))
    before, after = around_the_swap(rows, 3, "base_link:2kg")
    assert set(before) == {round(mass, 3)} and set(after) == {round(mass + 2.0, 3)}, run.stdout

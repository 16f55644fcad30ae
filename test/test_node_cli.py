"""What a user sees first: ``robot_dynamics_node --help``, and a node waiting for its URDF."""

import subprocess
import sys
import time
from pathlib import Path

import ros_harness as harness

EXECUTABLE = Path(sys.executable).parent / "robot_dynamics_node"


def test_help_prints_usage_and_exits_at_once():
    start = time.monotonic()
    run = subprocess.run([str(EXECUTABLE), "--help"], capture_output=True, text=True, timeout=30)
    elapsed = time.monotonic() - start
    assert run.returncode == 0, run.stderr
    assert elapsed < 2.0, f"--help took {elapsed:.1f} s"
    for expected in ("usage: robot_dynamics_node", "urdf_file", "payload.mass", "joint_states",
                     "~/mass_matrix", "~/gravity_torques", "ros2 param set /robot_dynamics"):
        assert expected in run.stdout, f"{expected!r} missing from --help:\n{run.stdout}"


def test_a_node_without_urdf_says_where_it_listens_and_repeats_it(tmp_path):
    harness.isolate_ros_environment()
    node = harness.NodeProcess(log_path=tmp_path / "node.log", params_file=False)
    try:
        line = "waiting for a robot model: listening on /robot_description"
        harness.Peer.wait_until(lambda: node.log().count(line) >= 2, 30.0,
                                "two 'waiting' lines in the node's log", period=0.2)
        assert "joint states on /joint_states" in node.log()
    finally:
        assert node.stop() == 0, node.log()


def test_a_node_whose_description_was_refused_says_why_it_still_waits(tmp_path):
    harness.isolate_ros_environment()
    urdf = tmp_path / "still.urdf"
    urdf.write_text('<robot name="still"><link name="a"/></robot>')
    node = harness.NodeProcess("-p", f"urdf_file:={urdf}", log_path=tmp_path / "node.log",
                               params_file=False)
    try:
        harness.Peer.wait_until(
            lambda: any("waiting for a robot model" in line and "last error:" in line
                        and "no moving joints" in line for line in node.log().splitlines()),
            60.0, "a 'waiting' line naming the refusal", period=0.2)
    finally:
        assert node.stop() == 0, node.log()

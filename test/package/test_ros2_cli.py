"""The README's ``ros2`` command lines, run as written against a live node.

Every indented line of the README that starts with ``ros2 topic``, ``ros2
param``, ``ros2 interface``, ``ros2 node`` or ``ros2 service`` runs in a shell
(the ros2 command line of ROS 2 Jazzy, from the wheels .ci/run installs),
against a node serving the PUMA while joint states stream, and what it prints
or changes is checked. ``ros2 launch`` lines run in test_launch.py. Then the
dump's round trip: a node started with ``--params-file`` of the dump serves
the same robot and payload, and dumps the same parameters.
"""

import os
import re
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml

try:
    import ros2cli  # noqa: F401
except ImportError as error:
    # ros2cli has no wheel on PyPI: a ROS installation, or wheels built from source
    from install_hint import pip_install

    reason = (f"ros2 command lines not run: ros2cli is not importable ({error}); to run them, "
              "source a ROS 2 Jazzy installation, or install the wheels of launch, launch_ros "
              f"and ros2cli built from source: {pip_install()} --no-deps "
              "../shared/wheels/*.whl -c requirements/constraints.txt "
              "-r requirements/launch.txt (what .ci/run does)")
    warnings.warn(reason)
    pytest.skip(reason, allow_module_level=True)

import robots  # noqa: E402
import ros_harness as harness  # noqa: E402
from robot_dynamics_ros.dynamics import puma_urdf  # noqa: E402

README = (harness.REPO / "README.md").read_text()
BIN = Path(sys.executable).parent
STARTUP_TIMEOUT = 180.0
COMMAND = re.compile(r"^    (ros2 (?:topic|param|interface|node|service) .*)$", re.M)
NAME = "puma560_mohan_saha"


def readme_commands():
    return COMMAND.findall(README)


def shell(line: str, cwd: Path, timeout: float = 90.0) -> subprocess.CompletedProcess:
    """``line`` in a shell whose environment is a sourced ROS installation's:
    the venv stands in for /opt/ros/jazzy."""
    env = dict(os.environ, AMENT_PREFIX_PATH=sys.prefix, PATH=os.pathsep.join([str(BIN), os.environ["PATH"]]),
               ROS_LOG_DIR=str(cwd / "ros_log"))
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """A PUMA node fed joint states, the ros2 daemon running on this run's domain, a work folder."""
    folder = tmp_path_factory.mktemp("ros2")
    joints = robots.pinocchio_joint_names(robots.load_pinocchio(puma_urdf()))
    stop = threading.Event()
    with harness.node_serving(puma_urdf(), NAME, folder) as (peer, node):

        def stream():
            while not stop.wait(0.02):
                peer.joint_pub.publish(harness.joint_state(joints, np.full(6, 0.3), np.full(6, 0.1),
                                                           stamp_=peer.next_stamp()))

        streamer = threading.Thread(target=stream, daemon=True)
        streamer.start()
        try:
            # The daemon answers topic, param and node commands; it needs a
            # discovery round before it knows the node.
            assert shell("ros2 daemon start", folder).returncode == 0
            peer.wait_until(lambda: "/robot_dynamics" in shell("ros2 node list", folder).stdout, 30.0,
                            "the ros2 daemon to see the node", period=1.0)
            yield peer, node, folder
        finally:
            stop.set()
            streamer.join(timeout=5.0)
            shell("ros2 daemon stop", folder)


def test_the_readme_shows_the_commands_tested_here():
    commands = readme_commands()
    verbs = {tuple(c.split()[1:3]) for c in commands}
    assert {("topic", "echo"), ("interface", "show"), ("param", "dump"), ("param", "set"),
            ("topic", "pub"), ("service", "call")} <= verbs, commands


def check(command: str, result, peer):
    """What each kind of README command must print or do."""
    out = result.stdout
    if command.startswith("ros2 topic echo /robot_dynamics/state"):
        assert "model_revision:" in out and "mass_matrix:" in out and "kc_global:" in out, out
    elif command.startswith("ros2 topic echo /robot_dynamics/model"):
        assert f"robot_name: {NAME}" in out and "kc_source:" in out, out
    elif command.startswith("ros2 interface show"):
        assert "float64[] mass_matrix" in out and "std_msgs/Header header" in out, out
    elif command.startswith("ros2 param dump"):
        dumped = yaml.safe_load(out)
        assert dumped["/robot_dynamics"]["ros__parameters"]["urdf_file"].endswith("/robot.urdf")  # harness.node_serving
    elif command.startswith("ros2 param set"):
        assert "Set parameter successful" in out, out + result.stderr
    elif command.startswith("ros2 topic pub --once /robot_dynamics/payload"):
        peer.diagnostics(lambda v: v["payloads"] == "link6:2kg" and v["update_pending"] == "no", 60.0)
    elif command.startswith("ros2 service call /robot_dynamics/identify_payload"):
        # the stream here has no efforts: the answer says so (test_node_identify
        # checks estimates)
        assert "IdentifyPayload_Response(success=False" in out and "joint states with finite efforts" in out, out


def test_every_readme_command_runs_as_written(live):
    peer, _, folder = live
    for command in readme_commands():
        result = shell(command, folder)
        assert result.returncode == 0, f"{command}:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
        if ">" in command:  # the output went to a file: read it there
            result.stdout = (folder / command.split(">")[-1].strip()).read_text()
        check(command, result, peer)
    peer.diagnostics(lambda v: v["payloads"] == "link6:2kg" and v["update_pending"] == "no", 60.0)


def test_a_dumped_parameter_file_starts_an_identical_node(live, tmp_path):
    """ros2 param dump, then a node started from that file alone: it serves
    the same robot with the same payload, and its own dump is the same."""
    peer, node, folder = live
    dump = tmp_path / "dump.yaml"
    result = shell(f"ros2 param dump /robot_dynamics > {dump}", folder)
    assert result.returncode == 0, result.stderr
    first = yaml.safe_load(dump.read_text())
    assert first["/robot_dynamics"]["ros__parameters"]["joints"] == ""
    payloads = peer.diagnostics()["payloads"]
    node.stop()
    copy = harness.NodeProcess("--params-file", str(dump), params_file=False, log_path=tmp_path / "copy.log")
    try:
        values = peer.wait_for_model(NAME, STARTUP_TIMEOUT, copy)
        peer.diagnostics(lambda v: v["payloads"] == payloads and v["update_pending"] == "no", 60.0)
        assert values["model"] == NAME
        again = shell("ros2 param dump /robot_dynamics --no-daemon --spin-time 5", folder)
        assert again.returncode == 0, again.stderr
        assert yaml.safe_load(again.stdout) == first
    finally:
        copy.stop()

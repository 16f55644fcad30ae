"""The launch files, run as a ROS user runs them.

``colcon build --symlink-install`` of this repository in a workspace, then
``. install/setup.sh && ros2 launch robot_dynamics_ros FILE ARGS`` (the
launch.LaunchService that ROS users run), a real process tree talked to over
DDS on this run's private domain (ros_harness). The venv stands in for
/opt/ros/jazzy: it holds rclpy and the messages (PyPI wheels) and, installed
by .ci/run, launch, launch_ros and ros2cli from ../shared/wheels and colcon
in .venv/colcon. Where launch_ros or colcon is missing the module is skipped,
and says so in the warnings summary of every run.
"""

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml

try:
    import launch_ros  # noqa: F401
    import psutil
except ImportError as error:
    from install_hint import pip_install

    pip = pip_install()
    if error.name == "psutil":
        install = f"{pip} -c requirements/constraints.txt -r requirements/launch.txt"
    else:  # launch, launch_ros and ros2cli have no wheels on PyPI
        install = (f"source a ROS 2 Jazzy installation, or install the wheels of launch, "
                   f"launch_ros and ros2cli built from source: {pip} --no-deps "
                   "../shared/wheels/*.whl -c requirements/constraints.txt "
                   "-r requirements/launch.txt (what .ci/run does)")
    reason = f"launch files not run: {error}; to run them, {install}"
    warnings.warn(reason)
    pytest.skip(reason, allow_module_level=True)

from sensor_msgs.msg import JointState  # noqa: E402

import robots  # noqa: E402
import ros_harness as harness  # noqa: E402
from install_hint import pip_install  # noqa: E402

# builds the package with colcon and runs its launch files
pytestmark = pytest.mark.colcon

BIN = Path(sys.executable).parent
COLCON = Path(sys.prefix) / "colcon"  # where .ci/run installs colcon-core and colcon-ros
STARTUP_TIMEOUT = 180.0  # a first run on a machine compiles the numba kernels
HAND_PAYLOAD = ("panda_hand", 1.5, [0.01, -0.02, 0.05], [0.004, 0.0002, 0.0, 0.005, -0.0001, 0.003])


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A colcon workspace with this repository built in it, and this run's ROS domain."""
    if not COLCON.is_dir():
        reason = (f"launch files not run: colcon is not installed in {COLCON}; to run them, "
                  f"{pip_install()} --target {COLCON} -c requirements/constraints.txt "
                  "-r requirements/colcon.txt (what .ci/run does)")
        warnings.warn(reason)
        pytest.skip(reason)
    if not (Path(sys.prefix) / "share" / "ament_cmake").is_dir():
        reason = (f"launch files not run: colcon's underlay, ament_cmake, is not installed in {sys.prefix}; "
                  f"to run them, {pip_install()} -c requirements/constraints.txt -r requirements/ament.txt "
                  "(what .ci/run does)")
        warnings.warn(reason)
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("ws")
    (root / "src").mkdir()
    (root / "src" / "robot_dynamics_ros").symlink_to(harness.REPO)
    # --symlink-install: the nodes import this checkout, whose numba cache is warm.
    # The venv is the underlay, as a sourced /opt/ros/jazzy would be: CMake
    # finds ament and rosidl there, and the typesupports in its ament index.
    underlay = dict(os.environ, PYTHONPATH=str(COLCON), AMENT_PREFIX_PATH=sys.prefix,
                    CMAKE_PREFIX_PATH=sys.prefix, PATH=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))
    build = subprocess.run([sys.executable, "-m", "colcon", "build", "--symlink-install"], cwd=root,
                           env=underlay, capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    harness.isolate_ros_environment()
    return root


def _as_a_terminal_starts_it():
    """In the child: SIGINT handled as in a terminal's foreground job.

    A job a script starts in the background (as CI runners may start the
    tests) inherits SIGINT ignored, and launch would then ignore Ctrl-C.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    harness._die_with_parent()


class Launch:
    """``ros2 launch robot_dynamics_ros FILE ARGS...`` from a shell that sourced the workspace."""

    def __init__(self, workspace: Path, log_path: Path, file: str, *arguments: str):
        self.log_path = log_path
        self._log = open(log_path, "w")
        # The underlay, as /opt/ros/jazzy/setup.sh would set it: the venv's
        # ament index (launch's own share files) and its executables.
        env = dict(os.environ, PYTHONUNBUFFERED="1", AMENT_PREFIX_PATH=sys.prefix,
                   PATH=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]),
                   ROS_LOG_DIR=str(log_path.parent / "ros_log"))  # not the user's ~/.ros/log
        self.process = subprocess.Popen(
            ["sh", "-c", '. install/setup.sh && exec ros2 launch robot_dynamics_ros "$@"', "sh",
             file, *arguments],
            cwd=workspace, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=_as_a_terminal_starts_it)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def alive(self) -> bool:
        return self.process.poll() is None

    def wait(self, timeout: float) -> int:
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"the launch did not end within {timeout:.0f} s:\n{self.log()[-3000:]}")

    def interrupt(self, timeout: float = 30.0):
        """Ctrl-C: SIGINT to the launch alone, as a terminal sends it; returns the processes it had."""
        children = psutil.Process(self.process.pid).children(recursive=True)
        self.process.send_signal(signal.SIGINT)
        code = self.wait(timeout)
        _, alive = psutil.wait_procs(children, timeout=5.0)
        return code, children, alive

    def kill(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10.0)
        self._log.close()


def graph_nodes(peer) -> list:
    """Fully qualified names of the nodes in the peer's namespace but the peer,
    duplicates kept, hidden ones (a leading underscore, as the node's
    ``_robot_dynamics_identify``) left out as ``ros2 node list`` leaves them."""
    ours = peer.node.get_fully_qualified_name()
    namespace = peer.node.get_namespace()
    return sorted(f"{ns}/{name}" for name, ns in peer.node.get_node_names_and_namespaces()
                  if ns == namespace and f"{ns}/{name}" != ours and not name.startswith("_"))


def wait_for_nodes(peer, want: set, launch: Launch, timeout: float = 60.0) -> list:
    def seen():
        assert launch.process.poll() is None, f"the launch ended early:\n{launch.log()[-3000:]}"
        names = graph_nodes(peer)
        return names if want <= set(names) else None

    return peer.wait_until(seen, timeout, f"nodes {sorted(want)} in the graph")


def assert_clean_exit(launch: Launch):
    code, children, alive = launch.interrupt()
    log = launch.log()
    assert code == 0, f"ros2 launch exited with {code} after Ctrl-C:\n{log[-3000:]}"
    assert children, "the launch had no processes to stop"
    assert not alive, f"still running after Ctrl-C: {[p.pid for p in alive]}"
    assert "Traceback" not in log, log[-3000:]
    started = log.count("process started with pid")
    assert started and log.count("process has finished cleanly") == started, log[-3000:]


# The node launch file, in a namespace, with a YAML of our own and a URDF file argument


@pytest.fixture(scope="module")
def arm(workspace, tmp_path_factory):
    folder = tmp_path_factory.mktemp("arm_launch")
    urdf = robots.example_robot_urdf("panda")
    config = yaml.safe_load((harness.REPO / "config" / "robot_dynamics.yaml").read_text())
    parameters = config["/**/robot_dynamics"]["ros__parameters"]
    parameters["publish_christoffel"] = True
    link, mass, com, inertia = HAND_PAYLOAD
    parameters["payload"] = {"link": link, "mass": mass, "com": com, "inertia": inertia}
    params_file = folder / "params.yaml"
    params_file.write_text(yaml.safe_dump(config))
    peer = harness.Peer(namespace="/arm")
    launch = Launch(workspace, folder / "launch.log", "robot_dynamics.launch.py",
                    f"urdf_file:={urdf}", f"params_file:={params_file}", "namespace:=arm",
                    "base:=fixed", "base_state_timeout:=0.25")
    try:
        peer.wait_for_model("panda", STARTUP_TIMEOUT, launch)
        yield launch, peer, urdf
    finally:
        launch.kill()
        peer.close()


def test_node_runs_under_its_name_in_the_namespace(arm):
    launch, peer, _ = arm
    names = wait_for_nodes(peer, {"/arm/robot_dynamics"}, launch)
    assert names == ["/arm/robot_dynamics"], names


def test_parameters_come_from_the_yaml_and_the_launch_arguments(arm):
    _, peer, urdf = arm
    values = peer.get_parameters(["urdf_file", "publish_christoffel", "payload.link", "payload.mass",
                                  "payload.com", "payload.inertia", "gravity", "base",
                                  "base_state_timeout"])
    link, mass, com, inertia = HAND_PAYLOAD
    assert values[0] == urdf
    assert values[1] is True
    assert values[2:4] == [link, mass]
    assert list(values[4]) == com and list(values[5]) == inertia
    assert list(values[6]) == [0.0, 0.0, -9.81]  # left as the YAML has it
    assert values[7:] == ["fixed", 0.25]


def test_outputs_on_the_namespaced_topics_equal_pinocchio_with_the_yaml_payload(arm):
    _, peer, urdf = arm
    link, mass, com, inertia = HAND_PAYLOAD
    pin_model = robots.load_pinocchio(urdf)
    joints = robots.pinocchio_joint_names(pin_model)
    oracle = robots.PinocchioOracle(
        robots.add_payload_pinocchio(pin_model, link, mass, com, robots.inertia3(inertia)), joints)
    peer.diagnostics(lambda values: values["payloads"] == f"{link}:{mass:g}kg", timeout=60.0)
    rng = np.random.default_rng(12)
    ranges = robots.joint_ranges(oracle, urdf)
    for _ in range(3):
        q = ranges[:, 0] + (ranges[:, 1] - ranges[:, 0]) * rng.random(len(ranges))
        qd = rng.uniform(-2.0, 2.0, len(ranges))
        harness.check_outputs(peer.compute(joints, q, qd, christoffel=True), oracle, q, qd)


def test_ctrl_c_ends_the_node_launch_cleanly(arm):
    assert_clean_exit(arm[0])


# The demo launch file: the PUMA stream and monitor in one process, the node in another


def test_demo_launch_names_every_node_once_and_its_gravity_torques_equal_pinocchio(workspace, tmp_path):
    from robot_dynamics_ros.dynamics import puma_urdf

    peer = harness.Peer(namespace="/demo", outputs=("gravity_torques",),
                        also_record={"joint_states": JointState})
    launch = Launch(workspace, tmp_path / "launch.log", "robot_dynamics_demo.launch.py", "namespace:=demo")
    try:
        values = peer.wait_for_model("puma560_mohan_saha", STARTUP_TIMEOUT, launch)
        assert values["kc_certificate"].endswith("/certificates/puma560.kc.json"), values  # the PUMA's
        wait_for_nodes(peer, {"/demo/robot_dynamics", "/demo/puma_demo_stream"}, launch)
        # The graph settles within a discovery round: look again before judging.
        time.sleep(2.0)
        names = graph_nodes(peer)
        assert len(names) == len(set(names)), f"node names not unique: {names}"
        assert names == ["/demo/puma_demo_monitor", "/demo/puma_demo_stream", "/demo/robot_dynamics"]

        peer.wait_until(lambda: peer.count("gravity_torques") >= 50, 60.0, "50 gravity torques")
        pin_model = robots.load_pinocchio(puma_urdf())
        oracle = robots.PinocchioOracle(pin_model, robots.pinocchio_joint_names(pin_model))
        sent = {(m.header.stamp.sec, m.header.stamp.nanosec): m for m in peer.messages("joint_states")}
        checked = 0
        for out in peer.messages("gravity_torques"):
            state = sent.get((out.header.stamp.sec, out.header.stamp.nanosec))
            if state is None:
                continue
            assert list(out.name) == list(state.name) == list(oracle.joint_names)
            want = oracle.gravity_torques(np.array(state.position))
            assert robots.rel_err(np.array(out.effort), want) <= 1e-9
            checked += 1
        assert checked >= 20, f"only {checked} gravity torques matched a joint state by stamp"
        assert_clean_exit(launch)
    finally:
        launch.kill()
        peer.close()


def test_demo_launch_with_solo12_serves_a_floating_base(workspace, tmp_path):
    """robot:=solo12: the stream's URDF declares a floating root joint, so the
    node (base auto) serves 6 + 12 coordinates, each joint state paired with
    the stream's odometry."""
    peer = harness.Peer(namespace="/legs", outputs=("gravity_torques",))
    launch = Launch(workspace, tmp_path / "launch.log", "robot_dynamics_demo.launch.py",
                    "namespace:=legs", "robot:=solo12")
    try:
        values = peer.wait_for_model("solo", STARTUP_TIMEOUT, launch)
        assert values["base"] == "floating, root link base_link" and values["dof"] == "18"
        peer.wait_until(lambda: peer.count("gravity_torques") >= 50, 60.0, "50 gravity torques")
        names = list(peer.messages("gravity_torques")[-1].name)
        assert names[:6] == ["base_vx", "base_vy", "base_vz", "base_wx", "base_wy", "base_wz"]
        assert len(names) == 18
        assert_clean_exit(launch)
    finally:
        launch.kill()
        peer.close()


# Bad arguments end the launch with an error that names them, before any process starts


@pytest.mark.parametrize("argument, message", [
    ("params_file:=/nonexistent/params.yaml", "params_file:='/nonexistent/params.yaml' is not a file"),
    ("urdf_file:=/nonexistent/robot.urdf", "urdf_file:='/nonexistent/robot.urdf' is not a file"),
    ("namespace:=two words", "namespace:='two words' is not a valid ROS namespace"),
    ("base:=wheeled", "base:='wheeled' is not one of auto, fixed, floating"),
    ("base_state_timeout:=soon", "base_state_timeout:='soon' is not a number of seconds"),
    ("base_state_timeout:=-1", "base_state_timeout:='-1' is not within 0 to 3600 s"),
    ("kc_certificate:=/nonexistent/certs", "kc_certificate:='/nonexistent/certs' is no certificate file or directory"),
])
def test_a_bad_argument_fails_the_launch_with_a_clear_error(workspace, tmp_path, argument, message):
    launch = Launch(workspace, tmp_path / "launch.log", "robot_dynamics.launch.py", argument)
    code = launch.wait(60.0)
    launch.kill()
    log = launch.log()
    assert code != 0, log
    assert message in log, log
    assert "process started" not in log, log


# The messages pip's route builds (build_messages.py: Python only, the IDL read without
# its comments) against the ones colcon builds from the same files (CMakeLists.txt)


@pytest.mark.parametrize("interface, types", [
    ("msg/DynamicsState", {"DynamicsState": "DynamicsState"}),
    ("msg/DynamicsModel", {"DynamicsModel": "DynamicsModel"}),
    ("srv/IdentifyPayload", {"IdentifyPayload_Request": "IdentifyPayload.Request",
                             "IdentifyPayload_Response": "IdentifyPayload.Response"}),
])
def test_the_pip_built_messages_carry_the_type_hashes_of_colcon_s_build(workspace, interface, types):
    """What a subscriber matches on, the type hash, is the same whichever way
    the package was built: a controller built with colcon talks to a node
    from scripts/run.sh."""
    import importlib

    import rclpy

    kind = interface.split("/")[0]
    described = json.loads((workspace / "install" / "robot_dynamics_ros" / "share" / "robot_dynamics_ros"
                            / f"{interface}.json").read_text())
    colcon = {entry["type_name"]: entry["hash_string"] for entry in described["type_hashes"]}
    module = importlib.import_module(f"robot_dynamics_ros.{kind}")  # the venv's, built by pip
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = rclpy.create_node("type_hashes", context=context)
        for name, attribute in types.items():
            message = module
            for part in attribute.split("."):
                message = getattr(message, part)
            topic = f"type_hash_{name.lower()}"
            node.create_publisher(message, topic, 1)
            [info] = node.get_publishers_info_by_topic(topic)
            assert str(info.topic_type_hash) == colcon[f"robot_dynamics_ros/{kind}/{name}"], name
    finally:
        rclpy.shutdown(context=context)

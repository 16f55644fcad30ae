"""Run the node in its own process and talk to it over DDS from this one.

Used by the node tests and by bench/bench_node.py. Every process started here
is isolated from other runs on the machine: a ROS_DOMAIN_ID reserved with a
lock file (so two test runs never share one) and discovery limited to
localhost. Every wait has a timeout; NodeProcess.stop() always ends the child.
"""

import contextlib
import ctypes
import fcntl
import functools
import math
import os
import signal
import struct
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Optional

import numpy as np
import rclpy
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import InertiaStamped
from nav_msgs.msg import Odometry
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter_client import AsyncParameterClient
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

# Not resolved: a checkout reached through a symlink runs its own package.
REPO = Path(__file__).absolute().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from robot_dynamics_ros.dynamics import BOUNDS_FIELDS  # noqa: E402
from robot_dynamics_ros.msg import DynamicsModel, DynamicsState  # noqa: E402
from robot_dynamics_ros.messages.outputs import ARRAY_TOPICS, from_multiarray  # noqa: E402
from robots import rel_err  # noqa: E402

NODE = "robot_dynamics"
# The node's outputs by topic, as the peer subscribes them
OUTPUT_TYPES = {"state": DynamicsState, "model": DynamicsModel, "gravity_torques": JointState,
                **{topic: Float64MultiArray for topic in ARRAY_TOPICS}}
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
# ~/model as a late subscriber gets it, with room for every revision of a test
MODEL_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE,
                       durability=DurabilityPolicy.TRANSIENT_LOCAL)
DOMAIN_LOCK_DIR = Path("/tmp/robot_dynamics_ros_domains")
_held_domain_locks = []  # open lock files: the locks last as long as this process


@functools.lru_cache(maxsize=None)
def reserve_domain_id() -> int:
    """A ROS_DOMAIN_ID in 1..100 that no other live process of ours holds.

    Starts from the pid so concurrent runs spread out, and holds an flock on
    the id's file until this process exits (the kernel drops it on exit, so a
    crashed run frees its id).
    """
    DOMAIN_LOCK_DIR.mkdir(exist_ok=True)
    for offset in range(100):
        domain = (os.getpid() + offset) % 100 + 1
        handle = open(DOMAIN_LOCK_DIR / f"{domain}.lock", "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        _held_domain_locks.append(handle)
        return domain
    raise RuntimeError("all ROS domain ids 1..100 are held by other test runs")


def isolate_ros_environment() -> int:
    """Put this process (and the children it starts) on a private local domain."""
    domain = reserve_domain_id()
    os.environ["ROS_DOMAIN_ID"] = str(domain)
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    os.environ.pop("ROS_STATIC_PEERS", None)
    os.environ.pop("ROS_LOCALHOST_ONLY", None)
    return domain


def _die_with_parent():
    """In the child: SIGTERM when the test process dies, even by SIGKILL (Linux)."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


# s: the tests' nodes report every 0.1 s, so a test that waits for a count waits that long
DIAGNOSTIC_PERIOD = 0.1


class NodeProcess:
    """``python -m robot_dynamics_ros.node.dynamics_node --ros-args ...`` with the repo's YAML loaded."""

    def __init__(self, *ros_args: str, log_path: Path, params_file: bool = True, repo: Path = REPO,
                 prefix: tuple = (), diagnostic_period: Optional[float] = DIAGNOSTIC_PERIOD):
        """``repo``: the checkout whose node runs (another revision, for a benchmark);
        ``prefix``: a command the node runs under (launch_ros's ``prefix``, e.g. ``chrt``);
        ``diagnostic_period``: the node's ``diagnostic_updater.period``, None for
        its default (a benchmark's node as deployed)."""
        command = [*prefix, sys.executable, "-m", "robot_dynamics_ros.node.dynamics_node", "--ros-args"]
        if params_file:
            command += ["--params-file", str(repo / "config" / "robot_dynamics.yaml")]
        if diagnostic_period is not None:
            command += ["-p", f"diagnostic_updater.period:={diagnostic_period}"]
        command += list(ros_args)
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo), env.get("PYTHONPATH")]))
        self.log_path = log_path
        self._log = open(log_path, "w")
        self.process = subprocess.Popen(
            command, cwd=repo, env=env, stdout=self._log, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=_die_with_parent)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 10.0) -> int:
        """SIGINT (a clean rclpy shutdown), then SIGKILL of the whole group."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout)
        self._log.close()
        return self.process.returncode


STARTUP_TIMEOUT = 180.0  # a first run on a machine compiles the numba kernels


@contextlib.contextmanager
def node_serving(urdf_text: str, robot_name: str, folder: Path, *ros_args: str):
    """(peer, node): a node process serving ``urdf_text`` from a file in
    ``folder`` (``urdf_file``) with ``ros_args``, on this process's private
    domain, and a peer that has seen its model; both stopped on exit."""
    isolate_ros_environment()
    urdf = folder / "robot.urdf"
    urdf.write_text(urdf_text)
    peer = Peer()
    node = NodeProcess("-p", f"urdf_file:={urdf}", *ros_args, log_path=folder / "node.log")
    try:
        peer.wait_for_model(robot_name, STARTUP_TIMEOUT, node)
        yield peer, node
    finally:
        node.stop()
        peer.close()


def stamp(seconds: int, nanoseconds: int = 0) -> Time:
    return Time(sec=seconds, nanosec=nanoseconds)


def odometry(stamp_, position, velocity, child: str, frame: str = "odom") -> Odometry:
    """nav_msgs/Odometry of ``child`` in ``frame``: position and quaternion
    (x, y, z, w) (7), linear and angular velocity in ``child`` (6)."""
    msg = Odometry(child_frame_id=child)
    msg.header.stamp, msg.header.frame_id = stamp_, frame
    pose, twist = msg.pose.pose, msg.twist.twist
    (pose.position.x, pose.position.y, pose.position.z, pose.orientation.x, pose.orientation.y,
     pose.orientation.z, pose.orientation.w) = map(float, position)
    (twist.linear.x, twist.linear.y, twist.linear.z,
     twist.angular.x, twist.angular.y, twist.angular.z) = map(float, velocity)
    return msg


def cdr_stamp(data: bytes):
    """(sec, nanosec) of a serialized message that starts with a std_msgs/Header:
    its stamp follows the 4-byte encapsulation header of little-endian CDR
    (what Fast DDS writes on x86 and ARM)."""
    return _CDR_STAMP.unpack_from(data, 4)


def with_cdr_stamp(data: bytes, stamp_: Time) -> bytes:
    """A copy of serialized ``data`` (a message starting with a std_msgs/Header)
    with the header stamp ``stamp_``."""
    out = bytearray(data)
    _CDR_STAMP.pack_into(out, 4, stamp_.sec, stamp_.nanosec)
    return bytes(out)


_CDR_STAMP = struct.Struct("<iI")


def joint_state(names, position, velocity=(), effort=(), stamp_=None) -> JointState:
    msg = JointState(name=list(names), position=[float(x) for x in position],
                     velocity=[float(x) for x in velocity], effort=[float(x) for x in effort])
    if stamp_ is not None:
        msg.header.stamp = stamp_
    return msg


class Peer:
    """The test side: publishes inputs, records every output, calls the parameter services."""

    def __init__(self, name: str = "test_peer", target: str = NODE,
                 outputs=("state", "model", "gravity_torques"), namespace: str = "",
                 also_record=None, raw=()):
        """``outputs``: the node's topics to record (fewer costs less under load).

        ``namespace``: where the node runs (``/arm``); the peer joins it, so
        its robot_description, joint_states and odom are the node's.

        ``also_record``: {topic: message type} of other topics to record, resolved
        in the peer's namespace.

        ``raw``: the outputs recorded as their serialized bytes, which cost
        this process no deserializing (a soak's 1 kHz of a humanoid's states).

        Every publisher and subscription is made here, before the executor
        spins: rclpy's executor builds its wait set from them in its own thread,
        and destroying one meanwhile kills that thread (InvalidHandle), after
        which the peer silently receives nothing.
        """
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, namespace=namespace or None, context=self.context)
        target = f"{namespace.rstrip('/')}/{target}"
        self._lock = threading.Lock()
        self.received = defaultdict(list)  # topic -> [(monotonic receive time, msg)]
        self.description_pub = self.node.create_publisher(String, "robot_description", LATCHED)
        self.joint_pub = self.node.create_publisher(JointState, "joint_states", 100)
        self.payload_pub = self.node.create_publisher(InertiaStamped, f"{target}/payload", 10)
        self.odom_pub = self.node.create_publisher(Odometry, "odom", 100)
        self.subscriptions = {
            topic: self.node.create_subscription(
                OUTPUT_TYPES[topic], f"{target}/{topic}", self._recorder(topic),
                MODEL_QOS if topic == "model" else 1000, raw=topic in raw)
            for topic in outputs
        }
        self.subscriptions["diagnostics"] = self.node.create_subscription(
            DiagnosticArray, "/diagnostics", self._recorder("diagnostics"), 100)
        for topic, msg_type in (also_record or {}).items():
            self.subscriptions[topic] = self.node.create_subscription(
                msg_type, topic, self._recorder(topic), 1000)
        self.parameters = AsyncParameterClient(self.node, target)
        self._stamp = 0
        self._spin_error = None
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._spinner = threading.Thread(target=self._spin, daemon=True)
        self._spinner.start()

    def _spin(self):
        try:
            self.executor.spin()
        except rclpy.executors.ExternalShutdownException:
            pass
        except Exception as error:  # noqa: BLE001 -- reported by every later read, not lost in a thread
            self._spin_error = error

    def _recorder(self, topic):
        def record(msg):
            now = time.monotonic()
            with self._lock:
                self.received[topic].append((now, msg))
        return record

    def close(self):
        self.executor.shutdown(timeout_sec=5.0)
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)
        self._spinner.join(timeout=5.0)

    # Waiting

    @staticmethod
    def wait_until(predicate, timeout: float, what: str, period: float = 0.005):
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
            time.sleep(period)

    def _check_spinning(self):
        if self._spin_error is not None:
            raise AssertionError(f"the peer's executor stopped: {self._spin_error!r}")

    def count(self, topic: str) -> int:
        self._check_spinning()
        with self._lock:
            return len(self.received[topic])

    def messages(self, topic: str, start: int = 0):
        self._check_spinning()
        with self._lock:
            return [msg for _, msg in self.received[topic][start:]]

    def diagnostics(self, predicate=lambda values: True, timeout: float = 10.0, after=None):
        """Values of the node's next diagnostics report satisfying ``predicate``."""
        start = self.count("diagnostics") if after is None else after

        def find():
            for msg in self.messages("diagnostics", start):
                for status in msg.status:
                    if status.name.startswith(NODE):
                        values = {kv.key: kv.value for kv in status.values}
                        values["level"] = int.from_bytes(status.level, "little") \
                            if isinstance(status.level, bytes) else int(status.level)
                        values["message"] = status.message
                        if predicate(values):
                            return values
            return None

        return self.wait_until(find, timeout, "a matching diagnostics report")

    def wait_for_model(self, name: str, timeout: float, process: "NodeProcess") -> dict:
        """Wait until the node serves robot ``name`` and its topics are connected."""

        def serving(values):
            return values["model"] == name

        def fail_if_dead():
            assert process.alive(), (f"the node exited early (status {process.process.returncode}):\n"
                                 f"{process.log()[-3000:]}")

        deadline = time.monotonic() + timeout
        while True:
            fail_if_dead()
            try:
                values = self.diagnostics(serving, min(2.0, max(0.1, deadline - time.monotonic())), after=0)
                break
            except AssertionError:
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"the node did not serve {name!r} within {timeout:.0f} s:\n{process.log()[-3000:]}")
        self.wait_until(lambda: self.joint_pub.get_subscription_count() > 0
                        and all(s.get_publisher_count() > 0 for s in self.subscriptions.values()),
                        10.0, "the node's topics to connect")
        return values

    # Inputs

    def next_stamp(self) -> Time:
        self._stamp += 1
        return stamp(self._stamp)

    def upcoming_stamp(self) -> Time:
        """The stamp the next ``next_stamp`` (or ``compute``) gives: 1 s after the last."""
        return stamp(self._stamp + 1)

    def compute(self, names, q, qd=(), timeout: float = 10.0, christoffel: bool = False) -> dict:
        """Publish one joint state and return the node's DynamicsState for it
        (found by its stamp, which the node copies) as ``state_arrays`` gives it;
        ``christoffel``: the node must have published the Christoffel symbols."""
        sent = self.next_stamp()
        start = self.count("state")
        self.joint_pub.publish(joint_state(names, q, qd, stamp_=sent))
        state = self.wait_until(lambda: next((m for m in self.messages("state", start)
                                              if m.header.stamp == sent), None),
                                timeout, "the node's DynamicsState for one joint state")
        out = state_arrays(state)
        assert not christoffel or "christoffel_symbols" in out, "no Christoffel symbols published"
        return out

    def set_parameters(self, parameters, atomically: bool = False, timeout: float = 10.0):
        """SetParameters (or SetParametersAtomically) results for rclpy Parameters."""
        self.wait_until(lambda: self.parameters.wait_for_services(0.1), timeout,
                        "the node's parameter services")
        call = self.parameters.set_parameters_atomically if atomically else self.parameters.set_parameters
        future = call(parameters)
        self.wait_until(future.done, timeout, "a parameter service response")
        response = future.result()
        return [response.result] if atomically else list(response.results)

    def get_parameters(self, names, timeout: float = 10.0):
        future = self.parameters.get_parameters(names)
        self.wait_until(future.done, timeout, "a parameter service response")
        return [rclpy.parameter.parameter_value_to_python(v) for v in future.result().values]


def state_arrays(state: DynamicsState) -> dict:
    """A DynamicsState's values as arrays: ``mass_matrix``, ``coriolis_matrix``
    (nv x nv), ``gravity_torques``, ``coriolis_bounds`` (the vector of
    BOUNDS_FIELDS), ``christoffel_symbols`` (nv^3, when published),
    ``position``, ``velocity``, ``joints`` (the names of v) and ``state``."""
    n = len(state.names)
    out = {"state": state, "joints": list(state.names), "position": np.array(state.position),
           "velocity": np.array(state.velocity),
           "mass_matrix": np.array(state.mass_matrix).reshape(n, n),
           "coriolis_matrix": np.array(state.coriolis_matrix).reshape(n, n),
           "gravity_torques": np.array(state.gravity),
           "coriolis_bounds": np.array([getattr(state, name) for name in BOUNDS_FIELDS])}
    if len(state.christoffel_symbols):
        out["christoffel_symbols"] = np.array(state.christoffel_symbols).reshape(n, n, n)
    return out


def expected_outputs(oracle, q, qd) -> dict:
    """What the node must publish for (q, qd), from Pinocchio (a robots.PinocchioOracle).

    The bounds follow MATH.md: ||C||_2, k_c = sqrt(sum_k ||Gamma[:, :, k]||_2^2),
    k_c ||qd||, and the extreme eigenvalues of M. K_c (a supremum over the
    joint limits) has no closed form to compare with; see check_outputs.
    """
    mass = oracle.mass_matrix(q)
    coriolis = oracle.coriolis_matrix(q, qd)
    gamma = oracle.christoffel_symbols(q)
    kc = math.sqrt(sum(np.linalg.norm(gamma[:, :, k], 2) ** 2 for k in range(len(q))))
    eig = np.linalg.eigvalsh(mass)
    return {
        "mass_matrix": mass,
        "coriolis_matrix": coriolis,
        "christoffel_symbols": gamma,
        "gravity_torques": oracle.gravity_torques(q),
        "coriolis_norm": np.linalg.norm(coriolis, 2),
        "kc_config": kc,
        "coriolis_bound": kc * np.linalg.norm(qd),
        "m_eig_min": eig[0],
        "m_eig_max": eig[-1],
    }


def check_outputs(out: dict, oracle, q, qd, tolerance: float = 1e-9) -> dict:
    """Assert the node's outputs equal Pinocchio's; return the relative errors.

    ``q``, ``qd`` and every output are in ``oracle.joint_names`` order, which
    must be the order the node announces in ~/gravity_torques.
    """
    assert out["joints"] == list(oracle.joint_names)
    want = expected_outputs(oracle, q, qd)
    bounds = dict(zip(BOUNDS_FIELDS, out["coriolis_bounds"]))
    errors = {}
    for key in ("mass_matrix", "coriolis_matrix", "christoffel_symbols", "gravity_torques"):
        if key in out:
            errors[key] = rel_err(out[key], want[key])
    for key in ("coriolis_norm", "kc_config", "coriolis_bound", "m_eig_min", "m_eig_max"):
        errors[key] = rel_err(bounds[key], want[key])
    bad = {k: e for k, e in errors.items() if not e <= tolerance}
    assert not bad, f"outputs differ from Pinocchio beyond {tolerance:g}: {bad}"
    # K_c is a supremum over configurations, so it bounds k_c(q) at every q;
    # kc_global_lower is a k_c(q) attained, so at most K_c.
    assert bounds["kc_global"] >= bounds["kc_config"] * (1 - tolerance)
    assert 0.0 <= bounds["kc_global_lower"] <= bounds["kc_global"]
    assert bounds["coriolis_norm"] <= bounds["coriolis_bound"] * (1 + tolerance) + tolerance
    return errors

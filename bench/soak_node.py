"""Soak of the node: a robot at 1 kHz for hours, a payload swap every 10 s, its memory.

    python bench/soak_node.py [--robot panda] [--base auto|floating] [--duration 7200]
                              [--rate 1000] [--swap-period 10] [--csv FILE]

The node runs as its own process, and so does the stream of joint states
(``drive``: for a floating base, each with the odometry of its stamp,
published just before it), as a robot's driver is; this one swaps the payload on the hand (panda_hand; another robot's
last link) through SetParametersAtomically every
``--swap-period`` seconds (valid masses in turn, and every tenth request an
invalid one, which must be refused), receives every ``~/state`` and samples
the node's resident memory (RSS, its process alone) every 10 s. Reported:
RSS after the first 5 minutes and at the end, the growth in between, its
slope in MB per hour (least squares over the samples after 5 minutes), the
joint states sent, the states received (the share without an output) and
non-finite values seen, the swaps accepted and refused, the warnings in the
node's log and how long the node takes to exit on SIGINT.
"""

import argparse
import multiprocessing
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import rclpy
from nav_msgs.msg import Odometry
from rclpy.experimental import EventsExecutor
from rclpy.parameter import Parameter
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState

sys.path.insert(0, str(Path(__file__).absolute().parent.parent / "test" / "support"))
import robots  # noqa: E402
import ros_harness as harness  # noqa: E402
from robot_dynamics_ros.msg import DynamicsState  # noqa: E402

from robot_dynamics_ros.dynamics import load_urdf  # noqa: E402

CHECK_EVERY = 100  # one state in this many parsed and checked for non-finite values
HANDS = {"panda": "panda_hand"}  # the payload's link; other robots: their last link
WARMUP = 300.0  # s: the growth is measured from here on
SAMPLE_PERIOD = 10.0


def unit_quaternion(rng):
    quaternion = rng.normal(size=4)
    return quaternion / np.linalg.norm(quaternion)


class StateCounter:
    """``~/state`` as a controller takes it: serialized bytes, counted, one in
    CHECK_EVERY kept to be parsed (``take_kept``), by rclpy's EventsExecutor
    in a context of its own. The harness's executor and rclpy's conversion of
    a humanoid's 21 kB states would take most of a core at 1 kHz, which the
    node would then lack."""

    def __init__(self):
        self.count, self._kept = 0, []
        self._context = rclpy.Context()
        rclpy.init(context=self._context)
        self._node = rclpy.create_node("soak_states", context=self._context)
        self._subscription = self._node.create_subscription(
            DynamicsState, f"/{harness.NODE}/state", self._take, 1000, raw=True)
        self._executor = EventsExecutor(context=self._context)
        self._executor.add_node(self._node)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self):
        # spun and stopped in this thread: the EventsExecutor's shutdown from
        # another one waits for ever
        while not self._stop.is_set():
            self._executor.spin_once(timeout_sec=0.1)

    def _take(self, data):
        self.count += 1
        if self.count % CHECK_EVERY == 0:
            self._kept.append(data)

    def connected(self):
        return self._subscription.get_publisher_count() > 0

    def take_kept(self):
        kept, self._kept = self._kept, []
        return kept

    def close(self):
        self._stop.set()
        self._thread.join(timeout=5.0)
        self._node.destroy_node()
        rclpy.shutdown(context=self._context)


def drive(names, root, floating, rate, sent, started, stop):
    """The robot's driver, in a process of its own: joint states at ``rate``
    (each after its odometry for a floating base) from the moment the node
    subscribes until ``stop``; ``sent``: how many so far, ``started`` set at
    the first. The soak's own process receives some 21 MB/s of a humanoid's
    states and checks them, which would hold up a stream sharing its GIL and
    send it in bursts beyond the node's queue."""
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("soak_driver", context=context)
    joint_pub = node.create_publisher(JointState, "joint_states", 100)
    odom_pub = node.create_publisher(Odometry, "odom", 100) if floating else None
    # drawn and serialized before the stream starts, 1,000 of each used in
    # turn with their stamps put in: a robot's driver is not a Python process
    rng, zero = np.random.default_rng(0), harness.stamp(0)
    joint_states = [serialize_message(harness.joint_state(names, rng.uniform(-1, 1, len(names)),
                                                          rng.uniform(-1, 1, len(names)), stamp_=zero))
                    for _ in range(1000)]
    odometry = [serialize_message(harness.odometry(zero, np.r_[rng.uniform(-1, 1, 3), unit_quaternion(rng)],
                                                   rng.uniform(-1, 1, 6), root))
                for _ in range(1000 if floating else 0)]
    while joint_pub.get_subscription_count() == 0 and not stop.is_set():
        time.sleep(0.05)
    started.set()
    start, k = time.monotonic(), 0
    while not stop.is_set():
        stamp = harness.stamp(1 + k // 1000, (k % 1000) * 10**6)
        if odom_pub is not None:
            odom_pub.publish(harness.with_cdr_stamp(odometry[k % 1000], stamp))
        joint_pub.publish(harness.with_cdr_stamp(joint_states[k % 1000], stamp))
        k += 1
        sent.value = k
        time.sleep(max(0.0, start + k / rate - time.monotonic()))
    node.destroy_node()
    rclpy.shutdown(context=context)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=7200.0, help="seconds (7200)")
    parser.add_argument("--rate", type=float, default=1000.0, help="joint states per second (1000)")
    parser.add_argument("--swap-period", type=float, default=10.0, help="seconds between swaps (10)")
    parser.add_argument("--csv", type=Path, help="also write the RSS samples (time s, RSS MB) here, as taken")
    parser.add_argument("--robot", default="panda", help="an example-robot-data URDF (panda)")
    parser.add_argument("--base", default="auto", choices=("auto", "fixed", "floating"))
    parser.add_argument("-p", "--node-parameter", action="append", default=[], metavar="NAME:=VALUE",
                        help="one more of the node's parameters, as ros2 run takes it (repeatable)")
    options = parser.parse_args()

    harness.isolate_ros_environment()
    path = robots.example_robot_urdf(options.robot)
    model = load_urdf(path, base=options.base)
    names, root = list(model.joint_names), model.link_names[0]
    hand = HANDS.get(options.robot, model.link_names[-1])
    # the states as bytes, parsed one in CHECK_EVERY: a humanoid's 21 kB
    # states at 1 kHz would take this process a core to parse, beside the node
    peer = harness.Peer("soak_peer", outputs=("model",))
    states = StateCounter()
    log = Path(f"/tmp/soak_node_{int(time.time())}.log")
    # no background K_c refinement (opt-in): its process is not the node's memory
    node = harness.NodeProcess("-p", f"urdf_file:={path}", "-p", "kc_refinement.time_budget:=0.0",
                               "-p", f"base:={options.base}",
                               *(arg for value in options.node_parameter for arg in ("-p", value)), log_path=log,
                               diagnostic_period=None)
    processes = multiprocessing.get_context("spawn")  # not a fork of a process with DDS running
    stop, started = processes.Event(), processes.Event()
    sent = processes.Value("q", 0, lock=False)  # written by the driver alone
    received = {"states": 0, "checked": 0, "non_finite": 0}
    driver = processes.Process(target=drive, daemon=True, args=(
        names, root, model.floating, options.rate, sent, started, stop))

    def count_states():
        """Count what arrived, and parse what was kept of it."""
        received["states"] = states.count
        checked = [deserialize_message(data, DynamicsState) for data in states.take_kept()]
        received["checked"] += len(checked)
        received["non_finite"] += sum(
            not np.all(np.isfinite(m.mass_matrix)) or not np.isfinite(m.kc_global) for m in checked)

    samples, accepted, refused, unanswered = [], 0, 0, 0
    if options.csv:
        options.csv.write_text("seconds,rss_mb\n")
    try:
        peer.wait_for_model(model.name, 180.0, node)
        process = psutil.Process(node.process.pid)
        peer.wait_until(states.connected, 10.0, "~/state to connect")
        driver.start()
        if not started.wait(60.0):
            raise SystemExit("the driver's joint states found no subscriber within 60 s")
        start = time.monotonic()
        next_sample = next_swap = start
        swap = 0
        while time.monotonic() - start < options.duration:
            now = time.monotonic()
            if now >= next_sample:
                samples.append((now - start, process.memory_info().rss / 2**20))
                next_sample += SAMPLE_PERIOD
                if options.csv:  # as it goes: a run cut short still has its samples
                    with open(options.csv, "a") as handle:
                        handle.write(f"{samples[-1][0]:.1f},{samples[-1][1]:.3f}\n")
                count_states()
                if len(samples) % 60 == 1:  # every 10 minutes: the figures so far, for a shorter soak's
                    print(f"{samples[-1][0]:7.0f} s  RSS {samples[-1][1]:.1f} MB  swaps {swap}  sent {sent.value}  "
                          f"received {received['states']}  non-finite {received['non_finite']}", flush=True)
            if now >= next_swap:
                mass = -1.0 if swap % 10 == 9 else 0.5 + (swap % 7) * 0.25  # every tenth invalid
                try:
                    [result] = peer.set_parameters(
                        [Parameter("payload.link", value=hand), Parameter("payload.mass", value=mass),
                         Parameter("payload.com", value=[0.0, 0.0, 0.05]),
                         Parameter("payload.inertia", value=[0.002, 0.0, 0.0, 0.002, 0.0, 0.001])],
                        atomically=True, timeout=60.0)
                except AssertionError:  # no answer within the timeout: counted, the soak goes on
                    unanswered += 1
                else:
                    assert result.successful == (mass >= 0), (mass, result.reason)
                    accepted += result.successful
                    refused += not result.successful
                swap += 1
                next_swap += options.swap_period
            time.sleep(0.05)
    finally:
        stop.set()
        driver.join(5.0)
        time.sleep(0.5)
        count_states()  # the last ones, after the last sample
        try:
            diagnostics = peer.diagnostics(timeout=5.0)
        except AssertionError:
            diagnostics = {}
        began = time.monotonic()
        code = node.stop()
        exit_seconds = time.monotonic() - began
        peer.close()
        states.close()

    t, rss = np.array(samples).T
    after = t >= min(WARMUP, t[-1] / 2)
    slope = np.polyfit(t[after] / 3600.0, rss[after], 1)[0] if after.sum() > 2 else float("nan")
    print(f"soak_node: {options.robot} ({model.nv} dof, base {options.base}), {options.rate:.0f} Hz for "
          f"{options.duration:.0f} s, a swap on {hand} every {options.swap_period:g} s")
    without = 1.0 - received["states"] / max(sent.value, 1)
    print(f"joint states sent {sent.value}, states received {received['states']} ({100 * without:.3f}% without "
          f"an output), non-finite {received['non_finite']} of the {received['checked']} parsed")
    print("the node's last diagnostics: " + ", ".join(f"{key} {diagnostics.get(key)}" for key in (
        "processed", "dropped", "dropped.lost_before_callback", "compute_p99_us")))
    warnings = [line for line in log.read_text().splitlines() if "WARN" in line]
    print(f"warnings in the node's log: {len(warnings)}" + "".join(f"\n  {w}" for w in warnings[:5]))
    print(f"payload requests accepted {accepted}, refused {refused}, unanswered within 60 s {unanswered}")
    print(f"RSS at {t[after][0]:.0f} s: {rss[after][0]:.1f} MB; at the end ({t[-1]:.0f} s): {rss[-1]:.1f} MB; "
          f"growth {rss[-1] - rss[after][0]:+.2f} MB; slope {slope:+.2f} MB/h; max {rss.max():.1f} MB")
    print(f"node exit status {code} after SIGINT, in {exit_seconds:.2f} s")


if __name__ == "__main__":
    main()

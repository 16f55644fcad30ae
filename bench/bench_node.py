"""End-to-end benchmark of the node: joint states at 1 kHz from another process.

    python bench/bench_node.py [--robot panda] [--rounds 3] [--duration 20] [--rate 1000]
                               [--baseline CHECKOUT] [--kc-time-budget S] [--kc-certificate FILE]
                               [--fifo PRIORITY]

The node runs as its own process (``python -m robot_dynamics_ros.node.dynamics_node``); this
process publishes joint states from a thread (and, for a floating base,
odometry with the same stamp) and records every output with its arrival time.
Outputs are paired with their joint states by header stamp.

Configurations, run in interleaved rounds of ``--duration`` s each (A, B, C,
A, B, C, ...), so that the machine's load falls on all alike:
- ``state``: this checkout's node as it starts by default (``~/state`` and
  ``~/gravity_torques``);
- ``state+arrays``: the same with ``publish_arrays:=true`` (also the
  Float64MultiArray topics);
- ``baseline``: with ``--baseline``, the node of another checkout (e.g. a
  ``git worktree``; of a revision before ``~/state``, its five topics);
- ``certificate``, ``refining``: with ``--kc-certificate FILE``, the node
  serving that K_c certificate (``kc_certificate``), and the node without it
  refining its K_c interval in the background for the round's whole length
  (``kc_refinement.time_budget``), beside ``state`` (neither): what a
  certificate spares the control loop;
- ``fifo``: with ``--fifo PRIORITY``, ``state`` with the node's process
  (all its threads) under ``chrt -f PRIORITY``, the real-time scheduling a
  control computer gives its controllers (Linux; needs the right to it).

The peer subscribes to what a controller of each revision reads for M, C,
g and the bounds, so that DDS delivers (and the node serializes and sends)
what a controller costs it (received as serialized bytes, of which the
peer reads the stamp: a controller is not a Python process, and this one
shares the two cores with the node): ``~/state`` alone from this checkout; the
baseline's four topics ``~/mass_matrix``, ``~/coriolis_matrix``,
``~/coriolis_bounds`` and ``~/gravity_torques``. Reported per configuration:
end-to-end latency, joint state published -> the controller has its
outputs (``~/state`` received; the baseline's ``~/gravity_torques``, which
it publishes last, after the three unstamped arrays that cannot be paired
by stamp), p50 and p99; the node's compute time p99
(callback start to outputs serialized, median over its 1 s diagnostics
windows) and mean; the node process's CPU time (all its threads: the
executor, DDS's) per joint state sent; joint states without output.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import rclpy
from rclpy.experimental import EventsExecutor
from rclpy.serialization import serialize_message

sys.path.insert(0, str(Path(__file__).absolute().parent.parent / "test" / "support"))
import robots  # noqa: E402
import ros_harness as harness  # noqa: E402
from robot_dynamics_ros.dynamics import load_urdf  # noqa: E402


class Stream(threading.Thread):
    """Joint state k at start + k / rate, stamped with k; odometry with the
    same stamp first for a floating base. The states (random, inside +-1 rad)
    are drawn and serialized before the stream starts, 1,000 of them used in
    turn, and sent as bytes with their stamps put in: a robot's driver is not
    a Python process, and this one shares the machine's two cores with the
    node."""

    def __init__(self, peer, names, rate, floating):
        super().__init__(daemon=True)
        self.peer, self.rate = peer, rate
        self.sent_at = {}  # stamp (sec, nanosec) -> monotonic time sent
        self.stop = threading.Event()
        rng = np.random.default_rng(0)
        n, zero = len(names), harness.stamp(0)
        self.joint_states = [serialize_message(harness.joint_state(
            names, rng.uniform(-1, 1, n), rng.uniform(-1, 1, n), stamp_=zero)) for _ in range(1000)]
        self.odometry = []
        for _ in range(1000 if floating else 0):
            quaternion = rng.normal(size=4)
            self.odometry.append(serialize_message(harness.odometry(
                zero, np.r_[rng.uniform(-1, 1, 3), quaternion / np.linalg.norm(quaternion)],
                rng.uniform(-1, 1, 6), ROOT_LINK[0])))

    def run(self):
        start, k = time.monotonic(), 0
        while not self.stop.is_set():
            stamp = harness.stamp(1000 + k // 1000, (k % 1000) * 1_000_000)
            if self.odometry:
                self.peer.odom_pub.publish(harness.with_cdr_stamp(self.odometry[k % 1000], stamp))
            msg = harness.with_cdr_stamp(self.joint_states[k % 1000], stamp)
            self.sent_at[stamp.sec, stamp.nanosec] = time.monotonic()
            self.peer.joint_pub.publish(msg)
            k += 1
            time.sleep(max(0.0, start + k / self.rate - time.monotonic()))


class Recorder:
    """What a controller reads of the node: the node's ``topics``, and when
    each message of the last one arrived, by its header stamp. Taken as
    serialized bytes, of which only that stamp is read, by rclpy's
    EventsExecutor in a context of its own: the peer's SingleThreadedExecutor
    and rclpy's conversion of the messages took most of a core at 1 kHz,
    which the node then lacked."""

    def __init__(self, topics):
        self.arrivals = []  # (monotonic time, (sec, nanosec))
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node("bench_recorder", context=self.context)
        self.subscriptions = [
            self.node.create_subscription(harness.OUTPUT_TYPES[topic], f"/{harness.NODE}/{topic}",
                                          self._record if topic == topics[-1] else self._ignore, 1000, raw=True)
            for topic in topics]
        self.executor = EventsExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self):
        # spun and stopped in this thread: the EventsExecutor's shutdown from
        # another one waits for ever
        while not self.stop.is_set():
            self.executor.spin_once(timeout_sec=0.1)

    def _record(self, data):
        self.arrivals.append((time.monotonic(), harness.cdr_stamp(data)))

    def _ignore(self, data):
        pass

    def connected(self):
        return all(s.get_publisher_count() > 0 for s in self.subscriptions)

    def close(self):
        self.stop.set()
        self.thread.join(timeout=5.0)
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


ROOT_LINK = [""]


BASELINE_TOPICS = ("mass_matrix", "coriolis_matrix", "coriolis_bounds", "gravity_torques")


def process_cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process and all its threads so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_round(config, options, path, names, floating, baseline, results):
    # what a controller of the revision subscribes to; the last of it to arrive is stamped
    old_topics = config == "baseline" and not (baseline / "msg" / "DynamicsState.msg").exists()
    topics = BASELINE_TOPICS if old_topics else ("state",)
    peer = harness.Peer("bench_peer", outputs=())
    recorder = Recorder(topics)
    log = Path(tempfile.mkdtemp(prefix="bench_node_")) / "node.log"
    args = ["-p", f"urdf_file:={path}"]
    if floating:
        args += ["-p", "base:=floating"]
    if options.kc_time_budget is not None and config != "refining":
        args += ["-p", f"kc_refinement.time_budget:={options.kc_time_budget}"]
    if config == "state+arrays":
        args += ["-p", "publish_arrays:=true"]
    if config == "certificate":
        args += ["-p", f"kc_certificate:={options.kc_certificate}"]
    if config == "refining":
        args += ["-p", f"kc_refinement.time_budget:={options.duration + 60.0}"]
    prefix = ("chrt", "-f", str(options.fifo)) if config == "fifo" else ()
    node = harness.NodeProcess(*args, log_path=log, prefix=prefix, diagnostic_period=None,
                               **({"repo": baseline} if config == "baseline" else {}))
    stream = Stream(peer, names, options.rate, floating)
    try:
        serving = peer.wait_for_model(load_urdf(path).name, 180.0, node)
        peer.wait_until(recorder.connected, 10.0, "the recorder to connect")
        if config == "certificate" and not serving.get("kc_certificate"):
            raise SystemExit(f"the node does not serve {options.kc_certificate}: {serving}")
        first_report = peer.count("diagnostics")
        cpu_before = process_cpu_seconds(node.process.pid)
        stream.start()
        time.sleep(options.duration)
        last_report = peer.count("diagnostics")
        out = results[config]
        out["node_cpu"].append(process_cpu_seconds(node.process.pid) - cpu_before)
    finally:
        stream.stop.set()
        stream.join(timeout=5.0)
        time.sleep(1.0)
        node.stop()
        peer.close()
        recorder.close()
    sent = stream.sent_at
    stamps = recorder.arrivals
    for arrived, key in stamps:
        if key in sent:
            out["latency"].append(arrived - sent[key])
    out["sent"].append(len(sent))
    out["answered"].append(len({key for _, key in stamps if key in sent}))
    for msg in peer.messages("diagnostics", first_report)[:last_report - first_report]:
        for status in msg.status:
            values = {kv.key: kv.value for kv in status.values}
            if values.get("compute_p99_us"):
                out["compute_p99"].append(float(values["compute_p99_us"]))
                out["compute_mean"].append(float(values["compute_mean_us"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robot", default="panda", help="example-robot-data URDF name (panda)")
    parser.add_argument("--floating", action="store_true", help="serve it as a floating base (odometry too)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per configuration (3)")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds per round (20)")
    parser.add_argument("--rate", type=float, default=1000.0, help="joint states per second (1000)")
    parser.add_argument("--baseline", type=Path, help="a checkout of another revision, run as 'baseline'")
    parser.add_argument("--configs", default="state,state+arrays",
                        help="comma-separated configurations of this checkout (state,state+arrays)")
    parser.add_argument("--kc-time-budget", type=float, default=None,
                        help="the nodes' kc_refinement.time_budget (default: each node's own)")
    parser.add_argument("--kc-certificate", type=Path,
                        help="a K_c certificate of the robot: adds the configurations certificate and refining")
    parser.add_argument("--fifo", type=int, metavar="PRIORITY",
                        help="adds the configuration fifo: the node under chrt -f PRIORITY (1-99)")
    options = parser.parse_args()

    harness.isolate_ros_environment()
    path = robots.example_robot_urdf(options.robot)
    model = load_urdf(path, base="floating" if options.floating else "fixed")
    ROOT_LINK[0] = model.base_link
    names = list(model.joint_names)
    configs = options.configs.split(",") + (["baseline"] if options.baseline else [])
    if options.fifo is not None:
        check = subprocess.run(["chrt", "-f", str(options.fifo), "true"], capture_output=True, text=True)
        if check.returncode:
            raise SystemExit(f"--fifo {options.fifo}: chrt cannot run a process so here: {check.stderr.strip()}")
        configs.append("fifo")
    if options.kc_certificate:
        options.kc_certificate = options.kc_certificate.absolute()
        configs += ["certificate", "refining"]
    results = {c: defaultdict(list) for c in configs}
    for _ in range(options.rounds):
        for config in configs:
            one_round(config, options, path, names, options.floating, options.baseline, results)

    print(f"\nbench_node: {options.robot} (nv {model.nv}{', floating' if options.floating else ''}), "
          f"{options.rate:.0f} Hz, {options.rounds} interleaved rounds of {options.duration:.0f} s; "
          f"{os.cpu_count()} cores")
    print(f"{'configuration':<14} {'latency p50':>12} {'p99':>9} {'compute p99':>12} {'mean':>7} "
          f"{'node CPU':>9} {'no output':>10}")
    for config, out in results.items():
        ms = 1e3 * np.array(out["latency"])
        lost = 1 - sum(out["answered"]) / max(1, sum(out["sent"]))
        cpu = 1e6 * sum(out["node_cpu"]) / max(1, sum(out["sent"]))  # per joint state sent
        print(f"{config:<14} {np.percentile(ms, 50):>9.3f} ms {np.percentile(ms, 99):>6.3f} ms "
              f"{np.median(out['compute_p99']):>9.0f} us {np.mean(out['compute_mean']):>4.0f} us "
              f"{cpu:>6.0f} us {100 * lost:>9.2f}%")


if __name__ == "__main__":
    main()

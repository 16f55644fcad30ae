"""End-to-end benchmark of the node on a floating base: g1 (29 joints + 6), 500 Hz, no Gamma.

    python bench/bench_node_floating.py [--duration 20] [--rate 500] [--kc-time-budget S]

The node runs as its own process with ``-p base:=floating`` and
``publish_christoffel`` false. A thread of this process sends, per tick, one
nav_msgs/Odometry of the root link (random pose with a unit quaternion,
random twist) and one joint state (random within the limits) with the same
stamp; no configuration repeats. Each received mass matrix is matched to the
joint state it answers by its value, with Pinocchio's free-flyer model as the
oracle (M does not depend on the base pose, so a joint state paired with the
previous tick's odometry still matches), which also proves it correct.

Reported:
- joint states sent
- end-to-end latency, joint state published -> mass matrix received: p50, p99, max
- node compute time (from /diagnostics): p99 and mean
- joint states without a mass matrix, and the node's drop counts by reason
  (``dropped.*`` in /diagnostics, e.g. no_base_state) and odometry counts
- mass matrices not equal to Pinocchio's (must be 0)
"""

import argparse
import functools
import math
import os
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from nav_msgs.msg import Odometry

from bench_node import MATCH_TOLERANCE, harness, percentile_ms, robots

ROBOT = "g1_29dof_rev_1_0"
STARTUP_TIMEOUT = 300.0  # a first run compiles the numba kernels


def random_stream(ranges, count, seed=11):
    """Base poses (x, y, z, quaternion xyzw), base twists, joint positions and velocities."""
    rng = np.random.default_rng(seed)
    quaternion = rng.normal(size=(count, 4))
    quaternion /= np.linalg.norm(quaternion, axis=1, keepdims=True)
    base = np.hstack([rng.uniform(-2.0, 2.0, (count, 3)), quaternion])
    q = ranges[:, 0] + (ranges[:, 1] - ranges[:, 0]) * rng.random((count, len(ranges)))
    return base, rng.uniform(-1.5, 1.5, (count, 6)), q, rng.uniform(-3.0, 3.0, q.shape)


def odometry(stamp, child, pose, twist) -> Odometry:
    msg = Odometry(child_frame_id=child)
    msg.header.stamp, msg.header.frame_id = stamp, "odom"
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    v, w = msg.twist.twist.linear, msg.twist.twist.angular
    p.x, p.y, p.z, o.x, o.y, o.z, o.w = map(float, pose)
    v.x, v.y, v.z, w.x, w.y, w.z = map(float, twist)
    return msg


class Stream(threading.Thread):
    """Sends tick k (odometry, then the joint state, one stamp) at start + k / rate;
    records when each joint state went out. Stamps are the nominal tick times."""

    def __init__(self, peer, odom_pub, root, names, states, rate):
        super().__init__(daemon=True)
        self.peer, self.odom_pub, self.root, self.names, self.rate = peer, odom_pub, root, names, rate
        self.states = states
        self.sent_at = []

    def run(self):
        base, twist, q, qd = self.states
        start, epoch_ns = time.monotonic(), time.time_ns()
        for k in range(len(q)):
            t = epoch_ns + round(k * 1e9 / self.rate)
            stamp = harness.stamp(t // 10**9, t % 10**9)
            self.odom_pub.publish(odometry(stamp, self.root, base[k], twist[k]))
            msg = harness.joint_state(self.names, q[k], qd[k], stamp_=stamp)
            self.sent_at.append(time.monotonic())
            self.peer.joint_pub.publish(msg)
            time.sleep(max(0.0, start + (k + 1) / self.rate - time.monotonic()))


def node_values(peer, start=0):
    """The node's diagnostics key-values, one dict per report from ``start`` on."""
    return [{kv.key: kv.value for kv in status.values}
            for msg in peer.messages("diagnostics", start) for status in msg.status
            if status.name.startswith(harness.NODE)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of stream (20)")
    parser.add_argument("--rate", type=float, default=500.0, help="joint states per second (500)")
    parser.add_argument("--kc-time-budget", type=float, default=None,
                        help="the node's kc_refinement.time_budget (default: the node's; "
                        "0 turns the background refinement of K_c off, to compare latencies)")
    options = parser.parse_args()

    harness.isolate_ros_environment()
    path = robots.example_robot_urdf(ROBOT)
    pin_model = robots.load_pinocchio(path, free_flyer=True)

    peer = harness.Peer("bench_peer", outputs=("mass_matrix",))
    log = Path(tempfile.mkdtemp(prefix="bench_node_floating_")) / "node.log"
    budget = [] if options.kc_time_budget is None else [
        "-p", f"kc_refinement.time_budget:={options.kc_time_budget}"]
    node = harness.NodeProcess("-p", f"urdf_file:={path}", "-p", "base:=floating",
                               "-p", "publish_christoffel:=false", *budget, log_path=log)
    try:
        served = peer.wait_for_model(ROBOT, STARTUP_TIMEOUT, node)
        assert served["base"].startswith("floating, root link "), served["base"]
        root = served["base"].rsplit(" ", 1)[1]
        names = served["joints"].split(",")  # the node's output order
        oracle = robots.PinocchioOracle(pin_model, names)
        states = random_stream(robots.joint_ranges(oracle, path), round(options.rate * options.duration))
        diagnostics_start = peer.count("diagnostics")
        before = node_values(peer)[-1]
        stream = Stream(peer, peer.odom_pub, root, names, states, options.rate)
        stream.start()
        stream.join()
        diagnostics_end = peer.count("diagnostics")
        time.sleep(2.5)  # the last outputs in flight, and a diagnostics report counting them
    finally:
        node.stop()
        peer.close()

    records = list(peer.received["mass_matrix"])
    arrived = np.array([t for t, _ in records])
    base, _, q, _ = states
    expected = functools.lru_cache(maxsize=1024)(lambda k: [oracle.mass_matrix(np.r_[base[k], q[k]])])
    matches = harness.match_by_value([harness.from_multiarray(m) for _, m in records], expected,
                                     len(stream.sent_at), tolerance=MATCH_TOLERANCE)
    sent_at = np.array(stream.sent_at)
    wrong = sum(m is None for m in matches)
    ok = [(j, m[0]) for j, m in enumerate(matches) if m is not None]  # (received, joint state)
    latency = np.array([arrived[j] - sent_at[k] for j, k in ok])
    sent = len(sent_at)
    lost = sent - len({k for _, k in ok})

    reports = [v for v in node_values(peer, diagnostics_start)[: diagnostics_end - diagnostics_start]
               if v.get("compute_p99_us")]
    p99s = [float(v["compute_p99_us"]) for v in reports]
    means = [float(v["compute_mean_us"]) for v in reports]
    final = node_values(peer)[-1]
    delta = {key: int(final[key]) - int(before.get(key, 0)) for key in final
             if key == "processed" or key.startswith(("dropped", "odometry"))}
    never_taken = sent - delta["processed"] - delta["dropped"]
    drops = ", ".join(f"{k[8:]} {n}" for k, n in delta.items() if k.startswith("dropped.") and n) or "none"
    odometry_counts = ", ".join(f"{k} {n}" for k, n in delta.items() if k.startswith("odometry")) or "-"

    rows = [
        ("joint states sent (+ as many odometry)", f"{sent} at {sent / (sent_at[-1] - sent_at[0]):.0f}/s"),
        ("end-to-end latency p50", f"{percentile_ms(latency, 50):.3f} ms"),
        ("end-to-end latency p99", f"{percentile_ms(latency, 99):.3f} ms"),
        ("end-to-end latency max", f"{percentile_ms(latency, 100):.3f} ms"),
        ("node compute p99 (median of 1 s windows)", f"{np.median(p99s):.0f} us"),
        ("node compute p99 (worst 1 s window)", f"{max(p99s, default=math.nan):.0f} us"),
        ("node compute mean", f"{np.mean(means):.0f} us"),
        ("joint states without output", f"{lost} ({100 * lost / max(1, sent):.2f} %)"),
        ("  dropped by the node, by reason", drops),
        ("  never taken by the node (input queue)", f"{never_taken}"),
        ("  taken, mass matrix not received", f"{lost - delta['dropped'] - never_taken}"),
        ("odometry (node's counts)", odometry_counts),
        ("mass matrices not equal to Pinocchio's", f"{wrong}"),
        ("K_c refinement at the end", final.get("kc_refinement", "")),
    ]
    print(f"\nbench_node_floating: {ROBOT} floating ({6 + len(names)} DoF), no Gamma, "
          f"{options.rate:.0f} Hz for {options.duration:.0f} s; {os.cpu_count()} cores")
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()

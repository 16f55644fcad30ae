"""End-to-end benchmark of the node: panda, joint states at 1 kHz from another process.

    python bench/bench_node.py [--duration 30] [--rate 1000] [--swaps 5] [--kc-time-budget S]

The node runs as its own process (``python -m robot_dynamics_ros.node``); this
process publishes joint states from a thread and records every mass matrix
with its arrival time. Each received matrix is matched to the joint state it
answers by its value (the configurations never repeat; Pinocchio gives the
expected matrix), which also proves it correct. Then the payload is switched
``--swaps`` times through SetParameters while the stream goes on.

Reported, with the targets of the node's issue:
- end-to-end latency, joint state published -> mass matrix received: p50, p99
- node compute time (callback start to outputs ready, from /diagnostics): p99
- joint states without a mass matrix (lost anywhere, or refused by the node)
- payload swap latency: SetParameters sent -> first mass matrix with the new payload
"""

import argparse
import functools
import math
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).absolute().parent.parent / "test"))
import robots  # noqa: E402
import ros_harness as harness  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

HAND = "panda_hand"
SWAP_MASSES = (1.0, 2.0)
SWAP_PAYLOAD = ([0.0, 0.0, 0.05], [0.002, 0.0, 0.0, 0.002, 0.0, 0.001])
MATCH_TOLERANCE = 1e-9


def configuration(ranges, k):
    """Joint state k of the stream: smooth, inside the limits, never repeating."""
    centre, half = ranges.mean(axis=1), (ranges[:, 1] - ranges[:, 0]) / 2
    return centre + 0.8 * half * np.sin(0.0007 * k * (1 + np.arange(len(ranges))) + 0.3)


def inertia3(six):
    ixx, ixy, ixz, iyy, iyz, izz = six
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


class Stream(threading.Thread):
    """Publishes joint state k at start + k / rate and records when it went out."""

    def __init__(self, peer, names, ranges, rate):
        super().__init__(daemon=True)
        self.peer, self.names, self.ranges, self.rate = peer, names, ranges, rate
        self.sent_at = []
        self.stop = threading.Event()

    def run(self):
        start = time.monotonic()
        k = 0
        while not self.stop.is_set():
            msg = harness.joint_state(self.names, configuration(self.ranges, k))
            self.sent_at.append(time.monotonic())
            self.peer.joint_pub.publish(msg)
            k += 1
            time.sleep(max(0.0, start + k / self.rate - time.monotonic()))


def percentile_ms(values, p):
    return 1e3 * float(np.percentile(values, p)) if len(values) else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=30.0, help="steady-state seconds (30)")
    parser.add_argument("--rate", type=float, default=1000.0, help="joint states per second (1000)")
    parser.add_argument("--swaps", type=int, default=5, help="payload swaps after the steady state (5)")
    parser.add_argument("--kc-time-budget", type=float, default=None,
                        help="the node's kc_refinement.time_budget (default: the node's, 60 s; "
                        "0 turns the background refinement of K_c off, to compare latencies)")
    options = parser.parse_args()

    harness.isolate_ros_environment()
    path = robots.example_robot_urdf("panda")
    pin_model = robots.load_pinocchio(path)
    names = robots.pinocchio_joint_names(pin_model)
    oracles = [robots.PinocchioOracle(pin_model, names)] + [
        robots.PinocchioOracle(robots.add_payload_pinocchio(
            pin_model, HAND, m, SWAP_PAYLOAD[0], inertia3(SWAP_PAYLOAD[1])), names)
        for m in SWAP_MASSES]
    ranges = robots.joint_ranges(oracles[0], path)

    peer = harness.Peer("bench_peer", outputs=("mass_matrix",))
    log = Path(tempfile.mkdtemp(prefix="bench_node_")) / "node.log"
    budget = [] if options.kc_time_budget is None else [
        "-p", f"kc_refinement.time_budget:={options.kc_time_budget}"]
    node = harness.NodeProcess("-p", f"urdf_file:={path}", *budget, log_path=log)
    stream = Stream(peer, names, ranges, options.rate)
    swaps = []  # (mass, time sent, time acknowledged)
    try:
        peer.wait_for_model("panda", 180.0, node)
        diagnostics_start = peer.count("diagnostics")
        stream.start()
        time.sleep(options.duration)
        steady_sent = len(stream.sent_at)
        steady_diagnostics = peer.count("diagnostics")
        for i in range(options.swaps):
            mass = SWAP_MASSES[i % 2]
            sent = time.monotonic()
            [result] = peer.set_parameters(
                [Parameter("payload.link", value=HAND), Parameter("payload.mass", value=mass),
                 Parameter("payload.com", value=SWAP_PAYLOAD[0]),
                 Parameter("payload.inertia", value=SWAP_PAYLOAD[1])], atomically=True)
            assert result.successful, result.reason
            swaps.append((mass, sent, time.monotonic()))
            time.sleep(3.0)  # room for the new model's K_c
    finally:
        stream.stop.set()
        try:
            if stream.is_alive():
                stream.join(timeout=5.0)
            time.sleep(1.5)  # the last outputs in flight, and a diagnostics report counting them
        finally:
            node.stop()
            peer.close()

    records = list(peer.received["mass_matrix"])
    arrived = np.array([t for t, _ in records])
    expected = functools.lru_cache(maxsize=1024)(
        lambda k: [o.mass_matrix(configuration(ranges, k)) for o in oracles])
    matches = harness.match_by_value([harness.from_multiarray(m) for _, m in records], expected,
                                     len(stream.sent_at), tolerance=MATCH_TOLERANCE)
    sent_at = np.array(stream.sent_at)
    wrong = sum(m is None for m in matches)
    ok = [(j, m) for j, m in enumerate(matches) if m is not None]
    steady = [(j, k) for j, (k, which) in ok if k < steady_sent]
    latency = np.array([arrived[j] - sent_at[k] for j, k in steady])
    served = {k for _, (k, _) in ok}
    lost = sum(1 for k in range(steady_sent) if k not in served)

    reports = [m for m in peer.messages("diagnostics", diagnostics_start)[: steady_diagnostics - diagnostics_start]]
    p99s, means, refused = [], [], 0
    for msg in reports:
        for status in msg.status:
            values = {kv.key: kv.value for kv in status.values}
            if values.get("compute_p99_us"):
                p99s.append(float(values["compute_p99_us"]))
                means.append(float(values["compute_mean_us"]))
                refused = int(values["dropped"])

    # Whole run: where the joint states without a mass matrix were lost.
    final = [dict((kv.key, kv.value) for kv in status.values)
             for msg in peer.messages("diagnostics") for status in msg.status if status.name.startswith(harness.NODE)]
    sent_total = len(sent_at)
    processed = int(final[-1]["processed"]) + int(final[-1]["dropped"])
    unanswered = sum(1 for k in range(sent_total) if k not in served)
    never_processed = sent_total - processed

    swap_latency = []
    for mass, sent, _ in swaps:
        which = 1 + SWAP_MASSES.index(mass)
        first = [arrived[j] for j, (k, w) in ok if w == which and arrived[j] > sent]
        swap_latency.append(min(first) - sent if first else float("nan"))
    acks = [ack - sent for _, sent, ack in swaps]

    rate = steady_sent / options.duration
    kc_states = sorted({values.get("kc_refinement", "") for values in final})
    rows = [
        ("joint states sent (steady state)", f"{steady_sent} at {rate:.0f}/s", "", ""),
        ("end-to-end latency p50", f"{percentile_ms(latency, 50):.3f} ms", "0.5 ms",
         f"{percentile_ms(latency, 50) / 0.5:.2f}"),
        ("end-to-end latency p99", f"{percentile_ms(latency, 99):.3f} ms", "2 ms",
         f"{percentile_ms(latency, 99) / 2.0:.2f}"),
        ("end-to-end latency max", f"{percentile_ms(latency, 100):.3f} ms", "", ""),
        ("node compute p99 (median of 1 s windows)", f"{np.median(p99s):.0f} us", "200 us",
         f"{np.median(p99s) / 200:.2f}"),
        ("node compute p99 (worst 1 s window)", f"{max(p99s, default=math.nan):.0f} us", "", ""),
        ("node compute mean", f"{np.mean(means):.0f} us", "", ""),
        ("joint states without output", f"{lost} ({100 * lost / max(1, steady_sent):.2f} %)", "0", ""),
        ("  of which refused by the node", f"{refused}", "", ""),
        ("whole run: joint states without output", f"{unanswered} of {sent_total}", "", ""),
        ("  never taken by the node (input queue)", f"{never_processed}", "", ""),
        ("  taken, mass matrix not received", f"{unanswered - never_processed}", "", ""),
        ("mass matrices not equal to Pinocchio's", f"{wrong}", "0", ""),
        ("payload swap latency (median)", f"{1e3 * np.nanmedian(swap_latency):.0f} ms" if swaps else "-",
         "10 ms", f"{1e3 * np.nanmedian(swap_latency) / 10:.0f}" if swaps else ""),
        ("payload swap latency (max)", f"{1e3 * np.nanmax(swap_latency):.0f} ms" if swaps else "-", "", ""),
        ("SetParameters round trip (median)", f"{1e3 * np.median(acks):.1f} ms" if swaps else "-", "", ""),
        ("K_c refinement states seen", ", ".join(kc_states), "", ""),
        ("K_c interval at the end", f"[{final[-1].get('kc_global_lower')}, {final[-1].get('kc_global')}]",
         "", ""),
    ]
    print(f"\nbench_node: panda (9 DoF), {options.rate:.0f} Hz joint states for {options.duration:.0f} s, "
          f"{len(swaps)} payload swaps; {os.cpu_count()} cores")
    width = max(len(r[0]) for r in rows)
    print(f"{'metric':<{width}}  {'measured':>22}  {'target':>8}  {'ratio':>6}")
    for name, value, target, ratio in rows:
        print(f"{name:<{width}}  {value:>22}  {target:>8}  {ratio:>6}")


if __name__ == "__main__":
    main()

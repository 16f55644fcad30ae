"""How well the node's stamp-gap counter counts lost joint states, and what it costs.

    python bench/bench_stamp_gaps.py [--seeds 10] [--samples 20000]

Simulated 500 Hz streams (test/support/stamp_streams.py): jittery stamps, a
publisher that falls behind and catches up in bursts, one that catches up
8 samples a tick; each healthy, then with 1% and 5% of its joint states
lost at random. Prints the losses injected and counted (sums over the
seeds) and the microseconds per ``StampGaps.missing`` call.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "support"))
from stamp_streams import caught_up_in_chunks, drop, jittery, late_and_caught_up, stamp  # noqa: E402

from robot_dynamics_ros.node.stamp_gaps import StampGaps  # noqa: E402

STREAMS = {"jittery": jittery, "late and caught up": late_and_caught_up,
           "caught up in chunks": caught_up_in_chunks}


def count(stamps_ns):
    gaps = StampGaps()
    times = [stamp(t) for t in stamps_ns]
    names = ("j1", "j2", "j3", "j4", "j5", "j6")
    start = time.perf_counter()
    counted = sum(gaps.missing(t, names) for t in times)
    return counted, (time.perf_counter() - start) / len(times) * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--samples", type=int, default=20_000)
    options = parser.parse_args()
    print("| stream | lost | injected | counted | counted / injected | us per call |")
    print("|---|---|---|---|---|---|")
    for name, stream in STREAMS.items():
        for fraction in (0.0, 0.01, 0.05):
            injected = counted = 0
            costs = []
            for seed in range(options.seeds):
                rng = np.random.default_rng(seed)
                received, lost = drop(rng, stream(rng, options.samples), fraction)
                found, cost = count(received)
                injected, counted = injected + lost, counted + found
                costs.append(cost)
            ratio = f"{counted / injected:.4f}" if injected else "-"
            print(f"| {name} | {fraction:.0%} | {injected} | {counted} | {ratio} | {np.median(costs):.2f} |")


if __name__ == "__main__":
    main()

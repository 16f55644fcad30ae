"""The guaranteed interval for K_c (issue 10): first bound, then refinement.

Per robot: the first guaranteed bound and its time (median of 5, after one
call that compiles or loads the kernels), then refinement with a budget of
``--budget`` seconds (default 60) on both cores, as ``coriolis_constant_interval``
does (``--one-thread``: on one, as the node's background refinement does):
upper, lower, their ratio, time spent and whether refinement finished; then
the peak of Python allocations (tracemalloc) of the same refinement run
again in a fresh refinement (tracemalloc slows numpy's allocations, so it
does not run during the timed one), and the process's peak RSS.
Robots: panda, ur5, kinova, the PUMA, talos (44 joints), romeo (55) and a
100-joint random chain. Run alone (2 cores shared):
``python bench/bench_coriolis_constant.py [--budget 60] [--robots panda ur5] [--one-thread]``
"""
import argparse
import os
import resource
import statistics
import sys
import time
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test"))
from robots import example_robot_urdf, random_urdf  # noqa: E402

from robot_dynamics_ros.dynamics import (  # noqa: E402
    CoriolisConstantRefinement, load_urdf, puma_urdf)
from robot_dynamics_ros.dynamics.coriolis_first_bound import first_upper_bound  # noqa: E402

ROBOTS = {
    "panda": lambda: example_robot_urdf("panda"),
    "ur5": lambda: example_robot_urdf("ur5_robot"),
    "kinova": lambda: example_robot_urdf("kinova"),
    "puma": puma_urdf,
    "talos": lambda: example_robot_urdf("talos_full_v2"),
    "romeo": lambda: example_robot_urdf("romeo"),
    "chain100": lambda: random_urdf(np.random.default_rng(0), 100),
}


def first_bound_ms(model):
    first_upper_bound(model)
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        first_upper_bound(model)
        runs.append(time.perf_counter() - start)
    return 1e3 * statistics.median(runs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=60.0)
    parser.add_argument("--robots", nargs="*", default=list(ROBOTS))
    parser.add_argument("--one-thread", action="store_true")
    args = parser.parse_args()
    print(f"{'robot':9} {'n':>3} {'first bound':>12} {'ms':>7} {'lower':>10} {'upper':>10} "
          f"{'ratio':>7} {'s':>6} {'done':>5} {'py peak MB':>10} {'RSS MB':>7}")
    for name in args.robots:
        model = load_urdf(ROBOTS[name]())
        ms = first_bound_ms(model)
        parallel = not args.one_thread
        refinement = CoriolisConstantRefinement(model)
        first = refinement.interval.upper
        start = time.perf_counter()
        interval = refinement.refine(args.budget, parallel=parallel)
        spent = time.perf_counter() - start
        tracemalloc.start()
        CoriolisConstantRefinement(model).refine(spent, parallel=parallel)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{name:9} {model.nv:3d} {first:12.5g} {ms:7.2f} {interval.lower:10.6g} "
              f"{interval.upper:10.6g} {interval.upper / interval.lower:7.3f} {spent:6.1f} "
              f"{str(interval.finished):>5} {peak / 1e6:10.1f} {rss:7.0f}", flush=True)


if __name__ == "__main__":
    main()

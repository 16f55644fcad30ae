"""The guaranteed interval for K_c (issue 10): first bound, then refinement.

Per robot: the first guaranteed bound and its time (median of 5, after one
call that compiles or loads the kernels), then refinement with a budget of
``--budget`` seconds (default 60) on both cores, as ``coriolis_constant_interval``
does (``--one-thread``: on one, as the node's background refinement does):
upper, lower, their ratio, time spent and whether refinement finished; then
the peak of Python allocations (tracemalloc) of the same refinement run
again in a fresh refinement (tracemalloc slows numpy's allocations, so it
does not run during the timed one), and the resident memory the timed run
added at its peak: VmHWM after it minus VmRSS before it, the peak reset
(/proc/self/clear_refs) and freed memory returned (malloc_trim) first, the
kernels loaded by refining a 3-joint chain before (numba's own allocations,
which tracemalloc does not see, count here; Linux only).
Robots: panda, ur5, kinova, the PUMA, solo12 (fixed base: four 3-joint legs on
the world), talos (44 joints), romeo (55) and a 100-joint random chain. Run alone (2 cores shared):
``python bench/bench_coriolis_constant.py [--budget 60] [--robots panda ur5] [--one-thread]``
"""
import argparse
import ctypes
import gc
import os
import statistics
import sys
import time
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "support"))
from robots import example_robot_urdf, random_urdf  # noqa: E402

from robot_dynamics_ros.dynamics import (  # noqa: E402
    CoriolisConstantRefinement, load_urdf, puma_urdf)
from robot_dynamics_ros.dynamics.kc.first_bound import first_upper_bound  # noqa: E402

ROBOTS = {
    "panda": lambda: example_robot_urdf("panda"),
    "ur5": lambda: example_robot_urdf("ur5_robot"),
    "kinova": lambda: example_robot_urdf("kinova"),
    "puma": puma_urdf,
    "solo12": lambda: example_robot_urdf("solo12"),
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


def resident_mb(field):
    """VmRSS or VmHWM of this process, in MB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def resident_baseline_mb():
    """VmRSS with freed memory returned to the system and the peak reset to it."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # resets VmHWM to VmRSS
    return resident_mb("VmRSS")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=60.0)
    parser.add_argument("--robots", nargs="*", default=list(ROBOTS))
    parser.add_argument("--one-thread", action="store_true")
    args = parser.parse_args()
    print(f"{'robot':9} {'n':>3} {'first bound':>12} {'ms':>7} {'lower':>10} {'upper':>10} "
          f"{'ratio':>7} {'s':>6} {'done':>5} {'py peak MB':>10} {'RSS added MB':>12}")
    CoriolisConstantRefinement(load_urdf(random_urdf(np.random.default_rng(0), 3))).refine(60.0)
    for name in args.robots:
        model = load_urdf(ROBOTS[name]())
        ms = first_bound_ms(model)
        parallel = not args.one_thread
        refinement = CoriolisConstantRefinement(model)
        first = refinement.interval.upper
        before = resident_baseline_mb()
        start = time.perf_counter()
        interval = refinement.refine(args.budget, parallel=parallel)
        spent = time.perf_counter() - start
        added = resident_mb("VmHWM") - before
        tracemalloc.start()
        CoriolisConstantRefinement(model).refine(spent, parallel=parallel)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"{name:9} {model.nv:3d} {first:12.5g} {ms:7.2f} {interval.lower:10.6g} "
              f"{interval.upper:10.6g} {interval.upper / interval.lower:7.3f} {spent:6.1f} "
              f"{str(interval.finished):>5} {peak / 1e6:10.1f} {added:12.0f}", flush=True)


if __name__ == "__main__":
    main()

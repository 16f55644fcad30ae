"""Mass matrix, gravity and inverse dynamics: ours against Pinocchio, one run.

Per call (Python call of each, median of 7 runs) on panda and ur5, batch
throughput for N = 10,000 configurations against a Python loop over Pinocchio,
and the cold / warm start (first import and first call, empty numba cache vs
filled). Run: scripts/run.sh bench   (or python bench/bench_dynamics.py)
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pinocchio as pin

sys.path.insert(0, os.path.dirname(__file__))
from common import HEADER, ROBOTS, per_call_us, robot_pair, row  # noqa: E402
from robots import example_robot_urdf  # noqa: E402

from robot_dynamics_ros.dynamics import (  # noqa: E402
    gravity_torques, inverse_dynamics, mass_matrix)

BATCH = 10_000


def per_call(name):
    model, pmodel, data = robot_pair(name)
    rng = np.random.default_rng(0)
    q, qd, qdd = rng.uniform(-1, 1, (3, model.nv))
    lines = [
        row(f"{name} M (crba)", per_call_us(lambda: mass_matrix(model, q)),
            per_call_us(lambda: pin.crba(pmodel, data, q)), "ratio <= 2"),
        row(f"{name} g (generalized gravity)",
            per_call_us(lambda: gravity_torques(model, q)),
            per_call_us(lambda: pin.computeGeneralizedGravity(pmodel, data, q)),
            "ratio <= 2"),
        row(f"{name} inverse dynamics (rnea)",
            per_call_us(lambda: inverse_dynamics(model, q, qd, qdd)),
            per_call_us(lambda: pin.rnea(pmodel, data, q, qd, qdd)), "ratio <= 2"),
    ]
    return lines


def batch(name):
    model, pmodel, data = robot_pair(name)
    rng = np.random.default_rng(1)
    Q, QD, QDD = rng.uniform(-1, 1, (3, BATCH, model.nv))
    lines = []
    for label, ours, theirs in (
        ("M", lambda: mass_matrix(model, Q),
         lambda: [pin.crba(pmodel, data, q) for q in Q]),
        ("g", lambda: gravity_torques(model, Q),
         lambda: [pin.computeGeneralizedGravity(pmodel, data, q) for q in Q]),
        ("inverse dynamics", lambda: inverse_dynamics(model, Q, QD, QDD),
         lambda: [pin.rnea(pmodel, data, q, qd, qdd) for q, qd, qdd in zip(Q, QD, QDD)]),
    ):
        lines.append(row(f"{name} batch {label} (us/sample)",
                         per_call_us(ours, repeat=5, number=3) / BATCH,
                         per_call_us(theirs, repeat=5, number=1) / BATCH,
                         "ratio <= 0.5"))
    return lines


START = """
import time, numpy as np
t0 = time.perf_counter()
from robot_dynamics_ros.dynamics import load_urdf, mass_matrix, gravity_torques, inverse_dynamics
m = load_urdf({path!r})
q = np.zeros(m.nv)
mass_matrix(m, q); gravity_torques(m, q); inverse_dynamics(m, q, q, q)
mass_matrix(m, np.zeros((100, m.nv)))
print(time.perf_counter() - t0)
"""


def start_times():
    """Cold (empty numba cache) and warm start of import + first calls."""
    code = START.format(path=example_robot_urdf(ROBOTS["panda"]))
    cache = tempfile.mkdtemp(prefix="numba-cache-")
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    try:
        times = [float(subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                      capture_output=True, text=True).stdout)
                 for _ in range(2)]
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return [f"{'cold start (empty numba cache)':<40} {times[0]:10.2f} s   target 30 s",
            f"{'warm start (cache filled)':<40} {times[1]:10.2f} s   target 3 s"]


def main():
    print(HEADER)
    for name in ("panda", "ur5"):
        for line in per_call(name):
            print(line)
    for name in ("panda", "ur5"):
        for line in batch(name):
            print(line)
    for line in start_times():
        print(line)


if __name__ == "__main__":
    main()

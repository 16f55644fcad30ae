"""Shared pieces of the benchmarks: robots, Pinocchio twins, timing.

Robots come from the test helpers (test/support/robots.py), so benchmarks and tests
run on the same URDFs.
"""
import os
import statistics
import sys
import time

import numpy as np
import pinocchio as pin

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "support"))
# the benchmarks import topology_urdf, a test helper, from here
from robots import example_robot_urdf, topology_urdf  # noqa: E402, F401

from robot_dynamics_ros.dynamics import BOUNDS_FIELDS, load_urdf  # noqa: E402

ROBOTS = {"panda": "panda", "ur5": "ur5_robot"}
# the bounds a sample has of its own, which the dense computation (``bounds.bound_vectors``)
# gives too: K_c's interval is the model's, set by all_terms only
PER_SAMPLE_FIELDS = tuple(field for field in BOUNDS_FIELDS if field not in ("kc_global", "kc_global_lower"))


def robot_pair(name):
    """(our model, Pinocchio model, Pinocchio data) for a named robot."""
    path = example_robot_urdf(ROBOTS[name])
    model = load_urdf(path)
    pmodel = pin.buildModelFromUrdf(path)
    assert [pmodel.names[j] for j in range(1, pmodel.njoints)] == list(model.joint_names)
    assert pmodel.nq == model.nv, "benchmarks use robots without continuous joints"
    return model, pmodel, pmodel.createData()


def per_call_us(fn, repeat=7, number=2000):
    """Median over ``repeat`` runs of the mean time of one call, in us."""
    fn()
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        runs.append((time.perf_counter() - start) / number * 1e6)
    return statistics.median(runs)


def row(label, ours, theirs, target):
    ratio = ours / theirs
    return f"{label:<40} {ours:10.2f} {theirs:10.2f} {ratio:7.2f}   {target}"


HEADER = f"{'':<40} {'ours us':>10} {'pin us':>10} {'ratio':>7}   target"

"""Shared pieces of the benchmarks: robots, Pinocchio twins, timing."""
import glob
import os
import statistics
import time

import numpy as np
import pinocchio as pin

from robot_dynamics_ros.dynamics import load_urdf


def example_robot_urdf(relative):
    """Path of a URDF shipped in example-robot-data (via Pinocchio's prefix)."""
    for root in {os.path.join(p, "share", "example-robot-data", "robots")
                 for p in _prefixes()}:
        path = os.path.join(root, relative)
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(relative)


def _prefixes():
    here = os.path.dirname(pin.__file__)
    while here != os.path.dirname(here):
        yield here
        here = os.path.dirname(here)
    yield from glob.glob(os.path.join(os.path.dirname(np.__file__), "..", "cmeel.prefix"))


ROBOTS = {
    "panda": "panda_description/urdf/panda.urdf",
    "ur5": "ur_description/urdf/ur5_robot.urdf",
}


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
    return f"{label:<34} {ours:10.2f} {theirs:10.2f} {ratio:7.2f}   {target}"

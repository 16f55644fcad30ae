"""Robots and helpers shared by the Coriolis and Christoffel tests.

``robot(case)`` gives (urdf, our model, Pinocchio oracle) for an
example-robot-data name or a ``random-<seed>-<n>-<chain|tree>`` case, cached
so that both test files load each robot once.
"""
import functools
import xml.etree.ElementTree as ET
import zlib

import numpy as np

from robots import (PinocchioOracle, example_robot_urdf, example_robot_urdfs,
                    has_unsupported_joints, load_pinocchio, random_urdf,
                    urdf_text)

from robot_dynamics_ros.dynamics import DynamicsError, load_urdf

TOL = 1e-10
N_CONFIGS = 5
ROBOTS = example_robot_urdfs()
# Files with nothing to compare; test_dynamics_accuracy checks how each is
# handled, and test_incomparable_robots_are_the_known_ones that no other is.
INCOMPARABLE = {
    "ur3": "Pinocchio cannot load it",  # an empty <robot> without a name
    "romeo_laas_small": "load_urdf rejects it",  # genuinely indefinite inertias
    "quadrotor_base": "load_urdf rejects it: robot 'hector' has no moving joints",
    "iris_simple": "load_urdf rejects it: robot 'iris' has no moving joints",
}
COMPARABLE = [name for name, _ in ROBOTS if name not in INCOMPARABLE]

# (seed, moving joints, tree): 1-3 joints catch base cases, 60 joints the
# growth of rounding error along deep paths.
RANDOM_CASES = ([(100 + s, n, False) for s, n in enumerate([1, 2, 5, 12, 30, 60])]
                + [(200 + s, n, True) for s, n in enumerate([3, 9, 25, 60])])
RANDOM_IDS = [f"{'tree' if t else 'chain'}{n}-seed{s}" for s, n, t in RANDOM_CASES]


def rng_for(label):
    """A generator seeded by the case name: reproducible, different per case."""
    return np.random.default_rng(zlib.crc32(label.encode()))


@functools.lru_cache(maxsize=None)
def robot(case, mimic="independent"):
    """(urdf, our model, oracle) for an example-robot-data name or
    ``random-<seed>-<n>-<chain|tree>``.

    The model is a string saying why when there is nothing to compare:
    Pinocchio cannot load the file fixed-base, it has joints we do not
    model, or our loader rejects it (which files must load is
    test_dynamics_accuracy's business).
    """
    if case.startswith("random-"):
        _, seed, n, kind = case.split("-")
        urdf = random_urdf(np.random.default_rng(int(seed)), int(n), tree=kind == "tree")
    else:
        urdf = example_robot_urdf(case)
    pin_model = load_pinocchio(urdf)
    if pin_model is None:
        return urdf, "Pinocchio cannot load it", None
    if has_unsupported_joints(urdf):
        return urdf, "it has floating or planar joints", None
    try:
        model = load_urdf(urdf, mimic=mimic)
    except DynamicsError as exc:
        return urdf, f"load_urdf rejects it: {exc}", None
    independent = model if mimic == "independent" else load_urdf(urdf)
    return urdf, model, PinocchioOracle(pin_model, independent.joint_names)


def random_case(seed, n, tree):
    return f"random-{seed}-{n}-{'tree' if tree else 'chain'}"


def mimic_map(urdf, reduced_names, full_names):
    """(J, b) with ``q_full = J q_reduced + b``, read from the URDF's
    ``<mimic joint multiplier offset>`` elements (defaults 1 and 0), mimics
    of mimics followed to the actuated joint."""
    root = ET.fromstring(urdf_text(urdf).encode("utf-8"))
    master = {}
    for joint in root.iter("joint"):
        mim = joint.find("mimic")
        if mim is not None and joint.get("type") is not None:
            master[joint.get("name")] = (mim.get("joint"),
                                         float(mim.get("multiplier", 1.0)),
                                         float(mim.get("offset", 0.0)))
    col = {name: c for c, name in enumerate(reduced_names)}
    J = np.zeros((len(full_names), len(reduced_names)))
    b = np.zeros(len(full_names))
    for row, name in enumerate(full_names):
        scale, shift = 1.0, 0.0
        while name in master:  # q_name = mult * q_master + off
            name, mult, off = master[name]
            scale, shift = scale * mult, shift * mult + off
        J[row, col[name]] = scale
        b[row] = shift
    return J, b


MIMIC_ROBOTS = ["panda", "pr2", "talos_full_v2"]


def bad_shapes(n):
    """(q shape, qd shape) pairs that must be rejected for n joints."""
    return {"short": ((n - 1,), (n - 1,)), "qd longer": ((n,), (n + 1,)),
            "batch q, single qd": ((2, n), (n,)), "batch sizes differ": ((2, n), (3, n)),
            "3-D": ((2, 2, n), (2, 2, n)), "scalar": ((), ())}

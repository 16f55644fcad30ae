"""Coordinates off the trunk frozen in the K_c box search (an arm with a
gripper: its fingers hang off the palm), their effect bounded apart
(``search.CoriolisConstantRefinement.box_setup``, ``_frozen_term``).

Oracles: k_c from numpy's SVD; the frozen bound against the largest
N(Gamma(q) - Gamma(q with the frozen coordinates at mid-range)) over random
configurations and an ascent; the refined upper end against an independent
ascent. The grid limit is lowered so that a 7-joint tree takes this path
(the 12-joint arm of bench/bench_certify.py takes it at the shipped limit).
"""
import numpy as np
import pytest
from scipy.optimize import minimize

from kc_ascent import independent_ascent, numpy_kc
from kc_robots import arm_with_gripper
from robots import joint_ranges
from robot_dynamics_ros.dynamics import CoriolisConstantRefinement, christoffel_symbols, load_urdf
from robot_dynamics_ros.dynamics.kc import search


def _finish(generator):
    while True:
        try:
            next(generator)
        except StopIteration as stop:
            return stop.value


def _gripper(monkeypatch, kind):
    # 2 trunk angles (joint0 is on the world) and 2 fingers of 2 joints: the
    # 6 angles' grid (15,625) is above the limit, the trunk's (25) and each
    # finger's term (125) within it. Prismatic: 2 one-joint fingers, frozen
    # as leaves whatever the limit.
    monkeypatch.setattr(search, "_MAX_FOURIER_SAMPLES", 125)
    urdf = arm_with_gripper(seed=3, arm_joints=3, fingers=2, finger_joints=2 if kind == "revolute" else 1,
                            finger_kind=kind)
    return urdf, load_urdf(urdf)


@pytest.fixture
def gripper(monkeypatch):
    return _gripper(monkeypatch, "revolute")


@pytest.mark.parametrize("squared_norms", [False, True], ids=["triangle", "squared-norms"])
@pytest.mark.parametrize("kind", ["revolute", "prismatic"])
def test_the_fingers_are_frozen_and_their_bound_holds(monkeypatch, kind, squared_norms):
    """The frozen bound holds against random configurations and an ascent;
    the offline search's (``squared_norms``, ``mixed``) is well below the
    triangle inequality's."""
    urdf, model = _gripper(monkeypatch, kind)
    setup = _finish(CoriolisConstantRefinement(model, memory_limit_mb=200.0).box_setup(squared_norms))
    assert setup is not None
    if squared_norms:
        triangle = _finish(CoriolisConstantRefinement(model, memory_limit_mb=200.0).box_setup())
        assert setup.frozen_bound <= 0.7 * triangle.frozen_bound, (setup.frozen_bound, triangle.frozen_bound)
    names = [model.joint_names[c] for c in setup.free]
    assert names == ["joint1", "joint2"]
    fingers = [model.joint_names.index(name) for name in model.joint_names if name.startswith("finger")]
    ranges = joint_ranges(model, urdf)

    def difference(q):
        q = np.atleast_2d(q)
        frozen = q.copy()
        frozen[:, fingers] = setup.base[fingers]
        return numpy_kc(christoffel_symbols(model, q) - christoffel_symbols(model, frozen))

    rng = np.random.default_rng(0)
    q = ranges[:, 0] + (ranges[:, 1] - ranges[:, 0]) * rng.random((3000, model.nv))
    values = difference(q)
    best = values.max()
    for start in q[np.argsort(values)[-3:]]:
        result = minimize(lambda x: -difference(x)[0], start, method="L-BFGS-B", bounds=ranges,
                          options={"maxiter": 60})
        best = max(best, -result.fun)
    assert 0.0 < best <= setup.frozen_bound, (best, setup.frozen_bound)


@pytest.mark.slow
def test_no_ascent_exceeds_the_refined_bound_with_frozen_fingers(gripper):
    urdf, model = gripper
    refinement = CoriolisConstantRefinement(model, tolerance=1.05, memory_limit_mb=200.0)
    first = refinement.interval.upper
    interval = refinement.refine(10.0, parallel=True)
    assert interval.upper < 0.8 * first, (interval.upper, first)  # the box search ran
    best, where = independent_ascent(model, urdf, extra_starts=[interval.witness], samples=800, starts=3)
    assert best <= interval.upper, (best, where.tolist(), interval.upper)

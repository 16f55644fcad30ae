"""The subtrees on a fixed base as models of their own (``dynamics.subtrees``),
which the K_c refinement refines one by one (docs/coriolis_constant.md).

Oracle: Pinocchio's Christoffel symbols of the whole robot."""
import time

import numpy as np
import pytest

from robots import PinocchioOracle, example_robot_urdf, load_pinocchio, named_urdf
from robot_dynamics_ros.dynamics import (
    CoriolisConstantRefinement, DynamicsError, christoffel_symbols, load_urdf)
from robot_dynamics_ros.dynamics.kc.constant import config_coriolis_constant
from robot_dynamics_ros.dynamics.kc.subtrees import root_subtrees


@pytest.mark.parametrize("name", ["solo12", "romeo", "tree-21-5", "tree-23-12"])
def test_each_subtree_is_a_block_of_gamma(name):
    """Gamma (Pinocchio's) is zero unless i, j, k are in one root subtree,
    each subtree's model gives its block, and k_c^2 is the sum of theirs."""
    urdf = named_urdf(name)
    model = load_urdf(urdf)
    parts = root_subtrees(model)
    assert len(parts) > 1
    assert sorted(np.concatenate([c for _, c in parts]).tolist()) == list(range(model.nv))
    oracle = PinocchioOracle(load_pinocchio(urdf), model.joint_names)
    rng = np.random.default_rng(4)
    for _ in range(3):
        q = rng.uniform(-1.5, 1.5, model.nv)
        gamma = oracle.christoffel_symbols(q)
        scale = np.abs(gamma).max()
        outside = np.ones(gamma.shape, dtype=bool)
        squares = 0.0
        for part, coordinates in parts:
            block = np.ix_(coordinates, coordinates, coordinates)
            outside[block] = False
            assert np.abs(christoffel_symbols(part, q[coordinates]) - gamma[block]).max() <= 1e-10 * scale
            squares += config_coriolis_constant(part, q[coordinates][None])[0] ** 2
        assert np.abs(gamma[outside]).max(initial=0.0) <= 1e-12 * scale
        kc = config_coriolis_constant(model, q[None])[0]
        assert abs(np.sqrt(squares) - kc) <= 1e-12 * kc


def test_a_payload_goes_with_its_subtree():
    """A payload on a foot changes that leg's model, and only that one."""
    model = load_urdf(example_robot_urdf("solo12"))
    foot = "FR_FOOT"
    loaded = model.with_payload(foot, 0.8, [0.01, 0.0, -0.02], 1e-3 * np.eye(3))
    q = np.random.default_rng(5).uniform(-1.0, 1.0, model.nv)
    gamma = christoffel_symbols(loaded, q)
    changed = []
    for (part, coordinates), (bare, _) in zip(root_subtrees(loaded), root_subtrees(model)):
        block = np.ix_(coordinates, coordinates, coordinates)
        assert np.abs(christoffel_symbols(part, q[coordinates]) - gamma[block]).max() <= 1e-12
        if not np.array_equal(part.inertia, bare.inertia):
            changed.append(part.name)
    assert changed == [f"{model.name}/FR_HAA"], changed


@pytest.mark.slow
def test_romeos_legs_are_refined_on_their_own():
    """romeo (55 joints, too many for one branch and bound): its legs,
    6 joints each, are refined like arms, so the interval closes well
    below the first bound; the lower end is k_c at the witness."""
    model = load_urdf(example_robot_urdf("romeo"))
    refinement = CoriolisConstantRefinement(model)
    first = refinement.interval.upper
    # the kernels of every stage compile first, in a refinement of its own
    # that goes as far: with an empty numba cache (a fresh clone, this test
    # alone) their compiles took 37 s of three chunks
    warm, started = CoriolisConstantRefinement(model), time.monotonic()
    while warm.refine(5.0, parallel=True).upper >= 0.8 * first and time.monotonic() - started < 300:
        pass
    interval = refinement.refine(20.0, parallel=True)
    assert interval.upper < 0.8 * first, (interval, first)
    at_witness = config_coriolis_constant(model, interval.witness[None])[0]
    assert interval.lower == pytest.approx(at_witness, rel=1e-12)


def test_a_floating_or_reduced_model_has_no_independent_subtrees():
    """A floating base couples every subtree through the base's motion, and a
    mimic joint may tie joints of different subtrees: refused by name."""
    for model in (load_urdf(example_robot_urdf("solo12"), base="floating"),
                  load_urdf(example_robot_urdf("panda"), mimic="reduce")):
        with pytest.raises(DynamicsError, match=model.name):
            root_subtrees(model)

"""Coriolis matrix C(q, qd) against Pinocchio and the identities it must obey.

The oracle is ``pin.computeCoriolisMatrix`` (Christoffel-consistent, MATH.md),
reordered into our joint order by robots.PinocchioOracle. Mdot comes from
central differences of Pinocchio's M, the velocity-product torques from
Pinocchio's RNEA, and the mimic coordinate map from the URDF text: none of
the reference numbers comes from the code under test.
"""
import textwrap

import numpy as np
import pytest

from coriolis_cases import (COMPARABLE, INCOMPARABLE, MIMIC_ROBOTS, N_CONFIGS,
                            RANDOM_CASES, RANDOM_IDS, ROBOTS, TOL, bad_shapes,
                            mimic_map, random_case, rng_for, robot)
from robots import (random_configurations, rel_err, worst_error_without_jit)

from robot_dynamics_ros.dynamics import DynamicsError, coriolis_matrix



def check_against_pinocchio(model, oracle, urdf, label, count=N_CONFIGS):
    """Worst relative error of C over ``count`` random states; asserts <= TOL."""
    rng = rng_for(label)
    worst = 0.0
    for q in random_configurations(model, rng, count, urdf=urdf):
        qd = rng.uniform(-2.0, 2.0, model.nv)
        err = rel_err(coriolis_matrix(model, q, qd), oracle.coriolis_matrix(q, qd))
        assert err <= TOL, f"{label}: C relative error {err:.3g} at q={q.tolist()}, qd={qd.tolist()}"
        worst = max(worst, err)
    return worst


def test_example_robot_data_is_installed():
    # Without it the parametrized test below would collect nothing and pass.
    assert len(ROBOTS) >= 60, f"example-robot-data URDFs found: {len(ROBOTS)}"


@pytest.mark.parametrize("name", sorted(INCOMPARABLE))
def test_incomparable_robots_are_the_known_ones(name):
    _, reason, oracle = robot(name)
    assert oracle is None and reason.startswith(INCOMPARABLE[name]), reason


@pytest.mark.parametrize("name", COMPARABLE)
def test_example_robot_vs_pinocchio(name):
    urdf, model, oracle = robot(name)
    assert oracle is not None, f"{name}: {model}"
    check_against_pinocchio(model, oracle, urdf, name)


@pytest.mark.parametrize("seed,n,tree", RANDOM_CASES, ids=RANDOM_IDS)
def test_random_robot_vs_pinocchio(seed, n, tree):
    case = random_case(seed, n, tree)
    urdf, model, oracle = robot(case)
    assert oracle is not None, model
    check_against_pinocchio(model, oracle, urdf, case)


PROPERTY_CASES = ["panda", "ur5_robot", "solo12", "random-300-12-tree",
                  "random-301-20-chain"]


@pytest.mark.parametrize("case", PROPERTY_CASES)
def test_mdot_minus_2c_is_skew(case):
    # Mdot - 2C skew <=> C + C^T = Mdot, with Mdot = (M(q + h qd) - M(q - h qd)) / 2h
    # from Pinocchio: truncation O(h^2) and rounding O(eps / h) both ~1e-10 here.
    urdf, model, oracle = robot(case)
    rng = rng_for("mdot" + case)
    h = 1e-5
    for q in random_configurations(model, rng, 3, urdf=urdf):
        qd = rng.uniform(-2.0, 2.0, model.nv)
        mdot = (oracle.mass_matrix(q + h * qd) - oracle.mass_matrix(q - h * qd)) / (2 * h)
        c = coriolis_matrix(model, q, qd)
        assert rel_err(c + c.T, mdot) <= 1e-8


@pytest.mark.parametrize("case", PROPERTY_CASES)
def test_c_qd_is_velocity_product_torque(case):
    # C qd == ID(q, qd, 0) - g(q), both from Pinocchio's RNEA
    urdf, model, oracle = robot(case)
    rng = rng_for("cqd" + case)
    zero = np.zeros(model.nv)
    for q in random_configurations(model, rng, 3, urdf=urdf):
        qd = rng.uniform(-2.0, 2.0, model.nv)
        ref = oracle.inverse_dynamics(q, qd, zero) - oracle.gravity_torques(q)
        assert rel_err(coriolis_matrix(model, q, qd) @ qd, ref) <= TOL




@pytest.mark.parametrize("name", MIMIC_ROBOTS)
def test_mimic_reduce_is_jt_c_j(name):
    # C_r(q_r, qd_r) = J^T C(J q_r + b, J qd_r) J (paper 003, Theorem 1), with
    # C of the unreduced robot from Pinocchio and J, b from the URDF text.
    urdf, reduced, oracle = robot(name, "reduce")
    full_names = oracle.joint_names
    assert reduced.nv < len(full_names), f"{name} has no mimic joint to reduce"
    J, b = mimic_map(urdf, reduced.joint_names, full_names)
    rng = rng_for("mimic" + name)
    for q in random_configurations(reduced, rng, 4, urdf=urdf):
        qd = rng.uniform(-2.0, 2.0, reduced.nv)
        ref = J.T @ oracle.coriolis_matrix(J @ q + b, J @ qd) @ J
        assert rel_err(coriolis_matrix(reduced, q, qd), ref) <= TOL


@pytest.mark.parametrize("case,count", [("panda", 5), ("random-302-30-tree", 70),
                                        ("pr2", 3)])
def test_batch_matches_single_and_pinocchio(case, count):
    # 70 samples run on the thread pool (calls.PARALLEL_FROM), 5 in one call
    urdf, model, oracle = robot(case, "reduce" if case == "pr2" else "independent")
    rng = rng_for("batch" + case)
    qs = random_configurations(model, rng, count, urdf=urdf)
    qds = rng.uniform(-2.0, 2.0, (count, model.nv))
    cb = coriolis_matrix(model, qs, qds)
    assert cb.shape == (count, model.nv, model.nv)
    for k in range(count):
        # same recursion per sample: equal to rounding
        assert rel_err(cb[k], coriolis_matrix(model, qs[k], qds[k])) <= 1e-14
    if not model.reduced:
        for k in range(0, count, 10):
            assert rel_err(cb[k], oracle.coriolis_matrix(qs[k], qds[k])) <= TOL


@pytest.mark.parametrize("kind", list(bad_shapes(1)))
def test_bad_shapes_raise(kind):
    _, model, _ = robot("panda")
    q_shape, qd_shape = bad_shapes(model.nv)[kind]
    with pytest.raises(DynamicsError, match="shape"):
        coriolis_matrix(model, np.zeros(q_shape), np.zeros(qd_shape))


@pytest.mark.parametrize("which", ["q", "qd"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_raises_naming_joint(which, bad):
    _, model, _ = robot("panda")
    q, qd = np.zeros((2, 3, model.nv))
    (q if which == "q" else qd)[1, 4] = bad
    with pytest.raises(DynamicsError, match=f"{which}\\[1, 4\\].*{model.joint_names[4]}"):
        coriolis_matrix(model, q, qd)


def test_not_numbers_raise():
    _, model, _ = robot("panda")
    with pytest.raises(DynamicsError, match="qd"):
        coriolis_matrix(model, np.zeros(model.nv), ["a"] * model.nv)


# DESIGN: NUMBA_DISABLE_JIT=1 must still give correct results. One subprocess
# checks both Coriolis and Christoffel kernels (both methods) on small robots.
_NOJIT_SCRIPT = textwrap.dedent("""
    from robots import (PinocchioOracle, example_robot_urdf, load_pinocchio,
                        random_configurations, rel_err)
    from robot_dynamics_ros.dynamics import (christoffel_symbols, coriolis_matrix,
                                             load_urdf)
    worst = 0.0
    for name in ("ur5_robot", "panda"):
        urdf = example_robot_urdf(name)
        model = load_urdf(urdf)
        oracle = PinocchioOracle(load_pinocchio(urdf), model.joint_names)
        rng = np.random.default_rng(5)
        qs = random_configurations(model, rng, 2, urdf=urdf)
        qds = rng.uniform(-2, 2, (2, model.nv))
        cb = coriolis_matrix(model, qs, qds)
        for k in range(2):
            ref = oracle.christoffel_symbols(qs[k])
            worst = max(worst, rel_err(cb[k], oracle.coriolis_matrix(qs[k], qds[k])),
                        rel_err(christoffel_symbols(model, qs[k]), ref))
            if name == "ur5_robot":
                worst = max(worst, rel_err(
                    christoffel_symbols(model, qs[k], method="safeea"), ref))
    print("WORST", worst)
""")


def test_correct_without_jit():
    worst = worst_error_without_jit(_NOJIT_SCRIPT)
    assert worst <= TOL, f"without JIT: worst relative error {worst}"

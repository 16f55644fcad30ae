"""Christoffel symbols Gamma[i, j, k] against Pinocchio, both methods.

Oracle (MATH.md): ``Gamma[:, :, k] == pin.computeCoriolisMatrix(q, e_k)``,
reordered into our joint order (robots.PinocchioOracle.christoffel_symbols).
``method="safeea"`` (paper 000) is checked against the same oracle and
against ``method="tree"`` (paper 003) on serial revolute chains.
"""
import numpy as np
import pytest

from robots import (PinocchioOracle, load_pinocchio, random_configurations,
                    random_urdf, rel_err)
from coriolis_cases import (COMPARABLE, MIMIC_ROBOTS, RANDOM_CASES, RANDOM_IDS,
                            TOL, bad_shapes, mimic_map, random_case, rng_for,
                            robot)

from robot_dynamics_ros.dynamics import (DynamicsError, christoffel_symbols,
                                         load_urdf)

N_CONFIGS = 3


def check_against_pinocchio(model, oracle, urdf, label, method="tree",
                            count=N_CONFIGS):
    """Worst relative error of Gamma over ``count`` random q; asserts <= TOL
    and the symmetry Gamma[i, j, k] == Gamma[i, k, j]."""
    worst = 0.0
    for q in random_configurations(model, rng_for(label), count, urdf=urdf):
        gamma = christoffel_symbols(model, q, method=method)
        err = rel_err(gamma, oracle.christoffel_symbols(q))
        assert err <= TOL, f"{label} ({method}): Gamma relative error {err:.3g} at q={q.tolist()}"
        # both methods fill the two halves from one value: exact symmetry
        np.testing.assert_array_equal(gamma, gamma.transpose(0, 2, 1))
        worst = max(worst, err)
    return worst


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


def serial_revolute_urdf(seed, n):
    """A random serial chain whose moving joints are all revolute or
    continuous (fixed joints in between are merged by the loader)."""
    return random_urdf(np.random.default_rng(seed), n, tree=False, prismatic_fraction=0.0)


SERIAL = [("ur5_robot", None), ("z1", None), ("double_pendulum", None)] + [
    (f"serial-{seed}-{n}", (seed, n)) for seed, n in [(400, 1), (401, 4), (402, 15), (403, 60)]]


@pytest.mark.parametrize("name,spec", SERIAL, ids=[s[0] for s in SERIAL])
def test_safeea_matches_pinocchio_and_tree(name, spec):
    if spec is None:
        urdf, model, oracle = robot(name)
    else:
        urdf = serial_revolute_urdf(*spec)
        model = load_urdf(urdf)
        oracle = PinocchioOracle(load_pinocchio(urdf), model.joint_names)
    check_against_pinocchio(model, oracle, urdf, name, method="safeea")
    # two independent recursions agree far below the oracle tolerance
    qs = random_configurations(model, rng_for("tree" + name), 2, urdf=urdf)
    assert rel_err(christoffel_symbols(model, qs, method="safeea"),
                   christoffel_symbols(model, qs, method="tree")) <= TOL


@pytest.mark.parametrize("name,needle", [("panda", "prismatic"), ("solo12", "branches"),
                                         ("random-404-8-tree", "safeea")])
def test_safeea_rejects_other_robots(name, needle):
    _, model, _ = robot(name)
    with pytest.raises(DynamicsError, match=needle):
        christoffel_symbols(model, np.zeros(model.nv), method="safeea")


def test_unknown_method_raises():
    _, model, _ = robot("ur5_robot")
    with pytest.raises(DynamicsError, match="method"):
        christoffel_symbols(model, np.zeros(model.nv), method="symbolic")


@pytest.mark.parametrize("name", MIMIC_ROBOTS)
def test_mimic_reduce_is_tensor_transform(name):
    # Gamma_r[i,j,k] = sum J[a,i] J[b,j] J[c,k] Gamma[a,b,c] at q_full = J q + b,
    # Gamma of the unreduced robot from Pinocchio, J and b from the URDF text.
    urdf, reduced, oracle = robot(name, "reduce")
    J, b = mimic_map(urdf, reduced.joint_names, oracle.joint_names)
    assert J.shape[0] > J.shape[1], f"{name} has no mimic joint to reduce"
    for q in random_configurations(reduced, rng_for("mimic" + name), 2, urdf=urdf):
        ref = np.einsum("ai,bj,ck,abc->ijk", J, J, J, oracle.christoffel_symbols(J @ q + b),
                        optimize=True)
        assert rel_err(christoffel_symbols(reduced, q), ref) <= TOL


@pytest.mark.parametrize("case,count,method", [("panda", 4, "tree"),
                                               ("random-405-20-tree", 70, "tree"),
                                               ("ur5_robot", 70, "safeea"),
                                               ("pr2", 2, "tree")])
def test_batch_matches_single(case, count, method):
    # 70 samples run on the thread pool (calls.PARALLEL_FROM); pr2 is reduced
    urdf, model, oracle = robot(case, "reduce" if case == "pr2" else "independent")
    qs = random_configurations(model, rng_for("batch" + case), count, urdf=urdf)
    gb = christoffel_symbols(model, qs, method=method)
    n = model.nv
    assert gb.shape == (count, n, n, n)
    for k in range(count):
        assert rel_err(gb[k], christoffel_symbols(model, qs[k], method=method)) <= 1e-14
    if not model.reduced:
        assert rel_err(gb[-1], oracle.christoffel_symbols(qs[-1])) <= TOL


@pytest.mark.parametrize("kind", ["short", "3-D", "scalar"])  # bad q shapes
def test_bad_shapes_raise(kind):
    _, model, _ = robot("panda")
    q_shape, _ = bad_shapes(model.nv)[kind]
    with pytest.raises(DynamicsError, match="shape"):
        christoffel_symbols(model, np.zeros(q_shape))


@pytest.mark.parametrize("bad", [np.nan, -np.inf])
def test_non_finite_raises_naming_joint(bad):
    _, model, _ = robot("ur5_robot")
    q = np.zeros((2, model.nv))
    q[1, 3] = bad
    for method in ("tree", "safeea"):
        with pytest.raises(DynamicsError, match=f"q\\[1, 3\\].*{model.joint_names[3]}"):
            christoffel_symbols(model, q, method=method)

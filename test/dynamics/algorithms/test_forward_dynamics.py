"""Forward dynamics, both methods, against Pinocchio's ``aba`` (the oracle).

Every example-robot-data URDF that Pinocchio loads fixed-base, random chains
and trees up to 60 joints, batches, float32, mimic-reduced models, and bad
input (singular M, non-finite or misshapen arguments). Pinocchio's results are
reordered into our joint order by joint name (robots.PinocchioOracle).
"""
import xml.etree.ElementTree as ET
import zlib

import numpy as np
import pytest

from robots import (example_robot_urdf, example_robot_urdfs, has_unsupported_joints,
                    load_pinocchio, pin, PinocchioOracle, random_configurations,
                    random_urdf, rel_err, urdf_text, worst_error_without_jit)

from robot_dynamics_ros.dynamics import (DynamicsError, StateError, forward_dynamics,
                                         inverse_dynamics, load_urdf)

METHODS = ("recursive", "cholesky")
TOL_PINOCCHIO = 1e-10
TOL_ROUND_TRIP = 1e-9
# Residual of M qdd = tau - C qd - g relative to the size of its terms: a
# backward-stable solver keeps this near eps whatever the conditioning.
TOL_RESIDUAL = 1e-13
N_CONFIGS = 5
ROBOTS = example_robot_urdfs()

RANDOM_CASES = ([(seed, n, False) for seed, n in [(0, 1), (1, 2), (3, 7), (5, 30), (6, 60)]]
                + [(seed, n, True) for seed, n in [(10, 2), (12, 9), (14, 35), (15, 60)]])


def _rng(label):
    return np.random.default_rng(zlib.crc32(label.encode()))


def _tolerance(tol, cond):
    """``tol``, widened where M is ill-conditioned.

    Solving with M amplifies the rounding of its entries by up to cond(M)
    (paper 004, Sec. 5.1); two correct float64 solvers can then differ by
    about cond * eps (icub's M reaches cond 1e8). The residual check below
    holds independently of cond.
    """
    return max(tol, 1e-14 * cond)


def check_against_pinocchio(model, pin_model, urdf, label, count=N_CONFIGS):
    """Both methods on ``count`` random states, batched: round trip, aba, residual."""
    oracle = PinocchioOracle(pin_model, model.joint_names)
    rng = _rng(label)
    qs = random_configurations(model, rng, count, urdf=urdf)
    qds = rng.uniform(-2.0, 2.0, qs.shape)
    qdds = rng.uniform(-5.0, 5.0, qs.shape)
    taus = inverse_dynamics(model, qs, qds, qdds)
    worst = {}
    for method in METHODS:
        qdd_ours = forward_dynamics(model, qs, qds, taus, method=method)
        assert qdd_ours.shape == qs.shape and qdd_ours.dtype == np.float64
        for k in range(count):
            q, qd, tau = qs[k], qds[k], taus[k]
            mass = oracle.mass_matrix(q)
            bias = oracle.inverse_dynamics(q, qd, np.zeros(model.nv))
            cond = np.linalg.cond(mass)
            aba = oracle.ours_vec(pin.aba(oracle.model, oracle.data, oracle.q(q),
                                          oracle.v(qd), oracle.v(tau)))
            errors = {
                "round trip": (rel_err(qdd_ours[k], qdds[k]),
                               _tolerance(TOL_ROUND_TRIP, cond)),
                "aba": (rel_err(qdd_ours[k], aba), _tolerance(TOL_PINOCCHIO, cond)),
                "residual": (
                    np.max(np.abs(mass @ qdd_ours[k] - (tau - bias)))
                    / (np.max(np.abs(mass)) * np.max(np.abs(qdd_ours[k]))
                       + np.max(np.abs(tau - bias)) + 1e-300),
                    TOL_RESIDUAL),
            }
            for key, (err, tol) in errors.items():
                assert err <= tol, (f"{label} {method}: {key} error {err:.3g} > "
                                    f"{tol:.3g} at q={q.tolist()}, cond(M)={cond:.3g}")
                worst[method, key] = max(worst.get((method, key), 0.0), err)
    return worst


def _pinocchio_mass_is_singular(model, pin_model, urdf):
    oracle = PinocchioOracle(pin_model, model.joint_names)
    q = random_configurations(model, _rng("singular"), 1, urdf=urdf)[0]
    eig = np.linalg.eigvalsh(oracle.mass_matrix(q))
    return eig[0] <= 1e-12 * eig[-1]


def test_example_robot_data_is_installed():
    # Without it the parametrized test below would collect nothing and pass.
    assert len(ROBOTS) >= 60, f"example-robot-data URDFs found: {len(ROBOTS)}"


# Nothing to integrate: no model (how each fails is test_dynamics_accuracy's
# business), or no moving joints.
NOT_SIMULATED = {"ur3": "Pinocchio cannot load it", "romeo_laas_small": "load_urdf rejects it",
                 "quadrotor_base": "no moving joints", "iris_simple": "no moving joints"}


@pytest.mark.parametrize("name", sorted(NOT_SIMULATED))
def test_robots_left_out_are_the_known_ones(name):
    path = dict(ROBOTS)[name]
    pin_model = load_pinocchio(path)
    try:
        nv = load_urdf(path).nv
    except DynamicsError:
        nv = None
    assert pin_model is None or nv in (None, 0), f"{name} can be compared: include it"


@pytest.mark.parametrize("name,path", [r for r in ROBOTS if r[0] not in NOT_SIMULATED],
                         ids=[n for n, _ in ROBOTS if n not in NOT_SIMULATED])
def test_example_robot_vs_pinocchio(name, path):
    pin_model = load_pinocchio(path)
    assert pin_model is not None and not has_unsupported_joints(path)
    model = load_urdf(path)
    if _pinocchio_mass_is_singular(model, pin_model, path):
        # romeo: massless finger links. No accelerations exist: both methods
        # must say so rather than return huge numbers.
        q = np.zeros(model.nv)
        for method in METHODS:
            with pytest.raises(DynamicsError, match="singular"):
                forward_dynamics(model, q, q, q, method=method)
        return
    check_against_pinocchio(model, pin_model, path, name)


@pytest.mark.parametrize("seed,n,tree", RANDOM_CASES,
                         ids=[f"{'tree' if t else 'chain'}{n}-seed{s}"
                              for s, n, t in RANDOM_CASES])
def test_random_robot_vs_pinocchio(seed, n, tree):
    text = random_urdf(np.random.default_rng(seed), n, tree=tree)
    check_against_pinocchio(load_urdf(text), load_pinocchio(text), text,
                            f"random-{seed}-{n}-{tree}")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.slow
def test_batch_equals_single_samples(method, dtype):
    # 100 samples take the multi-threaded path of run_kernel; each sample must
    # still be computed exactly as alone, in the requested precision.
    text = random_urdf(np.random.default_rng(77), 12, tree=True)
    model = load_urdf(text)
    rng = _rng(f"batch-{method}")
    qs = random_configurations(model, rng, 100, urdf=text).astype(dtype)
    qds = rng.uniform(-2, 2, qs.shape).astype(dtype)
    taus = rng.uniform(-10, 10, qs.shape).astype(dtype)
    batch = forward_dynamics(model, qs, qds, taus, method=method)
    assert batch.dtype == dtype and batch.shape == qs.shape
    for k in range(0, 100, 7):
        np.testing.assert_array_equal(
            batch[k], forward_dynamics(model, qs[k], qds[k], taus[k], method=method))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.slow
def test_float32_computes_in_float32(method):
    path = example_robot_urdf("panda")
    model = load_urdf(path)
    rng = _rng(f"float32-{method}")
    qs = random_configurations(model, rng, 20, urdf=path).astype(np.float32)
    qds = rng.uniform(-2, 2, qs.shape).astype(np.float32)
    taus = rng.uniform(-10, 10, qs.shape).astype(np.float32)
    single = forward_dynamics(model, qs, qds, taus, method=method)
    double = forward_dynamics(model, qs.astype(float), qds.astype(float),
                              taus.astype(float), method=method)
    assert single.dtype == np.float32
    # close to float64: cond(M) <= 1e3 for panda, float32 eps 1.2e-7
    assert rel_err(single, double) <= 1e-3
    # ... but not float64 arithmetic rounded at the end: that would match the
    # float64 result rounded to float32 in (nearly) every entry
    assert np.mean(single != double.astype(np.float32)) > 0.5


def _mimic_map(urdf, joint_names):
    """J with q_full = J q + b from the URDF's <mimic> elements (read here)."""
    root = ET.fromstring(urdf_text(urdf).encode("utf-8"))
    mimic = {j.get("name"): j.find("mimic") for j in root.iter("joint")
             if j.find("mimic") is not None}
    full = [n for n in joint_names] + sorted(mimic)
    jmap = np.zeros((len(full), len(joint_names)))
    for row, name in enumerate(full):
        if name in mimic:
            jmap[row, joint_names.index(mimic[name].get("joint"))] = float(
                mimic[name].get("multiplier", 1.0))
        else:
            jmap[row, joint_names.index(name)] = 1.0
    offsets = np.array([float(mimic[n].get("offset", 0.0)) if n in mimic else 0.0
                        for n in full])
    return full, jmap, offsets


def test_mimic_reduced_model():
    path = example_robot_urdf("panda")
    model = load_urdf(path, mimic="reduce")
    pin_model = load_pinocchio(path)
    full, jmap, offsets = _mimic_map(path, list(model.joint_names))
    assert jmap.shape[0] > jmap.shape[1], "panda's finger mimic joint is gone?"
    oracle = PinocchioOracle(pin_model, full)
    rng = _rng("mimic")
    q, qd, tau = rng.uniform(-0.5, 0.5, (3, model.nv))
    q_full, qd_full = jmap @ q + offsets, jmap @ qd
    mass = jmap.T @ oracle.mass_matrix(q_full) @ jmap
    bias = jmap.T @ oracle.inverse_dynamics(q_full, qd_full, np.zeros(len(full)))
    expected = np.linalg.solve(mass, tau - bias)
    assert rel_err(forward_dynamics(model, q, qd, tau, method="cholesky"),
                   expected) <= _tolerance(TOL_PINOCCHIO, np.linalg.cond(mass))
    # the tree recursion cannot impose qdd_finger2 = qdd_finger1: it must refuse
    with pytest.raises(DynamicsError, match="cholesky"):
        forward_dynamics(model, q, qd, tau, method="recursive")


# -- bad input ---------------------------------------------------------------


def _chain(links, joints):
    """URDF of a chain: ``links`` inertial XML per link, ``joints`` origin xyz."""
    parts = ['<robot name="chain"><link name="base"/>']
    for i, (inertial, xyz) in enumerate(zip(links, joints), start=1):
        parent = "base" if i == 1 else f"l{i - 1}"
        parts.append(f'<link name="l{i}">{inertial}</link>'
                     f'<joint name="j{i}" type="continuous"><parent link="{parent}"/>'
                     f'<child link="l{i}"/><origin xyz="{xyz}"/><axis xyz="0 0 1"/></joint>')
    return "".join(parts) + "</robot>"


MASSIVE = ('<inertial><origin xyz="0.3 0 0"/><mass value="2"/><inertia ixx="0.01" '
           'ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial>')


# A point mass on the first joint's axis: the chain has inertia (a chain
# with none at all is refused when loaded), but no joint moves any of it.
ON_AXIS = ('<inertial><origin xyz="0 0 0"/><mass value="2"/><inertia ixx="0" '
           'ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial>')


@pytest.mark.parametrize("method", METHODS)
def test_chain_without_inertia_about_its_axes_is_singular(method):
    model = load_urdf(_chain([ON_AXIS, "", ""], ["0 0 0", "0 0 0.5", "0 0 0.5"]))
    with pytest.raises(DynamicsError, match=r"singular.*joint 'j[123]'"):
        forward_dynamics(model, np.zeros(3), np.zeros(3), np.ones(3), method=method)


@pytest.mark.parametrize("method", METHODS)
def test_massless_tip_names_its_joint(method):
    model = load_urdf(_chain([MASSIVE, ""], ["0 0 0", "0.5 0 0"]))
    with pytest.raises(DynamicsError, match="joint 'j2'"):
        forward_dynamics(model, np.zeros(2), np.ones(2), np.ones(2), method=method)


@pytest.mark.parametrize("method", METHODS)
def test_coaxial_joints_with_massless_link_are_singular(method):
    # Two joints on one axis with nothing between them: M = [[a, a], [a, a]].
    # M is singular only through cancellation, never through an exact zero.
    model = load_urdf(_chain(["", MASSIVE], ["0.1 0.2 0", "0 0 0"]))
    with pytest.raises(DynamicsError, match="singular"):
        forward_dynamics(model, np.array([0.3, -1.1]), np.ones(2), np.ones(2),
                         method=method)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.slow
def test_float32_overflow_is_an_error(method):
    model = load_urdf(example_robot_urdf("ur5_robot"))
    q = np.full(6, 0.3, dtype=np.float32)
    tau = np.full(6, 3e38, dtype=np.float32)  # finite, but qdd = M^-1 tau is not
    with pytest.raises(DynamicsError, match="not finite"):
        forward_dynamics(model, q, q, tau, method=method)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("bad,match", [
    ({"tau": [0.0, np.nan, 0.0, 0.0, 0.0, 0.0]}, r"tau\[1\] \(joint"),
    ({"qd": [0.0, 0.0, np.inf, 0.0, 0.0, 0.0]}, r"qd\[2\] \(joint"),
    ({"tau": np.zeros(5)}, r"tau must have shape \(6,\)"),
    ({"qd": np.zeros((2, 6))}, r"qd must have shape \(6,\)"),
    ({"q": np.zeros((1, 2, 6))}, r"q must have shape"),
    ({"tau": "torques"}, r"tau is not an array of numbers"),
])
def test_bad_state_is_a_state_error(method, bad, match):
    model = load_urdf(example_robot_urdf("ur5_robot"))
    args = {"q": np.zeros(6), "qd": np.zeros(6), "tau": np.zeros(6), **bad}
    with pytest.raises(StateError, match=match):
        forward_dynamics(model, method=method, **args)


def test_unknown_method():
    model = load_urdf(example_robot_urdf("ur5_robot"))
    with pytest.raises(DynamicsError, match="method"):
        forward_dynamics(model, np.zeros(6), np.zeros(6), np.zeros(6), method="lu")


# -- without numba's compiler (DESIGN: NUMBA_DISABLE_JIT=1 must stay correct) --

_NOJIT_SCRIPT = """
from robots import PinocchioOracle, example_robot_urdf, load_pinocchio, pin, rel_err
from robot_dynamics_ros.dynamics import forward_dynamics, load_urdf
urdf = example_robot_urdf("ur5_robot")
model = load_urdf(urdf)
oracle = PinocchioOracle(load_pinocchio(urdf), model.joint_names)
q, qd, tau = np.random.default_rng(3).uniform(-1, 1, (3, model.nv))
aba = oracle.ours_vec(pin.aba(oracle.model, oracle.data, oracle.q(q), oracle.v(qd),
                              oracle.v(tau)))
print("WORST", max(rel_err(forward_dynamics(model, q, qd, tau, method=m), aba)
                   for m in ("recursive", "cholesky")))
"""


def test_correct_without_jit():
    worst = worst_error_without_jit(_NOJIT_SCRIPT)
    assert worst <= TOL_PINOCCHIO, f"without JIT: worst relative error {worst}"

"""Properties of M, g, inverse dynamics and payloads that must hold on any robot.

Payloads are checked against Pinocchio with the same rigid body added to the
body of the joint that moves the link (robots.add_payload_pinocchio).
"""
import functools
import textwrap
import zlib

import numpy as np
import pytest

from robots import (add_payload_pinocchio, example_robot_urdf, fixed_to_root_links,
                    load_pinocchio, PinocchioOracle, random_configurations,
                    random_inertia, random_urdf, rel_err, root_links, urdf_links,
                    worst_error_without_jit)

from robot_dynamics_ros.dynamics import (gravity_torques, inverse_dynamics,
                                         load_urdf, mass_matrix)

TOL = 1e-10
N_CONFIGS = 20

# Real robots whose every moving joint carries inertia (Pinocchio's M is
# positive definite on them: checked in test_named_robots_have_pd_mass_matrix),
# plus random robots whose leaves always have mass.
REAL = ["panda", "ur5_robot", "talos_left_arm", "solo12", "double_pendulum", "z1"]
RANDOM = [(20, 8, False), (21, 40, False), (22, 10, True), (23, 60, True)]
CASES = REAL + [f"random-{s}-{n}-{'tree' if t else 'chain'}" for s, n, t in RANDOM]


def _rng(label):
    return np.random.default_rng(zlib.crc32(label.encode()))


@functools.lru_cache(maxsize=None)
def robot(case):
    """(urdf, our model, Pinocchio model) for a case name, loaded once."""
    if case.startswith("random-"):
        _, seed, n, kind = case.split("-")
        urdf = random_urdf(np.random.default_rng(int(seed)), int(n), tree=kind == "tree")
    else:
        urdf = example_robot_urdf(case)
    return urdf, load_urdf(urdf), load_pinocchio(urdf)


@pytest.mark.parametrize("case", REAL)
def test_named_robots_have_pd_mass_matrix(case):
    # Guards the premise of the SPD test: the oracle's M is PD on these robots.
    urdf, model, pin_model = robot(case)
    oracle = PinocchioOracle(pin_model, model.joint_names)
    q = random_configurations(model, _rng(case), 1, urdf=urdf)[0]
    assert np.linalg.eigvalsh(oracle.mass_matrix(q))[0] > 0


@pytest.mark.parametrize("case", CASES)
def test_mass_matrix_symmetric_positive_definite(case):
    urdf, model, _ = robot(case)
    for q in random_configurations(model, _rng(case), N_CONFIGS, urdf=urdf):
        m = mass_matrix(model, q)
        assert rel_err(m, m.T) <= 1e-14, "M is not symmetric"
        eig = np.linalg.eigvalsh(m)
        assert eig[0] > 0, f"M not positive definite: eigenvalues {eig[:3]}..."
        np.linalg.cholesky(m)


@pytest.mark.parametrize("case", CASES)
def test_inverse_dynamics_at_rest_is_m_qdd_plus_g(case):
    urdf, model, _ = robot(case)
    rng = _rng(case + "id")
    zero = np.zeros(model.nv)
    for q in random_configurations(model, rng, N_CONFIGS, urdf=urdf):
        qdd = rng.uniform(-5, 5, model.nv)
        lhs = inverse_dynamics(model, q, zero, qdd) - gravity_torques(model, q)
        assert rel_err(lhs, mass_matrix(model, q) @ qdd) <= TOL
        # qdd = 0 too: what is left is gravity alone
        assert rel_err(inverse_dynamics(model, q, zero, zero),
                       gravity_torques(model, q)) <= TOL


# ---------------------------------------------------------------------------
# Payloads


def _payload(rng):
    mass = rng.uniform(0.2, 3.0)
    return mass, rng.uniform(-0.2, 0.2, 3), random_inertia(rng, mass, 0.1)


def _assert_matches(model, pin_model, urdf, label, count=5):
    oracle = PinocchioOracle(pin_model, model.joint_names)
    rng = _rng(label)
    for q in random_configurations(model, rng, count, urdf=urdf):
        qd, qdd = rng.uniform(-2, 2, (2, model.nv))
        assert rel_err(mass_matrix(model, q), oracle.mass_matrix(q)) <= TOL, label
        assert rel_err(gravity_torques(model, q), oracle.gravity_torques(q)) <= TOL, label
        assert rel_err(inverse_dynamics(model, q, qd, qdd),
                       oracle.inverse_dynamics(q, qd, qdd)) <= TOL, label


def _payload_links(case, urdf, model):
    """Links to load: ends of the arm, a link behind fixed joints, random ones."""
    if case == "panda":
        # panda_link7 is moved by a joint; panda_hand sits behind two fixed
        # joints (link8, hand); panda_leftfinger is moved by a prismatic joint.
        return ["panda_link7", "panda_hand", "panda_leftfinger", "panda_link3"]
    rng = _rng(case + "links")
    still = set(fixed_to_root_links(urdf)) | set(root_links(urdf))
    moving = [l for l in urdf_links(urdf) if l not in still]
    return [str(l) for l in rng.choice(moving, size=min(5, len(moving)), replace=False)]


# A 12-joint chain rather than the 40 one: deep chains are accuracy's job
# (test_dynamics_accuracy); here a failure should point at the payload.
PAYLOAD_CASES = ["panda", "talos_left_arm", "random-22-10-tree", "random-23-60-tree",
                 "random-24-12-chain"]


@pytest.mark.parametrize("case", PAYLOAD_CASES)
def test_payload_matches_pinocchio(case):
    urdf, model, pin_model = robot(case)
    rng = _rng(case + "payload")
    q0 = random_configurations(model, rng, 1, urdf=urdf)[0]
    m_before = mass_matrix(model, q0).copy()
    for link in _payload_links(case, urdf, model):
        mass, com, inertia = _payload(rng)
        loaded = model.with_payload(link, mass, com, inertia)
        _assert_matches(loaded, add_payload_pinocchio(pin_model, link, mass, com, inertia),
                        urdf, f"{case}: payload on {link}")
    # with_payload builds a new model: the original is untouched
    np.testing.assert_array_equal(mass_matrix(model, q0), m_before)


@pytest.mark.parametrize("case", ["panda", "random-23-60-tree"])
def test_payload_replace_remove_and_accumulate(case):
    urdf, model, pin_model = robot(case)
    rng = _rng(case + "replace")
    a, b = _payload_links(case, urdf, model)[:2]
    p1, p2, p3 = _payload(rng), _payload(rng), _payload(rng)
    q = random_configurations(model, rng, 3, urdf=urdf)

    # mass 0 removes the payload: back to the original model exactly
    removed = model.with_payload(a, *p1).with_payload(a, 0.0, np.zeros(3), np.zeros((3, 3)))
    for qk in q:
        assert rel_err(mass_matrix(removed, qk), mass_matrix(model, qk)) <= 1e-14
        assert rel_err(gravity_torques(removed, qk), gravity_torques(model, qk)) <= 1e-14

    # one payload per link: a second one on the same link replaces the first
    replaced = model.with_payload(a, *p1).with_payload(a, *p2)
    _assert_matches(replaced, add_payload_pinocchio(pin_model, a, *p2), urdf,
                    f"{case}: replaced payload on {a}", count=3)

    # payloads on different links add up
    both = model.with_payload(a, *p1).with_payload(b, *p3)
    pin_both = add_payload_pinocchio(add_payload_pinocchio(pin_model, a, *p1), b, *p3)
    _assert_matches(both, pin_both, urdf, f"{case}: payloads on {a} and {b}", count=3)


@pytest.mark.parametrize("case", ["random-22-10-tree", "random-23-60-tree"])
def test_payload_on_link_fixed_to_root_moves_nothing(case):
    urdf, model, _ = robot(case)
    fixed = fixed_to_root_links(urdf)
    assert fixed, "generator should hang a link off the root by a fixed joint"
    rng = _rng(case + "root")
    for link in fixed:
        loaded = model.with_payload(link, *_payload(rng))
        for q in random_configurations(model, rng, 3, urdf=urdf):
            assert rel_err(mass_matrix(loaded, q), mass_matrix(model, q)) <= 1e-14
            assert rel_err(gravity_torques(loaded, q), gravity_torques(model, q)) <= 1e-14


# ---------------------------------------------------------------------------
# Without numba's compiler (DESIGN: NUMBA_DISABLE_JIT=1 must stay correct)

_NOJIT_SCRIPT = textwrap.dedent("""
    from robots import (PinocchioOracle, example_robot_urdf, load_pinocchio,
                        random_configurations, rel_err)
    from robot_dynamics_ros.dynamics import (gravity_torques, inverse_dynamics,
                                             load_urdf, mass_matrix)
    urdf = example_robot_urdf("panda")
    model = load_urdf(urdf)
    oracle = PinocchioOracle(load_pinocchio(urdf), model.joint_names)
    rng = np.random.default_rng(5)
    qs = random_configurations(model, rng, 4, urdf=urdf)
    qds, qdds = rng.uniform(-2, 2, (2, 4, model.nv))
    worst = 0.0
    for q, qd, qdd in zip(qs, qds, qdds):
        worst = max(worst,
                    rel_err(mass_matrix(model, q), oracle.mass_matrix(q)),
                    rel_err(gravity_torques(model, q), oracle.gravity_torques(q)),
                    rel_err(inverse_dynamics(model, q, qd, qdd),
                            oracle.inverse_dynamics(q, qd, qdd)))
    mb = mass_matrix(model, qs)
    worst = max(worst, max(rel_err(mb[k], oracle.mass_matrix(qs[k])) for k in range(4)))
    print("WORST", worst)
""")


def test_correct_without_jit():
    worst = worst_error_without_jit(_NOJIT_SCRIPT)
    assert worst <= TOL, f"without JIT: worst relative error {worst}"

"""M(q), g(q) and inverse dynamics against Pinocchio (the oracle, MATH.md).

Every example-robot-data URDF that Pinocchio loads fixed-base, and random
chains and trees up to 60 joints, each at >= 20 random configurations (with
random qd, qdd for inverse dynamics). Pinocchio's results are reordered into
our joint order by joint name (robots.PinocchioOracle), so the two libraries
may number joints differently.
"""
import zlib

import numpy as np
import pytest

from robots import (GRAVITY, PinocchioOracle, example_robot_urdfs,
                    has_unsupported_joints, load_pinocchio, random_configurations,
                    random_urdf, rel_err, urdf_indefinite_inertias, urdf_text)

from robot_dynamics_ros.dynamics import (DynamicsError, gravity_torques,
                                         inverse_dynamics, load_urdf,
                                         mass_matrix)

TOL = 1e-10
N_CONFIGS = 20
ROBOTS = example_robot_urdfs()

# (seed, moving joints, tree): small cases catch base-case bugs, 60 joints
# the accumulation of rounding error and deep recursion.
RANDOM_CASES = ([(seed, n, False) for seed, n in
                 [(0, 1), (1, 2), (2, 3), (3, 7), (4, 15), (5, 30), (6, 60), (7, 60)]]
                + [(seed, n, True) for seed, n in
                   [(10, 2), (11, 4), (12, 9), (13, 20), (14, 35), (15, 60), (16, 60),
                    (17, 60)]])


def _rng(label):
    """A generator seeded by the case name: reproducible, different per robot."""
    return np.random.default_rng(zlib.crc32(label.encode()))


def compare_with_pinocchio(model, pin_model, urdf, label, count=N_CONFIGS):
    """Worst relative error of M, g and ID over ``count`` random states.

    Asserts each is <= TOL and returns them, so callers can report them.
    """
    oracle = PinocchioOracle(pin_model, model.joint_names)
    assert model.nv == pin_model.nv, f"{label}: nv {model.nv} != Pinocchio {pin_model.nv}"
    np.testing.assert_array_equal(oracle.gravity, GRAVITY)
    rng = _rng(label)
    qs = random_configurations(model, rng, count, urdf=urdf)
    worst = {"M": (0.0, None), "g": (0.0, None), "ID": (0.0, None)}
    for k, q in enumerate(qs):
        qd = rng.uniform(-2.0, 2.0, model.nv)
        qdd = rng.uniform(-5.0, 5.0, model.nv)
        errs = {
            "M": rel_err(mass_matrix(model, q), oracle.mass_matrix(q)),
            "g": rel_err(gravity_torques(model, q), oracle.gravity_torques(q)),
            "ID": rel_err(inverse_dynamics(model, q, qd, qdd),
                          oracle.inverse_dynamics(q, qd, qdd)),
        }
        for key, e in errs.items():
            if not e <= worst[key][0]:  # also catches NaN
                worst[key] = (e, k)
    bad = {k: v for k, v in worst.items() if not v[0] <= TOL}
    assert not bad, (f"{label}: relative error above {TOL} "
                     + ", ".join(f"{k}={e:.3g} at q[{i}]={qs[i].tolist()}"
                                 for k, (e, i) in bad.items()))
    return {k: v[0] for k, v in worst.items()}


def test_example_robot_data_is_installed():
    # Without it the parametrized test below would collect nothing and pass.
    assert len(ROBOTS) >= 60, f"example-robot-data URDFs found: {len(ROBOTS)}"


@pytest.mark.parametrize("name,path", ROBOTS, ids=[n for n, _ in ROBOTS])
def test_example_robot_vs_pinocchio(name, path):
    unsupported = has_unsupported_joints(path)
    if unsupported:
        with pytest.raises(DynamicsError, match=unsupported[0]):
            load_urdf(path)
        return
    pin_model = load_pinocchio(path)
    if pin_model is None:
        # No oracle (ur3.urdf is an empty <robot> without a name): ours may
        # load or reject it, but only through DynamicsError.
        try:
            load_urdf(path)
        except DynamicsError:
            pass
        return
    if pin_model.nv == 0:
        # Pinocchio builds an empty model; there are no dynamics to serve (issue 13).
        with pytest.raises(DynamicsError, match="no moving joints"):
            load_urdf(path)
        return
    invalid = urdf_indefinite_inertias(path)
    try:
        model = load_urdf(path)
    except DynamicsError as exc:
        # DESIGN: an indefinite inertia is bad input, even where Pinocchio
        # takes it; rejecting is right only when it names such a link.
        if invalid and any(link in str(exc) for link in invalid):
            return
        pytest.fail(f"{name} ({path}): Pinocchio loads it, load_urdf raised "
                    f"{type(exc).__name__}: {exc}"
                    + (f" (clearly indefinite inertias: {invalid})" if invalid else ""))
    except Exception as exc:  # noqa: BLE001 - any other failure is the finding
        pytest.fail(f"{name} ({path}): Pinocchio loads it, load_urdf raised "
                    f"{type(exc).__name__}: {exc}")
    compare_with_pinocchio(model, pin_model, path, name)


@pytest.mark.parametrize("seed,n,tree", RANDOM_CASES,
                         ids=[f"{'tree' if t else 'chain'}{n}-seed{s}"
                              for s, n, t in RANDOM_CASES])
def test_random_robot_vs_pinocchio(seed, n, tree):
    text = random_urdf(np.random.default_rng(seed), n, tree=tree)
    pin_model = load_pinocchio(text)
    assert pin_model is not None, "Pinocchio rejected a generated URDF"
    model = load_urdf(text)
    compare_with_pinocchio(model, pin_model, text, f"random-{seed}-{n}-{tree}")


@pytest.mark.parametrize("kind", ["revolute", "continuous"])
def test_deep_revolute_chain_vs_pinocchio(kind):
    # 60 rotations composed in a row: any rounding fed back into the next
    # joint's rotation grows with depth, which shallow real robots hide.
    text = random_urdf(np.random.default_rng(30), 60, prismatic_fraction=0.0,
                       continuous_fraction=1.0 if kind == "continuous" else 0.0,
                       fixed_fraction=0.1)
    model = load_urdf(text)
    compare_with_pinocchio(model, load_pinocchio(text), text, f"deep-{kind}-chain")


def test_path_and_text_give_the_same_model():
    name, path = next((n, p) for n, p in ROBOTS if n == "panda")
    from_path, from_text = load_urdf(path), load_urdf(urdf_text(path))
    assert from_path.joint_names == from_text.joint_names
    q = random_configurations(from_path, _rng("path-text"), 1, urdf=path)[0]
    np.testing.assert_array_equal(mass_matrix(from_path, q), mass_matrix(from_text, q))


@pytest.mark.parametrize("gravity", [(0.0, 0.0, -1.62), (3.0, -4.0, 1.0)])
def test_custom_gravity_vs_pinocchio(gravity):
    text = random_urdf(np.random.default_rng(42), 12, tree=True)
    model = load_urdf(text, gravity=gravity)
    pin_model = load_pinocchio(text)
    pin_model.gravity.linear = np.array(gravity)
    oracle = PinocchioOracle(pin_model, model.joint_names)
    rng = _rng(f"gravity{gravity}")
    for q in random_configurations(model, rng, 5, urdf=text):
        qd, qdd = rng.uniform(-1, 1, (2, model.nv))
        assert rel_err(gravity_torques(model, q), oracle.gravity_torques(q)) <= TOL
        assert rel_err(inverse_dynamics(model, q, qd, qdd),
                       oracle.inverse_dynamics(q, qd, qdd)) <= TOL


BATCH_ROBOTS = ["panda", "talos_full_v2", "tiago_dual", "random-tree-60"]


@pytest.mark.parametrize("name", BATCH_ROBOTS)
def test_batch_matches_single_and_pinocchio(name):
    if name.startswith("random"):
        urdf = random_urdf(np.random.default_rng(99), 60, tree=True)
    else:
        urdf = next(p for n, p in ROBOTS if n == name)
    model = load_urdf(urdf)
    oracle = PinocchioOracle(load_pinocchio(urdf), model.joint_names)
    rng = _rng("batch" + name)
    count = 7
    qs = random_configurations(model, rng, count, urdf=urdf)
    qds = rng.uniform(-2, 2, (count, model.nv))
    qdds = rng.uniform(-5, 5, (count, model.nv))
    mb = mass_matrix(model, qs)
    gb = gravity_torques(model, qs)
    tb = inverse_dynamics(model, qs, qds, qdds)
    n = model.nv
    assert mb.shape == (count, n, n) and gb.shape == (count, n) and tb.shape == (count, n)
    for k in range(count):
        q, qd, qdd = qs[k], qds[k], qdds[k]
        # The batch runs the same recursion per sample: agreement to rounding.
        assert rel_err(mb[k], mass_matrix(model, q)) <= 1e-13
        assert rel_err(gb[k], gravity_torques(model, q)) <= 1e-13
        assert rel_err(tb[k], inverse_dynamics(model, q, qd, qdd)) <= 1e-13
        assert rel_err(mb[k], oracle.mass_matrix(q)) <= TOL
        assert rel_err(gb[k], oracle.gravity_torques(q)) <= TOL
        assert rel_err(tb[k], oracle.inverse_dynamics(q, qd, qdd)) <= TOL

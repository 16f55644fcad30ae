"""all_terms: every term of the node at once, against Pinocchio and numpy's LAPACK."""
import numpy as np
import pytest

from coriolis_cases import TOL, mimic_map, rng_for, robot
from robots import random_configurations, rel_err

from robot_dynamics_ros.dynamics import (BOUNDS_FIELDS, DynamicsError, all_terms, christoffel_symbols,
                                         coriolis_bounds, coriolis_matrix, gravity_torques, mass_matrix)

# a serial arm with two prismatic fingers, a quadruped tree, a random deep tree
CASES = ["panda", "solo12", "random-405-20-tree"]


def reference_bounds(mass, coriolis, gamma, qd, kc_global, kc_global_lower):
    """MATH.md's bounds from LAPACK: ||C||_2, k_c = sqrt(sum_k ||Gamma_k||_2^2), eig(M)."""
    kc = np.sqrt(sum(np.linalg.norm(gamma[:, :, k], 2) ** 2 for k in range(len(qd))))
    eig = np.linalg.eigvalsh(mass)
    return dict(coriolis_norm=np.linalg.norm(coriolis, 2), kc_config=kc, kc_global=kc_global,
                coriolis_bound=kc * np.linalg.norm(qd), m_eig_min=eig[0], m_eig_max=eig[-1],
                kc_global_lower=kc_global_lower)


@pytest.mark.parametrize("case", CASES)
def test_terms_equal_pinocchio(case):
    urdf, model, oracle = robot(case)
    rng = rng_for("all_terms" + case)
    interval = coriolis_bounds(model, np.zeros(model.nv), np.zeros(model.nv))
    for q in random_configurations(model, rng, 3, urdf=urdf):
        qd = rng.uniform(-2, 2, model.nv)
        terms = all_terms(model, q, qd)
        want = {"mass_matrix": oracle.mass_matrix(q), "coriolis_matrix": oracle.coriolis_matrix(q, qd),
                "christoffel_symbols": oracle.christoffel_symbols(q), "gravity_torques": oracle.gravity_torques(q)}
        errors = {name: rel_err(getattr(terms, name), value) for name, value in want.items()}
        bounds = reference_bounds(want["mass_matrix"], want["coriolis_matrix"],
                                  want["christoffel_symbols"], qd, interval.kc_global,
                                  interval.kc_global_lower)
        errors.update({name: rel_err(terms.coriolis_bounds[i], bounds[name])
                       for i, name in enumerate(BOUNDS_FIELDS)})
        assert max(errors.values()) <= TOL, errors


@pytest.mark.parametrize("mimic", ["independent", "reduce"])
def test_terms_are_those_of_the_single_functions(mimic):
    # reduce: panda's second finger follows the first, out of q; the bounds
    # are those of the reduced terms
    urdf, model, _ = robot("panda", mimic)
    rng = rng_for("single" + mimic)
    q = random_configurations(model, rng, 1, urdf=urdf)[0]
    qd = rng.uniform(-2, 2, model.nv)
    terms = all_terms(model, q, qd)
    bounds = coriolis_bounds(model, q, qd)
    np.testing.assert_array_equal(terms.mass_matrix, mass_matrix(model, q))
    np.testing.assert_array_equal(terms.coriolis_matrix, coriolis_matrix(model, q, qd))
    np.testing.assert_array_equal(terms.christoffel_symbols, christoffel_symbols(model, q))
    np.testing.assert_array_equal(terms.gravity_torques, gravity_torques(model, q))
    fields = dict(zip(BOUNDS_FIELDS, terms.coriolis_bounds))
    for name in bounds._fields:
        assert fields[name] == getattr(bounds, name), name
    assert rel_err(fields["coriolis_bound"], fields["kc_config"] * np.linalg.norm(qd)) <= 1e-15


def test_mimic_reduce_transforms_every_term():
    urdf, reduced, oracle = robot("panda", "reduce")
    J, b = mimic_map(urdf, reduced.joint_names, oracle.joint_names)
    assert J.shape[0] > J.shape[1], "panda has no mimic joint to reduce"
    rng = rng_for("all_terms mimic")
    q = random_configurations(reduced, rng, 1, urdf=urdf)[0]
    qd = rng.uniform(-1, 1, reduced.nv)
    terms = all_terms(reduced, q, qd)
    full = J @ q + b
    assert rel_err(terms.mass_matrix, J.T @ oracle.mass_matrix(full) @ J) <= TOL
    assert rel_err(terms.coriolis_matrix, J.T @ oracle.coriolis_matrix(full, J @ qd) @ J) <= TOL
    assert rel_err(terms.gravity_torques, J.T @ oracle.gravity_torques(full)) <= TOL


def test_batch_equals_each_sample():
    # 70 samples run on the thread pool (calls.PARALLEL_FROM)
    urdf, model, _ = robot("panda")
    rng = rng_for("all_terms batch")
    qs = random_configurations(model, rng, 70, urdf=urdf)
    qds = rng.uniform(-2, 2, qs.shape)
    batch = all_terms(model, qs, qds)
    n = model.nv
    assert [t.shape for t in batch] == [(70, n, n), (70, n, n), (70, len(BOUNDS_FIELDS)), (70, n, n, n), (70, n)]
    for k in (0, 33, 69):
        one = all_terms(model, qs[k], qds[k])
        for name, value in one._asdict().items():
            np.testing.assert_array_equal(getattr(batch, name)[k], value, err_msg=name)


def test_bad_input_names_the_joint():
    _, model, _ = robot("panda")
    qd = np.zeros(model.nv)
    qd[3] = np.nan
    with pytest.raises(DynamicsError, match=model.joint_names[3]):
        all_terms(model, np.zeros(model.nv), qd)
    with pytest.raises(DynamicsError, match="shape"):
        all_terms(model, np.zeros(model.nv), np.zeros(model.nv + 1))

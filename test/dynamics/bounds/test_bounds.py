"""Coriolis bounds: the fields against Pinocchio, and the bounds never violated.

The bound ``||C(q, x) y|| <= k_c(q) ||x|| ||y|| <= K_c ||x|| ||y||`` is checked
on 100,000 random (q, x, y) per robot, q within the joint limits; the tests
print how tight K_c is (the largest ratio reached).
"""
import numpy as np
import pytest
from eigen_kernels import symmetric_eigen_extremes

from robots import (PinocchioOracle, example_robot_urdf, load_pinocchio,
                    random_configurations, random_urdf, rel_err)
from robot_dynamics_ros.dynamics import (
    DynamicsError, coriolis_bounds, coriolis_matrix, load_urdf, puma_urdf)
from robot_dynamics_ros.dynamics.bounds.coriolis_bounds import gram_matrices
from robot_dynamics_ros.dynamics.kc import global_coriolis_constant
from robot_dynamics_ros.dynamics.bounds.eigen import (
    end_bracket, end_eigenvalues, largest_eigenvalue, largest_eigenvalues, largest_singular_value,
    lower_triangles_finite, smallest_eigenvalue, tridiagonal_bands, tridiagonalize)

TRIPLES = 100_000
CHUNK = 5_000


def _robots():
    return {
        "panda": example_robot_urdf("panda"),
        "ur5": example_robot_urdf("ur5_robot"),
        "solo12": example_robot_urdf("solo12"),
        "puma": puma_urdf(),
        "random_tree": random_urdf(np.random.default_rng(3), 8, tree=True),
    }


ROBOTS = _robots()


@pytest.mark.parametrize("name", ["panda", "solo12", "puma", "random_tree"])
def test_fields_match_pinocchio(name):
    """Each field from Pinocchio's C, Gamma (n calls of C(q, e_k)) and M."""
    urdf = ROBOTS[name]
    model = load_urdf(urdf)
    oracle = PinocchioOracle(load_pinocchio(urdf), model.joint_names)
    rng = np.random.default_rng(0)
    for q in random_configurations(model, rng, 10, urdf=urdf):
        qd = rng.normal(size=model.nv)
        bounds = coriolis_bounds(model, q, qd)
        gamma = oracle.christoffel_symbols(q)
        kc = np.sqrt(sum(np.linalg.norm(gamma[:, :, k], 2) ** 2
                         for k in range(model.nv)))
        eigs = np.linalg.eigvalsh(oracle.mass_matrix(q))
        assert rel_err(bounds.coriolis_norm,
                       np.linalg.norm(oracle.coriolis_matrix(q, qd), 2)) < 1e-10
        assert rel_err(bounds.kc_config, kc) < 1e-10
        assert rel_err(bounds.m_eig_min, eigs[0]) < 1e-10
        assert rel_err(bounds.m_eig_max, eigs[-1]) < 1e-10
        assert bounds.kc_global >= bounds.kc_config


@pytest.mark.parametrize("name", sorted(ROBOTS))
@pytest.mark.slow
def test_bounds_hold_on_random_triples(name):
    urdf = ROBOTS[name]
    model = load_urdf(urdf)
    kc_global = global_coriolis_constant(model)
    assert np.isfinite(kc_global) and kc_global > 0
    rng = np.random.default_rng(1)
    worst_config = worst_global = 0.0
    for _ in range(TRIPLES // CHUNK):
        q = random_configurations(model, rng, CHUNK, urdf=urdf)
        x, y = rng.normal(size=(2, CHUNK, model.nv))
        # ||x|| spread over decades so that the bound is tried at all scales
        x *= 10.0 ** rng.uniform(-2, 2, (CHUNK, 1))
        cxy = np.linalg.norm(np.einsum("nij,nj->ni", coriolis_matrix(model, q, x), y), axis=1)
        scale = np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1)
        kc = coriolis_bounds(model, q, x).kc_config
        assert np.all(cxy <= kc * scale * (1 + 1e-12)), "k_c(q) bound violated"
        assert np.all(cxy <= kc_global * scale * (1 + 1e-12)), "K_c bound violated"
        worst_config = max(worst_config, float(np.max(cxy / (kc * scale))))
        worst_global = max(worst_global, float(np.max(
            np.linalg.norm(coriolis_matrix(model, q, x), 2, axis=(1, 2))
            / (kc_global * np.linalg.norm(x, axis=1)))))
    print(f"\n{name}: K_c = {kc_global:.6g}; over {TRIPLES} random (q, x, y): "
          f"max ||C(q,x)y|| / (k_c(q)|x||y|) = {worst_config:.3f}, "
          f"max ||C(q,x)||_2 / (K_c |x|) = {worst_global:.3f}")


def test_kc_global_is_the_sup_of_kc_config():
    """K_c is at least k_c anywhere within the limits: a dense scan of PUMA."""
    model = load_urdf(ROBOTS["puma"])
    kc_global = global_coriolis_constant(model)
    rng = np.random.default_rng(5)
    q = rng.uniform(-np.pi, np.pi, (20_000, model.nv))
    assert np.max(coriolis_bounds(model, q, q).kc_config) <= kc_global * (1 + 1e-9)


def test_robot_at_rest():
    """qd = 0: C = 0 exactly, so ||C|| = 0, and k_c(q) is still that of q."""
    urdf = ROBOTS["panda"]
    model = load_urdf(urdf)
    oracle = PinocchioOracle(load_pinocchio(urdf), model.joint_names)
    q = random_configurations(model, np.random.default_rng(6), 1, urdf=urdf)[0]
    bounds = coriolis_bounds(model, q, np.zeros(model.nv))
    gamma = oracle.christoffel_symbols(q)
    kc = np.sqrt(sum(np.linalg.norm(gamma[:, :, k], 2) ** 2 for k in range(model.nv)))
    assert bounds.coriolis_norm == 0.0
    assert rel_err(bounds.kc_config, kc) < 1e-10


def test_batch_equals_per_sample():
    model = load_urdf(ROBOTS["panda"])
    rng = np.random.default_rng(2)
    q = random_configurations(model, rng, 5, urdf=ROBOTS["panda"])
    qd = rng.normal(size=q.shape)
    batch = coriolis_bounds(model, q, qd)
    for i in range(5):
        one = coriolis_bounds(model, q[i], qd[i])
        for field in ("coriolis_norm", "kc_config", "m_eig_min", "m_eig_max"):
            assert rel_err(getattr(batch, field)[i], getattr(one, field)) < 1e-13
        assert batch.kc_global == one.kc_global


def test_kc_global_is_per_model_and_follows_payloads():
    model = load_urdf(ROBOTS["ur5"])
    heavy = model.with_payload("tool0", 5.0, [0.0, 0.0, 0.1], 0.01 * np.eye(3))
    # payload terms enter Gamma, so K_c must be recomputed for the new model
    assert global_coriolis_constant(heavy) > global_coriolis_constant(model)
    assert global_coriolis_constant(model) == global_coriolis_constant(load_urdf(ROBOTS["ur5"]))
    # the value for a payload does not depend on the payloads swapped before
    light = model.with_payload("tool0", 0.5, [0.0, 0.0, 0.1], 0.001 * np.eye(3))
    other = load_urdf(ROBOTS["ur5"])
    global_coriolis_constant(other.with_payload("tool0", 2.0, [0.1, 0.0, 0.0], 0.01 * np.eye(3)))
    assert global_coriolis_constant(light) == global_coriolis_constant(
        other.with_payload("tool0", 0.5, [0.0, 0.0, 0.1], 0.001 * np.eye(3)))


def test_bounds_hold_with_a_payload():
    """K_c of a payload model (searched from the bare robot's maxima) holds too."""
    model = load_urdf(ROBOTS["ur5"]).with_payload(
        "wrist_2_link", 3.0, [0.05, 0.1, 0.0], np.diag([0.02, 0.03, 0.04]))
    kc_global = global_coriolis_constant(model)
    rng = np.random.default_rng(7)
    q = random_configurations(model, rng, 20_000, urdf=ROBOTS["ur5"])
    x, y = rng.normal(size=(2, 20_000, model.nv))
    cxy = np.linalg.norm(np.einsum("nij,nj->ni", coriolis_matrix(model, q, x), y), axis=1)
    scale = np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1)
    assert np.all(cxy <= kc_global * scale * (1 + 1e-12))
    kc = coriolis_bounds(model, q, x).kc_config
    assert np.max(kc) <= kc_global * (1 + 1e-9)
    print(f"\nur5 + 3 kg: K_c = {kc_global:.6g}, max k_c(q) over 20,000 q = {np.max(kc):.6g}")


def test_small_eigenvalue_kernels_match_lapack():
    """The eigenvalue kernels behind the bounds against numpy's LAPACK."""
    rng = np.random.default_rng(4)
    for n in (1, 2, 3, 5, 9, 30, 60):
        a = rng.normal(size=(n, n)) * 10.0 ** rng.uniform(-3, 3)
        sym = a + a.T
        work, gram = np.empty((n, n)), np.empty((n, n))
        eigs = np.linalg.eigvalsh(sym)
        for floor in (-np.inf, 0.0):  # indefinite: searched from below the spectrum
            low, high = symmetric_eigen_extremes(sym, work, floor)
            assert abs(low - eigs[0]) < 1e-12 * max(1, abs(eigs).max())
            assert abs(high - eigs[-1]) < 1e-12 * max(1, abs(eigs).max())
        # positive definite with a smallest eigenvalue near 0, as a mass matrix
        basis = np.linalg.qr(rng.normal(size=(n, n)))[0]
        spectrum = np.logspace(-7, 2, n) if n > 1 else np.array([1e-7])
        pd = basis @ np.diag(spectrum) @ basis.T
        eigs = np.linalg.eigvalsh(pd)
        for floor in (-np.inf, 0.0):
            low, high = symmetric_eigen_extremes(pd, work, floor)
            assert abs(low - eigs[0]) < 1e-12 * eigs[-1]
            assert abs(high - eigs[-1]) < 1e-12 * eigs[-1]
        norm = np.linalg.norm(a, 2)
        assert abs(largest_singular_value(a, gram, work) - norm) < 1e-12 * max(1, norm)
    # repeated extreme eigenvalues: the Gram matrix of a skew-symmetric matrix
    # (Gamma_k of a joint on the fixed base) has them in pairs, and a matrix
    # with a double pair next to a nearly double one
    for n in (2, 3, 6, 7, 12):
        skew = rng.normal(size=(n, n))
        skew -= skew.T
        work, gram = np.empty((n, n)), np.empty((n, n))
        assert abs(largest_singular_value(skew, gram, work) - np.linalg.norm(skew, 2)) \
            < 1e-12 * np.linalg.norm(skew, 2)
        basis = np.linalg.qr(rng.normal(size=(n, n)))[0]
        for spectrum in (np.r_[[5.0, 5.0], np.linspace(-3, 1, max(n - 2, 0))],
                         np.r_[[5.0, 5.0 - 1e-9], np.linspace(-3, 1, max(n - 2, 0))],
                         np.r_[[-4.0, -4.0, -4.0 + 1e-7], np.linspace(0, 2, max(n - 3, 0))]):
            sym = basis @ np.diag(spectrum[:n]) @ basis.T
            eigs = np.linalg.eigvalsh(sym)
            low, high = symmetric_eigen_extremes(sym, work, 0.0)
            assert abs(low - eigs[0]) < 1e-12 * abs(eigs).max()
            assert abs(high - eigs[-1]) < 1e-12 * abs(eigs).max()
    # zero and rank-one matrices: C(q, 0) = 0 is what every resting robot gives
    for a in (np.zeros((6, 6)), np.outer(np.arange(6.0), np.ones(6)), np.eye(4) * 1e-100):
        n = len(a)
        work, gram = np.empty((n, n)), np.empty((n, n))
        eigs = np.linalg.eigvalsh(a + a.T)
        assert np.allclose(symmetric_eigen_extremes(a + a.T, work, 0.0), (eigs[0], eigs[-1]),
                           rtol=1e-12, atol=1e-300)
        assert np.isclose(largest_singular_value(a, gram, work), np.linalg.norm(a, 2),
                          rtol=1e-12, atol=1e-300)


def test_lockstep_largest_eigenvalues_match_lapack_and_one_at_a_time():
    """``largest_eigenvalues``, the Laguerre steps on many tridiagonal matrices
    side by side (``tridiagonal_bands``), against numpy's LAPACK on the
    matrices before their reduction and against the same steps one matrix
    at a time: Gram matrices of random, skew-symmetric (double eigenvalues),
    zero-padded and zero matrices."""
    rng = np.random.default_rng(5)
    for n, m in ((1, 4), (2, 5), (7, 9), (12, 26), (22, 3)):
        X = rng.normal(size=(n, n, m)) * 10.0 ** rng.uniform(-3, 3, m)
        X[:, :, 0] -= X[:, :, 0].T  # skew: its Gram matrix has its eigenvalues in pairs
        X[n // 2:, :, 1 % m] = 0.0  # a smaller matrix padded with zeros
        X[:, n // 2:, 1 % m] = 0.0
        X[:, :, m - 1] = 0.0
        grams = np.einsum("kis,kjs->ijs", X, X)
        expected = np.array([np.linalg.eigvalsh(grams[:, :, s])[-1] for s in range(m)])
        work = grams.copy()
        tridiagonalize(work)
        bands = np.full((2, n + 3, m + 2), np.nan)  # the slots past m are not read
        for s in range(m):
            tridiagonal_bands(work[:, :, s], n, n, bands, s)
        out = np.empty(m)
        largest_eigenvalues(bands, n, m, 0.0, out)
        assert np.all(np.abs(out - expected) <= 1e-12 * np.maximum(np.abs(expected), 1e-300))
        one_by_one = np.array([largest_eigenvalue(np.ascontiguousarray(work[:, :, s]), 0.0)
                               for s in range(m)])
        assert np.array_equal(out, one_by_one)


def test_nested_lanes_give_each_matrix_its_own_reduction():
    """``gram_matrices`` and ``tridiagonalize`` with ``lanes``: matrices of
    sizes 1 to 12 in the bottom-right corners of 12 x 12 lanes, the largest
    first, zeros above and left of each corner. Each lane's Gram matrix
    equals ``gram_matrices`` of its matrix alone, and its tridiagonal form
    the reduction of that Gram matrix alone, bit for bit; the Gram entries
    outside a corner are 0. ``tridiagonalize`` reads nothing outside a
    corner: NaN put there stays there and the forms are unchanged. Each
    Gram matrix is numpy's X^T X to rounding, and each form has LAPACK's
    largest eigenvalue of it."""
    rng = np.random.default_rng(7)
    sizes = np.array([12, 12, 11, 9, 9, 8, 7, 6, 5, 4, 3, 2, 1])
    size, m = sizes[0], len(sizes)
    lanes = np.array([np.count_nonzero(sizes >= size - k) for k in range(size)])
    X = np.zeros((size, size, m))
    alone = []
    for s, c in enumerate(sizes):
        corner = size - c
        X[corner:, corner:, s] = rng.normal(size=(c, c)) * 10.0 ** rng.uniform(-3, 3)
        gram = np.empty((c, c, 1))
        gram_matrices(np.ascontiguousarray(X[corner:, corner:, s:s + 1]), gram)
        alone.append(gram)
    grams = np.empty((size, size, m))
    gram_matrices(X, grams, lanes)
    for s, c in enumerate(sizes):
        corner = size - c
        lower = np.tril_indices(c)
        assert np.array_equal(grams[corner:, corner:, s][lower], alone[s][:, :, 0][lower])
        x = X[corner:, corner:, s]
        expected = (x.T @ x)[lower]
        assert np.allclose(alone[s][:, :, 0][lower], expected, rtol=0, atol=1e-14 * np.abs(expected).max())
        outside = np.tril(np.ones((size, size), dtype=bool))
        outside[corner:, corner:] = False
        assert np.all(grams[:, :, s][outside] == 0.0)
    for s, c in enumerate(sizes):
        grams[:size - c, :, s] = np.nan  # above and left of the corner: not to be read
        grams[:, :size - c, s] = np.nan
    tridiagonalize(grams, lanes)
    for s, c in enumerate(sizes):
        corner = size - c
        T = alone[s]
        tridiagonalize(T)
        mine = grams[corner:, corner:, s]
        assert np.array_equal(np.diag(mine), np.diag(T[:, :, 0]))
        assert np.array_equal(np.diag(mine, -1), np.diag(T[:, :, 0], -1))
        x = X[corner:, corner:, s]
        expected = x.T @ x
        tridiagonal = np.diag(np.diag(mine)) + np.diag(np.diag(mine, -1), -1) + np.diag(np.diag(mine, -1), 1)
        top = np.linalg.eigvalsh(expected)[-1]
        assert abs(np.linalg.eigvalsh(tridiagonal)[-1] - top) <= 1e-13 * top


def test_lockstep_end_eigenvalues_mix_largest_and_smallest():
    """``end_eigenvalues`` with some lanes searching the smallest eigenvalue
    from below and others the largest from above (as the bounds search
    ||C||^2 and M's two ends side by side), each from ``end_bracket``:
    against LAPACK and bit for bit against ``smallest_eigenvalue`` and
    ``largest_eigenvalue`` one matrix at a time. Positive definite matrices
    with eigenvalues 1e-7 to 1e2 (the floor 0 starts the smallest's search),
    indefinite ones (it does not) and a multiple of the identity."""
    rng = np.random.default_rng(6)
    for n in (1, 3, 12, 35):
        matrices = []
        for kind in ("definite", "indefinite", "identity"):
            if kind == "identity":
                matrices.append(2.5 * np.eye(n))
                continue
            Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
            eigs = np.logspace(-7, 2, n) if kind == "definite" else rng.uniform(-3, 3, n)
            matrices.append((Q * eigs) @ Q.T)
        lanes = [(A, floor, largest) for A in matrices for floor, largest in ((0.0, False), (-np.inf, True))]
        m = len(lanes)
        bands = np.full((2, n + 2, m + 1), np.nan)
        brackets, out = np.empty((3, m)), np.empty(m)
        one_by_one, expected = np.empty(m), np.empty(m)
        for s, (A, floor, largest) in enumerate(lanes):
            T = A.copy()
            tridiagonalize(T.reshape((n, n, 1)))
            brackets[0, s], brackets[1, s] = end_bracket(T, floor, largest)
            brackets[2, s] = 1.0 if largest else 0.0
            tridiagonal_bands(T, n, n, bands, s)
            one_by_one[s] = largest_eigenvalue(T, floor) if largest else smallest_eigenvalue(T, floor)
            eigs = np.linalg.eigvalsh(A)
            expected[s] = eigs[-1] if largest else eigs[0]
        end_eigenvalues(bands, n, m, brackets, out)
        assert np.array_equal(out, one_by_one)
        scale = np.array([np.abs(np.linalg.eigvalsh(A)).max() for A, _, _ in lanes])
        assert np.all(np.abs(out - expected) <= 1e-13 * scale)


def test_lower_triangles_finite_reads_every_lower_entry_and_no_upper_one():
    """``lower_triangles_finite``: a non-finite number anywhere in the lower
    triangle of any of the matrices side by side is found (every position
    tried), in a contiguous array and in a strided view (``kc.constant``'s);
    one above the diagonal, which the reductions never read, is not."""
    n, m = 5, 3
    for bad in (np.inf, -np.inf, np.nan):
        for r in range(n):
            for c in range(n):
                for s in range(m):
                    work = np.ones((n, n, m + 2))  # also as the first m of a longer row of lanes
                    work[r, c, s] = bad
                    assert lower_triangles_finite(np.ascontiguousarray(work[:, :, :m])) == (c > r)
                    assert lower_triangles_finite(work[:, :, :m]) == (c > r)
    assert lower_triangles_finite(np.ones((n, n, m)))

UNLIMITED_PRISMATIC = """<robot name="slider">
  <link name="base"/>
  <link name="carriage"><inertial><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <link name="arm"><inertial><origin xyz="0.3 0 0"/><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <joint name="slide" type="prismatic"><parent link="base"/><child link="carriage"/>
    <axis xyz="1 0 0"/></joint>
  <joint name="turn" type="continuous"><parent link="carriage"/><child link="arm"/>
    <axis xyz="0 0 1"/></joint>
</robot>"""


def test_unlimited_prismatic_has_no_global_constant():
    model = load_urdf(UNLIMITED_PRISMATIC)
    bounds = coriolis_bounds(model, [0.2, 0.3], [1.0, 1.0])
    assert bounds.kc_global == np.inf
    assert np.isfinite(bounds.kc_config) and bounds.kc_config > 0


@pytest.mark.parametrize("q, qd, needle", [
    ([0.0] * 5, [0.0] * 6, "q must have shape"),
    ([0.0] * 6, [0.0] * 5, "qd must have shape"),
    ([0.0, np.nan, 0, 0, 0, 0], [0.0] * 6, "joint2"),
    ([0.0] * 6, [0.0, 0, 0, np.inf, 0, 0], "joint4"),
])
def test_bad_input(q, qd, needle):
    model = load_urdf(ROBOTS["puma"])
    with pytest.raises(DynamicsError, match=needle):
        coriolis_bounds(model, q, qd)


@pytest.mark.slow
def test_mimic_reduced_batch_equals_per_sample():
    """A reduced model's Gamma and M reach the kernels with einsum's strides:
    the batch must still give each sample's bounds (it gave other samples'
    values before the arrays were made contiguous)."""
    model = load_urdf(ROBOTS["panda"], mimic="reduce")
    rng = np.random.default_rng(10)
    q = random_configurations(model, rng, 100, urdf=ROBOTS["panda"])
    qd = rng.normal(size=q.shape)
    batch = coriolis_bounds(model, q, qd)
    for i in range(0, 100, 9):
        one = coriolis_bounds(model, q[i], qd[i])
        assert rel_err(batch.kc_config[i], one.kc_config) < 1e-13
        assert rel_err(batch.coriolis_norm[i], one.coriolis_norm) < 1e-13

"""The certified norms of the large cores and of C (issue 21): the Lanczos
method's bound against LAPACK, the subspace certificate's bound from any
basis, and the tridiagonal eigenvalues it deflates against LAPACK."""
import numpy as np
import pytest

from robot_dynamics_ros.dynamics.bounds.coriolis_bounds import skew_symmetric
from robot_dynamics_ros.dynamics.bounds.eigen import next_eigenvalue_below
from robot_dynamics_ros.dynamics.bounds.lanczos import scratch_size, top_singular_value
from robot_dynamics_ros.dynamics.bounds.subspace import certified_bound, transposed


def _with_singular_values(rng, sigma):
    """A square matrix with the singular values ``sigma``, random singular vectors."""
    n = len(sigma)
    U, _ = np.linalg.qr(rng.standard_normal((n, n)))
    W, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return U @ np.diag(sigma) @ W.T


def _norm(G):
    G = np.ascontiguousarray(G)
    return top_singular_value(G, np.zeros(scratch_size(G.shape[0])))


# Spectra a certificate needs one, two and three Ritz vectors for: the top
# squared singular value above the rest of the trace; a near-double top pair;
# the rest beyond the top two above the top (talos' C at rest has 1.02 of it)
SPECTRA = {
    "one": lambda rng, n: np.concatenate(([10.0], rng.uniform(0, 1, n - 1))),
    "pair": lambda rng, n: np.concatenate(([10.0, 10.0 * (1 - 1e-3)], rng.uniform(0, 1, n - 2))),
    "three": lambda rng, n: np.sqrt(np.concatenate(([1.0, 0.61, 0.36, 0.26, 0.2, 0.13],
                                                    rng.uniform(0, 0.2 / n, n - 6)))),
}


@pytest.mark.parametrize("spectrum", sorted(SPECTRA))
@pytest.mark.parametrize("n", [30, 47, 61])
def test_lanczos_norm_is_an_upper_bound_within_1e13(spectrum, n):
    """top_singular_value: at least LAPACK's ||G||_2 and within 1e-13 of
    it, for spectra its certificate needs one, two and three vectors for."""
    rng = np.random.default_rng(n)
    for _ in range(3):
        G = _with_singular_values(rng, SPECTRA[spectrum](rng, n))
        value = _norm(G)
        exact = np.linalg.norm(G, 2)
        assert exact <= value <= exact * (1 + 1e-13), (value, exact)


def test_lanczos_norm_refuses_what_it_cannot_certify():
    """-1 for a flat spectrum (no top pair to certify: the caller reduces
    the Gram matrix), for a skew-symmetric G (every singular value twice, a
    Krylov space holds one of each pair: ``bounds.group_slice_norms`` keeps
    them from it), for NaN and for an overflowing square; 0 for G = 0."""
    rng = np.random.default_rng(3)
    flat = _with_singular_values(rng, np.ones(40))
    assert _norm(flat) == -1.0
    square = rng.standard_normal((36, 36))
    assert skew_symmetric(square - square.T) and not skew_symmetric(square)
    assert _norm(square - square.T) == -1.0
    bad = rng.standard_normal((35, 35))
    bad[4, 7] = np.nan
    assert _norm(bad) == -1.0
    assert _norm(1e200 * rng.standard_normal((35, 35))) == -1.0
    assert _norm(np.zeros((33, 33))) == 0.0


@pytest.mark.parametrize("p", [1, 2, 3])
def test_subspace_certificate_bounds_from_any_basis(p):
    """certified_bound's bound is at least lambda_max(G^T G) whatever the p
    vectors (module docstring of ``subspace``: no convergence assumed),
    and close to it only from near the top singular vectors."""
    rng = np.random.default_rng(p)
    n = 40
    G = _with_singular_values(rng, SPECTRA["three"](rng, n))
    GT = np.empty((n, n))
    frobenius = transposed(G, GT, np.empty(n))
    assert frobenius == pytest.approx(np.sum(G * G), rel=1e-14)
    top = np.linalg.norm(G, 2) ** 2
    for _ in range(20):
        bound, t = certified_bound(G, GT, rng.standard_normal((3, n)), p, np.empty((6, n)), frobenius)
        assert bound >= top and t <= bound
    _, _, Vt = np.linalg.svd(G)
    bound, t = certified_bound(G, GT, Vt[:3].copy(), 3, np.empty((6, n)), frobenius)
    assert top <= bound <= top * (1 + 1e-13) and bound - t <= 1e-13 * t


@pytest.mark.parametrize("m", [2, 3, 6, 12])
def test_next_eigenvalues_of_a_tridiagonal_match_lapack(m):
    """next_eigenvalue_below, from the largest down, against LAPACK's
    eigenvalues of random symmetric tridiagonal matrices."""
    rng = np.random.default_rng(m)
    for _ in range(20):
        T = np.diag(rng.uniform(0, 10, m)) + np.diag(rng.uniform(0.1, 3, m - 1), -1)
        T = T + np.tril(T, -1).T
        want = np.linalg.eigvalsh(T)[::-1]
        found = np.empty(min(m, 3))
        found[0] = want[0]
        for r in range(1, len(found)):
            found[r] = next_eigenvalue_below(T, found, r)
            assert found[r] == pytest.approx(want[r], abs=1e-12 * want[0]), (r, found, want)

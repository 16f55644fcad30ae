"""A certified largest singular value by subspace iteration, for the few
large slices of Gamma whose top singular pair stands far above the rest,
and the certificate that ``lanczos`` gives its Ritz vectors to.

For ``A = G^T G`` and an orthonormal n x p basis X (p = 2 here, 1 to 3
for the Ritz vectors of ``lanczos``): ``Y = G X``, ``T = Y^T Y = X^T A
X``, ``t = lambda_max(T)`` (Rayleigh-Ritz: ``t <= lambda_max(A)``; for p
= 3 the top of T's largest Gershgorin disc, T being diagonal but for
rounding for Ritz vectors), the residual ``R = A X - X T`` and ``mu =
trace(A) - trace(T)``, which bounds the largest eigenvalue of A on the
complement of X (A is positive semidefinite there). Written in the basis (X, its
complement), A is ``[[T, E^T], [E, A22]]`` with ``||E|| <= ||R||_F = e``,
so for any unit vector (a, b): ``a^T T a + 2 b^T E a + b^T A22 b <= t a^2 +
2 e a b + mu b^2``, and

    lambda_max(A) <= (t + mu) / 2 + sqrt(((t - mu) / 2)^2 + e^2)
                   = t + e^2 / (h + sqrt(h^2 + e^2)),   h = (t - mu) / 2,

for every X: no gap or convergence has to be assumed, the bound is merely
loose until X is close to the top pair (docs/tree_bounds.md, "The three
angular speeds"). The iteration ``X <- orth(A X)`` stops once the bound is within
``TOLERANCE`` of t; the numbers computed in floating point are widened by
allowances from the standard bounds on dot products (|fl(x . y) - x . y|
<= gamma_n |x| . |y|, Higham, "Accuracy and Stability of Numerical
Algorithms", 2nd ed. (2002), Sec. 3.1), so what is returned is an upper
bound of ``||G||_2`` with rounding included, within about 1e-14 of it.
Cost per step: four products with G (4 n^2 for a dense n x n G).
"""
import numpy as np
from numba import njit

_EPS = 2.220446049250313e-16
# stop when the certified bound on lambda_max exceeds the Ritz value by at most this, relatively
TOLERANCE = 1e-14
STEPS = 30


@njit(cache=True, nogil=True, inline="always")
def _ritz_top(t00, t01, t11):
    """The largest eigenvalue of the symmetric 2 x 2 [[t00, t01], [t01, t11]]."""
    h = 0.5 * (t00 - t11)
    return 0.5 * (t00 + t11) + np.sqrt(h * h + t01 * t01)


@njit(cache=True, nogil=True)
def _orthonormalize(X, p):
    """Gram-Schmidt, twice, on the first p rows of X (>= p, n); False when
    they do not span a space of dimension p (a G that maps them to zero)."""
    n = X.shape[1]
    for _ in range(2):
        for r in range(p):
            for u in range(r):
                dot = 0.0
                for i in range(n):
                    dot += X[u, i] * X[r, i]
                for i in range(n):
                    X[r, i] -= dot * X[u, i]
            norm = 0.0
            for i in range(n):
                norm += X[r, i] * X[r, i]
            if not norm > 0.0:
                return False
            inverse = 1.0 / np.sqrt(norm)
            for i in range(n):
                X[r, i] *= inverse
    return True


@njit(cache=True, nogil=True, inline="always")
def sum_of_rows(R, X, Y, p):
    """Y[:p] = X[:p] R for R (m, n) and X (>= p, >= m): the rows of R
    weighted by the first p rows of X, two rows of R per pass over Y (both
    vectors in one pass for p = 2), each sum in the order of the rows:
    vectorized, where dot products along R's columns wait on each other."""
    m, n = R.shape
    if p != 2:
        for v in range(p):
            Yv, Xv = Y[v], X[v]
            for i in range(n):
                Yv[i] = 0.0
            j = 0
            while j + 1 < m:
                a0, b0, r, s = Xv[j], Xv[j + 1], R[j], R[j + 1]
                for i in range(n):
                    Yv[i] = (Yv[i] + r[i] * a0) + s[i] * b0
                j += 2
            if j < m:
                a0, r = Xv[j], R[j]
                for i in range(n):
                    Yv[i] += r[i] * a0
        return
    Y0, Y1 = Y[0], Y[1]
    for i in range(n):
        Y0[i] = 0.0
        Y1[i] = 0.0
    j = 0
    while j + 1 < m:
        a0, a1, b0, b1 = X[0, j], X[1, j], X[0, j + 1], X[1, j + 1]
        r, s = R[j], R[j + 1]
        for i in range(n):
            Y0[i] = (Y0[i] + r[i] * a0) + s[i] * b0
            Y1[i] = (Y1[i] + r[i] * a1) + s[i] * b1
        j += 2
    if j < m:
        a0, a1, r = X[0, j], X[1, j], R[j]
        for i in range(n):
            Y0[i] += r[i] * a0
            Y1[i] += r[i] * a1


@njit(cache=True, nogil=True)
def transposed(G, GT, squares):
    """``GT = G^T`` (n, n) and ``||G||_F^2``, the trace of ``G^T G``;
    ``squares`` (n,) scratch, the squares of G's columns."""
    n = G.shape[0]
    for j in range(n):
        squares[j] = 0.0
    for i in range(n):
        for j in range(n):
            g = G[i, j]
            GT[j, i] = g
            squares[j] += g * g
    frobenius = 0.0
    for j in range(n):
        frobenius += squares[j]
    return frobenius


@njit(cache=True, nogil=True, inline="always")
def excess_over_ritz(t, mu, e):
    """What the bound of the module docstring adds to the Ritz value t for
    a residual of norm e and the rest of the trace mu: ``e^2 / (h +
    sqrt(h^2 + e^2))``, ``h = (t - mu) / 2``; inf when mu is not below t."""
    h = 0.5 * (t - mu)
    if h <= 0.0:
        return np.inf
    return e * e / (h + np.sqrt(h * h + e * e))


@njit(cache=True, nogil=True)
def certified_bound(G, GT, X, p, work, frobenius):
    """``(bound, t)``: an upper bound of ``lambda_max(G^T G)`` with rounding
    included, from the span of the first p (1 to 3) rows of ``X`` (>= p,
    n), orthonormalized in place (module docstring), and the Ritz value
    ``t`` with the allowance for its rounding; ``bound - t`` is what the
    subspace leaves unknown. ``(-1, 0)`` when the rows do not span a space
    of dimension p. ``GT = G^T`` and ``frobenius = ||G||_F^2``
    (``transposed``); ``work`` (>= 2 p, n) scratch: ``work[p:2 p]`` holds
    ``G^T G X`` after. Cost: 2 p n^2."""
    n = G.shape[0]
    if not _orthonormalize(X, p):
        return -1.0, 0.0
    Y, Z = work[0:p], work[p:2 * p]
    # Y = G X, Z = G^T Y = A X (rows of Y, Z: the vectors)
    sum_of_rows(GT, X, Y, p)
    sum_of_rows(G, Y, Z, p)
    # T = Y^T Y, its lower triangle
    t00 = t10 = t11 = t20 = t21 = t22 = y1 = 0.0
    for i in range(n):
        y0 = Y[0, i]
        t00 += y0 * y0
        if p > 1:
            y1 = Y[1, i]
            t10 += y0 * y1
            t11 += y1 * y1
        if p > 2:
            y2 = Y[2, i]
            t20 += y0 * y2
            t21 += y1 * y2
            t22 += y2 * y2
    residual = 0.0  # ||Z - X T||_F^2
    for j in range(n):
        r0 = Z[0, j] - X[0, j] * t00
        if p == 1:
            residual += r0 * r0
            continue
        r0 -= X[1, j] * t10
        r1 = Z[1, j] - X[0, j] * t10 - X[1, j] * t11
        if p == 2:
            residual += r0 * r0 + r1 * r1
            continue
        r0 -= X[2, j] * t20
        r1 -= X[2, j] * t21
        r2 = Z[2, j] - X[0, j] * t20 - X[1, j] * t21 - X[2, j] * t22
        residual += r0 * r0 + r1 * r1 + r2 * r2
    trace = t00 + t11 + t22
    if p == 1:
        top = t00
    elif p == 2:
        top = _ritz_top(t00, t10, t11)
    else:  # the largest Gershgorin disc: T is diagonal but for rounding
        top = max(t00 + abs(t10) + abs(t20), t11 + abs(t10) + abs(t21), t22 + abs(t20) + abs(t21))
    # allowances: gamma_n for the sums of n products (each of the p entries of a
    # Gershgorin disc for p = 3), and for X orthonormal to rounding
    slack = (n + 8) * _EPS
    t = top + (p if p > 2 else 1) * slack * trace
    e = np.sqrt(residual) + 2.0 * slack * trace
    mu = max(0.0, frobenius - trace) + (n * n + 2 * n + 8) * _EPS * frobenius
    excess = excess_over_ritz(t, mu, e)
    if np.isfinite(excess):
        bound = t + excess
    else:
        h = 0.5 * (t - mu)
        bound = 0.5 * (t + mu) + np.sqrt(h * h + e * e)
    return bound * (1.0 + 8.0 * _EPS), t


@njit(cache=True, nogil=True, inline="always")
def certified_norm(bound):
    """``||G||_2 <= certified_norm(bound)`` for ``bound`` from
    ``certified_bound``: its square root, widened for its rounding."""
    return np.sqrt(bound) * (1.0 + 4.0 * _EPS)


@njit(cache=True, nogil=True)
def certified_top_singular_value(G, X, work):
    """An upper bound of ``||G||_2`` within about 1e-14 of it (module
    docstring), for G (n, n) of any strides, or -1 when ``STEPS`` steps did
    not certify one (no pair standing out: the caller computes the norm
    another way).

    ``X`` (2, n): the start, two vectors spanning a plane near the top
    right singular pair, overwritten; ``work`` (4 + n, n) scratch, its last
    n rows for G's transpose, so that both products with G run along rows
    (``G X`` as sums of G's columns: vectorized, where dot products along
    G's rows wait on each other).
    """
    n = G.shape[0]
    GT = work[4:4 + n]
    frobenius = transposed(G, GT, work[2])
    if frobenius == 0.0:
        return 0.0
    for _ in range(STEPS):
        # not the literal 2 (CONTRIBUTING.md, "Kernels")
        bound, t = certified_bound(G, GT, X, np.int64(2), work, frobenius)
        if bound < 0.0:
            return -1.0
        if bound - t <= TOLERANCE * t:
            return certified_norm(bound)
        for r in range(2):  # X <- A X
            for j in range(n):
                X[r, j] = work[2 + r, j]
    return -1.0

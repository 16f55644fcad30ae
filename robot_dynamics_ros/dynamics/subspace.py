"""A certified largest singular value by subspace iteration, for the few
large slices of Gamma whose top singular pair stands far above the rest.

For ``A = G^T G`` and an orthonormal n x 2 basis X: ``Y = G X``,
``T = Y^T Y = X^T A X``, ``t = lambda_max(T)`` (Rayleigh-Ritz: ``t <=
lambda_max(A)``), the residual ``R = A X - X T`` and ``mu = trace(A) -
trace(T)``, which bounds the largest eigenvalue of A on the complement of
X (A is positive semidefinite there). Written in the basis (X, its
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
def _orthonormalize(X):
    """Gram-Schmidt, twice, on the two rows of X (2, n); False when they
    do not span a plane (a G that maps them to zero)."""
    n = X.shape[1]
    for _ in range(2):
        for r in range(2):
            if r == 1:
                dot = 0.0
                for i in range(n):
                    dot += X[0, i] * X[1, i]
                for i in range(n):
                    X[1, i] -= dot * X[0, i]
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
def _sum_of_rows(R, X, Y):
    """Y (2, n) = X R for R (n, n) and X (2, n): the rows of R weighted by
    both rows of X, two rows of R per pass over Y, each sum in the order of
    the rows."""
    n = R.shape[0]
    Y0, Y1 = Y[0], Y[1]
    for i in range(n):
        Y0[i] = 0.0
        Y1[i] = 0.0
    j = 0
    while j + 1 < n:
        a0, a1, b0, b1 = X[0, j], X[1, j], X[0, j + 1], X[1, j + 1]
        r, s = R[j], R[j + 1]
        for i in range(n):
            Y0[i] = (Y0[i] + r[i] * a0) + s[i] * b0
            Y1[i] = (Y1[i] + r[i] * a1) + s[i] * b1
        j += 2
    if j < n:
        a0, a1, r = X[0, j], X[1, j], R[j]
        for i in range(n):
            Y0[i] += r[i] * a0
            Y1[i] += r[i] * a1


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
    Y, Z, GT = work[0:2], work[2:4], work[4:4 + n]
    squares = Z[0]  # the squares of G's columns, before the iteration needs Z
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
    if frobenius == 0.0:
        return 0.0
    if not _orthonormalize(X):
        return -1.0
    for _ in range(STEPS):
        # Y = G X, Z = G^T Y = A X (rows of Y, Z: the two vectors), both
        # vectors in one pass over G
        _sum_of_rows(GT, X, Y)
        _sum_of_rows(G, Y, Z)
        t00 = t01 = t11 = 0.0
        for i in range(n):
            t00 += Y[0, i] * Y[0, i]
            t01 += Y[0, i] * Y[1, i]
            t11 += Y[1, i] * Y[1, i]
        trace = t00 + t11
        residual = 0.0
        for j in range(n):
            r0 = Z[0, j] - X[0, j] * t00 - X[1, j] * t01
            r1 = Z[1, j] - X[0, j] * t01 - X[1, j] * t11
            residual += r0 * r0 + r1 * r1
        # allowances: gamma_n for the sums of n products, and for X orthonormal to rounding
        slack = (n + 8) * _EPS
        t = _ritz_top(t00, t01, t11) + slack * trace
        e = np.sqrt(residual) + 2.0 * slack * trace
        mu = max(0.0, frobenius - trace) + (n * n + 2 * n + 8) * _EPS * frobenius
        h = 0.5 * (t - mu)
        if h > 0.0:
            bound = t + e * e / (h + np.sqrt(h * h + e * e))
        else:
            bound = 0.5 * (t + mu) + np.sqrt(h * h + e * e)
        bound *= 1.0 + 8.0 * _EPS
        if bound - t <= TOLERANCE * t:
            return np.sqrt(bound) * (1.0 + 4.0 * _EPS)
        for r in range(2):
            for j in range(n):
                X[r, j] = Z[r, j]
        if not _orthonormalize(X):
            return -1.0
    return -1.0

"""A certified largest singular value by the Lanczos method, for the large
cores and slices of Gamma and for C (``bounds.LANCZOS_FROM``).

The Lanczos recurrence on ``A = G^T G`` (Golub and Van Loan, "Matrix
Computations", 4th ed. (2013), Alg. 10.1.1), each new vector orthogonalized
against all the earlier ones, builds an orthonormal basis Q_j of the
Krylov space of a start vector and the tridiagonal ``T_j = Q_j^T A Q_j``.
The largest eigenvalues of T_j approach A's from below in a few steps when
the largest stands apart from the rest (Kaniel-Paige-Saad theory, ibid.
Sec. 10.1.5): 4-11 steps, mostly 5-7, on the cores and C of the random
tree of 60 joints, of humanoids with five-finger hands, of talos and G1.
Once the Lanczos
residuals foretell it (``_certify``), the Ritz vectors of T_j's largest
one, two or three eigenvalues go to ``subspace.certified_bound``, which
bounds ``lambda_max(A)`` from above with rounding included, whatever the
Lanczos vectors' own rounding did: the value returned is an upper bound
of ``||G||_2`` within about 1e-14 of it (up to 6e-14 when the trace
beyond the top eigenvalue, which the allowances for rounding grow with,
is large), as the subspace iteration's (docs/tree_bounds.md, "The large
cores and C").

Cost: ``2 c^2 + 4 j c`` for step j of G (c, c), and ``2 p c^2`` for a
certificate of p vectors: about ``14 c^2`` where the Gram matrix and its
reduction to tridiagonal form (``eigen.tridiagonalize_one``) cost
``1.5 c^3``.
"""
import numpy as np
from numba import njit

from .eigen import largest_eigenvalue_within, next_eigenvalue_below
from .subspace import (TOLERANCE, certified_bound, certified_norm, excess_over_ritz, sum_of_rows,
                       transposed)

_EPS = 2.220446049250313e-16
# Steps before giving up (the caller reduces the Gram matrix instead)
STEPS = 16
# No certificate is tried before this step: it costs as much as a few steps, and the
# first steps' Ritz vectors are too rough to pass it
FIRST_TEST = 3
# Ritz vectors a certificate may take (``subspace.certified_bound``)
RITZ = 3


def scratch_size(c):
    """The scratch ``top_singular_value`` needs for G (c, c)."""
    return c * c + (STEPS + 17) * c + (STEPS + 1) * (STEPS + 1)


@njit(cache=True, nogil=True, inline="always")
def _dot(x, y):
    """x . y in four running sums: one sum waits on each product before
    it, four do not wait on each other."""
    n = x.shape[0]
    s0 = s1 = s2 = s3 = 0.0
    i = 0
    while i + 3 < n:
        s0 += x[i] * y[i]
        s1 += x[i + 1] * y[i + 1]
        s2 += x[i + 2] * y[i + 2]
        s3 += x[i + 3] * y[i + 3]
        i += 4
    while i < n:
        s0 += x[i] * y[i]
        i += 1
    return (s0 + s1) + (s2 + s3)


@njit(cache=True, nogil=True)
def _eigenvector(T, theta, pivots, s):
    """The last entry of the unit eigenvector s of the tridiagonal T (m, m)
    for its eigenvalue theta, s into ``s[:m]``: from the twisted
    factorization of T - theta I (the entries above the twist from its
    LDL^T pivots, those below from its UDU^T pivots, twisted where the two
    meet best; Parlett and Dhillon, "Fernando's solution to Wilkinson's
    problem", Linear Algebra Appl. 267 (1997)), accurate where running one
    recurrence through all the entries is not. ``pivots`` (2, >= m)
    scratch. Cost: 8 m."""
    m = T.shape[0]
    down, up = pivots[0], pivots[1]
    tiny = _EPS * (abs(theta) + 1e-300)
    for i in range(m):  # the pivots of L D L^T, from the top
        d = T[i, i] - theta
        if i > 0:
            d -= T[i, i - 1] * T[i, i - 1] / down[i - 1]
        down[i] = d if d != 0.0 else tiny
    for i in range(m - 1, -1, -1):  # the pivots of U D U^T, from the bottom
        d = T[i, i] - theta
        if i < m - 1:
            d -= T[i + 1, i] * T[i + 1, i] / up[i + 1]
        up[i] = d if d != 0.0 else tiny
    twist, least = 0, np.inf
    for i in range(m):
        gamma = abs(down[i] + up[i] - (T[i, i] - theta))
        if gamma < least:
            twist, least = i, gamma
    s[twist] = 1.0
    for i in range(twist - 1, -1, -1):
        s[i] = -T[i + 1, i] * s[i + 1] / down[i]
    for i in range(twist + 1, m):
        s[i] = -T[i, i - 1] * s[i - 1] / up[i]
    norm = 0.0
    for i in range(m):
        norm += s[i] * s[i]
    inverse = 1.0 / np.sqrt(norm)
    for i in range(m):
        s[i] *= inverse
    return s[m - 1]


@njit(cache=True, nogil=True)
def _certify(G, GT, frobenius, T, theta, beta, Q, X, work, small, found):
    """An upper bound of ``lambda_max(G^T G)`` within ``TOLERANCE`` of the
    Ritz value (``subspace.certified_bound``) from the Ritz vectors of the
    Lanczos tridiagonal T (m, m) for its largest eigenvalue ``theta``, and
    for its next one or two when the rest of the trace is too large for
    fewer; -1 when the Lanczos residuals, ``beta`` times the last entries
    of their coordinates (Golub and Van Loan, ibid., Sec. 10.1.4), foretell
    that none would be certified yet: the certificate costs as much as a
    Lanczos step or two. ``small`` (5, >= m), ``work`` (6, n) and ``found``
    (>= min(m, RITZ)) scratch."""
    m = T.shape[0]
    pivots, S = small[0:2], small[2:5]
    aim = 0.25 * TOLERANCE * theta  # room for the allowances for rounding
    rest, squares, p = frobenius, 0.0, 0
    for r in range(min(RITZ, m)):
        value = theta if r == 0 else next_eigenvalue_below(T, found, r)
        if not np.isfinite(value):
            break
        found[r] = value
        last = beta * _eigenvector(T, value, pivots, S[r])
        rest -= value
        squares += last * last
        excess = excess_over_ritz(theta, rest, np.sqrt(squares))
        if excess <= aim:
            p = r + 1
            break
        if rest < 0.8 * theta:  # a further vector would cost more than the steps to wait
            break
    if p == 0:
        return -1.0
    sum_of_rows(Q[:m], S, X, p)  # the Ritz vectors, rows of X
    bound, t = certified_bound(G, GT, X, p, work, frobenius)
    if bound >= 0.0 and bound - t <= TOLERANCE * t:
        return bound
    return -1.0


@njit(cache=True, nogil=True)
def top_singular_value(G, scratch):
    """An upper bound of ``||G||_2`` within about 1e-14 of it (module
    docstring), for G (c, c) C-contiguous, or -1 when ``STEPS`` steps did
    not certify one (the caller computes the norm another way); NaN
    becomes -1 too. ``scratch``: flat, ``scratch_size(c)`` long.

    Started from G's row of largest norm, ``G^T e_i``, in the range of
    ``G^T`` where the top right singular vector lies. Each step's products
    with G run along rows (``subspace.sum_of_rows``), one of them on G's
    transpose.
    """
    c = G.shape[0]
    rows = STEPS + 1
    GT = scratch[:c * c].reshape((c, c))
    Q = scratch[c * c:c * c + rows * c].reshape((rows, c))
    at = c * c + rows * c
    work = scratch[at:at + 6 * c].reshape((6, c))
    X = scratch[at + 6 * c:at + 9 * c].reshape((3, c))
    zw = scratch[at + 9 * c:at + 11 * c].reshape((2, c))
    z, w = zw[0], zw[1]
    small = scratch[at + 11 * c:at + 16 * c].reshape((5, c))
    at += 16 * c
    T = scratch[at:at + rows * rows].reshape((rows, rows))
    frobenius = transposed(G, GT, z)
    if frobenius == 0.0:
        return 0.0
    if not np.isfinite(frobenius):
        return -1.0
    for i in range(c):  # the squares of G's rows, along GT's rows
        w[i] = 0.0
    for r in range(c):
        row = GT[r]
        for i in range(c):
            w[i] += row[i] * row[i]
    best, norm = -1, 0.0
    for i in range(c):
        if w[i] > norm:
            best, norm = i, w[i]
    inverse = 1.0 / np.sqrt(norm)
    for j in range(c):
        Q[0, j] = G[best, j] * inverse
    previous, beta = 0.0, 0.0
    for j in range(min(STEPS, c)):
        q = Q[j]
        sum_of_rows(GT, Q[j:], zw, 1)  # z = G q
        sum_of_rows(G, zw, zw[1:], 1)  # w = G^T z = A q
        alpha = _dot(z, z)
        last = Q[j - 1] if j > 0 else q  # beta is 0 at j = 0
        for i in range(c):
            w[i] -= alpha * q[i] + beta * last[i]
        for r in range(j + 1):  # against every earlier vector (modified Gram-Schmidt)
            d = _dot(Q[r], w)
            row = Q[r]
            for i in range(c):
                w[i] -= d * row[i]
        # T_j's largest eigenvalue lies between T_(j-1)'s (interlacing) and, by
        # Weyl's inequality, the larger of that and alpha plus the last beta
        top = max(previous, alpha) + beta
        T[j, j] = alpha
        beta = np.sqrt(_dot(w, w))
        if j == 0:
            theta = alpha
        else:
            widen = 4.0 * _EPS * top
            theta = largest_eigenvalue_within(T[:j + 1, :j + 1], previous - widen, top + widen)
        bound = -1.0
        if j >= FIRST_TEST or beta <= _EPS * theta:
            bound = _certify(G, GT, frobenius, T[:j + 1, :j + 1], theta, beta, Q, X, work, small, z)
        if bound >= 0.0:
            return certified_norm(bound)
        if beta <= _EPS * theta:
            return -1.0  # an invariant subspace, no further step, and not certified
        previous = theta
        if j + 1 < rows:
            T[j + 1, j] = T[j, j + 1] = beta
            inverse = 1.0 / beta
            for i in range(c):
                Q[j + 1, i] = w[i] * inverse
    return -1.0

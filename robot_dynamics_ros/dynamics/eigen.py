"""Extreme eigenvalues of small symmetric matrices, for the Coriolis bounds.

LAPACK through numpy costs 15-20 us per 9 x 9 matrix here, mostly call
overhead, and the bounds need n + 2 of them per sample. Only the smallest and
largest eigenvalue are wanted, so: Householder reduction to tridiagonal form,
then Newton's method on the characteristic polynomial from the outside of the
spectrum, kept in a Sturm-count bracket (Golub and Van Loan, "Matrix
Computations", 4th ed., Sec. 8.3.1 and 8.4.1). The reduction is backward
stable and the bracket is exact: the results are good to about 1e-15 ||A||.
"""
import numpy as np
from numba import njit

from .finite import all_finite

_EPS = 2.220446049250313e-16


@njit(cache=True, nogil=True)
def _tridiagonalize(work):
    """Householder reduction in place: work ends with the tridiagonal T.

    Reads and updates the lower triangle only (A is symmetric, and the
    update below is its dominant cost). The diagonal of T is work's
    diagonal, its off-diagonal work[k + 1, k]. Each step applies
    H = I - 2 v v^T to both sides of the trailing block as
    ``A - 2 (v w^T + w v^T)`` with ``w = A v - (v^T A v) v``. Cost: 2/3 n^3.
    """
    n = work.shape[0]
    for k in range(n - 2):
        squares = 0.0
        for i in range(k + 1, n):
            squares += work[i, k] * work[i, k]
        if squares == 0.0:
            continue
        norm = np.sqrt(squares)
        alpha = -norm if work[k + 1, k] > 0.0 else norm
        # v = (x - alpha e_1) / ||x - alpha e_1||, kept in column k below the
        # subdiagonal; ||x - alpha e_1||^2 = 2 (||x||^2 - alpha x_1), a sum of
        # two positive terms by the sign of alpha: no second pass over x
        inverse = 1.0 / np.sqrt(2.0 * (squares - alpha * work[k + 1, k]))
        work[k + 1, k] -= alpha
        for i in range(k + 1, n):
            work[i, k] *= inverse
        # p = A22 v in row k (free: the upper triangle is never read)
        for i in range(k + 1, n):
            work[k, i] = 0.0
        for i in range(k + 1, n):
            vi = work[i, k]
            acc = work[i, i] * vi
            for j in range(k + 1, i):
                aij = work[i, j]
                acc += aij * work[j, k]
                work[k, j] += aij * vi
            work[k, i] += acc
        vav = 0.0
        for i in range(k + 1, n):
            vav += work[i, k] * work[k, i]
        for i in range(k + 1, n):
            work[k, i] -= vav * work[i, k]  # w = p - (v^T p) v
        for i in range(k + 1, n):
            vi, wi = work[i, k], work[k, i]
            for j in range(k + 1, i + 1):
                work[i, j] -= 2.0 * (vi * work[k, j] + wi * work[j, k])
        work[k + 1, k] = alpha


@njit(cache=True, nogil=True)
def _end_eigenvalue(work, lo, hi, rank):
    """The eigenvalue of T with ``rank`` smaller ones (0 or n - 1), in [lo, hi].

    Laguerre's method on p(x) = det(T - x I), started at the end of the
    interval beyond the wanted eigenvalue: with only real roots it converges
    monotonically from there, cubically near a simple root (Wilkinson, "The
    Algebraic Eigenvalue Problem", 1965, Sec. 7.10; Newton's method needs
    about n log(distance) steps from far away). The pivots d_i of the
    LDL^T factorization of T - x I give p'/p = sum d_i'/d_i and
    -(p'/p)' = sum (d_i'/d_i)^2 - d_i''/d_i through the recurrence
    d_i = a_i - x - e_i^2 / d_{i-1}, and the Sturm count (how many
    eigenvalues lie below x, the negative pivots), which keeps [lo, hi] a
    bracket; a step leaving the bracket is replaced by bisection (Golub and
    Van Loan, "Matrix Computations", Sec. 8.4.1). About 3-5 steps of O(n).
    """
    n = work.shape[0]
    x = hi if rank == n - 1 else lo
    for _ in range(200):
        count = 0
        g = 0.0  # p'(x) / p(x)
        h = 0.0  # -(p'/p)'(x)
        pivot = 1.0
        u = 0.0  # d'/d and d''/d of the previous pivot
        w = 0.0
        for i in range(n):
            if i == 0:
                new_pivot = work[0, 0] - x
                slope = -1.0
                curve = 0.0
            else:
                # (e^2 / d) first: d * d can underflow to zero
                r = work[i, i - 1] * work[i, i - 1] / pivot
                new_pivot = work[i, i] - x - r
                slope = -1.0 + r * u
                curve = r * (w - 2.0 * u * u)
            if new_pivot == 0.0:
                new_pivot = -_EPS * (abs(x) + 1e-300)
            pivot = new_pivot
            u = slope / pivot
            w = curve / pivot
            g += u
            h += u * u - w
            if pivot < 0.0:
                count += 1
        if count > rank:
            hi = min(hi, x)
        else:
            lo = max(lo, x)
        if hi - lo <= 2.0 * _EPS * max(abs(lo), abs(hi)):
            break
        root = np.sqrt(max(0.0, (n - 1) * (n * h - g * g)))
        denominator = g + root if g >= 0.0 else g - root
        step = n / denominator if denominator != 0.0 else 0.0
        if step != 0.0 and abs(step) <= 2.0 * _EPS * abs(x):
            break  # converged: the next iterate would round back onto x
        x -= step
        if not (lo < x < hi) or step == 0.0:
            x = 0.5 * (lo + hi)
    return x


@njit(cache=True, nogil=True)
def _tridiagonal_interval(A, work):
    """Copy A into work, reduce it to tridiagonal form, return strict bounds
    (lo, hi) on its spectrum: the Gershgorin interval, slightly widened."""
    n = A.shape[0]
    for r in range(n):
        for c in range(r + 1):
            work[r, c] = A[r, c]
    _tridiagonalize(work)
    lo = np.inf
    hi = -np.inf
    for i in range(n):
        radius = 0.0
        if i > 0:
            radius += abs(work[i, i - 1])
        if i < n - 1:
            radius += abs(work[i + 1, i])
        lo = min(lo, work[i, i] - radius)
        hi = max(hi, work[i, i] + radius)
    pad = 4.0 * _EPS * max(abs(lo), abs(hi)) + 1e-300
    return lo - pad, hi + pad


@njit(cache=True, nogil=True)
def symmetric_eigen_extremes(A, work):
    """(smallest, largest) eigenvalue of the symmetric A (n, n).

    ``work`` (n, n) is overwritten. Cost: 4/3 n^3 for the reduction and
    a few O(n) Newton steps per end.
    """
    n = A.shape[0]
    if n == 0:
        return 0.0, 0.0
    lo, hi = _tridiagonal_interval(A, work)
    return _end_eigenvalue(work, lo, hi, 0), _end_eigenvalue(work, lo, hi, n - 1)


@njit(cache=True, nogil=True)
def largest_singular_value(A, gram, work):
    """||A||_2 = sqrt(largest eigenvalue of A^T A); gram and work (n, n).

    Through the Gram matrix, so norms below ~1e-154 underflow to 0 (no
    robot's Coriolis terms are that small) and above ~1e154 give NaN.
    """
    n = A.shape[0]
    if n == 0:
        return 0.0
    for r in range(n):
        for c in range(r, n):
            acc = 0.0
            for k in range(n):
                acc += A[k, r] * A[k, c]
            gram[r, c] = acc
            gram[c, r] = acc
    return np.sqrt(largest_eigenvalue_of_gram(gram, work))


@njit(cache=True, nogil=True)
def largest_eigenvalue_of_gram(gram, work):
    """The largest eigenvalue of a Gram matrix A^T A (n, n), >= 0; NaN when
    it holds an overflow. ``work`` (n, n) is overwritten."""
    if not all_finite(gram):
        return np.nan  # A too large to square: an overflow, not a norm
    lo, hi = _tridiagonal_interval(gram, work)
    return max(0.0, _end_eigenvalue(work, max(lo, 0.0), hi, gram.shape[0] - 1))

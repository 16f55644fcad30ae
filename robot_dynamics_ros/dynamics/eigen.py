"""Extreme eigenvalues of small symmetric matrices, for the Coriolis bounds.

LAPACK through numpy costs 15-20 us per 9 x 9 matrix here, mostly call
overhead, and the bounds need n + 2 of them per sample. Only the smallest and
largest eigenvalue are wanted, so: Householder reduction to tridiagonal form,
then bisection on Sturm sequence counts for the two ends of the spectrum
(Golub and Van Loan, "Matrix Computations", 4th ed., Sec. 8.3.1 and 8.4.1).
Both steps are backward stable: the results are exact to about 1e-15 ||A||.
"""
import numpy as np
from numba import njit

_EPS = 2.220446049250313e-16


@njit(cache=True, nogil=True)
def _tridiagonalize(work):
    """Householder reduction in place: work ends with the tridiagonal T.

    The diagonal of T is work's diagonal, its off-diagonal work[k + 1, k].
    Each step applies H = I - 2 v v^T to both sides of the trailing block as
    ``A - 2 (v w^T + w v^T)`` with ``w = A v - (v^T A v) v``. Cost: 4/3 n^3.
    """
    n = work.shape[0]
    for k in range(n - 2):
        norm = 0.0
        for i in range(k + 1, n):
            norm += work[i, k] * work[i, k]
        norm = np.sqrt(norm)
        if norm == 0.0:
            continue
        alpha = -norm if work[k + 1, k] > 0.0 else norm
        # v = x - alpha e_1, kept in column k below the subdiagonal
        work[k + 1, k] -= alpha
        vnorm = 0.0
        for i in range(k + 1, n):
            vnorm += work[i, k] * work[i, k]
        vnorm = np.sqrt(vnorm)
        for i in range(k + 1, n):
            work[i, k] /= vnorm
        # p = A22 v in row k (free: the upper triangle is never read again)
        vav = 0.0
        for i in range(k + 1, n):
            acc = 0.0
            for j in range(k + 1, n):
                acc += work[i, j] * work[j, k]
            work[k, i] = acc
            vav += work[i, k] * acc
        for i in range(k + 1, n):
            work[k, i] -= vav * work[i, k]  # w = p - (v^T p) v
        for i in range(k + 1, n):
            for j in range(k + 1, n):
                work[i, j] -= 2.0 * (work[i, k] * work[k, j] + work[k, i] * work[j, k])
        work[k + 1, k] = alpha


@njit(cache=True, nogil=True)
def _count_below(work, x):
    """Number of eigenvalues of the tridiagonal T below x (Sturm sequence)."""
    n = work.shape[0]
    count = 0
    d = work[0, 0] - x
    for i in range(n):
        if i > 0:
            e = work[i, i - 1]
            d = work[i, i] - x - e * e / d
        if d == 0.0:
            d = -_EPS * (abs(x) + 1e-300)
        if d < 0.0:
            count += 1
    return count


@njit(cache=True, nogil=True)
def _bisect(work, lo, hi, rank):
    """The eigenvalue of T with ``rank`` smaller ones, within [lo, hi]."""
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if hi - lo <= 2.0 * _EPS * max(abs(lo), abs(hi)) or mid == lo or mid == hi:
            break
        if _count_below(work, mid) > rank:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


@njit(cache=True, nogil=True)
def _tridiagonal_interval(A, work):
    """Copy A into work, reduce it to tridiagonal form, return strict bounds
    (lo, hi) on its spectrum: the Gershgorin interval, slightly widened."""
    n = A.shape[0]
    for r in range(n):
        for c in range(n):
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
    O(n) per bisection step, about 60 steps per eigenvalue.
    """
    n = A.shape[0]
    if n == 0:
        return 0.0, 0.0
    lo, hi = _tridiagonal_interval(A, work)
    return _bisect(work, lo, hi, 0), _bisect(work, lo, hi, n - 1)


@njit(cache=True, nogil=True)
def largest_singular_value(A, gram, work):
    """||A||_2 = sqrt(largest eigenvalue of A^T A); gram and work (n, n)."""
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
    lo, hi = _tridiagonal_interval(gram, work)
    return np.sqrt(max(0.0, _bisect(work, max(lo, 0.0), hi, n - 1)))

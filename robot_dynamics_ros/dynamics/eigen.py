"""Extreme eigenvalues of small symmetric matrices, for the Coriolis bounds.

LAPACK through numpy costs 15-20 us per 9 x 9 matrix here, mostly call
overhead, and the bounds need n + 2 of them per sample; the cyclic Jacobi
method in numba does one in a few microseconds and is accurate to machine
precision relative to ||A|| (Golub and Van Loan, "Matrix Computations",
4th ed., Sec. 8.5.2, Algorithm 8.5.3).
"""
import numpy as np
from numba import njit

_MAX_SWEEPS = 60


@njit(cache=True, nogil=True)
def symmetric_eigen_extremes(A, work):
    """(smallest, largest) eigenvalue of the symmetric A (n, n).

    ``work`` (n, n) is overwritten. Cyclic Jacobi: each rotation zeroes one
    off-diagonal pair; sweeps stop when the off-diagonal part is below
    1e-15 of the Frobenius norm (rounding keeps it near 1e-16), so by Weyl's
    inequality the diagonal holds the eigenvalues to 1e-15 ||A||. Cost:
    O(n^3) per sweep, and the convergence is quadratic: a handful of sweeps.
    """
    n = A.shape[0]
    if n == 0:
        return 0.0, 0.0
    total = 0.0
    for r in range(n):
        for c in range(n):
            work[r, c] = A[r, c]
            total += A[r, c] * A[r, c]
    for _ in range(_MAX_SWEEPS):
        off = 0.0
        for p in range(n):
            for q in range(p + 1, n):
                off += work[p, q] * work[p, q]
        if off <= 1e-30 * total:
            break
        for p in range(n - 1):
            for q in range(p + 1, n):
                apq = work[p, q]
                if apq == 0.0:
                    continue
                theta = (work[q, q] - work[p, p]) / (2.0 * apq)
                t = 1.0 / (abs(theta) + np.sqrt(theta * theta + 1.0))
                if theta < 0.0:
                    t = -t
                c = 1.0 / np.sqrt(t * t + 1.0)
                s = t * c
                for k in range(n):  # columns p, q
                    akp = work[k, p]
                    akq = work[k, q]
                    work[k, p] = c * akp - s * akq
                    work[k, q] = s * akp + c * akq
                for k in range(n):  # rows p, q
                    apk = work[p, k]
                    aqk = work[q, k]
                    work[p, k] = c * apk - s * aqk
                    work[q, k] = s * apk + c * aqk
    low = work[0, 0]
    high = work[0, 0]
    for k in range(1, n):
        low = min(low, work[k, k])
        high = max(high, work[k, k])
    return low, high


@njit(cache=True, nogil=True)
def largest_singular_value(A, gram, work):
    """||A||_2 = sqrt(largest eigenvalue of A^T A); gram and work (n, n)."""
    n = A.shape[0]
    for r in range(n):
        for c in range(r, n):
            acc = 0.0
            for k in range(n):
                acc += A[k, r] * A[k, c]
            gram[r, c] = acc
            gram[c, r] = acc
    return np.sqrt(max(0.0, symmetric_eigen_extremes(gram, work)[1]))

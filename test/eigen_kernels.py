"""One matrix at a time through the eigenvalue kernels of
``robot_dynamics_ros.dynamics.eigen``, which the bounds run on n + 2
matrices in lockstep: what ``test_bounds`` checks against numpy's LAPACK."""
import numpy as np
from numba import njit

from robot_dynamics_ros.dynamics.eigen import (
    largest_eigenvalue, lower_triangles_finite, smallest_eigenvalue, tridiagonalize)


@njit(cache=True, nogil=True)
def _reduce_one(A, work):
    """Copy the lower triangle of A into work (n, n) and reduce it to
    tridiagonal form there."""
    n = A.shape[0]
    for r in range(n):
        for c in range(r + 1):
            work[r, c] = A[r, c]
    tridiagonalize(work.reshape((n, n, 1)))


@njit(cache=True, nogil=True)
def symmetric_eigen_extremes(A, work):
    """(smallest, largest) eigenvalue of the symmetric A (n, n).

    ``work`` (n, n) is overwritten. Cost: 2/3 n^3 for the reduction and
    a few O(n) Laguerre steps per end.
    """
    if A.shape[0] == 0:
        return 0.0, 0.0
    _reduce_one(A, work)
    return smallest_eigenvalue(work), largest_eigenvalue(work, -np.inf)


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
        for c in range(r + 1):
            acc = 0.0
            for k in range(n):
                acc += A[k, r] * A[k, c]
            gram[r, c] = acc
    if not lower_triangles_finite(gram.reshape((n, n, 1))):
        return np.nan  # A too large to square: an overflow, not a norm
    _reduce_one(gram, work)
    return np.sqrt(max(0.0, largest_eigenvalue(work, 0.0)))

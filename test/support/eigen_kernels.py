"""One matrix at a time through the eigenvalue kernels of
``robot_dynamics_ros.dynamics.bounds.eigen``, which the bounds run on n + 2
matrices in lockstep: what ``test_bounds`` checks against numpy's LAPACK."""
import numpy as np
from numba import njit

from robot_dynamics_ros.dynamics.bounds.eigen import _reduce_one, largest_eigenvalue, smallest_eigenvalue


@njit(cache=True, nogil=True)
def symmetric_eigen_extremes(A, work, floor):
    """(smallest, largest) eigenvalue of the symmetric A (n, n), the
    smallest searched from ``floor`` when none lies below it.

    ``work`` (n, n) is overwritten. Cost: 2/3 n^3 for the reduction and
    a few O(n) Laguerre steps per end.
    """
    if A.shape[0] == 0:
        return 0.0, 0.0
    _reduce_one(A, work)
    return smallest_eigenvalue(work, floor), largest_eigenvalue(work, -np.inf)

"""The compiled kernels' check that nothing non-finite goes in or comes out.

A kernel checks a sample's inputs before it and its outputs after it, and
returns the first sample that failed (``state.raise_failure`` says why):
values still in the cache, so the check costs a few nanoseconds, and an
overflow inside the recursions (a huge state or model) cannot pass as a
result.
"""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def all_finite(x):
    """True when every entry of the C-contiguous array x is finite."""
    flat = x.reshape(x.size)
    for k in range(flat.shape[0]):
        if not np.isfinite(flat[k]):
            return False
    return True

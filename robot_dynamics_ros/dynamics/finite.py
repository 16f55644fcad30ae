"""The compiled kernels' check that nothing non-finite goes in or comes out.

A kernel checks a sample's inputs before it and its outputs after it, and
returns the first sample that failed (``state.raise_failure`` says why):
values still in the cache, so the check costs a few nanoseconds, and an
overflow inside the recursions (a huge state or model) cannot pass as a
result.
"""
import numpy as np
from numba.extending import overload


def all_finite(x):
    """True when every entry of x is finite (x: one-dimensional of any
    strides, or C-contiguous)."""
    return bool(np.isfinite(x).all())


@overload(all_finite, inline="always")
def _all_finite(x):
    if x.ndim == 1:
        def one_dimensional(x):
            for k in range(x.shape[0]):
                if not np.isfinite(x[k]):
                    return False
            return True
        return one_dimensional

    def contiguous(x):
        flat = x.reshape(x.size)
        for k in range(flat.shape[0]):
            if not np.isfinite(flat[k]):
                return False
        return True
    return contiguous

"""The compiled kernels' check that nothing non-finite goes in or comes out.

A kernel checks a sample's inputs before it and its outputs after it, and
returns the first sample that failed (``state.raise_failure`` says why):
values still in the cache, so the check adds little to the kernel, and an
overflow inside the recursions (a huge state or model) cannot pass as a
result.
"""
import numpy as np
from numba import njit, types
from numba.extending import overload

# From this many entries on, the exponents' maximum (``_largest_exponent``);
# below, a test per entry, inlined, without the call (the dense bounds check
# n^2 / 2 short rows of their Gram matrices)
VECTOR_FROM = 256
# The exponent bits of IEEE 754 binary64 and binary32: all set for inf and NaN only.
_EXPONENTS = {types.float64: (np.int64, np.int64(0x7FF0000000000000)),
              types.float32: (np.int32, np.int32(0x7F800000))}


def all_finite(x):
    """True when every entry of x is finite (x: one-dimensional of any
    strides, or C-contiguous)."""
    return bool(np.isfinite(x).all())


@njit(cache=True, nogil=True)
def _largest_exponent(bits, exponent):
    """The largest exponent field among the entries' bits: an integer maximum
    without an early exit, which the compiler vectorizes (a test per entry
    branches on every entry and stays scalar)."""
    largest = exponent & 0  # zero, of the bits' integer type
    for k in range(bits.shape[0]):
        largest = max(largest, bits[k] & exponent)
    return largest


@overload(all_finite, inline="always")
def _all_finite(x):
    if x.ndim == 1 and x.layout == "C" and x.dtype in _EXPONENTS:
        integer, exponent = _EXPONENTS[x.dtype]

        def contiguous(x):
            if x.shape[0] >= VECTOR_FROM:
                return _largest_exponent(x.view(integer), exponent) < exponent
            for k in range(x.shape[0]):
                if not np.isfinite(x[k]):
                    return False
            return True
        return contiguous

    if x.ndim == 1:
        def strided(x):
            for k in range(x.shape[0]):
                if not np.isfinite(x[k]):
                    return False
            return True
        return strided

    if x.layout == "C":
        # Small ones entry by entry through their flat view, in place: a
        # reshape calls numba's helper library, a call the compiler cannot inline.
        def small(x):
            if x.size >= VECTOR_FROM:
                return all_finite(x.reshape(x.size))
            entries = x.flat
            for k in range(x.size):
                if not np.isfinite(entries[k]):
                    return False
            return True
        return small

    def flat(x):
        return all_finite(x.reshape(x.size))
    return flat

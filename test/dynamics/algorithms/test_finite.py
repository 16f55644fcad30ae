"""``finite.all_finite``, the compiled kernels' check of their inputs and
outputs, against numpy's ``isfinite`` on every layout it serves."""
import numpy as np
import pytest
from numba import njit

from robot_dynamics_ros.dynamics.algorithms.finite import all_finite


@njit(cache=True)
def _compiled(x):
    return all_finite(x)


def _layouts(dtype, rng):
    """C-contiguous vectors, matrices and 3-arrays with fewer and more
    entries than ``VECTOR_FROM`` (tested entry by entry, or by the
    exponents' maximum), and a strided vector."""
    yield rng.standard_normal(14249).astype(dtype)
    yield rng.standard_normal(9).astype(dtype)
    yield rng.standard_normal((35, 35)).astype(dtype)
    yield rng.standard_normal((9, 7)).astype(dtype)
    yield rng.standard_normal((7, 8, 9)).astype(dtype)
    yield rng.standard_normal((3, 4, 5)).astype(dtype)
    yield rng.standard_normal((9, 7)).astype(dtype)[:, 2]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.slow
def test_all_finite_is_numpys_isfinite(dtype):
    """Finite arrays (the largest and a subnormal number among them) pass;
    one inf, -inf or NaN anywhere (first, middle, last entry) fails."""
    rng = np.random.default_rng(3)
    info = np.finfo(dtype)
    for x in _layouts(dtype, rng):
        flat = x.reshape(-1) if x.flags.c_contiguous else None
        assert _compiled(x)
        for extreme in (info.max, -info.max, info.tiny / 4):
            y = x.copy()
            y.reshape(-1)[x.size // 3] = extreme
            assert _compiled(y) == bool(np.isfinite(y).all()) is True
        for bad in (np.inf, -np.inf, np.nan):
            for where in (0, x.size // 2, x.size - 1):
                if flat is not None:
                    y = x.copy()
                    y.reshape(-1)[where] = bad
                else:  # the strided vector: spoil its entry in its parent array
                    parent = rng.standard_normal((9, 7)).astype(dtype)
                    parent[where % 9, 2] = bad
                    y = parent[:, 2]
                assert _compiled(y) == bool(np.isfinite(y).all()) is False

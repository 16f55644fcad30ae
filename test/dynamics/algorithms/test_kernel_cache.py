"""The node's kernels can be kept in numba's cache, for a fixed and for a
floating base. A kernel that cannot (numba: "uses dynamic globals", as when
a compiled function is handed to another as an argument) is compiled again
by every process that runs it: a minute per floating robot."""
import numpy as np
import pytest

from robot_dynamics_ros import dynamics
from robot_dynamics_ros.dynamics.algorithms.christoffel import _christoffel
from robot_dynamics_ros.dynamics.bounds.terms_kernel import compute_all_terms


@pytest.mark.parametrize("base", ["fixed", "floating"])
def test_the_kernels_can_be_cached(base):
    model = dynamics.load_urdf(dynamics.puma_urdf(), base=base)
    rng = np.random.default_rng(3)
    q, qd = rng.uniform(-0.5, 0.5, model.nq), rng.uniform(-1.0, 1.0, model.nv)
    if model.nq > model.nv:
        q[3:7] /= np.linalg.norm(q[3:7])
    dynamics.all_terms(model, q, qd, christoffel=True)
    dynamics.christoffel_symbols(model, q)
    for kernel in (compute_all_terms, _christoffel):
        assert kernel.overloads, f"{kernel.py_func.__name__} was not compiled"
        for signature, compiled in kernel.overloads.items():
            assert not compiled.library.has_dynamic_globals, (kernel.py_func.__name__, signature)


@pytest.mark.parametrize("robot, base", [("puma", "fixed"), ("puma", "floating"), ("tree", "floating")])
@pytest.mark.parametrize("precision", [np.float64, np.float32])
def test_the_type_of_a_model_s_data_is_known_before_it_is_made(robot, base, precision):
    """``records.data_type``, which the demo's compile gives the kernels before
    the records' constructors are compiled, is the type of the data itself."""
    import numba

    from robots import random_urdf
    from robot_dynamics_ros.dynamics.model.records import data_type

    urdf = dynamics.puma_urdf() if robot == "puma" else random_urdf(np.random.default_rng(5), 7, tree=True)
    model = dynamics.load_urdf(urdf, base=base)
    dtype = np.dtype(precision)
    assert data_type(model, dtype) == numba.typeof(model.data(dtype))

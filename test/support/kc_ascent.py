"""An adversary for every guaranteed K_c bound, independent of the code under
test: k_c from numpy's SVD of Gamma_k, random configurations within the
limits read from the URDF text, then scipy's L-BFGS-B (a gradient ascent,
finite-difference gradients) on k_c from the best of them."""
import numpy as np
from scipy.optimize import minimize

from robots import joint_ranges
from robot_dynamics_ros.dynamics import christoffel_symbols


def numpy_kc(gamma):
    """k_c = sqrt(sum_k ||Gamma_k||_2^2) from LAPACK's SVD, for (..., n, n, n)."""
    per_k = np.linalg.norm(np.moveaxis(gamma, -1, -3), 2, axis=(-2, -1))
    return np.sqrt((per_k ** 2).sum(axis=-1))


def independent_ascent(model, urdf, extra_starts=(), samples=1500, starts=4, seed=0):
    """(best k_c found, where): random q within the URDF's limits, then
    L-BFGS-B on -k_c from the best of them and from ``extra_starts``."""
    ranges = joint_ranges(model, urdf)
    rng = np.random.default_rng(seed)
    q = ranges[:, 0] + (ranges[:, 1] - ranges[:, 0]) * rng.random((samples, model.nv))
    values = numpy_kc(christoffel_symbols(model, q))
    best_value, best_q = float(values.max()), q[np.argmax(values)]
    for q0 in list(q[np.argsort(values)[-starts:]]) + [np.asarray(s, float) for s in extra_starts]:
        result = minimize(lambda x: -numpy_kc(christoffel_symbols(model, x)), q0,
                          method="L-BFGS-B", bounds=ranges, options={"maxiter": 60})
        if -result.fun > best_value:
            best_value, best_q = float(-result.fun), result.x
    return best_value, best_q

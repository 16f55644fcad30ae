"""The offline search's bounds on Gamma's mixed second derivatives from the
Fourier coefficients of their squared norms (dynamics.kc.mixed).

Oracles: the mixed derivatives by central finite differences of Gamma,
their norm N by numpy's SVD (``numpy_kc``), at random configurations and
at L-BFGS-B maxima; and the triangle-inequality bounds of the refinement,
which the new ones must not exceed and must beat.
"""
import numpy as np
import pytest
from scipy.optimize import minimize

from kc_ascent import numpy_kc
from robots import named_urdf
from test_coriolis_constant import _finish
from robot_dynamics_ros.dynamics import christoffel_symbols, load_urdf, puma_urdf
from robot_dynamics_ros.dynamics.kc.mixed import mixed_pairs
from robot_dynamics_ros.dynamics.kc.search import CoriolisConstantRefinement

STEP = 1e-3


def _mixed_norm(model, setup, points, l, p):
    """N(d2 Gamma/dq_l dq_p) at ``points`` (B, m) of the free coordinates,
    by central differences (Gamma is smooth: error O(STEP^2))."""
    total = 0.0
    for sign_l, sign_p in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
        q = np.tile(setup.base, (len(points), 1))
        shifted = points.copy()
        shifted[:, l] += sign_l * STEP
        shifted[:, p] += sign_p * STEP
        q[:, setup.free] = shifted
        total = total + sign_l * sign_p * christoffel_symbols(model, q)
    return numpy_kc(total / (4 * STEP * STEP))


@pytest.mark.parametrize("name", ["ur5_robot", "kinova", "puma"])
@pytest.mark.slow
def test_squared_norm_bounds_hold_and_beat_the_triangle_inequality(name):
    """Every pair's bound is above N of the mixed derivative at 400 random
    configurations and at L-BFGS-B maxima from the best of them; no bound
    is above the refinement's, and some are well below it (0.6x or less)."""
    model = load_urdf(puma_urdf() if name == "puma" else named_urdf(name))
    triangle = _finish(CoriolisConstantRefinement(model).box_setup())
    setup = _finish(CoriolisConstantRefinement(model).box_setup(squared_norms=True))
    before, after = triangle.derivatives[2], setup.derivatives[2]
    assert np.all(after <= before)
    assert np.array_equal(np.diag(after), np.diag(before))
    m = len(setup.free)
    rng = np.random.default_rng(3)
    points = rng.uniform(setup.low, setup.high, (400, m))
    ratios = []
    for l, p in mixed_pairs(m):
        values = _mixed_norm(model, setup, points, l, p)
        best = values.max()
        for start in points[np.argsort(values)[-2:]]:
            result = minimize(lambda x: -_mixed_norm(model, setup, x[None], l, p)[0], start, method="L-BFGS-B",
                              bounds=np.stack([setup.low, setup.high], 1), options={"maxiter": 30})
            best = max(best, -result.fun)
        assert best <= after[l, p], (l, p, best, after[l, p])
        ratios.append(after[l, p] / before[l, p])
    assert min(ratios) <= 0.6, ratios

"""Coriolis bounds built from the Christoffel symbols (MATH.md, last section).

``C(q, x) y = sum_k x[k] Gamma_k(q) y`` with ``Gamma_k = Gamma[:, :, k]``, so
by Cauchy-Schwarz over k, ``||C(q, x) y|| <= k_c(q) ||x|| ||y||`` with
``k_c(q) = sqrt(sum_k ||Gamma_k(q)||_2^2)``. Controller tuning rules ask for
the global constant ``K_c = sup_q k_c(q)`` over the joint limits (Safeea,
Neto and Bearee 2019, reference [18]).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.optimize import minimize

from .christoffel import christoffel_symbols
from .crba import mass_matrix
from .model import PRISMATIC
from .state import joint_array

# Global search for K_c: random configurations, then local ascent from the best.
_SAMPLES = 4096
_STARTS = 8
_SEED = 0


class CoriolisBounds(NamedTuple):
    """Bounds on the Coriolis terms at (q, qd); arrays of length N for batches.

    - ``coriolis_norm``: ``||C(q, qd)||_2``, the instantaneous value.
    - ``kc_config``: ``k_c(q)``, so ``||C(q, x) y|| <= k_c ||x|| ||y||``.
    - ``kc_global``: ``K_c`` over the joint limits (``inf`` when it does not
      exist: a prismatic joint without limits); see ``global_coriolis_constant``.
    - ``m_eig_min``, ``m_eig_max``: extreme eigenvalues of M(q).
    """

    coriolis_norm: float | np.ndarray
    kc_config: float | np.ndarray
    kc_global: float
    m_eig_min: float | np.ndarray
    m_eig_max: float | np.ndarray


def config_coriolis_constant(gamma):
    """k_c(q) from Gamma (n, n, n) or a batch (N, n, n, n)."""
    # spectral norm of each Gamma_k: the largest singular value
    slices = np.moveaxis(gamma, -1, -3)
    norms = np.linalg.svd(slices, compute_uv=False)[..., 0]
    return np.sqrt(np.sum(norms ** 2, axis=-1))


def coriolis_bounds(model, q, qd) -> CoriolisBounds:
    """The ``CoriolisBounds`` at (q, qd), for one sample or a batch (N, n).

    Cost: one Christoffel evaluation O(N d^2), n singular value
    decompositions of n x n matrices and one symmetric eigenproblem, O(n^4)
    in all; ``kc_global`` is computed once per model (and payload) and cached.
    """
    q = joint_array(model, q, "q")
    qd = joint_array(model, qd, "qd", like=q)
    gamma = christoffel_symbols(model, q)
    coriolis = np.einsum("...ijk,...k->...ij", gamma, qd)
    eigs = np.linalg.eigvalsh(mass_matrix(model, q))
    return CoriolisBounds(
        coriolis_norm=np.linalg.norm(coriolis, 2, axis=(-2, -1)),
        kc_config=config_coriolis_constant(gamma),
        kc_global=global_coriolis_constant(model),
        m_eig_min=eigs[..., 0],
        m_eig_max=eigs[..., -1],
    )


def joint_limits(model):
    """Lower and upper limits of the joints of q (+-inf where unlimited)."""
    body = [model.body_joint_names.index(name) for name in model.joint_names]
    return model.lower[body], model.upper[body], model.joint_type[body]


def global_coriolis_constant(model) -> float:
    """K_c = sup over the joint limits of k_c(q): an estimate, cached per model.

    Method: k_c at ``4096`` random configurations drawn uniformly within the
    limits (continuous joints over [-pi, pi], where k_c is periodic), then a
    bounded local ascent (L-BFGS-B) from the 8 best. The result is the largest
    value found, so it is a lower estimate of the true supremum: it is not
    guaranteed. Its tightness is measured by the tests, which draw 100,000
    independent random (q, x, y) per robot and check ``||C(q, x) y|| <=
    K_c ||x|| ||y||`` (and print the ratio reached). A prismatic joint
    without limits makes k_c grow without bound: the result is ``inf``.
    Deterministic (fixed seed), so the same model always gets the same value.
    """
    cache = model.cache
    if "kc_global" not in cache:
        cache["kc_global"] = _search_global_constant(model)
    return cache["kc_global"]


def _search_global_constant(model):
    lower, upper, kinds = joint_limits(model)
    unlimited = ~(np.isfinite(lower) & np.isfinite(upper))
    if np.any(unlimited & (kinds == PRISMATIC)):
        return np.inf
    lower = np.where(unlimited, -np.pi, lower)
    upper = np.where(unlimited, np.pi, upper)
    rng = np.random.default_rng(_SEED)
    samples = rng.uniform(lower, upper, size=(_SAMPLES, model.nv))
    values = config_coriolis_constant(christoffel_symbols(model, samples))
    best = float(values.max())

    def negative(q):
        return -float(config_coriolis_constant(christoffel_symbols(model, q)))

    for start in samples[np.argsort(values)[-_STARTS:]]:
        result = minimize(negative, start, method="L-BFGS-B",
                          bounds=list(zip(lower, upper)),
                          options={"maxiter": 50})
        best = max(best, -float(result.fun))
    return best

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
from numba import njit

from .calls import run
from .christoffel import christoffel_symbols
from .crba import mass_matrix
from .eigen import largest_eigenvalue, lower_triangles_finite, smallest_eigenvalue, tridiagonalize
from .model import PRISMATIC
from .finite import all_finite
from .state import at_identity_base, configuration_array, joint_array, raise_failure

# What the node publishes on ~/coriolis_bounds, in order (DESIGN.md):
# the CoriolisBounds fields and coriolis_bound = kc_config ||qd||.
BOUNDS_FIELDS = ("coriolis_norm", "kc_config", "kc_global", "coriolis_bound", "m_eig_min", "m_eig_max")

# Global search for K_c: random configurations, then local ascent from the best.
_SAMPLES = 4096
_STARTS = 8
_SEED = 0
# first compass step, as a fraction of each joint's range, when a payload
# model starts from its parent's maximisers
_WARM_STEP = 1.0 / 256


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


@njit(cache=True, nogil=True)
def _gram_matrices(gamma, grams):
    """``grams[r, c, k]`` (lower triangles, k < n) = the Gram matrices
    ``Gamma_k^T Gamma_k = sum_i g_ik g_ik^T``, ``g_ik = Gamma[i, k, :]``.

    Gamma is symmetric in its last two indices, so ``Gamma[i, r, :]`` holds
    row r of every ``Gamma_k`` at once, contiguous: the n matrices are built
    side by side, ready to be reduced in lockstep.
    """
    n = gamma.shape[0]
    for r in range(n):
        for c in range(r + 1):
            for k in range(n):
                grams[r, c, k] = 0.0
            for i in range(n):
                for k in range(n):
                    grams[r, c, k] += gamma[i, r, k] * gamma[i, c, k]


@njit(cache=True, nogil=True)
def _config_constant(gamma, grams):
    """k_c = sqrt(sum_k ||Gamma_k||_2^2) of one sample's Gamma (n, n, n)."""
    n = gamma.shape[0]
    _gram_matrices(gamma, grams)
    work = grams[:, :, :n]
    if not lower_triangles_finite(work):
        return np.nan  # too large to square: an overflow, not a norm
    tridiagonalize(work)
    return _kc_of_reduced(work, n)


@njit(cache=True, nogil=True)
def _kc_of_reduced(grams, n):
    """sqrt of the sum over k < n of the largest eigenvalue of the reduced
    Gram matrices ``grams[:, :, k]``: k_c once they are tridiagonal."""
    total = 0.0
    for k in range(n):
        total += max(0.0, largest_eigenvalue(grams[:, :, k], 0.0))
    return np.sqrt(total)


@njit(cache=True, nogil=True)
def _config_constants(data, gamma, out):
    """k_c per sample into out (N,): what the search for K_c evaluates."""
    for s in range(gamma.shape[0]):
        out[s] = _config_constant(gamma[s], data.grams)
    return -1


@njit(cache=True, nogil=True)
def bound_values(data, gamma, mass, qd, out):
    """The BOUNDS_FIELDS of one sample into out (6,), all but kc_global.

    ``C = sum_k qd[k] Gamma_k`` and ``k_c = sqrt(sum_k ||Gamma_k||_2^2)``
    (MATH.md). The n + 2 symmetric eigenproblems, the Gram matrices of the
    n ``Gamma_k`` and of C for the spectral norms and M itself for its
    extreme eigenvalues, are reduced to tridiagonal form in lockstep in
    ``data.grams`` (eigen.py). Cost: O(n^4).
    """
    n = qd.shape[0]
    coriolis, grams = data.coriolis, data.grams
    speed = 0.0
    for k in range(n):
        speed += qd[k] * qd[k]
    for i in range(n):
        for j in range(n):
            acc = 0.0
            for k in range(n):
                acc += gamma[i, j, k] * qd[k]
            coriolis[i, j] = acc
    _gram_matrices(gamma, grams)
    for r in range(n):
        for c in range(r + 1):
            acc = 0.0
            for i in range(n):
                acc += coriolis[i, r] * coriolis[i, c]
            grams[r, c, n] = acc
            grams[r, c, n + 1] = mass[r, c]
    if not lower_triangles_finite(grams):
        out[:] = np.nan  # too large to square: an overflow, not a bound
        return
    tridiagonalize(grams)
    kc = _kc_of_reduced(grams, n)
    out[0] = np.sqrt(max(0.0, largest_eigenvalue(grams[:, :, n], 0.0)))
    out[1] = kc
    out[2] = 0.0
    out[3] = kc * np.sqrt(speed)
    out[4] = smallest_eigenvalue(grams[:, :, n + 1])
    out[5] = largest_eigenvalue(grams[:, :, n + 1], -np.inf)


@njit(cache=True, nogil=True)
def _bound_vectors(data, gamma, mass, QD, out):
    for s in range(QD.shape[0]):
        bound_values(data, gamma[s], mass[s], QD[s], out[s])
        if not all_finite(out[s]):
            return s
    return -1


def bound_vectors(model, christoffel, mass, qd, inputs):
    """(N, 6) BOUNDS_FIELDS from Gamma (N, n, n, n), M (N, n, n) and qd (N, n).

    ``inputs``: the caller's (name, array) pairs, to name a bad one.
    """
    values = np.empty((len(qd), len(BOUNDS_FIELDS)))
    failed = run(_bound_vectors, model, (christoffel, mass, qd), (values,))
    if failed >= 0:
        raise_failure(model, failed, inputs, "the Coriolis bounds")
    values[:, 2] = global_coriolis_constant(model)
    return values


def config_coriolis_constant(model, q):
    """k_c(q) for q (n,) or (N, n): the configuration Coriolis constant."""
    q = configuration_array(model, q)
    batch = q if q.ndim == 2 else q[None]
    values = np.empty(len(batch))
    run(_config_constants, model, (christoffel_symbols(model, batch),), (values,))
    return values if q.ndim == 2 else values[0]


def coriolis_bounds(model, q, qd, *, christoffel=None, mass=None) -> CoriolisBounds:
    """The ``CoriolisBounds`` at (q, qd), for one sample or a batch (N, n).

    ``christoffel`` and ``mass``: Gamma(q) and M(q) when the caller has them
    already, so they are not computed twice (``all_terms`` computes every
    term at once). Cost: one Christoffel evaluation O(N d^2) and n + 2
    eigenproblems of n x n matrices, O(n^4) in all; ``kc_global`` is
    computed once per model (and payload) and cached.
    """
    q = configuration_array(model, q)
    qd = joint_array(model, qd, "qd", like=q)
    single = q.ndim == 1
    batch_q = q[None] if single else q
    gamma = christoffel_symbols(model, batch_q) if christoffel is None else (
        np.ascontiguousarray(christoffel, dtype=np.float64).reshape(len(batch_q), *(model.nv,) * 3))
    mass = mass_matrix(model, batch_q) if mass is None else (
        np.ascontiguousarray(mass, dtype=np.float64).reshape(len(batch_q), model.nv, model.nv))
    inputs = (("q", batch_q), ("qd", qd[None] if single else qd))
    values = bound_vectors(model, gamma, mass, inputs[1][1], inputs)
    if single:
        values = values[0]
    fields = dict(zip(BOUNDS_FIELDS, values.T))
    return CoriolisBounds(
        coriolis_norm=fields["coriolis_norm"],
        kc_config=fields["kc_config"],
        kc_global=global_coriolis_constant(model),
        m_eig_min=fields["m_eig_min"],
        m_eig_max=fields["m_eig_max"],
    )


def joint_limits(model):
    """Lower and upper limits of the joints of q (+-inf where unlimited)."""
    body = [model.body_joint_names.index(name) for name in model.joint_names]
    return model.lower[body], model.upper[body], model.joint_type[body]


def global_coriolis_constant(model) -> float:
    """K_c = sup over the joint limits of k_c(q): an estimate, cached per model.

    Method: k_c at 4096 random configurations drawn uniformly within the
    limits (continuous joints over [-pi, pi], where k_c is periodic), then a
    compass-search local ascent within the limits from the 8 best. The
    value is kept per payload set for all models of one URDF
    (``model.family_cache``), and a payload set not seen before starts
    from where the search without payloads ended, with short steps: a
    payload moves the maxima of k_c, it rarely creates new ones far away,
    and a payload swap must be fast (this makes the estimate with a payload
    up to ~0.5% lower than a full search, in the tests' robots). The result is the largest value found, so it is a lower estimate
    of the true supremum: it is not guaranteed. Its tightness is measured by
    the tests, which draw 100,000 independent random (q, x, y) per robot
    (with and without payloads) and check ``||C(q, x) y|| <= K_c ||x||
    ||y||`` (and print the ratio reached). For a floating base only the
    joints are searched, the base at the identity pose: Gamma does not
    depend on the base's pose (docs/floating_base.md). A prismatic joint without limits
    makes k_c grow without bound: the result is ``inf``. Deterministic
    (fixed seed), so the same model always gets the same value.
    """
    if "kc_global" in model.cache:  # the hot path asks on every sample
        return model.cache["kc_global"]
    family = model.family_cache.setdefault("kc_global", {})
    key = model.payload_key
    if key not in family:
        if key:  # same starts whatever the order of swaps: deterministic
            bare = model.with_payloads_removed()
            global_coriolis_constant(bare)
            family[key] = _search_global_constant(model, family[()][1])
        else:
            family[key] = _search_global_constant(model, None)
    model.cache["kc_global"] = family[key][0]
    return family[key][0]


def _search_global_constant(model, starts):
    """(K_c, the configurations where the local ascents ended)."""
    lower, upper, kinds = joint_limits(model)
    unlimited = ~(np.isfinite(lower) & np.isfinite(upper))
    if np.any(unlimited & (kinds == PRISMATIC)):
        return np.inf, None
    lower = np.where(unlimited, -np.pi, lower)
    upper = np.where(unlimited, np.pi, upper)
    if starts is None:
        samples = np.random.default_rng(_SEED).uniform(lower, upper, size=(_SAMPLES, len(lower)))
        first_step = 0.25
    else:
        samples = np.clip(starts, lower, upper)
        first_step = _WARM_STEP
    values = config_coriolis_constant(model, at_identity_base(model, samples))
    best = np.argsort(values)[-_STARTS:]
    ends, peaks = _compass_ascent(model, samples[best], values[best], lower, upper, first_step)
    return float(ends.max()), peaks


def _compass_ascent(model, starts, values, lower, upper, first_step):
    """(local maxima of k_c, where) by compass search in the limits, from
    every row of ``starts`` (S, n) at once.

    Each round tries a step up and down along every joint for every start
    still climbing (one batch), moves each to its best candidate if that
    improves, else halves its steps; steps start at ``first_step`` of each
    joint's range and stop at 1e-5 rad (or m), where k_c, smooth at its
    maximum, is within ~1e-10 of it. Needs no derivatives and keeps q
    within the limits.
    """
    q = np.array(starts, dtype=float)
    value = np.array(values, dtype=float)
    step = np.tile(first_step * (upper - lower), (len(q), 1))
    moves = np.concatenate([np.eye(len(lower)), -np.eye(len(lower))])
    climbing = np.arange(len(q))
    while len(climbing):
        candidates = np.clip(q[climbing, None] + moves * step[climbing, None], lower, upper)
        tried = config_coriolis_constant(
            model, at_identity_base(model, candidates.reshape(-1, len(lower))))
        tried = tried.reshape(len(climbing), len(moves))
        pick = np.argmax(tried, axis=1)
        better = tried[np.arange(len(climbing)), pick] > value[climbing]
        moved = climbing[better]
        q[moved] = candidates[better, pick[better]]
        value[moved] = tried[better, pick[better]]
        step[climbing[~better]] /= 2
        climbing = climbing[step[climbing].max(axis=1) > 1e-5]
    return value, q

"""Coriolis bounds built from the Christoffel symbols (docs/math.md, last section).

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
from .errors import StateError
from .eigen import largest_eigenvalue, lower_triangles_finite, smallest_eigenvalue, tridiagonalize
from .finite import all_finite
from .kc.constant import gram_matrices, kc_of_reduced
from .kc.search import refinement_for, set_global_constants
from .state import configuration_array, joint_array, raise_failure

# What the node publishes on ~/coriolis_bounds, in order (docs/design.md):
# the CoriolisBounds fields and coriolis_bound = kc_config ||qd||.
# New fields are only ever appended, so index-based consumers keep working.
BOUNDS_FIELDS = ("coriolis_norm", "kc_config", "kc_global", "coriolis_bound", "m_eig_min", "m_eig_max",
                 "kc_global_lower")


class CoriolisBounds(NamedTuple):
    """Bounds on the Coriolis terms at (q, qd); arrays of length N for batches.

    - ``coriolis_norm``: ``||C(q, qd)||_2``, the instantaneous value.
    - ``kc_config``: ``k_c(q)``, so ``||C(q, x) y|| <= k_c ||x|| ||y||``.
    - ``kc_global``: a guaranteed upper bound on ``K_c`` over the joint
      limits, the model's current one (``inf`` for a prismatic joint without
      limits); see ``kc.search``.
    - ``m_eig_min``, ``m_eig_max``: extreme eigenvalues of M(q).
    - ``kc_global_lower``: the largest k_c(q) computed at a configuration
      found within the limits: K_c lies in ``[kc_global_lower, kc_global]``.
    """

    coriolis_norm: float | np.ndarray
    kc_config: float | np.ndarray
    kc_global: float
    m_eig_min: float | np.ndarray
    m_eig_max: float | np.ndarray
    kc_global_lower: float


@njit(cache=True, nogil=True)
def bound_values(data, gamma, mass, qd, out):
    """The BOUNDS_FIELDS of one sample into out (7,), all but kc_global and
    kc_global_lower (0 here: the caller sets them).

    ``C = sum_k qd[k] Gamma_k`` and ``k_c = sqrt(sum_k ||Gamma_k||_2^2)``
    (docs/math.md). The n + 2 symmetric eigenproblems, the Gram matrices of the
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
    gram_matrices(gamma, grams)
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
    kc = kc_of_reduced(grams, n)
    out[0] = np.sqrt(max(0.0, largest_eigenvalue(grams[:, :, n], 0.0)))
    out[1] = kc
    out[2] = 0.0
    out[6] = 0.0
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
    """(N, 7) BOUNDS_FIELDS from Gamma (N, n, n, n), M (N, n, n) and qd (N, n).

    ``inputs``: the caller's (name, array) pairs, to name a bad one.
    """
    values = np.empty((len(qd), len(BOUNDS_FIELDS)))
    # contiguous: a mimic-reduced Gamma or M comes out of einsum with other
    # strides, and the kernels' entry points are resolved once per layout-blind key
    inputs_c = tuple(np.ascontiguousarray(x) for x in (christoffel, mass, qd))
    failed = run(_bound_vectors, model, inputs_c, (values,))
    if failed >= 0:
        raise_failure(model, failed, inputs, "the Coriolis bounds")
    set_global_constants(model, values)
    return values


def coriolis_bounds(model, q, qd, *, christoffel=None, mass=None) -> CoriolisBounds:
    """The ``CoriolisBounds`` at (q, qd), for one sample or a batch (N, n).

    ``christoffel`` and ``mass``: Gamma(q) and M(q) when the caller has them
    already, so they are not computed twice (``all_terms`` computes every
    term at once). Cost: one Christoffel evaluation O(N d^2) and n + 2
    eigenproblems of n x n matrices, O(n^4) in all; ``kc_global`` and
    ``kc_global_lower`` are the model's current interval for K_c (its first
    guaranteed bound on the first call, in milliseconds; tighter once
    ``coriolis_constant_interval`` or a background thread has refined it).
    """
    q = configuration_array(model, q)
    qd = joint_array(model, qd, "qd", like=q)
    single = q.ndim == 1
    batch_q = q[None] if single else q
    gamma = (christoffel_symbols(model, batch_q) if christoffel is None else
             _given(model, christoffel, "christoffel", q, 3).reshape(len(batch_q), *(model.nv,) * 3))
    mass = (mass_matrix(model, batch_q) if mass is None else
            _given(model, mass, "mass", q, 2).reshape(len(batch_q), model.nv, model.nv))
    inputs = (("q", batch_q), ("qd", qd[None] if single else qd))
    values = bound_vectors(model, gamma, mass, inputs[1][1], inputs)
    fields = dict(zip(BOUNDS_FIELDS, values[0] if single else values.T))
    if not single:
        # one float for the batch, the model's current interval (also for an empty batch)
        interval = refinement_for(model).interval
        fields["kc_global"], fields["kc_global_lower"] = interval.upper, interval.lower
    return CoriolisBounds(**{name: fields[name] for name in CoriolisBounds._fields})


def _given(model, value, name, q, dims):
    """A caller's Gamma (``dims`` 3) or M (``dims`` 2) for the checked ``q``:
    shape (n,) * dims after q's batch axis, finite real numbers, or
    ``StateError`` naming ``name`` and the first non-finite element."""
    shape = q.shape[:-1] + (model.nv,) * dims
    # joint_array wants ``like``'s shape with its last axis made nv: a view of
    # one zero in the wanted shape (no memory) asks for exactly that shape
    array = joint_array(model, value, name, like=np.broadcast_to(0.0, shape))
    bad = np.argwhere(~np.isfinite(array))
    if len(bad):
        where = tuple(int(k) for k in bad[0])
        raise StateError(f"{name}{list(where)} is {array[where]}")
    return array

"""Every term the node publishes, in one compiled call per batch.

The analogue of Pinocchio's ``computeAllTerms``: M(q), C(q, qd), g(q),
Gamma(q) and the Coriolis bounds of one sample or a batch. The forward pass
that every algorithm starts from (poses, motion subspaces, world and
composite inertias) runs once per sample, then each term's own pass, the same
compiled function as in its single function, so the results are bitwise
those of ``mass_matrix``, ``coriolis_matrix``, ...
"""
from typing import NamedTuple

import numpy as np
from numba import njit

from .bounds import BOUNDS_FIELDS, bound_values, bound_vectors
from .calls import run, single
from .christoffel import christoffel_tree
from .coriolis import coriolis
from .crba import crba
from .finite import all_finite
from .kc.search import set_global_constants
from .kinematics import composite_inertias, forward_kinematics, valid_configuration
from .rnea import gravity
from .samples import sample, sample_count
from .state import (configuration_array, is_sample, joint_array, matrix_result, raise_failure,
                    tensor_result, to_all_joints, vector_result)


class AllTerms(NamedTuple):
    """The terms at (q, qd), each (…) for one sample or (N, …) for a batch.

    ``coriolis_bounds`` is the vector of ``bounds.BOUNDS_FIELDS``, (7,) or
    (N, 7): the CoriolisBounds fields with ``coriolis_bound = kc_config
    ||qd||``, in the order of the node's ``~/coriolis_bounds``.
    """

    mass_matrix: np.ndarray
    coriolis_matrix: np.ndarray
    coriolis_bounds: np.ndarray
    christoffel_symbols: np.ndarray
    gravity_torques: np.ndarray


@njit(cache=True, nogil=True)
def _all_terms(data, with_bounds, Q, QD, mass, coriolis_matrix, bounds, christoffel,
               gravity_torques):
    """Per sample: forward kinematics and composite inertias once, then
    ``crba``, Algorithms 2 and 1 of Echeandia and Wensing (2021) and
    ``gravity``, and (``with_bounds``) the bounds but K_c. O(n d^2) per sample for
    depth d, and O(n^4) for the bounds."""
    model = data.model
    for s in range(sample_count(Q)):
        q, qd = sample(Q, s, Q), sample(QD, s, Q)
        if not (valid_configuration(model, q) and all_finite(qd)):
            return s
        M, C = sample(mass, s, Q), sample(coriolis_matrix, s, Q)
        G, g = sample(christoffel, s, Q), sample(gravity_torques, s, Q)
        forward_kinematics(model, data, q)
        composite_inertias(model, data)
        crba(model, data, M)
        christoffel_tree(model, data, G)
        coriolis(model, data, qd, C)
        gravity(model, data, g)
        if not (all_finite(M) and all_finite(C) and all_finite(G) and all_finite(g)):
            return s
        if with_bounds:
            b = sample(bounds, s, Q)
            bound_values(data, G, M, qd, b)
            if not all_finite(b):
                return s
    return -1


def all_terms(model, q, qd) -> AllTerms:
    """M, C, the Coriolis bounds, Gamma and g at (q, qd): (n,) or (N, n) inputs.

    Same values as the single functions (``christoffel_symbols`` with its
    default method), with the same checks and errors, and the same
    coordinate change for ``mimic="reduce"`` models (whose bounds are those
    of the reduced terms, so they are computed after the change).
    """
    if is_sample(model, q, qd):
        n = qd.shape[0]
        terms = AllTerms(np.empty((n, n)), np.empty((n, n)), np.empty(len(BOUNDS_FIELDS)),
                         np.empty((n, n, n)), np.empty(n))
        if single(_all_terms, model, (True, q, qd, *terms)) < 0:
            set_global_constants(model, terms.coriolis_bounds)
            return terms
    q = configuration_array(model, q)
    qd = joint_array(model, qd, "qd", like=q)
    qa = to_all_joints(model, q, offset=True)
    qda = to_all_joints(model, qd, offset=False)
    lead, nb = qa.shape[:-1], model.nb
    mass, coriolis_matrix = np.empty(lead + (nb, nb)), np.empty(lead + (nb, nb))
    christoffel, gravity = np.empty(lead + (nb, nb, nb)), np.empty(lead + (nb,))
    bounds = np.empty(lead + (len(BOUNDS_FIELDS),))
    failed = run(_all_terms, model, (qa, qda),
                 (mass, coriolis_matrix, bounds, christoffel, gravity), settings=(not model.reduced,))
    inputs = (("q", q), ("qd", qd))
    if failed >= 0:
        raise_failure(model, failed, inputs, "M, C, Gamma, g or the Coriolis bounds")
    if model.reduced:
        mass = matrix_result(model, mass)
        christoffel = tensor_result(model, christoffel)
        coriolis_matrix = matrix_result(model, coriolis_matrix)
        gravity = vector_result(model, gravity)
        one = q.ndim == 1
        bounds = bound_vectors(model, *(x[None] if one else x for x in (christoffel, mass, qd)),
                               inputs)
        if one:
            bounds = bounds[0]
    else:
        set_global_constants(model, bounds)
    return AllTerms(mass, coriolis_matrix, bounds, christoffel, gravity)

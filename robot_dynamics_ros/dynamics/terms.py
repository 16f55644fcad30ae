"""Every term the node publishes, in one compiled call per batch.

The analogue of Pinocchio's ``computeAllTerms``: M(q), C(q, qd), g(q),
Gamma(q) and the Coriolis bounds of one sample or a batch. Each term comes
from the same kernel as its own function (so the results are bitwise those of
``mass_matrix``, ``coriolis_matrix``, ...); what is saved is the per-call
Python work of five calls, which for a 9-joint arm is about as long as the
numerics themselves.
"""
from typing import NamedTuple

import numpy as np
from numba import njit

from .batch import run_kernel
from .bounds import BOUNDS_FIELDS, _bounds, bound_vectors, global_coriolis_constant
from .bounds import _work_size as _bounds_work_size
from .christoffel import _christoffel_tree, _tree_work_size
from .coriolis import _coriolis_matrix, _work_size as _coriolis_work_size
from .crba import _mass_matrix, _work_size as _mass_work_size
from .rnea import _inverse_dynamics, _work_size as _rnea_work_size
from .state import joint_array, matrix_result, tensor_result, to_all_joints, vector_result


class AllTerms(NamedTuple):
    """The terms at (q, qd), each (…) for one sample or (N, …) for a batch.

    ``coriolis_bounds`` is the vector of ``bounds.BOUNDS_FIELDS``, (6,) or
    (N, 6): the CoriolisBounds fields with ``coriolis_bound = kc_config
    ||qd||``, in the order of the node's ``~/coriolis_bounds``.
    """

    mass_matrix: np.ndarray
    coriolis_matrix: np.ndarray
    coriolis_bounds: np.ndarray
    christoffel_symbols: np.ndarray
    gravity_torques: np.ndarray


def _work_size(nb):
    # the kernels run one after another, each from the start of the work row
    return max(_mass_work_size(nb), _tree_work_size(nb), _coriolis_work_size(nb), _rnea_work_size(nb),
               _bounds_work_size(nb))


@njit(cache=True, nogil=True)
def _all_terms(parent, joint_type, joint_placement, joint_axis, inertia, gravity, with_bounds,
               Q, QD, work, mass, coriolis, christoffel, gravity_torques, bounds):
    """CRBA, Algorithms 1 and 2 of Echeandia and Wensing (2021), RNEA at
    rest and (``with_bounds``) the bounds but K_c, over all samples:
    O(n d^2) per sample for depth d, and O(n^4) for the bounds."""
    arrays = (parent, joint_type, joint_placement, joint_axis, inertia, gravity)
    _mass_matrix(*arrays, Q, work, mass)
    _christoffel_tree(*arrays, Q, work, christoffel)
    _coriolis_matrix(*arrays, Q, QD, work, coriolis)
    rest = np.zeros_like(Q)
    _inverse_dynamics(*arrays, Q, rest, rest, work, gravity_torques)
    if with_bounds:
        _bounds(christoffel, mass, QD, work, bounds)


def all_terms(model, q, qd) -> AllTerms:
    """M, C, the Coriolis bounds, Gamma and g at (q, qd): (n,) or (N, n) inputs.

    Same values as the single functions (``christoffel_symbols`` with its
    default method), with the same checks and errors, and the same
    coordinate change for ``mimic="reduce"`` models (whose bounds are those
    of the reduced terms, so they are computed after the change).
    """
    q = joint_array(model, q, "q")
    qd = joint_array(model, qd, "qd", like=q)
    batch_qd = qd[None] if q.ndim == 1 else qd
    qa = to_all_joints(model, q, offset=True)
    qda = to_all_joints(model, qd, offset=False)
    samples, nb = qa.shape
    mass, coriolis = np.empty((samples, nb, nb)), np.empty((samples, nb, nb))
    christoffel, gravity = np.empty((samples, nb, nb, nb)), np.empty((samples, nb))
    bounds = np.empty((samples, len(BOUNDS_FIELDS)))
    run_kernel(_all_terms, model, (qa, qda), (mass, coriolis, christoffel, gravity, bounds), _work_size,
               settings=(not model.reduced,))
    if model.reduced:
        mass = matrix_result(model, mass, False)
        christoffel = tensor_result(model, christoffel, False)
        coriolis = matrix_result(model, coriolis, False)
        gravity = vector_result(model, gravity, False)
        bounds = bound_vectors(model, christoffel, mass, batch_qd)
    else:
        bounds[:, 2] = global_coriolis_constant(model)
    if q.ndim == 1:
        return AllTerms(mass[0], coriolis[0], bounds[0], christoffel[0], gravity[0])
    return AllTerms(mass, coriolis, bounds, christoffel, gravity)

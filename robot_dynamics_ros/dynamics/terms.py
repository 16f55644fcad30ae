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
from .bounds import bound_vectors
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
    return max(_mass_work_size(nb), _tree_work_size(nb), _coriolis_work_size(nb), _rnea_work_size(nb))


@njit(cache=True, nogil=True)
def _recursive_terms(parent, joint_type, joint_placement, joint_axis, inertia, gravity,
                     Q, QD, work, mass, coriolis, christoffel, gravity_torques):
    """CRBA, Algorithm 1 and Algorithm 2 of Echeandia and Wensing (2021), and
    RNEA at rest, over all samples: O(n d^2) per sample for depth d."""
    arrays = (parent, joint_type, joint_placement, joint_axis, inertia, gravity)
    _mass_matrix(*arrays, Q, work, mass)
    _christoffel_tree(*arrays, Q, work, christoffel)
    _coriolis_matrix(*arrays, Q, QD, work, coriolis)
    rest = np.zeros_like(Q)
    _inverse_dynamics(*arrays, Q, rest, rest, work, gravity_torques)


def all_terms(model, q, qd) -> AllTerms:
    """M, C, the Coriolis bounds, Gamma and g at (q, qd): (n,) or (N, n) inputs.

    Same values as the single functions (``christoffel_symbols`` with its
    default method), with the same checks and errors, and the same
    coordinate change for ``mimic="reduce"`` models.
    """
    q = joint_array(model, q, "q")
    qd = joint_array(model, qd, "qd", like=q)
    single = q.ndim == 1
    qa = to_all_joints(model, q, offset=True)
    qda = to_all_joints(model, qd, offset=False)
    samples, nb = qa.shape
    outs = (np.empty((samples, nb, nb)), np.empty((samples, nb, nb)),
            np.empty((samples, nb, nb, nb)), np.empty((samples, nb)))
    run_kernel(_recursive_terms, model, (qa, qda), outs, _work_size)
    mass = matrix_result(model, outs[0], False)
    christoffel = tensor_result(model, outs[2], False)
    terms = AllTerms(
        mass_matrix=mass,
        coriolis_matrix=matrix_result(model, outs[1], False),
        coriolis_bounds=bound_vectors(model, christoffel, mass, qd if not single else qd[None]),
        christoffel_symbols=christoffel,
        gravity_torques=vector_result(model, outs[3], False),
    )
    return AllTerms(*(term[0] for term in terms)) if single else terms

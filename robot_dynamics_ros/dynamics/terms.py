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

from .bounds.coriolis_bounds import BOUNDS_FIELDS, CoriolisBounds, bound_vectors, given, tree_bound_values
from .calls import bind, is_sample, run, sample_entry
from .errors import DynamicsError
from .algorithms.christoffel import christoffel_gather, christoffel_symbols
from .algorithms.coriolis import coriolis
from .algorithms.crba import mass_matrix
from .algorithms.finite import all_finite
from .algorithms.frames import frame_terms, frames_data
from .kc.search import refinement_for, set_global_constants
from .algorithms.kinematics import composite_inertias, forward_kinematics, valid_configuration
from .algorithms.samples import sample, sample_count
from .model.state import (check_out, configuration_array, into, joint_array, matrix_result, raise_failure,
                          tensor_result, to_all_joints, vector_result)
from .bounds.terms_kernel import compute_all_terms


# the kernel's Gamma when nobody asked for it: no entries, so one array serves every call
_NO_GAMMA = np.empty((0, 0, 0))


class AllTerms(NamedTuple):
    """The terms at (q, qd), each (…) for one sample or (N, …) for a batch.

    ``coriolis_bounds`` is the vector of ``bounds.BOUNDS_FIELDS``, (7,) or
    (N, 7): the CoriolisBounds fields with ``coriolis_bound = kc_config
    ||qd||``, in the order of the node's ``~/coriolis_bounds``.
    ``christoffel_symbols`` is None when ``all_terms(..., christoffel=False)``.
    """

    mass_matrix: np.ndarray
    coriolis_matrix: np.ndarray
    coriolis_bounds: np.ndarray
    christoffel_symbols: np.ndarray
    gravity_torques: np.ndarray


def all_terms(model, q, qd, *, christoffel=True) -> AllTerms:
    """M, C, the Coriolis bounds, Gamma and g at (q, qd): (n,) or (N, n) inputs.

    Same values as the single functions (``christoffel_symbols`` with its
    default method), with the same checks and errors, and the same
    coordinate change for ``mimic="reduce"`` models (whose bounds are those
    of the reduced terms, so they are computed after the change).
    ``christoffel=False``: no dense Gamma (its field is None); the bounds,
    which need only Gamma's slices over related joints, cost far less than
    the n^3 tensor on a tree (what the node asks for unless it publishes
    Gamma).
    """
    call = sample_entry(compute_all_terms, model, q, qd)
    terms = None if call is None else _sample_terms(call, model, q, qd, christoffel)
    return _general(model, q, qd, christoffel) if terms is None else terms


def state_terms(model, q, qd, frames, *, christoffel=True, out=None):
    """``(all_terms, frame_terms(model, q, qd, frames))`` from one compiled
    call for one float64 sample: ``all_terms``' kernel on a ``Data`` made
    with the frames, which it computes from the body poses and velocities of
    its own forward pass (``frames.frames_at``), so that a DynamicsState
    with frames costs one forward pass. The same values, bit for bit, as the
    two functions (tested), which compute a batch. ``out``: the frames'
    ``(poses, J, bias)`` written into these arrays and returned; a tuple is
    checked once, on its first call on this thread (the node computes into
    its message's buffers at every joint state, ``outputs.frames_in_place``).
    """
    frames = tuple(frames)
    if is_sample(model, q, qd):
        bound = model._local.frames.get(frames)
        if bound is None or bound[0] is not out:
            bound = _bind_frames(model, frames, out, q, qd)
            if out is None or type(out) is tuple:  # a list could change its arrays
                model._local.frames[frames] = bound
        call, poses, J, bias = bound[1:]
        terms = _sample_terms(call, model, q, qd, christoffel)
        if terms is not None:
            return terms, ((poses.copy(), J.copy(), bias.copy()) if out is None else (poses, J, bias))
    terms = _general(model, q, qd, christoffel)
    values = frame_terms(model, q, qd, frames)
    return terms, (values if out is None else tuple(into(o, x) for o, x in zip(_three(out), values)))


def _sample_terms(call, model, q, qd, christoffel):
    """One float64 sample's ``AllTerms`` through ``call`` (``all_terms``'
    kernel bound to a ``Data``, ``calls.bind``), or None when a value is not
    finite (the general path then says which): the node's hot path."""
    n = qd.shape[0]
    mass, coriolis_matrix, gravity = np.empty((n, n)), np.empty((n, n)), np.empty(n)
    bounds = np.empty(len(BOUNDS_FIELDS))
    gamma = np.empty((n, n, n)) if christoffel else _NO_GAMMA
    if call(True, bool(christoffel), q, qd, mass, coriolis_matrix, bounds, gamma, gravity) >= 0:
        return None
    set_global_constants(model, bounds)
    return AllTerms(mass, coriolis_matrix, bounds, gamma if christoffel else None, gravity)


def _bind_frames(model, frames, out, q, qd):
    """(out, the kernel bound to a ``Data`` with ``frames``, its poses, J and
    J̇v arrays): ``out``'s arrays, checked, or new ones."""
    k, nv = len(frames), model.nv
    arrays = None if out is None else [check_out(x, shape) for x, shape in
                                       zip(_three(out), ((k, 7), (k, 6, nv), (k, 6)))]
    data, arrays = frames_data(model, frames, arrays)
    n = qd.shape[0]
    call = bind(compute_all_terms, data, True, False, q, qd, np.empty((n, n)), np.empty((n, n)),
                np.empty(len(BOUNDS_FIELDS)), _NO_GAMMA, np.empty(n))
    return (out, call) + arrays


def _three(out):
    """``out`` when it is three arrays' worth; DynamicsError else."""
    if len(out) != 3:
        raise DynamicsError(f"out must be the frames' three arrays (poses, J, J̇v), got {len(out)}")
    return out


def _general(model, q, qd, christoffel):
    """``all_terms`` for any q and qd: checked, converted, batches on every
    core, and a mimic-reduced model's terms in its coordinates."""
    q = configuration_array(model, q)
    qd = joint_array(model, qd, "qd", like=q)
    qa = to_all_joints(model, q, offset=True)
    qda = to_all_joints(model, qd, offset=False)
    lead, nb = qa.shape[:-1], model.nb
    # a reduced model's bounds come from its reduced Gamma, so it needs the whole tensor
    dense = bool(christoffel) or model.reduced
    mass, coriolis_matrix = np.empty(lead + (nb, nb)), np.empty(lead + (nb, nb))
    gamma = np.empty(lead + ((nb, nb, nb) if dense else (0, 0, 0)))
    gravity = np.empty(lead + (nb,))
    bounds = np.empty(lead + (len(BOUNDS_FIELDS),))
    failed = run(compute_all_terms, model, (qa, qda), (mass, coriolis_matrix, bounds, gamma, gravity),
                 settings=(not model.reduced, dense))
    inputs = (("q", q), ("qd", qd))
    if failed >= 0:
        raise_failure(model, failed, inputs, "M, C, Gamma, g or the Coriolis bounds")
    if model.reduced:
        mass = matrix_result(model, mass)
        gamma = tensor_result(model, gamma)
        coriolis_matrix = matrix_result(model, coriolis_matrix)
        gravity = vector_result(model, gravity)
        one = q.ndim == 1
        bounds = bound_vectors(model, *(x[None] if one else x for x in (gamma, mass, qd)),
                               inputs)
        if one:
            bounds = bounds[0]
    set_global_constants(model, bounds)
    return AllTerms(mass, coriolis_matrix, bounds, gamma if christoffel else None, gravity)


@njit(cache=True, nogil=True)
def _bounds_of_given(data, Q, QD, christoffel, mass, bounds):
    """Per sample: the bounds but K_c from a caller's Gamma and M, and C
    from q and qd by Algorithm 1, as ``compute_all_terms`` computes them, so that
    given and computed terms give the same numbers."""
    model = data.model
    C, blocks = data.coriolis, data.blocks
    for s in range(sample_count(Q)):
        q, qd = sample(Q, s, Q), sample(QD, s, Q)
        if not (valid_configuration(model, q) and all_finite(qd)):
            return s
        forward_kinematics(model, data, q)
        composite_inertias(model, data)
        coriolis(model, data, qd, C)
        christoffel_gather(model, sample(christoffel, s, Q), blocks)
        b = sample(bounds, s, Q)
        tree_bound_values(model, data, blocks, False, C, sample(mass, s, Q), qd, b)
        if not all_finite(b):
            return s
    return -1


def coriolis_bounds(model, q, qd, *, christoffel=None, mass=None) -> CoriolisBounds:
    """The ``CoriolisBounds`` at (q, qd), for one sample or a batch (N, n).

    ``christoffel`` and ``mass``: Gamma(q) and M(q) when the caller has them
    already, so they are not computed twice; the same numbers as without
    them. A given Gamma is taken to be this model's at q: its symbols of
    unrelated joints are read as zero, and a floating tree's slices are
    normed through their cores (``cores``), which assumes the structure
    Gamma(q) has. Cost: ``all_terms(..., christoffel=False)``'s bounds, Gamma's
    slices over related joints (``bounds.tree_bound_values``), O(n^3) more
    to take them out of a given Gamma; a ``mimic="reduce"`` model's reduced
    Gamma has no tree to follow and gets n + 2 eigenproblems of n x n
    matrices, O(n^4) (``bounds.bound_vectors``). ``kc_global`` and
    ``kc_global_lower`` are the model's current interval for K_c (its first
    guaranteed bound on the first call, O(nb^3) without a search; tighter once
    ``coriolis_constant_interval`` or a background thread has refined it).
    """
    if christoffel is None and mass is None:
        values = all_terms(model, q, qd, christoffel=False).coriolis_bounds
    else:
        q = configuration_array(model, q)
        qd = joint_array(model, qd, "qd", like=q)
        lead, n = q.shape[:-1], model.nv
        gamma = (christoffel_symbols(model, q) if christoffel is None else
                 given(model, christoffel, "christoffel", q, 3).reshape(lead + (n,) * 3))
        mass = (mass_matrix(model, q) if mass is None else
                given(model, mass, "mass", q, 2).reshape(lead + (n, n)))
        inputs = (("q", q), ("qd", qd))
        if model.reduced:
            one = q.ndim == 1
            values = bound_vectors(model, *(x[None] if one else x for x in (gamma, mass, qd)), inputs)
            values = values[0] if one else values
            set_global_constants(model, values)
        else:
            values = np.empty(lead + (len(BOUNDS_FIELDS),))
            # contiguous: the kernel's entry point is resolved once per layout-blind key
            arrays = tuple(np.ascontiguousarray(x) for x in (gamma, mass))
            failed = run(_bounds_of_given, model, (q, qd, *arrays), (values,))
            if failed >= 0:
                raise_failure(model, failed, inputs, "the Coriolis bounds")
            set_global_constants(model, values)
    single = values.ndim == 1
    fields = dict(zip(BOUNDS_FIELDS, values if single else values.T))
    if not single:
        # one float for the batch, the model's current interval (also for an empty batch)
        interval = refinement_for(model).interval
        fields["kc_global"], fields["kc_global_lower"] = interval.upper, interval.lower
    return CoriolisBounds(**{name: fields[name] for name in CoriolisBounds._fields})

"""The compiled kernels behind ``terms.all_terms`` and ``terms.state_terms``:
every term the node publishes, one sample or a batch, from one forward pass
per sample (the frames' too, in ``compute_state_terms``).

Apart from ``terms`` so that the K_c search (``kc``), which ``terms`` uses
for the model's K_c interval, can evaluate k_c(q) with this same kernel:
a model's first K_c interval then compiles nothing that the node's first
joint state will not run (``kc.constant.kc_at``).
"""
from numba import njit

from .coriolis_bounds import bound_symbols, tree_bound_values
from ..algorithms.christoffel import christoffel_scatter, christoffel_tree, dense_layout
from ..algorithms.coriolis import coriolis
from ..algorithms.crba import crba
from ..algorithms.finite import all_finite
from ..algorithms.frames import frames_at
from ..algorithms.kinematics import composite_inertias, forward_kinematics, valid_configuration
from ..algorithms.rnea import gravity
from ..algorithms.samples import sample, sample_count


@njit(cache=True, nogil=True)
def terms_at(model, data, with_bounds, with_gamma, q, qd, M, C, b, G, g):
    """One sample's terms: forward kinematics and composite inertias once,
    then ``crba``, Algorithms 2 and 1 of Echeandia and Wensing (2021) and
    ``gravity``, and (``with_bounds``) the bounds but K_c into b, from
    Gamma's slices as blocks, or only what the bounds need of them
    (``bounds.bound_symbols``) without ``with_gamma``; the dense Gamma into G
    only ``with_gamma``. False when a value is not finite. Leaves the body
    poses and velocities of (q, qd) in ``data`` (``frames.frames_at`` reads
    them). Cost: O(n d^2) for depth d, ``sum_k m_k^3`` for the bounds
    (``bounds.tree_bound_values``) and n^3 for a dense Gamma."""
    forward_kinematics(model, data, q)
    composite_inertias(model, data)
    crba(model, data, M)
    # a serial chain's blocks are Gamma itself (``christoffel.dense_layout``)
    direct = with_gamma and dense_layout(model)
    blocks = G.reshape(G.size) if direct else data.blocks
    if with_gamma:
        christoffel_tree(model, data, blocks)
        cores = False
    else:
        cores = bound_symbols(model, data, blocks)
    coriolis(model, data, qd, C)
    gravity(model, data, g)
    if not (all_finite(M) and all_finite(C) and all_finite(blocks) and all_finite(g)):
        return False
    if with_gamma and not direct:
        christoffel_scatter(model, blocks, G)
    if with_bounds:
        tree_bound_values(model, data, blocks, cores, C, M, qd, b)
        return all_finite(b)
    return True


@njit(cache=True, nogil=True)
def compute_all_terms(data, with_bounds, with_gamma, Q, QD, mass, coriolis_matrix, bounds, christoffel,
                      gravity_torques):
    """Per sample: ``terms_at``."""
    model = data.model
    for s in range(sample_count(Q)):
        q, qd = sample(Q, s, Q), sample(QD, s, Q)
        if not (valid_configuration(model, q) and all_finite(qd)):
            return s
        if not terms_at(model, data, with_bounds, with_gamma, q, qd, sample(mass, s, Q),
                        sample(coriolis_matrix, s, Q), sample(bounds, s, Q), sample(christoffel, s, Q),
                        sample(gravity_torques, s, Q)):
            return s
    return -1


@njit(cache=True, nogil=True)
def compute_state_terms(data, with_bounds, with_gamma, bodies, placements, Q, QD, mass, coriolis_matrix,
                        bounds, christoffel, gravity_torques, poses, J, bias):
    """Per sample: ``terms_at``, then the frames (``frames.frames_at``) from
    the body poses and velocities it leaves: everything a DynamicsState
    carries, from one forward pass."""
    model = data.model
    for s in range(sample_count(Q)):
        q, qd = sample(Q, s, Q), sample(QD, s, Q)
        if not (valid_configuration(model, q) and all_finite(qd)):
            return s
        if not (terms_at(model, data, with_bounds, with_gamma, q, qd, sample(mass, s, Q),
                         sample(coriolis_matrix, s, Q), sample(bounds, s, Q), sample(christoffel, s, Q),
                         sample(gravity_torques, s, Q))
                and frames_at(model, data, q, qd, bodies, placements, sample(poses, s, Q),
                              sample(J, s, Q), sample(bias, s, Q))):
            return s
    return -1

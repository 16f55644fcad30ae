"""The compiled kernel behind ``terms.all_terms`` and ``terms.state_terms``:
every term the node publishes, one sample or a batch, from one forward pass
per sample (the frames' too, for a ``Data`` made with frames).

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
def compute_all_terms(data, with_bounds, with_gamma, Q, QD, mass, coriolis_matrix, bounds, christoffel,
                      gravity_torques):
    """Per sample: forward kinematics and composite inertias once, then
    ``crba``, Algorithms 2 and 1 of Echeandia and Wensing (2021) and
    ``gravity``, and (``with_bounds``) the bounds but K_c, from Gamma's
    slices as blocks, or only what the bounds need of them
    (``bounds.bound_symbols``) without ``with_gamma``; the dense Gamma only
    ``with_gamma``; then, for a ``Data`` made with frames (one sample,
    ``terms.state_terms``), their poses, Jacobians and J̇v into its frame
    arrays from the poses and velocities of this pass (``frames.frames_at``).
    Cost per sample: O(n d^2) for depth d, ``sum_k m_k^3`` for the bounds
    (``bounds.tree_bound_values``), n^3 for a dense Gamma and O(n + sum
    d_f) for the frames."""
    model = data.model
    for s in range(sample_count(Q)):
        q, qd = sample(Q, s, Q), sample(QD, s, Q)
        if not (valid_configuration(model, q) and all_finite(qd)):
            return s
        M, C = sample(mass, s, Q), sample(coriolis_matrix, s, Q)
        g = sample(gravity_torques, s, Q)
        forward_kinematics(model, data, q)
        composite_inertias(model, data)
        crba(model, data, M)
        # a serial chain's blocks are Gamma itself (``christoffel.dense_layout``)
        direct = with_gamma and dense_layout(model)
        if direct:
            G = sample(christoffel, s, Q)
            blocks = G.reshape(G.size)
        else:
            blocks = data.blocks
        if with_gamma:
            christoffel_tree(model, data, blocks)
            cores = False
        else:
            cores = bound_symbols(model, data, blocks)
        coriolis(model, data, qd, C)
        gravity(model, data, g)
        if not (all_finite(M) and all_finite(C) and all_finite(blocks) and all_finite(g)):
            return s
        if with_gamma and not direct:
            christoffel_scatter(model, blocks, sample(christoffel, s, Q))
        if with_bounds:
            b = sample(bounds, s, Q)
            tree_bound_values(model, data, blocks, cores, C, M, qd, b)
            if not all_finite(b):
                return s
        if data.frame_body.shape[0] and not frames_at(
                model, data, q, qd, data.frame_body, data.frame_placement, data.frame_pose,
                data.frame_jacobian, data.frame_bias):
            return s
    return -1

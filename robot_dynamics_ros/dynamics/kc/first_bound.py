"""The first guaranteed bound on K_c: no configuration, O(nb^3).

The method and why it is a bound: ``first_upper_bound`` and
docs/coriolis_constant.md ("First bound").
"""
import numpy as np
from numba import njit

from ..model.model import PRISMATIC

_EPS = np.finfo(float).eps
# Collatz-Wielandt: power iterations before the ratio test; more only tighten
_POWER_STEPS = 8


@njit(cache=True, nogil=True)
def _gamma_bounds(parent, revolute, edge, mass, com_norm, rot_norm, base, G):
    """G[i, j, k] >= |Gamma[i, j, k]| for every q, summed over bodies.

    M = sum over bodies B of M^B, M^B_ab = S_a^T I_B S_b for the joints a, b
    that move B, and the docs/math.md derivatives give ``dM^B_ab/dq_c =
    -[c below a] (S_c x S_a)^T I_B S_b - [c below b] S_a^T I_B (S_c x S_b)``
    (the two terms cancel when c is above both: B turns rigidly). Each
    bilinear form is the same about any point; about B's CoM, I_B =
    diag(I_CoM, m 1), so ``|X^T I_B Y| <= lambda_B |x_w| |y_w| + m |x_v|
    |y_v|`` with ``|S_a| <= (w_a, v_a) = (1, r_a)`` (revolute: unit axis,
    moment arm r_a >= |o_a - CoM_B|) or ``(0, 1)`` (prismatic) in
    (angular, linear) parts, and ``S_c x S_a`` bounded by ``(w_c w_a,
    w_c v_a + v_c w_a)``; Gamma^B is bounded through its definition by the
    three derivatives. ``edge[i] >= |o_i - o_parent(i)|``, so with heights
    h (sums of edges from the world origin) r_a = x_B + e_a, x_B = h_B +
    |CoM_B offset| - h_d >= 0 and e_a = h_d - h_a >= 0 for d, the deepest of
    i, j, k: the bound of a triple is a polynomial in x_B with nonnegative
    coefficients, summed over the bodies below d through the moments
    ``sum m x^p`` (no cancellation, so no rounding beyond O(nb eps)).
    Cost O(nb^3): the triples, and the moments of each subtree.

    A floating base: its ``base`` (6) bodies head the tree as a chain of
    three prismatic and three revolute joints along the root link's axes
    (``model.BASE_BODIES``), all at the root link's origin; its symbols are
    the chain's plus ``(Ic_i S_i) . (S_k x S_j)`` at [i, j, k] for base
    columns j < k (``christoffel.free_flyer_symbols``: the base's speeds are
    the root's twist, its columns turn with all six), which is the term
    ``[c below a] T(c, a, b)`` for (c, a, b) = (k, j, i) once more, over the
    same bodies (the base bodies are massless, so Ic_i is the whole robot
    when i is one of them). Its travel is nil: the base's pose does not
    enter Gamma, and its edges are the root link's.
    """
    nb = parent.shape[0]
    height = np.zeros(nb)
    depth = np.zeros(nb, dtype=np.int64)
    related = np.zeros((nb, nb), dtype=np.bool_)
    for i in range(nb):
        p = parent[i]
        height[i] = edge[i] + (height[p] if p >= 0 else 0.0)
        depth[i] = depth[p] + 1 if p >= 0 else 0
        a = i
        while a >= 0:
            related[a, i] = True
            a = parent[a]
    # per subtree root d: sum of lambda, and of m x^p for p = 0, 1, 2
    moments = np.zeros((nb, 4))
    for d in range(nb):
        for b in range(d, nb):
            if related[d, b]:
                x = height[b] + com_norm[b] - height[d]
                moments[d, 0] += rot_norm[b]
                moments[d, 1] += mass[b]
                moments[d, 2] += mass[b] * x
                moments[d, 3] += mass[b] * x * x
    idx = np.empty(3, dtype=np.int64)
    w = np.empty(3)
    slope = np.empty(3)  # v = slope x + offset
    offset = np.empty(3)
    for i in range(nb):
        for j in range(nb):
            if not (related[i, j] or related[j, i]):
                continue
            for k in range(j, nb):
                if not ((related[i, k] or related[k, i]) and (related[j, k] or related[k, j])):
                    continue
                idx[0], idx[1], idx[2] = i, j, k
                d = i
                if depth[j] > depth[d]:
                    d = j
                if depth[k] > depth[d]:
                    d = k
                for s in range(3):
                    a = idx[s]
                    if revolute[a]:
                        w[s], slope[s], offset[s] = 1.0, 1.0, height[d] - height[a]
                    else:
                        w[s], slope[s], offset[s] = 0.0, 0.0, 1.0
                total = 0.0
                # 2 Gamma_ijk <= dM_ij/dq_k + dM_ik/dq_j + dM_jk/dq_i bounds:
                # [c below a] T(c, a, b) for these (c, a, b)
                for c, a, b in ((2, 0, 1), (2, 1, 0), (1, 0, 2), (1, 2, 0), (0, 1, 2), (0, 2, 1)):
                    if depth[idx[c]] > depth[idx[a]]:
                        total += _term_bound(moments[d], w, slope, offset, c, a, b)
                if k < base and j < k:
                    total += 2.0 * _term_bound(moments[d], w, slope, offset, 2, 1, 0)
                G[i, j, k] = 0.5 * total
                G[i, k, j] = 0.5 * total


@njit(cache=True, nogil=True, inline="always")  # one overload for literal and int indices
def _term_bound(moments, w, slope, offset, c, a, b):
    """The bound of T(c, a, b) = sum over the bodies B below the triple's
    deepest joint of |(S_c x S_a)^T I_B S_b|: sum of lambda w_c w_a w_b +
    m (w_c v_a + v_c w_a) v_b, with v = slope x + offset (``_gamma_bounds``)."""
    lin_slope = w[c] * slope[a] + w[a] * slope[c]
    lin_offset = w[c] * offset[a] + w[a] * offset[c]
    return (moments[0] * w[c] * w[a] * w[b]
            + lin_slope * slope[b] * moments[3]
            + (lin_slope * offset[b] + lin_offset * slope[b]) * moments[2]
            + lin_offset * offset[b] * moments[1])


@njit(cache=True, nogil=True)
def _nonnegative_norm_bound(A, x, y):
    """An upper bound on ||A||_2 for a nonnegative matrix A (n x n).

    ||A||_2^2 is the Perron root of B = A^T A >= 0, and for any positive x
    ``rho(B) <= max_i (B x)_i / x_i`` (Collatz-Wielandt, valid for reducible
    B too; Horn and Johnson, "Matrix Analysis", 2nd ed., Cor. 8.1.29). x
    comes from a few power iterations, floored at 1e-3 of its largest entry
    so that it stays positive. Also ``||A||_2 <= sqrt(||A||_1 ||A||_inf)``;
    the smaller of the two. O(n^2) per iteration.
    """
    n = A.shape[0]
    row_max = 0.0
    col_max = 0.0
    for i in range(n):
        r = 0.0
        c = 0.0
        for j in range(n):
            r += A[i, j]
            c += A[j, i]
        row_max = max(row_max, r)
        col_max = max(col_max, c)
    simple = np.sqrt(row_max * col_max)
    if simple == 0.0 or not np.isfinite(simple):
        return simple
    x[:] = 1.0
    ratio = np.inf
    for _ in range(_POWER_STEPS):
        for i in range(n):
            acc = 0.0
            for j in range(n):
                acc += A[i, j] * x[j]
            y[i] = acc
        top = 0.0
        ratio = 0.0
        for j in range(n):
            acc = 0.0
            for i in range(n):
                acc += A[i, j] * y[i]
            ratio = max(ratio, acc / x[j])
            x[j] = acc
            top = max(top, acc)
        if top == 0.0:
            return 0.0
        for j in range(n):
            x[j] = max(x[j] / top, 1e-3)
    return min(simple, np.sqrt(ratio))


@njit(cache=True, nogil=True)
def _first_bound_kernel(parent, revolute, edge, mass, com_norm, rot_norm, base, coordinate_map):
    """(sqrt(sum_k ||G_k||^2), the nv norm bounds) for q of length nv =
    coordinate_map.shape[1]; ``G_k >= |Gamma_k|`` entrywise. With a mimic
    map J (q_full = J q + b), ``|Gamma_r[i,j,k]| <= sum |J_ai||J_bj||J_ck|
    G[a,b,c]``. O(nb^3) time and memory (O(nb^3 nv^3) at most with a
    mimic map, in practice a few terms per entry)."""
    nb, nv = coordinate_map.shape
    G = np.zeros((nb, nb, nb))
    _gamma_bounds(parent, revolute, edge, mass, com_norm, rot_norm, base, G)
    J = np.abs(coordinate_map)
    identity = nb == nv
    for i in range(nb):
        for j in range(nv):
            if J[i, j] != (1.0 if i == j else 0.0):
                identity = False
    if not identity:
        reduced = np.zeros((nv, nv, nv))
        for a in range(nb):
            for b in range(nb):
                for c in range(nb):
                    if G[a, b, c] != 0.0:
                        for i in range(nv):
                            if J[a, i] != 0.0:
                                for j in range(nv):
                                    if J[b, j] != 0.0:
                                        for k in range(nv):
                                            reduced[i, j, k] += J[a, i] * J[b, j] * J[c, k] * G[a, b, c]
        G = reduced
    norms = np.zeros(nv)
    x, y = np.empty(nv), np.empty(nv)
    slice_ = np.empty((nv, nv))
    total = 0.0
    for k in range(nv):
        for i in range(nv):
            for j in range(nv):
                slice_[i, j] = G[i, j, k]
        norms[k] = _nonnegative_norm_bound(slice_, x, y)
        total += norms[k] * norms[k]
    return np.sqrt(total), norms


def _first_bound_margin(nb):
    """Relative inflation of the first bound for its rounding: it is built
    from nonnegative numbers by sums of at most nb^2 terms, products and
    square roots, each of relative error <= eps, in chains of O(nb)
    operations, so its computed value is within (1 + c nb eps) of the exact
    one with c a small constant; 1024 (nb + 16) eps is far above that."""
    return 1.0 + 1024.0 * (nb + 16) * _EPS


def _body_travel(model, lower, upper):
    """|q_full_i| bound per body over the limits of q (interval arithmetic
    through the coordinate map): how far a prismatic joint slides."""
    lo = np.where(np.isfinite(lower), lower, -np.inf)
    hi = np.where(np.isfinite(upper), upper, np.inf)
    J = np.abs(np.asarray(model.coordinate_map, dtype=float))
    reach = np.maximum(np.abs(lo), np.abs(hi))
    with np.errstate(invalid="ignore"):
        # a coordinate that does not drive the body adds nothing, even unlimited
        spread = np.where(J != 0.0, J * reach, 0.0).sum(axis=1)
    return spread + np.abs(model.coordinate_offset)


def first_upper_bound(model):
    """(A guaranteed upper bound on K_c that depends on no configuration,
    the bounds on each ||Gamma_k||_2).

    For every (i, j, k), |Gamma_ijk| <= G_ijk from the docs/math.md formula of
    dM/dq, body by body (``_gamma_bounds``): each term is a bilinear form
    in motion subspaces and a body's inertia, the same about any reference
    point, bounded about the body's CoM with moment arms r >= |o_a - CoM|:
    the sum of the joint placements' lengths (and prismatic travels) on the
    tree path, plus the CoM offset. Then ||Gamma_k||_2 <= ||G_k||_2 (G_k >=
    |Gamma_k| entrywise, Perron-Frobenius) and k_c <= sqrt(sum_k
    ||G_k||_2^2). Cost O(nb^3). ``inf`` when a prismatic
    joint has no limits. A floating base's speeds are the first six
    columns (``_gamma_bounds``).
    """
    lower, upper, kinds = model.joint_limits()
    if np.any((kinds == PRISMATIC) & ~(np.isfinite(lower) & np.isfinite(upper))):
        return np.inf, np.full(model.nv, np.inf)
    still = np.zeros(model.base_bodies)  # the base's pose does not enter Gamma
    travel = _body_travel(model, np.r_[still, lower], np.r_[still, upper])
    inertia = np.asarray(model.inertia, dtype=float)
    mass = inertia[:, 0]
    com_norm = np.linalg.norm(inertia[:, 1:4], axis=1)
    ixx, ixy, ixz, iyy, iyz, izz = inertia[:, 4:10].T
    rot = np.stack([np.stack([ixx, ixy, ixz], -1), np.stack([ixy, iyy, iyz], -1),
                    np.stack([ixz, iyz, izz], -1)], -2)
    # a Gershgorin row sum bounds lambda_max with no eigen-solver rounding
    rot_norm = np.abs(rot).sum(axis=2).max(axis=1)
    prismatic = model.joint_type == PRISMATIC
    edge = np.linalg.norm(model.joint_placement[:, :3, 3], axis=1) + np.where(prismatic, travel, 0.0)
    value, norms = _first_bound_kernel(
        np.asarray(model.parent, dtype=np.int64), ~prismatic, edge, mass, com_norm, rot_norm,
        model.base_bodies, np.ascontiguousarray(model.coordinate_map, dtype=float))
    margin = _first_bound_margin(model.nb)
    return float(value * margin), norms * margin

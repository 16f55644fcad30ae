"""A guaranteed interval for the global Coriolis constant K_c = sup_q k_c(q).

``k_c(q) = sqrt(sum_k ||Gamma_k(q)||_2^2)`` (MATH.md); ``K_c`` is its supremum
over the joint limits (continuous joints: all angles). Controllers use K_c in
stability proofs, so what is published as ``kc_global`` must be an upper
bound that holds for every q, rounding included. This module keeps, per
model, an interval ``[lower, upper]`` that contains K_c:

1. **First bound** (construction, O(nb^3) time and memory: 1 ms for a
   44-joint humanoid, 26 ms for a 100-joint chain):
   q-independent bounds on every |Gamma_ijk| body by body from the MATH.md
   derivative formula of M, then the spectral norms of the
   nonnegative majorants (Perron-Frobenius and the Collatz-Wielandt upper
   bound). See ``first_upper_bound`` and docs/coriolis_constant.md.
2. **Lower end**: the largest k_c(q) computed at configurations within the
   limits (random samples, then a compass ascent), with its witness q.
3. **Refinement of the upper end**: branch and bound over boxes of the
   joint limits (R. E. Moore, "Interval Analysis", 1966; J.-P. Merlet,
   "Interval analysis for certified numerical solution of problems in
   robotics", Int. J. Appl. Math. Comput. Sci. 19(3), 2009). Each
   Gamma_ijk is a trigonometric polynomial of degree <= 2 in every revolute
   angle and a polynomial of degree <= 2 in every prismatic displacement
   (each joint's motion enters M at most twice, through S and through the
   inertia it moves), so 5 (or 3) samples per coordinate on a tensor grid
   give its expansion exactly, hence global bounds on its first and second
   derivatives (``fourier_derivative_bounds``). Along each side of a box,
   5 (or 3) samples give Gamma's restriction exactly, so a box's bound is
   the smaller of a Lipschitz form and a second-order form whose only
   global part is the mixed second derivatives (``_box_bounds``). Boxes
   whose bound is within the tolerance leave the list, and the side to
   halve is the one that adds most to the box's bound. For models needing
   more than ``_MAX_FOURIER_SAMPLES`` grid samples, and for mimic-reduced
   models (whose Gamma is no such polynomial of the reduced q), refinement
   only raises ``lower``. Prismatic leaf joints (grippers) are frozen at
   mid-range, their effect bounded apart (``CoriolisConstantRefinement._box_setup``).

Joints whose parent is the fixed world never enter Gamma: turning or sliding
their whole subtree rigidly leaves M unchanged (MATH.md: dM_ab/dq_c = 0
when c is an ancestor of both a and b), so the search drops them.
Gravity never enters Gamma.

Rounding: every floating-point result that enters ``upper`` is inflated by
an explicit margin, see ``_first_bound_margin`` and ``_value_margin``.
"""
from __future__ import annotations

import threading
import time
from typing import NamedTuple

import numpy as np
from numba import njit

from .bounds import config_constant_kernel, config_coriolis_constant, joint_limits
from .calls import PARALLEL_FROM, in_chunks
from .state import at_identity_base
from .christoffel import christoffel_symbols
from .errors import CoriolisConstantError
from .model import PRISMATIC

_EPS = np.finfo(float).eps
# Collatz-Wielandt: power iterations before the ratio test; more only tighten
_POWER_STEPS = 8
# Lower end: random samples within the limits, then ascents from the best.
_SAMPLES = 8192
_STARTS = 24
_SEED = 0
# doubles of Gamma held at once while evaluating k_c in chunks (32 MB)
_CHUNK_DOUBLES = 4_000_000
# boxes split per branch-and-bound round, at least (and a 16th of them, at
# most 4096)
_SPLIT_BATCH = 64
_DEFAULT_MEMORY_MB = 160.0
# tensor-grid samples of Gamma for its exact expansion (fourier_derivative_bounds):
# 7 angles take 78,125, 8 would take 390,625.
_MAX_FOURIER_SAMPLES = 200_000


class KcInterval(NamedTuple):
    """K_c lies in ``[lower, upper]``.

    - ``lower``: the largest k_c(q) computed at a configuration within the
      limits, ``witness``.
    - ``upper``: a guaranteed upper bound on K_c, rounding included (``inf``
      when a prismatic joint has no limits).
    - ``witness``: q (length ``model.nq``; a floating base at the identity
      pose) where ``lower`` was computed.
    - ``finished``: refinement reached its tolerance or cannot improve.
    """

    lower: float
    upper: float
    witness: np.ndarray
    finished: bool


# ---------------------------------------------------------------------------
# First bound


@njit(cache=True, nogil=True)
def _gamma_bounds(parent, revolute, edge, mass, com_norm, rot_norm, base, G):
    """G[i, j, k] >= |Gamma[i, j, k]| for every q, summed over bodies.

    M = sum over bodies B of M^B, M^B_ab = S_a^T I_B S_b for the joints a, b
    that move B, and the MATH.md derivatives give ``dM^B_ab/dq_c =
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


@njit(cache=True, nogil=True)
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

    For every (i, j, k), |Gamma_ijk| <= G_ijk from the MATH.md formula of
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
    lower, upper, kinds = joint_limits(model)
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


# ---------------------------------------------------------------------------
# Evaluation of k_c in chunks, lower end


class _Pace:
    """How refinement's steps use the cores, read at every step (``refine``
    sets ``parallel``)."""

    def __init__(self, parallel=False):
        self.parallel = parallel

    def chunk(self, model):
        """Samples per evaluation step: ``_CHUNK_DOUBLES`` doubles of Gamma at
        most, so memory stays bounded whatever n (one sample at n >= 159).
        On one thread (the default) fewer than ``calls.PARALLEL_FROM``: a
        chunk runs on the calling thread, never on the thread pool, so a
        node's refinement thread (nice 10) is the only one it takes from the
        executor (with the pool it took both cores, and doubled the p99
        latency of a 35-DoF node). ``parallel``: the pool's cores."""
        most = max(1, _CHUNK_DOUBLES // model.nb ** 3)
        return most if self.parallel else min(most, PARALLEL_FROM - 1)


def _evaluate(model, Q, out, pace):
    """k_c at the joint values Q[s] into out, one chunk per step (a
    generator: the caller may stop between chunks). Each chunk runs the
    nogil kernels of ``bounds.config_coriolis_constant``; overflow gives
    NaN. A floating base is put at the identity pose: Gamma does not depend
    on it (docs/floating_base.md), so the search runs over the joints."""
    chunk = pace.chunk(model)
    for start in range(0, len(Q), chunk):
        out[start:start + chunk] = config_coriolis_constant(
            model, at_identity_base(model, Q[start:start + chunk]))
        yield


def _compass_ascent(model, starts, values, lower, upper, offer, pace):
    """Compass-search local ascent of k_c within the limits from every row of
    ``starts`` (S, n) at once (a generator, one step per chunk).

    Each round tries a step up and down along every joint for every start
    still climbing, moves each to its best candidate if that improves, else
    halves its steps; steps start at a quarter of each joint's range and
    stop at 1e-5 rad (or m). Needs no derivatives and keeps q within the
    limits; ``offer(values, Q)`` receives every evaluated batch. Cost per
    round: 2 n S evaluations of k_c, O(n^4) each.
    """
    q = np.array(starts, dtype=float)
    value = np.array(values, dtype=float)
    step = np.tile(0.25 * (upper - lower), (len(q), 1))
    moves = np.concatenate([np.eye(q.shape[1]), -np.eye(q.shape[1])])
    climbing = np.arange(len(q))
    while len(climbing):
        candidates = np.clip(q[climbing, None] + moves * step[climbing, None], lower, upper)
        flat = candidates.reshape(-1, q.shape[1])
        tried = np.empty(len(flat))
        yield from _evaluate(model, flat, tried, pace)
        offer(tried, flat)
        tried = np.where(np.isnan(tried), -np.inf, tried).reshape(len(climbing), len(moves))
        pick = np.argmax(tried, axis=1)
        better = tried[np.arange(len(climbing)), pick] > value[climbing]
        moved = climbing[better]
        q[moved] = candidates[better, pick[better]]
        value[moved] = tried[better, pick[better]]
        step[climbing[~better]] /= 2
        climbing = climbing[step[climbing].max(axis=1) > 1e-5]


def _value_margin(model, first):
    """Absolute margin added to a computed k_c(c) before it enters an upper
    bound. Every Gamma entry is a sum of O(nb) bilinear terms in S and Ic
    whose sizes the first bound ``first`` dominates, each computed with
    relative error O(nb eps); the eigenvalues of the Gram matrices are
    backward stable (eigen.py, error O(n eps ||Gamma_k||^2)). So
    |k_c computed - k_c| <= c nb eps ``first`` with a small c;
    4096 (nb + 16) eps ``first`` is far above it."""
    return 4096.0 * (model.nb + 16) * _EPS * first


# ---------------------------------------------------------------------------
# Refinement


def _axis_transforms(prismatic, lo, hi):
    """Per coordinate on which Gamma depends: (nodes q_j, matrix T with
    coefficients = T @ samples, w with w[d, a] >= sup |b_a^(d)| for the
    d-th derivative of each basis function b_a, d = 0, 1, 2). Revolute: 5
    equispaced angles, the discrete Fourier transform, b_a = e^{i a q} for
    a = 0, 1, 2, -2, -1 (|a|^d). Prismatic: the Chebyshev nodes mid +
    radius (1, 0, -1), b_a = T_a((q - mid) / radius) for a = 0, 1, 2 (1;
    a^2 / radius by Markov's inequality; T_2'' = 4 / radius^2). Both
    interpolations are exact for degree <= 2, and every row of T has l1
    norm 1 (so rounding in the samples is not amplified)."""
    transforms = []
    for is_prismatic, low, high in zip(prismatic, lo, hi):
        if is_prismatic:
            mid, radius = 0.5 * (low + high), 0.5 * (high - low)
            matrix = np.array([[0.25, 0.5, 0.25], [0.5, 0.0, -0.5], [0.25, -0.5, 0.25]], dtype=complex)
            transforms.append((mid + radius * np.array([1.0, 0.0, -1.0]), matrix,
                               np.array([[1.0, 1.0, 1.0], np.array([0.0, 1.0, 4.0]) / radius,
                                         np.array([0.0, 0.0, 4.0]) / radius ** 2])))
        else:
            angles = 2.0 * np.pi * np.arange(5) / 5
            orders = np.array([0, 1, 2, -2, -1])
            transforms.append((angles, np.exp(-1j * np.outer(orders, angles)) / 5,
                               np.abs(orders)[None].astype(float) ** np.arange(3)[:, None]))
    return transforms


@njit(cache=True, nogil=True)
def _transform_grid(values, sizes, matrices, out):
    """out (count, E) = the coefficients of ``values`` (count, E), sampled on
    the tensor grid of ``sizes`` (C order), transformed along each axis l by
    ``matrices[l, :sizes[l], :sizes[l]]`` (``_axis_transforms``). In place
    in ``out``, tiles of 256 columns at a time."""
    count, width = values.shape
    flat = out.reshape(count * width)
    source = values.reshape(count * width)
    for s in range(count * width):
        flat[s] = source[s]
    tile = np.empty((5, 256), dtype=np.complex128)
    after = count * width
    before = 1
    for axis in range(len(sizes)):
        size = sizes[axis]
        after //= size
        for b in range(before):
            base = b * size * after
            for a0 in range(0, after, 256):
                span = min(256, after - a0)
                for k in range(size):
                    for a in range(span):
                        tile[k, a] = flat[base + k * after + a0 + a]
                for j in range(size):
                    row = base + j * after + a0
                    for a in range(span):
                        flat[row + a] = 0.0
                    for k in range(size):
                        weight = matrices[axis, j, k]
                        for a in range(span):
                            flat[row + a] += weight * tile[k, a]
        before *= size


@njit(cache=True, nogil=True)
def _add_squares(coefficients, weights, squares):
    """squares[s] += sum_e weights[e] |coefficients[s, e]|^2."""
    for s in range(coefficients.shape[0]):
        acc = 0.0
        for e in range(coefficients.shape[1]):
            c = coefficients[s, e]
            acc += weights[e] * (c.real * c.real + c.imag * c.imag)
        squares[s] += acc


def fourier_derivative_bounds(model, free, prismatic, lo, hi, entry_margin, memory_bytes, base,
                              pace, combination=((None, 1.0),)):
    """(V, L, H): for the coordinates l, m of ``free`` and every q (the
    other coordinates as in ``base``), V >= N(F), L_l >= N(dF/dq_l) and
    H_lm >= N(d^2 F/dq_l dq_m) for F(q) = sum_w w Gamma(q + offset) over
    ``combination`` ((offset (nv,) or None, w) pairs; Gamma itself by
    default), with N(Gamma) = sqrt(sum_k ||Gamma_k||_2^2) (a generator: one
    step per chunk of Gamma evaluations, ``pace.chunk``; (V, L, H) is its
    return value).

    Gamma is a trigonometric polynomial of degree <= 2 in every revolute
    angle and a polynomial of degree <= 2 in every prismatic displacement
    (tested in test_coriolis_constant.py), so with P = 5^r 3^p samples on
    the tensor grid of ``_axis_transforms`` its expansion
    ``Gamma(q) = sum_alpha C_alpha prod_l b_alpha_l(q_l)`` is exact, and
    ``N(dGamma/dq_l) <= sum_alpha w[1, alpha_l] nu_alpha`` (|b| <= 1 on the
    domain), and likewise with w[1] w[1] or w[2] for the second derivatives, with
    ``nu_alpha = ||C_alpha||_F`` (>= N), or ``_pair_norms`` when all the
    coefficient tensors fit in ``memory_bytes`` at once. The entries of Gamma are
    transformed in blocks that fit ``memory_bytes`` (Gamma is evaluated
    once per block), by nogil kernels (``_transform_grid``): numpy's
    transforms of a large block held the GIL for up to 140 ms, which a
    node's callbacks waited for. Rounding: each coefficient is off by at most the
    samples' error plus a few eps per transform, ``entry_margin`` per
    entry, added to every ||C_alpha||_F. Cost: P evaluations of Gamma per
    block, P n^3 / 2 entries in all.
    """
    transforms = _axis_transforms(prismatic, lo, hi)
    sizes = tuple(len(t[0]) for t in transforms)
    grid = np.array(np.meshgrid(*[t[0] for t in transforms], indexing="ij")).reshape(len(free), -1).T
    count = len(grid)
    n = model.nv
    # Gamma[i, j, k] = Gamma[i, k, j]: the entries with j <= k, the others counted twice
    i, j, k = np.nonzero(np.ones((n, n, n), dtype=bool))
    entries = np.flatnonzero(j <= k)
    weights = np.where(j[entries] < k[entries], 2.0, 1.0)
    whole = 48 * count * n ** 3 <= memory_bytes
    if whole:  # every coefficient tensor at once: N itself rather than Frobenius
        entries, weights = np.arange(n ** 3), np.ones(n ** 3)
    block = len(entries) if whole else max(1, int(memory_bytes // (24 * count)))
    matrices = np.zeros((len(free), 5, 5), dtype=complex)
    for axis, (_, matrix, _) in enumerate(transforms):
        matrices[axis, :len(matrix), :len(matrix)] = matrix
    squares = np.zeros(sizes)
    q = np.tile(base, (count, 1))
    q[:, free] = grid
    for start in range(0, len(entries), block):
        picked = entries[start:start + block]
        values = np.zeros((count, len(picked)))
        chunk = pace.chunk(model)
        for first in range(0, count, chunk):
            for offset, weight in combination:
                some = q[first:first + chunk] if offset is None else q[first:first + chunk] + offset
                values[first:first + chunk] += weight * christoffel_symbols(model, some).reshape(-1, n ** 3)[:, picked]
                yield
        coefficients = np.empty(values.shape, dtype=complex)
        _transform_grid(values, np.array(sizes), matrices, coefficients)
        del values
        if whole:
            _pair_norms(coefficients, n, squares.reshape(-1))
            squares **= 2
        else:
            _add_squares(coefficients, weights[start:start + block], squares.reshape(-1))
        yield
    norms = np.sqrt(squares) + np.sqrt(n ** 3) * entry_margin * sum(abs(w) for _, w in combination)
    m = len(free)

    def bound(*axes):
        """sum_alpha nu_alpha prod_l sup |b^(d_l)|, d_l = how often l is in axes"""
        weight = np.ones(sizes)
        for l in set(axes):
            shape = [1] * m
            shape[l] = sizes[l]
            weight = weight * transforms[l][2][axes.count(l)].reshape(shape)
        return (norms * weight).sum()

    inflate = 1.0 + 64 * (m + 2) * _EPS
    value = bound()
    first = np.array([bound(l) for l in range(m)])
    second = np.array([[bound(l, p) for p in range(m)] for l in range(m)])
    return value * inflate, first * inflate, second * inflate


@njit(cache=True, nogil=True)
def _pair_norms(coefficients, n, out):
    """out[s] = sqrt(N(Re C)^2 + N(Im C)^2) for each coefficient tensor C =
    coefficients[s] (n^3 entries), N(A) = sqrt(sum_k ||A[:, :, k]||_2^2)
    from the eigenvalues of the Gram matrices (``bounds``), inflated by
    1e-9 for their rounding (relative error O(n eps)).

    Each real term of the expansion is 2 Re(C e^{i phi}) T (a coefficient
    and its conjugate, T a product of Chebyshev polynomials) or C T (C
    real): its N is at most 2 sqrt(N(Re C)^2 + N(Im C)^2) |T| because
    N(A cos phi - B sin phi) <= N(A) |cos phi| + N(B) |sin phi|, and the sum
    over the pair counts each member once."""
    grams = np.empty((n, n, n + 2))
    part = np.empty(n * n * n)
    for s in range(coefficients.shape[0]):
        total = 0.0
        for imaginary in (False, True):
            for e in range(n * n * n):
                part[e] = coefficients[s, e].imag if imaginary else coefficients[s, e].real
            value = config_constant_kernel(part.reshape((n, n, n)), grams)
            total += value * value
        out[s] = np.sqrt(total) * (1.0 + 1e-9)


class _Lines(NamedTuple):
    """The exact restrictions of Gamma to the lines c + t e_l through a box's
    centre, one row per coordinate l, from samples at c + ``offsets[l, j]``
    e_l (j < ``samples[l]``): dGamma/dq_l(c) = sum_j ``derivative[l, j]``
    Gamma_j, and ``Gamma(c + t e_l) = Gamma(c) + t dGamma/dq_l(c) + sum_r
    phi_r(t) A_r`` (r < ``rests[l]``) with ``A_r = sum_j curvature[l, r,
    j] Gamma_j`` over the samples, the centre first (j = 0), and
    ``|phi_r(t)| <= min(scale[l, r] |t|^power[l, r], cap[l, r])``."""

    offsets: np.ndarray
    samples: np.ndarray
    derivative: np.ndarray
    rests: np.ndarray
    curvature: np.ndarray
    scale: np.ndarray
    power: np.ndarray
    cap: np.ndarray


def _lines(prismatic, lo, hi):
    """The ``_Lines`` of the coordinates, exact for degree <= 2.

    Revolute: 5 equispaced angles s_j = 2 pi j / 5 (s_0 = 0, the centre),
    through which the trigonometric interpolant ``Gamma(c + t e_l) = E_0 +
    sum_{a=1,2} A_a cos(a t) + B_a sin(a t)`` passes, A_a = 2/5 sum_j
    Gamma_j cos(a s_j), B_a = 2/5 sum_j Gamma_j sin(a s_j); its derivative at
    t = 0 is sum_a a B_a, and the rest ``A_a (cos(a t) - 1) + B_a (sin(a t)
    - a t)`` with |cos x - 1| <= min(x^2 / 2, 2), |sin x - x| <= |x|^3 / 6.
    Prismatic: the parabola through c and c +- r (r the joint's half range):
    central difference and A = (Gamma_+ + Gamma_- - 2 Gamma(c)) / (2 r^2)
    times t^2."""
    m = len(prismatic)
    angles = 2.0 * np.pi * np.arange(5) / 5
    trig = 0.4 * np.array([np.cos(angles), np.sin(angles), np.cos(2 * angles), np.sin(2 * angles)])
    lines = _Lines(np.zeros((m, 4)), np.full(m, 4), np.zeros((m, 4)), np.full(m, 4),
                   np.zeros((m, 4, 5)), np.zeros((m, 4)), np.zeros((m, 4)), np.full((m, 4), np.inf))
    for l, (is_prismatic, low, high) in enumerate(zip(prismatic, lo, hi)):
        if is_prismatic:
            radius = 0.5 * (high - low)
            lines.samples[l] = 2
            lines.offsets[l, :2] = -radius, radius
            lines.derivative[l, :2] = np.array([-0.5, 0.5]) / radius
            lines.rests[l] = 1
            lines.curvature[l, 0, :3] = np.array([-2.0, 1.0, 1.0]) / (2.0 * radius ** 2)
            lines.scale[l, 0], lines.power[l, 0] = 1.0, 2.0
        else:
            lines.offsets[l] = angles[1:]
            lines.derivative[l] = (trig[1] + 2.0 * trig[3])[1:]
            lines.curvature[l] = trig
            lines.scale[l] = np.array([0.5, 1 / 6, 0.5 * 4, 8 / 6])
            lines.power[l] = 2.0, 3.0, 2.0, 3.0
            lines.cap[l] = 2.0, np.inf, 2.0, np.inf
    return lines


@njit(cache=True, nogil=True)
def _norm_bound(A):
    """An upper bound on N(A) = sqrt(sum_k ||A[:, :, k]||_2^2) with no
    eigen-solver: ||B||_2^2 <= min(||B||_F^2, ||B||_1 ||B||_inf), inflated by
    4 (n + 2) eps for the rounding of its sums."""
    n = A.shape[0]
    total = 0.0
    for k in range(n):
        frobenius = 0.0
        rows = 0.0
        for i in range(n):
            row = 0.0
            for j in range(n):
                row += abs(A[i, j, k])
                frobenius += A[i, j, k] * A[i, j, k]
            rows = max(rows, row)
        columns = 0.0
        for j in range(n):
            column = 0.0
            for i in range(n):
                column += abs(A[i, j, k])
            columns = max(columns, column)
        total += min(frobenius, rows * columns)
    return np.sqrt(total) * (1.0 + 4 * (n + 2) * _EPS)


@njit(cache=True, nogil=True)
def _box_kernel(gamma, halves, samples, derivative, rests, curvature, scale, power, cap,
                lipschitz, hessian, margin, sampled, grams, bounds, excess, centre_values):
    """The bounds of ``_box_bounds`` from the boxes' samples gamma (boxes,
    stride, n^3): the centre, then each line's samples in order. Writes
    bounds (boxes,), excess (boxes, m) and k_c at the centres."""
    count, m = halves.shape
    size3 = gamma.shape[2]
    n = grams.shape[0]
    slopes = np.empty((m, size3))
    rest = np.empty(size3)
    vertex = np.empty(size3)
    size = np.empty(m)
    corners = min(2, m)
    chosen = np.empty(corners, dtype=np.int64)
    taken = np.empty(m, dtype=np.bool_)
    for b in range(count):
        centre = gamma[b, 0]
        h = halves[b]
        value = config_constant_kernel(centre.reshape((n, n, n)), grams)
        centre_values[b] = value
        row = 1
        error = 0.0
        own_total = 0.0
        for l in range(m):
            weight_sum = 0.0
            for j in range(samples[l]):
                weight_sum += abs(derivative[l, j])
            slopes[l] = 0.0
            for j in range(samples[l]):
                weight = derivative[l, j]
                for e in range(size3):
                    slopes[l, e] += weight * gamma[b, row + j, e]
            size[l] = _norm_bound(slopes[l].reshape((n, n, n))) * h[l]
            excess[b, l] = size[l] + h[l] * weight_sum * sampled
            error += h[l] * weight_sum * sampled
            own = 0.0
            for r in range(rests[l]):
                weight_sum = abs(curvature[l, r, 0])
                for j in range(samples[l]):
                    weight_sum += abs(curvature[l, r, j + 1])
                weight = curvature[l, r, 0]
                for e in range(size3):
                    rest[e] = weight * centre[e]
                for j in range(samples[l]):
                    weight = curvature[l, r, j + 1]
                    for e in range(size3):
                        rest[e] += weight * gamma[b, row + j, e]
                factor = min(scale[l, r] * h[l] ** power[l, r], cap[l, r])
                own += factor * (_norm_bound(rest.reshape((n, n, n))) + margin + weight_sum * sampled)
            own = min(own, 0.5 * hessian[l, l] * h[l] * h[l])
            excess[b, l] += own
            own_total += own
            row += samples[l]
        mixed = 0.0
        for l in range(m):
            for k in range(l):
                term = h[k] * h[l] * hessian[k, l]
                mixed += term
                excess[b, l] += 0.5 * term
                excess[b, k] += 0.5 * term
        # the vertices of the linear model along the sides of largest size
        taken[:] = False
        for c in range(corners):
            best = -1
            for l in range(m):
                if not taken[l] and (best < 0 or size[l] > size[best]):
                    best = l
            chosen[c] = best
            taken[best] = True
        unchosen = 0.0
        for l in range(m):
            if not taken[l]:
                unchosen += size[l]
        top = -np.inf
        for v in range(1 << corners):
            for e in range(size3):
                vertex[e] = centre[e]
            for c in range(corners):
                step = (1.0 if (v >> c) & 1 else -1.0) * h[chosen[c]]
                for e in range(size3):
                    vertex[e] += step * slopes[chosen[c], e]
            top = max(top, config_constant_kernel(vertex.reshape((n, n, n)), grams))
        second = top + margin + unchosen + error + own_total + mixed
        first = value + margin
        for l in range(m):
            first += h[l] * lipschitz[l]
        bounds[b] = min(first, second)
        if np.isnan(first) or np.isnan(second) or np.isnan(top):
            bounds[b] = np.inf  # an overflow: no bound from this box


class _BoxSetup(NamedTuple):
    """What the box bounds of one model need (``_box_setup``).

    - ``free``: the coordinates the boxes span, over [``low``, ``high``];
      ``lines``: their ``_Lines``.
    - ``base``: q with every other coordinate at its value (0, or within the
      limits; frozen ones at their mid-range).
    - ``derivatives``: (V, L, H) of ``fourier_derivative_bounds`` over
      ``free`` at ``base``.
    - ``frozen_bound``: N(Gamma(q) - Gamma(q with the frozen coordinates at
      ``base``)) <= frozen_bound for every q within the limits.
    - ``margin``, ``entry_margin``: rounding (``_value_margin``).
    """

    free: np.ndarray
    low: np.ndarray
    high: np.ndarray
    lines: _Lines
    base: np.ndarray
    derivatives: tuple
    frozen_bound: float
    margin: float
    entry_margin: float


def _box_bounds(model, setup, centres, halves, offer, pace):
    """(Upper bounds on sup k_c over boxes, each box's excess per side) (a
    generator: that pair is its return value).

    Along each side the restriction of Gamma is known exactly (``_Lines``):
    ``Gamma(c + t_l e_l) = Gamma(c) + t_l D_l + R_l(t_l)``, and the rest is
    mixed: ``Gamma(c + t) - Gamma(c) - sum_l (Gamma(c + t_l e_l) - Gamma(c))``
    is, telescoping one coordinate at a time, a sum over pairs p < l of
    integrals of d^2 Gamma/dq_p dq_l, so its N is at most ``sum_{p<l} h_p
    h_l H_pl`` (``fourier_derivative_bounds``). N is convex, so
    N(Gamma(c) + sum_{l in S} t_l D_l) over the box is largest at one of its
    2^|S| vertices, computed for the (at most 2) sides S of largest h_l
    N'(D_l), N' the cheap ``_norm_bound`` >= N; the other sides add h_l
    N'(D_l); each side adds ``sum_r min(scale_r h^power_r, cap_r) N'(A_r)``
    for R_l (or H_ll h_l^2 / 2, the smaller). The
    bound is also at most the Lipschitz bound ``k_c(c) + sum_l L_l h_l``
    (N is a norm). Rounding: ``margin`` per computed N, and the samples'
    error ``entry_margin`` per entry through the l1 norm of the weights
    that combine them. A side's excess (its share of the bound above
    k_c(c): first-order, its own rest and half its mixed terms) picks the
    side to halve. The setup's frozen coordinates stay at ``base`` and add
    ``frozen_bound`` (``_BoxSetup``). ``offer(values, q)`` receives k_c at
    the centres. Cost per box: 4 (revolute) or 2 (prismatic) evaluations of
    Gamma per side, and 2^|S| + 1 evaluations of N, O(n^4) each.
    """
    free, lines, base, (_, lipschitz, hessian) = setup.free, setup.lines, setup.base, setup.derivatives
    count, m = centres.shape
    n = model.nv
    stride = 1 + lines.samples.sum()
    points = np.repeat(centres, stride, axis=0).reshape(count, stride, m)
    row = 1
    for l in range(m):
        points[:, row:row + lines.samples[l], l] += lines.offsets[l, :lines.samples[l]]
        row += lines.samples[l]
    q = np.tile(base, (count * stride, 1))
    q[:, free] = points.reshape(-1, m)
    gamma = np.empty((len(q), n, n, n))
    chunk = pace.chunk(model)
    for start in range(0, len(q), chunk):
        # into place: a copy would hold the GIL, which a node's outputs wait for
        christoffel_symbols(model, q[start:start + chunk], out=gamma[start:start + chunk])
        yield
    gamma = gamma.reshape(count, stride, n ** 3)
    halves = np.ascontiguousarray(halves)
    bounds = np.empty(count)
    excess = np.empty((count, m))
    values = np.empty(count)

    def boxes(start, stop):
        _box_kernel(gamma[start:stop], halves[start:stop], *lines[1:], lipschitz, hessian, setup.margin,
                    n ** 1.5 * setup.entry_margin, np.empty((n, n, n + 2)), bounds[start:stop],
                    excess[start:stop], values[start:stop])

    if pace.parallel:
        in_chunks(boxes, count)
    else:
        boxes(0, count)
    offer(values, q[::stride])
    yield
    return (bounds + setup.frozen_bound) * (1.0 + 64 * (m + 2) * _EPS), excess


@njit(cache=True, nogil=True)
def _keep_boxes(centres, levels, bounds, axes, live, drop_below, settle_below, settled):
    """Keep, in place, the boxes among the first ``live`` whose bound is above
    ``settle_below``; one at most ``drop_below`` cannot hold K_c, one in
    between needs no more work and raises ``settled``. Returns (boxes kept,
    settled)."""
    kept = 0
    for b in range(live):
        bound = bounds[b]
        if bound <= settle_below:
            if bound > drop_below:
                settled = max(settled, bound)
            continue
        centres[kept] = centres[b]
        levels[kept] = levels[b]
        bounds[kept] = bound
        axes[kept] = axes[b]
        kept += 1
    return kept, settled


@njit(cache=True, nogil=True)
def _largest_bound(bounds, live):
    """The largest of the first ``live`` bounds (-inf for none)."""
    top = -np.inf
    for b in range(live):
        top = max(top, bounds[b])
    return top


@njit(cache=True, nogil=True)
def _largest_boxes(bounds, live, count, out):
    """out[:count] = the indices, ascending, of ``count`` of the first
    ``live`` boxes with no larger bound left out (a partition: O(live))."""
    threshold = np.partition(bounds[:live].copy(), live - count)[live - count]
    taken = 0
    for b in range(live):  # at most count - 1 are above the threshold
        if bounds[b] > threshold:
            out[taken] = b
            taken += 1
    for b in range(live):
        if taken < count and bounds[b] == threshold:
            out[taken] = b
            taken += 1
    out[:count].sort()


@njit(cache=True, nogil=True)
def _replace_boxes(centres, levels, bounds, axes, live, parents, child_centres, child_levels,
                   child_bounds, child_axes, drop_below, settle_below, settled):
    """The split ``parents`` (ascending) leave the first ``live`` boxes and
    their children arrive, those above ``settle_below`` kept as in
    ``_keep_boxes``: into the parents' slots first, then at the end; the
    parents' slots left over are filled from the end, highest first (so
    the box moved is never one that leaves). O(children). Returns (boxes,
    settled)."""
    filled = 0
    for c in range(len(child_bounds)):
        bound = child_bounds[c]
        if bound <= settle_below:
            if bound > drop_below:
                settled = max(settled, bound)
            continue
        if filled < len(parents):
            slot = parents[filled]
            filled += 1
        else:
            slot = live
            live += 1
        centres[slot] = child_centres[c]
        levels[slot] = child_levels[c]
        bounds[slot] = bound
        axes[slot] = child_axes[c]
    for i in range(len(parents) - 1, filled - 1, -1):
        slot = parents[i]
        last = live - 1
        if slot != last:
            centres[slot] = centres[last]
            levels[slot] = levels[last]
            bounds[slot] = bounds[last]
            axes[slot] = axes[last]
        live -= 1
    return live, settled


class CoriolisConstantRefinement:
    """The interval [lower, upper] that holds K_c of one model, refined on
    demand (module docstring: the method and why ``upper`` is guaranteed).

    Construction computes the first bound (``first_upper_bound``, O(nb^3))
    and k_c at one configuration (O(n^4)). ``refine(seconds)`` then works in
    steps of one chunk of evaluations each (nogil numba kernels, so a
    background thread does not hold the GIL for long): 8192 random samples
    within the limits, a compass ascent from the 24 best, then the branch
    and bound of ``_branch_and_bound``. ``upper`` only decreases, ``lower``
    only increases. Memory: chunks of at most ``_CHUNK_DOUBLES`` doubles of
    Gamma, three quarters of ``memory_limit_mb`` for the expansion of Gamma
    (freed before the boxes are made) and half for the boxes (9 m + 9 bytes
    each, m coordinates).
    Refinement has ``finished`` when ``upper <= tolerance * lower``, when
    the boxes would exceed their memory, or when there is nothing left to
    do (the search for ``lower`` is over and no branch and bound applies:
    mimic-reduced and floating-base models, whose search runs over the
    joints with the base at the identity pose, keep their first bound).
    """

    def __init__(self, model, *, tolerance=1.10, memory_limit_mb=_DEFAULT_MEMORY_MB):
        if not (isinstance(tolerance, (int, float)) and 1.0 <= tolerance < np.inf):
            raise CoriolisConstantError(
                f"tolerance must be a number >= 1 (the ratio upper / lower to reach), got {tolerance!r}")
        if not (isinstance(memory_limit_mb, (int, float)) and 0.0 < memory_limit_mb < np.inf):
            raise CoriolisConstantError(
                f"memory_limit_mb must be a positive number, got {memory_limit_mb!r}")
        self.model = model
        self.tolerance = float(tolerance)
        self.memory_limit_mb = float(memory_limit_mb)
        self._publish_lock = threading.Lock()
        self._work_lock = threading.Lock()
        self.first_bound, _ = first_upper_bound(model)
        lower, upper, kinds = joint_limits(model)
        limited = np.isfinite(lower) & np.isfinite(upper)
        self._kinds = kinds
        self._limited = limited
        self._lower_limit = np.where(limited, lower, -np.pi)
        self._upper_limit = np.where(limited, upper, np.pi)
        witness = at_identity_base(model, np.clip(0.0, self._lower_limit, self._upper_limit)[None])[0]
        value = config_coriolis_constant(model, witness[None])[0]
        if np.isnan(value):
            value = 0.0  # k_c overflows there: 0 is still a lower bound
        self._interval = KcInterval(float(value), max(self.first_bound, float(value)), witness, False)
        self._pace = _Pace()
        self._work = self._steps()

    @property
    def interval(self) -> KcInterval:
        """The current interval (an immutable tuple: reading it needs no lock)."""
        return self._interval

    def refine(self, seconds, *, parallel=False) -> KcInterval:
        """Work about ``seconds`` (one more chunk at most) and return the new
        interval; returns at once when refinement has finished. Threads
        calling it at once take turns. One thread by default (the node's
        background refinement must leave the other core to the outputs);
        ``parallel``: the evaluations run on every core (calls.py's pool)."""
        if not (isinstance(seconds, (int, float)) and seconds >= 0.0):
            raise CoriolisConstantError(f"refine: seconds must be a number >= 0, got {seconds!r}")
        deadline = time.monotonic() + seconds
        with self._work_lock:
            self._pace.parallel = bool(parallel)
            while not self._interval.finished and time.monotonic() < deadline:
                try:
                    next(self._work)
                except StopIteration:
                    self._publish(finished=True)
        return self._interval

    def _publish(self, lower=None, witness=None, upper=None, finished=False):
        with self._publish_lock:
            old = self._interval
            if lower is not None and lower > old.lower:
                old = old._replace(lower=float(lower), witness=np.array(witness, dtype=float))
            if upper is not None and upper < old.upper:
                old = old._replace(upper=float(max(upper, old.lower)))
            self._interval = old._replace(finished=old.finished or finished)

    def _offer(self, values, Q):
        """Raise ``lower`` to the best finite k_c in ``values`` (at Q)."""
        finite = np.where(np.isnan(values), -np.inf, values)
        best = int(np.argmax(finite)) if len(finite) else 0
        if len(finite) and finite[best] > self._interval.lower:
            self._publish(lower=finite[best], witness=at_identity_base(self.model, Q[best:best + 1])[0])

    def _steps(self):
        model = self.model
        rng = np.random.default_rng(_SEED)
        samples = rng.uniform(self._lower_limit, self._upper_limit, (_SAMPLES, len(self._lower_limit)))
        values = np.empty(_SAMPLES)
        step = max(1, _CHUNK_DOUBLES // model.nb ** 3)  # offered to lower after each
        for start in range(0, _SAMPLES, step):
            yield from _evaluate(model, samples[start:start + step], values[start:start + step], self._pace)
            self._offer(values[start:start + step], samples[start:start + step])
        best = np.argsort(np.where(np.isnan(values), -np.inf, values))[-_STARTS:]
        yield from _compass_ascent(model, samples[best], values[best], self._lower_limit,
                                   self._upper_limit, self._offer, self._pace)
        if not np.isfinite(self.first_bound) or model.reduced or model.floating:
            return
        yield from self._branch_and_bound()

    def _domain(self):
        """(coordinates on which Gamma depends, prismatic?, low, high): q
        entries whose joint has a parent body (the others move their subtree
        rigidly), over their limits; a revolute range wider than a turn is
        cut to one turn (Gamma is 2 pi periodic)."""
        free = np.flatnonzero(np.asarray(self.model.parent) >= 0)
        lo, hi = self._lower_limit[free], self._upper_limit[free]
        prismatic = self._kinds[free] == PRISMATIC
        hi = np.where(prismatic, hi, np.minimum(hi, lo + 2.0 * np.pi))
        return free, prismatic, lo, hi

    def _box_setup(self):
        """The ``_BoxSetup`` of the branch and bound, or None when its grid
        is too large (a generator: the expansions of Gamma take many steps).

        A prismatic coordinate whose joint moves a leaf body (a gripper's
        finger) is frozen at its mid-range f0 when other coordinates remain:
        Gamma is a polynomial of degree <= 2 in it, c0 + c1 T1(x) + c2 T2(x)
        with x = (f - f0) / r on its Chebyshev nodes, so Gamma(f) - Gamma(f0)
        = c1 x + 2 c2 x^2 has N <= N(c1) + 2 N(c2), each bounded over q by
        ``fourier_derivative_bounds`` of c1 = (Gamma(f0 + r) - Gamma(f0 -
        r)) / 2 and c2 = (Gamma(f0 + r) + Gamma(f0 - r) - 2 Gamma(f0)) / 4.
        Only the leaf body depends on f, and on no other frozen coordinate,
        so the differences of several frozen coordinates add up. Panda's
        fingers: 15,625 grid points instead of 140,625.
        """
        model = self.model
        free, prismatic, lo, hi = self._domain()
        frozen = prismatic & ~np.isin(free, np.asarray(model.parent))
        if frozen.all():
            frozen[:] = False
        kept = ~frozen
        if np.prod(np.where(prismatic[kept], 3, 5)) > _MAX_FOURIER_SAMPLES:
            return None
        margin = _value_margin(model, self.first_bound)
        entry_margin = margin + 8 * (kept.sum() + 2) * _EPS * self.first_bound
        base = np.clip(np.zeros(model.nv), self._lower_limit, self._upper_limit)
        base[free[frozen]] = 0.5 * (lo + hi)[frozen]
        expansion = (model, free[kept], prismatic[kept], lo[kept], hi[kept], entry_margin,
                     0.75 * self.memory_limit_mb * 1e6, base)
        derivatives = yield from fourier_derivative_bounds(*expansion, self._pace)
        frozen_bound = 0.0
        for coordinate, radius in zip(free[frozen], 0.5 * (hi - lo)[frozen]):
            step = np.zeros(model.nv)
            step[coordinate] = radius
            linear, _, _ = yield from fourier_derivative_bounds(
                *expansion, self._pace, ((step, 0.5), (-step, -0.5)))
            quadratic, _, _ = yield from fourier_derivative_bounds(
                *expansion, self._pace, ((step, 0.25), (-step, 0.25), (None, -0.5)))
            frozen_bound += linear + 2.0 * quadratic
        return _BoxSetup(free[kept], lo[kept], hi[kept], _lines(prismatic[kept], lo[kept], hi[kept]), base,
                         derivatives, frozen_bound, margin, entry_margin)

    def _branch_and_bound(self):
        """Branch and bound over boxes of the limits (``_box_bounds``). A box
        whose bound is below ``lower`` cannot hold K_c, and one whose bound
        is within ``tolerance * lower`` needs no more work: both leave the
        list (the largest bound that left within the tolerance stays part
        of ``upper``). The boxes of largest bound (64, or a 16th of all, at
        most 4096 per round) are halved along the side of largest excess."""
        model = self.model
        setup = yield from self._box_setup()
        if setup is None:
            return
        lo, hi = setup.low, setup.high
        m = len(setup.free)
        # a box: its centre (m doubles), bound (1), how often each side was
        # halved (m bytes: the half-widths are exact powers of 2 of the
        # domain's) and the side to halve next (1 byte); half the budget
        max_boxes = max(1, int(self.memory_limit_mb * 1e6 / 2 / (9 * m + 9)))
        domain = 0.5 * (hi - lo)
        # boxes per call: their Gamma samples within _CHUNK_DOUBLES
        group = max(1, _CHUNK_DOUBLES // ((1 + setup.lines.samples.sum()) * model.nb ** 3))

        def evaluate(centres, halves):
            bounds = np.empty(len(centres))
            axes = np.empty(len(centres), dtype=np.uint8)
            for start in range(0, len(centres), group):
                some = slice(start, start + group)
                bounds[some], excess = yield from _box_bounds(
                    model, setup, centres[some], halves[some], self._offer, self._pace)
                axes[some] = np.argmax(excess, axis=1)
            bounds = np.minimum(bounds, self.first_bound)
            return np.where(np.isnan(bounds), self.first_bound, bounds), axes

        # the boxes, in place (the list never moves as a whole: numpy's copies
        # of a million boxes held the GIL for milliseconds every round)
        centres = np.empty((max_boxes, m))
        levels = np.zeros((max_boxes, m), dtype=np.uint8)
        bounds = np.empty(max_boxes)
        axes = np.empty(max_boxes, dtype=np.uint8)
        centres[0] = 0.5 * (lo + hi)
        bounds[:1], axes[:1] = yield from evaluate(centres[:1], domain[None])
        live, settled, dropped_at = 1, -np.inf, -np.inf
        split = np.empty(4096, dtype=np.int64)
        while True:
            lower = self._interval.lower
            if lower > dropped_at:
                live, settled = _keep_boxes(centres, levels, bounds, axes, live, lower,
                                            self.tolerance * lower, settled)
                dropped_at = lower
            self._publish(upper=max(lower, settled, _largest_bound(bounds, live)))
            if self._interval.upper <= self.tolerance * self._interval.lower:
                return
            if live == 0 or live + 4096 > max_boxes:
                return
            # each round's selection passes over every box: split enough of them to pay for it
            count = min(max(_SPLIT_BATCH, live // 16), 4096, live)
            _largest_boxes(bounds, live, count, split)
            parents = split[:count]
            rows = np.arange(count)
            side = axes[parents]
            child_levels = levels[parents]
            child_levels[rows, side] += 1
            child_halves = np.ldexp(domain, -child_levels.astype(np.int64))
            step = np.zeros_like(child_halves)
            step[rows, side] = child_halves[rows, side]
            child_centres = np.concatenate([centres[parents] - step, centres[parents] + step])
            child_bounds, child_axes = yield from evaluate(
                child_centres, np.concatenate([child_halves, child_halves]))
            live, settled = _replace_boxes(
                centres, levels, bounds, axes, live, parents, child_centres,
                np.concatenate([child_levels, child_levels]), child_bounds, child_axes, lower,
                self.tolerance * lower, settled)


_registry_lock = threading.Lock()


def refinement_for(model, *, memory_limit_mb=_DEFAULT_MEMORY_MB) -> CoriolisConstantRefinement:
    """The model's refinement (``model.cache``): made with its first bound on
    first use, so every later call continues where the last one stopped. A
    payload model is a new model, with its own first bound at once.
    ``memory_limit_mb`` applies when the refinement is made (the node makes
    it first, with its parameter's value)."""
    refinement = model.cache.get("kc_refinement")
    if refinement is None:
        with _registry_lock:
            refinement = model.cache.get("kc_refinement")
            if refinement is None:
                refinement = model.cache["kc_refinement"] = CoriolisConstantRefinement(
                    model, memory_limit_mb=memory_limit_mb)
    return refinement


def set_global_constants(model, values):
    """``values[..., 2]`` and ``values[..., 6]`` (BOUNDS_FIELDS: kc_global
    and kc_global_lower) = the model's current interval for K_c, both from
    one snapshot of it. On every joint state of the node: a sample's (7,)
    takes two scalar stores (an ellipsis store costs 0.5 us)."""
    interval = refinement_for(model).interval
    if values.ndim == 1:
        values[2] = interval.upper
        values[6] = interval.lower
    else:
        values[:, 2] = interval.upper
        values[:, 6] = interval.lower


def coriolis_constant_interval(model, *, time_budget=60.0, parallel=True) -> KcInterval:
    """K_c's interval after refining for at most ``time_budget`` seconds
    (less when refinement finishes: upper <= 1.10 lower, or nothing more
    to gain), on every core unless ``parallel=False`` (the caller waits for
    it: the replay, a script). Continues the model's refinement
    (``refinement_for``), so a second call starts where the first stopped."""
    if not (isinstance(time_budget, (int, float)) and time_budget >= 0.0):
        raise CoriolisConstantError(f"time_budget must be a number >= 0, got {time_budget!r}")
    return refinement_for(model).refine(time_budget, parallel=parallel)

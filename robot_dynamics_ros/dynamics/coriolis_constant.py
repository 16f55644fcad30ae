"""A guaranteed interval for the global Coriolis constant K_c = sup_q k_c(q).

``k_c(q) = sqrt(sum_k ||Gamma_k(q)||_2^2)`` (MATH.md); ``K_c`` is its supremum
over the joint limits (continuous joints: all angles). Controllers use K_c in
stability proofs, so what is published as ``kc_global`` must be an upper
bound that holds for every q, rounding included. This module keeps, per
model, an interval ``[lower, upper]`` that contains K_c:

1. **First bound** (construction, O(nb^3) time, O(nb^2) memory, about a
   millisecond at 100 joints): q-independent bounds on every |Gamma_ijk|
   from the MATH.md derivative formula of M, then the spectral norms of the
   nonnegative majorants (Perron-Frobenius and the Collatz-Wielandt upper
   bound). See ``first_upper_bound`` and docs/coriolis_constant.md.
2. **Lower end**: the largest k_c(q) computed at configurations within the
   limits (random samples, then a compass ascent), with its witness q.
3. **Refinement of the upper end** (branch and bound over boxes of the joint
   coordinates on which Gamma depends): each Gamma_ijk is a trigonometric
   polynomial of degree <= 2 in every revolute angle (and a polynomial of
   degree <= 2 in every prismatic displacement). The Szegő inequality
   ``p'^2 + N^2 p^2 <= N^2 sup p^2`` for such polynomials (G. Szegő 1928;
   A. C. Schaeffer, Bull. AMS 47 (1941) 565-579) makes, for any unit
   functional phi on the Gamma tensors, ``arccos(phi(Gamma(q)) / K)``
   2-Lipschitz in every coordinate, so a box of half-widths h and centre c
   satisfies ``sup_box k_c <= K_c`` and ``K_c <= k_c(c) / cos(2 ||h||_1)``
   for the box holding a maximiser. See ``box_bound``.

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

from .bounds import config_coriolis_constant, joint_limits
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
# boxes split per branch-and-bound round
_SPLIT_BATCH = 512
_DEFAULT_MEMORY_MB = 100.0


class KcInterval(NamedTuple):
    """K_c lies in ``[lower, upper]``.

    - ``lower``: the largest k_c(q) computed at a configuration within the
      limits, ``witness``.
    - ``upper``: a guaranteed upper bound on K_c, rounding included (``inf``
      when a prismatic joint has no limits).
    - ``witness``: q (length ``model.nv``) where ``lower`` was computed.
    - ``finished``: refinement reached its tolerance or cannot improve.
    """

    lower: float
    upper: float
    witness: np.ndarray
    finished: bool


# ---------------------------------------------------------------------------
# First bound


@njit(cache=True, nogil=True)
def _tree_geometry(parent, edge):
    """``distance[a, b]``: an upper bound on |o_a - o_b| for every q, with
    ``edge[i]`` an upper bound on |o_i - o_parent(i)| (the world origin for
    root bodies). The distance
    bound is the sum of the edges on the tree path through the lowest common
    ancestor (triangle inequality). O(nb^2) after O(nb depth)."""
    nb = parent.shape[0]
    related = np.zeros((nb, nb), dtype=np.bool_)
    height = np.zeros(nb)
    for i in range(nb):
        height[i] = edge[i] + (height[parent[i]] if parent[i] >= 0 else 0.0)
        a = i
        while a >= 0:
            related[a, i] = True
            a = parent[a]
    distance = np.zeros((nb, nb))
    for a in range(nb):
        for b in range(nb):
            common = b
            while common >= 0 and not related[common, a]:
                common = parent[common]
            root = height[common] if common >= 0 else 0.0
            distance[a, b] = height[a] + height[b] - 2.0 * root
    return distance


@njit(cache=True, nogil=True)
def _gamma_bounds(parent, revolute, distance, mass, com_norm, rot_norm, G):
    """G[i, j, k] >= |Gamma[i, j, k]| for every q, body by body.

    M = sum over bodies B of M^B, M^B_ab = S_a^T I_B S_b for the joints a, b
    that move B, and the MATH.md derivatives give, for a chain of joints
    above B, ``dM^B_ab/dq_c = -[c below a] (S_c x S_a)^T I_B S_b
    - [c below b] S_a^T I_B (S_c x S_b)`` (the two terms cancel when c is
    above both: B turns rigidly). Each bilinear form is the same about any
    point; about B's CoM, I_B = diag(I_CoM, m 1), so
    ``|X^T I_B Y| <= lambda_max(I_CoM) |x_w| |y_w| + m |x_v| |y_v|`` with
    ``|S_a| <= (1, r_a)`` (revolute: unit axis, moment arm r_a >= |o_a -
    CoM_B|) or ``(0, 1)`` (prismatic) in (angular, linear) parts, and
    ``S_c x S_a`` bounded by ``(w_c w_a, w_c v_a + v_c w_a)``. Gamma^B is
    bounded through its definition by the three derivatives. Cost:
    sum over bodies of depth^3, O(nb d^3) (O(n^4 / 4) for a serial chain).
    """
    nb = parent.shape[0]
    chain = np.empty(nb, dtype=np.int64)
    w = np.empty(nb)
    v = np.empty(nb)
    G[:] = 0.0
    for body in range(nb):
        depth = 0
        a = body
        while a >= 0:
            chain[depth] = a
            depth += 1
            a = parent[a]
        # position p in chain: 0 = the body's own joint, deeper = nearer the root
        for p in range(depth):
            a = chain[p]
            if revolute[a]:
                w[p] = 1.0
                v[p] = distance[a, body] + com_norm[body]
            else:
                w[p] = 0.0
                v[p] = 1.0
        lam, m = rot_norm[body], mass[body]
        # T(c, a, b) = lam w_c w_a w_b + m (w_c v_a + v_c w_a) v_b bounds
        # |(S_c x S_a)^T I_B S_b|; with j at or below k in the chain,
        # 2 Gamma^B_ijk <= [k below i] T(k,i,j) + [j below i] T(j,i,k)
        # + [j below k] T(j,k,i) + [i below j] T(i,j,k) + [i below k] T(i,k,j)
        for pi in range(depth):
            i = chain[pi]
            wi, vi = w[pi], v[pi]
            for pj in range(depth):
                j = chain[pj]
                wj, vj = w[pj], v[pj]
                for pk in range(pj, depth):
                    wk, vk = w[pk], v[pk]
                    total = 0.0
                    if pk < pi:
                        total += lam * wk * wi * wj + m * (wk * vi + vk * wi) * vj
                    if pj < pi:
                        total += lam * wj * wi * wk + m * (wj * vi + vj * wi) * vk
                    if pj < pk:
                        total += lam * wj * wk * wi + m * (wj * vk + vj * wk) * vi
                    if pi < pj:
                        total += lam * wi * wj * wk + m * (wi * vj + vi * wj) * vk
                    if pi < pk:
                        total += lam * wi * wk * wj + m * (wi * vk + vi * wk) * vj
                    G[i, j, chain[pk]] += 0.5 * total
    # only k at or above j in the chain was summed: Gamma is symmetric in (j, k)
    for i in range(nb):
        for j in range(nb):
            for k in range(nb):
                if G[i, j, k] < G[i, k, j]:
                    G[i, j, k] = G[i, k, j]


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
def _first_bound_kernel(parent, revolute, edge, mass, com_norm, rot_norm, coordinate_map):
    """(sqrt(sum_k ||G_k||^2), the nv norm bounds) for q of length nv =
    coordinate_map.shape[1]; ``G_k >= |Gamma_k|`` entrywise. With a mimic
    map J (q_full = J q + b), ``|Gamma_r[i,j,k]| <= sum |J_ai||J_bj||J_ck|
    G[a,b,c]``. O(nb d^3 + nv^3) time, O(nb^3) memory."""
    nb, nv = coordinate_map.shape
    distance = _tree_geometry(parent, edge)
    G = np.empty((nb, nb, nb))
    _gamma_bounds(parent, revolute, distance, mass, com_norm, rot_norm, G)
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
    ||G_k||_2^2). Cost O(nb d^3) for depth d. ``inf`` when a prismatic
    joint has no limits.
    """
    lower, upper, kinds = joint_limits(model)
    if np.any((kinds == PRISMATIC) & ~(np.isfinite(lower) & np.isfinite(upper))):
        return np.inf, np.full(model.nv, np.inf)
    travel = _body_travel(model, lower, upper)
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
        np.ascontiguousarray(model.coordinate_map, dtype=float))
    margin = _first_bound_margin(model.nb)
    return float(value * margin), norms * margin


# ---------------------------------------------------------------------------
# Evaluation of k_c in chunks, lower end


def _chunk_size(model):
    """Samples per k_c evaluation: ``_CHUNK_DOUBLES`` doubles of Gamma at
    most, so memory stays bounded whatever n (one sample at n >= 159)."""
    return max(1, _CHUNK_DOUBLES // model.nb ** 3)


def _evaluate(model, Q, out):
    """k_c(Q[s]) into out, one chunk per step (a generator: the caller may
    stop between chunks). Each chunk runs the nogil kernels of
    ``bounds.config_coriolis_constant``; overflow gives NaN."""
    chunk = _chunk_size(model)
    for start in range(0, len(Q), chunk):
        out[start:start + chunk] = config_coriolis_constant(model, Q[start:start + chunk])
        yield


def _compass_ascent(model, starts, values, lower, upper, offer):
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
    moves = np.concatenate([np.eye(model.nv), -np.eye(model.nv)])
    climbing = np.arange(len(q))
    while len(climbing):
        candidates = np.clip(q[climbing, None] + moves * step[climbing, None], lower, upper)
        flat = candidates.reshape(-1, model.nv)
        tried = np.empty(len(flat))
        yield from _evaluate(model, flat, tried)
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


def box_bound(values, halves, cap):
    """Upper bounds on sup k_c over boxes (one per row) given k_c at their
    centres (``values``, margin included) and their half-widths (``halves``,
    in angle coordinates): ``values / cos(2 ||h||_1)`` when 2 ||h||_1 <
    pi/2, else ``cap`` (the first bound), and never above ``cap``.

    Why: let K = sup k_c over the whole domain (all angles), q* the
    maximiser in a box B, and phi a unit functional of the norm
    N(Gamma) = sqrt(sum_k ||Gamma_k||_2^2) with phi(Gamma(q*)) = N(Gamma(q*)).
    f = phi(Gamma(q)) is a real trigonometric polynomial of degree <= 2 in
    each coordinate with |f| <= K, so f'^2 + 4 f^2 <= 4 K^2 along every
    coordinate line (Szegő's inequality) and arccos(f / K) is 2-Lipschitz
    in each coordinate, 2-Lipschitz in the l1 norm. From q* to the centre
    c: arccos(f(c) / K) <= arccos(sup_B k_c / K) + 2 ||h||_1, and k_c(c) >=
    f(c). For the box holding the global maximiser sup_B = K, so
    K <= k_c(c) / cos(2 ||h||_1); every other box obeys the same bound of
    its own, so the largest over all boxes bounds K. Prismatic joints
    enter through q = mid - radius cos(angle), which makes the polynomial of
    degree 2 in q one of degree 2 in the angle. O(boxes m).
    """
    reach = 2.0 * halves.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = np.where(reach < 0.5 * np.pi, values / np.cos(np.minimum(reach, 0.5 * np.pi)), np.inf)
    bound = np.where(np.isnan(bound), np.inf, bound) * (1.0 + 64 * _EPS)
    return np.minimum(bound, cap)


class CoriolisConstantRefinement:
    """The interval [lower, upper] that holds K_c of one model, refined on
    demand (module docstring: the method and why ``upper`` is guaranteed).

    Construction computes the first bound (``first_upper_bound``, O(nb^3))
    and k_c at one configuration (O(n^4)). ``refine(seconds)`` then works in
    steps of one chunk of k_c evaluations each (nogil numba kernels, so a
    background thread does not hold the GIL for long): 8192 random samples
    within the limits, a compass ascent from the 24 best, then branch and
    bound over boxes of the coordinates on which Gamma depends (``box_bound``),
    splitting the boxes of largest bound, 512 per round, in half along their
    widest coordinate, and dropping boxes whose bound is below ``lower``.
    ``upper`` only decreases, ``lower`` only increases. The boxes take
    (2 m + 2) doubles each, m the number of coordinates: refinement stops
    (``finished``) when they would exceed ``memory_limit_mb``, or when
    ``upper <= tolerance * lower``. The branch and bound needs ~(4 m)^m
    boxes before its first finite bound, so it is only started when those
    fit in memory (m <= 4 or so); mimic-reduced models, whose Gamma is not a
    trigonometric polynomial of the reduced q, keep the first bound.
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
        witness = np.clip(np.zeros(model.nv), self._lower_limit, self._upper_limit)
        value = config_coriolis_constant(model, witness[None])[0]
        if np.isnan(value):
            value = 0.0  # k_c overflows there: 0 is still a lower bound
        self._interval = KcInterval(float(value), max(self.first_bound, float(value)), witness, False)
        self._work = self._steps()

    @property
    def interval(self) -> KcInterval:
        """The current interval (an immutable tuple: reading it needs no lock)."""
        return self._interval

    def refine(self, seconds) -> KcInterval:
        """Work about ``seconds`` (one more chunk at most) and return the new
        interval; returns at once when refinement has finished. Threads
        calling it at once take turns."""
        if not (isinstance(seconds, (int, float)) and seconds >= 0.0):
            raise CoriolisConstantError(f"refine: seconds must be a number >= 0, got {seconds!r}")
        deadline = time.monotonic() + seconds
        with self._work_lock:
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
            self._publish(lower=finite[best], witness=Q[best])

    def _steps(self):
        model = self.model
        rng = np.random.default_rng(_SEED)
        samples = rng.uniform(self._lower_limit, self._upper_limit, (_SAMPLES, model.nv))
        values = np.empty(_SAMPLES)
        chunk = _chunk_size(model)
        for start in range(0, _SAMPLES, chunk):
            yield from _evaluate(model, samples[start:start + chunk], values[start:start + chunk])
            self._offer(values[start:start + chunk], samples[start:start + chunk])
        best = np.argsort(np.where(np.isnan(values), -np.inf, values))[-_STARTS:]
        yield from _compass_ascent(model, samples[best], values[best], self._lower_limit,
                                   self._upper_limit, self._offer)
        if not np.isfinite(self.first_bound) or model.reduced:
            return
        yield from self._branch_and_bound()

    def _coordinates(self):
        """(free coordinates, their kinds): q entries whose joint has a parent
        body; the others turn or slide their subtree rigidly, and Gamma does
        not depend on them."""
        free = np.flatnonzero(np.asarray(self.model.parent) >= 0)
        return free, self._kinds[free] == PRISMATIC

    def _configurations(self, free, prismatic, angles):
        """q (B, nv) for box angles (B, m): revolute angles wrapped into the
        limits when some turn of them lies there, prismatic ones mapped to
        mid - radius cos(angle); and whether each q is within the limits."""
        lo, hi = self._lower_limit[free], self._upper_limit[free]
        wrapped = lo + np.mod(angles - lo, 2.0 * np.pi)
        inside_turn = (wrapped <= hi) | ~self._limited[free]
        revolute_q = np.where(inside_turn & self._limited[free], wrapped, angles)
        slide = 0.5 * (lo + hi) - 0.5 * (hi - lo) * np.cos(angles)
        coords = np.where(prismatic, slide, revolute_q)
        q = np.tile(np.clip(np.zeros(self.model.nv), self._lower_limit, self._upper_limit),
                    (len(angles), 1))
        q[:, free] = coords
        inside = np.all(prismatic | inside_turn, axis=1)
        return q, inside

    def _branch_and_bound(self):
        model = self.model
        free, prismatic = self._coordinates()
        m = len(free)
        box_bytes = 8 * (2 * m + 2)
        max_boxes = int(self.memory_limit_mb * 1e6 / box_bytes)
        # boxes to split before any bound is finite: every 2 ||h||_1 < pi/2
        needed = np.prod(np.ceil(np.where(prismatic, np.pi, 2 * np.pi) / (np.pi / (2 * max(m, 1)))))
        if needed > max_boxes / 4:
            return
        margin = _value_margin(model, self.first_bound)
        centres = np.where(prismatic, 0.5 * np.pi, 0.0)[None]
        halves = np.where(prismatic, 0.5 * np.pi, np.pi)[None]
        values = np.empty(1)
        q, inside = self._configurations(free, prismatic, centres)
        yield from _evaluate(model, q, values)
        if inside[0]:
            self._offer(values, q)
        values = values + margin
        while True:
            bounds = box_bound(values, halves, self.first_bound)
            lower = self._interval.lower
            self._publish(upper=max(lower, bounds.max(initial=-np.inf)))
            if self._interval.upper <= self.tolerance * self._interval.lower:
                return
            keep = bounds > lower
            centres, halves, values, bounds = centres[keep], halves[keep], values[keep], bounds[keep]
            if len(values) == 0:
                return
            if len(values) + _SPLIT_BATCH > max_boxes:
                return
            count = min(_SPLIT_BATCH, len(values))
            split = np.argpartition(-bounds, count - 1)[:count]
            rest = np.ones(len(values), dtype=bool)
            rest[split] = False
            axis = np.argmax(halves[split], axis=1)
            child_halves = halves[split].copy()
            child_halves[np.arange(count), axis] *= 0.5
            step = np.zeros_like(child_halves)
            step[np.arange(count), axis] = child_halves[np.arange(count), axis]
            child_centres = np.concatenate([centres[split] - step, centres[split] + step])
            child_halves = np.concatenate([child_halves, child_halves])
            child_values = np.empty(len(child_centres))
            q, inside = self._configurations(free, prismatic, child_centres)
            yield from _evaluate(model, q, child_values)
            self._offer(np.where(inside, child_values, -np.inf), q)
            centres = np.concatenate([centres[rest], child_centres])
            halves = np.concatenate([halves[rest], child_halves])
            values = np.concatenate([values[rest], child_values + margin])


_registry_lock = threading.Lock()


def refinement_for(model) -> CoriolisConstantRefinement:
    """The model's refinement (``model.cache``): made with its first bound on
    first use, so every later call continues where the last one stopped. A
    payload model is a new model, with its own first bound at once."""
    refinement = model.cache.get("kc_refinement")
    if refinement is None:
        with _registry_lock:
            refinement = model.cache.get("kc_refinement")
            if refinement is None:
                refinement = model.cache["kc_refinement"] = CoriolisConstantRefinement(model)
    return refinement


def coriolis_constant_interval(model, *, time_budget=60.0) -> KcInterval:
    """K_c's interval after refining for at most ``time_budget`` seconds
    (less when refinement finishes: upper <= 1.10 lower, or nothing more
    to gain). Continues the model's refinement (``refinement_for``), so a
    second call starts where the first stopped."""
    if not (isinstance(time_budget, (int, float)) and time_budget >= 0.0):
        raise CoriolisConstantError(f"time_budget must be a number >= 0, got {time_budget!r}")
    return refinement_for(model).refine(time_budget)

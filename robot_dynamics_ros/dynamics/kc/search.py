"""A guaranteed interval for the global Coriolis constant K_c = sup_q k_c(q).

``k_c(q) = sqrt(sum_k ||Gamma_k(q)||_2^2)`` (docs/math.md); ``K_c`` is its supremum
over the joint limits (continuous joints: all angles). Controllers use K_c in
stability proofs, so what is published as ``kc_global`` must be an upper
bound that holds for every q, rounding included. This module keeps, per
model, an interval ``[lower, upper]`` that contains K_c:

1. **First bound** (construction, O(nb^3) time and memory):
   q-independent bounds on every |Gamma_ijk| body by body from the docs/math.md
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
   global part is the mixed second derivatives (``box_bounds``). Boxes
   whose bound is within the tolerance leave the list, and the side to
   halve is the one that adds most to the box's bound
   (``branch_and_bound``). For models needing
   more than ``_MAX_FOURIER_SAMPLES`` grid samples, and for mimic-reduced
   models (whose Gamma is no such polynomial of the reduced q), refinement
   only raises ``lower``. Prismatic leaf joints (grippers) are frozen at
   mid-range, their effect bounded apart (``CoriolisConstantRefinement.box_setup``).

Joints whose parent is the fixed world never enter Gamma: turning or sliding
their whole subtree rigidly leaves M unchanged (docs/math.md: dM_ab/dq_c = 0
when c is an ancestor of both a and b), so the search drops them.
Gravity never enters Gamma. The subtrees of several such joints (legs, a
torso) share no body, so K_c^2 is the sum of theirs and each is refined on
its own (``_subtree_steps``).

Rounding: every floating-point result that enters ``upper`` is inflated by
an explicit margin, see ``first_bound._first_bound_margin`` and
``constant.value_margin``. The first bound lives in ``first_bound``, the
expansion and the box bounds in ``boxes``, the list of boxes in
``branch_and_bound``, k_c at a configuration in
``constant``, the subtrees in ``subtrees``, the certificate file in
``certificate``.
"""
from __future__ import annotations

import threading
import time
from functools import cached_property
from typing import NamedTuple

import numpy as np

from ..calls import PARALLEL_FROM
from ..errors import CoriolisConstantError, not_a_model
from ..model.model import PRISMATIC, Model
from ..model.state import at_identity_base
from .boxes import BoxSetup, fourier_derivative_bounds, lines_through
from .branch_and_bound import BranchAndBound
from .constant import config_coriolis_constant, kc_at, value_margin
from .first_bound import first_upper_bound
from .subtrees import root_subtrees

_EPS = np.finfo(float).eps
# Lower end: random samples within the limits, then ascents from the best.
_SAMPLES = 8192
_STARTS = 24
_SEED = 0
# doubles of Gamma held at once while evaluating k_c in chunks (8 bytes each)
_CHUNK_DOUBLES = 4_000_000
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
# Evaluation of k_c in chunks, lower end


class Pace:
    """How refinement's steps use the cores, read at every step (``refine``
    sets ``parallel``)."""

    def __init__(self):
        self.parallel = False

    def chunk(self, model):
        """Samples per evaluation step: ``_CHUNK_DOUBLES`` doubles of Gamma at
        most, so memory stays bounded whatever n (one sample at n >= 159).
        On one thread (the default) fewer than ``calls.PARALLEL_FROM``: a
        chunk runs on the calling thread, never on the thread pool, so the
        node's refinement process takes one core, never both (the other
        is the outputs'). ``parallel``: the pool's cores."""
        most = max(1, _CHUNK_DOUBLES // model.nb ** 3)
        return most if self.parallel else min(most, PARALLEL_FROM - 1)


def _evaluate(model, Q, out, pace):
    """k_c at the joint values Q[s] into out, one chunk per step (a
    generator: the caller may stop between chunks). Each chunk runs the
    nogil kernels of ``constant.config_coriolis_constant``; overflow gives
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


# ---------------------------------------------------------------------------
# Refinement


class CoriolisConstantRefinement:
    """The interval [lower, upper] that holds K_c of one model, refined on
    demand (module docstring: the method and why ``upper`` is guaranteed).

    Construction computes the first bound (``first_upper_bound``, O(nb^3))
    and k_c at one configuration (O(n^4)). ``refine(seconds)`` then works in
    steps of one chunk of evaluations each (nogil numba kernels, so a
    background thread does not hold the GIL for long): 8192 random samples
    within the limits, a compass ascent from the 24 best, then the branch
    and bound (``_box_steps``). ``upper`` only decreases, ``lower`` only
    increases. Memory: chunks of at most ``_CHUNK_DOUBLES`` doubles of
    Gamma, three quarters of ``memory_limit_mb`` for the expansion of Gamma
    (freed before the boxes are made) and half for the boxes (9 m + 9 bytes
    each, m coordinates).
    Refinement has ``finished`` when ``upper <= tolerance * lower``, when
    the boxes would exceed their memory, or when there is nothing left to
    do (the search for ``lower`` is over and no branch and bound applies:
    mimic-reduced and floating-base models, whose search runs over the
    joints with the base at the identity pose, keep their first bound).
    A fixed base with several joints on the world refines one part per
    subtree instead (``_subtree_steps``), each with its share of the memory.

    ``certified``: an interval that holds K_c already (a certificate's,
    ``certificate.serve_certificate``): the refinement starts from it,
    finished, and computes neither the first bound nor k_c at a witness
    (``first_bound`` is computed when something asks for it).
    """

    def __init__(self, model, *, tolerance=1.10, memory_limit_mb=_DEFAULT_MEMORY_MB, certified=None):
        _check_settings(model, tolerance, memory_limit_mb)
        self.model = model
        self.tolerance = float(tolerance)
        self.memory_limit_mb = float(memory_limit_mb)
        self._publish_lock = threading.Lock()
        self._work_lock = threading.Lock()
        lower, upper, kinds = model.joint_limits()
        limited = np.isfinite(lower) & np.isfinite(upper)
        self._kinds = kinds
        self._limited = limited
        self._lower_limit = np.where(limited, lower, -np.pi)
        self._upper_limit = np.where(limited, upper, np.pi)
        self._pace = Pace()
        self._work = self._steps()
        if certified is not None:
            self._interval = KcInterval(float(certified.lower), float(certified.upper),
                                        np.array(certified.witness, dtype=float), True)
            return
        witness = at_identity_base(model, np.clip(0.0, self._lower_limit, self._upper_limit)[None])[0]
        value = kc_at(model, witness)
        if np.isnan(value):
            value = 0.0  # k_c overflows there: 0 is still a lower bound
        self._interval = KcInterval(float(value), max(self.first_bound, float(value)), witness, False)

    @cached_property
    def first_bound(self) -> float:
        """The model's first guaranteed upper bound on K_c (``first_upper_bound``)."""
        return first_upper_bound(self.model)[0]

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
            while not self._interval.finished and time.monotonic() < deadline:
                self._step(parallel)
        return self._interval

    def _step(self, parallel):
        """One step of the work (one chunk of evaluations)."""
        self._pace.parallel = bool(parallel)
        try:
            next(self._work)
        except StopIteration:
            self._publish(finished=True)

    def merge(self, interval: KcInterval):
        """Take what ``interval`` adds: it must come from the refinement of
        an equal model (a copy sent to another process), so both ends hold
        for this one. ``upper`` still only decreases, ``lower`` only increases."""
        self._publish(interval.lower, interval.witness, interval.upper, interval.finished)

    def _publish(self, lower=None, witness=None, upper=None, finished=False):
        with self._publish_lock:
            old = self._interval
            if lower is not None and lower > old.lower:
                old = old._replace(lower=float(lower), witness=np.array(witness, dtype=float))
            if upper is not None and upper < old.upper:
                old = old._replace(upper=float(max(upper, old.lower)))
            self._interval = old._replace(finished=old.finished or finished)

    def offer(self, values, Q):
        """Raise ``lower`` to the best finite k_c in ``values`` (at Q)."""
        finite = np.where(np.isnan(values), -np.inf, values)
        best = int(np.argmax(finite)) if len(finite) else 0
        if len(finite) and finite[best] > self._interval.lower:
            self._publish(lower=finite[best], witness=at_identity_base(self.model, Q[best:best + 1])[0])

    def _steps(self):
        model = self.model
        # the branch and bound needs Gamma's polynomial structure in q and a finite first bound
        refinable = np.isfinite(self.first_bound) and not (model.reduced or model.floating)
        subtrees = root_subtrees(model) if refinable else []
        if len(subtrees) > 1:
            yield from _subtree_steps(self, subtrees)
            return
        yield from self.lower_end_steps()
        if refinable:
            yield from _box_steps(self)

    def lower_end_steps(self):
        """The search for ``lower`` (a generator, one step per chunk): k_c at
        ``_SAMPLES`` random configurations within the limits (a fixed seed),
        then a compass ascent from the ``_STARTS`` best."""
        model = self.model
        rng = np.random.default_rng(_SEED)
        samples = rng.uniform(self._lower_limit, self._upper_limit, (_SAMPLES, len(self._lower_limit)))
        values = np.empty(_SAMPLES)
        step = self._pace.chunk(model)  # offered to lower after each
        for start in range(0, _SAMPLES, step):
            yield from _evaluate(model, samples[start:start + step], values[start:start + step], self._pace)
            self.offer(values[start:start + step], samples[start:start + step])
        best = np.argsort(np.where(np.isnan(values), -np.inf, values))[-_STARTS:]
        yield from _compass_ascent(model, samples[best], values[best], self._lower_limit,
                                   self._upper_limit, self.offer, self._pace)

    def domain(self):
        """(coordinates on which Gamma depends, prismatic?, low, high): q
        entries whose joint has a parent body (the others move their subtree
        rigidly) and whose limits leave it more than one value (the others
        stay at it, in ``box_setup``'s base), over their limits; a revolute
        range wider than a turn is cut to one turn (Gamma is 2 pi periodic)."""
        free = np.flatnonzero((np.asarray(self.model.parent) >= 0) & (self._upper_limit > self._lower_limit))
        lo, hi = self._lower_limit[free], self._upper_limit[free]
        prismatic = self._kinds[free] == PRISMATIC
        hi = np.where(prismatic, hi, np.minimum(hi, lo + 2.0 * np.pi))
        return free, prismatic, lo, hi

    def box_setup(self, squared_norms=False):
        """The ``BoxSetup`` of the branch and bound, or None when its grid
        is too large (a generator: the expansions of Gamma take many steps).
        ``squared_norms``: the tighter bounds of ``mixed`` on the mixed
        derivatives and the frozen coordinates' effect (offline).

        Some coordinates are frozen at their mid-range f0 and their effect
        bounded apart (``_frozen_coordinates``; ``frozen_bound``, added to
        every box bound, by telescoping: ``_frozen_bound``).
        """
        model = self.model
        free, prismatic, lo, hi = self.domain()
        frozen_terms = _frozen_coordinates(np.asarray(model.parent), free, prismatic)
        if frozen_terms is None:
            return None
        frozen, terms = frozen_terms
        kept = ~frozen
        margin = value_margin(model, self.first_bound)
        entry_margin = margin + 8 * (kept.sum() + 2) * _EPS * self.first_bound
        base = np.clip(np.zeros(model.nv), self._lower_limit, self._upper_limit)
        base[free[frozen]] = 0.5 * (lo + hi)[frozen]
        memory = 0.75 * self.memory_limit_mb * 1e6
        derivatives = yield from fourier_derivative_bounds(
            model, free[kept], prismatic[kept], lo[kept], hi[kept], entry_margin, memory, base, self._pace,
            squared_norms=squared_norms)
        frozen_bound = yield from _frozen_bound(model, (free, prismatic, lo, hi), frozen, terms,
                                                (entry_margin, memory, base), self._pace, squared_norms)
        return BoxSetup(free[kept], lo[kept], hi[kept], lines_through(prismatic[kept], lo[kept], hi[kept]),
                        base, derivatives, frozen_bound, margin, entry_margin)

def _check_settings(model, tolerance, memory_limit_mb):
    """``CoriolisConstantRefinement``'s arguments: a ``Model``, a tolerance
    >= 1 and a positive memory limit, else the error that names the one at
    fault."""
    if not isinstance(model, Model):
        raise not_a_model(model)
    if not (isinstance(tolerance, (int, float)) and 1.0 <= tolerance < np.inf):
        raise CoriolisConstantError(
            f"tolerance must be a number >= 1 (the ratio upper / lower to reach), got {tolerance!r}")
    if not (isinstance(memory_limit_mb, (int, float)) and 0.0 < memory_limit_mb < np.inf):
        raise CoriolisConstantError(
            f"memory_limit_mb must be a positive number, got {memory_limit_mb!r}")


def _box_steps(refinement):
    """The steps of ``refinement`` (a ``CoriolisConstantRefinement``) that
    lower ``upper``: the branch and bound over boxes of the limits
    (``branch_and_bound.BranchAndBound``) on the ``box_setup``, or ``upper``
    from k_c at the witness where Gamma does not depend on q."""
    model = refinement.model
    if len(refinement.domain()[0]) == 0:
        # only joints on the world or held at one value: Gamma is the same
        # everywhere (a lone joint's subtree, _subtree_steps), so K_c is k_c
        # at the witness
        refinement._publish(upper=refinement._interval.lower + value_margin(model, refinement.first_bound))
        return
    setup = yield from refinement.box_setup()
    if setup is None:
        return
    # boxes per call: their Gamma samples within _CHUNK_DOUBLES
    group = max(1, _CHUNK_DOUBLES // ((1 + setup.lines.samples.sum()) * model.nb ** 3))
    yield from BranchAndBound(refinement, setup, group, refinement._pace, refinement._publish).run()


def _subtree_steps(refinement, subtrees):
    """The steps of ``refinement`` (a ``CoriolisConstantRefinement``) that
    refine each root subtree on its own (``subtrees``: each one's model and
    its coordinates in q, ``subtrees.root_subtrees``).

    Each subtree's block of M depends on its own joints only, so Gamma
    is zero unless i, j, k are in one subtree, each Gamma_k lives in its
    subtree's block, and k_c(q)^2 = sum_s k_s(q_s)^2 over the subtrees s.
    Their joints vary independently within their limits, so K_c^2 =
    sum_s K_s^2: ``upper`` is the root of the sum of the parts' upper
    ends squared, and ``lower`` is k_c where every part's witness is
    put together. The unfinished parts share the time equally, each
    step going to the one that has had least (a torso's search for its
    lower end, which cannot lower ``upper``, would otherwise starve the
    legs: its steps take longest). Memory: each part has its share of
    ``memory_limit_mb``. A 6-joint leg of a humanoid is refined
    like an arm, while the first bound of a 30-joint torso remains.
    The parts are made at the first step, not with the refinement: a
    node's process only reads and merges intervals refined elsewhere."""
    share = refinement.memory_limit_mb / len(subtrees)
    parts = [(CoriolisConstantRefinement(model, tolerance=refinement.tolerance, memory_limit_mb=share),
              coordinates) for model, coordinates in subtrees]
    witness = np.array(refinement._interval.witness)
    offered = [part.interval.lower for part, _ in parts]
    spent = np.zeros(len(parts))
    while refinement._interval.upper > refinement.tolerance * refinement._interval.lower:
        open_parts = [index for index, (part, _) in enumerate(parts) if not part.interval.finished]
        if not open_parts:
            return
        index = min(open_parts, key=spent.__getitem__)
        start = time.monotonic()
        parts[index][0]._step(refinement._pace.parallel)
        spent[index] += time.monotonic() - start
        if any(part.interval.lower > value for (part, _), value in zip(parts, offered)):
            offered = [part.interval.lower for part, _ in parts]
            for part, coordinates in parts:
                witness[coordinates] = part.interval.witness
            refinement.offer(config_coriolis_constant(refinement.model, witness[None]), witness[None])
        uppers = np.array([part.interval.upper for part, _ in parts])
        # the root of a sum of S squares: relative rounding below (S + 2) eps
        refinement._publish(upper=float(np.sqrt(np.sum(uppers * uppers))) * (1.0 + 4 * (len(parts) + 2) * _EPS))
        yield


def _frozen_coordinates(parent, free, prismatic):
    """(frozen, terms) for ``box_setup``, or None when the trunk's grid, or
    one term's, is too large: which coordinates of ``free`` are frozen at
    their mid-range f0, and per frozen one the coordinates its term varies.

    Frozen: a prismatic coordinate whose joint moves a leaf body (a
    gripper's finger) always, when other coordinates remain; and when the
    grid of the others would still exceed ``_MAX_FOURIER_SAMPLES``, every
    coordinate off the trunk (the joints that are not ancestor or
    descendant of every other one: a gripper's fingers below its palm).
    The term of a frozen coordinate c_i varies the kept coordinates and the
    frozen ones below c_i (``_frozen_bound``)."""
    frozen = prismatic & ~np.isin(free, parent)
    if frozen.all():
        frozen[:] = False
    if _grid_size(prismatic[~frozen]) > _MAX_FOURIER_SAMPLES:
        frozen |= ~_on_the_trunk(parent, free)
        if frozen.all() or _grid_size(prismatic[~frozen]) > _MAX_FOURIER_SAMPLES:
            return None
    kept = ~frozen
    below = [_descendants(parent, coordinate) for coordinate in free]
    terms = [kept | (frozen & np.isin(free, below[index])) for index in np.flatnonzero(frozen)]
    if any(_grid_size(prismatic[varied]) > _MAX_FOURIER_SAMPLES for varied in terms):
        return None
    return frozen, terms


def _frozen_bound(model, domain, frozen, terms, expansion_settings, pace, squared_norms):
    """A bound on N(Gamma(x, c) - Gamma(x, c0)) over the frozen coordinates
    c (at c0, their mid-range) and every x (a generator). ``domain``: the
    ``domain()`` tuple; ``expansion_settings``: (entry_margin, memory,
    base) of ``fourier_derivative_bounds``.

    The frozen coordinates c_1..c_K (parents first) are released one at a
    time (telescoping): Gamma(x, c) - Gamma(x, c0) is the sum over i of
    D_i = Gamma(.., c0_<i, c_i, c_>i) - Gamma(.., c0_<i, c0_i, c_>i).
    Gamma is a sum over bodies of terms that depend on the bodies'
    ancestors only, so D_i involves the bodies below c_i alone, and depends
    on x, on c_i and on the frozen coordinates below c_i (``terms[i]``),
    over which its bound is taken (``_frozen_term``)."""
    free, prismatic, lo, hi = domain
    entry_margin, memory, base = expansion_settings
    frozen_bound = 0.0
    for index, varied in zip(np.flatnonzero(frozen), terms):
        expansion = (model, free[varied], prismatic[varied], lo[varied], hi[varied], entry_margin, memory, base)
        frozen_bound += yield from _frozen_term(expansion, free[index], prismatic[index],
                                                0.5 * (hi - lo)[index], pace, squared_norms)
    return frozen_bound


def _grid_size(prismatic):
    """Tensor-grid samples of an expansion over coordinates of these kinds."""
    return int(np.prod(np.where(prismatic, 3, 5)))


def _descendants(parent, body):
    """The bodies strictly below ``body`` (parents come first)."""
    below = np.zeros(len(parent), dtype=bool)
    for child in range(body + 1, len(parent)):
        below[child] = parent[child] == body or (parent[child] >= 0 and below[parent[child]])
    return np.flatnonzero(below)


def _on_the_trunk(parent, free):
    """Per coordinate of ``free`` (bodies): ancestor or descendant of every other one."""
    related = np.zeros((len(free), len(free)), dtype=bool)
    for a, body in enumerate(free):
        below = set(_descendants(parent, body).tolist())
        for b, other in enumerate(free):
            if a == b or other in below:
                related[a, b] = related[b, a] = True
    return related.all(axis=1)


def _frozen_term(expansion, coordinate, prismatic, radius, pace, squared_norms=False):
    """A bound on N(Gamma(q with ``coordinate`` at f0 + t) - Gamma(q with it at
    f0)) for |t| <= ``radius`` and every q over the expansion's coordinates
    (a generator; ``fourier_derivative_bounds`` of ``expansion`` bounds each
    coefficient below over them).

    Prismatic: c0 + c1 T1(x) + c2 T2(x) with x = t / r (Chebyshev), so the
    difference c1 x + 2 c2 x^2 has N <= N(c1) + 2 N(c2), c1 = (Gamma(f0 + r)
    - Gamma(f0 - r)) / 2, c2 = (Gamma(f0 + r) + Gamma(f0 - r) - 2
    Gamma(f0)) / 4. Revolute: from the 5 angles s_j = 2 pi j / 5 about f0,
    ``Gamma(f0 + t) - Gamma(f0) = sum_{a=1,2} A_a (cos(a t) - 1) + B_a
    sin(a t)`` with A_a = 2/5 sum_j Gamma(f0 + s_j) cos(a s_j) and B_a the
    same with sin, so N <= sum_a N(A_a) (1 - cos(min(a r, pi))) + N(B_a)
    sin(min(a r, pi / 2)). ``squared_norms``: each N bounded as in ``mixed``
    when the expansion's coordinates are all revolute."""
    model = expansion[0]

    def offset(value):
        step = np.zeros(model.nv)
        step[coordinate] = value
        return step

    if prismatic:
        linear, *_ = yield from fourier_derivative_bounds(
            *expansion, pace, ((offset(radius), 0.5), (offset(-radius), -0.5)), squared_norms)
        quadratic, *_ = yield from fourier_derivative_bounds(
            *expansion, pace, ((offset(radius), 0.25), (offset(-radius), 0.25), (None, -0.5)), squared_norms)
        return linear + 2.0 * quadratic
    angles = 2.0 * np.pi * np.arange(5) / 5
    total = 0.0
    for order in (1, 2):
        for weights, factor in ((0.4 * np.cos(order * angles), 1.0 - np.cos(min(order * radius, np.pi))),
                                (0.4 * np.sin(order * angles), np.sin(min(order * radius, 0.5 * np.pi)))):
            combination = tuple((None if j == 0 else offset(angles[j]), weights[j])
                                for j in range(5) if weights[j] != 0.0)
            value, *_ = yield from fourier_derivative_bounds(*expansion, pace, combination, squared_norms)
            total += value * factor
    return total


_registry_lock = threading.Lock()


def refinement_for(model, *, memory_limit_mb=_DEFAULT_MEMORY_MB, certified=None) -> CoriolisConstantRefinement:
    """The model's refinement (``model.cache``): made with its first bound on
    first use, so every later call continues where the last one stopped. A
    payload model is a new model, with its own first bound at once.
    ``memory_limit_mb`` applies when the refinement is made (the node makes
    it first, with its parameter's value). ``certified``: a certificate's
    interval (``KcInterval``), which the refinement is made from instead of
    the first bound, or merged into one made before."""
    try:
        refinement = model.cache.get("kc_refinement")
    except AttributeError:  # no Model; a try costs nothing until it catches
        raise not_a_model(model) from None
    if refinement is None:
        with _registry_lock:
            refinement = model.cache.get("kc_refinement")
            if refinement is None:
                refinement = model.cache["kc_refinement"] = CoriolisConstantRefinement(
                    model, memory_limit_mb=memory_limit_mb, certified=certified)
                return refinement
    if certified is not None:
        refinement.merge(certified._replace(finished=True))
    return refinement


def set_global_constants(model, values):
    """``values[..., 2]`` and ``values[..., 6]`` (BOUNDS_FIELDS: kc_global
    and kc_global_lower) = the model's current interval for K_c, both from
    one snapshot of it. On every joint state of the node: a sample's (7,)
    takes two scalar stores (cheaper than an ellipsis store)."""
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


def global_coriolis_constant(model) -> float:
    """The model's current guaranteed upper bound on K_c (never waits for
    refinement: the first call computes the first bound, O(nb^3)), see
    ``CoriolisConstantRefinement``."""
    return refinement_for(model).interval.upper

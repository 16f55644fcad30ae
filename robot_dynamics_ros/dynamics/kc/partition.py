"""Work units of the offline K_c search: the domain of each part cut into
dyadic boxes, each unit refining some boxes on its own (any engine runs
them: robot_dynamics_ros.certify uses Dask distributed).

A box of a part is given by integers: per coordinate l of the part's
``BoxSetup.free``, how often it was halved (``levels[l]``) and which half
it is (``index[l] < 2^levels[l]``), so its half-width is ``(high - low) /
2^(levels + 1)`` and its centre ``low + (2 index + 1)`` times that. A
unit takes boxes of known bound, halves the one of largest bound along
the side its bound names (``boxes.box_bounds``), again and again, until
every box left is settled (bound at most the part's ``threshold``) or its
time is up; it returns the settled boxes (leaves) and those still open.

Why the merge is sound in any order, and why an interrupted search loses
nothing: every unit replaces one box by boxes that partition it, so the
boxes of a part, settled and open, always partition its domain, whatever
order the units end in; a unit's result is taken only while its box is
still open (so nothing is counted twice), and a unit that never returns
leaves its box open, to be done again. Whether a box is split, and along
which side, depends only on the box and the fixed threshold: the leaves
are the same however the work was cut or interrupted.
"""
import time
from typing import NamedTuple

import numpy as np

from .boxes import BoxSetup, box_bounds
from .search import CoriolisConstantRefinement, Pace
from .subtrees import root_subtrees

# the deepest halving of one side: index < 2^levels fits an int64
MAX_LEVEL = 60
# children evaluated together in a unit (one call of box_bounds)
_CHILDREN_PER_CALL = 64


class PartSetup(NamedTuple):
    """What every unit of one part needs, computed once (``prepare``).

    - ``setup``: the ``BoxSetup`` (None: no box search applies, the part
      keeps ``first_bound``; or no coordinate is free, ``constant``).
    - ``first_bound``: the part's first guaranteed bound.
    - ``constant``: Gamma does not depend on q (no free coordinate): K_c is
      k_c anywhere, plus the rounding margin.
    """

    setup: BoxSetup
    first_bound: float
    constant: bool


class UnitResult(NamedTuple):
    """What a unit returns: its leaves and open boxes (levels, index,
    bounds; open boxes with the side to halve next), the largest k_c it
    computed and where (q of the part's model), boxes bounded, seconds."""

    leaf_levels: np.ndarray
    leaf_index: np.ndarray
    leaf_bounds: np.ndarray
    open_levels: np.ndarray
    open_index: np.ndarray
    open_bounds: np.ndarray
    open_axes: np.ndarray
    best_value: float
    best_q: np.ndarray
    boxes: int
    seconds: float


def searched_parts(model):
    """[(model of the part, its coordinates in q)]: the root subtrees of a
    fixed base (searched apart: K_c^2 is the sum of theirs,
    docs/coriolis_constant.md), or the whole model as one part."""
    refinable = not (model.reduced or model.floating)
    subtrees = root_subtrees(model) if refinable else []
    if len(subtrees) > 1:
        return subtrees
    return [(model, np.arange(model.nv))]


def _drain(generator):
    """Run a stepwise generator of the search to its end; its return value."""
    while True:
        try:
            next(generator)
        except StopIteration as stop:
            return stop.value


def lower_end(model):
    """(k_c at the best configuration found, that configuration): the
    refinement's random samples and compass ascent (a fixed seed, so the
    same every time)."""
    refinement = CoriolisConstantRefinement(model)
    _drain(refinement.lower_end_steps())
    interval = refinement.interval
    return interval.lower, np.asarray(interval.witness)


def prepare(model, memory_limit_mb=2000.0):
    """The ``PartSetup`` of one part (model): its first bound, and the box
    setup (the expansion of Gamma, ``CoriolisConstantRefinement.box_setup``,
    with the mixed bounds of ``mixed``: seconds to minutes more, once) when
    the box search applies."""
    refinement = CoriolisConstantRefinement(model, memory_limit_mb=memory_limit_mb)
    first = refinement.first_bound
    if not np.isfinite(first) or model.reduced or model.floating:
        return PartSetup(None, first, False)
    if len(refinement.domain()[0]) == 0:
        return PartSetup(None, first, True)
    return PartSetup(_drain(refinement.box_setup(squared_norms=True)), first, False)


def box_geometry(setup, levels, index):
    """(centres, half-widths) of the boxes (levels, index) (B, m)."""
    span = 0.5 * (setup.high - setup.low)
    halves = np.ldexp(span, -np.asarray(levels, dtype=np.int64))
    return setup.low + (2.0 * np.asarray(index, dtype=float) + 1.0) * halves, halves


def bound_boxes(model, part, levels, index, parallel=False):
    """(bounds, side to halve, largest k_c at a centre, where) of the boxes
    (levels, index) (B, m) of a part (``PartSetup``): ``boxes.box_bounds``,
    never above the part's first bound (an overflow gives the first bound)."""
    centres, halves = box_geometry(part.setup, levels, index)
    best = [-np.inf, None]

    def offer(values, q):
        finite = np.where(np.isnan(values), -np.inf, values)
        if len(finite) and finite.max() > best[0]:
            best[0], best[1] = float(finite.max()), np.array(q[int(np.argmax(finite))])

    pace = Pace()
    pace.parallel = parallel
    bounds, excess = _drain(box_bounds(model, part.setup, centres, halves, offer, pace))
    bounds = np.minimum(bounds, part.first_bound)
    bounds = np.where(np.isnan(bounds), part.first_bound, bounds)
    return bounds, np.argmax(excess, axis=1).astype(np.uint8), best[0], best[1]


def root_box(model, part):
    """(levels, index, bound, side, largest k_c at a centre, where) of the
    whole domain of a part; None when no box search applies."""
    if part.setup is None:
        return None
    m = len(part.setup.free)
    levels = np.zeros((1, m), dtype=np.uint8)
    index = np.zeros((1, m), dtype=np.int64)
    bounds, axes, value, q = bound_boxes(model, part, levels, index)
    return levels, index, bounds, axes, value, q


def refine_unit(model, part, levels, index, bounds, axes, threshold, seconds):
    """Refine the open boxes (levels, index, bounds, axes) of a part for
    about ``seconds`` (``UnitResult``): the box of largest bound is halved
    along its side, children of up to ``_CHILDREN_PER_CALL`` boxes bounded
    together; a box whose bound is at most ``threshold`` is a leaf, as is
    one whose side was halved ``MAX_LEVEL`` times. Runs on the calling
    thread (a worker of the engine is one core)."""
    start = time.monotonic()
    levels = [np.asarray(levels, dtype=np.uint8)]
    index = [np.asarray(index, dtype=np.int64)]
    bounds = [np.asarray(bounds, dtype=float)]
    axes = [np.asarray(axes, dtype=np.uint8)]
    leaves = ([], [], [])
    best_value, best_q, count = -np.inf, None, 0
    open_levels, open_index = np.concatenate(levels), np.concatenate(index)
    open_bounds, open_axes = np.concatenate(bounds), np.concatenate(axes)
    settled = (open_bounds <= threshold) | (open_levels[np.arange(len(open_axes)), open_axes] >= MAX_LEVEL)
    for store, values in zip(leaves, (open_levels, open_index, open_bounds)):
        store.append(values[settled])
    open_levels, open_index = open_levels[~settled], open_index[~settled]
    open_bounds, open_axes = open_bounds[~settled], open_axes[~settled]
    while len(open_bounds) and time.monotonic() - start < seconds:
        take = min(len(open_bounds), _CHILDREN_PER_CALL // 2)
        order = np.argsort(-open_bounds, kind="stable")
        picked, kept = order[:take], order[take:]
        rows = np.arange(take)
        side = open_axes[picked]
        child_levels = open_levels[picked].copy()
        child_levels[rows, side] += 1
        low_index = open_index[picked].copy()
        low_index[rows, side] *= 2
        high_index = low_index.copy()
        high_index[rows, side] += 1
        child_levels = np.concatenate([child_levels, child_levels])
        child_index = np.concatenate([low_index, high_index])
        child_bounds, child_axes, value, q = bound_boxes(model, part, child_levels, child_index)
        count += len(child_bounds)
        if value > best_value:
            best_value, best_q = value, q
        done = (child_bounds <= threshold) | (
            child_levels[np.arange(len(child_axes)), child_axes] >= MAX_LEVEL)
        for store, values in zip(leaves, (child_levels, child_index, child_bounds)):
            store.append(values[done])
        open_levels = np.concatenate([open_levels[kept], child_levels[~done]])
        open_index = np.concatenate([open_index[kept], child_index[~done]])
        open_bounds = np.concatenate([open_bounds[kept], child_bounds[~done]])
        open_axes = np.concatenate([open_axes[kept], child_axes[~done]])
    m = open_levels.shape[1]
    return UnitResult(
        np.concatenate(leaves[0]).reshape(-1, m), np.concatenate(leaves[1]).reshape(-1, m),
        np.concatenate(leaves[2]), open_levels, open_index, open_bounds, open_axes,
        best_value, best_q, count, time.monotonic() - start)


def covers_domain(levels, index):
    """True when the dyadic boxes (levels, index) (B, m) are the leaves of
    one tree of halvings of the whole domain: then they partition it
    (every point in one box, up to shared faces). Checked top down: some
    side must be halved in every box of a set of more than one, the set
    splits into the two halves along it, and a set of one box must be the
    whole region. O(B x depth)."""
    levels = np.asarray(levels, dtype=np.int64)
    index = np.asarray(index, dtype=np.int64)
    if len(levels) == 0:
        return False
    m = levels.shape[1]
    stack = [(np.arange(len(levels)), np.zeros(m, dtype=np.int64))]
    while stack:
        members, depth = stack.pop()
        if len(members) == 0:
            return False
        remaining = levels[members] - depth
        if len(members) == 1:
            if np.any(remaining != 0):
                return False
            continue
        splittable = np.flatnonzero(remaining.min(axis=0) >= 1)
        if len(splittable) == 0:
            return False
        axis = splittable[0]
        shift = levels[members, axis] - depth[axis] - 1
        half = (index[members, axis] >> shift) & 1
        deeper = depth.copy()
        deeper[axis] += 1
        stack.append((members[half == 0], deeper))
        stack.append((members[half == 1], deeper))
    return True

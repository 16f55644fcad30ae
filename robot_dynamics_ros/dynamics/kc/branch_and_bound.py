"""The branch and bound that lowers the upper end of K_c's interval
(``search.CoriolisConstantRefinement``): interval analysis over boxes of
the joint limits (R. E. Moore, "Interval Analysis", 1966; J.-P. Merlet,
"Interval analysis for certified numerical solution of problems in
robotics", Int. J. Appl. Math. Comput. Sci. 19(3), 2009).

Each box's bound comes from ``boxes.box_bounds``; the list of boxes is
kept in place by the nogil kernels of ``boxes`` (``keep_boxes``,
``largest_boxes``, ``replace_boxes``). Why each bound holds:
docs/coriolis_constant.md.
"""
import numpy as np

from .boxes import box_bounds, keep_boxes, largest_bound, largest_boxes, replace_boxes

# boxes split per branch-and-bound round, at least (and a 16th of them, at
# most 4096)
_SPLIT_BATCH = 64
# boxes the branch and bound's arrays hold at first (more than a round adds)
_FIRST_BOX_CAPACITY = 1 << 16


class BranchAndBound:
    """The boxes of one refinement's branch and bound, and its rounds.

    A box whose bound is below ``lower`` cannot hold K_c, and one whose
    bound is within ``tolerance * lower`` needs no more work: both leave
    the list (the largest bound that left within the tolerance stays part
    of ``upper``). The boxes of largest bound (64, or a 16th of all, at
    most 4096 per round) are halved along the side of largest excess.

    A box is its centre (m doubles), bound (1), how often each side was
    halved (m bytes: the half-widths are exact powers of 2 of the
    domain's) and the side to halve next (1 byte); the boxes take half of
    the refinement's ``memory_limit_mb``. They stay in place (the list
    never moves as a whole: numpy's copies of a large list would hold the
    GIL, which a node's outputs wait for), in arrays that double when full
    rather than sized for the whole budget up front (a large budget would
    ask the system for all of it at once).

    ``refinement``: its ``model``, ``first_bound``, ``tolerance``,
    ``memory_limit_mb``, ``interval`` and ``offer`` (k_c at the boxes'
    samples raises ``lower``); ``publish(upper=...)`` lowers its upper end.
    ``group``: boxes per call of ``box_bounds``.
    """

    def __init__(self, refinement, setup, group, pace, publish):
        self.refinement, self.setup, self.group, self.pace, self.publish = refinement, setup, group, pace, publish
        lo, hi = setup.low, setup.high
        m = len(setup.free)
        self.max_boxes = max(1, int(refinement.memory_limit_mb * 1e6 / 2 / (9 * m + 9)))
        self.domain = 0.5 * (hi - lo)
        self.capacity = min(self.max_boxes, _FIRST_BOX_CAPACITY)
        self.centres = np.empty((self.capacity, m))
        self.levels = np.zeros((self.capacity, m), dtype=np.uint8)
        self.bounds = np.empty(self.capacity)
        self.axes = np.empty(self.capacity, dtype=np.uint8)
        self.centres[0] = 0.5 * (lo + hi)

    def evaluate(self, centres, halves):
        """(bounds, sides to halve) of the boxes (a generator): at most the
        first bound, which also replaces a NaN (an overflow)."""
        refinement = self.refinement
        bounds = np.empty(len(centres))
        axes = np.empty(len(centres), dtype=np.uint8)
        for start in range(0, len(centres), self.group):
            some = slice(start, start + self.group)
            bounds[some], excess = yield from box_bounds(
                refinement.model, self.setup, centres[some], halves[some], refinement.offer, self.pace)
            axes[some] = np.argmax(excess, axis=1)
        bounds = np.minimum(bounds, refinement.first_bound)
        return np.where(np.isnan(bounds), refinement.first_bound, bounds), axes

    def run(self):
        """The rounds (a generator, one step per chunk of evaluations),
        until ``upper <= tolerance * lower``, no box is left, or the boxes
        would exceed their memory."""
        refinement = self.refinement
        self.bounds[:1], self.axes[:1] = yield from self.evaluate(self.centres[:1], self.domain[None])
        live, settled, dropped_at = 1, -np.inf, -np.inf
        split = np.empty(4096, dtype=np.int64)
        while True:
            lower = refinement.interval.lower
            if lower > dropped_at:
                live, settled = keep_boxes(self.centres, self.levels, self.bounds, self.axes, live, lower,
                                           refinement.tolerance * lower, settled)
                dropped_at = lower
            self.publish(upper=max(lower, settled, largest_bound(self.bounds, live)))
            if refinement.interval.upper <= refinement.tolerance * refinement.interval.lower:
                return
            if live == 0 or live + 4096 > self.max_boxes:
                return
            if live + 4096 > self.capacity:
                self._grow(live)
            # each round's selection passes over every box: split enough of them to pay for it
            count = min(max(_SPLIT_BATCH, live // 16), 4096, live)
            largest_boxes(self.bounds, live, count, split)
            parents = split[:count]
            child_centres, child_levels, child_halves = self._halves(parents)
            child_bounds, child_axes = yield from self.evaluate(
                child_centres, np.concatenate([child_halves, child_halves]))
            live, settled = replace_boxes(
                self.centres, self.levels, self.bounds, self.axes, live, parents, child_centres,
                np.concatenate([child_levels, child_levels]), child_bounds, child_axes, lower,
                refinement.tolerance * lower, settled)

    def _halves(self, parents):
        """(centres, levels, half-widths) of the two halves of each box of
        ``parents`` along its side to halve: centres (lower halves, then
        upper halves), the levels and half-widths once per parent."""
        rows = np.arange(len(parents))
        side = self.axes[parents]
        child_levels = self.levels[parents]
        child_levels[rows, side] += 1
        child_halves = np.ldexp(self.domain, -child_levels.astype(np.int64))
        step = np.zeros_like(child_halves)
        step[rows, side] = child_halves[rows, side]
        child_centres = np.concatenate([self.centres[parents] - step, self.centres[parents] + step])
        return child_centres, child_levels, child_halves

    def _grow(self, live):
        """Double the arrays' room (at most ``max_boxes``), the ``live`` boxes kept."""
        self.capacity = min(2 * self.capacity, self.max_boxes)
        self.centres, self.levels, self.bounds, self.axes = (
            _grown(array, live, self.capacity) for array in (self.centres, self.levels, self.bounds, self.axes))


def _grown(array, used, capacity):
    """``array`` with room for ``capacity`` rows, its first ``used`` kept."""
    grown = np.empty((capacity,) + array.shape[1:], dtype=array.dtype)
    grown[:used] = array[:used]
    return grown

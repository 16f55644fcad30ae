"""Joint states lost before the node took them, guessed from their header stamps.

The fallback of ``losses`` (which counts them exactly from each DDS
writer's sequence numbers) for a transport whose message info gives no
sequence numbers; with the Fast DDS of the Jazzy wheels it is never used.

When the node falls behind, its KEEP_LAST subscription queue overwrites the
oldest joint states and DDS reports no loss: the only trace is a jump in the
stamps of what arrives. A jump alone does not prove a loss, though. A
publisher under load stamps late: its timer fires late and sends every
sample due by then in a burst, each stamped when sent, so a long interval
is followed by short ones that pay it back; and its stamps jitter around
their period. A real loss leaves a step that stays.

So each stream keeps the publisher's stamps on a grid of its period ``P``:
the excess ``e`` is how many periods the stamps are ahead of the joint
states received (``e += interval / P - 1`` for each joint state, never
below 0). A burst pays its interval back at once and jitter averages out;
a lost joint state adds 1 for good. The excess of a joint state is judged
once the stamps have moved ``CONFIRM_PERIODS`` periods beyond it: the lowest
excess in that stretch, rounded, is the number of joint states lost, and
the stretch's lowest value becomes the new zero (so that an error of the
period estimate cannot build up into losses). Losses are therefore counted
``CONFIRM_PERIODS`` periods of the stream after they happen.

The period, estimated again every ``WINDOW // 4`` joint states, is the mean
of the stream's last ``WINDOW`` intervals that lie within half of their
median, a median taken without the intervals under a tenth of their mean
(a burst's). A queue that overflows still delivers runs of consecutive
joint states (its depth of them at a time), so the median stays at the
period until about 90% of the stream is lost; the mean then averages out
the jitter, its error falling as one over the square root of ``WINDOW``,
where a median's error stays a sizeable share of the jitter and lets losses
slip under the rounding (docs/benchmarks-archive.md, "Counting lost joint
states from stamps").

Each publisher's stream is judged on its own, told apart by its joint names
(an arm's driver and a gripper's publish different ones): interleaved, one
stream's stamps would make the other's intervals look like the period. At
most ``MAX_STREAMS`` name lists are followed; others count nothing. Stamps
that go back (publishers of the same names interleaved) count nothing and
restart the stream: its period is estimated again, over the ``WINDOW // 4``
joint states that follow, before anything counts; and so does a gap over
``MAX_GAP_NS`` (a stream paused or restarted, not a queue overflow).

What stamps cannot tell: a publisher that skips samples (a timer that does
not catch up) looks like a loss, and a publisher that slows down looks like
losses until the period has been estimated again (``WINDOW`` joint states).
"""

from collections import deque

import numpy as np


class StampGaps:
    """Per-stream loss counts from stamps: ``missing(stamp, names) -> int``."""

    WINDOW = 256
    CONFIRM_PERIODS = 64
    MAX_GAP_NS = 1_000_000_000
    MAX_STREAMS = 8

    def __init__(self):
        self._streams = {}  # (count, first name, last name) -> _Stream

    def missing(self, stamp, names=()) -> int:
        """Joint states of the stream of ``names`` found lost with the one
        stamped ``stamp`` (a builtin_interfaces/Time): lost up to
        ``CONFIRM_PERIODS`` periods before it."""
        key = (len(names), names[0], names[-1]) if len(names) else ()
        stream = self._streams.get(key)
        if stream is None:
            if len(self._streams) >= self.MAX_STREAMS:
                return 0
            stream = self._streams[key] = _Stream(self.WINDOW, self.CONFIRM_PERIODS, self.MAX_GAP_NS)
        return stream.missing(stamp.sec * 1_000_000_000 + stamp.nanosec)


class _Stream:
    """One publisher's stamps, for ``StampGaps``.

    ``pending`` holds the stamps of the joint states not yet judged, the
    last of them number ``index`` (those stamped within ``confirm`` periods
    of the last: at most ``confirm * window``, since the period is a mean of
    intervals among the last ``window``); ``lowest`` holds (index, excess)
    of those whose excess is lower than that of every later one (a sliding
    minimum), so its first entry is the lowest excess from the oldest
    pending joint state on. Excess values are stored plus ``zero``, which
    moves instead of every stored value. On the node's hot path: plain
    Python lists and deques, numpy once every ``window // 4`` intervals.
    """

    __slots__ = ("window", "confirm", "max_gap", "last", "intervals", "count", "period",
                 "excess", "zero", "index", "pending", "lowest")

    def __init__(self, window: int, confirm: int, max_gap: int):
        self.window, self.confirm, self.max_gap = window, confirm, max_gap
        self.last = 0
        self.intervals = [0] * window
        self.restart()

    def restart(self):
        """A new grid, its period to be estimated again (the publisher may
        have restarted at another rate): nothing pending, no excess."""
        self.count = 0
        self.period = 0.0
        self.excess = self.zero = 0.0
        self.index = 0
        self.pending = deque()
        self.lowest = deque()

    def missing(self, now: int) -> int:
        last, self.last = self.last, now
        interval = now - last
        if last == 0 or interval < 0 or interval > self.max_gap:
            self.restart()
            return 0
        count = self.count
        self.intervals[count % self.window] = interval
        self.count = count = count + 1
        if count % (self.window // 4) == 0:
            self.period = _period(np.array(self.intervals[:count], dtype=np.float64))
        period = self.period
        if period <= 0.0:
            return 0
        excess = self.excess + interval / period - 1.0
        if excess < self.zero:
            excess = self.zero
        self.excess = excess
        self.index = index = self.index + 1
        pending, lowest = self.pending, self.lowest
        pending.append(now)
        while lowest and lowest[-1][1] >= excess:
            lowest.pop()
        lowest.append((index, excess))
        # Judge the joint states stamped ``confirm`` periods before this one:
        # each one's lowest excess from it on, rounded, is lost; that lowest
        # excess is then the zero.
        before = now - self.confirm * period
        lost = 0
        while pending[0] <= before:
            pending.popleft()
            judged = index - len(pending)
            level = lowest[0][1] - self.zero
            lost += int(level + 0.5)
            self.zero += level
            if lowest[0][0] == judged:
                lowest.popleft()
        return lost


def _period(intervals: np.ndarray) -> float:
    """The mean of the intervals near their median, the short intervals of
    bursts (under a tenth of the mean) left out of that median; 0 for stamps
    that do not move."""
    typical = np.median(intervals[intervals >= 0.1 * intervals.mean()])
    near = intervals[(intervals > 0.5 * typical) & (intervals < 1.5 * typical)]
    return float(near.mean()) if near.size else 0.0

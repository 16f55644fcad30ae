"""Simulated joint-state streams for the stamp-gap counter: their stamps in
ns, and losses injected into them (the truth a count is measured against).
Used by test_stamp_gaps and bench/bench_stamp_gaps.py."""
from collections import namedtuple

import numpy as np

Time = namedtuple("Time", "sec nanosec")  # what the node passes: a builtin_interfaces/Time
PERIOD = 2_000_000  # ns: a 500 Hz stream
START = 1_000_000_000


def stamp(ns):
    return Time(int(ns // 1_000_000_000), int(ns % 1_000_000_000))


def jittery(rng, n, jitter=0.15):
    """Sample k stamped at k periods, +- ``jitter`` of a period."""
    spread = int(jitter * PERIOD)
    return START + np.arange(n) * PERIOD + rng.integers(-spread, spread, n)


def late_and_caught_up(rng, n, stall_probability=0.02, longest_stall=25, chunk=None):
    """A publisher under load: its timer ticks every period but late (a
    little always, whole periods now and then), and each tick sends the
    samples due by then (at most ``chunk`` of them: a sender that spares the
    subscriber's queue), each stamped when it is sent, 3 us apart."""
    stamps, now, k = [], START, 0
    while k < n:
        late = rng.exponential(0.05 * PERIOD)
        if rng.random() < stall_probability:
            late += rng.integers(1, longest_stall) * PERIOD
        now = max(now + PERIOD, START + k * PERIOD + late)
        sent = 0
        while k < n and START + k * PERIOD <= now and sent < (chunk or n):
            stamps.append(now + 3_000 * sent)
            k += 1
            sent += 1
    return np.array(stamps, dtype=np.int64)


def caught_up_in_chunks(rng, n):
    """Stalls of up to 0.4 s every 2 s or so, caught up 8 samples a tick."""
    return late_and_caught_up(rng, n, stall_probability=0.001, longest_stall=200, chunk=8)


def drop(rng, stamps, fraction):
    """``stamps`` with ``fraction`` of them lost at random (none in the first
    second, while the stream's period is first measured); and how many."""
    lost = rng.random(len(stamps)) < fraction
    lost[:500] = False
    return stamps[~lost], int(lost.sum())

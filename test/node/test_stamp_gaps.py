"""StampGaps: joint states lost before the node took them, counted from header
stamps. No ROS here: streams are simulated, the losses injected are the truth."""
import numpy as np
import pytest

from robot_dynamics_ros.node.stamp_gaps import StampGaps
from stamp_streams import PERIOD, START, caught_up_in_chunks, drop, jittery, late_and_caught_up, stamp


def count_missing(stamps_ns, names=("joint",)):
    gaps = StampGaps()
    return sum(gaps.missing(stamp(t), names) for t in stamps_ns)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("stream", [jittery, late_and_caught_up, caught_up_in_chunks],
                         ids=["jittery", "late-and-caught-up", "caught-up-in-chunks"])
def test_one_percent_of_lost_joint_states_are_counted_within_ten_percent(stream, seed):
    rng = np.random.default_rng(seed)
    received, lost = drop(rng, stream(rng, 20_000), 0.01)
    assert lost > 150
    assert abs(count_missing(received) - lost) <= 0.1 * lost


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("stream", [jittery, late_and_caught_up, caught_up_in_chunks],
                         ids=["jittery", "late-and-caught-up", "caught-up-in-chunks"])
def test_a_healthy_stream_under_load_counts_no_loss(stream, seed):
    """Jittery stamps, and a publisher that falls behind and catches up in
    bursts (a long interval, then short ones), within CONFIRM_PERIODS:
    nothing is lost, nothing is counted. (Bursts of delivery, the node
    taking several joint states at once, leave the stamps as they are.)
    The previous heuristic, which took the period from the shortest
    intervals, counted millions here."""
    rng = np.random.default_rng(seed)
    assert count_missing(stream(rng, 20_000)) == 0


def test_an_overflowing_queue_is_counted_within_2_percent():
    """80% of a stretch lost the way a full KEEP_LAST queue loses them: the
    node takes the 10 newest joint states in a row, then 40 are overwritten
    while it computes; plus single losses and a burst before it."""
    rng = np.random.default_rng(5)
    sent = jittery(rng, 5000)
    overflow = np.arange(3000, 4000)
    lost = np.concatenate([rng.choice(np.arange(600, 2000), 60, replace=False),
                           np.arange(2100, 2125), overflow[(overflow - 3000) % 50 >= 10]])
    received = np.ones(len(sent), dtype=bool)
    received[lost] = False
    assert abs(count_missing(sent[received]) - len(lost)) <= 0.02 * len(lost)


def test_a_loss_is_counted_once_the_stream_has_moved_on_a_few_periods():
    gaps = StampGaps()
    times = START + np.arange(1000) * PERIOD
    counts = [gaps.missing(stamp(t)) for k, t in enumerate(times) if k not in (600, 601, 602)]
    assert sum(counts) == 3
    found = counts.index(3)  # the index among those received, the loss before 603 (600 received)
    assert 600 <= found <= 600 + StampGaps.CONFIRM_PERIODS + 1


def test_no_loss_no_count_and_pauses_are_not_losses():
    regular = 2 * START + np.arange(600) * PERIOD
    assert count_missing(regular) == 0
    paused = np.concatenate([regular, regular[-1] + 5 * START + np.arange(300) * PERIOD])
    assert count_missing(paused) == 0


def test_stamps_that_do_not_increase_count_nothing():
    assert count_missing(np.zeros(600)) == 0
    assert count_missing(np.full(600, START)) == 0
    two_publishers = np.sort(np.concatenate([np.arange(600) * 1_000_000, 500 + np.arange(600) * 1_000_000]))
    shuffled = two_publishers.reshape(-1, 2)[:, ::-1].ravel()  # interleaved, out of order
    assert count_missing(START + shuffled) == 0


def test_publishers_of_different_joints_are_judged_apart():
    """An arm and a gripper publishing at 200 Hz, stamped 50 us apart: each
    stream's losses are counted on its own (one stream of interleaved
    stamps would take the 50 us offset for the period)."""
    arm, gripper = ["j1", "j2", "j3"], ["finger"]
    period = 5_000_000
    times = START + np.arange(2000) * period
    lost = {300, 301, 302, 900, 1500}
    gaps = StampGaps()
    counted = 0
    for k, t in enumerate(times):
        if k not in lost:
            counted += gaps.missing(stamp(t), arm)
        counted += gaps.missing(stamp(t + 50_000), gripper)
    assert counted == len(lost)


def test_many_name_lists_are_followed_up_to_a_bound():
    """A hostile stream of ever new name lists costs no memory beyond
    MAX_STREAMS streams, and counts nothing for them."""
    gaps = StampGaps()
    counts = [gaps.missing(stamp(START + k * 1_000_000), [f"joint_{k}"]) for k in range(1000)]
    assert counts == [0] * 1000 and len(gaps._streams) == StampGaps.MAX_STREAMS


def test_a_hostile_stream_of_tiny_intervals_holds_bounded_memory():
    """1 ns intervals with a 0.9 s one every WINDOW: the period is taken from
    the long ones, and every joint state stamped within CONFIRM_PERIODS of
    them waits to be judged: CONFIRM_PERIODS * WINDOW at most."""
    gaps = StampGaps()
    now, longest = START, 0
    for k in range(10 * StampGaps.WINDOW):
        now += 900_000_000 if k % StampGaps.WINDOW == 0 else 1
        gaps.missing(stamp(now))
        longest = max(longest, max(len(stream.pending) for stream in gaps._streams.values()))
    assert longest <= StampGaps.CONFIRM_PERIODS * StampGaps.WINDOW


def test_a_restarted_stream_is_measured_again():
    """After a pause the publisher may come back at another rate: its period
    is measured anew, so losses at the new rate count (the old period of
    100 ms would have hidden 1 ms holes), and none are invented."""
    gaps = StampGaps()
    slow = START + np.arange(600) * 100_000_000
    assert sum(gaps.missing(stamp(t)) for t in slow) == 0
    fast = slow[-1] + 5_000_000_000 + np.arange(400) * 1_000_000
    lost = {90, 91, 92, 120, 150, 151}
    assert sum(gaps.missing(stamp(t)) for k, t in enumerate(fast) if k not in lost) == len(lost)

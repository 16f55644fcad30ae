"""StampGaps: joint states lost before the node saw them, counted from header stamps."""
import numpy as np
from builtin_interfaces.msg import Time

from robot_dynamics_ros.messages import StampGaps


def stamp(ns):
    return Time(sec=int(ns // 1_000_000_000), nanosec=int(ns % 1_000_000_000))


def count_missing(stamps_ns):
    gaps = StampGaps()
    return sum(gaps.missing(stamp(t)) for t in stamps_ns)


def test_losses_of_a_jittery_1khz_stream_are_counted_within_2_percent():
    """Stamps jitter by +-15% of the period: over a gap of 40 periods the
    estimated period may be off by one joint state, not more."""
    rng = np.random.default_rng(5)
    sent = 1_000_000_000 + np.arange(5000) * 1_000_000 + rng.integers(-150_000, 150_000, 5000)
    received = np.ones(5000, dtype=bool)
    # After a warm-up of one window: single losses, a burst, and 80% of a long
    # stretch lost the way a full KEEP_LAST queue loses them: the node takes the
    # 10 newest joint states in a row, then 40 are overwritten while it computes.
    overflow = np.arange(3000, 4000)
    lost = np.concatenate([rng.choice(np.arange(100, 2000), 60, replace=False),
                           np.arange(2100, 2125), overflow[(overflow - 3000) % 50 >= 10]])
    received[lost] = False
    assert abs(count_missing(sent[received]) - len(lost)) <= 0.02 * len(lost)


def test_no_loss_no_count_and_pauses_are_not_losses():
    regular = 2_000_000_000 + np.arange(300) * 2_000_000
    assert count_missing(regular) == 0
    paused = np.concatenate([regular, regular[-1] + 5_000_000_000 + np.arange(100) * 2_000_000])
    assert count_missing(paused) == 0


def test_stamps_that_do_not_increase_count_nothing():
    assert count_missing(np.zeros(200)) == 0
    two_publishers = np.sort(np.concatenate([np.arange(200) * 1_000_000, 500 + np.arange(200) * 1_000_000]))
    shuffled = two_publishers.reshape(-1, 2)[:, ::-1].ravel()  # interleaved, out of order
    assert count_missing(1_000_000_000 + shuffled) == 0


def test_publishers_of_different_joints_are_judged_apart():
    """An arm and a gripper publishing at 200 Hz, stamped 50 us apart: each
    stream's losses are counted on its own (one stream of interleaved
    stamps took the 50 us offset for the period: 67,424 losses in 4 s)."""
    arm, gripper = ["j1", "j2", "j3"], ["finger"]
    period = 5_000_000
    times = 1_000_000_000 + np.arange(2000) * period
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
    counts = [gaps.missing(stamp(1_000_000_000 + k * 1_000_000), [f"joint_{k}"]) for k in range(1000)]
    assert counts == [0] * 1000 and len(gaps._streams) == StampGaps.MAX_STREAMS

"""Joint states lost before the node's callback: counted, not guessed.

First the counter without ROS (``SequenceLosses``: holes in each DDS
writer's sequence numbers), then the node over real DDS: a healthy stream
(jitter, late samples, a pause, bursts its queue holds) counts no loss and
logs no warning; a stream that overflows a queue of depth 2 counts exactly
the joint states it sent and the node did not process.
"""

import time

import numpy as np
import pytest
from rclpy.serialization import serialize_message

import ros_harness as harness
from panda_node import panda_node
from robot_dynamics_ros.node.losses import SequenceLosses, key

LOST = "dropped.lost_before_callback"


def counted(taken):
    losses = SequenceLosses()
    return [losses.lost(s) for s in taken]


# The counter, without ROS

def test_an_unbroken_sequence_counts_nothing_whatever_its_start():
    # the node subscribed after the writer had written 40: nothing lost to it
    assert counted(range(41, 1000)) == [0] * 959


def test_each_hole_is_counted_where_it_ends():
    taken = [1, 2, 3, 7, 8, 10, 11, 1000]
    assert counted(taken) == [0, 0, 0, 3, 0, 1, 0, 988]


def test_a_burst_lost_by_an_overflowing_queue_is_counted_whole():
    # depth 2: of each burst of 50 the node takes the first and the last two
    taken = [s for s in range(1, 501) if (s - 1) % 50 in (0, 48, 49)]
    assert sum(counted(taken)) == 500 - len(taken)


def test_a_sample_taken_out_of_order_restarts_its_writer_and_counts_nothing_more():
    # DDS hands a reader nothing older than it took from a writer: 3 after 4
    # is a new writer's (or a restarted one's) sample, and 5 continues 4
    assert counted([1, 2, 4, 3, 5, 6]) == [0, 0, 1, 0, 0, 0]


def test_a_restarted_writer_starts_anew():
    assert counted([*range(1, 501), *range(1, 301), 305]) == [0] * 800 + [4]


def interleaved(rng, start_b, lost_each=60, n=3000):
    """Two writers' numbers, ``lost_each`` of each lost (never a first or a
    last), interleaved as two publishers at one rate are: in turn, with
    jitter; and which writer each sample is from."""
    taken, writers = [], []
    keep = np.ones((2, n), bool)
    for writer in (0, 1):
        keep[writer, rng.choice(np.arange(1, n - 1), lost_each, replace=False)] = False
    order = np.argsort(np.r_[np.arange(n), np.arange(n) + 0.5] + rng.uniform(-0.2, 0.2, 2 * n), kind="stable")
    for i in order:
        writer, k = divmod(int(i), n)
        if keep[writer, k]:
            taken.append((1 if writer == 0 else start_b) + k)
            writers.append(writer)
    return taken, writers


@pytest.mark.parametrize("start_b", [10_000, 5_000, -5_000])
def test_writers_of_different_joint_names_apart_are_followed_apart(start_b):
    """An arm's driver and a gripper's on one topic, no GID to tell them
    apart: one started long before the other, each with its holes."""
    rng = np.random.default_rng(abs(start_b))
    taken, writers = interleaved(rng, start_b)
    if start_b < 0:  # writer 0 numbers above
        taken = [s - start_b if w == 0 else s - start_b - 9000 for s, w in zip(taken, writers)]
    losses = SequenceLosses()
    keys = [key(["a1", "a7"]), key(["g"])]
    assert sum(losses.lost(s, keys[w]) for s, w in zip(taken, writers)) == 120


@pytest.mark.parametrize("seed", range(3))
def test_writers_of_different_joint_names_in_step_are_never_counted_high(seed):
    rng = np.random.default_rng(seed)
    keys = [key(["a1", "a7"]), key(["g"])]
    for lost_each in (0, 60):
        taken, writers = interleaved(rng, 1, lost_each)
        losses = SequenceLosses()
        total = sum(losses.lost(s, keys[w]) for s, w in zip(taken, writers))
        assert total <= 2 * lost_each  # a hole may be missed, none added


def test_one_writer_alternating_name_lists_is_never_counted_high():
    """Arm and gripper joint states in turn from one publisher: a hole
    between two of the same names is counted, one where the names change
    may be missed, none is added."""
    rng = np.random.default_rng(11)
    keys = [key(["a1", "a7"]), key(["g"])]
    sent = np.arange(1, 5001)
    names = rng.integers(0, 2, len(sent))
    keep = rng.random(len(sent)) > 0.02
    keep[-1] = True
    losses = SequenceLosses()
    total = sum(losses.lost(int(s), keys[n]) for s, n, k in zip(sent, names, keep) if k)
    lost = int((~keep).sum())
    assert 0.25 * lost <= total <= lost  # those between two of the same names, about half
    assert losses.tracks() <= SequenceLosses.MAX_TRACKS
    losses = SequenceLosses()
    assert sum(losses.lost(int(s), keys[n]) for s, n in zip(sent, names)) == 0


@pytest.mark.parametrize("seed", range(3))
def test_writers_of_the_same_names_in_step_are_counted_exactly(seed):
    """Two publishers of the same names started together: the tracks may
    swap writers when their numbers cross, the numbers skipped stay the same."""
    taken, _ = interleaved(np.random.default_rng(seed), 1)
    assert sum(counted(taken)) == 120


def test_a_writer_of_the_same_names_seen_later_numbering_below_is_followed_apart():
    rng = np.random.default_rng(3)
    taken, writers = interleaved(rng, 1)
    # writer 1 first seen at 1, writer 0 already at 5001
    taken = [s + 5000 if w == 0 else s for s, w in zip(taken, writers)]
    assert sum(counted([5000, *taken])) == 120


def test_a_malformed_sample_takes_its_number():
    losses = SequenceLosses()
    assert [losses.lost(1, ("k",)), losses.lost(2, ("k",))] == [0, 0]
    losses.skip(3)
    assert losses.lost(4, ("k",)) == 0 and losses.lost(6, ("k",)) == 1


def test_many_writers_keep_the_last_ones_followed():
    losses = SequenceLosses()
    for writer in range(SequenceLosses.MAX_TRACKS + 3):
        for s in range(1, 10):
            losses.lost(1000 * (SequenceLosses.MAX_TRACKS + 3 - writer) + s)
    assert losses.tracks() == SequenceLosses.MAX_TRACKS
    assert losses.lost(1000 + 12) == 2


# The node over DDS

@pytest.fixture
def lossless_node(tmp_path_factory):
    yield from panda_node(tmp_path_factory, "-p", "publish_christoffel:=false")


@pytest.fixture
def overflowing_node(tmp_path_factory):
    yield from panda_node(tmp_path_factory, "-p", "publish_christoffel:=false",
                          "-p", "qos_overrides./joint_states.subscription.depth:=2",
                          "-p", "qos_overrides./joint_states.subscription.reliability:=best_effort")


def report_after(peer, moment: float, timeout: float = 20.0) -> dict:
    """Values of the first diagnostics report the node stamped after ``moment``
    (time.time()): it counts every joint state the node took before then."""
    def find():
        for msg in peer.messages("diagnostics"):
            stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
            for status in msg.status:
                if status.name.startswith(harness.NODE) and stamp > moment:
                    return {kv.key: kv.value for kv in status.values}
        return None
    return peer.wait_until(find, timeout, "a diagnostics report after the last joint state")


def counts(values):
    """(processed, lost, every other drop) of a diagnostics report."""
    dropped = {k: int(v) for k, v in values.items() if k.startswith("dropped.")}
    lost = dropped.pop(LOST, 0)
    return int(values["processed"]), lost, sum(dropped.values())


def settled(panda):
    """The node's counts once it answered one joint state sent after all the
    others: it has taken every one still in its queue, and that last one
    closes any hole in the sequence numbers."""
    q, qd = panda.state()
    panda.compute(q, qd, timeout=30.0)
    return counts(report_after(panda.peer, time.time()))


@pytest.mark.slow
def test_a_late_bursty_paused_stream_loses_nothing_and_warns_nothing(lossless_node):
    """500 joint states at about 500 Hz with the timing of a publisher under
    load: jitter, samples a period late then sent with the next, a 1.5 s
    pause, bursts of 6 (the default queue holds 10). Never more than 6 sent
    and not answered, so no queue can overflow on a loaded machine either:
    nothing is lost, nothing counted, no WARN in the node's log."""
    panda = lossless_node
    peer = panda.peer
    before = settled(panda)
    rng = np.random.default_rng(7)
    names = list(panda.oracle.joint_names)
    q, qd = panda.state()
    answered = peer.count("state")
    sent = 0

    def send(n):
        nonlocal sent
        # never more than 6 outstanding: wait for the node's answers first
        peer.wait_until(lambda: sent - (peer.count("state") - answered) + n <= 6, 30.0,
                        "the node to answer")
        for _ in range(n):
            now = time.time()
            peer.joint_pub.publish(harness.joint_state(
                names, q, qd, stamp_=harness.stamp(int(now), int(now % 1 * 1e9))))
            sent += 1

    for k in range(500):
        if k == 250:
            time.sleep(1.5)  # paused
        kind = rng.random()
        if kind < 0.1:
            time.sleep(0.004)  # a period late, then two at once
            send(2)
        elif kind < 0.15:
            send(6)  # a burst the queue holds
        else:
            time.sleep(rng.uniform(0.0, 0.004))  # jitter around 2 ms
            send(1)
    after = settled(panda)
    processed, lost, other = (a - b for a, b in zip(after, before))
    assert (processed, lost, other) == (sent + 1, 0, 0)
    log = panda.node.log()
    assert "[WARN]" not in log, log[-3000:]


@pytest.mark.slow
def test_an_overflowing_queue_counts_exactly_what_it_lost(overflowing_node):
    """Bursts of 200 serialized joint states, published as fast as this
    process can, into a queue of depth 2 that the node empties slower: DDS
    overwrites many of them. Every one sent is either processed or counted
    lost, and at least a tenth are lost, so that the count is exercised (how
    many depends on how fast this process publishes beside the node)."""
    panda = overflowing_node
    peer = panda.peer
    before = settled(panda)
    names = list(panda.oracle.joint_names)
    q, qd = panda.state()
    data = serialize_message(harness.joint_state(names, q, qd, stamp_=harness.stamp(5)))
    sent = 0
    for burst in range(10):
        for _ in range(200):
            peer.joint_pub.publish(data)
        sent += 200
        time.sleep(0.1)
    after = settled(panda)
    processed, lost, other = (a - b for a, b in zip(after, before))
    print(f"sent {sent + 1}, processed {processed}, lost {lost}")
    assert other == 0, after
    assert processed + lost == sent + 1, (processed, lost, sent)
    assert lost >= sent // 10, (processed, lost, sent)

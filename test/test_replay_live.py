"""Live replay check: a bag played to the running node equals its offline replay.

The node runs as its own process with the repository's YAML, isolated on a
private ROS domain (ros_harness), and its joint_states subscription made
reliable with a deep queue through the standard QoS overrides: what a user
replaying a bag sets, since the default best-effort queue of 10 answers only
the newest states when the node is descheduled. The test side publishes the
bag's /robot_description (transient local, as robot_state_publisher does),
exchanges one joint state with the node so that both directions are matched,
then plays the bag's joint states on joint_states at the recorded rate and
records everything the node publishes. Every message must come back, in
order, equal to ``robot_dynamics_replay`` on the same bag within 1e-12.

Bag: panda, 5 s at 100 Hz (500 joint states), the formula trajectory of
test_replay.py (shuffled names, an extra name, stamps apart from bag times).
"""

import time
from pathlib import Path

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from rclpy.qos import ReliabilityPolicy
from rosbags.rosbag2 import Reader
from sensor_msgs.msg import JointState
from std_msgs.msg import String

import robots
import ros_harness as harness
from robot_dynamics_ros.dynamics import BOUNDS_FIELDS
from test_replay import (BASE_TOPICS, PREFIX, TYPESTORE, Trajectory, decode_outputs, read_bag,
                         replay, write_joint_state_bag)

STARTUP_TIMEOUT = 180.0  # first run on a machine compiles the numba kernels
LIVE_DURATION, LIVE_RATE = 5.0, 100.0
RELIABLE_JOINT_STATES = ("-p", "qos_overrides./joint_states.subscription.reliability:=reliable",
                         "-p", "qos_overrides./joint_states.subscription.depth:=1000")
TOLERANCE = 1e-12
# Topics every node has, which the replay does not reproduce.
NOT_REPLAYED = {"/diagnostics", "/rosout", "/parameter_events"}


def bag_messages(path: Path, topic: str):
    """(bag times in ns, deserialized rosbags messages) of one topic."""
    with Reader(path) as reader:
        connections = [c for c in reader.connections if c.topic == topic]
        pairs = [(t, TYPESTORE.deserialize_cdr(raw, c.msgtype))
                 for c, t, raw in reader.messages(connections=connections)]
    return [t for t, _ in pairs], [m for _, m in pairs]


def to_rclpy_joint_state(msg) -> JointState:
    out = JointState(name=list(msg.name), position=msg.position.tolist(),
                     velocity=msg.velocity.tolist(), effort=msg.effort.tolist())
    out.header.stamp = Time(sec=msg.header.stamp.sec, nanosec=msg.header.stamp.nanosec)
    out.header.frame_id = msg.header.frame_id
    return out


def play_bag(peer: harness.Peer, path: Path, topic: str = "/joint_states") -> int:
    """Publish the bag's joint states on joint_states at the recorded rate; returns how many.

    Messages are converted before the clock starts, and each is sent when the
    wall time since the first reaches its bag time since the first.
    """
    times, msgs = bag_messages(path, topic)
    outgoing = [to_rclpy_joint_state(m) for m in msgs]
    start = time.monotonic()
    for t, msg in zip(times, outgoing):
        delay = start + (t - times[0]) / 1e9 - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        peer.joint_pub.publish(msg)
    return len(outgoing)


def layout_key(layout):
    return (tuple((d.label, d.size, d.stride) for d in layout.dim), layout.data_offset)


@pytest.fixture(scope="module")
def live_run(tmp_path_factory):
    """(trajectory, bag path, the node's published topics, what it published for the bag)."""
    root = tmp_path_factory.mktemp("live")
    traj = Trajectory(robots.example_robot_urdf("panda"), LIVE_DURATION, LIVE_RATE, seed=11)
    bag = root / "panda_live"
    write_joint_state_bag(bag, "sqlite3", traj)
    harness.isolate_ros_environment()
    peer = harness.Peer()
    node = None
    try:
        _, (description,) = bag_messages(bag, "/robot_description")
        peer.description_pub.publish(String(data=description.data))
        node = harness.NodeProcess(*RELIABLE_JOINT_STATES, log_path=root / "node.log")
        peer.wait_for_model("panda", STARTUP_TIMEOUT, node)
        published = {topic: types for topic, types in peer.node.get_publisher_names_and_types_by_node(
            harness.NODE, "/")}
        # Discovery carries the reliability of the node's reader, not its depth.
        subscribed = [info.qos_profile.reliability
                      for info in peer.node.get_subscriptions_info_by_topic("/joint_states")
                      if info.node_name == harness.NODE]
        assert subscribed == [ReliabilityPolicy.RELIABLE], subscribed
        # The node's writers may match this process's readers after its reader
        # matched our writer: one round trip before the bag proves both.
        peer.compute(traj.joints, traj.q[0])
        topics = [t.rsplit("/", 1)[-1] for t in BASE_TOPICS]
        start = {t: peer.count(t) for t in [*topics, "christoffel_symbols"]}
        sent = play_bag(peer, bag)
        try:
            peer.wait_until(lambda: all(peer.count(t) - start[t] >= sent for t in topics), 60.0,
                            f"the node's outputs for all {sent} joint states")
        except AssertionError as error:
            answered = {m.header.stamp.sec * 10**9 + m.header.stamp.nanosec
                        for m in peer.messages("gravity_torques", start["gravity_torques"])}
            missing = [k for k, ns in enumerate(traj.stamp_ns) if ns not in answered]
            counts = {t: peer.count(t) - start[t] for t in topics}
            raise AssertionError(f"{error}; received {counts}, no output for bag messages {missing}\n"
                                 f"{node.log()[-2000:]}") from None
        time.sleep(0.5)  # anything beyond one output per input would arrive by now
        received = {t: peer.messages(t, start[t]) for t in start}
        yield traj, bag, published, received
    finally:
        if node is not None:
            node.stop()
        peer.close()


def test_live_outputs_equal_offline_replay(live_run, tmp_path):
    traj, bag, published, received = live_run
    count = len(traj.t)
    # The replay's topics are the node's: with --christoffel every topic it
    # publishes, and by default exactly those that a default node sends messages on.
    assert {t: types for t, types in published.items() if t not in NOT_REPLAYED} == {
        **{t: [m] for t, m in BASE_TOPICS.items()},
        PREFIX + "christoffel_symbols": ["std_msgs/msg/Float64MultiArray"]}
    assert {t: len(m) for t, m in received.items()} == {
        **{t.rsplit("/", 1)[-1]: count for t in BASE_TOPICS}, "christoffel_symbols": 0}

    assert replay(bag, tmp_path / "offline") == 0
    offline = decode_outputs(read_bag(tmp_path / "offline"))
    live_gravity = received["gravity_torques"]
    np.testing.assert_array_equal(
        [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for m in live_gravity], offline["stamps"])
    np.testing.assert_array_equal(offline["stamps"], traj.stamp_ns)
    assert {tuple(m.name) for m in live_gravity} == offline["joints"]
    worst = {}
    for name in ("mass_matrix", "coriolis_matrix", "coriolis_bounds"):
        assert {layout_key(m.layout) for m in received[name]} == offline[name + "_layouts"]
        live = np.array([np.asarray(m.data) for m in received[name]])
        if name == "coriolis_bounds":
            # K_c's interval is refined in the background live and before the
            # first message offline: two intervals that both hold K_c overlap.
            kc = [BOUNDS_FIELDS.index("kc_global"), BOUNDS_FIELDS.index("kc_global_lower")]
            assert np.all(live[:, kc[1]] <= offline[name][:, kc[0]])
            assert np.all(offline[name][:, kc[1]] <= live[:, kc[0]])
            live, offline[name] = (np.delete(x, kc, axis=1) for x in (live, offline[name]))
        worst[name] = robots.rel_err(live, offline[name])
    worst["gravity_torques"] = robots.rel_err(
        np.array([np.asarray(m.effort) for m in live_gravity]), offline["gravity_torques"])
    print(f"live vs offline over {count} joint states, max relative difference: {worst}")
    assert max(worst.values()) <= TOLERANCE, worst

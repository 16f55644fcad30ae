"""Live replay check: a bag played to the running node equals its offline replay.

The node runs as its own process with the repository's YAML, isolated on a
private ROS domain (ros_harness), and its joint_states subscription made
reliable with a deep queue through the standard QoS overrides: what a user
replaying a bag sets, since the default best-effort queue of 50 answers only
the newest states when the node is descheduled for longer. The test side publishes the
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
from bag_files import BASE_TOPICS, PREFIX, TYPESTORE, Trajectory, decode_outputs, read_bag, write_joint_state_bag
from test_replay import replay

STARTUP_TIMEOUT = 180.0  # first run on a machine compiles the numba kernels
LIVE_DURATION, LIVE_RATE = 5.0, 100.0
RELIABLE_JOINT_STATES = ("-p", "qos_overrides./joint_states.subscription.reliability:=reliable",
                         "-p", "qos_overrides./joint_states.subscription.depth:=1000")
TOLERANCE = 1e-12
# Topics every node has, which the replay does not reproduce, and
# ~/gravity_torques, whose values DynamicsState.gravity carries.
NOT_REPLAYED = {"/diagnostics", "/rosout", "/parameter_events", PREFIX + "gravity_torques"}


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
        start = peer.count("state")
        sent = play_bag(peer, bag)
        try:
            peer.wait_until(lambda: peer.count("state") - start >= sent, 60.0,
                            f"the node's DynamicsState for all {sent} joint states")
        except AssertionError as error:
            answered = {m.header.stamp.sec * 10**9 + m.header.stamp.nanosec
                        for m in peer.messages("state", start)}
            missing = [k for k, ns in enumerate(traj.stamp_ns) if ns not in answered]
            raise AssertionError(f"{error}; received {peer.count('state') - start}, no output for "
                                 f"bag messages {missing}\n{node.log()[-2000:]}") from None
        time.sleep(0.5)  # anything beyond one output per input would arrive by now
        yield traj, bag, published, peer.messages("state", start)
    finally:
        if node is not None:
            node.stop()
        peer.close()


@pytest.mark.slow
def test_live_outputs_equal_offline_replay(live_run, tmp_path):
    traj, bag, published, received = live_run
    count = len(traj.t)
    # The replay's topics are the node's.
    assert {t: types for t, types in published.items() if t not in NOT_REPLAYED} == {
        t: [m] for t, m in BASE_TOPICS.items()}
    assert len(received) == count

    assert replay(bag, tmp_path / "offline") == 0
    offline = decode_outputs(read_bag(tmp_path / "offline"))
    live = {"stamps": np.array([m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for m in received])}
    np.testing.assert_array_equal(live["stamps"], offline["stamps"])
    np.testing.assert_array_equal(offline["stamps"], traj.stamp_ns)
    assert {tuple(m.names) for m in received} == offline["joints"]
    assert {m.header.frame_id for m in received} == offline["frames"]
    worst = {}
    for name in ("position", "velocity", "mass_matrix", "coriolis_matrix", "gravity"):
        live_values = np.array([np.asarray(getattr(m, name)) for m in received])
        worst[name] = robots.rel_err(live_values, offline["gravity_torques" if name == "gravity" else name])
    bounds = np.array([[getattr(m, field) for field in BOUNDS_FIELDS] for m in received])
    # K_c's interval is refined in the background live and before the first
    # message offline: two intervals that both hold K_c overlap.
    kc = [BOUNDS_FIELDS.index("kc_global"), BOUNDS_FIELDS.index("kc_global_lower")]
    assert np.all(bounds[:, kc[1]] <= offline["coriolis_bounds"][:, kc[0]])
    assert np.all(offline["coriolis_bounds"][:, kc[1]] <= bounds[:, kc[0]])
    worst["bounds"] = robots.rel_err(np.delete(bounds, kc, axis=1),
                                     np.delete(offline["coriolis_bounds"], kc, axis=1))
    print(f"live vs offline over {count} joint states, max relative difference: {worst}")
    assert max(worst.values()) <= TOLERANCE, worst

"""The node's inputs read from their bytes, against the messages rclpy (little
endian) and rosbags (big endian) serialized."""
import numpy as np
import pytest
from builtin_interfaces.msg import Time
from nav_msgs.msg import Odometry
from rclpy.serialization import serialize_message
from rosbags.typesys import Stores, get_typestore
from sensor_msgs.msg import JointState

from robot_dynamics_ros.served.base_state import odometry_reading
from robot_dynamics_ros.messages.cdr_inputs import JointStateReader, MalformedMessage, read_odometry

ROSBAGS = get_typestore(Stores.ROS2_JAZZY)


def joint_state(rng, names, frame_id="", sizes=None):
    n = len(names)
    position, velocity, effort = (rng.normal(size=size) for size in (sizes or (n, n, n)))
    msg = JointState(name=list(names), position=position.tolist(), velocity=velocity.tolist(),
                     effort=effort.tolist())
    msg.header.stamp = Time(sec=int(rng.integers(-2**31, 2**31)), nanosec=int(rng.integers(0, 10**9)))
    msg.header.frame_id = frame_id
    return msg


def odometry(rng, frame_id="odom", child="base_link"):
    msg = Odometry(child_frame_id=child)
    msg.header.stamp = Time(sec=int(rng.integers(0, 2**31)), nanosec=int(rng.integers(0, 10**9)))
    msg.header.frame_id = frame_id
    pose, twist = msg.pose, msg.twist
    (pose.pose.position.x, pose.pose.position.y, pose.pose.position.z, pose.pose.orientation.x,
     pose.pose.orientation.y, pose.pose.orientation.z, pose.pose.orientation.w) = rng.normal(size=7).tolist()
    (twist.twist.linear.x, twist.twist.linear.y, twist.twist.linear.z,
     twist.twist.angular.x, twist.twist.angular.y, twist.twist.angular.z) = rng.normal(size=6).tolist()
    pose.covariance, twist.covariance = rng.normal(size=36), rng.normal(size=36)
    return msg


def assert_reads_as(reading, msg):
    assert (reading.stamp.sec, reading.stamp.nanosec) == (msg.header.stamp.sec, msg.header.stamp.nanosec)
    assert reading.name == list(msg.name)
    for field in ("position", "velocity", "effort"):
        np.testing.assert_array_equal(getattr(reading, field), np.asarray(getattr(msg, field), dtype=float))


# names and frame ids of every length mod 4 and 8, so that every padding occurs
@pytest.mark.parametrize("frame_id", ["", "a", "ab", "abc", "base_link", "wörld"])
@pytest.mark.parametrize("sizes", [None, (3, 0, 0), (3, 3, 0), (0, 0, 0)])
def test_a_joint_state_reads_as_rclpy_serialized_it(frame_id, sizes):
    rng = np.random.default_rng(len(frame_id))
    names = [] if sizes == (0, 0, 0) else ["j", "joint_two", "ünïcode_jöint"]
    msg = joint_state(rng, names, frame_id, sizes)
    assert_reads_as(JointStateReader().read(serialize_message(msg)), msg)


def test_a_big_endian_joint_state_reads_as_rosbags_serialized_it():
    rng = np.random.default_rng(2)
    msg = joint_state(rng, ["a", "bb", "ccc", "dddd", "eeeee"], "f")
    data = bytes(ROSBAGS.serialize_cdr(ROSBAGS.deserialize_cdr(serialize_message(msg), "sensor_msgs/msg/JointState"),
                                       "sensor_msgs/msg/JointState", little_endian=False))
    assert data[1] == 0  # big endian
    assert_reads_as(JointStateReader().read(data), msg)


def test_the_names_are_read_once_while_a_publisher_repeats_them():
    rng = np.random.default_rng(3)
    reader = JointStateReader()
    first = reader.read(serialize_message(joint_state(rng, ["a", "b"])))
    second = reader.read(serialize_message(joint_state(rng, ["a", "b"])))
    assert second.name is first.name
    third = reader.read(serialize_message(joint_state(rng, ["a", "c"])))
    assert third.name == ["a", "c"] and first.name == ["a", "b"]


def test_the_padding_between_names_is_not_part_of_them():
    """Fast-CDR leaves padding bytes as it found them in its buffer: other
    padding is the same names, another character is another name."""
    reader = JointStateReader()
    data = bytearray(serialize_message(joint_state(np.random.default_rng(7), ["a", "b"])))
    # empty frame_id: its length at 12, NUL at 16, padding to 20; the count at 20;
    # "a": length at 24, 'a' NUL at 28, padding 30-31; "b": length at 32, 'b' at 36
    first = reader.read(bytes(data))
    data[17:20], data[30:32] = b"\xab" * 3, b"\xcd" * 2
    assert reader.read(bytes(data)).name is first.name
    data[36] = ord("c")
    assert reader.read(bytes(data)).name == ["a", "c"]


@pytest.mark.parametrize("frame_id, child", [("odom", "base_link"), ("", "b"), ("abc", ""), ("wörld", "imu")])
def test_odometry_reads_as_its_message(frame_id, child):
    msg = odometry(np.random.default_rng(4), frame_id, child)
    expected = odometry_reading(msg)
    for data in (serialize_message(msg), bytes(ROSBAGS.serialize_cdr(
            ROSBAGS.deserialize_cdr(serialize_message(msg), "nav_msgs/msg/Odometry"),
            "nav_msgs/msg/Odometry", little_endian=False))):
        reading = read_odometry(data)
        assert reading[:3] == expected[:3]
        np.testing.assert_array_equal(reading.position, expected.position)
        np.testing.assert_array_equal(reading.velocity, expected.velocity)


def test_every_truncation_and_corruption_is_a_malformed_message():
    rng = np.random.default_rng(5)
    cases = [(JointStateReader().read, serialize_message(joint_state(rng, ["a", "bb", "ccc"], "frame"))),
             (read_odometry, serialize_message(odometry(rng)))]
    for read, data in cases:
        for end in range(len(data)):
            with pytest.raises(MalformedMessage):
                read(data[:end])
        for _ in range(300):  # random bytes anywhere: read or refused, nothing else
            corrupt = bytearray(data)
            corrupt[rng.integers(len(data))] = rng.integers(256)
            try:
                read(bytes(corrupt))
            except MalformedMessage as error:
                assert "CDR" in str(error)


def test_a_huge_count_is_refused_before_anything_is_allocated():
    data = bytearray(serialize_message(joint_state(np.random.default_rng(6), ["a"])))
    data[20:24] = (2**32 - 1).to_bytes(4, "little")  # the name count, after an empty frame_id and its NUL
    with pytest.raises(MalformedMessage, match="names"):
        JointStateReader().read(bytes(data))

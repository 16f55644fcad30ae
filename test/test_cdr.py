"""Output messages serialized from templates, read back by rclpy's own deserializer."""
import numpy as np
import pytest
from builtin_interfaces.msg import Time
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from robot_dynamics_ros.messages import BOUNDS_FIELDS, from_multiarray, output_templates

JOINTS = ("shoulder", "elbow", "a_joint_with_a_longer_name")  # unaligned name lengths
SHAPES = {"mass_matrix": (3, 3), "coriolis_matrix": (3, 3), "coriolis_bounds": (len(BOUNDS_FIELDS),),
          "christoffel_symbols": (3, 3, 3)}
LABELS = {"mass_matrix": ["row", "column"], "coriolis_matrix": ["row", "column"],
          "coriolis_bounds": [",".join(BOUNDS_FIELDS)], "christoffel_symbols": ["i", "j", "k"]}


@pytest.mark.parametrize("topic", sorted(SHAPES))
def test_multiarray_bytes_are_the_message(topic):
    template = output_templates(JOINTS)[topic]
    values = np.random.default_rng(1).normal(size=SHAPES[topic])
    one = template.encode_one(values)
    msg = deserialize_message(one, Float64MultiArray)
    np.testing.assert_array_equal(from_multiarray(msg), values)
    assert [d.label for d in msg.layout.dim] == LABELS[topic]
    # a batch encodes each row to the same bytes
    batch = template.encode(np.stack([values, -values]))
    assert bytes(batch[0]) == one
    np.testing.assert_array_equal(from_multiarray(deserialize_message(bytes(batch[1]), Float64MultiArray)),
                                  -values)


def test_gravity_bytes_carry_names_stamp_and_effort():
    template = output_templates(JOINTS)["gravity_torques"]
    torques = np.array([1.5, -2.25, 1e-300])
    stamp = Time(sec=1_700_000_123, nanosec=999_999_999)
    msg = deserialize_message(template.encode_one(torques, stamp), JointState)
    assert list(msg.name) == list(JOINTS)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (stamp.sec, stamp.nanosec)
    np.testing.assert_array_equal(msg.effort, torques)
    assert len(msg.position) == len(msg.velocity) == 0
    stamps = np.array([[stamp.sec, stamp.nanosec], [5, 6]])
    batch = template.encode(np.stack([torques, torques]), stamps)
    assert bytes(batch[0]) == template.encode_one(torques, stamp)
    second = deserialize_message(bytes(batch[1]), JointState)
    assert (second.header.stamp.sec, second.header.stamp.nanosec) == (5, 6)

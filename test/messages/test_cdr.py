"""Output messages serialized from templates, read back by rclpy's own deserializer."""
import numpy as np
import pytest
from builtin_interfaces.msg import Time
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

import robots
from robot_dynamics_ros.dynamics import BOUNDS_FIELDS, frame_terms
from robot_dynamics_ros.served.model import load_description
from robot_dynamics_ros.msg import DynamicsState
from robot_dynamics_ros.messages.outputs import (STATE_SCALARS, array_templates, compute_outputs, frames_in_place,
                                                 from_multiarray, state_template, state_values)

JOINTS = ("shoulder", "elbow", "a_joint_with_a_longer_name")  # unaligned name lengths
SHAPES = {"mass_matrix": (3, 3), "coriolis_matrix": (3, 3), "coriolis_bounds": (len(BOUNDS_FIELDS),),
          "christoffel_symbols": (3, 3, 3)}
LABELS = {"mass_matrix": ["row", "column"], "coriolis_matrix": ["row", "column"],
          "coriolis_bounds": [",".join(BOUNDS_FIELDS)], "christoffel_symbols": ["i", "j", "k"]}


@pytest.mark.parametrize("topic", sorted(SHAPES))
def test_multiarray_bytes_are_the_message(topic):
    template = array_templates(JOINTS)[topic]
    values = np.random.default_rng(1).normal(size=SHAPES[topic])
    one = template.encode_one((values,))
    msg = deserialize_message(one, Float64MultiArray)
    np.testing.assert_array_equal(from_multiarray(msg), values)
    assert [d.label for d in msg.layout.dim] == LABELS[topic]
    # a batch encodes each row to the same bytes
    batch = template.encode([np.stack([values, -values])])
    assert bytes(batch[0]) == one
    np.testing.assert_array_equal(from_multiarray(deserialize_message(bytes(batch[1]), Float64MultiArray)),
                                  -values)


def test_gravity_bytes_carry_names_stamp_and_effort():
    template = array_templates(JOINTS)["gravity_torques"]
    torques = np.array([1.5, -2.25, 1e-300])
    stamp = Time(sec=1_700_000_123, nanosec=999_999_999)
    msg = deserialize_message(template.encode_one((torques,), stamp), JointState)
    assert list(msg.name) == list(JOINTS)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (stamp.sec, stamp.nanosec)
    np.testing.assert_array_equal(msg.effort, torques)
    assert len(msg.position) == len(msg.velocity) == 0
    stamps = np.array([[stamp.sec, stamp.nanosec], [5, 6]])
    batch = template.encode([np.stack([torques, torques])], stamps)
    assert bytes(batch[0]) == template.encode_one((torques,), stamp)
    second = deserialize_message(bytes(batch[1]), JointState)
    assert (second.header.stamp.sec, second.header.stamp.nanosec) == (5, 6)


@pytest.mark.parametrize("robot, base, reordered", [("panda", "fixed", False), ("panda", "fixed", True),
                                                     ("solo12", "floating", True)])
@pytest.mark.parametrize("christoffel", [False, True])
def test_state_bytes_are_the_message_in_the_requested_order(robot, base, reordered, christoffel):
    """Every field of a DynamicsState read back by rclpy, against the model-order
    values permuted here by name (the ``joints`` parameter's order)."""
    text = robots.urdf_text(robots.example_robot_urdf(robot))
    plain = load_description(text, base=base)
    joints = list(plain.model.joint_names)[::-1] if reordered else None
    served = load_description(text, base=base, joints=joints)
    rng = np.random.default_rng(3)
    q = np.concatenate([rng.normal(size=3), [0.0, 0.6, 0.0, 0.8], rng.normal(size=len(plain.joints))]) \
        if base == "floating" else rng.normal(size=plain.model.nq)
    qd = rng.normal(size=plain.model.nv)
    outputs = compute_outputs(served.model, q, qd)
    terms = outputs[0]
    frame = "odom" if base == "floating" else served.root_link
    template = state_template(served, 7, frame, christoffel)
    stamp = Time(sec=12, nanosec=345)
    msg = deserialize_message(template.encode_one(state_values(served, q, qd, outputs, christoffel), stamp),
                              DynamicsState)
    names = list(plain.model.velocity_names)
    order = [names.index(name) for name in msg.names]  # v index of each published coordinate
    position_names = list(plain.model.configuration_names)
    position_order = [position_names.index(name) for name in served.position_names]
    assert msg.names == list(served.base) + (joints or list(plain.joints))
    assert (msg.header.stamp, msg.header.frame_id, msg.model_revision) == (stamp, frame, 7)
    np.testing.assert_array_equal(msg.position, q[position_order])
    np.testing.assert_array_equal(msg.velocity, qd[order])
    n = len(order)
    square = np.ix_(order, order)
    np.testing.assert_array_equal(np.reshape(msg.mass_matrix, (n, n)), terms.mass_matrix[square])
    np.testing.assert_array_equal(np.reshape(msg.coriolis_matrix, (n, n)), terms.coriolis_matrix[square])
    np.testing.assert_array_equal(msg.gravity, terms.gravity_torques[order])
    for name in STATE_SCALARS:
        assert getattr(msg, name) == terms.coriolis_bounds[BOUNDS_FIELDS.index(name)], name
    if christoffel:
        np.testing.assert_array_equal(np.reshape(msg.christoffel_symbols, (n, n, n)),
                                      terms.christoffel_symbols[np.ix_(order, order, order)])
    else:
        assert len(msg.christoffel_symbols) == 0
    # a batch gives the same bytes per row
    batch = compute_outputs(served.model, np.stack([q, q]), np.stack([qd, -qd]))
    rows = template.encode(state_values(served, np.stack([q, q]), np.stack([qd, -qd]), batch,
                                        christoffel, batch=True), np.array([[12, 345], [13, 0]]))
    assert deserialize_message(bytes(rows[0]), DynamicsState) == msg
    np.testing.assert_array_equal(deserialize_message(bytes(rows[1]), DynamicsState).velocity, -qd[order])


@pytest.mark.parametrize("robot, base, frames", [("panda", "fixed", ("panda_hand_tcp", "panda_link4")),
                                                 ("solo12", "floating", ("FL_FOOT", "HR_FOOT"))])
def test_frames_written_into_the_message_are_the_replays_bytes(robot, base, frames):
    """The node computes the frames straight into its message's buffer
    (``frames_in_place``); the replay encodes a batch from ``frame_terms``:
    the same bytes, and the frames read back are the library's."""
    served = load_description(robots.urdf_text(robots.example_robot_urdf(robot)), base=base, frames=frames)
    model = served.model
    rng = np.random.default_rng(5)
    q = np.concatenate([rng.normal(size=3), [0.0, 0.6, 0.0, 0.8], rng.normal(size=len(served.joints))]) \
        if base == "floating" else rng.normal(size=model.nq)
    qd = rng.normal(size=model.nv)
    template = state_template(served, 3, "odom" if base == "floating" else served.root_link, False)
    frames_out = frames_in_place(template, served)
    assert frames_out is not None
    one = compute_outputs(model, q, qd, False, served.frames, frames_out)
    assert one[1] is None  # in the message already
    stamp = Time(sec=4, nanosec=5)
    single = template.encode_one(state_values(served, q, qd, one, False), stamp)
    batch = compute_outputs(model, np.stack([q, q]), np.stack([qd, qd]), False, served.frames)
    rows = template.encode(state_values(served, np.stack([q, q]), np.stack([qd, qd]), batch, False, batch=True),
                           np.array([[4, 5], [4, 5]]))
    assert bytes(rows[0]) == single
    msg = deserialize_message(single, DynamicsState)
    poses, jacobians, bias = frame_terms(model, q, qd, frames)
    assert list(msg.frame_names) == list(frames)
    np.testing.assert_array_equal([[p.position.x, p.position.y, p.position.z, p.orientation.x, p.orientation.y,
                                    p.orientation.z, p.orientation.w] for p in msg.frame_poses], poses)
    np.testing.assert_array_equal(np.reshape(msg.frame_jacobians, jacobians.shape), jacobians)
    np.testing.assert_array_equal(np.reshape(msg.frame_jacobian_dot_v, bias.shape), bias)

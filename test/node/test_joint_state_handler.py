"""The node's hot path without ROS: serialized joint states in, serialized
outputs out, every output against Pinocchio, every refusal counted.

The joint states are serialized by rosbags (as a bag or DDS carries them)
and the outputs read back with rosbags from the package's own message
definitions: no rclpy anywhere in this file.
"""

import time

import numpy as np
import pytest
from paths import REPO
from robots import PinocchioOracle, example_robot_urdf, load_pinocchio, urdf_text
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from robot_dynamics_ros.node.joint_state_handler import JointStateHandler, make_live
from robot_dynamics_ros.node.model_service import ModelService
from robot_dynamics_ros.node.parameters import BY_NAME, RUNTIME
from robot_dynamics_ros.node.status import NodeStatus

STORE = get_typestore(Stores.ROS2_JAZZY)
STORE.register(get_types_from_msg((REPO / "msg" / "DynamicsState.msg").read_text(),
                                  "robot_dynamics_ros/msg/DynamicsState"))
JointState = STORE.types["sensor_msgs/msg/JointState"]
Header = STORE.types["std_msgs/msg/Header"]
Time = STORE.types["builtin_interfaces/msg/Time"]


def joint_state(names, q, qd=(), effort=(), sec=100, nanosec=0) -> bytes:
    msg = JointState(header=Header(stamp=Time(sec=sec, nanosec=nanosec), frame_id=""), name=list(names),
                     position=np.asarray(q, float), velocity=np.asarray(qd, float),
                     effort=np.asarray(effort, float))
    return bytes(STORE.serialize_cdr(msg, "sensor_msgs/msg/JointState"))


class Served:
    """A model service serving panda, and a handler on it, as the node wires them."""

    def __init__(self, publish_arrays=False):
        urdf = urdf_text(example_robot_urdf("panda"))
        self.revision = 0
        defaults = {name: BY_NAME[name].default for name in RUNTIME}
        self.service = ModelService(parameters=defaults, prepare=self._prepare)
        self.service.request_description("test", lambda: urdf)
        self.service.start()
        deadline = time.monotonic() + 120
        while self.service.live is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert self.service.live is not None, dict(self.service.refused)
        self.status = NodeStatus()
        self.warnings = []
        self.handler = JointStateHandler(
            live=lambda: self.service.live, christoffel=lambda: False, status=self.status,
            base_states=None, publish_arrays=publish_arrays, warn=self.warnings.append)
        self.joints = list(self.service.live.served.model.joint_names)
        self.oracle = PinocchioOracle(load_pinocchio(urdf), self.joints)

    def _prepare(self, served, old):
        self.revision += 1
        return make_live(served, old, self.revision, "", 0)


@pytest.fixture(scope="module")
def served():
    it = Served()
    yield it
    it.service.stop()


def test_every_output_of_one_joint_state_against_pinocchio(served):
    rng = np.random.default_rng(4)
    n = len(served.joints)
    q, qd = rng.uniform(-1, 1, n), rng.uniform(-2, 2, n)
    order = rng.permutation(n)  # a driver's order, not the model's, and a name it does not model
    names = [served.joints[i] for i in order] + ["gripper_extra"]
    published = served.handler.handle(joint_state(names, np.append(q[order], 0.3),
                                                  np.append(qd[order], 0.0), sec=7, nanosec=5))
    state = STORE.deserialize_cdr(published.state, "robot_dynamics_ros/msg/DynamicsState")
    assert (state.header.stamp.sec, state.header.stamp.nanosec) == (7, 5)
    assert list(state.names) == served.joints and state.model_revision == served.revision
    np.testing.assert_allclose(state.mass_matrix.reshape(n, n), served.oracle.mass_matrix(q), atol=1e-12)
    np.testing.assert_allclose(state.coriolis_matrix.reshape(n, n), served.oracle.coriolis_matrix(q, qd),
                               atol=1e-12)
    np.testing.assert_allclose(state.gravity, served.oracle.gravity_torques(q), atol=1e-12)
    gravity = STORE.deserialize_cdr(published.gravity, "sensor_msgs/msg/JointState")
    np.testing.assert_array_equal(gravity.effort, state.gravity)
    assert published.arrays == () and served.status.processed >= 1


@pytest.mark.parametrize("make, kind", [
    (lambda j: b"\x00\x01\x00\x00\x07", "malformed"),
    (lambda j: joint_state(j[:-1], np.zeros(len(j) - 1)), "missing_joint"),
    (lambda j: joint_state(j, [np.nan] + [0.0] * (len(j) - 1)), "non_finite"),
    (lambda j: joint_state(j, np.zeros(len(j)), np.zeros(2)), "length_mismatch"),
])
def test_a_joint_state_that_cannot_be_answered_is_counted_by_reason(served, make, kind):
    before, processed = served.status.dropped[kind], served.status.processed
    assert served.handler.handle(make(served.joints)) is None
    assert served.status.dropped[kind] == before + 1 and served.status.processed == processed


def test_drops_warn_at_most_once_per_period():
    it = Served()
    try:
        for _ in range(50):
            it.handler.handle(b"\x00\x01\x00\x00")
        assert it.status.dropped["malformed"] == 50 and len(it.warnings) == 1
    finally:
        it.service.stop()


def test_no_model_yet_is_counted_and_not_warned():
    status, warnings = NodeStatus(), []
    handler = JointStateHandler(live=lambda: None, christoffel=lambda: False, status=status,
                                base_states=None, publish_arrays=False, warn=warnings.append)
    assert handler.handle(joint_state(["a"], [0.0])) is None
    assert status.dropped["no_model"] == 1 and warnings == []


def test_array_topics_carry_the_same_numbers():
    it = Served(publish_arrays=True)
    try:
        n = len(it.joints)
        q = np.linspace(-0.5, 0.5, n)
        published = it.handler.handle(joint_state(it.joints, q, np.ones(n)))
        arrays = dict(published.arrays)
        assert set(arrays) == {"mass_matrix", "coriolis_matrix", "coriolis_bounds"}
        mass = STORE.deserialize_cdr(arrays["mass_matrix"], "std_msgs/msg/Float64MultiArray")
        np.testing.assert_allclose(mass.data.reshape(n, n), it.oracle.mass_matrix(q), atol=1e-12)
    finally:
        it.service.stop()

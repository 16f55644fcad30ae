"""The node's hot path without ROS: serialized joint states in, serialized
outputs out, every output against Pinocchio, every refusal counted.

The joint states are serialized by rosbags (as a bag or DDS carries them)
and the outputs read back with rosbags from the package's own message
definitions: no rclpy anywhere in this file.
"""

import time

import numpy as np
import pinocchio as pin
import pytest
from paths import REPO
from robots import PinocchioOracle, example_robot_urdf, load_pinocchio, urdf_text
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from robot_dynamics_ros import dynamics
from robot_dynamics_ros.node.joint_state_handler import JointStateHandler, make_live
from robot_dynamics_ros.node.model_service import ModelService
from robot_dynamics_ros.node.parameters import BY_NAME, RUNTIME
from robot_dynamics_ros.node.status import NodeStatus
from robot_dynamics_ros.served.base_state import BaseStatePairing

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
    """A model service serving panda (or ``robot``), and a handler on it, as
    the node wires them; ``frames``, ``base``, ``joints`` as the node's
    parameters give them."""

    def __init__(self, publish_arrays=False, robot="panda", frames=(), base="auto", joints=()):
        urdf = urdf_text(example_robot_urdf(robot))
        self.revision = 0
        defaults = {name: BY_NAME[name].default for name in RUNTIME}
        self.service = ModelService(parameters=defaults, prepare=self._prepare, frames=frames,
                                    base=base, joints=joints)
        self.service.request_description("test", lambda: urdf)
        self.service.start()
        deadline = time.monotonic() + 120
        while self.service.live is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert self.service.live is not None, dict(self.service.refused)
        self.status = NodeStatus()
        self.warnings = []
        floating = bool(self.service.live.served.base)
        self.handler = JointStateHandler(
            live=lambda: self.service.live, christoffel=lambda: False, status=self.status,
            base_states=BaseStatePairing(0.1) if floating else None, publish_arrays=publish_arrays,
            warn=self.warnings.append)
        self.joints = list(self.service.live.served.model.joint_names)
        self.oracle = PinocchioOracle(load_pinocchio(urdf, free_flyer=floating), self.joints)

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


# Task space: the frames parameter's poses, Jacobians and J̇v


def frame_fields(state, nv):
    """A DynamicsState's frame fields: names, poses (k, 4, 4) from position and
    quaternion, Jacobians (k, 6, nv), J̇v (k, 6)."""
    k = len(state.frame_names)
    poses = np.zeros((k, 4, 4))
    for pose, out in zip(state.frame_poses, poses):
        p, o = pose.position, pose.orientation
        out[:3, :3] = pin.Quaternion(o.w, o.x, o.y, o.z).toRotationMatrix()
        out[:3, 3], out[3, 3] = (p.x, p.y, p.z), 1.0
        assert abs(np.linalg.norm([o.x, o.y, o.z, o.w]) - 1) < 1e-12
    return (list(state.frame_names), poses, state.frame_jacobians.reshape(k, 6, nv),
            state.frame_jacobian_dot_v.reshape(k, 6))


def pinocchio_frames(oracle, frames, q, v):
    """Pinocchio's frame placements, LOCAL_WORLD_ALIGNED Jacobians (columns in
    our v order) and classical accelerations at qdd = 0."""
    model, data = oracle.model, oracle.data
    pq, pv = oracle.q(q), oracle.v(v)
    pin.forwardKinematics(model, data, pq, pv, np.zeros(model.nv))
    pin.computeJointJacobians(model, data, pq)
    pin.updateFramePlacements(model, data)
    out = []
    for frame in frames:
        fid = model.getFrameId(frame)
        J = pin.getFrameJacobian(model, data, fid, pin.LOCAL_WORLD_ALIGNED)[:, oracle.order_v]
        a = pin.getFrameClassicalAcceleration(model, data, fid, pin.LOCAL_WORLD_ALIGNED)
        out.append((data.oMf[fid].homogeneous, J, np.concatenate((a.linear, a.angular))))
    return out


def check_frames(state, model, frames, oracle, order):
    """The state's frame fields against the library at the state's own
    position and velocity, and against Pinocchio; ``order``: the model index
    (in v) of each of the message's coordinates."""
    nv = len(state.names)
    names, poses, jacobians, bias = frame_fields(state, nv)
    assert names == list(frames)
    q, v = np.asarray(state.position), np.asarray(state.velocity)
    extra = len(q) - nv  # 1 for a floating base: its quaternion has 4 numbers for 3 speeds
    q_model, v_model = q.copy(), np.empty(nv)
    q_model[extra + order[6 * extra:]] = q[7 * extra:]  # joint j of v is entry j + extra of q
    v_model[order] = v
    for k, frame in enumerate(frames):
        np.testing.assert_allclose(poses[k], dynamics.frame_placement(model, q_model, frame), atol=1e-12)
        np.testing.assert_allclose(jacobians[k], dynamics.frame_jacobian(model, q_model, frame)[:, order],
                                   atol=1e-12)
        np.testing.assert_allclose(bias[k], dynamics.frame_jacobian_dot_v(model, q_model, v_model, frame),
                                   atol=1e-12)
    assert list(state.names[nv - len(oracle.joint_names):]) == list(oracle.joint_names)
    for k, (X, J, a) in enumerate(pinocchio_frames(oracle, frames, q, v)):
        np.testing.assert_allclose(poses[k], X, atol=1e-10)
        np.testing.assert_allclose(jacobians[k], J, atol=1e-10)
        np.testing.assert_allclose(bias[k], a, atol=1e-9)


@pytest.mark.parametrize("reordered", [False, True])
def test_frames_of_a_fixed_arm_against_the_library_and_pinocchio(reordered):
    """In model order the kernel writes the frames straight into the
    message (``outputs.frames_in_place``); in another order J's columns are
    reordered in a copy."""
    frames = ("panda_hand_tcp", "panda_link4")  # a link merged into the hand, and a body
    probe = Served()
    joints = probe.joints[::-1] if reordered else probe.joints
    probe.service.stop()
    it = Served(frames=frames, joints=joints if reordered else ())
    try:
        rng = np.random.default_rng(48)
        oracle = PinocchioOracle(it.oracle.model, joints)
        model = it.service.live.served.model
        order = np.array([model.joint_names.index(j) for j in joints])
        for sec in range(1, 4):
            q, qd = rng.uniform(-1.5, 1.5, len(joints)), rng.uniform(-2, 2, len(joints))
            state = STORE.deserialize_cdr(it.handler.handle(joint_state(joints, q, qd, sec=sec)).state,
                                          "robot_dynamics_ros/msg/DynamicsState")
            assert list(state.names) == joints
            check_frames(state, model, frames, oracle, order)
    finally:
        it.service.stop()


def odometry(stamp_sec, position, velocity, child, frame="odom") -> bytes:
    Odometry = STORE.types["nav_msgs/msg/Odometry"]
    geometry = {name: STORE.types[f"geometry_msgs/msg/{name}"] for name in
                ("Pose", "Point", "Quaternion", "PoseWithCovariance", "Twist", "TwistWithCovariance",
                 "Vector3")}
    pose = geometry["Pose"](position=geometry["Point"](*position[:3]),
                            orientation=geometry["Quaternion"](*position[3:]))
    twist = geometry["Twist"](linear=geometry["Vector3"](*velocity[:3]),
                              angular=geometry["Vector3"](*velocity[3:]))
    msg = Odometry(header=Header(stamp=Time(sec=stamp_sec, nanosec=0), frame_id=frame), child_frame_id=child,
                   pose=geometry["PoseWithCovariance"](pose=pose, covariance=np.zeros(36)),
                   twist=geometry["TwistWithCovariance"](twist=twist, covariance=np.zeros(36)))
    return bytes(STORE.serialize_cdr(msg, "nav_msgs/msg/Odometry"))


def test_frames_of_a_floating_base_against_the_library_and_pinocchio():
    frames = ("FL_FOOT", "HR_FOOT")
    it = Served(robot="solo12", frames=frames, base="floating")
    try:
        rng = np.random.default_rng(12)
        served = it.service.live.served
        n = len(it.joints)
        for sec in range(1, 4):
            quaternion = rng.normal(size=4)
            position = np.concatenate((rng.uniform(-1, 1, 3), quaternion / np.linalg.norm(quaternion)))
            velocity = rng.uniform(-1, 1, 6)
            it.handler.add_odometry(odometry(sec, position, velocity, served.root_link))
            q, qd = rng.uniform(-1, 1, n), rng.uniform(-2, 2, n)
            published = it.handler.handle(joint_state(it.joints, q, qd, sec=sec))
            assert published is not None, dict(it.status.dropped)
            state = STORE.deserialize_cdr(published.state, "robot_dynamics_ros/msg/DynamicsState")
            assert state.header.frame_id == "odom"
            np.testing.assert_array_equal(state.position[:7], position)
            check_frames(state, served.model, frames, it.oracle, np.arange(6 + n))
    finally:
        it.service.stop()


def test_without_frames_the_frame_fields_are_empty(served):
    n = len(served.joints)
    state = STORE.deserialize_cdr(served.handler.handle(joint_state(served.joints, np.zeros(n))).state,
                                  "robot_dynamics_ros/msg/DynamicsState")
    assert (list(state.frame_names), list(state.frame_poses), state.frame_jacobians.size,
            state.frame_jacobian_dot_v.size) == ([], [], 0, 0)


def test_an_unknown_frame_refuses_the_model_naming_the_frame_and_the_known_ones():
    reports = []
    service = ModelService(parameters={name: BY_NAME[name].default for name in RUNTIME},
                           frames=("panda_hand_tcp", "tool_that_is_not"), report=reports.append)
    service.request_description("test", lambda: urdf_text(example_robot_urdf("panda")))
    service.start()
    try:
        deadline = time.monotonic() + 60
        while not service.refused and time.monotonic() < deadline:
            time.sleep(0.01)
        assert service.live is None and service.refused["description"] == 1
        (report,) = reports
        assert "'tool_that_is_not'" in report and "frames parameter" in report
        assert "panda_hand_tcp" in report and "panda_link0" in report  # the known frames
    finally:
        service.stop()


def info(sequence):
    """The message info of a take, as rclpy passes it with Fast DDS."""
    return {"source_timestamp": 0, "received_timestamp": 0, "publication_sequence_number": sequence,
            "reception_sequence_number": None}


def test_joint_states_lost_before_the_callback_are_counted_from_sequence_numbers():
    """Holes in the publisher's numbers are lost joint states, whatever the
    stamps say (here: every stamp the same); a malformed one takes its
    number; one warning for them all."""
    it = Served()
    try:
        data = joint_state(it.joints, np.zeros(len(it.joints)))
        for sequence in (5, 6, 7, 10, 11):  # the first seen at 5: nothing lost to the node
            assert it.handler.handle(data, info(sequence)) is not None
        it.handler.handle(b"\x00\x01\x00\x00", info(12))
        it.handler.handle(data, info(13))
        it.handler.handle(data, info(20))
        assert it.status.dropped["lost_before_callback"] == 2 + 6
        assert it.status.dropped["malformed"] == 1 and it.status.processed == 7
        assert len(it.warnings) == 1 and "lost_before_callback" in it.warnings[0]
    finally:
        it.service.stop()


def test_losses_before_a_model_is_served_are_counted_and_not_warned():
    """At start-up the queue overflows while the node loads its model: those
    joint states could not have been answered; counted, with no warning."""
    status, warnings = NodeStatus(), []
    handler = JointStateHandler(live=lambda: None, christoffel=lambda: False, status=status,
                                base_states=None, publish_arrays=False, warn=warnings.append)
    for sequence in (1, 2, 9):
        assert handler.handle(joint_state(["a"], [0.0]), info(sequence)) is None
    assert status.dropped["lost_before_callback"] == 6 and status.dropped["no_model"] == 3
    assert warnings == []


def test_without_sequence_numbers_a_steady_stream_counts_no_loss(served):
    """A transport that gives no numbers (None, or 0): the stamps are used."""
    before = served.status.dropped["lost_before_callback"]
    for k in range(400):
        served.handler.handle(joint_state(served.joints, np.zeros(len(served.joints)),
                                          sec=200 + k // 1000, nanosec=(k % 1000) * 1_000_000),
                              info(0) if k % 2 else None)
    assert served.status.dropped["lost_before_callback"] == before

"""The task space over DDS: a node process started with ``frames`` on ur10
(an arm no other node test serves), each DynamicsState's frame fields
against the library at the state's own position and velocity, before and
after a payload swap, and ~/model listing the frames."""

import numpy as np
import pytest

import robots
import ros_harness as harness
from panda_node import PAYLOAD_TIMEOUT, payload_parameters
from robot_dynamics_ros.dynamics import (frame_jacobian, frame_jacobian_dot_v, frame_placement,
                                         load_urdf)

FRAMES = ("tool0", "forearm_link")  # a link merged into wrist_3_link by a fixed joint, and a body
PAYLOAD = ("wrist_3_link", 2.0, [0.0, 0.01, 0.05], [0.002, 0.0, 0.0, 0.002, 0.0, 0.001])


class Ur10:
    def __init__(self, peer, node, path):
        self.peer, self.node, self.path = peer, node, path
        self.model = load_urdf(path)
        self.joints = list(self.model.joint_names)
        self.rng = np.random.default_rng(48)

    def state(self):
        n = len(self.joints)
        return self.rng.uniform(-3.0, 3.0, n), self.rng.uniform(-2.0, 2.0, n)


@pytest.fixture(scope="module")
def ur10(tmp_path_factory):
    harness.isolate_ros_environment()
    path = robots.example_robot_urdf("ur10_robot")
    peer = harness.Peer()
    node = None
    try:
        node = harness.NodeProcess("-p", f"urdf_file:={path}", "-p", f"frames:=[{', '.join(FRAMES)}]",
                                   log_path=tmp_path_factory.mktemp("node") / "node.log")
        peer.wait_for_model("ur10", harness.STARTUP_TIMEOUT, node)
        yield Ur10(peer, node, path)
    finally:
        if node is not None:
            node.stop()
        peer.close()


def check_frames(ur10, state):
    """The frame fields of one DynamicsState against the library at its own q and v."""
    q, v = np.array(state.position), np.array(state.velocity)
    nv = len(v)
    assert list(state.names) == ur10.joints and list(state.frame_names) == list(FRAMES)
    jacobians = np.array(state.frame_jacobians).reshape(len(FRAMES), 6, nv)
    bias = np.array(state.frame_jacobian_dot_v).reshape(len(FRAMES), 6)
    for k, frame in enumerate(FRAMES):
        X = frame_placement(ur10.model, q, frame)
        pose = state.frame_poses[k]
        np.testing.assert_allclose([pose.position.x, pose.position.y, pose.position.z], X[:3, 3], atol=1e-12)
        x, y, z, w = pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w
        rotation = np.array([  # the rotation of the unit quaternion (x, y, z, w)
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
        np.testing.assert_allclose(rotation, X[:3, :3], atol=1e-12)
        np.testing.assert_allclose(jacobians[k], frame_jacobian(ur10.model, q, frame), atol=1e-12)
        np.testing.assert_allclose(bias[k], frame_jacobian_dot_v(ur10.model, q, v, frame), atol=1e-12)


def test_each_state_carries_its_frames(ur10):
    for _ in range(3):
        q, qd = ur10.state()
        out = ur10.peer.compute(ur10.joints, q, qd)
        np.testing.assert_array_equal(out["position"], q)
        check_frames(ur10, out["state"])
    model = ur10.peer.messages("model")[-1]
    assert list(model.frames) == list(FRAMES)


def test_frames_after_a_payload_swap(ur10):
    peer = ur10.peer
    before = peer.messages("model")[-1].revision
    assert all(r.successful for r in peer.set_parameters(payload_parameters(*PAYLOAD), atomically=True))
    peer.diagnostics(lambda v: v["update_pending"] == "no" and v["payloads"] == "wrist_3_link:2kg",
                     timeout=PAYLOAD_TIMEOUT)
    q, qd = ur10.state()
    state = ur10.peer.compute(ur10.joints, q, qd)["state"]
    assert state.model_revision > before
    check_frames(ur10, state)
    model = [m for m in peer.messages("model") if m.revision == state.model_revision][-1]
    assert list(model.frames) == list(FRAMES) and len(model.payloads) == 1

"""The node's start-up parameters, checked over DDS against Pinocchio.

One node process: solo12 (a fixed-base tree) from ``urdf_file``, outputs in a
``joints`` order that is not the model's, a non-default ``gravity`` and a
payload given at start, on top of config/robot_dynamics.yaml.
"""

import numpy as np
import pytest
from rclpy.parameter import Parameter
from std_msgs.msg import String

import robots
import ros_harness as harness

STARTUP_TIMEOUT = 180.0
GRAVITY = [0.4, -0.3, -9.5]
PAYLOAD = ("FL_LOWER_LEG", 0.2, [0.0, 0.01, -0.08], [1e-4, 0.0, 0.0, 1e-4, 0.0, 5e-5])


class Solo:
    def __init__(self, peer, node, path, joints):
        self.peer = peer
        self.node = node
        self.path = path
        self.joints = joints
        link, mass, com, six = PAYLOAD
        ixx, ixy, ixz, iyy, iyz, izz = six
        inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
        pin_model = robots.load_pinocchio(path)
        pin_model.gravity.linear = np.array(GRAVITY)
        self.oracle = robots.PinocchioOracle(
            robots.add_payload_pinocchio(pin_model, link, mass, com, inertia), joints)
        self.rng = np.random.default_rng(11)

    def state(self):
        [q] = robots.random_configurations(self.oracle, self.rng, 1, self.path)
        return q, self.rng.uniform(-3.0, 3.0, len(q))


@pytest.fixture(scope="module")
def solo(tmp_path_factory):
    harness.isolate_ros_environment()
    path = robots.example_robot_urdf("solo12")
    model_order = robots.pinocchio_joint_names(robots.load_pinocchio(path))
    joints = model_order[::-1]  # hind legs first: not the model's order
    peer = harness.Peer()
    node = None
    try:
        # With urdf_file set, the topic must be ignored: offer another robot on it.
        peer.description_pub.publish(String(data=robots.urdf_text(robots.example_robot_urdf("panda"))))
        link, mass, com, inertia = PAYLOAD
        node = harness.NodeProcess(
            "-p", f"urdf_file:={path}",
            "-p", f"joints:=[{','.join(joints)}]",
            "-p", f"gravity:=[{','.join(map(str, GRAVITY))}]",
            "-p", f"payload.link:={link}", "-p", f"payload.mass:={mass}",
            "-p", f"payload.com:=[{','.join(map(str, com))}]",
            "-p", f"payload.inertia:=[{','.join(map(str, inertia))}]",
            log_path=tmp_path_factory.mktemp("node") / "node.log")
        peer.wait_for_model("solo", STARTUP_TIMEOUT, node)
        yield Solo(peer, node, path, joints)
    finally:
        if node is not None:
            node.stop()
        peer.close()


def test_urdf_file_takes_precedence_over_the_topic(solo):
    values = solo.peer.diagnostics(timeout=5.0)
    assert values["model"] == "solo" and values["dof"] == "12"
    assert values["joints"].split(",") == solo.joints
    assert values["payloads"] == "FL_LOWER_LEG:0.2kg"


def test_outputs_in_joints_order_with_gravity_and_initial_payload(solo):
    worst = {}
    for _ in range(3):
        q, qd = solo.state()
        # Sent in the model's order: the node must reorder to the joints parameter.
        out = solo.peer.compute(solo.joints[::-1], q[::-1], qd[::-1])
        for key, err in harness.check_outputs(out, solo.oracle, q, qd).items():
            worst[key] = max(worst.get(key, 0.0), err)
    print(f"solo12 in reversed joint order, gravity {GRAVITY}, payload: worst error {worst}")


def test_christoffel_symbols_only_when_asked(solo):
    peer = solo.peer
    q, qd = solo.state()
    before = peer.count("christoffel_symbols")
    peer.compute(solo.joints, q, qd)
    assert peer.count("christoffel_symbols") == before, "published although publish_christoffel is false"
    [result] = peer.set_parameters([Parameter("publish_christoffel", value=True)])
    assert result.successful, result.reason
    out = peer.compute(solo.joints, q, qd, christoffel=True)
    harness.check_outputs(out, solo.oracle, q, qd)


@pytest.mark.parametrize("name, value", [
    ("urdf_file", "/tmp/other.urdf"), ("robot_description", "<robot name='x'/>"),
    ("joints", ["a"]), ("gravity", [0.0, 0.0, 0.0]), ("mimic", "reduce")])
def test_model_parameters_are_read_only(solo, name, value):
    [result] = solo.peer.set_parameters([Parameter(name, value=value)])
    assert not result.successful and result.reason
    assert solo.peer.diagnostics(timeout=5.0)["model"] == "solo"

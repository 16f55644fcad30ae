"""A panda node process over DDS and the peer that talks to it, for the
node's tests: the node serves panda from a transient-local
robot_description published before it starts; its outputs are checked
against Pinocchio's oracle of the same URDF (with the payloads it serves)."""

import numpy as np
from geometry_msgs.msg import InertiaStamped
from rclpy.parameter import Parameter
from std_msgs.msg import String

import robots
import ros_harness as harness

STARTUP_TIMEOUT = 180.0  # first run on a machine compiles the numba kernels
PAYLOAD_TIMEOUT = 60.0  # generous: a loaded CI machine builds models slowly
HAND = "panda_hand"
HAND_PAYLOAD = (HAND, 1.5, [0.01, -0.02, 0.05], [0.004, 0.0002, 0.0, 0.005, -0.0001, 0.003])


class Panda:
    def __init__(self, peer, node, path):
        self.peer = peer
        self.node = node
        self.path = path
        self.pin_model = robots.load_pinocchio(path)
        self.joints = robots.pinocchio_joint_names(self.pin_model)
        self.oracle = robots.PinocchioOracle(self.pin_model, self.joints)
        self.rng = np.random.default_rng(2024)

    def oracle_with(self, *payloads):
        model = self.pin_model
        for link, mass, com, inertia in payloads:
            model = robots.add_payload_pinocchio(model, link, mass, com, robots.inertia3(inertia))
        return robots.PinocchioOracle(model, self.oracle.joint_names)

    def state(self):
        ranges = robots.joint_ranges(self.oracle, self.path)
        q = ranges[:, 0] + (ranges[:, 1] - ranges[:, 0]) * self.rng.random(len(ranges))
        return q, self.rng.uniform(-2.0, 2.0, len(ranges))

    def compute(self, q, qd, **kwargs):
        return self.peer.compute(self.oracle.joint_names, q, qd, **kwargs)


def payload_parameters(link, mass, com, inertia):
    return [Parameter("payload.link", value=link), Parameter("payload.mass", value=float(mass)),
            Parameter("payload.com", value=[float(x) for x in com]),
            Parameter("payload.inertia", value=[float(x) for x in inertia])]


def inertia_msg(link, mass, com, inertia):
    msg = InertiaStamped()
    msg.header.frame_id = link
    msg.inertia.m = float(mass)
    msg.inertia.com.x, msg.inertia.com.y, msg.inertia.com.z = map(float, com)
    (msg.inertia.ixx, msg.inertia.ixy, msg.inertia.ixz,
     msg.inertia.iyy, msg.inertia.iyz, msg.inertia.izz) = map(float, inertia)
    return msg


def panda_node(tmp_path_factory, *node_args):
    """A panda node process over DDS with ``node_args``, its description
    published before it starts; a generator for module fixtures."""
    harness.isolate_ros_environment()
    path = robots.example_robot_urdf("panda")
    peer = harness.Peer()
    node = None
    try:
        # Published before the node exists: only transient-local durability delivers it.
        peer.description_pub.publish(String(data=robots.urdf_text(path)))
        node = harness.NodeProcess(*node_args, log_path=tmp_path_factory.mktemp("node") / "node.log")
        peer.wait_for_model("panda", STARTUP_TIMEOUT, node)
        yield Panda(peer, node, path)
    finally:
        if node is not None:
            node.stop()
        peer.close()

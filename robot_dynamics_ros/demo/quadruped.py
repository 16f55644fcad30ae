"""The floating-base demo robot: solo12 trotting in place while its trunk sways.

solo12 (a 12-joint quadruped) comes from the PyPI package example-robot-data,
which the demo needs at run time for this robot only: ``solo12_urdf`` says so
when it is missing. Its URDF is published with a ``floating`` joint from a
``world`` link to its root link ``base_link``, so the node (``base`` auto)
serves it as a floating base: 6 base coordinates, then the 12 joints.

The motion is kinematic, in closed form with its exact derivatives: each leg
swings about a standing pose, diagonal pairs in phase (a trot), while the
trunk rolls and bobs. The stream sends, per sample, the odometry of
``base_link`` (pose in ``odom``, twist in ``base_link``) and the joint
states, with one stamp.
"""

import importlib.metadata
import math
from typing import Tuple

import numpy as np

SOLO12_FILE = "solo_description/robots/solo12.urdf"
ROOT_LINK = "base_link"
# Hz, of the trot and of the sway; not a whole number, or the monitor, which
# prints once a second, would show the same phase every time.
FREQUENCY = 0.7
# Standing pose (example-robot-data's "straight_standing"): front knees back, hind knees forward.
STANDING = {"HAA": (0.0, 0.0), "HFE": (0.8, -0.8), "KFE": (-1.6, 1.6)}  # (front, hind)
SWING = {"HAA": 0.1, "HFE": 0.3, "KFE": 0.4}  # rad
HEIGHT, BOB, SWAY, ROLL = 0.25, 0.02, 0.03, 0.1  # m, m, m, rad


class ExampleRobotDataMissing(RuntimeError):
    """The demo's floating-base robot needs example-robot-data."""


def solo12_urdf() -> str:
    """solo12's URDF with a floating joint declared at its root; raises
    ExampleRobotDataMissing, saying what to install, when it is absent."""
    try:
        files = importlib.metadata.distribution("example-robot-data").files or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    paths = [f for f in files if str(f).endswith(SOLO12_FILE)]
    if not paths:
        raise ExampleRobotDataMissing(
            "--robot solo12 needs the solo12 URDF of the example-robot-data package, which is "
            "not installed: pip install example-robot-data (without it, the demo runs the PUMA)")
    text = paths[0].read_text()
    floating = (f'<link name="world"/><joint name="root_joint" type="floating">'
                f'<parent link="world"/><child link="{ROOT_LINK}"/></joint>')
    start = text.index("<robot")
    start = text.index(">", start) + 1
    return text[:start] + floating + text[start:]


class SwayingQuadruped:
    """q, qd of the 12 joints and the base's pose and twist at time t."""

    def __init__(self, joint_names):
        self.joint_names = tuple(joint_names)
        n = len(self.joint_names)
        self._centre, self._amplitude, self._phase = np.zeros(n), np.zeros(n), np.zeros(n)
        for i, name in enumerate(self.joint_names):
            leg, kind = name.split("_")  # FL_HFE: front left, hip flexion
            front = leg[0] == "F"
            self._centre[i] = STANDING[kind][0 if front else 1]
            self._amplitude[i] = SWING[kind]
            # Diagonal pairs (FL + HR, FR + HL) half a period apart.
            self._phase[i] = 0.0 if leg in ("FL", "HR") else math.pi
        self._omega = 2 * math.pi * FREQUENCY

    def joints(self, t: float) -> Tuple[np.ndarray, np.ndarray]:
        angle = self._omega * t + self._phase
        return (self._centre + self._amplitude * np.sin(angle),
                self._amplitude * self._omega * np.cos(angle))

    def base(self, t: float) -> Tuple[np.ndarray, np.ndarray]:
        """Pose [x, y, z, qx, qy, qz, qw] of the root link in the world and its twist
        [v, w] in its own frame: a roll about x and a sway along y, a bob twice as fast."""
        w = self._omega
        roll, roll_rate = ROLL * math.sin(w * t), ROLL * w * math.cos(w * t)
        position = np.array([0.0, SWAY * math.sin(w * t), HEIGHT + BOB * math.sin(2 * w * t)])
        velocity = np.array([0.0, SWAY * w * math.cos(w * t), 2 * BOB * w * math.cos(2 * w * t)])
        c, s = math.cos(roll), math.sin(roll)
        # A rotation about x: the body's angular velocity is [roll rate, 0, 0] in
        # either frame, and the world velocity turns into the body frame by R^T.
        body_velocity = np.array([velocity[0], c * velocity[1] + s * velocity[2],
                                  -s * velocity[1] + c * velocity[2]])
        pose = np.concatenate([position, [math.sin(roll / 2), 0.0, 0.0, math.cos(roll / 2)]])
        return pose, np.concatenate([body_velocity, [roll_rate, 0.0, 0.0]])

"""The base state of a floating-base robot: odometry checked, then paired with joint states.

A floating-base model needs, with each joint state, the pose and twist of its
root link: q = [position (3) in the world, quaternion (x, y, z, w), joints],
v = [linear, angular velocity in the root link's frame, joints] (Pinocchio's
free-flyer conventions). They come from nav_msgs/Odometry, whose pose is that
of ``child_frame_id`` in ``header.frame_id`` (taken as the world: gravity is
given in it) and whose twist is in ``child_frame_id``: exactly v's base part
when the child frame is the root link.

Odometry of a link fixed rigidly to the root link (an IMU frame, a
``base_footprint`` below ``base_link``) is transformed to the root link
exactly: the offset between the two is constant. Odometry of any other link,
or with an empty child frame, is refused rather than guessed at: the offset
to a link beyond a moving joint changes with the joints, and a wrong guess
would give wrong numbers with nothing to show for it.

No ROS import here: the node (one message at a time, read from its bytes by
``cdr_inputs``) and the offline replay (messages read from a bag) share this
module, so they pair alike. Both hand it an ``OdometryReading``;
``odometry_reading`` makes one from a message (rclpy's or rosbags').
"""

import bisect
import math
from collections import Counter
from typing import Mapping, NamedTuple, Optional, Tuple

import numpy as np

from robot_dynamics_ros.dynamics.algorithms.frames import pose_vector
# An odometry quaternion is refused by the same rule as the dynamics refuse
# q's (within it they normalize it): checked here, it is counted as bad
# odometry, not as a failed joint state.
from robot_dynamics_ros.dynamics.model.model import QUATERNION_TOLERANCE

# Odometry kept for pairing: enough for 1 kHz odometry over a few timeouts; it
# bounds the memory and the cost of an insertion whatever the stamps are.
BUFFER_DEPTH = 512


class BaseStateRejected(ValueError):
    """Odometry that cannot be used, or a joint state without a base state;
    ``kind`` is a short key for counting."""

    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind = kind


class OdometryReading(NamedTuple):
    """The fields of a nav_msgs/Odometry that make a base state."""

    stamp_ns: int  # header.stamp
    frame_id: str  # header.frame_id
    child_frame_id: str
    position: np.ndarray  # (7,): pose.pose.position, pose.pose.orientation (x, y, z, w)
    velocity: np.ndarray  # (6,): twist.twist.linear, twist.twist.angular


def odometry_reading(msg) -> OdometryReading:
    """The OdometryReading of a nav_msgs/Odometry message object."""
    pose, twist = msg.pose.pose, msg.twist.twist
    p, o, v, w = pose.position, pose.orientation, twist.linear, twist.angular
    return OdometryReading(stamp_ns(msg.header.stamp), msg.header.frame_id, msg.child_frame_id,
                           np.array([p.x, p.y, p.z, o.x, o.y, o.z, o.w]),
                           np.array([v.x, v.y, v.z, w.x, w.y, w.z]))


class BaseState(NamedTuple):
    """The root link's state at ``stamp_ns`` (header stamp of its odometry)."""

    stamp_ns: int
    position: np.ndarray  # (7,): position in the world, quaternion (x, y, z, w)
    velocity: np.ndarray  # (6,): linear, angular velocity in the root link's frame
    frame_id: str = ""  # the world frame: the odometry's header.frame_id


def stamp_ns(stamp) -> int:
    """Nanoseconds of a builtin_interfaces/Time."""
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def _seconds(ns: int) -> str:
    return f"{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}"


def quaternion_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The Hamilton product a b of quaternions (x, y, z, w): the rotation b, then a."""
    (ax, ay, az, aw), (bx, by, bz, bw) = a, b
    return np.array([aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz])


def quaternion_matrix(q: np.ndarray) -> np.ndarray:
    """The rotation matrix of a unit quaternion (x, y, z, w)."""
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def matrix_quaternion(rotation: np.ndarray) -> np.ndarray:
    """The unit quaternion (x, y, z, w) of a rotation matrix (Shepperd's
    method, ``frames.pose_vector``: its Python function, for a rotation
    taken once, which need not wait for a compile)."""
    pose, vector = np.eye(4), np.empty(7)
    pose[:3, :3] = rotation
    pose_vector.py_func(pose, vector)
    return vector[3:]


class RigidFrame(NamedTuple):
    """A constant pose: rotation R and origin p, and the quaternion of R^T, taken once."""

    rotation: np.ndarray  # (3, 3)
    origin: np.ndarray  # (3,)
    inverse_quaternion: np.ndarray  # (4,) x, y, z, w

    @classmethod
    def of(cls, pose: np.ndarray) -> "RigidFrame":
        """From a 4x4 homogeneous pose."""
        return cls(pose[:3, :3].copy(), pose[:3, 3].copy(), matrix_quaternion(pose[:3, :3].T))


class BaseFrames(NamedTuple):
    """What odometry is read against: the root link, the frames fixed to it
    (name -> RigidFrame, their poses in the root link's frame), and the
    placement P of the free-flyer in the world (a URDF floating joint's
    origin; None when it is the identity): q's base pose is P^-1 times the
    root link's pose in the world, as Pinocchio builds it."""

    root_link: str
    rigid: Mapping[str, RigidFrame]
    placement: Optional[RigidFrame]


def base_frames(root_link: str, poses: Mapping[str, np.ndarray], placement: np.ndarray) -> BaseFrames:
    """BaseFrames from the 4x4 poses, in the root link's frame, of the links
    fixed to it (the root link's own among them or not) and the 4x4 placement."""
    return BaseFrames(
        root_link, {name: RigidFrame.of(pose) for name, pose in poses.items() if name != root_link},
        None if np.array_equal(placement, np.eye(4)) else RigidFrame.of(placement))


def _to_root_link(frame: RigidFrame, position: np.ndarray, velocity: np.ndarray):
    """Pose and twist of the root link r from those of a frame c fixed to it
    (R, p: pose of c in r). R_wr = R_wc R^T, p_wr = p_wc - R_wr p; in r's
    axes w_r = R w_c and, the two origins being one rigid body,
    v_r = R v_c + p x w_r (velocity of r's origin, p from r to c)."""
    quaternion = position[3:] / np.linalg.norm(position[3:])
    root_quaternion = quaternion_multiply(quaternion, frame.inverse_quaternion)
    root_position = position[:3] - quaternion_matrix(root_quaternion) @ frame.origin
    angular = frame.rotation @ velocity[3:]
    linear = frame.rotation @ velocity[:3] + np.cross(frame.origin, angular)
    return np.concatenate([root_position, root_quaternion]), np.concatenate([linear, angular])


def _from_placement(placement: RigidFrame, position: np.ndarray) -> np.ndarray:
    """q's base pose P^-1 T from the root link's pose T in the world: rotation
    R_P^T R, origin R_P^T (p - p_P). (A body twist does not change when the
    frame it moves in is placed differently.)"""
    quaternion = position[3:] / np.linalg.norm(position[3:])
    return np.concatenate([placement.rotation.T @ (position[:3] - placement.origin),
                           quaternion_multiply(placement.inverse_quaternion, quaternion)])


def base_state_from_odometry(odometry: OdometryReading, frames: BaseFrames) -> BaseState:
    """The base state an odometry reading gives; raises BaseStateRejected
    ("child_frame", "non_finite", "quaternion") saying what is wrong.

    Odometry of a link in ``frames.rigid`` is transformed to the root link.
    """
    root_link = frames.root_link
    child = odometry.child_frame_id
    frame = None
    if child != root_link:
        frame = frames.rigid.get(child)
        if frame is None:
            why = "is empty" if not child else f"is {child!r}"
            raise BaseStateRejected(
                "child_frame", f"odometry child_frame_id {why}: it must name the root link "
                f"{root_link!r}, whose pose and twist (in its own frame) are the base state, "
                "or a link fixed to it")
    position, velocity = odometry.position, odometry.velocity
    for values, names in ((position, ("position.x", "position.y", "position.z", "orientation.x",
                                      "orientation.y", "orientation.z", "orientation.w")),
                          (velocity, ("linear.x", "linear.y", "linear.z",
                                      "angular.x", "angular.y", "angular.z"))):
        bad = [name for name, x in zip(names, values.tolist()) if not math.isfinite(x)]
        if bad:
            raise BaseStateRejected("non_finite", f"odometry has non-finite {', '.join(bad)}")
    norm = float(np.linalg.norm(position[3:]))
    if abs(norm - 1.0) > QUATERNION_TOLERANCE:
        raise BaseStateRejected(
            "quaternion", f"odometry orientation has norm {norm:.6g}, not a unit quaternion "
            f"(tolerance {QUATERNION_TOLERANCE:g})")
    if frame is not None:
        position, velocity = _to_root_link(frame, position, velocity)
    if frames.placement is not None:
        position = _from_placement(frames.placement, position)
    return BaseState(odometry.stamp_ns, position, velocity, odometry.frame_id)


class BaseStatePairing:
    """Odometry received so far, and the base state of each joint state.

    The rule (docs/design.md, ``base_state_timeout``): a joint state stamped t gets
    the newest odometry (by header stamp) received before it whose stamp lies
    in [t - timeout, t + timeout]. Without one it is dropped: "no_base_state"
    when no usable odometry was received yet, "stale_base_state" when all of
    it is older than t - timeout, "future_base_state" when none is that old
    but all is newer than t + timeout (two clocks that disagree). Odometry
    from the future is tolerated within the timeout, since publishers stamp
    with their own clocks.

    Counts every odometry message (``received``) and the refused ones by
    reason (``refused``). Odometry is checked against ``root_link``; a new
    root link (a new robot description) forgets the odometry of the old one.
    Not thread-safe: one thread adds and pairs.
    """

    def __init__(self, timeout: float):
        if not (math.isfinite(timeout) and timeout >= 0.0):
            raise ValueError(f"base_state_timeout must be a finite number of seconds >= 0, "
                             f"got {timeout!r}")
        self.timeout_ns = round(timeout * 1e9)
        self.received = 0
        self.refused = Counter()
        self._root_link = None
        self._stamps = []  # sorted header stamps of _states
        self._states = []

    def _for(self, root_link: str):
        if root_link != self._root_link:
            self._root_link = root_link
            self._stamps, self._states = [], []

    def add(self, odometry: OdometryReading, frames: BaseFrames) -> BaseState:
        """Check and keep an odometry reading; raises BaseStateRejected (counted)."""
        self.received += 1
        self._for(frames.root_link)
        try:
            state = base_state_from_odometry(odometry, frames)
        except BaseStateRejected as error:
            self.refused[error.kind] += 1
            raise
        i = bisect.bisect_right(self._stamps, state.stamp_ns)
        self._stamps.insert(i, state.stamp_ns)
        self._states.insert(i, state)
        if len(self._stamps) > BUFFER_DEPTH:
            del self._stamps[0], self._states[0]
        return state

    def refuse(self, kind: str):
        """Count an odometry message refused before it could be read (``kind``)."""
        self.received += 1
        self.refused[kind] += 1

    def pair(self, t: int, root_link: str) -> BaseState:
        """The base state of a joint state stamped ``t`` (ns); raises
        BaseStateRejected ("no_base_state", "stale_base_state", "future_base_state")."""
        self._for(root_link)
        stamps = self._stamps
        if not stamps:
            raise BaseStateRejected("no_base_state", "no usable odometry received yet")
        i = bisect.bisect_right(stamps, t + self.timeout_ns) - 1
        timeout = f"base_state_timeout {self.timeout_ns / 1e9:g} s"
        if i < 0:
            raise BaseStateRejected(
                "future_base_state", f"the oldest odometry kept, stamped {_seconds(stamps[0])}, "
                f"is more than {timeout} after the joint state stamped {_seconds(t)} (do the two "
                "publishers stamp with the same clock?)")
        if stamps[i] < t - self.timeout_ns:
            raise BaseStateRejected(
                "stale_base_state", f"no odometry within {timeout} of the joint state stamped "
                f"{_seconds(t)}: the newest not after it is stamped {_seconds(stamps[i])}")
        return self._states[i]

    def counts(self) -> dict:
        """Diagnostics values: odometry received and refused, in total and by reason."""
        return {"odometry_received": str(self.received),
                "odometry_refused": str(sum(self.refused.values())),
                **{f"odometry_refused.{kind}": str(n) for kind, n in sorted(self.refused.items())}}


def full_state(position, velocity, q, qd) -> Tuple[np.ndarray, np.ndarray]:
    """q and v of a floating-base model from the base's ``position`` (7) and
    ``velocity`` (6) and the joints' ``q``, ``qd``: one sample or a batch (N, ...)."""
    return np.concatenate((position, q), axis=-1), np.concatenate((velocity, qd), axis=-1)


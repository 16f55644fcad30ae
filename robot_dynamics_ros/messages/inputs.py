"""The node's inputs as arrays, shared by the node and offline tools.

JointState inputs are matched to the model's joints by name; a message that
cannot be used raises JointStateRejected with a short ``kind`` (for counting)
and a reason a person can act on. InertiaStamped payload requests become a
``Payload``. (The outputs are ``outputs``.)
"""

import array
import reprlib
from typing import Optional, Sequence, Tuple

import numpy as np

from robot_dynamics_ros.served.model import Payload


def payload_from_inertia(msg) -> Payload:
    """The payload a geometry_msgs/InertiaStamped asks for; its frame_id is the link."""
    m = msg.inertia
    return Payload.create(
        link=msg.header.frame_id,
        mass=m.m,
        com=(m.com.x, m.com.y, m.com.z),
        inertia=(m.ixx, m.ixy, m.ixz, m.iyy, m.iyz, m.izz),
    )


class JointStateRejected(ValueError):
    """A JointState that cannot be used; ``kind`` is a short key for counting."""

    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind = kind


class JointStateMatcher:
    """Extracts q and qd, in ``joint_names`` order, from JointState-like messages.

    Any object with ``name``, ``position``, ``velocity`` and ``effort``
    sequences works (rclpy messages, rosbags messages). The name-to-index map
    is cached for the last name list seen, since publishers repeat it.
    """

    def __init__(self, joint_names: Sequence[str]):
        self.joint_names = tuple(joint_names)
        self._cached_names: Optional[list] = None
        self._cached_take: Optional[np.ndarray] = None

    def match(self, msg, check_finite: bool = True) -> Tuple[np.ndarray, np.ndarray]:
        """(q, qd) in ``joint_names`` order; raises JointStateRejected.

        ``check_finite=False`` leaves NaN and inf to the caller: the node's
        dynamics kernels find them anyway (a ``StateError`` naming the
        joint), and a check here would be a second pass over the same values
        on every joint state.
        q and qd are new arrays, C-contiguous float64: the dynamics' hot path.
        """
        names = msg.name
        if type(names) is not list:  # rclpy gives a list: no call on the hot path
            names = _name_list(names)
        count = len(names)
        # each field read once: a message's field access is a Python property
        position, velocity = msg.position, msg.velocity
        for field, size in (("position", len(position)), ("velocity", len(velocity)),
                            ("effort", len(msg.effort))):
            if size != count and (field == "position" or size != 0):
                expected = f"{count}" if field == "position" else f"0 or {count}"
                raise JointStateRejected(
                    "length_mismatch",
                    f"{field} has {size} values for {count} names (expected {expected})",
                )
        take = self.indices(names)
        q = _floats(position, "position")[take]
        qd = _floats(velocity, "velocity")[take] if len(velocity) else np.zeros(take.size)
        if check_finite:
            for values, field in ((q, "position"), (qd, "velocity")):
                bad = ~np.isfinite(values)
                if bad.any():
                    joints = [self.joint_names[i] for i in np.flatnonzero(bad)]
                    raise JointStateRejected(
                        "non_finite", f"non-finite {field} for {', '.join(joints)}"
                    )
        return q, qd

    def efforts(self, msg) -> np.ndarray:
        """The efforts of the message ``match`` just accepted, in
        ``joint_names`` order (it checked their count: call only when the
        message has efforts). NaN and inf stay: the payload identification
        leaves such joint states out, as the replay does."""
        return _floats(msg.effort, "effort")[self._cached_take]

    def indices(self, names: Sequence[str]) -> np.ndarray:
        """Index of each of ``joint_names`` in ``names`` (cached for the last list seen).

        Raises JointStateRejected for repeated names or a missing joint. Lets a
        caller holding many messages with one name list as arrays (the offline
        replay) pick the columns after ``match`` accepted one of them.
        """
        if type(names) is not list:
            names = _name_list(names)
        try:
            changed = names != self._cached_names
        except ValueError:  # an element compared as an array: no name, _indices says so
            changed = True
        if changed:
            self._cached_take = self._indices(names)
            self._cached_names = names.copy()
        return self._cached_take

    def _indices(self, names: list) -> np.ndarray:
        for i, name in enumerate(names):
            if not isinstance(name, str):
                raise JointStateRejected(
                    "bad_name", f"joint name {i} is not a string: {reprlib.repr(name)}")
        where = {}
        repeated = []
        for i, name in enumerate(names):
            if name in where:
                repeated.append(name)
            where[name] = i
        if repeated:
            raise JointStateRejected(
                "duplicate_name", f"joint names repeated: {', '.join(sorted(set(repeated)))}"
            )
        missing = [j for j in self.joint_names if j not in where]
        if missing:
            raise JointStateRejected(
                "missing_joint",
                f"no value for {len(missing)} modelled joint(s): {', '.join(missing)}",
            )
        return np.array([where[j] for j in self.joint_names], dtype=np.intp)


def _name_list(names) -> list:
    """A name field that is not a list (a numpy array, a tuple) as a list, so
    that comparing it with the cached list is one list comparison, or
    JointStateRejected."""
    try:
        return list(names)
    except TypeError:
        raise JointStateRejected(
            "bad_name", f"name is a {type(names).__name__}, not a sequence of joint names") from None


def _floats(values, field: str) -> np.ndarray:
    """``values`` as float64: read in place from an array('d') (what rclpy
    gives), converted from anything else of real numbers, or
    JointStateRejected naming ``field``."""
    if type(values) is array.array and values.typecode == "d":
        return np.frombuffer(values, dtype=np.float64)
    raw = np.asarray(values)
    if raw.dtype.kind not in "biuf" or raw.ndim != 1:
        raise JointStateRejected(
            "not_numbers", f"{field} is not a sequence of real numbers ({raw.dtype}, shape {raw.shape})")
    return raw.astype(np.float64, copy=False)


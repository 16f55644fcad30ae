"""The replay's inputs: the model to serve, and the bag's joint states (and
odometry, for a floating base) turned into arrays by the node's own rules.

Model and payloads come from ``served.model`` and the matching from
``messages.inputs``, as in the node; ``bags`` reads the bag.
"""

from collections import Counter
from pathlib import Path

import numpy as np

from robot_dynamics_ros.replay import bags
from robot_dynamics_ros.served.base_state import BaseStatePairing, BaseStateRejected, full_state, odometry_reading
from robot_dynamics_ros.messages.inputs import JointStateMatcher, JointStateRejected
from robot_dynamics_ros.dynamics import PayloadError
from robot_dynamics_ros.served.model import (ServedModel, load_description, payload_from_arguments,
                                             read_description_file)
from robot_dynamics_ros.replay.staging import ReplayError

# Joint states per batch call: large enough that per-call overhead vanishes,
# small enough that a chunk's outputs (Christoffel: n^3 doubles each) stay a
# few tens of MB.
CHUNK = 2048


def payloads_from_args(values) -> list:
    try:
        return [payload_from_arguments(value) for value in values]
    except PayloadError as error:
        raise ReplayError(str(error)) from error


def load_model(reader, args, input_path: Path) -> ServedModel:
    """The model the node would serve: --urdf, else the bag's /robot_description."""
    if args.urdf is not None:
        origin = f"URDF file {str(args.urdf)!r}"
        try:
            text = read_description_file(args.urdf)
        except ValueError as error:
            raise ReplayError(str(error)) from error
    else:
        origin = "/robot_description in the bag"
        connections = bags.topic_connections(reader, "/robot_description", bags.STRING)
        msg = bags.read_first(reader, connections, input_path)
        if msg is None:
            raise ReplayError(f"no /robot_description message in {str(input_path)!r}; pass --urdf FILE")
        text = msg.data
    try:
        return load_description(text, base=args.base, payloads=payloads_from_args(args.payload),
                                frames=getattr(args, "frames", None))
    except ValueError as error:
        raise ReplayError(f"model from {origin}: {error}") from error


def match_chunk(matcher: JointStateMatcher, times, raws, dropped: Counter, reasons: dict, path: Path,
                efforts: bool = False):
    """(times, stamps (k, 2), q, qd) of the usable messages of a chunk, by the node's rules.

    Groups that ``bags`` read as arrays are checked by ``matcher.match`` on
    their first message (names and lengths are the same for the whole group)
    and take their columns with ``matcher.indices``. Every other message, and
    any with a non-finite value, goes through ``matcher.match`` alone, which
    drops it with the node's reason.

    With ``efforts``, also the efforts (k, n) in the same joint
    order, NaN in the rows of messages without a finite effort per joint
    (the node ignores efforts, so they decide nothing about a row's use).
    """
    count, n = len(raws), len(matcher.joint_names)
    q, qd = np.zeros((count, n)), np.zeros((count, n))
    stamps = np.zeros((count, 2), dtype=np.int64)
    usable = np.zeros(count, dtype=bool)
    effort = np.full((count, n), np.nan) if efforts else None
    groups, alone = bags.decode_joint_states(raws, path)
    for group in groups:
        try:
            matcher.match(group.template)
        except JointStateRejected:
            alone.extend(group.rows.tolist())
            continue
        take = matcher.indices(group.template.name)
        group_q = group.position[:, take]
        group_qd = group.velocity[:, take] if group.velocity.shape[1] else np.zeros_like(group_q)
        finite = np.isfinite(group_q).all(axis=1) & np.isfinite(group_qd).all(axis=1)
        rows = group.rows[finite]
        q[rows], qd[rows], stamps[rows], usable[rows] = group_q[finite], group_qd[finite], group.stamps[finite], True
        if efforts and group.effort.shape[1] == group.position.shape[1]:
            effort[rows] = group.effort[finite][:, take]
        alone.extend(group.rows[~finite].tolist())
    for i in alone:
        msg = bags.deserialize(raws[i], bags.JOINT_STATE, path)
        try:
            q[i], qd[i] = matcher.match(msg)
        except JointStateRejected as error:
            dropped[error.kind] += 1
            reasons.setdefault(error.kind, str(error))
            continue
        stamps[i] = msg.header.stamp.sec, msg.header.stamp.nanosec
        usable[i] = True
        if efforts and len(msg.effort) == len(msg.name):
            effort[i] = np.asarray(msg.effort)[matcher.indices(msg.name)]
    if efforts:
        return times[usable], stamps[usable], q[usable], qd[usable], effort[usable]
    return times[usable], stamps[usable], q[usable], qd[usable]


class BaseStates:
    """Floating base: the bag's odometry, fed in bag-time order to the node's
    pairing (``base_state``), so each joint state gets the base state the node
    would have given it: the newest odometry received before it (bag time)
    and stamped within the timeout of its stamp."""

    def __init__(self, reader, served: ServedModel, args):
        connections = bags.topic_connections(reader, args.odom_topic, bags.ODOMETRY)
        if not connections:
            topics = ", ".join(f"{c.topic} ({c.msgtype})" for c in reader.connections) or "none"
            raise ReplayError(
                f"the model {served.model.name!r} has a floating base, whose state comes from "
                f"nav_msgs/Odometry, and there is no {args.odom_topic} topic in "
                f"{str(args.input)!r} (name it with --odom-topic, or pass --base fixed); "
                f"topics: {topics}")
        try:
            self.pairing = BaseStatePairing(args.base_state_timeout)
        except ValueError as error:
            raise ReplayError(f"--base-state-timeout: {error}") from error
        self._root_link = served.root_link
        self._frames = served.base_frames
        self._path = args.input
        self._chunks = bags.read_chunks(reader, connections, CHUNK, args.input)
        self._times, self._raws, self._next = [], [], 0

    def _receive_until(self, bag_time: int, reasons: dict):
        """Hand the pairing every odometry message with a bag time up to ``bag_time``."""
        while True:
            if self._next == len(self._raws):
                chunk = next(self._chunks, None)
                if chunk is None:
                    return
                (times, self._raws), self._next = chunk, 0
                self._times = times.tolist()
            if self._times[self._next] > bag_time:
                return
            msg = bags.deserialize(self._raws[self._next], bags.ODOMETRY, self._path)
            self._next += 1
            try:
                self.pairing.add(odometry_reading(msg), self._frames)
            except BaseStateRejected as error:  # counted by the pairing
                reasons.setdefault(f"odometry_{error.kind}", str(error))

    def pair(self, times, stamps, q, qd, dropped: Counter, reasons: dict):
        """(times, stamps, odometry frames, q, v) of the joint states that have a
        base state, with it."""
        usable = np.zeros(len(times), dtype=bool)
        position, velocity = np.zeros((len(times), 7)), np.zeros((len(times), 6))
        frames = [""] * len(times)
        for i, (bag_time, (sec, nanosec)) in enumerate(zip(times.tolist(), stamps.tolist())):
            self._receive_until(bag_time, reasons)
            try:
                base = self.pairing.pair(sec * 1_000_000_000 + nanosec, self._root_link)
            except BaseStateRejected as error:
                dropped[error.kind] += 1
                reasons.setdefault(error.kind, str(error))
                continue
            position[i], velocity[i], usable[i] = base.position, base.velocity, True
            frames[i] = base.frame_id
        q, qd = full_state(position[usable], velocity[usable], q[usable], qd[usable])
        return times[usable], stamps[usable], [f for f, u in zip(frames, usable) if u], q, qd

    def refused(self) -> dict:
        """Odometry messages refused, by reason, as the summary counts them."""
        return {f"odometry_{kind}": n for kind, n in self.pairing.refused.items()}

"""The node's hot path without ROS: a joint state's bytes in, the bytes to publish out.

``Live`` is the snapshot of one served model that the hot path reads once
per joint state, so that everything published for it comes from one model
(``model_service`` swaps it in whole). ``JointStateHandler`` reads a joint
state from its serialized bytes (``messages.cdr_inputs``), matches it to the
model's joints, pairs a floating base with its odometry, computes every term
in one ``all_terms`` call and serializes the outputs from templates
(``messages.outputs``); a joint state it cannot answer is counted by reason
in ``NodeStatus``, with a throttled warning, and so are the joint states
lost before it (``lost_before_callback``: holes in each DDS writer's
sequence numbers, ``losses``; from the stamps, ``stamp_gaps``, only where
the transport gives no numbers). The node only subscribes and publishes
(``dynamics_node``).
"""

import time
from dataclasses import dataclass, field
from typing import Callable, Dict, Mapping, NamedTuple, Optional, Tuple

from robot_dynamics_ros.dynamics import StateError
from robot_dynamics_ros.messages.cdr import CdrTemplate
from robot_dynamics_ros.messages.cdr_inputs import JointStateReader, MalformedMessage, read_odometry
from robot_dynamics_ros.messages.inputs import JointStateMatcher, JointStateRejected
from robot_dynamics_ros.messages.outputs import (
    ARRAY_TOPICS, array_templates, compute_outputs, frames_in_place, state_frame, state_template, state_values)
from robot_dynamics_ros.node.effort_window import EffortWindow
from robot_dynamics_ros.node.losses import SequenceLosses
from robot_dynamics_ros.node.losses import key as writer_key
from robot_dynamics_ros.node.stamp_gaps import StampGaps
from robot_dynamics_ros.node.status import NodeStatus, Throttle
from robot_dynamics_ros.served.base_state import BaseStatePairing, BaseStateRejected, full_state, stamp_ns
from robot_dynamics_ros.served.model import ServedModel

WARNING_PERIOD = 5.0  # s: at most one warning per period for dropped joint states, and for odometry


@dataclass(frozen=True)
class Live:
    """What the hot path needs, swapped as one reference: everything it
    publishes for one joint state comes from this one snapshot."""

    served: ServedModel
    revision: int  # DynamicsModel.revision of ``served``
    certificate: str  # the K_c certificate file serving its interval, or ""
    matcher: JointStateMatcher
    templates: Dict[str, CdrTemplate]  # ~/gravity_torques and the array topics, by topic name
    # the joint states with efforts kept for ~/identify_payload (fixed base),
    # kept across payload swaps like the matcher; None: off or floating
    efforts: Optional[EffortWindow]
    # ~/state templates by (frame_id, publish_christoffel), made on first use,
    # each with the views its frames are computed into (``frames_in_place``)
    states: Dict[Tuple[str, bool], Tuple[CdrTemplate, Optional[tuple]]] = field(default_factory=dict)

    def state_template(self, frame_id: str, christoffel: bool) -> Tuple[CdrTemplate, Optional[tuple]]:
        found = self.states.get((frame_id, christoffel))
        if found is None:
            template = state_template(self.served, self.revision, frame_id, christoffel)
            found = self.states[frame_id, christoffel] = (template, frames_in_place(template, self.served))
        return found


def make_live(served: ServedModel, old: Optional[Live], revision: int, certificate: str,
              effort_window_size: int) -> Live:
    """The snapshot of ``served``; what depends only on the joint names (the
    matcher, the effort window) or on the output coordinates (the array
    templates) is taken over from ``old`` when those stay the same."""
    same_inputs = (old is not None and old.matcher.joint_names == served.model.joint_names
                   and old.served.base == served.base)
    same_outputs = old is not None and old.served.coordinates == served.coordinates
    efforts = None
    if same_inputs:
        efforts = old.efforts
    elif not served.base and effort_window_size:
        efforts = EffortWindow(served.model.nv, effort_window_size)
    return Live(
        served=served, revision=revision, certificate=certificate,
        matcher=old.matcher if same_inputs else JointStateMatcher(served.model.joint_names),
        templates=old.templates if same_outputs else array_templates(served.joints, served.base),
        efforts=efforts)


class Published(NamedTuple):
    """The serialized messages that answer one joint state."""

    state: bytes  # ~/state
    gravity: bytes  # ~/gravity_torques
    arrays: Tuple[Tuple[str, bytes], ...]  # (topic, message) with publish_arrays, else ()


class JointStateHandler:
    """Joint states (and a floating base's odometry) in, ``Published`` out.

    ``live()`` returns the served snapshot (a ``Live``) or None before the
    first model; ``christoffel()`` whether to fill the Christoffel symbols;
    ``warn(text)`` logs a warning. ``base_states`` pairs odometry with joint
    states, None when the base is fixed for sure. One thread (the node's
    executor) calls ``handle`` and ``add_odometry``.
    """

    def __init__(self, *, live: Callable[[], Optional[Live]], christoffel: Callable[[], bool],
                 status: NodeStatus, base_states: Optional[BaseStatePairing], publish_arrays: bool,
                 warn: Callable[[str], None]):
        self._live = live
        self._christoffel = christoffel
        self._status = status
        self.base_states = base_states
        self._publish_arrays = publish_arrays
        self._warn = warn
        self._reader = JointStateReader()
        self._sequences = SequenceLosses()
        self._stamp_gaps = StampGaps()  # only for a transport without sequence numbers
        self._drop_warnings, self._odometry_warnings = Throttle(WARNING_PERIOD), Throttle(WARNING_PERIOD)

    def handle(self, data: bytes, info: Optional[Mapping] = None) -> Optional[Published]:
        """The messages answering the serialized sensor_msgs/JointState
        ``data``, or None when it is dropped (counted by reason). ``info``:
        the message info of its take (rclpy's dict), whose
        ``publication_sequence_number`` counts the joint states lost before
        it; without one (None or 0: the transport gives none) they are
        guessed from the header stamps."""
        start = time.perf_counter_ns()
        sequence = info.get("publication_sequence_number") if info else None
        try:
            msg = self._reader.read(data)
        except MalformedMessage as error:
            if sequence:
                self._sequences.skip(sequence)  # dropped as malformed, not lost
            return self._drop("malformed", str(error))
        stamp = msg.stamp
        live = self._live()
        if sequence:
            # holes in each writer's numbers, its joint names a hint to which writer
            lost = self._sequences.lost(sequence, writer_key(msg.name))
            if lost:
                self._lost(live, f"{lost} joint states lost before the callback "
                           f"(before sequence number {sequence} of their publisher)", lost)
        else:
            lost = self._stamp_gaps.missing(stamp, msg.name)
            if lost:
                # counted on the stream's grid of stamps: a healthy stream counts none
                self._lost(live, f"{lost} joint states lost, found by stamp "
                           f"{stamp.sec}.{stamp.nanosec:09d} (no sequence numbers)", lost)
        if live is None:
            # the start-up: the node's waiting line says what it waits for
            self._status.drop("no_model", "no robot model loaded yet")
            return None
        try:
            q, qd = live.matcher.match(msg, check_finite=False)
            if live.efforts is not None and len(msg.effort):
                live.efforts.add(stamp_ns(stamp), q, qd, live.matcher.efforts(msg))
        except JointStateRejected as error:
            return self._drop(error.kind, str(error))
        served, frame = live.served, ""
        if served.base:
            try:
                base = self.base_states.pair(stamp_ns(stamp), served.root_link)
            except BaseStateRejected as error:
                return self._drop(error.kind, str(error))
            q, qd = full_state(base.position, base.velocity, q, qd)
            frame = base.frame_id
        christoffel = self._christoffel()
        template, frames_out = live.state_template(state_frame(served, frame), christoffel)
        try:
            outputs = compute_outputs(served.model, q, qd, christoffel, served.frames, frames_out)
        except StateError as error:  # NaN or inf in q or qd, named by the kernels
            return self._drop("non_finite", str(error))
        # a numerics bug on some input must not stop the node
        except (ValueError, ArithmeticError) as error:
            return self._drop("dynamics_error", f"{type(error).__name__}: {error}")
        published = self._encode(live, template, q, qd, outputs, christoffel, stamp)
        self._status.computed(time.perf_counter_ns() - start)
        return published

    def _encode(self, live: Live, template: CdrTemplate, q, qd, outputs, christoffel: bool,
                stamp) -> Published:
        """The outputs (``compute_outputs``') serialized from the snapshot's
        templates, ``template`` the state's."""
        served, templates, terms = live.served, live.templates, outputs[0]
        state = template.encode_one(state_values(served, q, qd, outputs, christoffel), stamp)
        gravity = templates["gravity_torques"].encode_one((served.reorder(terms.gravity_torques),), stamp)
        arrays = ()
        if self._publish_arrays:
            arrays = tuple((topic, templates[topic].encode_one((served.reorder(getattr(terms, topic)),)))
                           for topic in ARRAY_TOPICS if christoffel or topic != "christoffel_symbols")
        return Published(state, gravity, arrays)

    def add_odometry(self, data: bytes):
        """A serialized nav_msgs/Odometry for the floating base's pairing;
        ignored while no model, or a fixed base, is served."""
        live = self._live()
        if live is None or not live.served.base:
            return
        try:
            self.base_states.add(read_odometry(data), live.served.base_frames)
        except (MalformedMessage, BaseStateRejected) as error:
            if isinstance(error, MalformedMessage):
                self.base_states.refuse(error.kind)  # the pairing counts the others itself
            self._status.error(f"dropped odometry ({error.kind}): {error}")
            if self._odometry_warnings.due(time.monotonic()):
                self._warn(self._status.last_error)

    def _lost(self, live: Optional[Live], reason: str, count: int) -> None:
        """Joint states lost before the callback, always counted; warned of
        once a model is served. Before it (the start-up, while the node loads
        its model and the queue overflows) none could have been answered, and
        the waiting line says why, as for ``no_model``."""
        if live is None:
            self._status.drop("lost_before_callback", reason, count)
        else:
            self._drop("lost_before_callback", reason, count)

    def _drop(self, kind: str, reason: str, count: int = 1) -> None:
        text = self._status.drop(kind, reason, count)
        if self._drop_warnings.due(time.monotonic()):
            self._warn(text)

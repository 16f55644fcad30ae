"""The ROS 2 node ``robot_dynamics``: dynamics of the described robot at every joint state.

Thin by design: messages are converted in ``messages``, requests (new
descriptions, parameter sets, ``~/payload``) are validated and applied by
``model_service`` (which owns the builder thread and the atomic swap), numbers
come from ``dynamics``. The hot path (``joint_states``, executor thread) reads
one immutable ``_Live`` snapshot per message, so all outputs of one input
come from one model.
"""

import os

# The matrices are small (n <= a few dozen): BLAS threads only add wake-up
# latency and fight the executor for the cores. Must precede the numpy import.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import gc
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import InertiaStamped
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import (
    FloatingPointRange, IntegerRange, ParameterDescriptor, ParameterType, SetParametersResult)
from rclpy.exceptions import ParameterException
from rclpy.experimental import EventsExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.qos_overriding_options import QoSOverridingOptions
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

from robot_dynamics_ros.served.base_state import BaseStatePairing, BaseStateRejected, full_state, stamp_ns
from robot_dynamics_ros.messages.cdr_inputs import JointStateReader, MalformedMessage, read_odometry
from robot_dynamics_ros.messages.cdr import CdrTemplate
from robot_dynamics_ros.dynamics import StateError
from robot_dynamics_ros.dynamics.kc.certificate import CertificateError, serve_certificate
from robot_dynamics_ros.node.effort_window import EffortWindow
from robot_dynamics_ros.node.identify_service import IdentifyPayloadServer
from robot_dynamics_ros.node.kc_refinement import DEFAULT_TIME_BUDGET, KcRefiner
from robot_dynamics_ros.messages.inputs import (
    JointStateMatcher, JointStateRejected, payload_from_inertia)
from robot_dynamics_ros.node.model_service import RUNTIME_PARAMETERS, ModelService, RequestRefused
from robot_dynamics_ros.served.model import ServedModel, read_description_file
from robot_dynamics_ros.msg import DynamicsModel, DynamicsState
from robot_dynamics_ros.node.status import ERROR, OK, WARN, NodeStatus, Throttle, kc_source
from robot_dynamics_ros.messages.outputs import (
    ARRAY_TOPICS, array_templates, compute_outputs, model_message, state_frame, state_template,
    state_values)
from robot_dynamics_ros.node.spin import init_without_signal_handlers, spin_until_stopped
from robot_dynamics_ros.node.stamp_gaps import StampGaps

NODE_NAME = "robot_dynamics"
BUILDER_NICENESS = 10  # the model builder's nice value (the executor's is the process's)
WAITING_LOG_PERIOD = 5.0  # s between "waiting for a robot model" lines
COMPILING = " (a first run on a machine also compiles the numba kernels, ~30 s)"

# As robot_state_publisher publishes it: late joiners get the last description.
DESCRIPTION_QOS = QoSProfile(
    depth=1,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
    history=HistoryPolicy.KEEP_LAST,
)
# ~/model the same way: a controller that starts late gets the current model.
MODEL_QOS = DESCRIPTION_QOS
# Best effort matches both reliable and best-effort joint state publishers. A
# short queue keeps outputs fresh when the node falls behind: a deeper one
# loses as many joint states under overload, and adds its depth to the latency.
# Users who need every message (replaying a bag) set the standard read-only
# qos_overrides./joint_states.subscription.{reliability,depth,history} parameters.
JOINT_STATES_QOS = QoSProfile(
    depth=10, reliability=ReliabilityPolicy.BEST_EFFORT, history=HistoryPolicy.KEEP_LAST
)
# Reliable, keep last 10: both reliable and best-effort subscribers match.
OUTPUT_DEPTH = 10
LEVELS = {OK: DiagnosticStatus.OK, WARN: DiagnosticStatus.WARN, ERROR: DiagnosticStatus.ERROR}


@dataclass(frozen=True)
class _Live:
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
    # ~/state templates by (frame_id, publish_christoffel), made on first use
    states: Dict[Tuple[str, bool], CdrTemplate] = field(default_factory=dict)

    def state_template(self, frame_id: str, christoffel: bool) -> CdrTemplate:
        template = self.states.get((frame_id, christoffel))
        if template is None:
            template = self.states[frame_id, christoffel] = state_template(
                self.served, self.revision, frame_id, christoffel)
        return template


def _descriptor(description: str, type_: int, read_only: bool = False, **extra) -> ParameterDescriptor:
    return ParameterDescriptor(description=description, type=type_, read_only=read_only, **extra)


class DynamicsNode(Node):
    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, **kwargs)
        self._declare_parameters()
        self._status = NodeStatus()
        # at most one warning per 5 s for dropped joint states, and for odometry
        self._drop_warnings, self._odometry_warnings = Throttle(5.0), Throttle(5.0)
        self._stamp_gaps = StampGaps()
        self._revision = 0  # of the last model prepared (builder thread)
        self._model_published = None  # (revision, K_c interval, source) last sent on ~/model
        self._model_lock = threading.Lock()  # the builder and the executor both publish it
        self._gc_frozen = False
        self._effort_window_size = self.get_parameter("identify_payload.window_size").value

        self._pub_state = self.create_publisher(DynamicsState, "~/state", OUTPUT_DEPTH)
        self._pub_model = self.create_publisher(DynamicsModel, "~/model", MODEL_QOS)
        self._pub_gravity = self.create_publisher(JointState, "~/gravity_torques", OUTPUT_DEPTH)
        self._publish_arrays = self.get_parameter("publish_arrays").value
        self._pub_arrays = {
            topic: self.create_publisher(Float64MultiArray, f"~/{topic}", OUTPUT_DEPTH)
            for topic in ARRAY_TOPICS} if self._publish_arrays else {}
        self._pub_diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", 10)

        self._kc_certificate = self.get_parameter("kc_certificate").value
        self._refiner = KcRefiner(
            time_budget=self.get_parameter("kc_refinement.time_budget").value,
            memory_limit_mb=self.get_parameter("kc_refinement.memory_limit_mb").value,
            niceness=BUILDER_NICENESS)
        base = self.get_parameter("base").value
        joints = self.get_parameter("joints").value
        if joints == "":
            joints = None
        elif not (isinstance(joints, list) and all(isinstance(j, str) for j in joints)):
            raise ParameterException(f"joints must be a list of joint names (or \"\" for the model's "
                                     f"order), got {joints!r}", ["joints"])
        self._service = ModelService(
            parameters={name: self.get_parameter(name).value for name in RUNTIME_PARAMETERS},
            gravity=self.get_parameter("gravity").value, mimic=self.get_parameter("mimic").value,
            base=base, joints=joints, prepare=self._prepare,
            report=self._report_error, installed=self._install, niceness=BUILDER_NICENESS)
        text = self.get_parameter("robot_description").value
        path = self.get_parameter("urdf_file").value
        if text:
            self._service.request_description("parameter robot_description", lambda: text)
            self._waiting_for = f"building it from the robot_description parameter{COMPILING}"
        elif path:
            self._service.request_description(f"urdf_file {path}", lambda: read_description_file(path))
            self._waiting_for = f"building it from urdf_file {path}{COMPILING}"
        else:
            topic = self.create_subscription(
                String, "robot_description", self._on_description, DESCRIPTION_QOS).topic_name
            self._waiting_for = (f"listening on {topic} (std_msgs/String, transient local, as "
                                 "robot_state_publisher publishes it), or set the urdf_file parameter")
        self._service.start()
        self._identify = IdentifyPayloadServer(
            self, lambda: self._service.live, self._service.request_payload, BUILDER_NICENESS)

        self.add_on_set_parameters_callback(self._on_set_parameters)
        # No message_lost event handler: under real best-effort losses, taking
        # that event (executor thread) and Fast DDS delivering on_sample_lost
        # (its receive thread) lock the same two mutexes in opposite orders,
        # and the node hung for good in a soak (rmw_fastrtps PR #890, not in
        # the Jazzy wheels). Losses are counted from the stamps instead.
        # Both inputs as serialized bytes, read by cdr_inputs: rclpy's Python
        # messages cost the executor more than the reading.
        self._joint_state_reader = JointStateReader()
        self._joint_states_topic = self.create_subscription(
            JointState, "joint_states", self._on_joint_state, JOINT_STATES_QOS,
            qos_overriding_options=QoSOverridingOptions.with_default_policies(), raw=True).topic_name
        self.create_subscription(InertiaStamped, "~/payload", self._on_payload, 10)
        # base "auto" may serve a floating base (and a new description may
        # switch): subscribed unless the base is fixed for sure.
        self._base_states = None
        if base != "fixed":
            self._base_states = BaseStatePairing(self.get_parameter("base_state_timeout").value)
            self.create_subscription(Odometry, "odom", self._on_odometry, JOINT_STATES_QOS, raw=True)
        self.create_timer(1.0, self._publish_diagnostics)
        self._waiting_timer = self.create_timer(WAITING_LOG_PERIOD, self._log_waiting)
        self._log_waiting()

    def serves(self) -> bool:
        """Whether a model is served: joint states are answered from now on."""
        return self._service.live is not None

    def _log_waiting(self):
        """Until a model is served, say where the node looks for one: silence looks like a hang."""
        if self.serves():
            self._waiting_timer.cancel()
            return
        # after a refused description "building it" alone would mislead
        last_error = self._status.last_error
        last = f"; last error: {last_error}" if last_error and "no_model" not in last_error else ""
        self.get_logger().info(f"waiting for a robot model: {self._waiting_for}{last}; "
                               f"joint states on {self._joint_states_topic}")

    def _declare_parameters(self):
        string = ParameterType.PARAMETER_STRING
        double, doubles = ParameterType.PARAMETER_DOUBLE, ParameterType.PARAMETER_DOUBLE_ARRAY
        self.declare_parameter("robot_description", "", _descriptor(
            "URDF text; when set it takes precedence over urdf_file and the robot_description topic",
            string, read_only=True))
        self.declare_parameter("urdf_file", "", _descriptor(
            "Path of a URDF file; when set (and robot_description is not) the topic is not used",
            string, read_only=True))
        # Not declared by type alone: rclpy answers no GetParameters request
        # that names such a parameter (ros2 param dump came back empty). Not
        # an empty list: rclpy would type it a byte array, and a parameter
        # file cannot hold one (it reads [] as no value, and that value's
        # dump, null, as the string 'null'). "" round-trips through a dump.
        self.declare_parameter("joints", "", ParameterDescriptor(
            description="Output joint order, a permutation of the actuated joints (a list of "
            "strings); \"\" (the default): model order", read_only=True, dynamic_typing=True))
        self.declare_parameter("gravity", [0.0, 0.0, -9.81], _descriptor(
            "Gravity vector in the URDF root frame, m/s^2", doubles, read_only=True))
        self.declare_parameter("publish_christoffel", False, _descriptor(
            "Fill DynamicsState.christoffel_symbols on ~/state (nv^3 values per joint state)",
            ParameterType.PARAMETER_BOOL))
        self.declare_parameter("publish_arrays", False, _descriptor(
            "Also publish the std_msgs/Float64MultiArray topics ~/mass_matrix, "
            "~/coriolis_matrix, ~/coriolis_bounds (and ~/christoffel_symbols with "
            "publish_christoffel), for tools that plot arrays; ~/state has all of it, stamped",
            ParameterType.PARAMETER_BOOL, read_only=True))
        self.declare_parameter("mimic", "independent", _descriptor(
            "Mimic joints: independent (own coordinate) or reduce (follow their master)",
            string, read_only=True, additional_constraints="one of: independent, reduce"))
        self.declare_parameter("base", "auto", _descriptor(
            "Root of the model: fixed (bolted to the world), floating (a free-flyer joint to the "
            "world; base state from odom) or auto (floating when the URDF declares a floating "
            "root joint)", string, read_only=True,
            additional_constraints="one of: auto, fixed, floating"))
        self.declare_parameter("base_state_timeout", 0.1, _descriptor(
            "Floating base: a joint state is paired with the newest odometry stamped within this "
            "many seconds of it (before or after), else dropped", double, read_only=True,
            floating_point_range=[FloatingPointRange(from_value=0.0, to_value=3600.0)]))
        self.declare_parameter("payload.link", "", _descriptor(
            "Link that carries the parameter payload", string))
        self.declare_parameter("payload.mass", 0.0, _descriptor(
            "Payload mass in kg, 0 to 1e9; 0 removes the payload of payload.link", double))
        self.declare_parameter("payload.com", [0.0, 0.0, 0.0], _descriptor(
            "Payload centre of mass [x, y, z] in the link frame, m", doubles))
        self.declare_parameter("payload.inertia", [0.0] * 6, _descriptor(
            "Payload inertia [ixx, ixy, ixz, iyy, iyz, izz] about its CoM in link axes, kg m^2",
            doubles))
        self.declare_parameter("identify_payload.window_size", 60_000, _descriptor(
            "Joint states with efforts kept (the newest) for ~/identify_payload, fixed base only: "
            "60000 is a minute at 1 kHz, 8 (3 nv + 1) bytes each; 0: none kept, the service "
            "answers that it is off", ParameterType.PARAMETER_INTEGER, read_only=True,
            integer_range=[IntegerRange(from_value=0, to_value=10_000_000)]))
        self.declare_parameter("kc_certificate", "", _descriptor(
            "A K_c certificate file (robot_dynamics_certify), or a directory searched for the "
            "certificate of each served model by its hash; a match serves its interval from the "
            "first output", string, read_only=True))
        self.declare_parameter("kc_refinement.time_budget", DEFAULT_TIME_BUDGET, _descriptor(
            "Seconds spent tightening the K_c interval of each served model without a certificate "
            "in a background process, which takes a core from the control loop (0, the default: "
            "keep the first guaranteed bound)", double, read_only=True,
            floating_point_range=[FloatingPointRange(from_value=0.0, to_value=1e6)]))
        self.declare_parameter("kc_refinement.memory_limit_mb", 160.0, _descriptor(
            "Work memory of that refinement, MB", double, read_only=True,
            floating_point_range=[FloatingPointRange(from_value=1.0, to_value=1e5)]))

    def _on_description(self, msg: String):
        self._waiting_for = f"building it from the last message on robot_description{COMPILING}"
        self._service.request_description("topic robot_description", lambda: msg.data)

    def _prepare(self, served: ServedModel, old: Optional[_Live]) -> _Live:
        """The hot path's snapshot of ``served``, its outputs computed once
        (builder thread); its DynamicsModel is published before any
        DynamicsState of its revision can be."""
        # a certificate's K_c interval, or else the first bound, with the node's memory limit
        certificate = self._certificate(served.model)
        self._refiner.refinement(served.model)
        for christoffel in (False, True):  # publish_christoffel may change at run time
            compute_outputs(served.model, served.neutral_configuration(), np.ones(served.model.nv), christoffel)
        same_inputs = (old is not None and old.matcher.joint_names == served.model.joint_names
                       and old.served.base == served.base)
        same_outputs = old is not None and old.served.coordinates == served.coordinates
        efforts = None
        if same_inputs:
            efforts = old.efforts
        elif not served.base and self._effort_window_size:
            efforts = EffortWindow(served.model.nv, self._effort_window_size)
        self._revision += 1
        live = _Live(
            served=served, revision=self._revision, certificate=certificate,
            matcher=old.matcher if same_inputs else JointStateMatcher(served.model.joint_names),
            templates=old.templates if same_outputs else array_templates(served.joints, served.base),
            efforts=efforts,
        )
        self._publish_model(live)
        return live

    def _install(self, live: _Live):
        """After the service swapped ``live`` in (builder thread)."""
        if not self._gc_frozen:
            # A full collection walks every object the libraries made (20 ms
            # here), long enough for the joint_states queue to overflow: once
            # the first model is served, what exists lives as long as the
            # process, so collections skip it from then on (the service has
            # just collected, so no garbage is frozen with it). Only once: a
            # freeze after every swap also froze the replaced models, whose
            # reference cycles then were never collected (55 kB per swap).
            gc.freeze()
            self._gc_frozen = True
        if not live.certificate:
            self._refiner.follow(live.served.model)
        payloads = ", ".join(f"{p.link} {p.mass:g} kg" for p in live.served.payloads.values())
        self.get_logger().info(
            f"serving {live.served.model.name!r} (model revision {live.revision}) with payloads: "
            f"{payloads or 'none'}")

    def _certificate(self, model) -> str:
        """The path of the certificate that now serves ``model``'s K_c interval
        (parameter kc_certificate), or "" (the first bound; refused with the
        reason when the file is another model's)."""
        location = self._kc_certificate
        if not location:
            return ""
        try:
            certificate = serve_certificate(model, location)
        except (CertificateError, OSError) as error:
            self._report_error(f"K_c certificate {location} not served: {error}")
            return ""
        if certificate is None:
            self.get_logger().info(f"no K_c certificate for this model in {location}: its first "
                                   "guaranteed bound serves (robot_dynamics_certify makes one)")
            return ""
        return str(certificate.path)

    def _publish_model(self, live: _Live):
        """``~/model`` for ``live``, when its revision or K_c interval changed."""
        model = live.served.model
        interval = self._refiner.refinement(model).interval
        source = "certificate" if live.certificate else kc_source(self._refiner.status(model))
        key = (live.revision, interval.lower, interval.upper, source)
        with self._model_lock:
            # never an older revision after a newer one: transient local
            # keeps the last message for late subscribers
            if self._model_published is not None and key[0] < self._model_published[0] \
                    or key == self._model_published:
                return
            self._model_published = key
            self._pub_model.publish(model_message(
                live.served, live.revision, (interval.lower, interval.upper), source,
                live.certificate, stamp=self.get_clock().now().to_msg()))

    def _on_set_parameters(self, params) -> SetParametersResult:
        """All of a request or none of it: the service validates, then applies."""
        try:
            self._service.set_parameters({p.name: p.value for p in params})
        except RequestRefused as error:
            return SetParametersResult(successful=False, reason=str(error))
        return SetParametersResult(successful=True)

    def _on_payload(self, msg: InertiaStamped):
        try:
            self._service.request_payload(lambda: payload_from_inertia(msg))
        except RequestRefused:
            pass  # counted and reported by the service

    def _on_odometry(self, data: bytes):
        live = self._service.live
        if live is None or not live.served.base:
            return  # no model yet, or a fixed base: odometry is not part of its state
        try:
            self._base_states.add(read_odometry(data), live.served.base_frames)
        except (MalformedMessage, BaseStateRejected) as error:
            if isinstance(error, MalformedMessage):
                self._base_states.refuse(error.kind)  # the pairing counts the others itself
            self._status.error(f"dropped odometry ({error.kind}): {error}")
            if self._odometry_warnings.due(time.monotonic()):
                self.get_logger().warning(self._status.last_error)

    def _report_error(self, text: str):
        self._status.error(text)
        self.get_logger().warning(text)

    # Hot path (executor thread)

    def _on_joint_state(self, data: bytes):
        start = time.perf_counter_ns()
        try:
            msg = self._joint_state_reader.read(data)
        except MalformedMessage as error:
            self._drop("malformed", str(error))
            return
        stamp = msg.stamp
        lost = self._stamp_gaps.missing(stamp, msg.name)
        if lost:
            # counted on the stream's grid of stamps: a healthy stream counts none
            self._drop("stamp_gap", f"{lost} joint states lost, found by stamp "
                       f"{stamp.sec}.{stamp.nanosec:09d}", lost)
        live = self._service.live
        if live is None:
            # the start-up: the waiting line says what the node waits for
            self._status.drop("no_model", "no robot model loaded yet")
            return
        try:
            q, qd = live.matcher.match(msg, check_finite=False)
            if live.efforts is not None and len(msg.effort):
                live.efforts.add(stamp_ns(stamp), q, qd, live.matcher.efforts(msg))
        except JointStateRejected as error:
            self._drop(error.kind, str(error))
            return
        served = live.served
        frame = ""
        if served.base:
            try:
                base = self._base_states.pair(stamp_ns(stamp), served.root_link)
            except BaseStateRejected as error:
                self._drop(error.kind, str(error))
                return
            q, qd = full_state(base.position, base.velocity, q, qd)
            frame = base.frame_id
        christoffel = self._service.parameters["publish_christoffel"]
        try:
            terms = compute_outputs(served.model, q, qd, christoffel)
        # ArithmeticError: a numerics bug on some input must not stop the node.
        except StateError as error:  # NaN or inf in q or qd, named by the kernels
            self._drop("non_finite", str(error))
            return
        except (ValueError, ArithmeticError) as error:
            self._drop("dynamics_error", f"{type(error).__name__}: {error}")
            return
        # Serialized from templates: rclpy's conversion of message objects
        # would cost more than the dynamics.
        out_state = live.state_template(state_frame(served, frame), christoffel).encode_one(
            state_values(served, q, qd, terms, christoffel), stamp)
        templates = live.templates
        out_gravity = templates["gravity_torques"].encode_one((served.reorder(terms.gravity_torques),), stamp)
        out_arrays = None
        if self._publish_arrays:
            out_arrays = [(topic, templates[topic].encode_one((served.reorder(getattr(terms, topic)),)))
                          for topic in ARRAY_TOPICS if christoffel or topic != "christoffel_symbols"]
        self._status.computed(time.perf_counter_ns() - start)
        self._pub_state.publish(out_state)
        self._pub_gravity.publish(out_gravity)
        if out_arrays is not None:
            for topic, out in out_arrays:
                self._pub_arrays[topic].publish(out)

    def _drop(self, kind: str, reason: str, count: int = 1):
        text = self._status.drop(kind, reason, count)
        if self._drop_warnings.due(time.monotonic()):
            self.get_logger().warning(text)

    # Diagnostics and ~/model's K_c interval (executor thread, 1 Hz)

    def _publish_diagnostics(self):
        live = self._service.live
        served = live.served if live else None
        kc = {**self._refiner.status(served.model), "kc_certificate": live.certificate} if live else None
        if live is not None:
            self._publish_model(live)  # the K_c interval may have tightened
        base_states = self._base_states
        report = self._status.report(
            served, refused=self._service.refused, update_pending=self._service.update_pending,
            odometry=base_states.counts() if base_states else None,
            odometry_refused=sum(base_states.refused.values()) if base_states else 0,
            kc=kc, revision=live.revision if live else 0)
        status = DiagnosticStatus(
            level=LEVELS[report.level], name=f"{self.get_name()}: dynamics", message=report.message,
            hardware_id=report.values["model"],
            values=[KeyValue(key=k, value=v) for k, v in report.values.items()])
        array_msg = DiagnosticArray(status=[status])
        array_msg.header.stamp = self.get_clock().now().to_msg()
        self._pub_diagnostics.publish(array_msg)

    def destroy_node(self):
        # Within launch's 5 s between SIGINT and SIGTERM: a model still being
        # built (a first run compiles for tens of seconds) is abandoned with
        # its daemon thread, and the refinement's process is killed if it
        # does not stop at once.
        self._service.stop(timeout=1.0)
        self._identify.stop(timeout=1.0)
        self._refiner.stop(timeout=2.0)
        return super().destroy_node()


def main(args=None):
    init_without_signal_handlers(args)
    try:
        node = DynamicsNode()
    except ParameterException as error:
        # a parameter given at start of the wrong type (2 for 2.0) or out of
        # its range: rclpy's message names it; a traceback would hide it
        rclpy.logging.get_logger(NODE_NAME).fatal(f"cannot start: {error}")
        rclpy.try_shutdown()
        sys.exit(2)
    executor = EventsExecutor()
    executor.add_node(node)
    try:
        spin_until_stopped(executor)
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()

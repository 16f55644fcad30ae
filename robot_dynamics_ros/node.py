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
import time
from collections import Counter
from dataclasses import dataclass
from typing import Dict

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import InertiaStamped
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import (
    FloatingPointRange, ParameterDescriptor, ParameterType, SetParametersResult)
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.exceptions import ParameterException
from rclpy.experimental import EventsExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.qos_overriding_options import QoSOverridingOptions
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

from robot_dynamics_ros.base_state import BaseStatePairing, BaseStateRejected, full_state, stamp_ns
from robot_dynamics_ros.cdr import CdrTemplate
from robot_dynamics_ros.dynamics import StateError
from robot_dynamics_ros.kc_refinement import KcRefiner
from robot_dynamics_ros.messages import (
    JointStateMatcher,
    JointStateRejected,
    compute_outputs,
    output_templates,
    payload_from_inertia,
)
from robot_dynamics_ros.model_service import RUNTIME_PARAMETERS, ModelService, RequestRefused
from robot_dynamics_ros.model_source import ServedModel, read_description_file
from robot_dynamics_ros.spin import init_without_signal_handlers, spin_until_stopped
from robot_dynamics_ros.stamp_gaps import StampGaps

NODE_NAME = "robot_dynamics"
BUILDER_NICENESS = 10  # the model builder's nice value (the executor's is the process's)
LATENCY_WINDOW = 4096  # compute-time samples kept between two diagnostics reports
WAITING_LOG_PERIOD = 5.0  # s between "waiting for a robot model" lines
COMPILING = " (a first run on a machine also compiles the numba kernels, ~30 s)"

# As robot_state_publisher publishes it: late joiners get the last description.
DESCRIPTION_QOS = QoSProfile(
    depth=1,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
    history=HistoryPolicy.KEEP_LAST,
)
# Best effort matches both reliable and best-effort joint state publishers. A
# short queue keeps outputs fresh when the node falls behind: a deeper one
# loses as many joint states under overload, and adds its depth to the latency.
# Users who need every message (replaying a bag) set the standard read-only
# qos_overrides./joint_states.subscription.{reliability,depth,history} parameters.
JOINT_STATES_QOS = QoSProfile(
    depth=10, reliability=ReliabilityPolicy.BEST_EFFORT, history=HistoryPolicy.KEEP_LAST
)


@dataclass(frozen=True)
class _Live:
    """What the hot path needs, swapped as one reference."""

    served: ServedModel
    matcher: JointStateMatcher
    templates: Dict[str, CdrTemplate]  # output topic name -> serialized-message template


def _descriptor(description: str, type_: int, read_only: bool = False, **extra) -> ParameterDescriptor:
    return ParameterDescriptor(description=description, type=type_, read_only=read_only, **extra)


class DynamicsNode(Node):
    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, **kwargs)
        self._declare_parameters()
        self._processed = 0
        self._dropped = Counter()
        self._stamp_gaps = StampGaps()
        self._problems_reported = 0
        self._last_error = ""
        self._latency_ns = np.zeros(LATENCY_WINDOW)
        self._latency_count = 0
        self._latency_reported = 0

        self._pub_mass = self.create_publisher(Float64MultiArray, "~/mass_matrix", 10)
        self._pub_coriolis = self.create_publisher(Float64MultiArray, "~/coriolis_matrix", 10)
        self._pub_bounds = self.create_publisher(Float64MultiArray, "~/coriolis_bounds", 10)
        self._pub_christoffel = self.create_publisher(Float64MultiArray, "~/christoffel_symbols", 10)
        self._pub_gravity = self.create_publisher(JointState, "~/gravity_torques", 10)
        self._pub_diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", 10)

        self._refiner = KcRefiner(
            time_budget=self.get_parameter("kc_refinement.time_budget").value,
            memory_limit_mb=self.get_parameter("kc_refinement.memory_limit_mb").value,
            niceness=BUILDER_NICENESS)
        base = self.get_parameter("base").value
        self._service = ModelService(
            parameters={name: self.get_parameter(name).value for name in RUNTIME_PARAMETERS},
            gravity=self.get_parameter("gravity").value, mimic=self.get_parameter("mimic").value,
            base=base, joints=self.get_parameter_or("joints").value, prepare=self._prepare,
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

        self.add_on_set_parameters_callback(self._on_set_parameters)
        self._joint_states_topic = self.create_subscription(
            JointState, "joint_states", self._on_joint_state, JOINT_STATES_QOS,
            qos_overriding_options=QoSOverridingOptions.with_default_policies(),
            event_callbacks=SubscriptionEventCallbacks(message_lost=self._on_lost)).topic_name
        self.create_subscription(InertiaStamped, "~/payload", self._on_payload, 10)
        # base "auto" may serve a floating base (and a new description may
        # switch): subscribed unless the base is fixed for sure.
        self._base_states = None
        if base != "fixed":
            self._base_states = BaseStatePairing(self.get_parameter("base_state_timeout").value)
            self.create_subscription(Odometry, "odom", self._on_odometry, JOINT_STATES_QOS)
        self.create_timer(1.0, self._publish_diagnostics)
        self._waiting_timer = self.create_timer(WAITING_LOG_PERIOD, self._log_waiting)
        self._log_waiting()

    def _log_waiting(self):
        """Until a model is served, say where the node looks for one: silence looks like a hang."""
        if self._service.live is not None:
            self._waiting_timer.cancel()
            return
        # after a refused description "building it" alone would mislead
        last = f"; last error: {self._last_error}" if self._last_error else ""
        self.get_logger().info(f"waiting for a robot model: {self._waiting_for}{last}; "
                               f"joint states on {self._joint_states_topic}")

    def _declare_parameters(self):
        string, strings = ParameterType.PARAMETER_STRING, ParameterType.PARAMETER_STRING_ARRAY
        double, doubles = ParameterType.PARAMETER_DOUBLE, ParameterType.PARAMETER_DOUBLE_ARRAY
        self.declare_parameter("robot_description", "", _descriptor(
            "URDF text; when set it takes precedence over urdf_file and the robot_description topic",
            string, read_only=True))
        self.declare_parameter("urdf_file", "", _descriptor(
            "Path of a URDF file; when set (and robot_description is not) the topic is not used",
            string, read_only=True))
        # Declared by type: an empty list default would make rclpy guess a byte array.
        self.declare_parameter("joints", Parameter.Type.STRING_ARRAY, _descriptor(
            "Output joint order, a permutation of the actuated joints; unset: model order",
            strings, read_only=True))
        self.declare_parameter("gravity", [0.0, 0.0, -9.81], _descriptor(
            "Gravity vector in the URDF root frame, m/s^2", doubles, read_only=True))
        self.declare_parameter("publish_christoffel", False, _descriptor(
            "Also publish ~/christoffel_symbols (n^3 values per joint state)",
            ParameterType.PARAMETER_BOOL))
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
        self.declare_parameter("kc_refinement.time_budget", 60.0, _descriptor(
            "Seconds spent tightening the K_c interval of each served model in the background "
            "(0: keep the first guaranteed bound)", double, read_only=True,
            floating_point_range=[FloatingPointRange(from_value=0.0, to_value=1e6)]))
        self.declare_parameter("kc_refinement.memory_limit_mb", 160.0, _descriptor(
            "Work memory of that refinement, MB", double, read_only=True,
            floating_point_range=[FloatingPointRange(from_value=1.0, to_value=1e5)]))

    def _on_description(self, msg: String):
        self._waiting_for = f"building it from the last message on robot_description{COMPILING}"
        self._service.request_description("topic robot_description", lambda: msg.data)

    def _prepare(self, served: ServedModel, old) -> _Live:
        """The hot path's snapshot of ``served``, its outputs computed once (builder thread)."""
        self._refiner.refinement(served.model)  # the first K_c bound, with the node's memory limit
        compute_outputs(served.model, served.neutral_configuration(), np.ones(served.model.nv))
        same_inputs = old is not None and old.matcher.joint_names == served.model.joint_names
        same_outputs = old is not None and old.served.coordinates == served.coordinates
        return _Live(
            served=served,
            matcher=old.matcher if same_inputs else JointStateMatcher(served.model.joint_names),
            templates=old.templates if same_outputs else output_templates(served.joints, served.base),
        )

    def _install(self, live: _Live):
        """After the service swapped ``live`` in (builder thread)."""
        # A full collection walks every object the libraries and models made
        # (20 ms here), long enough for the joint_states queue to overflow;
        # what exists now lives as long as the model, so collections skip it.
        gc.freeze()
        self._refiner.follow(live.served.model)
        payloads = ", ".join(f"{p.link} {p.mass:g} kg" for p in live.served.payloads.values())
        self.get_logger().info(
            f"serving {live.served.model.name!r} with payloads: {payloads or 'none'}")

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

    def _on_odometry(self, msg: Odometry):
        live = self._service.live
        if live is None or not live.served.base:
            return  # no model yet, or a fixed base: odometry is not part of its state
        try:
            self._base_states.add(msg, live.served.base_frames)
        except BaseStateRejected as error:  # counted by the pairing
            self._last_error = f"dropped odometry ({error.kind}): {error}"
            self.get_logger().warning(self._last_error, throttle_duration_sec=5.0)

    def _report_error(self, text: str):
        self._last_error = text
        self.get_logger().warning(text)

    # Hot path (executor thread)

    def _on_joint_state(self, msg: JointState):
        start = time.perf_counter_ns()
        lost = self._stamp_gaps.missing(msg.header.stamp, msg.name)
        if lost:
            self._drop("stamp_gap", f"{lost} joint states missing before stamp "
                       f"{msg.header.stamp.sec}.{msg.header.stamp.nanosec:09d} (queue overflow?)", lost)
        live = self._service.live
        if live is None:
            self._drop("no_model", "no robot model loaded yet")
            return
        try:
            q, qd = live.matcher.match(msg, check_finite=False)
        except JointStateRejected as error:
            self._drop(error.kind, str(error))
            return
        served = live.served
        if served.base:
            try:
                base = self._base_states.pair(stamp_ns(msg.header.stamp), served.root_link)
            except BaseStateRejected as error:
                self._drop(error.kind, str(error))
                return
            q, qd = full_state(base.position, base.velocity, q, qd)
        model = served.model
        try:
            values = compute_outputs(model, q, qd)
        # ArithmeticError: a numerics bug on some input must not stop the node.
        except StateError as error:  # NaN or inf in q or qd, named by the kernels
            self._drop("non_finite", str(error))
            return
        except (ValueError, ArithmeticError) as error:
            self._drop("dynamics_error", f"{type(error).__name__}: {error}")
            return
        # Serialized from templates: rclpy's conversion of message objects
        # would cost more than the dynamics.
        templates = live.templates
        out_mass = templates["mass_matrix"].encode_one(served.reorder(values.mass_matrix))
        out_coriolis = templates["coriolis_matrix"].encode_one(served.reorder(values.coriolis_matrix))
        out_bounds = templates["coriolis_bounds"].encode_one(values.coriolis_bounds)
        out_gravity = templates["gravity_torques"].encode_one(
            served.reorder(values.gravity_torques), msg.header.stamp)
        out_christoffel = (
            templates["christoffel_symbols"].encode_one(served.reorder(values.christoffel_symbols))
            if self._service.parameters["publish_christoffel"] else None)
        self._latency_ns[self._latency_count % LATENCY_WINDOW] = time.perf_counter_ns() - start
        self._latency_count += 1
        self._processed += 1
        self._pub_mass.publish(out_mass)
        self._pub_coriolis.publish(out_coriolis)
        self._pub_bounds.publish(out_bounds)
        if out_christoffel is not None:
            self._pub_christoffel.publish(out_christoffel)
        self._pub_gravity.publish(out_gravity)

    def _on_lost(self, info):
        """DDS saw joint states that never reached the queue (sequence gaps)."""
        self._drop("lost_in_transport", f"DDS reports {info.total_count_change} joint states lost",
                   info.total_count_change)

    def _drop(self, kind: str, reason: str, count: int = 1):
        self._dropped[kind] += count
        self._last_error = f"dropped joint_states ({kind}): {reason}"
        self.get_logger().warning(self._last_error, throttle_duration_sec=5.0)

    # Diagnostics (executor thread, 1 Hz)

    def _publish_diagnostics(self):
        live = self._service.live
        refused = self._service.refused
        count = self._latency_count
        window = min(count - self._latency_reported, LATENCY_WINDOW)
        self._latency_reported = count
        recent = np.roll(self._latency_ns, -(count % LATENCY_WINDOW))[LATENCY_WINDOW - window:]
        dropped = sum(self._dropped.values())
        odometry = self._base_states.counts() if self._base_states else {}
        odometry_refused = sum(self._base_states.refused.values()) if self._base_states else 0
        values = {
            "model": live.served.model.name if live else "",
            "dof": str(live.served.model.nv) if live else "0",
            "joints": ",".join(live.served.joints) if live else "",
            "base": (f"floating, root link {live.served.root_link}" if live.served.base
                     else "fixed") if live else "",
            "payloads": ";".join(
                f"{p.link}:{p.mass:g}kg" for p in live.served.payloads.values()) if live else "",
            "processed": str(self._processed),
            "dropped": str(dropped),
            **{f"dropped.{kind}": str(n) for kind, n in sorted(self._dropped.items())},
            "update_pending": "yes" if self._service.update_pending else "no",
            "payloads_refused": str(refused["payload_parameters"] + refused["payload_topic"]),
            "descriptions_rejected": str(refused["description"]),
            **{f"refused.{kind}": str(n) for kind, n in sorted(refused.items())},
            **odometry,
            **(self._refiner.status(live.served.model) if live else {}),
            "compute_samples": str(window),
            "compute_mean_us": f"{recent.mean() / 1e3:.1f}" if window else "",
            "compute_p99_us": f"{np.percentile(recent, 99) / 1e3:.1f}" if window else "",
            "last_error": self._last_error,
        }
        problems = dropped + sum(refused.values()) + odometry_refused
        new_problems = problems - self._problems_reported
        self._problems_reported = problems
        if live is None:
            level, message = DiagnosticStatus.ERROR, "no robot model loaded"
        elif new_problems:
            level = DiagnosticStatus.WARN
            message = (f"serving {live.served.model.name}; {new_problems} inputs dropped or "
                       "refused in the last second")
        else:
            level, message = DiagnosticStatus.OK, f"serving {live.served.model.name}"
        status = DiagnosticStatus(
            level=level,
            name=f"{self.get_name()}: dynamics",
            message=message,
            hardware_id=values["model"],
            values=[KeyValue(key=k, value=v) for k, v in values.items()],
        )
        array_msg = DiagnosticArray(status=[status])
        array_msg.header.stamp = self.get_clock().now().to_msg()
        self._pub_diagnostics.publish(array_msg)

    def destroy_node(self):
        self._service.stop()
        self._refiner.stop()
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

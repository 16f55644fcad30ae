"""The ROS 2 node ``robot_dynamics``: dynamics of the described robot at every joint state.

Wiring only: parameters are declared from one table (``parameters``);
requests (new descriptions, parameter sets, ``~/payload``) are validated and
applied by ``model_service``, which owns the builder thread and the atomic
swap; each joint state is answered by ``joint_state_handler`` (no ROS
there), which reads one immutable ``Live`` snapshot per message, so all
outputs of one input come from one model.
"""

import os

# The matrices are small (n <= a few dozen): BLAS threads only add wake-up
# latency and fight the executor for the cores. Must precede the numpy import.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import gc
import inspect
import sys
from typing import Optional

import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import InertiaStamped
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import SetParametersResult
from rclpy.exceptions import ParameterException
from rclpy.experimental import EventsExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.qos_overriding_options import QoSOverridingOptions
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

from robot_dynamics_ros.messages.inputs import payload_from_inertia
from robot_dynamics_ros.messages.outputs import ARRAY_TOPICS, compute_first_outputs
from robot_dynamics_ros.msg import DynamicsModel, DynamicsState
from robot_dynamics_ros.node.identify_service import IdentifyPayloadServer
from robot_dynamics_ros.node.joint_state_handler import JointStateHandler, Live, Published, make_live
from robot_dynamics_ros.node.kc_refinement import KcRefiner
from robot_dynamics_ros.node.model_service import ModelService, RequestRefused
from robot_dynamics_ros.node.model_topic import ModelTopic
from robot_dynamics_ros.node.parameters import RUNTIME, declare_parameters
from robot_dynamics_ros.node.spin import init_without_signal_handlers, spin_until_stopped
from robot_dynamics_ros.node.status import ERROR, OK, WARN, NodeStatus
from robot_dynamics_ros.served.base_state import BaseStatePairing
from robot_dynamics_ros.served.model import ServedModel, read_description_file

NODE_NAME = "robot_dynamics"
BUILDER_NICENESS = 10  # the model builder's nice value (the executor's is the process's)
WAITING_LOG_PERIOD = 5.0  # s between checks for a change to what the node waits for
COMPILING = (" (its kernels load from the install's compile, dynamics.precompile, "
             "or compile now when the install left none)")

# As robot_state_publisher publishes it: late joiners get the last description.
DESCRIPTION_QOS = QoSProfile(
    depth=1,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
    history=HistoryPolicy.KEEP_LAST,
)
# ~/model the same way: a controller that starts late gets the current model.
MODEL_QOS = DESCRIPTION_QOS
# Best effort matches both reliable and best-effort joint state publishers.
# The queue rides out a stall of the executor's thread (the scheduler of a busy
# machine, a model being built beside it) of up to 50 ms at 1 kHz without losing
# a joint state; under overload it keeps the newest, and adds up to its depth
# to the latency. Users who need every message (replaying a bag) or fresher
# outputs set the standard read-only
# qos_overrides./joint_states.subscription.{reliability,depth,history} parameters.
JOINT_STATES_QOS = QoSProfile(
    depth=50, reliability=ReliabilityPolicy.BEST_EFFORT, history=HistoryPolicy.KEEP_LAST
)
# Reliable, keep last 10: both reliable and best-effort subscribers match.
OUTPUT_DEPTH = 10
LEVELS = {OK: DiagnosticStatus.OK, WARN: DiagnosticStatus.WARN, ERROR: DiagnosticStatus.ERROR}


def _joint_order(joints):
    """The ``joints`` parameter as a list of names, or None for the model's order."""
    if joints == "":
        return None
    if not (isinstance(joints, list) and all(isinstance(j, str) for j in joints)):
        raise ParameterException(f"joints must be a list of joint names (or \"\" for the model's "
                                 f"order), got {joints!r}", ["joints"])
    return joints


def _frame_list(frames):
    """The ``frames`` parameter as a tuple of link names, () for none."""
    if frames == "":
        return ()
    if not (isinstance(frames, list) and all(isinstance(f, str) for f in frames)):
        raise ParameterException(f"frames must be a list of link names (or \"\" for none), "
                                 f"got {frames!r}", ["frames"])
    return tuple(frames)


_MESSAGE_AND_INFO = inspect.Signature([
    inspect.Parameter("message", inspect.Parameter.POSITIONAL_ONLY),
    inspect.Parameter("info", inspect.Parameter.POSITIONAL_ONLY)])


def _with_message_info(callback):
    """``callback(message, info)`` as a subscription callback that gets the
    message info of each take from either executor. rclpy passes the info
    to a callback whose signature takes two arguments and not one; then its
    executors call it with ``(message, info)``, but the EventsExecutor of
    these wheels with the one tuple ``((message, info),)``. So the callback
    says it takes two and takes both forms."""
    def on_take(*taken):
        message, info = taken[0] if len(taken) == 1 else taken
        callback(message, info)
    on_take.__signature__ = _MESSAGE_AND_INFO
    return on_take


class DynamicsNode(Node):
    """Subscriptions, publishers, timers and services around the model
    service and the joint-state handler; each callback is a few lines."""

    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, **kwargs)
        declare_parameters(self)
        value = lambda name: self.get_parameter(name).value  # noqa: E731
        self._status = NodeStatus()
        self._revision = 0  # of the last model prepared (builder thread)
        self._gc_frozen = False
        self._effort_window_size = value("identify_payload.window_size")
        self._refiner = KcRefiner(time_budget=value("kc_refinement.time_budget"),
                                  memory_limit_mb=value("kc_refinement.memory_limit_mb"),
                                  niceness=BUILDER_NICENESS)
        self._create_publishers(value("publish_arrays"))
        self._model_topic = ModelTopic(
            refiner=self._refiner, certificates=value("kc_certificate"), publish=self._pub_model.publish,
            now=lambda: self.get_clock().now().to_msg(), report=self._report_error,
            info=lambda text: self.get_logger().info(text))
        base = value("base")
        self._service = ModelService(
            parameters={name: value(name) for name in RUNTIME}, gravity=value("gravity"),
            mimic=value("mimic"), base=base, joints=_joint_order(value("joints")),
            frames=_frame_list(value("frames")), prepare=self._prepare, report=self._report_error,
            installed=self._install, niceness=BUILDER_NICENESS)
        self._waiting_for = self._request_description(value("robot_description"), value("urdf_file"))
        self._service.start()
        self._identify = IdentifyPayloadServer(
            self, lambda: self._service.live, self._service.request_payload, BUILDER_NICENESS)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        # base "auto" may serve a floating base (and a new description may
        # switch): odometry is subscribed unless the base is fixed for sure
        self._handler = JointStateHandler(
            live=lambda: self._service.live,
            christoffel=lambda: self._service.parameters["publish_christoffel"],
            status=self._status, publish_arrays=bool(self._pub_arrays),
            base_states=BaseStatePairing(value("base_state_timeout")) if base != "fixed" else None,
            warn=lambda text: self.get_logger().warning(text))
        self._create_subscriptions(odometry=base != "fixed")
        self.create_timer(value("diagnostic_updater.period"), self._publish_diagnostics)
        self._waiting_logged = None
        self._waiting_timer = self.create_timer(WAITING_LOG_PERIOD, self._log_waiting)
        self._log_waiting()

    def _create_publishers(self, publish_arrays: bool):
        self._pub_state = self.create_publisher(DynamicsState, "~/state", OUTPUT_DEPTH)
        self._pub_model = self.create_publisher(DynamicsModel, "~/model", MODEL_QOS)
        self._pub_gravity = self.create_publisher(JointState, "~/gravity_torques", OUTPUT_DEPTH)
        self._pub_arrays = {
            topic: self.create_publisher(Float64MultiArray, f"~/{topic}", OUTPUT_DEPTH)
            for topic in ARRAY_TOPICS} if publish_arrays else {}
        self._pub_diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", 10)

    def _request_description(self, text: str, path: str) -> str:
        """Ask the service for the first model; returns where the node looks for it."""
        if text:
            self._service.request_description("parameter robot_description", lambda: text)
            return f"building it from the robot_description parameter{COMPILING}"
        if path:
            self._service.request_description(f"urdf_file {path}", lambda: read_description_file(path))
            return f"building it from urdf_file {path}{COMPILING}"
        topic = self.create_subscription(
            String, "robot_description", self._on_description, DESCRIPTION_QOS).topic_name
        return (f"listening on {topic} (std_msgs/String, transient local, as "
                "robot_state_publisher publishes it), or set the urdf_file parameter")

    def _create_subscriptions(self, odometry: bool):
        """Joint states and odometry as serialized bytes, which the handler
        reads itself: rclpy's Python messages cost more than the reading.
        Joint states with the message info of each take (``_with_message_info``),
        whose DDS sequence numbers count the joint states lost before the
        callback (``losses``). No message_lost event handler: with
        the Fast DDS of the Jazzy wheels, taking that event can deadlock
        against DDS's receive thread (rmw_fastrtps PR #890), and a KEEP_LAST
        queue that overflows does not raise it."""
        self._joint_states_topic = self.create_subscription(
            JointState, "joint_states", _with_message_info(self._on_joint_state), JOINT_STATES_QOS,
            qos_overriding_options=QoSOverridingOptions.with_default_policies(), raw=True).topic_name
        self.create_subscription(InertiaStamped, "~/payload", self._on_payload, 10)
        if odometry:
            self.create_subscription(Odometry, "odom", self._handler.add_odometry, JOINT_STATES_QOS, raw=True)

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
        line = f"waiting for a robot model: {self._waiting_for}{last}; joint states on {self._joint_states_topic}"
        if line != self._waiting_logged:  # once, and again only when it changes
            self._waiting_logged = line
            self.get_logger().info(line)

    def _on_description(self, msg: String):
        self._waiting_for = f"building it from the last message on robot_description{COMPILING}"
        self._service.request_description("topic robot_description", lambda: msg.data)

    def _prepare(self, served: ServedModel, old: Optional[Live]) -> Live:
        """The hot path's snapshot of ``served``, its outputs computed once
        (builder thread); its DynamicsModel is published before any
        DynamicsState of its revision can be."""
        # a certificate's K_c interval, or else the first bound, with the node's memory limit
        certificate = self._model_topic.certificate(served.model)
        self._refiner.refinement(served.model)
        compute_first_outputs(served)
        self._revision += 1
        live = make_live(served, old, self._revision, certificate, self._effort_window_size)
        self._model_topic.update(live)
        return live

    def _install(self, live: Live):
        """After the service swapped ``live`` in (builder thread)."""
        if not self._gc_frozen:
            # A full collection walks every object the libraries made, long
            # enough for the joint_states queue to overflow: once the first
            # model is served, what exists lives as long as the process, so
            # collections skip it from then on (the service has just
            # collected: no garbage is frozen with it). Only once: a freeze
            # after each swap would also freeze the replaced models, whose
            # reference cycles would then never be collected.
            gc.freeze()
            self._gc_frozen = True
        if not live.certificate:
            self._refiner.follow(live.served.model)
        payloads = ", ".join(f"{p.link} {p.mass:g} kg" for p in live.served.payloads.values())
        self.get_logger().info(
            f"serving {live.served.model.name!r} (model revision {live.revision}) with payloads: "
            f"{payloads or 'none'}")

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

    def _report_error(self, text: str):
        self._status.error(text)
        self.get_logger().warning(text)

    def _on_joint_state(self, data: bytes, info):
        """The hot path (executor thread): ``info`` is the message info of the
        take (a dict, ``publication_sequence_number`` among its keys)."""
        published = self._handler.handle(data, info)
        if published is not None:
            self._publish(published)

    def _publish(self, published: Published):
        self._pub_state.publish(published.state)
        self._pub_gravity.publish(published.gravity)
        for topic, message in published.arrays:
            self._pub_arrays[topic].publish(message)

    # Diagnostics and ~/model's K_c interval (executor thread, 1 Hz)

    def _publish_diagnostics(self):
        live = self._service.live
        served = live.served if live else None
        kc = {**self._refiner.status(served.model), "kc_certificate": live.certificate} if live else None
        if live is not None:
            self._model_topic.update(live)  # the K_c interval may have tightened
        base_states = self._handler.base_states
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
        # built (a first run compiles the kernels) is abandoned with
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

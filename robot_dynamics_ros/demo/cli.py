"""The whole package in one command, on a machine without ROS tools.

    python -m robot_dynamics_ros.demo.cli --duration 5      (or: robot_dynamics_demo)
    robot_dynamics_demo --robot solo12                  (a floating-base quadruped)

Publishes the embedded PUMA 560 on ``robot_description`` (transient local, as
robot_state_publisher does), streams at 500 Hz the joint states of a
simulated PUMA that tracks the trajectory of Mohan and Saha (2007), "A
recursive, numerically stable, and efficient simulation algorithm for serial
robots", Eq. (38), runs the ``robot_dynamics`` node in the same process and
prints once a second what the node publishes (``demo_monitor``), with a
payload swapped in midway through the node's parameter service.

With ``--robot solo12`` the robot is a quadruped with a floating base
instead (``demo_quadruped``: example-robot-data's solo12 trotting in place
while its trunk sways), streamed as joint states and odometry.

With ``--no-node`` the node is not started here: the demo launch file runs
it as a process of its own.
"""

import argparse
import sys

# First: the node module sets the BLAS thread count, which must precede numpy.
from robot_dynamics_ros.node.dynamics_node import DESCRIPTION_QOS, DynamicsNode

import rclpy  # noqa: E402
from rclpy.experimental import EventsExecutor  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.time import Time  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from robot_dynamics_ros import dynamics  # noqa: E402
from robot_dynamics_ros.demo.monitor import PUMA, SOLO12, Monitor  # noqa: E402
from robot_dynamics_ros.demo.puma import CERTIFICATES, SimulatedPuma  # noqa: E402
from robot_dynamics_ros.node.spin import init_without_signal_handlers, spin_until_stopped  # noqa: E402
from robot_dynamics_ros.demo.quadruped import (  # noqa: E402
    ROOT_LINK, ExampleRobotDataMissing, SwayingQuadruped, solo12_urdf)

class Stream(Node):
    """A robot's description (latched) and, once ``ready()`` (the node serves
    a model), its samples at ``rate`` Hz.

    Waiting for the node keeps its first model build (seconds; longer on a
    first run, which compiles the kernels) out of the stream: joint states
    sent before it could only be dropped (``no_model``). Sample k is due at
    start + k / rate and stamped so, as a driver stamps a sample with the
    time it was taken. The timer only wakes the stream: a tick that comes late (the
    simulation thread holds the GIL in bursts) sends the samples due by then,
    at most MAX_BURST of them, below the depth of the node's joint-state
    queue (10) that a larger burst would overflow (a late timer fires once,
    not once per period missed, and the node takes the burst before the next
    tick); the rate holds on average.
    After a stall of more than MAX_BEHIND seconds the stream goes on from
    now: its stamps jump by more than a second, which the node takes for a
    pause, not for lost joint states. The latency the monitor shows (output
    time - stamp) includes the stream's own lateness while it catches up.
    Subclasses publish sample ``k`` in ``_send(k, stamp)``.
    """

    MAX_BURST = 8
    MAX_BEHIND = 1.0

    def __init__(self, name: str, urdf: str, rate: float, ready=lambda: True):
        super().__init__(name)
        self.rate = rate
        self._ready = ready
        self._period_ns = 1e9 / rate
        self._start_ns = None
        self._sent = 0
        self.create_publisher(String, "robot_description", DESCRIPTION_QOS).publish(String(data=urdf))
        self._timer = self.create_timer(1.0 / rate, self._tick)

    def _tick(self):
        now = self.get_clock().now().nanoseconds
        if self._start_ns is None:
            if not self._ready():
                return
            # the time this tick was due, not now: a later tick that comes
            # less late must still find its sample due
            self._start_ns = now + self._timer.time_until_next_call() - self._period_ns
        due = int((now - self._start_ns) / self._period_ns) + 1 - self._sent
        if due > self.MAX_BEHIND * self.rate:
            self._start_ns, due = now - self._sent * self._period_ns, 1
        for _ in range(min(due, self.MAX_BURST)):
            stamp = Time(nanoseconds=int(self._start_ns + self._sent * self._period_ns)).to_msg()
            self._send(self._sent, stamp)
            self._sent += 1

    def _send(self, k: int, stamp):
        raise NotImplementedError


class PumaStream(Stream):
    """The PUMA's joint states, simulated under computed-torque control."""

    def __init__(self, rate: float, ready=lambda: True):
        urdf = dynamics.puma_urdf()
        super().__init__("puma_demo_stream", urdf, rate, ready)
        model = dynamics.load_urdf(urdf)
        self._joints = list(model.joint_names)
        self._motion = SimulatedPuma(model, rate)
        self._publisher = self.create_publisher(JointState, "joint_states", 10)

    def _send(self, k, stamp):
        q, qd = self._motion()
        msg = JointState(name=self._joints, position=q.tolist(), velocity=qd.tolist())
        msg.header.stamp = stamp
        self._publisher.publish(msg)


class QuadrupedStream(Stream):
    """solo12's odometry and joint states, one stamp for both (demo_quadruped)."""

    def __init__(self, rate: float, ready=lambda: True):
        urdf = solo12_urdf()
        super().__init__("solo12_demo_stream", urdf, rate, ready)
        self._motion = SwayingQuadruped(dynamics.load_urdf(urdf).joint_names)
        self._odometry = self.create_publisher(Odometry, "odom", 10)
        self._joint_states = self.create_publisher(JointState, "joint_states", 10)

    def _send(self, k, stamp):
        t = k / self.rate
        (x, y, z, qx, qy, qz, qw), (vx, vy, vz, wx, wy, wz) = self._motion.base(t)
        odometry = Odometry(child_frame_id=ROOT_LINK)
        odometry.header.stamp, odometry.header.frame_id = stamp, "odom"
        pose, twist = odometry.pose.pose, odometry.twist.twist
        pose.position.x, pose.position.y, pose.position.z = x, y, z
        pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w = qx, qy, qz, qw
        twist.linear.x, twist.linear.y, twist.linear.z = vx, vy, vz
        twist.angular.x, twist.angular.y, twist.angular.z = wx, wy, wz
        # First: the node pairs each joint state with odometry received before it.
        self._odometry.publish(odometry)
        q, qd = self._motion.joints(t)
        msg = JointState(name=list(self._motion.joint_names), position=q.tolist(), velocity=qd.tolist())
        msg.header.stamp = stamp
        self._joint_states.publish(msg)


ROBOTS = {"puma": (PumaStream, PUMA), "solo12": (QuadrupedStream, SOLO12)}


def main(argv=None):
    argv = sys.argv if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="robot_dynamics_demo", description=__doc__.split("\n\n")[0],
        epilog="ROS arguments go after --ros-args.")
    parser.add_argument("--duration", type=float, default=None,
                        help="seconds to run once the node's outputs arrive (default: until Ctrl-C)")
    parser.add_argument("--rate", type=float, default=500.0, help="joint state rate, Hz (500)")
    parser.add_argument("--robot", choices=sorted(ROBOTS), default="puma",
                        help="puma (default): the embedded PUMA 560, a fixed base; solo12: a "
                        "quadruped with a floating base, trotting in place while its trunk sways "
                        "(joint states and odometry; needs the example-robot-data package)")
    parser.add_argument("--no-node", action="store_true",
                        help="do not start the node here (it runs as another process)")
    options = parser.parse_args(rclpy.utilities.remove_ros_args(argv)[1:])
    stream, robot = ROBOTS[options.robot]
    # One writer on the terminal: the node's log lines reach it through
    # /rosout and the monitor, not from the node's threads at any moment.
    init_without_signal_handlers(argv if options.no_node else
                                 list(argv) + ["--ros-args", "--disable-stdout-logs"])
    monitor = None  # made second: it prints the introduction, the stream may fail first
    node = None  # made last, in this process unless --no-node

    def ready():
        # the node in this process says so the moment it serves; one in
        # another process in its diagnostics, once a second
        return node.serves() if node is not None else monitor is not None and monitor.node_serves()

    try:
        nodes = [stream(options.rate, ready=ready)]
    except ExampleRobotDataMissing as error:
        rclpy.try_shutdown()
        print(f"robot_dynamics_demo: error: {error}", file=sys.stderr)
        return 2
    monitor = Monitor(options.rate, options.duration, robot, node_log=not options.no_node)
    nodes.append(monitor)
    if not options.no_node:
        # the PUMA's K_c certificates (demo.puma): its interval from the first
        # output; its flange's pose, J and J̇v in every state (the README's
        # task-space example)
        overrides = ([Parameter("kc_certificate", value=str(CERTIFICATES)), Parameter("frames", value=["link6"])]
                     if options.robot == "puma" else [])
        node = DynamicsNode(parameter_overrides=overrides)
        nodes.append(node)
    executor = EventsExecutor()
    for each in nodes:
        executor.add_node(each)
    try:
        spin_until_stopped(executor, lambda: not (monitor.finished() or monitor.gave_up()))
        gave_up = monitor.gave_up()
    finally:
        for each in nodes:
            each.destroy_node()
        rclpy.try_shutdown()
    if gave_up:
        print("no outputs from the robot_dynamics node: giving up", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The ``robot_dynamics_node`` executable: ``--help`` is answered here, before
rclpy, numba and the dynamics load (seconds on a first run), then the node runs."""

import sys

USAGE_TEMPLATE = """\
usage: robot_dynamics_node [-h] [--ros-args ...]

The robot_dynamics node: reads a URDF and, for every joint state, publishes
one stamped DynamicsState: the mass matrix, the Coriolis matrix, gravity
torques and Coriolis bounds, with the joint state's stamp and the revision
of the model they come from.

{parameters}
Topics (~ is the node, /robot_dynamics unless renamed or namespaced):
  in   robot_description     std_msgs/String, reliable, transient local
       joint_states          sensor_msgs/JointState, matched by joint name
       ~/payload             geometry_msgs/InertiaStamped, frame_id = link
       odom                  nav_msgs/Odometry, floating base only: pose and
                             twist of the root link (child_frame_id)
  out  ~/state               robot_dynamics_ros/DynamicsState, one per joint
                             state: its stamp, model_revision, q and v used,
                             M, C (row-major), g, the bounds (a floating base:
                             6 base coordinates, then the joints)
       ~/model               robot_dynamics_ros/DynamicsModel, transient
                             local: each revision's robot, payloads, K_c
       ~/gravity_torques     sensor_msgs/JointState, effort = g(q)
       /diagnostics          diagnostic_msgs/DiagnosticArray, 1 Hz
       with publish_arrays: ~/mass_matrix, ~/coriolis_matrix,
       ~/coriolis_bounds, ~/christoffel_symbols (std_msgs/Float64MultiArray)

Service:
  ~/identify_payload         robot_dynamics_ros/IdentifyPayload: a payload on
                             a link estimated from the recent joint states
                             with efforts; applied only when asked

Example:
  robot_dynamics_node --ros-args -p urdf_file:=robot.urdf -p publish_christoffel:=true
  ros2 topic echo /robot_dynamics/state --once
  ros2 param set /robot_dynamics payload.mass 2.0
"""


def usage() -> str:
    """The help text; its parameters come from the node's one table."""
    from robot_dynamics_ros.node.parameters import usage_lines

    parameters = "\n".join([
        "Parameters (--ros-args -p NAME:=VALUE, or --params-file FILE.yaml; each is",
        "documented in config/robot_dynamics.yaml):", *usage_lines()])
    return USAGE_TEMPLATE.format(parameters=parameters)


def wants_help(argv) -> bool:
    """-h or --help before --ros-args (what follows it belongs to rcl)."""
    args = list(argv[1:])
    if "--ros-args" in args:
        args = args[:args.index("--ros-args")]
    return "-h" in args or "--help" in args


def main():
    if wants_help(sys.argv):
        print(usage(), end="")
        return
    from robot_dynamics_ros.node import dynamics_node

    dynamics_node.main()

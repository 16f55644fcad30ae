"""Start the robot_dynamics node.

    ros2 launch robot_dynamics_ros robot_dynamics.launch.py \
        [urdf_file:=/path/robot.urdf] [params_file:=/path/params.yaml] [namespace:=arm]

Without urdf_file the node follows the robot_description topic, as published
by robot_state_publisher. Parameters: config/robot_dynamics.yaml documents
every one; a urdf_file argument overrides the file's value.
"""

from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

# Same relative place in the source tree and in share/robot_dynamics_ros.
DEFAULT_PARAMS = Path(__file__).resolve().parent.parent / "config" / "robot_dynamics.yaml"


def _node(context):
    parameters = [LaunchConfiguration("params_file").perform(context)]
    urdf_file = LaunchConfiguration("urdf_file").perform(context)
    if urdf_file:  # only when given, so that a urdf_file set in the YAML still counts
        parameters.append({"urdf_file": urdf_file})
    return [Node(
        package="robot_dynamics_ros",
        executable="robot_dynamics_node",
        name="robot_dynamics",
        namespace=LaunchConfiguration("namespace"),
        parameters=parameters,
        output="screen",
    )]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument(
            "urdf_file", default_value="",
            description="URDF file of the robot; empty: follow the robot_description topic"),
        DeclareLaunchArgument(
            "params_file", default_value=str(DEFAULT_PARAMS),
            description="Parameter YAML for the node (see config/robot_dynamics.yaml)"),
        DeclareLaunchArgument(
            "namespace", default_value="",
            description="Namespace of the node and of its robot_description and joint_states"),
        OpaqueFunction(function=_node),
    ])

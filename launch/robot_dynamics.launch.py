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
from rclpy.validate_namespace import InvalidNamespaceException, validate_namespace

# Same relative place in the source tree and in share/robot_dynamics_ros.
DEFAULT_PARAMS = Path(__file__).resolve().parent.parent / "config" / "robot_dynamics.yaml"


def _checked_arguments(context):
    """params_file, urdf_file and namespace, or an error that names the bad one.

    Without these checks launch_ros only warns about a missing parameter file
    and starts the node on defaults, and a bad namespace or URDF path surfaces
    as a node that dies or waits for ever.
    """
    params_file = LaunchConfiguration("params_file").perform(context)
    urdf_file = LaunchConfiguration("urdf_file").perform(context)
    namespace = LaunchConfiguration("namespace").perform(context)
    if not Path(params_file).is_file():
        raise RuntimeError(f"params_file:={params_file!r} is not a file")
    if urdf_file and not Path(urdf_file).is_file():
        raise RuntimeError(f"urdf_file:={urdf_file!r} is not a file")
    try:
        validate_namespace(namespace if namespace.startswith("/") else "/" + namespace)
    except InvalidNamespaceException as error:
        raise RuntimeError(f"namespace:={namespace!r} is not a valid ROS namespace: {error}") from None
    return params_file, urdf_file


def _node(context):
    params_file, urdf_file = _checked_arguments(context)
    parameters = [params_file]
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

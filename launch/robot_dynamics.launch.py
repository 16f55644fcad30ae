"""Start the robot_dynamics node.

    ros2 launch robot_dynamics_ros robot_dynamics.launch.py \
        [urdf_file:=/path/robot.urdf] [params_file:=/path/params.yaml] [namespace:=arm] \
        [base:=auto|fixed|floating] [base_state_timeout:=0.1] [kc_certificate:=/path/certs]

Without urdf_file the node follows the robot_description topic, as published
by robot_state_publisher. Parameters: config/robot_dynamics.yaml documents
every one; urdf_file, base, base_state_timeout and kc_certificate
arguments, when given, override the file's values.
"""

from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from rclpy.validate_namespace import InvalidNamespaceException, validate_namespace

# Same relative place in the source tree and in share/robot_dynamics_ros.
DEFAULT_PARAMS = Path(__file__).resolve().parent.parent / "config" / "robot_dynamics.yaml"


BASES = ("auto", "fixed", "floating")


def _checked_arguments(context):
    """params_file, the parameters the arguments override, and namespace, or an
    error that names the bad one.

    Without these checks launch_ros only warns about a missing parameter file
    and starts the node on defaults, and a bad namespace or URDF path surfaces
    as a node that dies or waits for ever.
    """
    params_file = LaunchConfiguration("params_file").perform(context)
    urdf_file = LaunchConfiguration("urdf_file").perform(context)
    base = LaunchConfiguration("base").perform(context)
    timeout = LaunchConfiguration("base_state_timeout").perform(context)
    namespace = LaunchConfiguration("namespace").perform(context)
    certificate = LaunchConfiguration("kc_certificate").perform(context)
    if not Path(params_file).is_file():
        raise RuntimeError(f"params_file:={params_file!r} is not a file")
    if urdf_file and not Path(urdf_file).is_file():
        raise RuntimeError(f"urdf_file:={urdf_file!r} is not a file")
    if certificate and not Path(certificate).exists():
        raise RuntimeError(f"kc_certificate:={certificate!r} is no certificate file or directory")
    if base and base not in BASES:
        raise RuntimeError(f"base:={base!r} is not one of {', '.join(BASES)}")
    # Only the arguments given: values set in the YAML still count otherwise.
    overrides = {name: value for name, value in (("urdf_file", urdf_file), ("base", base),
                                                 ("kc_certificate", certificate)) if value}
    if timeout:
        try:
            overrides["base_state_timeout"] = float(timeout)
        except ValueError:
            raise RuntimeError(f"base_state_timeout:={timeout!r} is not a number of seconds") from None
        if not 0.0 <= overrides["base_state_timeout"] <= 3600.0:
            raise RuntimeError(f"base_state_timeout:={timeout!r} is not within 0 to 3600 s")
    try:
        validate_namespace(namespace if namespace.startswith("/") else "/" + namespace)
    except InvalidNamespaceException as error:
        raise RuntimeError(f"namespace:={namespace!r} is not a valid ROS namespace: {error}") from None
    return params_file, overrides


def _node(context):
    params_file, overrides = _checked_arguments(context)
    parameters = [params_file]
    if overrides:
        parameters.append(overrides)
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
            "base", default_value="",
            description="Root of the model: auto, fixed or floating (a free-flyer to the world, "
            "base state from the odom topic); empty: the params_file's value"),
        DeclareLaunchArgument(
            "base_state_timeout", default_value="",
            description="Floating base: seconds within which a joint state's odometry must be "
            "stamped; empty: the params_file's value"),
        DeclareLaunchArgument(
            "kc_certificate", default_value="",
            description="A K_c certificate file, or a directory searched for the served model's "
            "(robot_dynamics_certify); empty: the params_file's value"),
        DeclareLaunchArgument(
            "namespace", default_value="",
            description="Namespace of the node and of its robot_description and joint_states"),
        OpaqueFunction(function=_node),
    ])

"""The demo on a ROS 2 machine: the embedded PUMA 560 and the node as separate processes.

    ros2 launch robot_dynamics_ros robot_dynamics_demo.launch.py [namespace:=demo] [robot:=solo12]

robot_dynamics_demo --no-node publishes the PUMA's description (transient
local) and joint states of Mohan and Saha (2007) Eq. (38) at 500 Hz, and
prints the node's outputs once a second; robot_dynamics.launch.py starts the node.
With robot:=solo12 the robot is a quadruped with a floating base (its URDF
declares it, so the node's base parameter stays auto), streamed as joint
states and odometry; it needs the example-robot-data package. The PUMA's
node serves the PUMA's K_c certificates, as robot_dynamics_demo's does.
"""

import importlib.util
from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

HERE = Path(__file__).resolve().parent


def _node(context):
    """robot_dynamics.launch.py, with the PUMA's certificates for the PUMA
    (demo.puma.CERTIFICATES, found without importing the package's numerics)."""
    arguments = {"namespace": LaunchConfiguration("namespace").perform(context)}
    if LaunchConfiguration("robot").perform(context) == "puma":
        demo_puma = importlib.util.find_spec("robot_dynamics_ros.demo.puma").origin
        arguments["kc_certificate"] = str(Path(demo_puma).with_name("certificates"))
    return [IncludeLaunchDescription(
        PythonLaunchDescriptionSource(str(HERE / "robot_dynamics.launch.py")),
        launch_arguments=arguments.items(),
    )]


def generate_launch_description():
    namespace = LaunchConfiguration("namespace")
    return LaunchDescription([
        DeclareLaunchArgument("namespace", default_value="",
                              description="Namespace of the robot's publisher and the node"),
        DeclareLaunchArgument("robot", default_value="puma", choices=["puma", "solo12"],
                              description="puma (fixed base) or solo12 (floating base, needs "
                              "example-robot-data)"),
        # First: it checks the namespace before anything starts.
        OpaqueFunction(function=_node),
        # No name=: it would rename every node of the process (the stream and
        # the monitor) to one name, and their parameter services would collide.
        Node(
            package="robot_dynamics_ros",
            executable="robot_dynamics_demo",
            namespace=namespace,
            arguments=["--no-node", "--robot", LaunchConfiguration("robot")],
            output="screen",
        ),
    ])

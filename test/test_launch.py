"""The launch files build their descriptions wherever launch_ros is importable.

launch and launch_ros have no PyPI wheels: on a machine without ROS 2 this
module is skipped, and says so in the warnings summary of every run.
"""

import importlib.util
import warnings
from pathlib import Path

import pytest

try:
    import launch
    import launch_ros.actions
    from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
    from launch.utilities import perform_substitutions
except ImportError as error:
    reason = f"launch files not checked: launch_ros is not importable here ({error})"
    warnings.warn(reason)
    pytest.skip(reason, allow_module_level=True)

LAUNCH = Path(__file__).absolute().parent.parent / "launch"


def load(name):
    spec = importlib.util.spec_from_file_location(name.replace(".", "_"), LAUNCH / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate_launch_description()


def arguments(description):
    """Declared argument name -> default, evaluated in a fresh context."""
    context = launch.LaunchContext()
    return {e.name: perform_substitutions(context, e.default_value)
            for e in description.entities if isinstance(e, DeclareLaunchArgument)}


def test_node_launch_file_declares_its_arguments_and_starts_the_node():
    description = load("robot_dynamics.launch.py")
    defaults = arguments(description)
    assert set(defaults) == {"urdf_file", "params_file", "namespace"}
    assert Path(defaults["params_file"]).is_file()
    context = launch.LaunchContext()
    for entity in description.entities:
        if isinstance(entity, DeclareLaunchArgument):
            entity.visit(context)
    [opaque] = [e for e in description.entities if isinstance(e, OpaqueFunction)]
    [node] = opaque.execute(context)
    assert isinstance(node, launch_ros.actions.Node)
    assert (node.node_package, node.node_executable) == ("robot_dynamics_ros", "robot_dynamics_node")


def test_demo_launch_file_starts_the_puma_stream_and_includes_the_node():
    description = load("robot_dynamics_demo.launch.py")
    assert set(arguments(description)) == {"namespace"}
    [stream] = [e for e in description.entities if isinstance(e, launch_ros.actions.Node)]
    assert stream.node_executable == "robot_dynamics_demo"
    assert sum(isinstance(e, IncludeLaunchDescription) for e in description.entities) == 1

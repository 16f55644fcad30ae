"""The node's one parameter table against what users read: the shipped
config/robot_dynamics.yaml and ``robot_dynamics_node --help`` (no ROS here)."""

import pytest
from paths import REPO
from ruamel.yaml import YAML

from robot_dynamics_ros.node.cli import usage
from robot_dynamics_ros.node.parameters import BY_NAME, PARAMETERS, RUNTIME, descriptor


def flattened(tree: dict, prefix: str = "") -> dict:
    """A parameter file's nested mapping as ROS names it: ``a: {b: 1}`` is ``a.b``."""
    out = {}
    for key, value in tree.items():
        name = prefix + str(key)
        if isinstance(value, dict):
            out.update(flattened(value, name + "."))
        else:
            out[name] = value
    return out


@pytest.fixture(scope="module")
def shipped():
    document = YAML(typ="safe").load((REPO / "config" / "robot_dynamics.yaml").read_text())
    (node,) = document.values()
    return flattened(node["ros__parameters"])


def test_the_config_file_names_every_parameter_and_no_other(shipped):
    assert sorted(shipped) == sorted(BY_NAME)


def test_the_config_file_gives_the_table_defaults(shipped):
    for name, value in shipped.items():
        default = BY_NAME[name].default
        assert value == default and type(value) is type(default), (name, value, default)


def test_help_lists_every_parameter_with_its_default():
    text = usage()
    for parameter in PARAMETERS:
        assert f"  {parameter.name} (default " in text, parameter.name


def test_descriptors_carry_the_table():
    for parameter in PARAMETERS:
        made = descriptor(parameter)
        assert made.read_only == parameter.read_only and made.description == parameter.description
        if parameter.range is not None:
            (bounds,) = made.integer_range or made.floating_point_range
            assert (bounds.from_value, bounds.to_value) == parameter.range, parameter.name


def test_runtime_parameters_are_the_writable_ones():
    assert set(RUNTIME) == {"publish_christoffel", "payload.link", "payload.mass", "payload.com",
                            "payload.inertia"}

"""The node's parameters, declared from one table.

``PARAMETERS`` is the one place a parameter is defined: its name, default,
type, range and description. The node declares them from it
(``declare_parameters``), ``robot_dynamics_node --help`` lists them from it
(``usage_lines``), and a test holds config/robot_dynamics.yaml against it,
in the manner of ros2_controllers' generated parameter tables.

This module imports nothing of ROS at import time, so ``--help`` answers
before rclpy loads.
"""

from typing import NamedTuple, Optional, Tuple

# rcl_interfaces' ParameterType by name, resolved when the node declares
STRING, DOUBLE, DOUBLES, BOOL, INTEGER, ANY = (
    "PARAMETER_STRING", "PARAMETER_DOUBLE", "PARAMETER_DOUBLE_ARRAY", "PARAMETER_BOOL",
    "PARAMETER_INTEGER", None)


class Parameter(NamedTuple):
    name: str
    default: object
    type: Optional[str]  # None: dynamic typing (a list of strings, or "")
    description: str
    read_only: bool = True
    range: Optional[Tuple[float, float]] = None  # inclusive, for numbers
    choices: Tuple[str, ...] = ()  # for strings


PARAMETERS = (
    Parameter("robot_description", "", STRING,
              "URDF text; when set it takes precedence over urdf_file and the robot_description topic"),
    Parameter("urdf_file", "", STRING,
              "Path of a URDF file; when set (and robot_description is not) the topic is not used"),
    # Dynamically typed with "" for "model order": a parameter declared by
    # type alone is left out of GetParameters answers (ros2 param dump), and
    # an empty list cannot stand in a parameter file (it reads [] as no
    # value); "" round-trips through a dump.
    Parameter("joints", "", ANY,
              "Output joint order, a permutation of the actuated joints (a list of strings); "
              "\"\" (the default): model order"),
    Parameter("frames", "", ANY,
              "Task space: links (URDF names, fixed-joint children such as tool0 included) whose "
              "pose, Jacobian and Jdot v every DynamicsState carries, a list of strings; \"\" "
              "(the default): none; a link the model lacks refuses the model"),
    Parameter("gravity", [0.0, 0.0, -9.81], DOUBLES, "Gravity vector in the URDF root frame, m/s^2"),
    Parameter("publish_christoffel", False, BOOL,
              "Fill DynamicsState.christoffel_symbols on ~/state (nv^3 values per joint state)",
              read_only=False),
    Parameter("publish_arrays", False, BOOL,
              "Also publish the std_msgs/Float64MultiArray topics ~/mass_matrix, "
              "~/coriolis_matrix, ~/coriolis_bounds (and ~/christoffel_symbols with "
              "publish_christoffel), for tools that plot arrays; ~/state has all of it, stamped"),
    Parameter("mimic", "independent", STRING,
              "Mimic joints: independent (own coordinate) or reduce (follow their master)",
              choices=("independent", "reduce")),
    Parameter("base", "auto", STRING,
              "Root of the model: fixed (bolted to the world), floating (a free-flyer joint to "
              "the world; base state from odom) or auto (floating when the URDF declares a "
              "floating root joint)", choices=("auto", "fixed", "floating")),
    Parameter("base_state_timeout", 0.1, DOUBLE,
              "Floating base: a joint state is paired with the newest odometry stamped within "
              "this many seconds of it (before or after), else dropped", range=(0.0, 3600.0)),
    Parameter("payload.link", "", STRING, "Link that carries the parameter payload", read_only=False),
    Parameter("payload.mass", 0.0, DOUBLE,
              "Payload mass in kg, 0 to 1e9; 0 removes the payload of payload.link", read_only=False),
    Parameter("payload.com", [0.0, 0.0, 0.0], DOUBLES,
              "Payload centre of mass [x, y, z] in the link frame, m", read_only=False),
    Parameter("payload.inertia", [0.0] * 6, DOUBLES,
              "Payload inertia [ixx, ixy, ixz, iyy, iyz, izz] about its CoM in link axes, kg m^2",
              read_only=False),
    Parameter("identify_payload.window_size", 60_000, INTEGER,
              "Joint states with efforts kept (the newest) for ~/identify_payload, fixed base "
              "only: 60000 is a minute at 1 kHz, 8 (3 nv + 1) bytes each; 0: none kept, the "
              "service answers that it is off", range=(0, 10_000_000)),
    Parameter("kc_certificate", "", STRING,
              "A K_c certificate file (robot_dynamics_certify), or a directory searched for the "
              "certificate of each served model by its hash; a match serves its interval from "
              "the first output"),
    Parameter("kc_refinement.time_budget", 0.0, DOUBLE,
              "Seconds spent tightening the K_c interval of each served model without a "
              "certificate in a background process, which takes a core from the control loop "
              "(0, the default: keep the first guaranteed bound)", range=(0.0, 1e6)),
    Parameter("kc_refinement.memory_limit_mb", 160.0, DOUBLE,
              "Work memory of that refinement, MB", range=(1.0, 1e5)),
    Parameter("diagnostic_updater.period", 1.0, DOUBLE,
              "Seconds between two /diagnostics reports (the name diagnostic_updater gives its "
              "period)", range=(0.01, 3600.0)),
)
BY_NAME = {parameter.name: parameter for parameter in PARAMETERS}
# what a parameter request may change while the node runs (the model service's)
RUNTIME = tuple(p.name for p in PARAMETERS if not p.read_only)


def descriptor(parameter: Parameter):
    """The rcl_interfaces ParameterDescriptor of one row of the table."""
    from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, ParameterType

    extra = {}
    if parameter.type is None:
        extra["dynamic_typing"] = True
    else:
        extra["type"] = getattr(ParameterType, parameter.type)
    if parameter.choices:
        extra["additional_constraints"] = "one of: " + ", ".join(parameter.choices)
    if parameter.range is not None:
        low, high = parameter.range
        if parameter.type == INTEGER:
            extra["integer_range"] = [IntegerRange(from_value=low, to_value=high)]
        else:
            extra["floating_point_range"] = [FloatingPointRange(from_value=low, to_value=high)]
    return ParameterDescriptor(description=parameter.description, read_only=parameter.read_only, **extra)


def declare_parameters(node):
    """Every parameter of the table on ``node``; raises rclpy's
    ParameterException for a start value of the wrong type or out of range."""
    for parameter in PARAMETERS:
        node.declare_parameter(parameter.name, parameter.default, descriptor(parameter))


def usage_lines(width: int = 79):
    """The parameters as ``--help`` lists them: name, default, whether it is
    read-only, and the description, wrapped."""
    import textwrap

    for parameter in PARAMETERS:
        access = "read-only" if parameter.read_only else "changeable at run time"
        yield f"  {parameter.name} (default {_as_yaml(parameter.default)}, {access})"
        yield from textwrap.wrap(parameter.description, width, initial_indent="      ",
                                 subsequent_indent="      ")


def _as_yaml(value) -> str:
    """A default as a parameter file writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value or '""'
    if isinstance(value, list):
        return "[" + ", ".join(_as_yaml(v) for v in value) + "]"
    return repr(value)

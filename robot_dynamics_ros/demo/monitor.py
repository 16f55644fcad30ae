"""The demo's terminal: what the robot_dynamics node publishes, once a second.

Says what it waits for until the first outputs arrive, then prints a few
entries of M and g, ||C|| under its two bounds and the payload the node
serves; midway it puts a payload on the robot (the PUMA's last link, solo12's
trunk) through the node's parameter service, as a user would with ``ros2
param set``, so the change shows in the numbers.
"""

import time
from typing import NamedTuple, Tuple

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.msg import Log
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from robot_dynamics_ros.msg import DynamicsModel, DynamicsState
from robot_dynamics_ros.node.dynamics_node import NODE_NAME

SWAP_AFTER_FIRST_OUTPUT = 5.0  # s, when the run has no --duration to take the middle of
STARTUP_LIMIT = 300.0  # s without any output before the demo gives up (ample for a first run's compile)
# What rcl publishes /rosout with: a late subscriber still gets the lines before it.
ROSOUT_QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE,
                        durability=DurabilityPolicy.TRANSIENT_LOCAL)
LOG_LEVELS = {Log.DEBUG: "DEBUG", Log.INFO: "INFO", Log.WARN: "WARN", Log.ERROR: "ERROR", Log.FATAL: "FATAL"}


class DemoRobot(NamedTuple):
    """What the terminal shows of one demo robot."""

    name: str  # prefix of the demo's node names
    introduction: str  # its first lines, formatted with the rate
    units: str  # what the M and g columns are in
    payload: dict  # the parameters set midway
    matrix_entries: Tuple[int, int, int]  # diagonal entries of M shown
    gravity_entries: Tuple[int, int]  # entries of g shown


PUMA = DemoRobot(
    name="puma",
    introduction="""\
A simulated PUMA 560 tracks Mohan & Saha (2007) Eq. (38) and streams its joint
states at {rate:g} Hz to the robot_dynamics node, which answers each with M(q),
C(q, qd), the Coriolis bounds and g(q).""",
    units="M[i,i]   diagonal entries of the mass matrix, kg m^2; g[i]: gravity torques, N m",
    # A 2 kg tool 5 cm out along the last joint axis (inertia about its CoM, link axes).
    payload={"payload.link": "link6", "payload.mass": 2.0, "payload.com": [0.0, 0.0, 0.05],
             "payload.inertia": [0.002, 0.0, 0.0, 0.002, 0.0, 0.001]},
    matrix_entries=(0, 1, 2), gravity_entries=(1, 2))

SOLO12 = DemoRobot(
    name="solo12",
    introduction="""\
solo12 (example-robot-data) trots in place while its trunk rolls and sways; it
streams joint states and odometry (pose and twist of base_link) at {rate:g} Hz
to the robot_dynamics node, which serves it as a floating base (its URDF
declares a floating root joint): v = [base twist in base_link (6), 12 joints],
and M, C are 18 x 18.""",
    units=("M[0,0]   the robot's mass, kg (the base block of M is its composite inertia); "
           "M[3,3], M[4,4]: its\n           roll and pitch inertia about base_link, kg m^2; "
           "g[2]: the force along base_link's\n           z axis that holds it up, N; "
           "g[7]: gravity torque at FL_HFE, N m"),
    # A 2 kg pack on the trunk, 5 cm above base_link (inertia about its CoM, link axes).
    payload={"payload.link": "base_link", "payload.mass": 2.0, "payload.com": [0.0, 0.0, 0.05],
             "payload.inertia": [0.01, 0.0, 0.0, 0.01, 0.0, 0.01]},
    matrix_entries=(0, 3, 4), gravity_entries=(2, 7))

INTRODUCTION = """\
{introduction} Once a second:
  t        s since the demo started
  out/s    outputs received since the line before; latency: median joint state -> output
  {units}
  ||C||    ||C(q, qd)||_2 under its bounds k_c(q) ||qd|| and K_c ||qd||
  payload  the payload of the model these numbers come from (DynamicsState.model_revision
           names it in ~/model; a line is printed at the first outputs, then when the node
           reports, once a second)
{swap} the demo sets, on /{node}, through its parameter service
(SetParametersAtomically, as `ros2 param set` uses SetParameters):
  {payload}
"""


class Monitor(Node):
    """The demo's one writer on the terminal (all from the executor's thread).

    ``node_log``: also print the node's log lines, from /rosout (the demo
    runs the node in its process with console logging off).
    """

    def __init__(self, rate: float, duration=None, robot: DemoRobot = PUMA, node_log: bool = False):
        super().__init__(f"{robot.name}_demo_monitor")
        self._robot = robot
        self._start = time.monotonic()
        self._duration = duration
        self._first_output = None  # monotonic time of the first outputs
        self._swap_at = None
        self._outputs = 0
        self._latencies = []
        self._state = None  # the last DynamicsState
        self._payloads = {}  # model revision -> its payloads, as ~/model says
        self._diagnostics = None  # the node's last diagnostics values
        self._parameters = AsyncParameterClient(self, NODE_NAME)
        self.create_subscription(DynamicsState, f"{NODE_NAME}/state", self._on_state, 100)
        self.create_subscription(DynamicsModel, f"{NODE_NAME}/model", self._on_model, QoSProfile(
            depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 10)
        if node_log:
            self.create_subscription(Log, "/rosout", self._on_log, ROSOUT_QOS)
        self.create_timer(1.0, self._tick)
        swap = ("Midway through the run" if duration else
                f"{SWAP_AFTER_FIRST_OUTPUT:g} s after the first outputs")
        payload = " ".join(f"{name}:={value}" for name, value in robot.payload.items())
        print(INTRODUCTION.format(introduction=robot.introduction.format(rate=rate), units=robot.units,
                                  swap=swap, payload=payload, node=NODE_NAME), flush=True)
        print(f"{0.0:5.1f}  waiting for {self._waiting_for()}", flush=True)

    def finished(self) -> bool:
        """--duration seconds of outputs shown: the wait for the first ones does not count."""
        return (self._duration is not None and self._first_output is not None
                and time.monotonic() - self._first_output >= self._duration)

    def node_serves(self) -> bool:
        """The node has reported a model in its diagnostics."""
        return bool(self._diagnostics and self._diagnostics.get("model"))

    def gave_up(self) -> bool:
        return self._first_output is None and self._elapsed() > STARTUP_LIMIT

    def _elapsed(self) -> float:
        return time.monotonic() - self._start

    def _on_state(self, msg: DynamicsState):
        self._outputs += 1
        self._state = msg
        # The output carries its joint state's stamp: now - stamp is the latency.
        self._latencies.append(time.time() - (msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec))
        if self._swap_at is None:  # the first outputs: the table starts with them
            print(self._header(), flush=True)
            self._first_output = time.monotonic()
            t = self._elapsed()
            self._swap_at = t + (self._duration / 2 if self._duration else SWAP_AFTER_FIRST_OUTPUT)
            self._print_outputs(t)

    def _on_model(self, msg: DynamicsModel):
        self._payloads[msg.revision] = ";".join(
            f"{p.header.frame_id}:{p.inertia.m:g}kg" for p in msg.payloads) or "none"

    def _on_diagnostics(self, msg):
        """Print a line per report of the node (1 Hz): its payloads are then current, and the
        outputs received just before come from the same model (unless a swap fell in between)."""
        for status in msg.status:
            if status.name.startswith(NODE_NAME):
                self._diagnostics = {kv.key: kv.value for kv in status.values}
                if self._swap_at is not None:
                    self._print_outputs(self._elapsed())

    def _on_log(self, msg):
        if msg.name == NODE_NAME:
            level = LOG_LEVELS.get(msg.level, str(msg.level))
            print(f"{self._elapsed():5.1f}  {NODE_NAME} {level}: {msg.msg}", flush=True)

    def _tick(self):
        t = self._elapsed()
        if self._state is None:
            print(f"{t:5.1f}  waiting for {self._waiting_for()}", flush=True)
        elif self._swap_at <= t:
            self._swap_at = float("inf")
            self._set_payload()

    def _waiting_for(self) -> str:
        if self._diagnostics is None or not self._diagnostics.get("model"):
            return (f"the /{NODE_NAME} node's first model: it builds the robot and its K_c interval "
                    "(its certificate's, or a first guaranteed bound); a first run on this machine "
                    "also compiles the numba kernels (~30 s, during which this terminal may stay "
                    "silent; cached afterwards)")
        return "the node's first outputs (its model is ready)"

    def _header(self) -> str:
        matrix = " ".join(f"{f'M[{i},{i}]':>7}" for i in self._robot.matrix_entries)
        gravity = " ".join(f"{f'g[{i}]':>7}" for i in self._robot.gravity_entries)
        return (f"{'t':>5} {'out/s':>6} {'latency':>8} {matrix} {gravity}   "
                f"{'||C||':>6} <= {'k_c|qd|':>7} <= {'K_c|qd|':>7}  payload")

    def _print_outputs(self, t: float):
        state = self._state
        n = len(state.names)
        m, g = np.asarray(state.mass_matrix).reshape(n, n), state.gravity
        qd_norm = float(np.linalg.norm(state.velocity))
        latency = f"{1e3 * np.median(self._latencies):.2f}ms" if self._latencies else "-"
        payload = self._payloads.get(state.model_revision, "?")
        matrix = " ".join(f"{m[i, i]:7.3f}" for i in self._robot.matrix_entries)
        gravity = " ".join(f"{g[i]:7.2f}" for i in self._robot.gravity_entries)
        print(f"{t:5.1f} {self._outputs:6d} {latency:>8} {matrix} {gravity}   "
              f"{state.coriolis_norm:6.3f} <= {state.coriolis_bound:7.3f} <= "
              f"{state.kc_global * qd_norm:7.3f}  {payload}", flush=True)
        self._outputs = 0
        self._latencies = []

    def _set_payload(self):
        print(f"{self._elapsed():5.1f}  setting payload.* on /{NODE_NAME} (SetParametersAtomically) ...",
              flush=True)
        future = self._parameters.set_parameters_atomically(
            [Parameter(name, value=value) for name, value in self._robot.payload.items()])
        future.add_done_callback(self._on_payload_set)

    def _on_payload_set(self, future):
        result = future.result().result
        answer = "accepted" if result.successful else f"refused: {result.reason}"
        print(f"{self._elapsed():5.1f}  payload {answer}; the outputs switch once the new model "
              "is built", flush=True)

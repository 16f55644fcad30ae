"""The demo's terminal: what the robot_dynamics node publishes, once a second.

Says what it waits for until the first outputs arrive, then prints a few
entries of M and g, ||C|| under its two bounds and the payload the node
serves; midway it puts a payload on the PUMA's last link through the node's
parameter service, as a user would with ``ros2 param set``, so the change
shows in the numbers.
"""

import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from robot_dynamics_ros.messages import BOUNDS_FIELDS
from robot_dynamics_ros.node import NODE_NAME

# A 2 kg tool 5 cm out along the last joint axis (inertia about its CoM, link axes).
PAYLOAD = {"payload.link": "link6", "payload.mass": 2.0, "payload.com": [0.0, 0.0, 0.05],
           "payload.inertia": [0.002, 0.0, 0.0, 0.002, 0.0, 0.001]}
SWAP_AFTER_FIRST_OUTPUT = 5.0  # s, when the run has no --duration to take the middle of
STARTUP_LIMIT = 300.0  # s without any output before the demo gives up (a first run compiles ~30 s)
HEADER = (f"{'t':>5} {'out/s':>6} {'latency':>8} {'M[0,0]':>7} {'M[1,1]':>7} {'M[2,2]':>7} "
          f"{'g[1]':>7} {'g[2]':>7}   {'||C||':>6} <= {'k_c|qd|':>7} <= {'K_c|qd|':>7}  payload")
INTRODUCTION = """\
A simulated PUMA 560 tracks Mohan & Saha (2007) Eq. (38) and streams its joint
states at {rate:g} Hz to the robot_dynamics node, which answers each with M(q),
C(q, qd), the Coriolis bounds and g(q). Once a second:
  t        s since the demo started
  out/s    outputs received since the line before; latency: median joint state -> output
  M[i,i]   diagonal entries of the mass matrix, kg m^2; g[i]: gravity torques, N m
  ||C||    ||C(q, qd)||_2 under its bounds k_c(q) ||qd|| and K_c ||qd||
  payload  what the node serves (a line is printed when the node reports it)
{swap} the demo sets, on /{node}, through its parameter service
(SetParametersAtomically, as `ros2 param set` uses SetParameters):
  {payload}
"""


class Monitor(Node):
    def __init__(self, rate: float, duration=None):
        super().__init__("puma_demo_monitor")
        self._start = time.monotonic()
        self._duration = duration
        self._first_output = None  # monotonic time of the first outputs
        self._swap_at = None
        self._outputs = 0
        self._latencies = []
        self._mass = self._gravity = self._bounds = None
        self._diagnostics = None  # the node's last diagnostics values
        self._parameters = AsyncParameterClient(self, NODE_NAME)
        self.create_subscription(Float64MultiArray, f"{NODE_NAME}/mass_matrix", self._on_mass, 100)
        self.create_subscription(JointState, f"{NODE_NAME}/gravity_torques", self._on_gravity, 100)
        self.create_subscription(Float64MultiArray, f"{NODE_NAME}/coriolis_bounds", self._on_bounds, 100)
        self.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 10)
        self.create_timer(1.0, self._tick)
        swap = ("Midway through the run" if duration else
                f"{SWAP_AFTER_FIRST_OUTPUT:g} s after the first outputs")
        payload = " ".join(f"{name}:={value}" for name, value in PAYLOAD.items())
        print(INTRODUCTION.format(rate=rate, swap=swap, payload=payload, node=NODE_NAME), flush=True)
        print(f"{0.0:5.1f}  waiting for {self._waiting_for()}", flush=True)

    def finished(self) -> bool:
        """--duration seconds of outputs shown: the wait for the first ones does not count."""
        return (self._duration is not None and self._first_output is not None
                and time.monotonic() - self._first_output >= self._duration)

    def gave_up(self) -> bool:
        return self._first_output is None and self._elapsed() > STARTUP_LIMIT

    def _elapsed(self) -> float:
        return time.monotonic() - self._start

    def _on_mass(self, msg):
        self._outputs += 1
        n = int(round(len(msg.data) ** 0.5))
        self._mass = np.asarray(msg.data).reshape(n, n)

    def _on_gravity(self, msg):
        self._gravity = np.asarray(msg.effort)
        # The output carries its joint state's stamp: now - stamp is the latency.
        self._latencies.append(time.time() - (msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec))

    def _on_bounds(self, msg):
        self._bounds = dict(zip(BOUNDS_FIELDS, msg.data))

    def _on_diagnostics(self, msg):
        """Print a line per report of the node (1 Hz): its payloads are then current, and the
        outputs received just before come from the same model (unless a swap fell in between)."""
        for status in msg.status:
            if status.name.startswith(NODE_NAME):
                self._diagnostics = {kv.key: kv.value for kv in status.values}
                if self._swap_at is not None:
                    self._print_outputs(self._elapsed())

    def _tick(self):
        t = self._elapsed()
        if self._bounds is None or self._mass is None or self._gravity is None:
            print(f"{t:5.1f}  waiting for {self._waiting_for()}", flush=True)
        elif self._swap_at is None:
            print(HEADER, flush=True)
            self._first_output = time.monotonic()
            self._swap_at = t + (self._duration / 2 if self._duration else SWAP_AFTER_FIRST_OUTPUT)
        elif self._swap_at <= t:
            self._swap_at = float("inf")
            self._set_payload()

    def _waiting_for(self) -> str:
        if self._diagnostics is None or not self._diagnostics.get("model"):
            return (f"the /{NODE_NAME} node's first model: it builds the PUMA and searches its K_c; "
                    "a first run on this machine also compiles the numba kernels (~30 s, during "
                    "which this terminal may stay silent; cached afterwards)")
        return "the node's first outputs (its model is ready)"

    def _print_outputs(self, t: float):
        m, g, b = self._mass, self._gravity, self._bounds
        qd_norm = b["coriolis_bound"] / b["kc_config"] if b["kc_config"] > 0 else 0.0
        latency = f"{1e3 * np.median(self._latencies):.2f}ms" if self._latencies else "-"
        payload = (self._diagnostics or {}).get("payloads", "") or "none"
        print(f"{t:5.1f} {self._outputs:6d} {latency:>8} {m[0, 0]:7.3f} {m[1, 1]:7.3f} {m[2, 2]:7.3f} "
              f"{g[1]:7.2f} {g[2]:7.2f}   {b['coriolis_norm']:6.3f} <= {b['coriolis_bound']:7.3f} <= "
              f"{b['kc_global'] * qd_norm:7.3f}  {payload}", flush=True)
        self._outputs = 0
        self._latencies = []

    def _set_payload(self):
        print(f"{self._elapsed():5.1f}  setting payload.* on /{NODE_NAME} (SetParametersAtomically) ...",
              flush=True)
        future = self._parameters.set_parameters_atomically(
            [Parameter(name, value=value) for name, value in PAYLOAD.items()])
        future.add_done_callback(self._on_payload_set)

    def _on_payload_set(self, future):
        result = future.result().result
        answer = "accepted" if result.successful else f"refused: {result.reason}"
        print(f"{self._elapsed():5.1f}  payload {answer}; the outputs switch once the new model "
              "and its K_c are built", flush=True)

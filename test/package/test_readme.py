"""The README's commands that need no ROS command line run as written.

The Python API example runs on its own; the examples in examples/ (copied
verbatim into the README) and the README's `ros2 param set` sequence, sent
as the SetParameters requests that command makes, run against a live node
serving the PUMA, and what they print or change is checked against Pinocchio
and the node's diagnostics.
"""

import os
import re
import shlex
import subprocess
import sys
import threading

import numpy as np
import pytest
import yaml
from rclpy.parameter import Parameter

import robots
import ros_harness as harness
from robot_dynamics_ros.dynamics import puma_urdf

README = (harness.REPO / "README.md").read_text()
EXAMPLES = sorted((harness.REPO / "examples").glob("*.py"))
STARTUP_TIMEOUT = 180.0  # a first run on a machine compiles the numba kernels
PAYLOAD_TIMEOUT = 60.0  # generous: a loaded CI machine builds models slowly


def run_python(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.run([sys.executable, *args], cwd=harness.REPO, env=env,
                          capture_output=True, text=True, timeout=180)


def test_api_example_runs_and_its_checks_hold():
    [block] = [b for b in re.findall(r"```python\n(.*?)```", README, re.S) if "load_urdf(" in b]
    run = run_python("-c", block)
    assert run.returncode == 0, run.stderr
    # Lines ending in True/False are checks the example makes of itself.
    checks = re.findall(r": (True|False)$", run.stdout, re.M)
    assert len(checks) == 3 and set(checks) == {"True"}, run.stdout


def test_the_readme_shows_each_example_as_it_is():
    assert EXAMPLES
    for path in EXAMPLES:
        assert path.read_text() in README, f"the README's copy of examples/{path.name} differs from the file"


@pytest.fixture(scope="module")
def puma(tmp_path_factory):
    """The node as the demo runs it: the PUMA, its flange link6 a frame."""
    with harness.node_serving(puma_urdf(), "puma560_mohan_saha", tmp_path_factory.mktemp("readme"),
                              "-p", "frames:=[link6]") as (peer, _):
        yield peer


def served_payloads(peer, want: str):
    peer.diagnostics(lambda v: v["payloads"] == want and v["update_pending"] == "no", PAYLOAD_TIMEOUT)


class Streaming:
    """Joint states (q, qd) sent to the node every 20 ms while the block runs."""

    def __init__(self, peer, names, q, qd):
        self.peer, self.names, self.q, self.qd = peer, names, q, qd
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.wait(0.02):
            self.peer.joint_pub.publish(harness.joint_state(self.names, self.q, self.qd,
                                                            stamp_=self.peer.next_stamp()))

    def __enter__(self):
        self.thread.start()

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def numbers(text: str) -> np.ndarray:
    return np.array([float(x) for x in re.findall(r"-?\d+\.\d*(?:e[-+]?\d+)?", text)])


@pytest.fixture(scope="module")
def puma_oracle():
    pin_model = robots.load_pinocchio(puma_urdf())
    return robots.PinocchioOracle(pin_model, robots.pinocchio_joint_names(pin_model))


@pytest.mark.slow
def test_listen_example_prints_the_state_of_the_joint_states(puma, puma_oracle):
    q = np.array([0.3, -0.5, 0.8, 0.1, 0.3, -0.2])
    with Streaming(puma, puma_oracle.joint_names, q, np.zeros(6)):
        run = run_python("examples/listen_state.py")
    assert run.returncode == 0, run.stderr
    assert "model revision 1 (puma560_mohan_saha, payloads: none)" in run.stdout, run.stdout
    block = run.stdout[run.stdout.index("M(q) ="):run.stdout.index("||C||")]
    np.testing.assert_allclose(numbers(block).reshape(6, 6), puma_oracle.mass_matrix(q), atol=6e-4)


def test_computed_torque_example_pairs_by_stamp_and_gives_the_inverse_dynamics(puma, puma_oracle):
    """tau = M qdd_ref + C qd + g with qdd_ref = -KP q - KD qd is the inverse
    dynamics (Pinocchio's RNEA) at (q, qd, qdd_ref)."""
    q = np.array([0.3, -0.5, 0.8, 0.1, 0.3, -0.2])
    qd = np.array([0.5, -0.4, 0.3, 0.2, -0.1, 0.6])
    with Streaming(puma, puma_oracle.joint_names, q, qd):
        run = run_python("examples/computed_torque.py", "5")
    assert run.returncode == 0, run.stdout + run.stderr
    lines = [line for line in run.stdout.splitlines() if "tau =" in line]
    assert len(lines) >= 5, run.stdout
    want = puma_oracle.inverse_dynamics(q, qd, -100.0 * q - 20.0 * qd)
    for line in lines:
        np.testing.assert_allclose(numbers(line.split("tau =")[1]), want, atol=2e-6, rtol=1e-6)


def test_cartesian_impedance_example_gives_both_laws_from_pinocchio_s_kinematics(puma, puma_oracle):
    """With (q, qd) held, the target is the first pose moved by STEP and the
    error [STEP; 0]: tau = J^T (K e - D J qd) + C qd + g, and the
    operational-space form J^T Lambda (KP e - KD J qd - Jdot qd) + C qd + g,
    from Pinocchio's frame Jacobian and classical acceleration of link6
    (LOCAL_WORLD_ALIGNED) and its RNEA."""
    pin = robots.pin
    q = np.array([0.3, -0.5, 0.8, 0.1, 0.3, -0.2])
    qd = np.array([0.5, -0.4, 0.3, 0.2, -0.1, 0.6])
    with Streaming(puma, puma_oracle.joint_names, q, qd):
        run = run_python("examples/cartesian_impedance.py", "link6", "5")
    assert run.returncode == 0, run.stdout + run.stderr
    model, data = puma_oracle.model, puma_oracle.data
    fid = model.getFrameId("link6", pin.BODY)
    pq, pv = puma_oracle.q(q), puma_oracle.v(qd)
    pin.computeJointJacobians(model, data, pq)
    pin.forwardKinematics(model, data, pq, pv, np.zeros_like(pv))
    pin.updateFramePlacements(model, data)
    world = pin.LOCAL_WORLD_ALIGNED
    J = pin.getFrameJacobian(model, data, fid, world)[:, puma_oracle.order_v]
    Jdot_qd = pin.getFrameClassicalAcceleration(model, data, fid, world).vector
    bias = puma_oracle.inverse_dynamics(q, qd, np.zeros(6))  # C qd + g
    e = np.concatenate([[0.0, 0.0, -0.05], np.zeros(3)])
    K, D = np.diag([400.0] * 3 + [40.0] * 3), np.diag([40.0] * 3 + [4.0] * 3)
    impedance = J.T @ (K @ e - D @ (J @ qd)) + bias
    Lambda = np.linalg.inv(J @ np.linalg.solve(puma_oracle.mass_matrix(q), J.T))
    operational = J.T @ Lambda @ (100.0 * e - 20.0 * (J @ qd) - Jdot_qd) + bias
    lines = run.stdout.splitlines()
    laws = [line for line in lines if "tau =" in line and "operational" not in line]
    spaces = [line for line in lines if "operational space: tau =" in line]
    assert len(laws) >= 5 and len(spaces) == len(laws), run.stdout
    for line in laws:
        np.testing.assert_allclose(numbers(line.split("tau =")[1]), impedance, atol=2e-6, rtol=1e-6)
    for line in spaces:
        np.testing.assert_allclose(numbers(line.split("tau =")[1]), operational, atol=2e-6, rtol=1e-6)


def test_set_payload_example_puts_the_payload_on(puma):
    run = run_python("examples/set_payload.py", "link6", "2.0")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "payload 2 kg on link6: accepted" in run.stdout
    served_payloads(puma, "link6:2kg")
    puma.set_parameters([Parameter("payload.mass", value=0.0)])
    served_payloads(puma, "")


def test_the_readme_ros2_param_set_sequence_sets_a_whole_payload(puma):
    block = README[README.index("A whole payload"):]
    block = block[:block.index("\n\n", block.index("\n    ros2 param set"))]
    commands = [shlex.split(line) for line in block.splitlines() if line.startswith("    ros2 param set")]
    assert [c[4] for c in commands] == ["payload.link", "payload.com", "payload.inertia", "payload.mass"]
    for _, _, _, node, name, value in commands:
        assert node == "/robot_dynamics"
        # ros2 param set reads the value as YAML and sends one SetParameters request.
        [result] = puma.set_parameters([Parameter(name, value=yaml.safe_load(value))])
        assert result.successful, f"{name} {value}: {result.reason}"
    served_payloads(puma, "link6:2kg")

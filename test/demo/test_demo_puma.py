"""The demo's simulated PUMA (demo.puma): one control period against an
independent integration (scipy's Runge-Kutta with tight tolerances) of the
articulated-body forward dynamics, a second algorithm, under the same held
torque; and the computed-torque loop tracking Eq. (38) of Mohan and Saha."""
import numpy as np
import pytest

from robot_dynamics_ros import dynamics
from robot_dynamics_ros.demo.puma import KD, KP, SimulatedPuma, control_period, desired_motion

solve_ivp = pytest.importorskip("scipy.integrate", reason="the oracle integrates with scipy: "
                                "pip install scipy").solve_ivp


@pytest.fixture(scope="module")
def puma():
    return dynamics.load_urdf(dynamics.puma_urdf())


@pytest.mark.parametrize("t", [3.1, 5.0, 12.4])
def test_one_period_is_the_forward_dynamics_under_the_held_torque(puma, t):
    rng = np.random.default_rng(int(10 * t))
    q_d, qd_d, qdd_d = desired_motion(t)
    q, qd = q_d + 0.05 * rng.standard_normal(6), qd_d + 0.2 * rng.standard_normal(6)
    h = 0.002
    v = qdd_d + KP * (q_d - q) + KD * (qd_d - qd)
    tau = dynamics.inverse_dynamics(puma, q, qd, v)  # RNEA: the held torque, another algorithm

    def rate(_, x):
        return np.concatenate([x[6:], dynamics.forward_dynamics(puma, x[:6], x[6:], tau)])

    oracle = solve_ivp(rate, (0.0, h), np.concatenate([q, qd]), method="DOP853", rtol=1e-13, atol=1e-14)
    q1, qd1 = control_period(puma, t, q, qd, h)
    # RK4's local error over 2 ms, O(h^5): 5e-10 and 2e-9 at most here
    np.testing.assert_allclose(q1, oracle.y[:6, -1], rtol=0, atol=1e-8)
    np.testing.assert_allclose(qd1, oracle.y[6:, -1], rtol=0, atol=1e-7)
    # the held torque moves the robot otherwise than qdd = v would (by 3e-4
    # and more in qd here), so a plant that ignored the dynamics would fail
    assert np.abs(qd1 - (qd + h * v)).max() > 1e-4


def test_the_loop_tracks_the_trajectory(puma):
    simulation = SimulatedPuma(puma, 500.0)
    worst = 0.0
    for k in range(1, 1501):  # 3 s, past the motion's fastest part
        q, qd = simulation()
        worst = max(worst, np.abs(q - desired_motion(k / 500.0)[0]).max())
    # a 500 Hz loop at 10 rad/s: errors of milliradians, not the drift of an open loop
    assert worst < 0.02


def test_the_simulation_serves_the_pumas_certificate_and_runs_on_without_one(tmp_path, monkeypatch):
    """Its model takes the PUMA's K_c interval from the shipped certificate;
    a stale certificate (another method version) leaves the first bound and
    the same motion, not a failed demo."""
    import json
    import shutil

    from robot_dynamics_ros.demo import puma as demo_puma
    from robot_dynamics_ros.dynamics.kc import refinement_for

    served = dynamics.load_urdf(dynamics.puma_urdf())
    certified = SimulatedPuma(served, 500.0)()
    document = json.loads((demo_puma.CERTIFICATES / "puma560.kc.json").read_text())
    interval = refinement_for(served).interval
    assert (interval.lower, interval.upper) == (document["kc_global_lower"], document["kc_global"])
    stale = tmp_path / "certificates"
    shutil.copytree(demo_puma.CERTIFICATES, stale)
    for path in stale.glob("*.kc.json"):
        path.write_text(json.dumps(dict(json.loads(path.read_text()), method_version=0)))
    monkeypatch.setattr(demo_puma, "CERTIFICATES", stale)
    bare = dynamics.load_urdf(dynamics.puma_urdf())
    motion = SimulatedPuma(bare, 500.0)()
    assert refinement_for(bare).interval.upper > document["kc_global"]  # its first bound
    np.testing.assert_array_equal(motion[0], certified[0])
    np.testing.assert_array_equal(motion[1], certified[1])


_COMPILE_IN_TWO = """
import os
from numba.core import event
from robot_dynamics_ros import dynamics
from robot_dynamics_ros.demo import puma as demo_puma

compiled = []
class Listener(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__name__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Listener())
demo_puma.compile_kernels(dynamics.load_urdf(dynamics.puma_urdf()))
print(" ".join(compiled), flush=True)
os._exit(0)
"""


@pytest.mark.slow
def test_the_demos_compile_in_two_processes_compiles_each_kernel_once(tmp_path):
    """``compile_kernels`` hands a child the Christoffel recursion, Algorithm
    1 and the forward kinematics with the types ``compute_all_terms`` passes
    them: with an empty cache, this process then compiles none of them (a
    type that differed would compile them again, on the demo's longest
    path), and a second run compiles nothing at all."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, ROBOT_DYNAMICS_KERNEL_CACHE=str(tmp_path / "kernels"))
    runs = [subprocess.run([sys.executable, "-c", _COMPILE_IN_TWO], env=env, capture_output=True, text=True,
                           timeout=600, check=True).stdout.split() for _ in range(2)]
    first, second = runs
    assert {"compute_all_terms", "bound_values", "crba"} <= set(first)
    assert not {"christoffel_tree", "coriolis", "forward_kinematics", "body_velocities"} & set(first), first
    assert second == [], second

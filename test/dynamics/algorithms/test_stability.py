"""What papers 004 and 002 found about the numerical stability of forward dynamics.

The oracles are independent of the code under test: float64 results for the
float32 ones (paper 004, Table 5), and for the PUMA the desired trajectory of
paper 002 itself (its torques come from inverse dynamics, so the exact motion
is known). bench/bench_forward_dynamics.py prints the full tables.
"""
import numpy as np
import pytest

from stability_cases import (METHODS, ascher_table, deviation_times, power_balance,
                             puma_float32_errors, puma_forced_simulation, puma_model)

from robot_dynamics_ros.dynamics import DynamicsError, simulate

# The deviation tolerance of our Table 3 (paper 002 does not state one).
TRACK_TOL = 1e-4
# Simulated span in the test; the bench runs the paper's 10 s (both methods
# leave the trajectory after about 6 s, as the open-loop motion is unstable).
TRACK_SECONDS = 3.0


@pytest.mark.slow
def test_ascher_two_link_recursive_beats_cholesky_in_float32():
    cond, rows = ascher_table()
    # the example exists to make M ill-conditioned (paper 004, Fig. 2)
    assert cond.min() > 1e3
    rec, chol = rows["recursive"], rows["cholesky"]
    # both solve the same problem: single precision is near double in both
    for row in (rec, chol):
        assert np.all(row["max"] < 1e-2 * row["qdd_max"])
    # Table 5: the recursive method's single-precision error is the smaller,
    # on average and at worst, for both joints
    assert np.all(rec["mean"] < chol["mean"]), (rec["mean"], chol["mean"])
    assert np.all(rec["max"] < chol["max"]), (rec["max"], chol["max"])


@pytest.fixture(scope="module")
def puma_runs():
    model = puma_model()
    return model, {method: puma_forced_simulation(model, method, TRACK_SECONDS)
                   for method in METHODS}


def test_puma_forced_simulation_tracks_for_the_first_seconds(puma_runs):
    _, runs = puma_runs
    errors = {}
    for method, (sim, q_des, qd_des) in runs.items():
        assert sim.t[-1] == pytest.approx(TRACK_SECONDS)
        assert np.all(np.isinf(deviation_times(sim, q_des, TRACK_TOL))), method
        errors[method] = np.max(np.abs(sim.q - q_des))
        # Fig. 8: with no friction, the power put in along the desired motion
        # is the power of the simulated motion
        desired, simulated = power_balance(sim, qd_des)
        assert np.max(np.abs(desired - simulated)) <= 1e-6 * np.max(np.abs(desired))
    # In float64 both methods give qdd to ~1e-14, so the tracking error is the
    # integrator's (about 3e-8 rad at tolerance 1e-8): "not worse" can only
    # be checked to that resolution here; the float32 test below resolves it.
    assert errors["recursive"] <= errors["cholesky"] + 1e-9, errors


@pytest.mark.slow
def test_puma_float32_recursive_not_worse_than_cholesky():
    # Paper 002, Sec. 5: the recursion avoids the error amplification of
    # solving with the assembled (ill-conditioned) M.
    errors = puma_float32_errors(puma_model())
    rec, chol = errors["recursive"], errors["cholesky"]
    assert rec.mean() <= chol.mean() and rec.max() <= chol.max(), (
        rec.mean(), chol.mean(), rec.max(), chol.max())


def test_simulate_matches_an_integration_of_pinocchio_aba():
    # The same integrator on Pinocchio's forward dynamics: the two motions
    # agree to the integration tolerance.
    from scipy.integrate import solve_ivp

    from robots import PinocchioOracle, example_robot_urdf, load_pinocchio, pin

    from robot_dynamics_ros.dynamics import load_urdf
    path = example_robot_urdf("ur5_robot")
    model = load_urdf(path)
    oracle = PinocchioOracle(load_pinocchio(path), model.joint_names)
    n = model.nv
    q0 = np.linspace(-0.5, 0.5, n)
    gains = np.linspace(1.0, 3.0, n)

    def torque(t, q, qd):  # feedback, so that the torque depends on the state
        return -gains * qd + np.sin(t) * gains

    times = np.linspace(0.0, 1.0, 11)
    sim = simulate(model, q0, np.zeros(n), torque, 1.0, t_eval=times,
                   rtol=1e-10, atol=1e-12)

    def pin_rhs(t, y):
        q, qd = y[:n], y[n:]
        qdd = oracle.ours_vec(pin.aba(oracle.model, oracle.data, oracle.q(q),
                                      oracle.v(qd), oracle.v(torque(t, q, qd))))
        return np.concatenate((qd, qdd))

    ref = solve_ivp(pin_rhs, (0.0, 1.0), np.concatenate((q0, np.zeros(n))),
                    rtol=1e-10, atol=1e-12, t_eval=times)
    np.testing.assert_allclose(sim.t, times)
    np.testing.assert_allclose(sim.q, ref.y[:n].T, atol=1e-8)
    np.testing.assert_allclose(sim.qd, ref.y[n:].T, atol=1e-8)
    for k in (0, 5, 10):
        np.testing.assert_allclose(
            sim.qdd[k], pin_rhs(times[k], np.concatenate((sim.q[k], sim.qd[k])))[n:],
            atol=1e-9)
        np.testing.assert_allclose(sim.tau[k], torque(times[k], sim.q[k], sim.qd[k]))


def test_simulate_rejects_bad_input():
    model = puma_model()
    zero = np.zeros(model.nv)
    with pytest.raises(DynamicsError, match="q0 must have shape"):
        simulate(model, np.zeros(5), zero, lambda t, q, qd: zero, 1.0)
    with pytest.raises(DynamicsError, match="t_end"):
        simulate(model, zero, zero, lambda t, q, qd: zero, -1.0)
    # a torque function that returns NaN: named, never integrated into NaN states
    with pytest.raises(DynamicsError, match=r"tau\[2\]"):
        simulate(model, zero, zero,
                 lambda t, q, qd: np.where(np.arange(model.nv) == 2, np.nan, 0.0), 1.0)

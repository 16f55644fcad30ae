"""The numerical-stability experiments of papers 004 and 002, as functions.

Shared by ``test_stability.py`` (which asserts what the papers found) and
``bench/bench_forward_dynamics.py`` (which prints the full tables).

- Mata, Provenzano, Valero and Cuadrado, "Serial-robot dynamics algorithms
  for moderately large numbers of joints" (Mech. Mach. Theory 37, 2002),
  Sec. 5.1 and Table 5: Ascher's two-link arm, forward dynamics in single
  and double precision.
- Mohan and Saha, "A recursive, numerically stable, and efficient simulation
  algorithm for serial robots" (Multibody System Dynamics 17, 2007),
  Sec. 4.2, Table 3 and Fig. 8: forced simulation of their PUMA.
"""
import numpy as np

from robot_dynamics_ros.dynamics import (forward_dynamics, inverse_dynamics, load_urdf,
                                         mass_matrix, puma_urdf, simulate)
from robot_dynamics_ros.dynamics.algorithms.simulate import mohan_saha_trajectory

METHODS = ("recursive", "cholesky")

# Ascher's arm as paper 004 describes it: links 0.02 m wide, l1 = 0.02 m,
# l2 = 2.0 m, m1 = 0.1 kg. The text of m2 is unreadable ("0.00 kg"); 1.0 kg
# fits "a short light first link, a long second link" and gives the paper's
# magnitudes. Links are uniform bars 0.02 x 0.02 m in section.
ASCHER = {"l1": 0.02, "l2": 2.0, "m1": 0.1, "m2": 1.0, "width": 0.02}
# Gravity across the links (they lie along x at q = 0): along -y.
ASCHER_GRAVITY = (0.0, -9.81, 0.0)


def ascher_two_link_urdf(l1, l2, m1, m2, width):
    """Planar two-link arm: both joints about z, link i a bar along x."""
    def link(name, length, mass):
        i_along = mass * 2 * width ** 2 / 12
        i_across = mass * (length ** 2 + width ** 2) / 12
        return (f'<link name="{name}"><inertial><origin xyz="{length / 2!r} 0 0"/>'
                f'<mass value="{mass!r}"/><inertia ixx="{i_along!r}" ixy="0" ixz="0" '
                f'iyy="{i_across!r}" iyz="0" izz="{i_across!r}"/></inertial></link>')

    def joint(name, parent, child, x):
        return (f'<joint name="{name}" type="continuous"><parent link="{parent}"/>'
                f'<child link="{child}"/><origin xyz="{x!r} 0 0"/>'
                '<axis xyz="0 0 1"/></joint>')

    return ('<robot name="ascher_two_link"><link name="base"/>'
            + link("link1", l1, m1) + link("link2", l2, m2)
            + joint("joint1", "base", "link1", 0.0)
            + joint("joint2", "link1", "link2", l1) + "</robot>")


def ascher_table(step_deg=2.0):
    """Paper 004's Table 5: single vs double precision over a turn of body 2.

    q1 = 0, q2 = 0, 2, ..., 358 degrees, qd = 0, tau = 0. The angles are
    rounded to float32 first, so both precisions solve the same problem and
    the differences are the arithmetic's alone. Returns ``(cond, rows)``:
    cond(M) per angle and, per method, ``{"max": (2,), "mean": (2,)}`` of
    |qdd_float64 - qdd_float32| per joint (rad/s^2).
    """
    model = load_urdf(ascher_two_link_urdf(**ASCHER), gravity=ASCHER_GRAVITY)
    angles = np.radians(np.arange(0.0, 360.0, step_deg))
    q32 = np.stack([np.zeros_like(angles), angles], axis=1).astype(np.float32)
    zero32 = np.zeros_like(q32)
    q64, zero64 = q32.astype(np.float64), zero32.astype(np.float64)
    cond = np.linalg.cond(mass_matrix(model, q64))
    rows = {}
    for method in METHODS:
        double = forward_dynamics(model, q64, zero64, zero64, method=method)
        single = forward_dynamics(model, q32, zero32, zero32, method=method)
        diff = np.abs(double - single.astype(np.float64))
        rows[method] = {"max": diff.max(axis=0), "mean": diff.mean(axis=0),
                        "qdd_max": np.abs(double).max(axis=0)}
    return cond, rows


# Paper 002, Sec. 4.2: T = 10 s, every joint from 0 to pi, ode45 with
# tolerance 1e-8 and outputs every 1 ms.
PUMA_DURATION = 10.0
PUMA_RTOL = 1e-8
PUMA_ATOL = 1e-8


def puma_model():
    return load_urdf(puma_urdf())


def puma_forced_simulation(model, method, t_end, output_step=1e-3):
    """Open-loop simulation under the inverse-dynamics torques of eq. (38).

    Returns the ``Simulation`` and the desired ``(q, qd)`` at its times.
    """
    n = model.nv

    def torque(t, q, qd):  # feedforward only: the paper's "forced simulation"
        return inverse_dynamics(model, *mohan_saha_trajectory(t, n, PUMA_DURATION))

    times = np.arange(0.0, t_end + output_step / 2, output_step)
    sim = simulate(model, np.zeros(n), np.zeros(n), torque, times[-1], method=method,
                   rtol=PUMA_RTOL, atol=PUMA_ATOL, t_eval=times)
    q_des, qd_des, _ = mohan_saha_trajectory(sim.t, n, PUMA_DURATION)
    return sim, q_des, qd_des


def deviation_times(sim, q_des, tol):
    """Per joint: the first output time with |q - q_des| > tol (inf if never)."""
    out = []
    for j in range(q_des.shape[1]):
        beyond = np.flatnonzero(np.abs(sim.q[:, j] - q_des[:, j]) > tol)
        out.append(float(sim.t[beyond[0]]) if beyond.size else np.inf)
    return np.array(out)


def power_balance(sim, qd_des):
    """Fig. 8: desired power sum tau qd_des and simulated sum tau qd (W)."""
    return np.sum(sim.tau * qd_des, axis=1), np.sum(sim.tau * sim.qd, axis=1)


def puma_float32_errors(model, samples=1001):
    """|qdd - qdd_desired| per method in float32 along eq. (38), per sample.

    q and qd are rounded to float32 first and the torques are the float64
    inverse dynamics at those rounded values, so the desired qdd is the
    exact answer up to the float32 rounding of tau; this is the
    forward-dynamics error that a single-precision simulation integrates.
    """
    t = np.linspace(0.0, PUMA_DURATION, samples)
    q, qd, qdd = mohan_saha_trajectory(t, model.nv, PUMA_DURATION)
    q32, qd32 = q.astype(np.float32), qd.astype(np.float32)
    tau = inverse_dynamics(model, q32.astype(float), qd32.astype(float), qdd)
    return {method: np.abs(forward_dynamics(
        model, q32, qd32, tau.astype(np.float32), method=method).astype(float) - qdd)
        for method in METHODS}

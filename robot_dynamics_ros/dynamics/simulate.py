"""Simulating the robot: integrating forward dynamics over time.

The state is (q, qd); its derivative is (qd, qdd) with qdd from
``forward_dynamics`` for the torques a user function returns. This is the
"forced simulation" of Mohan and Saha, "A recursive, numerically stable, and
efficient simulation algorithm for serial robots" (Multibody System Dynamics
17, 2007), Sec. 4.2: torques from inverse dynamics along a desired trajectory,
integrated with a Runge-Kutta 4(5) method (their MATLAB ode45, here scipy's
``solve_ivp`` with ``RK45``, the same Dormand-Prince pair).
"""
from dataclasses import dataclass

import numpy as np

from .errors import DynamicsError
from .forward_dynamics import forward_dynamics
from .state import joint_array


@dataclass(frozen=True)
class Simulation:
    """A simulated motion: rows are the output times.

    ``t`` (T,), ``q``, ``qd``, ``qdd``, ``tau`` (T, n) in the order of
    ``model.joint_names``; ``tau`` is what the torque function returned at
    (t, q, qd) and ``qdd`` the forward dynamics for it. ``evaluations`` is
    the number of forward-dynamics calls the integrator made.
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray
    evaluations: int


def simulate(model, q0, qd0, torque, t_end, *, method="recursive",
             integrator="RK45", rtol=1e-8, atol=1e-10, max_step=np.inf,
             t_eval=None):
    """Integrate M(q) qdd + C(q, qd) qd + g(q) = torque(t, q, qd) from t = 0.

    ``torque(t, q, qd)`` returns the joint torques (n,) (feedforward, feedback
    or both); ``method`` is the forward-dynamics method ("recursive" or
    "cholesky"); ``integrator``, ``rtol``, ``atol``, ``max_step`` and
    ``t_eval`` (output times; default: the integrator's own steps) go to
    ``scipy.integrate.solve_ivp``. Cost per step: a few forward-dynamics
    calls, O(n) each for the recursive method.

    Fixed-base models only (``DynamicsError`` for a floating base).
    Raises ``StateError`` for bad q0, qd0 or torques (wrong shape, NaN) and
    ``DynamicsError`` when the forward dynamics fail (singular M) or the
    integrator gives up (for instance when the motion blows up).
    """
    # imported here: DESIGN.md keeps dynamics/ importable with numpy, numba
    # and urdf-parser-py alone; only simulating needs scipy
    from scipy.integrate import solve_ivp

    if model.floating:
        # q's quaternion is not the integral of qd's angular velocity: the
        # state would need integrating on the manifold (docs/floating_base.md)
        raise DynamicsError(
            f"simulate: model '{model.name}' has a floating base; only fixed-base "
            "models are simulated (q = integral of qd)")
    q0 = joint_array(model, q0, "q0")
    qd0 = joint_array(model, qd0, "qd0", like=q0)
    if q0.ndim != 1:
        raise DynamicsError(f"simulate takes one initial state (n,), got q0 {q0.shape}")
    t_end = float(t_end)
    if not (np.isfinite(t_end) and t_end > 0.0):
        raise DynamicsError(f"t_end must be a finite time > 0, got {t_end}")
    n = model.nv
    calls = 0

    def derivative(t, y):
        nonlocal calls
        calls += 1
        q, qd = y[:n], y[n:]
        qdd = forward_dynamics(model, q, qd, torque(t, q, qd), method=method)
        return np.concatenate((qd, qdd))

    result = solve_ivp(derivative, (0.0, t_end), np.concatenate((q0, qd0)),
                       method=integrator, rtol=rtol, atol=atol,
                       max_step=max_step, t_eval=t_eval)
    if not result.success:
        raise DynamicsError(f"simulation of model '{model.name}' stopped at "
                            f"t = {result.t[-1]:.6g} s: {result.message}")
    t = result.t
    q = np.ascontiguousarray(result.y[:n].T)
    qd = np.ascontiguousarray(result.y[n:].T)
    tau = np.array([torque(tk, qk, qdk) for tk, qk, qdk in zip(t, q, qd)],
                   dtype=float).reshape(len(t), n)
    qdd = forward_dynamics(model, q, qd, tau, method=method)
    return Simulation(t=t, q=q, qd=qd, qdd=qdd, tau=tau, evaluations=calls)


def mohan_saha_trajectory(t, n, duration=10.0):
    """The joint trajectory of Mohan and Saha (2007), eq. (38), for n joints.

    Every joint runs ``theta(t) = pi t / T - sin(2 pi t / T) / 2``, from 0 at
    t = 0 to pi at t = T, at rest at both ends. Returns ``(q, qd, qdd)``,
    each (n,) for a scalar t or (len(t), n) for an array of times.
    """
    t = np.asarray(t, dtype=float)
    w = 2.0 * np.pi / duration
    q = np.pi / duration * t - 0.5 * np.sin(w * t)
    qd = np.pi / duration * (1.0 - np.cos(w * t))
    qdd = np.pi / duration * w * np.sin(w * t)
    return tuple(np.repeat(x[..., None], n, axis=-1) for x in (q, qd, qdd))


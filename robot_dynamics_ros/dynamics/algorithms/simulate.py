"""Simulating the robot: integrating forward dynamics over time.

The state is (q, qd); its derivative is (qd, qdd) with qdd from
``forward_dynamics`` for the torques a user function returns. This is the
"forced simulation" of Mohan and Saha, "A recursive, numerically stable, and
efficient simulation algorithm for serial robots" (Multibody System Dynamics
17, 2007), Sec. 4.2: torques from inverse dynamics along a desired trajectory,
integrated with a Runge-Kutta 4(5) method (their MATLAB ode45, here scipy's
``solve_ivp`` with ``RK45``, the same Dormand-Prince pair).
"""
import reprlib
from dataclasses import dataclass

import numpy as np

from ..errors import DynamicsError, StateError, not_a_model
from .forward_dynamics import METHODS, forward_dynamics
from ..model.limits import MAX_ANGLE, MAX_LENGTH, real_numbers
from ..model.model import PRISMATIC, Model
from ..model.state import joint_array, raise_bad_input


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
    Raises ``StateError`` for bad q0, qd0 or torques (wrong shape, NaN, a
    q0 beyond the limits of ``limits``), ``DynamicsError`` naming any
    other argument that scipy would refuse or misread (before integrating),
    and ``DynamicsError`` when the forward dynamics fail (singular M) or
    the integrator gives up (for instance when the motion blows up).
    """
    # imported here: docs/design.md keeps dynamics/ importable with numpy, numba
    # and urdf-parser-py alone; only simulating needs scipy
    from scipy.integrate import solve_ivp

    q0, qd0 = _initial_state(model, q0, qd0)
    n = model.nv
    t_end, rtol, atol, max_step, t_eval = _solver_settings(
        n, torque, method, integrator, t_end, rtol, atol, max_step, t_eval)
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


def _initial_state(model, q0, qd0):
    """(q0, qd0) as arrays (n,) of a fixed-base ``Model``: ``DynamicsError``
    for a floating base or more than one state, ``StateError`` for a bad
    state (wrong shape, NaN, a q0 beyond the limits of ``limits``)."""
    if not isinstance(model, Model):
        raise not_a_model(model)
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
    raise_bad_input(model, 0, (("q0", q0), ("qd0", qd0)))
    _check_positions(model, q0)
    return q0, qd0


def _solver_settings(n, torque, method, integrator, t_end, rtol, atol, max_step, t_eval):
    """(t_end, rtol, atol, max_step, t_eval) checked for ``solve_ivp`` (n
    joints, a state of 2 n), after the torque function, the forward-dynamics
    method and the integrator: ``DynamicsError`` naming the first one at
    fault. Checked here, not left to scipy: it raises bare ValueErrors, or
    takes NaN and out-of-range values and fails later with another
    argument's name."""
    from scipy.integrate import OdeSolver

    if not callable(torque):
        raise DynamicsError(f"simulate: torque must be a function torque(t, q, qd), got {torque!r}")
    if method not in METHODS:
        raise DynamicsError(f"simulate: method must be one of {METHODS}, got {method!r}")
    if not (integrator in _INTEGRATORS
            or isinstance(integrator, type) and issubclass(integrator, OdeSolver)):
        raise DynamicsError(f"simulate: integrator must be one of {_INTEGRATORS} or a "
                            f"scipy OdeSolver class, got {integrator!r}")
    t_end = _setting(t_end, "t_end", "a finite time > 0", lambda t: (t > 0.0) & (t < np.inf))
    rtol = _setting(rtol, "rtol", f"finite and >= {_MIN_RTOL:.3g} (scipy raises smaller ones to "
                    f"that), one number or {2 * n}", lambda r: (r >= _MIN_RTOL) & (r < np.inf), 2 * n)
    atol = _setting(atol, "atol", f"finite and >= 0, one number or {2 * n}",
                    lambda a: (a >= 0.0) & (a < np.inf), 2 * n)
    max_step = _setting(max_step, "max_step", "a time > 0 (inf: no limit)", lambda h: h > 0.0)
    if t_eval is not None:
        t_eval = real_numbers(t_eval, "simulate: t_eval", DynamicsError)
        if not (t_eval.ndim == 1 and np.all((t_eval >= 0.0) & (t_eval <= t_end))
                and np.all(np.diff(t_eval) > 0.0)):
            raise DynamicsError(f"simulate: t_eval must be increasing times within [0, t_end = "
                                f"{t_end:g}], got {reprlib.repr(t_eval.tolist())}")
    return t_end, rtol, atol, max_step, t_eval


# What solve_ivp takes by name; below 100 ulps it raises rtol with a warning.
_INTEGRATORS = ("RK45", "RK23", "DOP853", "Radau", "BDF", "LSODA")
_MIN_RTOL = 100 * np.finfo(float).eps


def _setting(value, name, requirement, valid, size=None):
    """A setting of the integrator as a float (or, where ``size`` is given,
    an array of that many), when ``valid`` holds for it, else
    ``DynamicsError`` naming ``name`` and ``requirement``."""
    array = real_numbers(value, f"simulate: {name}", DynamicsError)
    if array.shape not in ((), (size,)) or not np.all(valid(array)):
        raise DynamicsError(f"simulate: {name} must be {requirement}, got {reprlib.repr(value)}")
    return array if array.shape else float(array)


def _check_positions(model, q0):
    """``StateError`` naming the first joint of q0 beyond the limits of
    ``limits`` (an angle beyond MAX_ANGLE has no digits left in its cosine)."""
    _, _, kinds = model.joint_limits()
    limit = np.where(kinds == PRISMATIC, MAX_LENGTH, MAX_ANGLE)
    beyond = np.flatnonzero(~(np.abs(q0) <= limit))
    if beyond.size:
        k = int(beyond[0])
        raise StateError(f"q0[{k}] (joint '{model.joint_names[k]}') is {q0[k]}, beyond the "
                         f"limit of {limit[k]:g} in magnitude")


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

"""The demo's PUMA 560 under computed-torque control (no ROS here).

Tracks the trajectory of Mohan and Saha (2007), "A recursive, numerically
stable, and efficient simulation algorithm for serial robots", Eq. (38).

``python -m robot_dynamics_ros.demo.puma`` compiles the kernels a first demo
runs, on two cores (``compile_kernels``; ``scripts/run.sh`` starts it while
it builds the messages).

The PUMA's K_c certificates, without a payload and with the demo's, ship in
``CERTIFICATES`` (made by ``scripts/demo_certificates.py``): the demo's node
and its simulation serve them, so the demo shows K_c as tight as certified
from its first output and never computes (nor compiles) a first bound.
"""
import os
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numba
import numpy as np

from robot_dynamics_ros import dynamics
from robot_dynamics_ros.dynamics.bounds.coriolis_bounds import bound_values
from robot_dynamics_ros.dynamics.algorithms.christoffel import christoffel_tree
from robot_dynamics_ros.dynamics.algorithms.coriolis import coriolis
from robot_dynamics_ros.dynamics.algorithms.crba import crba
from robot_dynamics_ros.dynamics.kc.certificate import CertificateError, serve_certificate
from robot_dynamics_ros.dynamics.algorithms.kinematics import composite_inertias, forward_kinematics
from robot_dynamics_ros.dynamics.model.records import data_type
from robot_dynamics_ros.dynamics.precompile import on_a_wide_stack
from robot_dynamics_ros.dynamics.algorithms.rnea import gravity
from robot_dynamics_ros.dynamics.algorithms.simulate import mohan_saha_trajectory

CERTIFICATES = Path(__file__).resolve().with_name("certificates")

PERIOD = 10.0  # T of Eq. (38): 0 to pi in 10 s
# Error dynamics e'' + KD e' + KP e = 0 (critically damped, 10 rad/s): without
# feedback the motion drifts off after ~5.5 s (Mohan and Saha, Sec. 4.2)
KP, KD = 100.0, 20.0


def desired_motion(t: float, n: int = 6):
    """q, qd, qdd of Eq. (38) for all n joints, and back again.

    Eq. (38) goes from rest at 0 to rest at pi in T; past T it runs back the
    same way, so the motion can go on for ever, smooth (C2).
    """
    s = t % (2 * PERIOD)
    if s <= PERIOD:
        return mohan_saha_trajectory(s, n, PERIOD)
    q, qd, qdd = mohan_saha_trajectory(2 * PERIOD - s, n, PERIOD)
    return q, -qd, qdd


def _dynamics(model, q, qd):
    """M(q) and C(q, qd) qd + g(q), from the kernel the node runs."""
    terms = dynamics.all_terms(model, q, qd, christoffel=False)
    return terms.mass_matrix, terms.coriolis_matrix @ qd + terms.gravity_torques


def _acceleration(model, q, qd, tau):
    mass, bias = _dynamics(model, q, qd)
    return np.linalg.solve(mass, tau - bias)


def control_period(model, t: float, q, qd, h: float):
    """(q, qd) at t + h under computed-torque control from (q, qd) at t.

    A digital controller holds its torque over the period:
    ``tau = M(q) v + C(q, qd) qd + g(q)`` with
    ``v = qdd_d + KP (q_d - q) + KD (qd_d - qd)`` at t. Meanwhile the robot
    moves by ``M(q) qdd = tau - C(q, qd) qd - g(q)``, integrated with the
    classic fourth-order Runge-Kutta method in one step. M, C and g come from
    ``dynamics.all_terms``, the kernel the node runs for every joint state:
    a first run on a machine compiles it once for both (docs/benchmarks.md,
    "First start").
    """
    q_d, qd_d, qdd_d = desired_motion(t, model.nv)
    mass, bias = _dynamics(model, q, qd)
    v = qdd_d + KP * (q_d - q) + KD * (qd_d - qd)
    tau = mass @ v + bias
    k1q, k1v = qd, v  # at the period's start the torque gives qdd = v exactly
    k2q = qd + h / 2 * k1v
    k2v = _acceleration(model, q + h / 2 * k1q, k2q, tau)
    k3q = qd + h / 2 * k2v
    k3v = _acceleration(model, q + h / 2 * k2q, k3q, tau)
    k4q = qd + h * k3v
    k4v = _acceleration(model, q + h * k3q, k4q, tau)
    return (q + h / 6 * (k1q + 2 * k2q + 2 * k3q + k4q),
            qd + h / 6 * (k1v + 2 * k2v + 2 * k3v + k4v))


class SimulatedPuma:
    """Joint states of the PUMA from rest at the start of Eq. (38), one
    control period (``control_period``) of 1 / rate apart. The next second
    is simulated on a thread of its own while this one streams, so the
    executor never waits for the integrator."""

    def __init__(self, model, rate: float):
        try:
            serve_certificate(model, CERTIFICATES)  # the PUMA's K_c interval: no first bound to compute
        except CertificateError:
            pass  # stale (test_demo_certificates says so): the first bound, and the motion is the same
        self._model = model
        self._rate = rate
        self._k = 0
        self._state = (np.zeros(model.nv), np.zeros(model.nv))
        self._samples = iter(())
        self._simulator = ThreadPoolExecutor(max_workers=1, thread_name_prefix="puma_sim")
        self._coming = self._simulator.submit(self._next_second)

    def _next_second(self):
        states = []
        for _ in range(max(1, round(self._rate))):
            self._state = control_period(self._model, self._k / self._rate, *self._state, 1.0 / self._rate)
            self._k += 1
            states.append(self._state)
        return states

    def __call__(self):
        """The next (q, qd), 1 / rate seconds after the previous one."""
        sample = next(self._samples, None)
        if sample is None:
            self._samples = iter(self._coming.result())
            self._coming = self._simulator.submit(self._next_second)
            sample = next(self._samples)
        return sample


def compile_kernels(model):
    """Compile into numba's cache what the demo runs on the PUMA (a chain):
    ``all_terms`` without Gamma (the K_c interval comes from the
    certificate), on two cores.

    numba compiles one function at a time and a first demo waits for it.
    So a forked child compiles the Christoffel symbols' recursion, Algorithm
    1 and the forward kinematics while this process compiles the records'
    constructors (making the model's data), the bounds, the mass matrix, the
    composite inertias and gravity, each with the argument types
    ``compute_all_terms`` passes it (its ``data.model`` and ``data``, whose
    type ``records.data_type`` knows before the constructors are compiled;
    one-dimensional arrays of any strides, the rest C-contiguous: ``calls``).
    Then one second of the motion compiles ``compute_all_terms`` itself,
    which finds its callees in the cache. Without ``os.fork``, all in this
    process. ``python -m`` runs it from a wide frame
    (``precompile.on_a_wide_stack``).
    """
    data = data_type(model, np.dtype(np.float64))
    record, blocks = data.field_dict["model"], data.field_dict["blocks"]
    vector = numba.types.Array(numba.float64, 1, "A")
    matrix = numba.types.Array(numba.float64, 2, "C")
    tensor = numba.types.Array(numba.float64, 3, "C")
    halves = (((christoffel_tree, (record, data, blocks)), (coriolis, (record, data, vector, matrix)),
               (forward_kinematics, (record, data, vector))),
              ((bound_values, (data, tensor, matrix, vector, vector)), (crba, (record, data, matrix)),
               (composite_inertias, (record, data)), (gravity, (record, data, vector))))
    child = os.fork() if hasattr(os, "fork") else None
    if child == 0:
        status = 1
        try:
            for kernel, types in halves[0]:
                kernel.compile(types)
            status = 0
        except Exception:
            traceback.print_exc()  # the compile below does what is left
        finally:
            os._exit(status)
    model.data(np.dtype(np.float64))
    for kernel, types in halves[1] if child else halves[0] + halves[1]:
        kernel.compile(types)
    if child:
        os.waitpid(child, 0)
    SimulatedPuma(model, 500.0)()


if __name__ == "__main__":
    on_a_wide_stack(compile_kernels, dynamics.load_urdf(dynamics.puma_urdf()))
    os._exit(0)  # the next second, already under way on the simulation's thread, is not needed

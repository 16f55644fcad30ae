"""The demo's PUMA 560 under computed-torque control (no ROS here).

Tracks the trajectory of Mohan and Saha (2007), "A recursive, numerically
stable, and efficient simulation algorithm for serial robots", Eq. (38),
with the package's own inverse and forward dynamics (``dynamics.simulate``).

``python -m robot_dynamics_ros.demo_puma`` simulates one second and exits:
the process that compiles the simulation's kernels on a first run
(``SimulatedPuma``).
"""
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from robot_dynamics_ros import dynamics
from robot_dynamics_ros.dynamics.forward_dynamics import _articulated_body
from robot_dynamics_ros.dynamics.rnea import _inverse_dynamics
from robot_dynamics_ros.dynamics.simulate import mohan_saha_trajectory

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


class SimulatedPuma:
    """Joint states of the PUMA simulated under computed-torque control.

    ``tau = ID(q, qd, qdd_d + KP (q_d - q) + KD (qd_d - qd))``, integrated
    with ``dynamics.simulate`` one second at a time, sampled at ``rate`` Hz.
    The next second is simulated on a thread of its own while this one
    streams, so the executor never waits for the integrator.

    On a first run (numba's cache without the simulation's kernels) they are
    compiled by a process of their own (``compile_apart``), beside this one,
    where the node compiles its model's kernels meanwhile: numba compiles
    one function at a time in a process, so the two would take turns
    (docs/benchmarks.md, "A lighter cold start").
    """

    def __init__(self, model, rate: float, *, compile_apart=True):
        self._model = model
        self._compiler = compile_apart and _compiler_process()
        self._rate = rate
        self._t0 = 0.0
        self._state = (np.zeros(model.nv), np.zeros(model.nv))
        self._samples = iter(())
        self._simulator = ThreadPoolExecutor(max_workers=1, thread_name_prefix="puma_sim")
        self._coming = self._simulator.submit(self._next_second)

    def _torque(self, t, q, qd):
        q_d, qd_d, qdd_d = desired_motion(self._t0 + t, self._model.nv)
        return dynamics.inverse_dynamics(
            self._model, q, qd, qdd_d + KP * (q_d - q) + KD * (qd_d - qd))

    def _next_second(self):
        if self._compiler:
            self._compiler.wait()  # then the kernels load from numba's cache
            self._compiler = None
        times = np.arange(0.0, 1.0, 1.0 / self._rate)
        motion = dynamics.simulate(self._model, *self._state, self._torque, 1.0,
                                   rtol=1e-6, atol=1e-8, t_eval=times)
        end = dynamics.simulate(self._model, motion.q[-1], motion.qd[-1],
                                lambda t, q, qd: self._torque(times[-1] + t, q, qd),
                                1.0 - times[-1], rtol=1e-6, atol=1e-8)
        self._t0 += 1.0
        self._state = (end.q[-1], end.qd[-1])
        return zip(motion.q, motion.qd)

    def __call__(self):
        """The next (q, qd), 1 / rate seconds after the previous one."""
        sample = next(self._samples, None)
        if sample is None:
            self._samples = self._coming.result()
            self._coming = self._simulator.submit(self._next_second)
            sample = next(self._samples)
        return sample


def _compiler_process():
    """``python -m robot_dynamics_ros.demo_puma`` when numba's cache lacks
    the simulation's kernels (inverse dynamics, articulated-body forward
    dynamics) for their current source; None when it has them."""
    try:
        cached = all(kernel._cache._cache_file._load_index() for kernel in (_inverse_dynamics, _articulated_body))
    except AttributeError:  # numba's cache internals moved: compile here, as without this
        cached = True
    if cached:
        return None
    return subprocess.Popen([sys.executable, "-m", "robot_dynamics_ros.demo_puma"], env=os.environ,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    SimulatedPuma(dynamics.load_urdf(dynamics.puma_urdf()), 500.0, compile_apart=False)()
    os._exit(0)  # the next second, already under way on the simulation's thread, is not needed

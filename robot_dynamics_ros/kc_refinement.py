"""Tightening K_c in the background, off the node's hot path, without ROS.

A served model publishes its first guaranteed K_c bound at once (the fast,
configuration-independent bound of ``dynamics.coriolis_constant``); this
thread then refines the interval [kc_global_lower, kc_global] of the model
being served, in short steps, under a time budget per model. The outputs read
the model's current interval on every joint state, so they tighten as it does
and never wait for it: the upper end only decreases and the lower end only
increases (the refinement's contract).

When the node serves another model (a new description or a payload swap), the
thread moves to that model at the end of its current step and the old
model's refinement is dropped with it. The thread runs at a lower priority
(nice), and the refinement's numerics run in compiled code without the GIL,
so the executor thread keeps its latency.
"""

import os
import sys
import threading
import time
from typing import Optional

from robot_dynamics_ros.dynamics.coriolis_constant import refinement_for

STEP_SECONDS = 0.1  # one refinement step: how late a model switch or a stop is noticed


class KcRefiner:
    """Refines the K_c interval of one model at a time on its own thread.

    ``time_budget``: seconds of refinement per model (0 turns refinement off:
    the fast bound stays); ``memory_limit_mb``: the refinement's bound on its
    own work memory.
    """

    def __init__(self, *, time_budget: float, memory_limit_mb: float, niceness: int = 0):
        self._time_budget = float(time_budget)
        self._memory_limit_mb = float(memory_limit_mb)
        self._niceness = niceness
        self._wake = threading.Condition()
        self._model = None
        self._spent = 0.0  # seconds spent on _model
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="kc_refinement", daemon=True)

    def refinement(self, model):
        """The model's refinement with this refiner's memory limit (its first
        bound is computed here, in milliseconds, if not yet)."""
        return refinement_for(model, memory_limit_mb=self._memory_limit_mb)

    def start(self):
        self._thread.start()

    def stop(self, timeout: float = 5.0):
        with self._wake:
            self._stopping = True
            self._wake.notify()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def follow(self, model):
        """Refine ``model`` from now on (the one being served)."""
        with self._wake:
            if model is not self._model:
                self._model, self._spent = model, 0.0
                self._wake.notify()

    def status(self, model) -> dict:
        """The interval of ``model`` and where its refinement stands, for diagnostics."""
        interval = self.refinement(model).interval
        with self._wake:
            spent = self._spent if model is self._model else 0.0
        if interval.finished:
            state = "done"
        elif self._time_budget <= 0.0 or spent >= self._time_budget:
            state = "budget spent"
        else:
            state = "running"
        return {
            "kc_global": f"{interval.upper:.6g}",
            "kc_global_lower": f"{interval.lower:.6g}",
            "kc_gap": f"{interval.upper / interval.lower:.4g}" if interval.lower > 0 else "",
            "kc_refinement": state,
            "kc_refinement_s": f"{spent:.1f}",
        }

    def _next(self) -> Optional[object]:
        """The model to refine next, waiting while there is none."""
        with self._wake:
            while True:
                if self._stopping:
                    return None
                model = self._model
                if (model is not None and self._spent < self._time_budget
                        and not self.refinement(model).interval.finished):
                    return model
                self._wake.wait()

    def _loop(self):
        if self._niceness and sys.platform == "linux":
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), self._niceness)
        while True:
            model = self._next()
            if model is None:
                return
            step = min(STEP_SECONDS, self._time_budget - self._spent)
            start = time.monotonic()
            self.refinement(model).refine(step)
            with self._wake:
                if model is self._model:
                    self._spent += time.monotonic() - start

"""Tightening K_c in the background, off the node's hot path, without ROS:
opt-in (``DEFAULT_TIME_BUDGET`` is 0), since the process takes a core from
the control loop. A model with a certificate needs none: the certificate's
interval is served from the first output (``dynamics.kc.certificate.serve_certificate``).

A served model publishes its first guaranteed K_c bound at once (the fast,
configuration-independent bound of ``dynamics.kc``); a worker
process then refines the interval [kc_global_lower, kc_global] of the model
being served, in short steps, under a time budget per model, and sends each
step's interval back. The outputs read the model's current interval on every
joint state, so they tighten as it does and never wait for it: the upper end
only decreases and the lower end only increases (the refinement's contract,
kept when an interval arrives: ``CoriolisConstantRefinement.merge``).

A process, not a thread: a thread of the node's process shares its GIL, and
every return of the refinement's compiled kernels to Python would make the
executor wait for it; a process leaves the node's compute time as it is
without refinement (docs/benchmarks-archive.md, "The node while its
refinement runs (archive)"). What the process still costs the node is the
core it takes, which a small machine's control loop needs
(docs/benchmarks.md, "With K_c refinement or a certificate"). It runs at
nice 10 (the node's choice); not as a thread at SCHED_IDLE, whose GIL the
executor would wait for while the scheduler keeps that thread off the
cores.

When the node serves another model (a new description or a payload swap),
the worker moves to it at the end of its current step and the old model's
refinement is dropped with it.
"""

import os
import socket
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Optional

from robot_dynamics_ros.dynamics.kc import refinement_for
from robot_dynamics_ros.node.parameters import BY_NAME

STEP_SECONDS = 0.1  # one refinement step: how late a model switch or a stop is noticed
# the node's parameters' defaults (its one table): no refinement unless asked
DEFAULT_TIME_BUDGET = BY_NAME["kc_refinement.time_budget"].default
DEFAULT_MEMORY_LIMIT_MB = BY_NAME["kc_refinement.memory_limit_mb"].default


class KcRefiner:
    """Refines the K_c interval of one model at a time in a worker process.

    ``time_budget``: seconds of refinement per model (0, the default, turns
    refinement off: the fast bound, or a certificate's interval, stays);
    ``memory_limit_mb``: the refinement's bound on its
    own work memory; ``niceness``: the worker's nice value.
    """

    def __init__(self, *, time_budget: float = DEFAULT_TIME_BUDGET,
                 memory_limit_mb: float = DEFAULT_MEMORY_LIMIT_MB,
                 niceness: int = 0):
        self._time_budget = float(time_budget)
        self._memory_limit_mb = float(memory_limit_mb)
        self._lock = threading.Lock()  # the fields below, and sends on the pipe
        self._model = None
        self._token = 0  # which model the worker's messages are about
        self._spent = 0.0  # seconds the worker spent on _model
        self._exited = False  # the worker ended before stop() (killed, out of memory)
        self._arguments = [str(self._time_budget), str(self._memory_limit_mb), str(niceness)]
        self._process: Optional[subprocess.Popen] = None
        self._pipe: Optional[Connection] = None
        self._receiver = threading.Thread(target=self._receive, name="kc_refinement_results", daemon=True)

    def refinement(self, model):
        """The model's refinement in this process, which the outputs read
        (its first bound is computed here, O(nb^3) without a search, if not
        yet)."""
        return refinement_for(model, memory_limit_mb=self._memory_limit_mb)

    def stop(self, timeout: float = 5.0):
        if self._process is None:
            return
        with self._lock:
            try:
                self._pipe.send(("stop",))
            except OSError:
                pass  # the worker has gone
        try:
            self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout)
        self._receiver.join(timeout)
        self._pipe.close()

    def _start_worker(self):
        """``python -m robot_dynamics_ros.node.kc_refinement``, not multiprocessing:
        its spawn would run the caller's main module again, and fork copies a
        process whose DDS threads hold locks.

        The worker runs in a process group of its own, so a terminal's Ctrl-C
        (sent to the node's whole group) reaches only the node, which then
        stops the worker through the pipe. In the node's group the worker
        could be interrupted before it had set up anything, while Python
        itself was starting ("Fatal Python error: init_import_site ...
        KeyboardInterrupt") or importing numba."""
        ours, theirs = socket.socketpair()
        package_root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        command = [sys.executable, "-m", "robot_dynamics_ros.node.kc_refinement", str(theirs.fileno())]
        self._process = subprocess.Popen(command + self._arguments, pass_fds=(theirs.fileno(),),
                                         env=env, stdin=subprocess.DEVNULL, process_group=0)
        theirs.close()  # so that the worker's exit ends _receive
        self._pipe = Connection(ours.detach())
        self._receiver.start()

    def follow(self, model):
        """Refine ``model`` from now on (the one being served)."""
        with self._lock:
            if model is self._model:
                return
            self._model, self._spent = model, 0.0
            self._token += 1
            if self._time_budget <= 0.0:
                return
            if self._process is None:
                # started with the first model served, not with the node: its
                # start (a Python importing numpy and numba) does not
                # compete with building that model
                self._start_worker()
            try:
                self._pipe.send(("model", self._token, model))
            except OSError:
                pass  # the worker has exited: _receive saw it, status says so

    def status(self, model) -> dict:
        """The interval of ``model`` and where its refinement stands, for diagnostics."""
        interval = self.refinement(model).interval
        with self._lock:
            spent = self._spent if model is self._model else 0.0
        if interval.finished:
            state = "done"
        elif self._time_budget <= 0.0 or spent >= self._time_budget:
            state = "budget spent"
        elif self._exited:
            state = "stopped: its process exited"
        else:
            state = "running"
        return {
            "kc_global": f"{interval.upper:.6g}",
            "kc_global_lower": f"{interval.lower:.6g}",
            "kc_gap": f"{interval.upper / interval.lower:.4g}" if interval.lower > 0 else "",
            "kc_refinement": state,
            "kc_refinement_s": f"{spent:.1f}",
        }

    def _receive(self):
        """Each interval the worker sends, merged into its model's refinement here."""
        while True:
            try:
                token, interval, spent = self._pipe.recv()
            except (EOFError, OSError):
                with self._lock:
                    self._exited = True
                return
            with self._lock:
                model = self._model if token == self._token else None
                if model is not None:
                    self._spent = spent
            if model is not None:
                self.refinement(model).merge(interval)


def _work(pipe, time_budget: float, memory_limit_mb: float, niceness: int):
    """The worker process: refine the last model received, one step at a time.

    It ends when the node says so or goes (its end of the pipe closes); a
    terminal's Ctrl-C does not reach it (``KcRefiner._start_worker``)."""
    if niceness and sys.platform == "linux":
        os.setpriority(os.PRIO_PROCESS, 0, niceness)
    model: Optional[object] = None
    token, spent = 0, 0.0
    while True:
        idle = (model is None or spent >= time_budget
                or refinement_for(model, memory_limit_mb=memory_limit_mb).interval.finished)
        try:
            message = pipe.recv() if idle or pipe.poll() else None
        except (EOFError, OSError):
            return  # the node has gone
        if message is not None:
            if message[0] == "stop":
                return
            _, token, model = message
            spent = 0.0
            continue
        refinement = refinement_for(model, memory_limit_mb=memory_limit_mb)
        start = time.monotonic()
        interval = refinement.refine(min(STEP_SECONDS, time_budget - spent))
        spent += time.monotonic() - start
        try:
            pipe.send((token, interval, spent))
        except OSError:
            return  # the node has gone


if __name__ == "__main__":
    _work(Connection(int(sys.argv[1])), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]))

"""Spinning an executor until Ctrl-C or SIGTERM: the main loop of the node and the demo.

rclpy's own signal handler (``rclpy.init``'s default) lets SIGINT raise
KeyboardInterrupt in the main thread at whatever bytecode it runs, and shuts
the context down from another thread. Inside an ``EventsExecutor.spin_once``
that bytecode may be pybind11 converting a callback's argument, and the
interrupt then surfaces as a bare RuntimeError ("Unable to convert call
argument '0' to Python object") while ``rclpy.ok()`` is still true: a
traceback on every such Ctrl-C (seen under ``ros2 launch`` in CI). So the
processes init rclpy without its signal handlers, and while spinning the
signals only set a flag that the loop reads between spins (at most
``timeout`` seconds later).
"""

import signal
import threading
from typing import Callable

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.signals import SignalHandlerOptions

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def init_without_signal_handlers(args=None):
    """rclpy.init, leaving SIGINT and SIGTERM to ``spin_until_stopped``."""
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)


def spin_until_stopped(executor, keep_spinning: Callable[[], bool] = lambda: True,
                       timeout: float = 0.1) -> None:
    """Spin until SIGINT or SIGTERM, a shutdown of the context, or ``keep_spinning()`` is false.

    Before and after the loop the process's previous handlers apply (Python's
    KeyboardInterrupt for Ctrl-C during a long start-up, or SIG_IGN for a
    process started with SIGINT ignored, as a script's ``&`` starts it).
    During the loop SIGINT stops the spin even then: it is how ``ros2 launch``
    and a supervisor end a node, and a node that ignored it would wait for
    their escalation to SIGTERM or SIGKILL.
    """
    stop = threading.Event()
    previous = {number: signal.signal(number, lambda *_: stop.set()) for number in STOP_SIGNALS}
    try:
        while rclpy.ok() and not stop.is_set() and keep_spinning():
            executor.spin_once(timeout_sec=timeout)
    except ExternalShutdownException:
        pass
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)

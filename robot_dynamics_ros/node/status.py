"""The node's counters and its diagnostics report, without ROS.

``NodeStatus`` counts what the hot path did (processed joint states, drops by
reason, compute time) and turns it, once a second, into the key-value report
that the node publishes on ``/diagnostics``: a level, a one-line message and
the values. The node owns one and only converts the report into a
diagnostic_msgs/DiagnosticStatus.
"""

from collections import Counter
from typing import Dict, Mapping, NamedTuple, Optional

import numpy as np

OK, WARN, ERROR = 0, 1, 2  # diagnostic_msgs/DiagnosticStatus levels
LATENCY_WINDOW = 4096  # compute-time samples kept between two reports


class Report(NamedTuple):
    level: int  # OK, WARN or ERROR
    message: str
    values: Dict[str, str]


class Throttle:
    """True at most once per ``period`` seconds (the first time, then once the
    period has passed): the node's throttled warnings, decided before the
    logger is called. rclpy's own ``throttle_duration_sec`` is applied only
    after the logger has looked up its caller's frame and source line, on
    every call even when the line is not printed: a node falling behind
    would pay that for every joint state it drops, and drop more."""

    def __init__(self, period: float):
        self.period = period
        self._next = -np.inf

    def due(self, now: float) -> bool:
        """Whether an event at ``now`` (monotonic seconds) is let through."""
        if now < self._next:
            return False
        self._next = now + self.period
        return True


class NodeStatus:
    """Counters of the hot path (one thread writes them) and the 1 Hz report."""

    def __init__(self, window: int = LATENCY_WINDOW):
        self.processed = 0
        self.dropped = Counter()  # reason -> joint states dropped
        self.last_error = ""
        self._latency_ns = np.zeros(window)
        self._latency_count = 0
        self._latency_reported = 0
        self._problems_reported = 0

    def computed(self, nanoseconds: int):
        """One joint state processed in ``nanoseconds`` (callback to outputs serialized)."""
        self._latency_ns[self._latency_count % len(self._latency_ns)] = nanoseconds
        self._latency_count += 1
        self.processed += 1

    def drop(self, kind: str, reason: str, count: int = 1) -> str:
        """Count ``count`` joint states dropped for ``kind``; returns the error
        line (also kept as ``last_error``)."""
        self.dropped[kind] += count
        self.last_error = f"dropped joint_states ({kind}): {reason}"
        return self.last_error

    def error(self, text: str):
        self.last_error = text

    def _recent_latency(self) -> np.ndarray:
        """Compute times (ns) since the last report (at most the window)."""
        window = len(self._latency_ns)
        count = self._latency_count
        recent = min(count - self._latency_reported, window)
        self._latency_reported = count
        return np.roll(self._latency_ns, -(count % window))[window - recent:]

    def report(self, served=None, *, refused: Mapping[str, int], update_pending: bool,
               odometry: Optional[Mapping[str, str]] = None, odometry_refused: int = 0,
               kc: Optional[Mapping[str, str]] = None, revision: int = 0) -> Report:
        """The report of the last second. ``served``: the ServedModel (None
        before the first model); ``refused``: requests refused by kind;
        ``odometry``: the base state pairing's counts; ``kc``: the K_c
        interval's values."""
        recent = self._recent_latency()
        dropped = sum(self.dropped.values())
        values = {
            "model": served.model.name if served else "",
            "model_revision": str(revision),
            "dof": str(served.model.nv) if served else "0",
            "joints": ",".join(served.joints) if served else "",
            "base": (f"floating, root link {served.root_link}" if served.base else "fixed")
            if served else "",
            "payloads": ";".join(f"{p.link}:{p.mass:g}kg" for p in served.payloads.values())
            if served else "",
            "processed": str(self.processed),
            "dropped": str(dropped),
            **{f"dropped.{kind}": str(n) for kind, n in sorted(self.dropped.items())},
            "update_pending": "yes" if update_pending else "no",
            "payloads_refused": str(refused.get("payload_parameters", 0) + refused.get("payload_topic", 0)),
            "descriptions_rejected": str(refused.get("description", 0)),
            **{f"refused.{kind}": str(n) for kind, n in sorted(refused.items())},
            **(odometry or {}),
            **(kc or {}),
            "compute_samples": str(len(recent)),
            "compute_mean_us": f"{recent.mean() / 1e3:.1f}" if len(recent) else "",
            "compute_p99_us": f"{np.percentile(recent, 99) / 1e3:.1f}" if len(recent) else "",
            "last_error": self.last_error,
        }
        # joint states before the first model are the start-up, not a problem
        problems = dropped - self.dropped["no_model"] + sum(refused.values()) + odometry_refused
        new_problems = problems - self._problems_reported
        self._problems_reported = problems
        if served is None:
            return Report(ERROR, "no robot model loaded", values)
        if new_problems:
            return Report(WARN, f"serving {served.model.name}; {new_problems} inputs dropped or "
                          "refused in the last second", values)
        return Report(OK, f"serving {served.model.name}", values)


def kc_source(refinement: Mapping[str, str]) -> str:
    """DynamicsModel.kc_source from the K_c refinement's status values
    (``KcRefiner.status``): "refining" while its process works on the model,
    "refined" once it spent time on it, else "first_bound"."""
    state = refinement.get("kc_refinement", "")
    if state == "running":
        return "refining"
    if state in ("done", "budget spent") and float(refinement.get("kc_refinement_s", 0) or 0) > 0:
        return "refined"
    return "first_bound"

"""Model residuals: the joint efforts a robot reports minus the model's inverse dynamics.

    r = tau - ID(q, qd, qdd)

over a recorded stream of joint states with efforts. The bag holds q, qd and
tau but not qdd, so qdd is the first derivative of qd by a Savitzky-Golay
differentiator (``Differentiator``): over a window of ``window`` samples
(odd) a polynomial of degree ``order`` is fitted to qd by least squares and
its slope at the window's centre is the estimate. Near either end of a run
of samples the window cannot be centred; there the polynomial fitted to the
first (last) ``window`` samples is evaluated at each sample's own time (SciPy's
``mode="interp"``), so no sample is dropped and none is padded with made-up
values. The differentiator assumes a fixed sampling period: the period is
the median step of the header stamps, and the stream is cut into runs
wherever a step is more than 1.5 periods (a lost message, a pause); a run
shorter than the window is left out of the residuals and counted.

No ROS import: the replay (offline) and the node's ``~/identify_payload``
(live) call the same functions on arrays.
"""

from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import numpy as np

from robot_dynamics_ros import dynamics

# A step longer than this many sampling periods cuts the stream into runs.
GAP_FACTOR = 1.5
# Percentiles of |r| reported per joint.
PERCENTILES = (50.0, 95.0, 99.0)


@dataclass(frozen=True)
class Differentiator:
    """Savitzky-Golay first derivative: ``window`` samples (odd), polynomial
    degree ``order`` (< window). The default, 31 samples of degree 3, spans
    a sixteenth of a second at 500 Hz: it passes motions up to a few hertz
    unchanged and averages encoder quantization over 31 samples."""

    window: int = 31
    order: int = 3

    def __post_init__(self):
        if self.window < 3 or self.window % 2 == 0:
            raise ValueError(f"Savitzky-Golay window must be an odd number of samples >= 3, got {self.window}")
        if not 1 <= self.order < self.window:
            raise ValueError(f"Savitzky-Golay order must be >= 1 and below the window ({self.window}), "
                             f"got {self.order}")

    def runs(self, stamps_ns: np.ndarray) -> Tuple[float, List[slice]]:
        """The sampling period (s) and the runs of evenly sampled joint states."""
        steps = np.diff(stamps_ns.astype(np.int64))
        if len(steps) == 0 or np.median(steps) <= 0:
            raise ValueError("accelerations need at least two joint states with increasing stamps")
        period = float(np.median(steps))
        cuts = np.flatnonzero((steps > GAP_FACTOR * period) | (steps <= 0)) + 1
        edges = [0, *cuts.tolist(), len(stamps_ns)]
        return period * 1e-9, [slice(a, b) for a, b in zip(edges[:-1], edges[1:])]

    def accelerations(self, stamps_ns: np.ndarray, qd: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """(qdd, usable): qdd (N, n) and which samples lie in a run of at least
        ``window`` samples (elsewhere qdd is 0 and not to be used)."""
        from scipy.signal import savgol_filter

        period, runs = self.runs(stamps_ns)
        qdd = np.zeros_like(qd)
        usable = np.zeros(len(qd), dtype=bool)
        for run in runs:
            if run.stop - run.start < self.window:
                continue
            qdd[run] = savgol_filter(qd[run], self.window, self.order, deriv=1, delta=period,
                                     axis=0, mode="interp")
            usable[run] = True
        return qdd, usable


@dataclass
class Residuals:
    """The residuals of one stream: per sample, and their statistics per joint."""

    joints: Tuple[str, ...]
    times: np.ndarray  # (N,) header stamps in ns of the samples used
    residual: np.ndarray  # (N, n) tau - ID(q, qd, qdd)
    efforts: np.ndarray  # (N, n)
    skipped: int  # joint states in runs shorter than the window

    @property
    def rms(self) -> np.ndarray:
        return np.sqrt(np.mean(self.residual ** 2, axis=0))

    def percentiles(self) -> Dict[float, np.ndarray]:
        """Percentiles of |r| per joint."""
        return {p: np.percentile(np.abs(self.residual), p, axis=0) for p in PERCENTILES}

    def table(self) -> List[dict]:
        """One row per joint: joint, rms, p50, p95, p99, max of |r|, the RMS of the effort."""
        cents = self.percentiles()
        effort_rms = np.sqrt(np.mean(self.efforts ** 2, axis=0))
        worst = np.max(np.abs(self.residual), axis=0)
        return [{"joint": joint, "rms": float(self.rms[j]),
                 **{f"p{p:g}": float(cents[p][j]) for p in PERCENTILES},
                 "max": float(worst[j]), "measured_rms": float(effort_rms[j])}
                for j, joint in enumerate(self.joints)]

    def summary(self) -> str:
        """A short text table of the residual statistics."""
        lines = [f"residuals tau - ID(q, qd, qdd) over {len(self.times)} joint states"
                 + (f" ({self.skipped} in runs too short to differentiate left out)" if self.skipped else "")
                 + ", |r| in N m (N for prismatic joints):",
                 f"  {'joint':<24} {'rms':>9} {'p50':>9} {'p95':>9} {'p99':>9} {'max':>9} {'effort rms':>11}"]
        for row in self.table():
            lines.append(f"  {row['joint']:<24} {row['rms']:9.4g} {row['p50']:9.4g} {row['p95']:9.4g} "
                         f"{row['p99']:9.4g} {row['max']:9.4g} {row['measured_rms']:11.4g}")
        return "\n".join(lines)


def residuals(model, joints: Sequence[str], stamps_ns: np.ndarray, q: np.ndarray, qd: np.ndarray,
              effort: np.ndarray, differentiator: Differentiator = Differentiator()) -> Residuals:
    """Residuals of joint states (model joint order, fixed base) with efforts."""
    qdd, usable = differentiator.accelerations(stamps_ns, qd)
    if not usable.any():
        raise ValueError(f"no run of {differentiator.window} evenly sampled joint states to "
                         "differentiate (a shorter --sg-window may do)")
    predicted = dynamics.inverse_dynamics(model, q[usable], qd[usable], qdd[usable])
    return Residuals(tuple(joints), stamps_ns[usable], effort[usable] - predicted, effort[usable],
                     int((~usable).sum()))

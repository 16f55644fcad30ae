"""The node's side of ``~/identify_payload``, without ROS: a window of recent
joint states with efforts, and the payload estimated from it.

The node adds each joint state it processes that carries efforts
(``EffortWindow.add``: a copy into preallocated rings, no allocation on the
hot path). The service asks ``identify`` for the last ``seconds``: the joint
states whose q, qd and efforts are all finite (as the replay keeps them), then the same
Savitzky-Golay accelerations and the same estimator as
``robot_dynamics_replay --identify-payload``, so the same data give the same
estimate. ``payload_to_apply`` turns an estimate into the
(mass, com, inertia) of a payload request, which the node validates like any
other before applying it, and only when the caller asked for that.
"""

import threading
from typing import Optional, Tuple

import numpy as np

from robot_dynamics_ros.identification.payload import PayloadEstimate, identify_payload
from robot_dynamics_ros.identification.residuals import Differentiator


class EffortWindow:
    """The last ``capacity`` joint states with efforts (model joint order).
    ``add`` (the joint-state callback) and ``latest`` (the service, on another
    thread) hold one lock, so no sample is read half written."""

    def __init__(self, nv: int, capacity: int = 120_000):
        self.capacity = capacity
        self.stamps = np.zeros(capacity, dtype=np.int64)
        self.q = np.zeros((capacity, nv))
        self.qd = np.zeros((capacity, nv))
        self.effort = np.zeros((capacity, nv))
        self.count = 0  # joint states ever added
        self._lock = threading.Lock()

    def add(self, stamp_ns: int, q, qd, effort) -> None:
        with self._lock:
            i = self.count % self.capacity
            self.stamps[i] = stamp_ns
            self.q[i], self.qd[i], self.effort[i] = q, qd, effort
            self.count += 1

    def latest(self, seconds: float) -> Tuple[np.ndarray, ...]:
        """(stamps, q, qd, effort) of the joint states of the last ``seconds``
        (by stamp; 0 or less: all held), in stamp order."""
        with self._lock:
            held = min(self.count, self.capacity)
            order = np.arange(self.count - held, self.count) % self.capacity
            stamps = self.stamps[order]
            if held and seconds > 0:
                order = order[stamps >= stamps.max() - int(seconds * 1e9)]
            order = order[np.argsort(self.stamps[order], kind="stable")]
            return self.stamps[order], self.q[order], self.qd[order], self.effort[order]


def identify(model, window: EffortWindow, link: str, seconds: float,
             differentiator: Differentiator = Differentiator()) -> PayloadEstimate:
    """The payload on ``link`` estimated from the window's last ``seconds``
    (0: all it holds); ValueError (with the reason) when it cannot give one."""
    stamps, q, qd, effort = window.latest(seconds)
    # the node adds a joint state before its dynamics refuse a NaN q or qd:
    # such a one is left out here, as it is of the outputs
    finite = np.isfinite(effort).all(axis=1) & np.isfinite(q).all(axis=1) & np.isfinite(qd).all(axis=1)
    stamps, q, qd, effort = stamps[finite], q[finite], qd[finite], effort[finite]
    if len(stamps) < differentiator.window:
        span = f"in the last {seconds:g} s" if seconds > 0 else "held"
        raise ValueError(f"{len(stamps)} joint states with finite efforts for every modelled joint "
                         f"{span}; at least {differentiator.window} are needed")
    qdd, usable = differentiator.accelerations(stamps, qd)
    return identify_payload(model, link, q[usable], qd[usable], qdd[usable], effort[usable])


def payload_to_apply(estimate: PayloadEstimate) -> Optional[tuple]:
    """(link, mass, com (3,), inertia six [xx xy xz yy yz zz]) to request, or
    None when mass or CoM is not identifiable. An inertia that is not
    identifiable is requested as zero (a point mass), which the reply says."""
    if not (estimate.mass.identified and estimate.com.identified):
        return None
    inertia = estimate.inertia.value if estimate.inertia.identified else np.zeros(6)
    return estimate.link, float(estimate.mass.value), np.asarray(estimate.com.value), np.asarray(inertia)

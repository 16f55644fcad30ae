"""``--residuals`` and ``--identify-payload LINK``: what a bag's efforts
say about the model.

The replay hands every chunk's matched joint states with their efforts to an
``EffortSeries``; at the end ``analyse`` runs ``residuals`` and
``identification.payload`` (ROS-free modules, shared with the node) on the
whole series. A bag without efforts, or a floating base (whose base wrench
no joint measures), gets a warning and the replay goes on.
"""

import csv
from pathlib import Path
from typing import List, Optional

import numpy as np

from robot_dynamics_ros.identification.payload import identify_payload
from robot_dynamics_ros.identification.residuals import Differentiator, residuals


class EffortSeries:
    """The joint states with a finite effort per modelled joint, chunk by chunk."""

    def __init__(self):
        self.parts = []
        self.without = 0  # joint states without usable efforts

    def add(self, stamps: np.ndarray, q, qd, effort):
        has = np.isfinite(effort).all(axis=1)
        self.without += int((~has).sum())
        if has.any():
            stamp_ns = stamps[has, 0] * 1_000_000_000 + stamps[has, 1]
            self.parts.append((stamp_ns, q[has], qd[has], effort[has]))

    def arrays(self):
        return tuple(np.concatenate(x) for x in zip(*self.parts))


def analyse(served, series: Optional[EffortSeries], args, warnings: List[str]) -> dict:
    """Residuals and the payload estimate of a replay, as far as its data allows;
    what it cannot do goes to ``warnings``."""
    out = {"residuals": None, "payload": None}
    if series is None:
        return out
    if served.base:
        warnings.append("residuals and payload identification need a fixed base; this model's base floats")
        return out
    if not series.parts:
        warnings.append(f"no efforts in the joint states on {args.joint_states}: "
                        "no residuals, no payload identification")
        return out
    if series.without:
        warnings.append(f"{series.without} joint states without efforts for every modelled joint left out "
                        "of the residuals")
    stamps, q, qd, effort = series.arrays()
    order = np.argsort(stamps, kind="stable")
    stamps, q, qd, effort = stamps[order], q[order], qd[order], effort[order]
    differentiator = Differentiator(args.sg_window, args.sg_order)
    model = served.model
    try:
        if args.residuals:
            out["residuals"] = residuals(model, model.joint_names, stamps, q, qd, effort, differentiator)
        if args.identify_payload:
            qdd, usable = differentiator.accelerations(stamps, qd)
            out["payload"] = identify_payload(model, args.identify_payload, q[usable], qd[usable],
                                              qdd[usable], effort[usable])
    except ValueError as error:
        warnings.append(str(error))
    return out


def residual_table_path(csv_path: Path) -> Path:
    """Where --csv's per-joint residual statistics go: beside it, ``<stem>_residuals.csv``."""
    return csv_path.with_name(csv_path.stem + "_residuals" + (csv_path.suffix or ".csv"))


def write_residual_table(path: Path, result) -> None:
    rows = result.table()
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: (f"{v:.17g}" if isinstance(v, float) else v) for k, v in row.items()})

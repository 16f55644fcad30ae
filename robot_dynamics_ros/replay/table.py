"""``robot_dynamics_replay --csv``: a flat table, one row per processed joint state."""

import csv
import io

import numpy as np

from robot_dynamics_ros.dynamics import BOUNDS_FIELDS
from robot_dynamics_ros.served.model import ServedModel


class CsvTable:
    """--csv: one row per processed joint state, written chunk by chunk."""

    def __init__(self, handle, served: ServedModel):
        self.handle = handle
        positions = served.model.configuration_names
        velocities = served.coordinates
        n = len(velocities)
        cells = [f"[{r}][{c}]" for r in range(n) for c in range(n)]
        header = (["bag_time_ns", "stamp_sec", "stamp_nanosec"]
                  + [f"q[{j}]" for j in positions] + [f"qd[{j}]" for j in velocities]
                  + list(BOUNDS_FIELDS) + [f"gravity_torques[{j}]" for j in velocities]
                  + ["mass_matrix" + c for c in cells] + ["coriolis_matrix" + c for c in cells])
        # quoted where needed: a URDF's joint names may hold commas, quotes, newlines
        csv.writer(handle, lineterminator="\n").writerow(header)

    def write(self, times, stamps, q, qd, outputs):
        count = len(times)
        values = np.column_stack([
            q, qd, outputs.coriolis_bounds, outputs.gravity_torques,
            outputs.mass_matrix.reshape(count, -1), outputs.coriolis_matrix.reshape(count, -1)])
        text = io.StringIO()
        np.savetxt(text, values, fmt="%.17g", delimiter=",")
        # Times are int64 nanoseconds: formatted apart, a float64 would round them.
        for t, (sec, nanosec), line in zip(times.tolist(), stamps.tolist(), text.getvalue().splitlines()):
            self.handle.write(f"{t},{sec},{nanosec},{line}\n")

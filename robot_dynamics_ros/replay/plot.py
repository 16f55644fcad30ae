"""``robot_dynamics_replay --plot``: the Coriolis matrix norm and its bounds,
the mass matrix spectrum and the gravity torques over time (matplotlib,
imported only when a plot is asked for)."""

from pathlib import Path
from typing import Sequence

import numpy as np

from robot_dynamics_ros.dynamics import BOUNDS_FIELDS
from robot_dynamics_ros.replay.staging import ReplayError

# Legends beside the axes, so that no curve hides under them.
OUTSIDE = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "borderaxespad": 0.0}


class PlotSeries:
    """--plot: the few series the figure needs, gathered chunk by chunk."""

    def __init__(self):
        self.parts = []

    def add(self, times, qd, outputs):
        bounds = outputs.coriolis_bounds
        field = {name: bounds[:, i] for i, name in enumerate(BOUNDS_FIELDS)}
        self.parts.append((
            times, field["coriolis_norm"], field["coriolis_bound"],
            field["kc_global"] * np.linalg.norm(qd, axis=-1),
            np.linalg.eigvalsh(outputs.mass_matrix), outputs.gravity_torques))

    def save(self, path: Path, fmt: str, joints: Sequence[str], title: str, residuals=None):
        """Write the figure; with ``residuals`` (``residuals.Residuals``) a fourth
        panel shows tau - ID(q, qd, qdd) per joint."""
        import matplotlib.pyplot as plt

        times, norm, bound, global_bound, eig, gravity = (np.concatenate(x) for x in zip(*self.parts))
        seconds = (times - times[0]) / 1e9
        panels = 3 if residuals is None else 4
        fig, axes = plt.subplots(panels, 1, sharex=True, figsize=(13, 10 if panels == 3 else 13),
                                 constrained_layout=True)
        ax = axes[0]
        ax.plot(seconds, global_bound, color="tab:red", lw=1.0, label=r"$K_c\,\|\dot q\|$ (global bound)")
        ax.plot(seconds, bound, color="tab:orange", lw=1.0, label=r"$k_c(q)\,\|\dot q\|$ (configuration bound)")
        ax.plot(seconds, norm, color="tab:blue", lw=1.0, label=r"$\|C(q, \dot q)\|_2$")
        ax.set_ylabel("Coriolis matrix norm\n[N m s/rad]")
        ax.set_title(f"{title}: Coriolis matrix and its bounds")
        ax.legend(**OUTSIDE, fontsize="small")
        ax = axes[1]
        for i in range(eig.shape[1]):
            ax.plot(seconds, eig[:, i], lw=1.0, label=rf"$\lambda_{{{i + 1}}}$")
        ax.set_yscale("log")
        ax.set_ylabel("eigenvalues of M(q)\n[kg m$^2$]")
        ax.set_title("Mass matrix spectrum (log scale)")
        ax.legend(**OUTSIDE, fontsize="small", ncol=1 + eig.shape[1] // 10)
        ax = axes[2]
        for i, joint in enumerate(joints):
            ax.plot(seconds, gravity[:, i], lw=1.0, label=joint)
        ax.set_ylabel("gravity torque g(q)\n[N m; N for prismatic]")
        ax.set_title("Gravity torques")
        ax.legend(**OUTSIDE, fontsize="small", ncol=1 + len(joints) // 10)
        if residuals is not None:
            ax = axes[3]
            res_seconds = (residuals.times - residuals.times[0]) / 1e9
            for i, joint in enumerate(residuals.joints):
                ax.plot(res_seconds, residuals.residual[:, i], lw=0.6, alpha=0.8,
                        label=f"{joint} (rms {residuals.rms[i]:.3g})")
            ax.set_ylabel("residual tau - ID(q, qd, qdd)\n[N m; N for prismatic]")
            ax.set_title("Model residuals: effort minus inverse dynamics")
            ax.legend(**OUTSIDE, fontsize="small", ncol=1 + len(residuals.joints) // 10)
        axes[-1].set_xlabel("time since the first joint state [s]")
        for ax in axes:
            ax.grid(True, alpha=0.3)
        fig.savefig(path, format=fmt, dpi=110)
        plt.close(fig)


def plot_format(path: Path) -> str:
    """The image format matplotlib will write for ``path``, checked before any work."""
    try:
        import matplotlib
    except ImportError as error:
        raise ReplayError(f"--plot needs matplotlib (pip install matplotlib): {error}") from error
    matplotlib.use("Agg")  # files only: no display needed
    from matplotlib.figure import Figure

    fmt = path.suffix.lstrip(".").lower() or "png"
    supported = Figure().canvas.get_supported_filetypes()
    if fmt not in supported:
        raise ReplayError(f"--plot {str(path)!r}: no image format {fmt!r}; "
                          f"use one of {', '.join(sorted(supported))}")
    return fmt

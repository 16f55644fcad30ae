"""Coriolis matrix, Christoffel symbols and bounds: ours against Pinocchio.

Per call on panda and ur5 (C against computeCoriolisMatrix; Gamma against the
Pinocchio route of n calls computeCoriolisMatrix(q, e_k)); every term the
node publishes (M, C, g, Gamma, bounds; K_c cached) by all_terms and by five
calls; batch (M, C, g) per sample
against a Python loop over Pinocchio; and scaling with n for serial chains,
binary trees, bipeds and quadrupeds (Echeandia and Wensing 2021, Figs. 2-4), with fitted
slopes and a log-log plot. Run: python bench/bench_coriolis.py [--plot PNG]
"""
import argparse
import os
import sys

import numpy as np
import pinocchio as pin

sys.path.insert(0, os.path.dirname(__file__))
from common import HEADER, per_call_us, robot_pair, row, topology_urdf  # noqa: E402

from robot_dynamics_ros.dynamics import (  # noqa: E402
    all_terms, christoffel_symbols, coriolis_bounds, coriolis_matrix, gravity_torques,
    load_urdf, mass_matrix)
from robot_dynamics_ros.dynamics.kc import global_coriolis_constant  # noqa: E402

BATCH = 10_000
# Echeandia and Wensing 2021, Table 1 (C++, i7 3.2 GHz, 20 DoF): (C us, Gamma us)
PAPER_TABLE_1 = {"serial": (18, 122), "binary tree": (10, 33),
                 "biped": (13, 64), "quadruped": (10, 37)}


def per_call(name):
    model, pmodel, data = robot_pair(name)
    rng = np.random.default_rng(0)
    q, qd = rng.uniform(-1, 1, (2, model.nv))
    units = np.eye(model.nv)

    def pin_gamma():
        return [pin.computeCoriolisMatrix(pmodel, data, q, e) for e in units]

    global_coriolis_constant(model)  # cached once per model, as in the node

    def separately():  # the same terms, one public function each
        mass = mass_matrix(model, q)
        coriolis_matrix(model, q, qd)
        gravity_torques(model, q)
        gamma = christoffel_symbols(model, q)
        coriolis_bounds(model, q, qd, christoffel=gamma, mass=mass)

    def pin_bundle():
        pin.crba(pmodel, data, q)
        pin.computeCoriolisMatrix(pmodel, data, q, qd)
        pin.computeGeneralizedGravity(pmodel, data, q)
        pin_gamma()

    return [
        row(f"{name} C", per_call_us(lambda: coriolis_matrix(model, q, qd)),
            per_call_us(lambda: pin.computeCoriolisMatrix(pmodel, data, q, qd)),
            "ratio <= 2"),
        row(f"{name} Gamma (pin: n x C(q, e_k))",
            per_call_us(lambda: christoffel_symbols(model, q)),
            per_call_us(pin_gamma, number=500), "ratio < 1"),
        row(f"{name} all_terms: M,C,g,Gamma,bounds",
            per_call_us(lambda: all_terms(model, q, qd), number=500), per_call_us(pin_bundle, number=500),
            "ours < 100 us (pin: no bounds)"),
        row(f"{name} the same, five calls",
            per_call_us(separately, number=500), per_call_us(pin_bundle, number=500), ""),
    ]


def batch(name):
    model, pmodel, data = robot_pair(name)
    rng = np.random.default_rng(1)
    Q, QD = rng.uniform(-1, 1, (2, BATCH, model.nv))

    def ours():
        mass_matrix(model, Q)
        coriolis_matrix(model, Q, QD)
        gravity_torques(model, Q)

    def theirs():
        for q, qd in zip(Q, QD):
            pin.crba(pmodel, data, q)
            pin.computeCoriolisMatrix(pmodel, data, q, qd)
            pin.computeGeneralizedGravity(pmodel, data, q)

    return [row(f"{name} batch M,C,g (us/sample)",
                per_call_us(ours, repeat=5, number=2) / BATCH,
                per_call_us(theirs, repeat=3, number=1) / BATCH, "ratio <= 0.5")]


def topologies(n):
    """Parent lists with n joints: Echeandia and Wensing's four families, fixed base.

    Echeandia and Wensing put a floating main body at the root of the biped and the
    quadruped; here the root is fixed and the legs hang from it.
    """
    def legs(count):
        parents, sizes = [], [n // count + (k < n % count) for k in range(count)]
        for size in sizes:
            start = len(parents)
            parents += [-1] + list(range(start, start + size - 1))
        return parents

    return {
        "serial": [i - 1 for i in range(n)],
        "binary tree": [(i - 1) // 2 if i else -1 for i in range(n)],
        "biped": legs(2),
        "quadruped": legs(4),
    }


def scaling(sizes):
    times = {}
    for n in sizes:
        for family, parents in topologies(n).items():
            model = load_urdf(topology_urdf(parents))
            rng = np.random.default_rng(n)
            q, qd = rng.uniform(-np.pi, np.pi, (2, n))
            number = max(20, 4000 // n)
            times.setdefault(family, []).append((
                n,
                per_call_us(lambda: coriolis_matrix(model, q, qd), repeat=5, number=number),
                per_call_us(lambda: christoffel_symbols(model, q), repeat=5,
                            number=max(5, number // 10))))
    return times


def report_scaling(times):
    print(f"\n{'scaling':<14} {'n':>4} {'C us':>9} {'Gamma us':>10}")
    for family, rows in times.items():
        for n, c, gamma in rows:
            print(f"{family:<14} {n:>4} {c:9.1f} {gamma:10.1f}")
    print("\nslopes: least-squares fit of log time against log n for n >= 20, where"
          " the fixed per-call cost (~2 us) no longer dominates")
    print(f"{'family':<14} {'slope C':>8} {'slope Gamma':>12} "
          f"{'C@20 us':>8} {'Gamma@20 us':>12} {'paper C / Gamma (C++)':>24}")
    for family, rows in times.items():
        n, c, gamma = np.array([r for r in rows if r[0] >= 20]).T
        slope_c = np.polyfit(np.log(n), np.log(c), 1)[0]
        slope_g = np.polyfit(np.log(n), np.log(gamma), 1)[0]
        at20 = {int(k): (a, b) for k, a, b in rows}.get(20, (np.nan, np.nan))
        paper = PAPER_TABLE_1[family]
        print(f"{family:<14} {slope_c:8.2f} {slope_g:12.2f} {at20[0]:8.1f} "
              f"{at20[1]:12.1f} {paper[0]:>14} / {paper[1]}")


def plot_scaling(times, path):
    import matplotlib
    import matplotlib.ticker
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharex=True)
    for family, rows in times.items():
        n, c, gamma = np.array(rows).T
        axes[0].loglog(n, c, "o-", label=family)
        axes[1].loglog(n, gamma, "o-", label=family)
    sizes = sorted({int(n) for rows in times.values() for n, _, _ in rows})
    for ax, title in zip(axes, ("Coriolis matrix C(q, qd)", "Christoffel symbols Gamma(q)")):
        ax.set_xticks(sizes, [str(n) for n in sizes])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_title(title)
        ax.set_xlabel("number of joints n")
        ax.set_ylabel("time per call (us)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"\nplot: {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot", default="bench_coriolis_scaling.png",
                        help="log-log plot of the scaling (PNG)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[6, 10, 20, 30, 40, 60])
    args = parser.parse_args()
    print(HEADER)
    for name in ("panda", "ur5"):
        for line in per_call(name):
            print(line)
    for name in ("panda", "ur5"):
        for line in batch(name):
            print(line)
    times = scaling(args.sizes)
    report_scaling(times)
    plot_scaling(times, args.plot)


if __name__ == "__main__":
    main()

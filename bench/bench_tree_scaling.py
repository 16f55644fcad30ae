"""How the bounds' cost grows with the tree (issue 21): ours against the dense computation.

    python bench/bench_tree_scaling.py [--sizes 10 20 40 70 100] [--rounds 5]

Random trees of revolute joints (bench/common.py's ``topology_urdf``) on a
fixed base, two shapes: "uniform", each joint hanging off a uniformly
random earlier one (depth about 2 ln n), and "chains", off the one before
with probability 0.7 (long limbs, depth a sizeable fraction of n). Per
size, the median per-call time of

- ours: ``all_terms(model, q, qd, christoffel=False)``, Gamma's slices as
  blocks over related joints (``bounds.tree_bound_values``), and
- dense: the computation before issue 21, ``christoffel_symbols`` into the
  whole n^3 tensor and ``bounds.bound_vectors`` (n + 2 eigenproblems of
  n x n matrices), plus M and C,

paired in shuffled rounds, and the exponent p of time ~ n^p fitted over the
sizes (least squares on the logarithms). The K_c first bound is filled in
beforehand (``bench_floating.fill_global_constant``).
"""
import argparse
import os
import random
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from bench_dynamics import paired_rounds  # noqa: E402
from bench_floating import fill_global_constant  # noqa: E402
from common import PER_SAMPLE_FIELDS, topology_urdf  # noqa: E402

from robot_dynamics_ros import dynamics as rd  # noqa: E402
from robot_dynamics_ros.dynamics.bounds.coriolis_bounds import bound_vectors  # noqa: E402

PER_SAMPLE = [rd.BOUNDS_FIELDS.index(field) for field in PER_SAMPLE_FIELDS]


def parents(n, shape, seed):
    rng = np.random.default_rng(seed)
    if shape == "uniform":
        return [int(rng.integers(-1, i)) for i in range(n)]
    return [-1 if i == 0 else i - 1 if rng.random() < 0.7 else int(rng.integers(-1, i))
            for i in range(n)]


def depth(parent):
    d = [0] * len(parent)
    for i, p in enumerate(parent):
        d[i] = 1 + (d[p] if p >= 0 else 0)
    return max(d)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 20, 40, 70, 100])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=3)
    args = parser.parse_args()
    random.seed(0)
    print(f"median per call (us) over {args.rounds} paired rounds of {args.calls} calls")
    for shape in ("uniform", "chains"):
        print(f"{shape:<8} {'n':>4} {'depth':>6} {'ours':>10} {'dense':>10} {'ratio':>7}")
        sizes, ours_t, dense_t = [], [], []
        for n in args.sizes:
            parent = parents(n, shape, n)
            model = rd.load_urdf(topology_urdf(parent, n))
            fill_global_constant(model)
            rng = np.random.default_rng(n)
            q, qd = rng.uniform(-1, 1, (2, model.nv))
            inputs = (("q", q[None]), ("qd", qd[None]))

            def dense():
                gamma = rd.christoffel_symbols(model, q)
                mass = rd.mass_matrix(model, q)
                rd.coriolis_matrix(model, q, qd)
                return bound_vectors(model, gamma[None], mass[None], qd[None], inputs)[0]

            ours = rd.all_terms(model, q, qd, christoffel=False).coriolis_bounds
            # K_c's interval is the model's, which bound_vectors leaves at 0
            assert np.allclose(ours[PER_SAMPLE], dense()[PER_SAMPLE], rtol=1e-12, atol=0)
            times = paired_rounds({"ours": lambda: rd.all_terms(model, q, qd, christoffel=False),
                                   "pin": dense}, args.rounds, args.calls)
            t_ours, t_dense = (float(np.median(times[k])) * 1e6 for k in ("ours", "pin"))
            ratio = float(np.median(np.array(times["ours"]) / np.array(times["pin"])))
            print(f"{'':<8} {n:>4} {depth(parent):>6} {t_ours:>10.1f} {t_dense:>10.1f} {ratio:>7.3f}")
            sizes.append(n)
            ours_t.append(t_ours)
            dense_t.append(t_dense)
        fit = [np.polyfit(np.log(sizes), np.log(t), 1)[0] for t in (ours_t, dense_t)]
        print(f"{'':<8} exponent p of time ~ n^p: ours {fit[0]:.2f}, dense {fit[1]:.2f}")


if __name__ == "__main__":
    main()

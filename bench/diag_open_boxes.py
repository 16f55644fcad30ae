"""What holds the K_c search's largest open boxes up: their bounds taken apart
(docs/coriolis_constant.md, "What is missing").

    python bench/diag_open_boxes.py [--robot panda] [--seconds 240] [--boxes 8] [--pairs 0]

One unit of the certificate search (``kc.partition.refine_unit``, one core)
runs from the whole domain for ``--seconds`` at the gap of 1.10; then, for the
open boxes of largest bound, every term of ``boxes.box_bounds``' second-order
form, recomputed here from the same samples with numpy, all divided by the
lower end (the largest k_c found):

- ``kc(c)`` at the box's centre, and ``sampled``: the largest k_c at its
  vertices and 400 random points in it (a lower bound of its maximum);
- ``top2``: the largest N of the linear model at the vertices of the two
  sides of largest first-order size, and ``topall`` at all 2^m vertices;
- per side: ``size`` h_l N'(D_l), ``own`` (the line's rest) and ``whole``
  (the line's whole change, for a revolute side);
- ``mixed``: sum over pairs of h_p h_l H_pl, its largest pairs;
- the Lipschitz form;
- with ``--pairs K``, for the K pairs of largest mixed term, the global bound
  H_pl beside the largest ``N(d2 Gamma/dq_p dq_l)`` sampled in the box (at
  its vertices and 150 random points, by central differences of Gamma,
  step 1e-4): how much a box-local bound could at best save.

A box whose ``sampled`` is far below 1 and whose bound is far above it is
open because of its slack, not because it may hold K_c.
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).absolute().parent.parent
sys.path.insert(0, str(REPOSITORY / "test" / "support"))
sys.path.insert(0, str(REPOSITORY))
from robots import example_robot_urdf  # noqa: E402

from robot_dynamics_ros.dynamics import load_urdf  # noqa: E402
from robot_dynamics_ros.dynamics.algorithms.christoffel import christoffel_symbols  # noqa: E402
from robot_dynamics_ros.dynamics.kc.boxes import _norm_bound, _whole_line_factor  # noqa: E402
from robot_dynamics_ros.dynamics.kc.constant import config_constant_kernel  # noqa: E402
from robot_dynamics_ros.dynamics.kc.partition import (box_geometry, lower_end, prepare,  # noqa: E402
                                                      refine_unit, root_box)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", default="panda")
    parser.add_argument("--seconds", type=float, default=240.0)
    parser.add_argument("--boxes", type=int, default=8)
    parser.add_argument("--pairs", type=int, default=0)
    args = parser.parse_args()
    model = load_urdf(example_robot_urdf(args.robot))
    start = time.monotonic()
    lower, _ = lower_end(model)
    part = prepare(model)
    setup = part.setup
    print(f"{args.robot}: lower end {lower:.6f}, setup {time.monotonic() - start:.0f} s, "
          f"frozen coordinates' bound {setup.frozen_bound / lower:.4f} of it")
    levels, index, bounds, axes, _, _ = root_box(model, part)
    unit = refine_unit(model, part, levels, index, bounds, axes, 1.10 * lower, args.seconds)
    print(f"after {unit.seconds:.0f} s: {unit.boxes} boxes bounded, {len(unit.open_bounds)} open, "
          f"gap {unit.open_bounds.max() / lower:.4f}")
    lines, (_, lipschitz, hessian) = setup.lines, setup.derivatives
    n, m = model.nv, len(setup.free)
    grams = np.empty((n, n, n + 2))
    rng = np.random.default_rng(0)

    def corners(k):
        """The 2^k sign vectors (2^k, k) of a box's vertices along k sides."""
        return np.array(np.meshgrid(*[[-1.0, 1.0]] * k, indexing="ij")).reshape(k, -1).T

    def norm(tensor):
        return config_constant_kernel(np.ascontiguousarray(tensor.reshape(n, n, n)), grams)

    def gamma_at(points):
        q = np.tile(setup.base, (len(points), 1))
        q[:, setup.free] = points
        return christoffel_symbols(model, q).reshape(len(points), -1)

    def mixed_at(points, k, l, step=1e-4):
        """N(d2 Gamma/dq_k dq_l) at each point, by central differences."""
        ek, el = np.eye(m)[k] * step, np.eye(m)[l] * step
        plus = gamma_at(points + ek + el) + gamma_at(points - ek - el)
        minus = gamma_at(points + ek - el) + gamma_at(points - ek + el)
        return np.array([norm(d) for d in (plus - minus) / (4 * step * step)])

    order = np.argsort(-unit.open_bounds)[:args.boxes]
    centres, halves = box_geometry(setup, unit.open_levels[order], unit.open_index[order])
    for number, (c, h) in enumerate(zip(centres, halves)):
        points = [c]
        for l in range(m):
            for j in range(lines.samples[l]):
                points.append(c + lines.offsets[l, j] * np.eye(m)[l])
        samples = gamma_at(np.array(points))
        centre, row = samples[0], 1
        slopes, size, own, whole = [], np.zeros(m), np.zeros(m), np.full(m, np.inf)
        for l in range(m):
            on_line = samples[row:row + lines.samples[l]]
            slopes.append(lines.derivative[l, :lines.samples[l]] @ on_line)
            size[l] = _norm_bound(slopes[l].reshape(n, n, n)) * h[l]
            if lines.samples[l] == 4:
                whole[l] = 0.0
            for r in range(lines.rests[l]):
                rest = lines.curvature[l, r, 0] * centre + lines.curvature[l, r, 1:lines.samples[l] + 1] @ on_line
                term = _norm_bound(rest.reshape(n, n, n))
                own[l] += min(lines.scale[l, r] * h[l] ** lines.power[l, r], lines.cap[l, r]) * term
                if lines.samples[l] == 4:
                    whole[l] += _whole_line_factor(r, h[l]) * term
            own[l] = min(own[l], 0.5 * hessian[l, l] * h[l] ** 2)
            row += lines.samples[l]
        pairs = sorted(((h[k] * h[l] * hessian[k, l], k, l) for l in range(m) for k in range(l)), reverse=True)
        by_size = np.argsort(-size)

        def top(sides):
            return max(norm(centre + sum(s * h[l] * slopes[l] for s, l in zip(signs, sides)))
                       for signs in corners(len(sides)))

        inside = np.vstack([c + corners(m) * h, c + h * rng.uniform(-1, 1, (400, m))])
        sampled = max(norm(g) for g in gamma_at(inside))
        apart = np.minimum(size + own, whole)
        print(f"box {number}: bound {unit.open_bounds[order[number]] / lower:.4f}, half-widths {np.round(h, 3)}")
        print(f"  kc(c) {norm(centre) / lower:.4f}  sampled {sampled / lower:.4f}  top2 "
              f"{top(by_size[:2]) / lower:.4f}  topall {top(range(m)) / lower:.4f}  "
              f"Lipschitz {(norm(centre) + h @ lipschitz) / lower:.4f}")
        print(f"  size {np.round(size / lower, 3)}  own {np.round(own / lower, 3)}  whole "
              f"{np.round(whole / lower, 3)}")
        print(f"  sides outside the vertices, size + own {(size[by_size[2:]] + own[by_size[2:]]).sum() / lower:.4f}"
              f", the smaller of that and whole {apart[by_size[2:]].sum() / lower:.4f}; vertex sides' own "
              f"{own[by_size[:2]].sum() / lower:.4f}; mixed {sum(p[0] for p in pairs) / lower:.4f}, largest "
              + ", ".join(f"({k},{l}) {value / lower:.3f}" for value, k, l in pairs[:4]))
        if not args.pairs:
            continue
        probes = np.vstack([c + corners(m) * h, c + h * rng.uniform(-1, 1, (150, m))])
        for value, k, l in pairs[:args.pairs]:
            local = mixed_at(probes, k, l).max()
            print(f"    pair ({k},{l}): h_k h_l H {value / lower:.3f}, H {hessian[k, l]:.3f}, sampled in the box "
                  f"{local:.3f} ({hessian[k, l] / local:.2f}x below H)")


if __name__ == "__main__":
    main()

"""What holds the K_c search's largest open boxes up: their bounds taken apart
(docs/coriolis_constant.md, "What is missing").

    python bench/diag_open_boxes.py [--robot panda] [--seconds 240] [--boxes 8] [--pairs 0] [--designs]

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
- ``mixed``: sum over pairs of h_p h_l H_pl (or a wide side's bands, as
  ``box_bounds`` takes them), its largest pairs;
- the Lipschitz form;
- with ``--pairs K``, for the K pairs of largest mixed term, the global bound
  H_pl beside the largest ``N(d2 Gamma/dq_p dq_l)`` sampled in the box (at
  its vertices and 150 random points, by central differences of Gamma,
  step 1e-4): how much a box-local bound could at best save;
- with ``--designs``, the mixed terms of three box-local forms of higher
  order beside the shipped ``sum h_p h_l H_pl`` (issue 50; the remainders
  from global bounds T_pls >= N(d3 Gamma/dq_p dq_l dq_s), the triangle
  inequality over the expansion's coefficients, as
  ``boxes.fourier_derivative_bounds`` takes H without ``mixed``):
  ``taylor``, the mixed derivatives at the box from the four corners of
  each pair's rectangle, ``N(g_pl) + sum_s h_s T_pls`` (its first part,
  ``value``, alone is not a bound); ``entrywise``, N of the tensor of
  per-entry bounds ``sum_pairs h_p h_l sum_alpha |alpha_p alpha_l| |C_alpha,e|``;
  ``planes``, the exact restriction of Gamma to each pair's plane through
  the centre (25 samples, its 2-D expansion) plus the third-order rest of
  the cut expansion, ``sum_{p<l<s} h_p h_l h_s T_pls``.

A box whose ``sampled`` is far below 1 and whose bound is far above it is
open because of its slack, not because it may hold K_c.
"""
import argparse
import itertools
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
from robot_dynamics_ros.dynamics.kc.boxes import (_axis_transforms, _band_change, _norm_bound,  # noqa: E402
                                                  _pair_norms, _transform_grid, _transform_matrices,
                                                  _whole_line_factor)
from robot_dynamics_ros.dynamics.kc.constant import config_constant_kernel  # noqa: E402
from robot_dynamics_ros.dynamics.kc.partition import (box_geometry, lower_end, prepare,  # noqa: E402
                                                      refine_unit, root_box)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", default="panda")
    parser.add_argument("--seconds", type=float, default=240.0)
    parser.add_argument("--boxes", type=int, default=8)
    parser.add_argument("--pairs", type=int, default=0)
    parser.add_argument("--designs", action="store_true")
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
    lines, (_, lipschitz, hessian, bands) = setup.lines, setup.derivatives
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

    designs = higher_order_designs(model, setup) if args.designs else None
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
        pairs = sorted(((min(h[k] * h[l] * hessian[k, l], h[k] * _band_change(hessian[k, l], bands[k, l], h[l]),
                              h[l] * _band_change(hessian[k, l], bands[l, k], h[k])), k, l)
                         for l in range(m) for k in range(l)), reverse=True)
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
        if designs is not None:
            print("  mixed terms: shipped {:.4f}, taylor {:.4f} (value {:.4f}), entrywise {:.4f}, planes {:.4f} "
                  "+ third-order rest {:.4f}".format(*(v / lower for v in designs(c, h, gamma_at))))
        if not args.pairs:
            continue
        probes = np.vstack([c + corners(m) * h, c + h * rng.uniform(-1, 1, (150, m))])
        for value, k, l in pairs[:args.pairs]:
            local = mixed_at(probes, k, l).max()
            print(f"    pair ({k},{l}): term {value / lower:.3f}, H {hessian[k, l]:.3f}, sampled in the box "
                  f"{local:.3f} ({hessian[k, l] / local:.2f}x below H)")


def higher_order_designs(model, setup):
    """A function of a box (c, h, gamma_at) -> the mixed terms of the
    shipped bound and of the three designs of ``--designs`` (module
    docstring), from the expansion of Gamma over the whole domain (every
    coordinate revolute; its coefficients held at once: 5^m n^3 complex
    numbers, 0.2 GB for panda)."""
    n, m = model.nv, len(setup.free)
    transforms = _axis_transforms(np.zeros(m, dtype=bool), setup.low, setup.high)
    sizes = (5,) * m
    grid = np.array(np.meshgrid(*[t[0] for t in transforms], indexing="ij")).reshape(m, -1).T
    q = np.tile(setup.base, (len(grid), 1))
    q[:, setup.free] = grid
    values = christoffel_symbols(model, q).reshape(len(grid), -1)
    coefficients = np.empty(values.shape, dtype=complex)
    _transform_grid(values, np.array(sizes), _transform_matrices(transforms), coefficients)
    magnitudes = np.abs(coefficients)
    sizes_n = np.empty(len(grid))  # nu_alpha, as the box search takes them (boxes._pair_norms)
    _pair_norms(coefficients, n, sizes_n)
    del values, coefficients
    orders = np.abs(np.array(np.meshgrid(*[[0, 1, 2, -2, -1]] * m, indexing="ij")).reshape(m, -1).T)
    pairs = list(itertools.combinations(range(m), 2))
    third = np.array([[[sizes_n @ (orders[:, p] * orders[:, l] * orders[:, s]) for s in range(m)]
                       for l in range(m)] for p in range(m)])
    per_entry = {(p, l): (orders[:, p] * orders[:, l]).astype(float) @ magnitudes for p, l in pairs}
    hessian = setup.derivatives[2]
    angles = 2.0 * np.pi * np.arange(5) / 5
    plane_orders = np.array([0, 1, 2, -2, -1])
    dft = np.exp(-1j * np.outer(plane_orders, angles)) / 5
    grams = np.empty((n, n, n + 2))
    unit = np.eye(m)

    def terms(c, h, gamma_at):
        shipped = sum(h[p] * h[l] * hessian[p, l] for p, l in pairs)
        taylor = value = planes = 0.0
        for p, l in pairs:
            corners = gamma_at(np.array([c + a * h[p] * unit[p] + b * h[l] * unit[l]
                                         for a in (1, -1) for b in (1, -1)]))
            g = _norm_bound(((corners[0] - corners[1] - corners[2] + corners[3])
                             / (4 * h[p] * h[l])).reshape(n, n, n))
            value += h[p] * h[l] * g
            taylor += h[p] * h[l] * (g + third[p, l] @ h)
            plane = gamma_at(np.array([c + x * unit[p] + y * unit[l] for x in angles for y in angles]))
            expansion = np.einsum("aj,bk,jke->abe", dft, dft, plane.reshape(5, 5, -1))
            weight_p = np.minimum(np.abs(plane_orders) * h[p], 2.0)
            weight_l = np.minimum(np.abs(plane_orders) * h[l], 2.0)
            plane_sizes = np.empty(25)
            _pair_norms(np.ascontiguousarray(expansion.reshape(25, -1)), n, plane_sizes)
            planes += (plane_sizes.reshape(5, 5) * np.outer(weight_p, weight_l)).sum()
        tensor = sum(h[p] * h[l] * per_entry[p, l] for p, l in pairs)
        entrywise = config_constant_kernel(np.ascontiguousarray(tensor.reshape(n, n, n)), grams)
        rest = sum(h[p] * h[l] * h[s] * third[p, l, s] for p, l, s in itertools.combinations(range(m), 3))
        return shipped, taylor, value, entrywise, planes, rest

    return terms


if __name__ == "__main__":
    main()

"""How loose the K_c refinement's bounds on the mixed second derivatives are, and how much a
bound from the Fourier coefficients of the squared norm would gain (docs/coriolis_constant.md).

    python bench/diag_mixed_derivative_bounds.py [--robot ur5_robot] [--pairs 1,2 3,5 ...]

For each pair (p, l) of the coordinates the branch and bound searches, three numbers for
S = sup_q ||d2 Gamma / dq_p dq_l (q)||_F:

- triangle: sum_alpha |a_p a_l| ||C_alpha||_F, the triangle inequality over the expansion's
  Fourier terms (what ``coriolis_boxes.fourier_derivative_bounds`` gives, Frobenius form);
- coefficients: sqrt(sum_gamma |A_gamma|), with A the Fourier coefficients of the
  trigonometric polynomial ||d2 Gamma / dq_p dq_l||_F^2 (degree 4 per angle: exact from
  9 points per angle), also a guaranteed bound, which keeps the cancellations between terms;
- sampled: the largest value on that 9-point grid, a lower bound of S.

Dense FFTs over 9^m points per entry of Gamma: seconds per pair for ur5's 5 angles, ~10 s
per pair for panda's 6 (fingers at 0.02 m), too slow as written for the refinement itself.

``--refine S``: then what the refinement (both cores) reaches in S seconds with the
expansion's mixed bounds H_pl replaced by the smaller of the two guaranteed bounds (their
cost above not counted), paired with the refinement as shipped, printed every 10 s.
``--ceiling`` adds a third run with H_pl replaced by the sampled maxima and the frozen
fingers' bound by 0: not bounds, but what no global bound on the mixed derivatives can
beat (the sampled maxima are below every such bound). ``--local`` adds a run where each
box's mixed terms use, per pair, the Frobenius norm of the exact mixed derivative at the
box's centre (16 more samples of Gamma per pair and box, their cost counted), fingers at
0 and no Lipschitz form: not bounds either (the value at the centre is below the box's
supremum), but what a box-local bound of the mixed derivatives could at best reach.

``--volume``: the share of 200,000 random configurations within the limits where k_c is
within 2, 5 and 10% of the refinement's lower end after 10 s, and the volume of the angles
the branch and bound covers: where k_c is near K_c, its boxes must be small.
"""

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).absolute().parent.parent / "test" / "support"))
import robots  # noqa: E402
from robot_dynamics_ros.dynamics import (  # noqa: E402
    christoffel_symbols, load_urdf)
from robot_dynamics_ros.dynamics.kc import boxes as coriolis_boxes, search as coriolis_constant  # noqa: E402
from robot_dynamics_ros.dynamics.kc.constant import config_coriolis_constant  # noqa: E402
from robot_dynamics_ros.dynamics.model.model import REVOLUTE  # noqa: E402

DEGREE_2_POINTS = 5   # samples per angle that determine a degree-2 trigonometric polynomial
DEGREE_4_POINTS = 9   # and a degree-4 one (the squared norm)
ENTRY_BLOCK = 48      # entries of Gamma transformed at once (memory)


def expansion(model, free):
    """Fourier coefficients C (5,)*m + (entries,) of Gamma over the angles ``free`` (the
    other coordinates at mid-range), the entries j <= k of Gamma[i, j, k] and their weights."""
    lower, upper, _ = model.joint_limits()
    middle = np.where(np.isfinite(lower) & np.isfinite(upper), (lower + upper) / 2, 0.0)
    angles = 2 * np.pi * np.arange(DEGREE_2_POINTS) / DEGREE_2_POINTS
    grid = np.array(np.meshgrid(*[angles] * len(free), indexing="ij")).reshape(len(free), -1).T
    q = np.tile(middle, (len(grid), 1))
    q[:, free] = grid
    n = model.nv
    _, j, k = np.unravel_index(np.arange(n ** 3), (n, n, n))
    keep = np.flatnonzero(j <= k)
    values = christoffel_symbols(model, q).reshape(-1, n ** 3)[:, keep]
    values = values.reshape((DEGREE_2_POINTS,) * len(free) + (len(keep),))
    coefficients = np.fft.fftn(values, axes=range(len(free))) / DEGREE_2_POINTS ** len(free)
    return coefficients, np.where(j[keep] < k[keep], 2.0, 1.0)


def pair_bounds(coefficients, weights, first, second):
    """(triangle, coefficients, sampled) for the mixed derivative in axes ``first`` and ``second``."""
    m = coefficients.ndim - 1
    exponents = np.fft.fftfreq(DEGREE_2_POINTS, 1 / DEGREE_2_POINTS)  # 0 1 2 -2 -1
    factor = (exponents.reshape([-1 if d == first else 1 for d in range(m)])
              * exponents.reshape([-1 if d == second else 1 for d in range(m)]))
    norms = np.sqrt((weights * np.abs(coefficients) ** 2).sum(-1))
    triangle = (np.abs(factor) * norms).sum()
    size = DEGREE_4_POINTS
    slots = np.ix_(*[[0, 1, 2, size - 2, size - 1]] * m)
    squared = np.zeros((size,) * m)
    for start in range(0, coefficients.shape[-1], ENTRY_BLOCK):
        block = coefficients[..., start:start + ENTRY_BLOCK]
        padded = np.zeros((size,) * m + (block.shape[-1],), dtype=complex)
        padded[slots] = -factor[..., None] * block
        values = np.fft.ifftn(padded, axes=range(m)) * size ** m
        squared += (weights[start:start + ENTRY_BLOCK] * np.abs(values) ** 2).sum(-1)
    squared_coefficients = np.fft.fftn(squared) / size ** m
    return triangle, np.sqrt(np.abs(squared_coefficients).sum()), np.sqrt(squared.max())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robot", default="ur5_robot", help="an example-robot-data URDF name (ur5_robot)")
    parser.add_argument("--pairs", nargs="*", default=None,
                        help="pairs of joint indices p,l (default: every pair of the searched angles)")
    parser.add_argument("--refine", type=float, default=0.0,
                        help="seconds of refinement with and without the coefficient bounds (0)")
    parser.add_argument("--ceiling", action="store_true",
                        help="with --refine: also a run with the sampled maxima, fingers at 0 (not bounds)")
    parser.add_argument("--local", action="store_true",
                        help="with --refine: also a run with each box's mixed derivatives at its centre "
                             "(not bounds)")
    parser.add_argument("--volume", action="store_true",
                        help="the share of configurations within 2, 5 and 10%% of K_c's lower end")
    parser.add_argument("--skip-pairs", action="store_true",
                        help="no pair bounds (and only the --local run of --refine)")
    options = parser.parse_args()
    model = load_urdf(Path(dict(robots.example_robot_urdfs())[options.robot]).read_text())
    # the angles the refinement searches: joints on the world do not enter Gamma; prismatic
    # joints (panda's fingers) stay at mid-range
    _, _, kinds = model.joint_limits()
    body = [model.body_joint_names.index(name) for name in model.joint_names]
    free = [c for c in range(model.nv) if kinds[c] == REVOLUTE and model.parent[body[c]] != -1]
    if options.volume:
        near_maximal_volume(model)
    start = time.monotonic()
    coefficients, weights = expansion(model, free)
    print(f"{options.robot}: angles {free}, {coefficients.shape[-1]} entries of Gamma, "
          f"expansion {time.monotonic() - start:.1f} s")
    if options.pairs:
        pairs = [tuple(free.index(int(x)) for x in pair.split(",")) for pair in options.pairs]
    else:
        pairs = list(itertools.combinations(range(len(free)), 2))
    print(f"{'pair':>6} {'triangle':>10} {'coefficients':>13} {'sampled':>10} {'ratios to sampled':>20}")
    mixed = np.full((len(free), len(free)), np.inf)
    sampled_maxima = np.full((len(free), len(free)), np.inf)
    for p, q in [] if options.skip_pairs else pairs:
        triangle, squared, sampled = pair_bounds(coefficients, weights, p, q)
        mixed[p, q] = mixed[q, p] = squared * (1 + 1e-6)  # the FFTs' rounding, generously
        sampled_maxima[p, q] = sampled_maxima[q, p] = sampled
        print(f"{free[p]:>3},{free[q]:<2} {triangle:10.4g} {squared:13.4g} {sampled:10.4g} "
              f"{triangle / sampled:9.2f} {squared / sampled:9.2f}   ({time.monotonic() - start:.0f} s)",
              flush=True)
    if options.refine > 0:
        runs = [] if options.skip_pairs else [
            ("as shipped", None, False), ("coefficient bounds", mixed, False)]
        if options.ceiling:
            runs.append(("ceiling (sampled maxima, not bounds)", sampled_maxima, True))
        for label, substitute, fingers_free in runs:
            refine_with(model, substitute, options.refine, label, fingers_free)
        if options.local:
            shipped = coriolis_constant.box_bounds
            coriolis_constant.box_bounds = centre_mixed_box_bounds
            try:
                refine_with(model, np.full((len(free), len(free)), np.inf), options.refine,
                            "mixed derivatives at the centres (not bounds)", True)
            finally:
                coriolis_constant.box_bounds = shipped


def centre_mixed_box_bounds(model, setup, centres, halves, offer, pace):
    """``box_bounds`` with the mixed terms sum_{p<l} h_p h_l ||d2 Gamma/dq_p dq_l (c)||_F
    (each box's centre c; revolute coordinates only) and no Lipschitz form."""
    free, m, n = setup.free, len(setup.free), model.nv
    value, first, second, bands = setup.derivatives
    own = np.diag(np.diag(second))
    bounds, excess = yield from coriolis_boxes.box_bounds(
        model, setup._replace(derivatives=(value, np.full_like(first, np.inf), own, np.zeros_like(bands))),
        centres, halves, offer, pace)
    angles = 2 * np.pi * np.arange(1, DEGREE_2_POINTS) / DEGREE_2_POINTS
    weights = (2 * np.sin(angles) + 4 * np.sin(2 * angles)) / DEGREE_2_POINTS  # f'(0); f(0)'s is 0
    pairs = list(itertools.combinations(range(m), 2))
    offsets = np.zeros((len(pairs), len(angles) ** 2, m))
    for index, (p, l) in enumerate(pairs):
        offsets[index, :, p] = np.repeat(angles, len(angles))
        offsets[index, :, l] = np.tile(angles, len(angles))
    plane = np.outer(weights, weights).reshape(-1)
    mixed = np.empty((len(centres), len(pairs)))
    for start in range(0, len(centres), 16):
        some = centres[start:start + 16]
        q = np.tile(setup.base, (len(some) * offsets[..., 0].size, 1))
        q[:, free] = (some[:, None, None, :] + offsets[None]).reshape(-1, m)
        gamma = np.empty((len(q), n, n, n))
        chunk = pace.chunk(model)
        for first_row in range(0, len(q), chunk):
            christoffel_symbols(model, q[first_row:first_row + chunk], out=gamma[first_row:first_row + chunk])
            yield
        derivative = np.einsum("bpsk,s->bpk", gamma.reshape(len(some), len(pairs), len(plane), -1), plane)
        mixed[start:start + 16] = np.sqrt((derivative ** 2).sum(-1))
    for index, (p, l) in enumerate(pairs):
        term = halves[:, p] * halves[:, l] * mixed[:, index]
        bounds += term
        excess[:, p] += 0.5 * term
        excess[:, l] += 0.5 * term
    return bounds, excess


def near_maximal_volume(model, samples=200_000):
    """Print the share of random configurations where k_c is near the lower end."""
    refinement = coriolis_constant.CoriolisConstantRefinement(model)
    lower = refinement.refine(10.0, parallel=True).lower
    free, prismatic, low, high = refinement.domain()
    rng = np.random.default_rng(1)
    q = rng.uniform(refinement._lower_limit, refinement._upper_limit, (samples, model.nv))
    values = config_coriolis_constant(model, q)
    shares = ", ".join(f"{np.mean(values > lower / ratio):.4f}" for ratio in (1.02, 1.05, 1.10))
    print(f"lower end {lower:.6g}; {np.sum(~prismatic)} angles, their volume "
          f"{np.prod((high - low)[~prismatic]):.4g} rad^{np.sum(~prismatic)}; "
          f"share of {samples} configurations with k_c above lower / 1.02, 1.05, 1.10: {shares}")


def refine_with(model, mixed, seconds, label, fingers_free=False):
    """Refine a fresh refinement of ``model`` for ``seconds``, its expansion's H replaced
    by the smaller of H and ``mixed`` (when given: the refinement's own expansion call,
    the one with the default combination, not the frozen fingers' ones, whose bounds
    are 0 with ``fingers_free``)."""
    shipped = coriolis_constant.fourier_derivative_bounds

    def substituted(*args, **keywords):
        bounds = yield from shipped(*args, **keywords)
        if len(args) > 9 or keywords:
            return (0.0,) + tuple(bounds[1:]) if fingers_free else bounds
        value, first, second, bands = bounds
        return value, first, np.minimum(second, mixed), bands

    coriolis_constant.fourier_derivative_bounds = shipped if mixed is None else substituted
    try:
        refinement = coriolis_constant.CoriolisConstantRefinement(model)
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            interval = refinement.refine(min(10.0, seconds - (time.monotonic() - start)), parallel=True)
            print(f"{label}: {time.monotonic() - start:5.1f} s [{interval.lower:.5f}, {interval.upper:.5f}] "
                  f"upper / lower {interval.upper / interval.lower:.3f}", flush=True)
            if interval.finished:
                break
    finally:
        coriolis_constant.fourier_derivative_bounds = shipped


if __name__ == "__main__":
    main()

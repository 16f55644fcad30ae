"""The guaranteed interval for K_c = sup_q k_c(q) (issue 10, docs/coriolis_constant.md).

Oracles independent of the code under test: k_c from numpy's SVD of
Gamma_k (``np.linalg.norm(., 2)``), an ascent by scipy's L-BFGS-B from many
random starts, the joint limits read from the URDF text, and Pinocchio for
the structure that the method relies on.
"""
import threading
import tracemalloc
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize

from kc_ascent import independent_ascent, numpy_kc
from robots import (PinocchioOracle, example_robot_urdf, joint_ranges, load_pinocchio, named_urdf,
                    worst_error_without_jit)
from robot_dynamics_ros.dynamics import (
    CoriolisConstantError, CoriolisConstantRefinement, christoffel_symbols, coriolis_bounds,
    coriolis_constant_interval, load_urdf, puma_urdf)
from robot_dynamics_ros.dynamics.kc import global_coriolis_constant
from robot_dynamics_ros.dynamics.kc.boxes import (_norm_bound, _sides_outside, _vertices_top, _whole_line_factor,
                                                  box_bounds, lines_through)
from robot_dynamics_ros.dynamics.kc.constant import kc_at
from robot_dynamics_ros.dynamics.kc.search import Pace, refinement_for
from robot_dynamics_ros.dynamics.kc.first_bound import first_upper_bound
from robot_dynamics_ros.dynamics.model.state import at_identity_base

# The configuration of the issue: panda's k_c there (4.36844) is above the
# K_c that the sampled search used to publish (4.36590). Found by 20,000
# random q within the limits and L-BFGS-B from the 20 best.
PANDA_ISSUE_Q = np.array([-0.9148839020267572, -0.5665147892958299, 1.6698362607375645,
                          -0.4049970321258943, 0.43890521457801895, 2.4762625980729274,
                          -1.1575994647517798, 0.04, 0.0])


def _urdf(name):
    return puma_urdf() if name == "puma" else named_urdf(name)


ADVERSARIAL = ["panda", "ur5_robot", "kinova", "puma", "solo12", "double_pendulum",
               "chain-11-3", "chain-12-6", "chain-13-12", "tree-21-5", "tree-22-9", "tree-23-12"]


@pytest.mark.parametrize("name", ADVERSARIAL)
@pytest.mark.slow
def test_no_ascent_exceeds_the_guaranteed_bounds(name):
    """An independent ascent never exceeds the first bound nor the refined
    upper end; the lower end is k_c at its witness (numpy), within the
    limits, and the ascent, started from the witness too, reaches it."""
    urdf = _urdf(name)
    model = load_urdf(urdf)
    refinement = CoriolisConstantRefinement(model)
    first = refinement.interval.upper
    interval = refinement.refine(1.5)
    ranges = joint_ranges(model, urdf)
    assert np.all(interval.witness >= ranges[:, 0]) and np.all(interval.witness <= ranges[:, 1])
    at_witness = float(numpy_kc(christoffel_symbols(model, interval.witness)))
    assert abs(at_witness - interval.lower) <= 1e-10 * interval.lower
    best, where = independent_ascent(model, urdf, extra_starts=[interval.witness])
    assert best <= interval.upper <= first, (best, interval, first)
    assert interval.lower <= best * (1 + 1e-10)
    print(f"\n{name}: first bound {first:.6g}, K_c in [{interval.lower:.6g}, {interval.upper:.6g}], "
          f"ascent {best:.6g}, gap {interval.upper / interval.lower:.3g}, finished {interval.finished}")


def test_mimic_reduced_model_keeps_a_valid_first_bound():
    """panda with the second finger following the first (q shorter by one):
    Gamma transforms as a tensor; the bound still holds."""
    urdf = example_robot_urdf("panda")
    model = load_urdf(urdf, mimic="reduce")
    interval = coriolis_constant_interval(model, time_budget=1.0)
    best, _ = independent_ascent(model, urdf, extra_starts=[interval.witness], samples=500, starts=2)
    assert best <= interval.upper
    assert interval.lower <= best * (1 + 1e-10)


@pytest.mark.parametrize("name, options", [
    ("puma", {}), ("panda", {}), ("panda", {"mimic": "reduce"}), ("tree-22-9", {}),
    ("solo12", {"base": "floating"}), ("talos_full_v2", {"base": "floating"})])
def test_kc_at_one_configuration_is_numpy_kc(name, options):
    """The witness's k_c (``kc_at``, through the kernel of ``all_terms``)
    equals k_c from numpy's SVD of the dense Gamma, for a chain, a fixed and
    a floating tree, and a mimic-reduced model (its reduced Gamma), at random
    configurations and at the first interval's witness."""
    model = load_urdf(_urdf(name) if name != "talos_full_v2" else example_robot_urdf(name), **options)
    rng = np.random.default_rng(5)
    joints = rng.uniform(-1.5, 1.5, (4, model.nq - (7 if model.floating else 0)))
    configurations = list(at_identity_base(model, joints))
    configurations.append(CoriolisConstantRefinement(model).interval.witness)
    for q in configurations:
        expected = float(numpy_kc(christoffel_symbols(model, q)))
        assert abs(kc_at(model, q) - expected) <= 1e-12 * expected, (q, kc_at(model, q), expected)


def test_panda_configuration_of_the_issue():
    """The configuration where the sampled search was beaten (issue 10)."""
    model = load_urdf(example_robot_urdf("panda"))
    kc = float(numpy_kc(christoffel_symbols(model, PANDA_ISSUE_Q)))
    assert kc > 4.3684  # above the 4.36590 that used to be published
    interval = coriolis_constant_interval(model, time_budget=2.0)
    assert kc <= interval.upper
    assert kc <= coriolis_bounds(model, PANDA_ISSUE_Q, np.zeros(model.nv)).kc_global


def _line_samples(model, q, coordinate, values):
    batch = np.tile(q, (len(values), 1))
    batch[:, coordinate] = values
    return christoffel_symbols(model, batch).reshape(len(values), -1)


@pytest.mark.parametrize("name", ["panda", "tree-24-8"])
def test_gamma_has_degree_two_in_every_joint(name):
    """The structure ``box_bound`` relies on: along any joint, Gamma is a
    trigonometric polynomial of degree <= 2 (revolute) or a polynomial of
    degree <= 2 (prismatic). Fitted through 5 (or 3) points, it must give
    Gamma elsewhere on the line; degree 1 fails (checked, so that the test
    can fail)."""
    urdf = _urdf(name)
    model = load_urdf(urdf)
    oracle = PinocchioOracle(load_pinocchio(urdf), model.joint_names)
    rng = np.random.default_rng(8)
    kinds = model.joint_type[[model.body_joint_names.index(j) for j in model.joint_names]]
    lower_degree_fails = 0
    for l in range(model.nv):
        q = rng.uniform(-1.0, 1.0, model.nv)
        check = rng.uniform(-3.0, 3.0, 4)
        truth = np.array([oracle.christoffel_symbols(np.where(np.arange(model.nv) == l, t, q)).ravel()
                          for t in check])
        if kinds[l] == 1:
            nodes = np.array([-0.3, 0.0, 0.4])
            fit = np.polynomial.polynomial.polyfit(nodes, _line_samples(model, q, l, nodes), 2)
            predicted = np.polynomial.polynomial.polyval(check, fit).T
        else:
            def basis(t, degree):
                return np.stack([np.ones_like(t)] + [f(d * t) for d in range(1, degree + 1)
                                                      for f in (np.cos, np.sin)], axis=1)
            nodes = 2 * np.pi * np.arange(5) / 5 + 0.1
            coef = np.linalg.solve(basis(nodes, 2), _line_samples(model, q, l, nodes))
            predicted = basis(check, 2) @ coef
            low = np.linalg.lstsq(basis(nodes, 1), _line_samples(model, q, l, nodes), rcond=None)[0]
            lower_degree_fails += np.abs(basis(check, 1) @ low - truth).max() > 1e-6
        scale = np.abs(truth).max()
        assert np.abs(predicted - truth).max() <= 1e-9 * scale, (name, model.joint_names[l])
    assert lower_degree_fails > 0


@pytest.mark.parametrize("name", ["solo12", "tree-24-8", "panda"])
def test_joints_on_the_world_and_gravity_do_not_enter_gamma(name):
    """Moving a joint whose parent is the world moves its subtree rigidly:
    Gamma (Pinocchio's) does not change, whatever gravity is."""
    urdf = _urdf(name)
    model = load_urdf(urdf)
    oracle = PinocchioOracle(load_pinocchio(urdf), model.joint_names)
    roots = [i for i, j in enumerate(model.joint_names)
             if model.parent[model.body_joint_names.index(j)] < 0]
    assert roots
    rng = np.random.default_rng(9)
    for _ in range(3):
        q = rng.uniform(-1.0, 1.0, model.nv)
        moved = q.copy()
        moved[roots] += rng.uniform(-2.0, 2.0, len(roots))
        gamma = oracle.christoffel_symbols(q)
        assert np.abs(oracle.christoffel_symbols(moved) - gamma).max() <= 1e-12 * np.abs(gamma).max()
        assert np.abs(christoffel_symbols(model.with_gravity([3.0, -2.0, 20.0]), q) - gamma).max() \
            <= 1e-10 * np.abs(gamma).max()
    assert first_upper_bound(model.with_gravity([0.0, 0.0, -100.0]))[0] == first_upper_bound(model)[0]


@pytest.mark.parametrize("name", ["double_pendulum", "chain-31-3"])
@pytest.mark.slow
def test_branch_and_bound_reaches_the_tolerance(name):
    """Few coordinates: the branch and bound brings upper / lower below 1.10
    and stops; an ascent stays below upper."""
    urdf = _urdf(name)
    model = load_urdf(urdf)
    interval = coriolis_constant_interval(model, time_budget=30.0)
    assert interval.finished
    assert interval.upper <= 1.10 * interval.lower
    best, _ = independent_ascent(model, urdf, extra_starts=[interval.witness])
    assert interval.lower <= best * (1 + 1e-10) and best <= interval.upper
    print(f"\n{name}: K_c in [{interval.lower:.6g}, {interval.upper:.6g}]")


def _finish(generator):
    """The return value of a refinement generator, run to its end."""
    try:
        while True:
            next(generator)
    except StopIteration as stop:
        return stop.value


@pytest.mark.parametrize("name", ["ur5_robot", "panda", "chain-41-4", "chain-45-4", "tree-44-5"])
@pytest.mark.slow
def test_every_box_bound_holds_on_its_box(name):
    """Each box's bound of the branch and bound (``box_bounds``) is above
    k_c (numpy's SVD) everywhere in the box: at its vertices, at random
    points and at L-BFGS-B maxima within it, for boxes from a 1e-3 of the
    domain to all of it; and it is not trivial: on small boxes it is within
    a few percent of k_c at the centre, plus the frozen coordinates' bound
    (so the test could fail). The random robots have prismatic sides
    (``_lines``: parabolas); panda's
    fingers, and tree-44-5's prismatic leaf, are frozen at mid-range
    (``box_setup``), so the points take any of their values within the
    limits."""
    urdf = _urdf(name)
    model = load_urdf(urdf)
    setup = _finish(CoriolisConstantRefinement(model, memory_limit_mb=40.0).box_setup())
    ranges = joint_ranges(model, urdf)
    frozen = [c for c in np.flatnonzero(model.parent >= 0) if c not in setup.free]
    if name == "panda":
        assert [model.joint_names[c] for c in frozen] == ["panda_finger_joint1", "panda_finger_joint2"]
    rng = np.random.default_rng(5)
    m = len(setup.free)
    scales = np.repeat([1.0, 0.3, 0.1, 0.01, 1e-3], 6)
    halves = 0.5 * (setup.high - setup.low) * scales[:, None] * rng.uniform(0.3, 1.0, (len(scales), m))
    centres = rng.uniform(setup.low + halves, setup.high - halves)
    bounds, _ = _finish(box_bounds(model, setup, centres, halves, lambda values, q: None, Pace()))

    def kc(points, fingers):
        q = np.tile(setup.base, (len(points), 1))
        q[:, setup.free] = points
        q[:, frozen] = fingers
        return numpy_kc(christoffel_symbols(model, q))

    corners = np.array(np.meshgrid(*[[-1.0, 1.0]] * m, indexing="ij")).reshape(m, -1).T
    for box, (centre, half, bound) in enumerate(zip(centres, halves, bounds)):
        points = np.concatenate([centre + corners * half, centre + half * rng.uniform(-1, 1, (150, m))])
        fingers = rng.choice(ranges[frozen].T.ravel(), (len(points), len(frozen))) if frozen else 0.0
        values = kc(points, fingers)
        best = values.max()
        for start in np.argsort(values)[-2:]:
            result = minimize(lambda x: -kc(x[None], fingers[start] if frozen else 0.0)[0], points[start],
                              method="L-BFGS-B", bounds=np.stack([centre - half, centre + half], 1),
                              options={"maxiter": 30})
            best = max(best, -result.fun)
        assert best <= bound, (box, scales[box], best, bound)
        if scales[box] <= 1e-3:
            assert bound <= 1.05 * kc(centre[None], setup.base[frozen])[0] + setup.frozen_bound, (box, bound)


def test_the_cheap_norm_bound_holds_and_is_near_n():
    """``_norm_bound`` (no eigen-solver) is above N from numpy's SVD on
    random tensors with general, skew (paired singular values), rank-one,
    tiny and huge slices, and on panda's slopes of Gamma it is within a few
    per cent of N (about 1.07x), where the Frobenius norm alone is about 1.2x above it
    (so the Schatten term is what makes it tight, and the test could
    fail)."""
    rng = np.random.default_rng(11)
    n = 9
    for trial in range(300):
        A = rng.normal(size=(n, n, n)) * 10.0 ** rng.uniform(-100, 100)
        kind = trial % 3
        if kind == 1:
            A = A - A.transpose(1, 0, 2)
        elif kind == 2:
            A = np.einsum("i,j,k->ijk", rng.normal(size=n), rng.normal(size=n), rng.normal(size=n))
        exact = numpy_kc(A[None])[0]
        assert exact <= _norm_bound(A) <= np.sqrt(np.sum(A * A)) * (1 + 1e-12), trial
    model = load_urdf(named_urdf("panda"))
    ratios, frobenius = [], []
    for q in rng.uniform(-2.5, 2.5, (20, model.nv)):
        step = np.zeros(model.nv)
        step[rng.integers(1, 7)] = 1e-5
        slope = (christoffel_symbols(model, q + step) - christoffel_symbols(model, q - step)) / 2e-5
        exact = numpy_kc(slope[None])[0]
        ratios.append(_norm_bound(slope) / exact)
        frobenius.append(np.sqrt(np.sum(slope ** 2, axis=(0, 1)).sum()) / exact)
    assert min(ratios) >= 1.0 and np.median(ratios) <= 1.10 < np.median(frobenius), (ratios, frobenius)


def test_the_sides_outside_the_vertices_hold_together():
    """``_sides_outside`` bounds the linear sides outside the vertex search
    together, by ``N'(sum_l t_l D_l)`` at half their vertices: on panda's
    slopes of Gamma (central differences) at random configurations and
    half-widths, it is above N of that sum at every vertex, both signs
    (numpy's SVD), and never above the sides' separate bounds; where
    their slopes cancel it is well below them (median 0.9x or less here,
    so the test could fail). A side whose whole line is smaller stays
    apart."""
    model = load_urdf(named_urdf("panda"))
    rng = np.random.default_rng(7)
    n, m = model.nv, 6
    ratios = []
    for trial in range(20):
        q = rng.uniform(-2.5, 2.5, model.nv)
        slopes = np.array([(christoffel_symbols(model, q + step) - christoffel_symbols(model, q - step)) / 2e-5
                           for step in np.eye(model.nv)[1:7] * 1e-5]).reshape(m, -1)
        h = rng.uniform(0.05, 0.5, m)
        size = np.array([h[l] * _norm_bound(slopes[l].reshape(n, n, n)) for l in range(m)])
        along, whole = rng.uniform(0.0, 0.01, m), np.full(m, np.inf)
        taken = np.zeros(m, dtype=bool)
        taken[rng.choice(m, 2, replace=False)] = True
        if trial % 2:
            whole[rng.choice(np.flatnonzero(~taken))] = 0.0  # its whole line: it stays apart
        apart = np.minimum(size + along, whole)
        bound = _sides_outside(slopes, n, h, size, along, apart, whole, taken, 0.0, 0.0, np.empty(n ** 3),
                               np.empty(m, dtype=np.int64))
        linear = [l for l in range(m) if not taken[l] and whole[l] > 0.0]
        signs = np.array(np.meshgrid(*[[-1.0, 1.0]] * len(linear), indexing="ij")).reshape(len(linear), -1).T
        exact = numpy_kc(((signs * h[linear]) @ slopes[linear]).reshape(-1, n, n, n)).max() + along[linear].sum()
        assert exact <= bound <= apart[~taken].sum(), trial
        ratios.append(bound / apart[~taken].sum())
    assert np.median(ratios) <= 0.9, ratios


def test_a_skew_slice_keeps_the_cheap_norm_bound_near_n():
    """The slice of a joint on the fixed world is skew, its singular values
    in pairs, where the Schatten term is sqrt(2) above ||.||_2^2:
    ``_norm_bound`` takes ||S||_2 + ||E||_F for a slice that is skew to 1%
    (S, E its skew and symmetric parts). On Gamma at panda's
    configurations (its slice 0 skew: checked) it is above N (numpy's
    SVD) and within 5% of it (median; 1.036 here), where the Schatten
    form alone stands 7% above (1.073: so the test could fail)."""
    model = load_urdf(named_urdf("panda"))
    rng = np.random.default_rng(5)
    ratios = []
    for q in rng.uniform(-2.5, 2.5, (20, model.nv)):
        gamma = christoffel_symbols(model, q)
        assert np.allclose(gamma[:, :, 0], -gamma[:, :, 0].T, rtol=0, atol=1e-12 * np.abs(gamma).max())
        exact = numpy_kc(gamma[None])[0]
        assert exact <= _norm_bound(gamma)
        ratios.append(_norm_bound(gamma) / exact)
    assert np.median(ratios) <= 1.05, ratios


def test_every_linear_side_at_the_vertices():
    """``_vertices_top``, one side flipped per vertex (a Gray code), is the
    largest ``N'`` of ``centre + sum_l s_l h_l D_l`` over all 2^k sign
    vectors, formed here vertex by vertex (so a vertex skipped could fail),
    and above N there (numpy's SVD): on panda's Gamma and its slopes
    (central differences) at random configurations, with 3 to 6 sides."""
    model = load_urdf(named_urdf("panda"))
    rng = np.random.default_rng(8)
    n, m = model.nv, 6
    for trial in range(8):
        q = rng.uniform(-2.5, 2.5, model.nv)
        centre = christoffel_symbols(model, q).reshape(-1)
        slopes = np.array([(christoffel_symbols(model, q + step) - christoffel_symbols(model, q - step)) / 2e-5
                           for step in np.eye(model.nv)[1:7] * 1e-5]).reshape(m, -1)
        h = rng.uniform(0.05, 0.5, m)
        count = 3 + trial % 4
        sides = rng.permutation(m)[:count]
        top, rounding = _vertices_top(centre, slopes, n, h, sides, count, 0.0, np.empty(n ** 3), np.empty(m))
        signs = np.array(np.meshgrid(*[[-1.0, 1.0]] * count, indexing="ij")).reshape(count, -1).T
        vertices = centre + (signs * h[sides]) @ slopes[sides]
        each = [_norm_bound(v.reshape(n, n, n)) for v in vertices]
        assert top == pytest.approx(max(each), rel=1e-12), trial
        assert numpy_kc(vertices.reshape(-1, n, n, n)).max() <= top
        assert 0.0 < rounding < 1e-12


def test_a_whole_line_bounds_the_change_along_it():
    """A revolute side's whole change, ``sum_r factor_r(h) N'(row_r)`` over
    the rows of its trigonometric interpolant (``_whole_line_factor``), is
    above ``N(Gamma(c + t e_l) - Gamma(c))`` (numpy's SVD) on 400 points of
    [-h, h] for panda's seven angles, from a tenth of a radian to all of
    their range; at the widest, within 3x of the largest sampled change
    (1.6-2.5x here: the triangle inequality over four rows, and N' >= N) and
    below the linear model with its rest (so a wrong factor could fail).
    The factor of a cosine row at a tiny angle has no cancellation: 1 - cos
    x from above, to 1e-14 relative."""
    model = load_urdf(named_urdf("panda"))
    lines = lines_through(np.zeros(7, dtype=bool), np.full(7, -np.pi), np.full(7, np.pi))
    rng = np.random.default_rng(3)
    centre = np.concatenate([rng.uniform(-1.5, 1.5, 7), [0.02, 0.02]])
    scale = numpy_kc(christoffel_symbols(model, centre))
    n = model.nv
    for l in range(7):
        q = np.tile(centre, (5, 1))
        q[1:, l] += lines.offsets[l]
        samples = christoffel_symbols(model, q).reshape(5, -1)
        rows = [lines.curvature[l, r] @ samples for r in range(4)]
        norms = [_norm_bound(row.reshape(n, n, n)) for row in rows]
        for h in (0.1, 0.7, 1.6, 2.9):
            whole = sum(_whole_line_factor(r, h) * norms[r] for r in range(4))
            q = np.tile(centre, (400, 1))
            q[:, l] += np.linspace(-h, h, 400)
            change = numpy_kc(christoffel_symbols(model, q) - christoffel_symbols(model, centre))
            # the box bound adds a rounding margin per norm (``value_margin``); here 1e-12 k_c
            assert change.max() <= whole + 1e-12 * scale, (l, h, change.max(), whole)
        if change.max() > 1e-6 * scale:  # not the first joint, on which Gamma does not depend
            assert whole <= 3.0 * change.max(), (l, whole, change.max())
            slope = _norm_bound((lines.derivative[l] @ samples[1:]).reshape(n, n, n))
            linear = h * slope + sum(min(lines.scale[l, r] * h ** lines.power[l, r], lines.cap[l, r]) * norms[r]
                                     for r in range(4))
            assert whole < linear, (l, whole, linear)  # what the whole line is for
    x = 1e-5
    exact = x * x / 2 - x ** 4 / 24  # 1 - cos x to far below double precision at this x
    assert exact <= _whole_line_factor(0, x) <= exact * (1 + 1e-14)


@pytest.mark.slow
def test_refine_only_tightens_and_continues():
    """upper never increases, lower never decreases, the witness always
    gives lower, and a second call continues rather than restarts."""
    urdf = _urdf("chain-32-3")
    model = load_urdf(urdf)
    refinement = refinement_for(model)
    seen = [refinement.interval]
    while not seen[-1].finished:
        seen.append(refinement.refine(0.001))
    assert len(seen) > 3
    for old, new in zip(seen, seen[1:]):
        assert new.upper <= old.upper and new.lower >= old.lower
        assert abs(numpy_kc(christoffel_symbols(model, new.witness)) - new.lower) <= 1e-10 * new.lower
    assert seen[-1].upper < seen[0].upper
    assert coriolis_constant_interval(model, time_budget=5.0) is seen[-1]
    assert global_coriolis_constant(model) == seen[-1].upper


@pytest.mark.slow  # two refinements to the end
def test_one_thread_and_every_core_reach_the_same_interval():
    """The node refines on one thread, the replay on every core: the same
    boxes get the same bounds, so both finish with the same interval."""
    model = load_urdf(_urdf("chain-31-3"))
    alone = CoriolisConstantRefinement(model).refine(30.0, parallel=False)
    shared = CoriolisConstantRefinement(model).refine(30.0, parallel=True)
    assert alone.finished and shared.finished
    assert (alone.lower, alone.upper) == (shared.lower, shared.upper)
    np.testing.assert_array_equal(alone.witness, shared.witness)


def test_reads_while_refining_in_a_thread():
    """A node reads the interval while a thread refines: every read is one
    consistent interval, and the bounds report it."""
    model = load_urdf(_urdf("chain-33-3"))
    refinement = refinement_for(model)
    worker = threading.Thread(target=refinement.refine, args=(3.0,))
    worker.start()
    reads = []
    while worker.is_alive():
        bounds = coriolis_bounds(model, np.zeros(model.nv), np.ones(model.nv))
        reads.append((bounds.kc_global_lower, bounds.kc_global))
    worker.join()
    assert all(lower <= upper for lower, upper in reads)
    assert [u for _, u in reads] == sorted((u for _, u in reads), reverse=True)
    assert [lo for lo, _ in reads] == sorted(lo for lo, _ in reads)


def _chain_with_a_slide(lower, upper):
    """Three links on a turning base: revolute, prismatic (limits lower,
    upper), revolute, revolute."""
    joints = [("revolute", "0 0 1", "-3 3"), ("prismatic", "1 0 0", f"{lower} {upper}"),
              ("revolute", "0 1 0", "-2 2"), ("revolute", "1 0 0", "-2.5 2.5")]
    links = "".join(f'<link name="l{i}"><inertial><origin xyz="0.1 0.02 {0.05 * i}"/><mass value="{1 + i}"/>'
                    f'<inertia ixx="0.02" iyy="0.03" izz="0.04" ixy="0" ixz="0" iyz="0"/></inertial></link>'
                    for i in range(1, 5))
    body = "".join(f'<joint name="j{i}" type="{kind}"><parent link="l{i - 1}"/><child link="l{i}"/>'
                   f'<origin xyz="0 0.1 0.3"/><axis xyz="{axis}"/>'
                   f'<limit lower="{limits.split()[0]}" upper="{limits.split()[1]}" effort="1" velocity="1"/>'
                   f'</joint>' for i, (kind, axis, limits) in enumerate(joints, 1))
    return f'<robot name="slide"><link name="l0"/>{links}{body}</robot>'


@pytest.mark.parametrize("lower,upper", [(0.2, 0.2), (-0.4, -0.4)])
def test_a_joint_held_at_one_value_is_no_coordinate_of_the_search(lower, upper):
    """Limits lower == upper hold a joint still: the refinement finishes (a
    zero-width prismatic range divided by zero and never finished) with an
    interval that holds an independent ascent's best, and warns of nothing."""
    urdf = _chain_with_a_slide(lower, upper)
    model = load_urdf(urdf)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        interval = CoriolisConstantRefinement(model).refine(30.0)
    assert interval.finished and interval.witness[1] == lower
    best, _ = independent_ascent(model, urdf, extra_starts=[interval.witness])
    assert interval.lower <= best * (1 + 1e-10) and best <= interval.upper <= 1.10 * interval.lower


@pytest.mark.parametrize("memory_limit_mb", [1e5, 1e300])
def test_a_large_memory_budget_is_taken_as_needed(memory_limit_mb):
    """The box list grows as the boxes come: a budget of 1e5 MB (the top of
    the node's parameter range) asked for 50 GB at once, 1e300 failed."""
    model = load_urdf(_urdf("chain-31-3"))
    tracemalloc.start()
    try:
        interval = CoriolisConstantRefinement(model, memory_limit_mb=memory_limit_mb).refine(30.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert interval.finished and peak < 200e6, (interval, peak)


def test_memory_stays_bounded():
    """A 44-joint humanoid refines within 200 MB (chunks of k_c, no batch of
    all samples), and a tiny box budget stops the branch and bound cleanly
    with a valid bound."""
    model = load_urdf(example_robot_urdf("talos_full_v2"))
    tracemalloc.start()
    try:
        CoriolisConstantRefinement(model).refine(2.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 200e6, peak
    urdf = _urdf("chain-34-3")
    small = CoriolisConstantRefinement(load_urdf(urdf), tolerance=1.0, memory_limit_mb=0.5)
    interval = small.refine(30.0)
    assert interval.finished
    best, _ = independent_ascent(load_urdf(urdf), urdf, extra_starts=[interval.witness])
    assert best <= interval.upper


def test_payload_model_has_its_own_first_bound_at_once():
    urdf = _urdf("ur5_robot")
    model = load_urdf(urdf)
    heavy = model.with_payload("tool0", 8.0, [0.0, 0.0, 0.2], 0.05 * np.eye(3))
    assert refinement_for(heavy) is not refinement_for(model)
    bounds = coriolis_bounds(heavy, np.zeros(heavy.nv), np.ones(heavy.nv))
    assert bounds.kc_global > global_coriolis_constant(model)
    best, _ = independent_ascent(heavy, urdf, samples=500, starts=2)
    assert best <= bounds.kc_global


def test_without_jit_the_first_bound_is_the_same():
    """NUMBA_DISABLE_JIT=1 runs the same kernels as Python (DESIGN.md)."""
    jit = first_upper_bound(load_urdf(puma_urdf()))[0]
    plain = worst_error_without_jit(
        "from robot_dynamics_ros.dynamics import load_urdf, puma_urdf\n"
        "from robot_dynamics_ros.dynamics.kc.first_bound import first_upper_bound\n"
        "print('WORST', repr(first_upper_bound(load_urdf(puma_urdf()))[0]))\n")
    assert abs(plain - jit) <= 1e-12 * jit


@pytest.mark.parametrize("settings, needle", [
    ({"tolerance": 0.9}, "tolerance"),
    ({"tolerance": float("nan")}, "tolerance"),
    ({"memory_limit_mb": 0}, "memory_limit_mb"),
    ({"memory_limit_mb": "lots"}, "memory_limit_mb"),
])
def test_bad_settings(settings, needle):
    with pytest.raises(CoriolisConstantError, match=needle):
        CoriolisConstantRefinement(load_urdf(puma_urdf()), **settings)


def test_bad_budgets():
    model = load_urdf(puma_urdf())
    with pytest.raises(CoriolisConstantError, match="seconds"):
        CoriolisConstantRefinement(model).refine(-1.0)
    with pytest.raises(CoriolisConstantError, match="time_budget"):
        coriolis_constant_interval(model, time_budget=float("nan"))

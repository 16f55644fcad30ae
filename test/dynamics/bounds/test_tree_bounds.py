"""The bounds from Gamma's slices over related joints (issue 21).

Against LAPACK on Pinocchio's Gamma, C and M; the block layout against the
tree; the floating base's zero slices against Pinocchio; the certified norm
of the base's slices against LAPACK. bench/diag_tree_bounds.py runs the same
comparison on 1,000 configurations of each humanoid.
"""
import textwrap
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from numba import njit

from robots import (PinocchioOracle, example_robot_urdf, load_pinocchio, random_urdf, rel_err,
                    topology_urdf, worst_error_without_jit)

from robot_dynamics_ros.dynamics import (BOUNDS_FIELDS, all_terms, christoffel_symbols, load_urdf,
                                        mass_matrix)
from robot_dynamics_ros.dynamics.bounds.coriolis_bounds import bound_vectors
from robot_dynamics_ros.dynamics.algorithms.christoffel import christoffel_tree
from robot_dynamics_ros.dynamics.bounds.cores import christoffel_cores, core_size, shifted_spans, slice_core
from robot_dynamics_ros.dynamics.model.inertia import subtree_holds_mass
from robot_dynamics_ros.dynamics.model.model import BASE_ANGULAR, BASE_BODIES
from robot_dynamics_ros.dynamics.model.slices import related_sets, slice_layout
from robot_dynamics_ros.dynamics.bounds.subspace import certified_top_singular_value

def _massless_leaves(urdf, count):
    """The URDF with the ``<inertial>`` of ``count`` leaf links removed, each
    the child of a moving joint: those joints then move nothing."""
    root = ET.fromstring(urdf)
    parents = {joint.find("parent").get("link") for joint in root.iter("joint")}
    moved = {joint.find("child").get("link") for joint in root.iter("joint")
             if joint.get("type") != "fixed"}
    leaves = [link for link in root.findall("link") if link.get("name") not in parents
              and link.get("name") in moved and link.find("inertial") is not None]
    assert len(leaves) >= count
    for link in leaves[:count]:
        link.remove(link.find("inertial"))
    return ET.tostring(root, encoding="unicode")


def _trunk_and_branches(trunk, branches):
    """Joint parents of a chain of ``trunk`` joints on the root that splits
    into chains of the ``branches`` lengths: the trunk's slices hold every
    joint, alone in their size."""
    parents = [-1] + list(range(trunk - 1))
    for length in branches:
        parents += [trunk - 1] + [len(parents) + i for i in range(length - 1)]
    return parents


CASES = {
    "panda": (lambda: example_robot_urdf("panda"), "fixed"),
    "solo12": (lambda: example_robot_urdf("solo12"), "fixed"),
    "solo12-floating": (lambda: example_robot_urdf("solo12"), "floating"),
    "tree12": (lambda: random_urdf(np.random.default_rng(21), 12, tree=True), "fixed"),
    "tree10-floating": (lambda: random_urdf(np.random.default_rng(22), 10, tree=True), "floating"),
    # fewer small cores than fill the vector lanes (``bounds.core_slice_norms``)
    "chain3-floating": (lambda: random_urdf(np.random.default_rng(25), 3), "floating"),
    # cores, slices and C of at least ``bounds.LANCZOS_FROM`` rows: norms by ``lanczos``
    "chain36-floating": (lambda: random_urdf(np.random.default_rng(26), 36), "floating"),
    "trunk3-branches-fixed": (lambda: topology_urdf(_trunk_and_branches(3, (15, 18)), 27), "fixed"),
    # joints that move nothing: romeo's fingers, random trees' massless leaves
    "romeo-floating": (lambda: example_robot_urdf("romeo"), "floating"),
    "tree12-massless": (lambda: _massless_leaves(random_urdf(np.random.default_rng(23), 12, tree=True), 2),
                        "fixed"),
    "tree12-floating-massless": (
        lambda: _massless_leaves(random_urdf(np.random.default_rng(24), 12, tree=True), 2), "floating"),
}
MASSLESS = ("romeo-floating", "tree12-massless", "tree12-floating-massless")


def _case(name):
    make, base = CASES[name]
    urdf = make()
    model = load_urdf(urdf, base=base)
    oracle = PinocchioOracle(load_pinocchio(urdf, free_flyer=base == "floating"), model.joint_names)
    return model, oracle


def _state(model, rng):
    joints = rng.uniform(-1.5, 1.5, len(model.joint_names))
    if model.floating:
        quaternion = rng.standard_normal(4)
        q = np.concatenate((rng.uniform(-1, 1, 3), quaternion / np.linalg.norm(quaternion), joints))
    else:
        q = joints
    return q, rng.uniform(-2, 2, model.nv)


def bound_errors(bounds, oracle, q, v) -> dict:
    """Relative error of each field of a BOUNDS_FIELDS vector against LAPACK
    on Pinocchio's Gamma (nv calls of C(q, e_k)), C and M."""
    gamma = oracle.christoffel_symbols(q)
    kc = np.sqrt(sum(np.linalg.norm(gamma[:, :, k], 2) ** 2 for k in range(len(v))))
    eig = np.linalg.eigvalsh(oracle.mass_matrix(q))
    want = {"coriolis_norm": np.linalg.norm(oracle.coriolis_matrix(q, v), 2), "kc_config": kc,
            "coriolis_bound": kc * np.linalg.norm(v), "m_eig_min": eig[0], "m_eig_max": eig[-1]}
    got = dict(zip(BOUNDS_FIELDS, bounds))
    return {field: rel_err(got[field], value) for field, value in want.items()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bounds_without_gamma_match_lapack(name):
    """Every field of all_terms(christoffel=False) from LAPACK on Pinocchio's
    Gamma (nv calls of C(q, e_k)), C and M, to 1e-12."""
    model, oracle = _case(name)
    rng = np.random.default_rng(7)
    for _ in range(3):
        q, v = _state(model, rng)
        terms = all_terms(model, q, v, christoffel=False)
        assert terms.christoffel_symbols is None
        errors = bound_errors(terms.coriolis_bounds, oracle, q, v)
        assert max(errors.values()) < 1e-12, errors


# The three routes of bounds.tree_bound_values (chain, fixed tree, floating
# tree) are chosen when a kernel compiles; without the compiler its Python
# body chooses, and each must still give the bounds.
_NOJIT_SCRIPT = textwrap.dedent("""
    from test_tree_bounds import _case, _state, bound_errors
    from robot_dynamics_ros.dynamics import all_terms
    worst = 0.0
    rng = np.random.default_rng(9)
    for name in ("panda", "solo12", "solo12-floating"):
        model, oracle = _case(name)
        q, v = _state(model, rng)
        errors = bound_errors(all_terms(model, q, v, christoffel=False).coriolis_bounds, oracle, q, v)
        worst = max([worst, *errors.values()])
    print("WORST", worst)
""")


def test_bounds_without_jit():
    """A chain's, a fixed tree's and a floating tree's bounds with
    NUMBA_DISABLE_JIT=1, against LAPACK on Pinocchio's Gamma, C and M."""
    worst = worst_error_without_jit(_NOJIT_SCRIPT)
    assert worst < 1e-12, f"without JIT: worst relative error {worst}"


@pytest.mark.parametrize("name", ["solo12-floating", "tree12"])
@pytest.mark.slow
def test_without_gamma_is_all_terms_less_gamma(name):
    """The same M, C, g, bit for bit, with and without the dense Gamma, one
    sample and a batch; the same bounds to rounding (a floating tree's
    cores come from Algorithm 2 directly without Gamma,
    ``cores.christoffel_cores``, from Gamma's blocks with it), and bit for
    bit between a sample and a batch."""
    model, _ = _case(name)
    rng = np.random.default_rng(8)
    states = [_state(model, rng) for _ in range(3)]
    Q, V = np.array([s[0] for s in states]), np.array([s[1] for s in states])
    batch = all_terms(model, Q, V, christoffel=False)
    assert batch.christoffel_symbols is None
    for s, (q, v) in enumerate(states):
        full, lean = all_terms(model, q, v), all_terms(model, q, v, christoffel=False)
        for field in ("mass_matrix", "coriolis_matrix", "coriolis_bounds", "gravity_torques"):
            if field == "coriolis_bounds":
                np.testing.assert_allclose(lean.coriolis_bounds, full.coriolis_bounds, rtol=1e-14, atol=0)
            else:
                np.testing.assert_array_equal(getattr(lean, field), getattr(full, field), field)
            np.testing.assert_array_equal(getattr(batch, field)[s], getattr(lean, field), field)


@njit(cache=True)
def _cores_both_ways(data, out):
    """Every non-base slice's core (``out[:, k]``, c x c) and the base's
    angular slices (nb x nb) from the blocks of christoffel_tree
    (``slice_core``) and from christoffel_cores: (2, nb, nb, nb)."""
    model = data.model
    nb = model.parent.shape[0]
    christoffel_tree(model, data, data.blocks)
    shifted_spans(model, data)
    for k in range(BASE_ANGULAR, nb):
        if k < BASE_BODIES:
            start = model.slice_start[k]
            out[0, k] = data.blocks[start:start + nb * nb].reshape((nb, nb))
            continue
        c = slice_core(model, data, data.blocks, k, data.eig_work)
        out[0, k, :c, :c] = data.eig_work.reshape(-1)[:c * c].reshape((c, c))
    christoffel_cores(model, data, data.blocks)
    for k in range(BASE_ANGULAR, nb):
        c = nb if k < BASE_BODIES else core_size(model, k)[0]
        start = model.slice_start[k]
        out[1, k, :c, :c] = data.blocks[start:start + c * c].reshape((c, c))


@pytest.mark.parametrize("name,distance", [("solo12-floating", 0.0), ("tree10-floating", 0.0),
                                           ("tree10-floating", 1e4)])
@pytest.mark.slow
def test_cores_from_algorithm_2_are_the_cores_of_the_slices(name, distance):
    """``cores.christoffel_cores`` (the cores made in Algorithm 2, without the
    symbols of the cores' coordinates) against ``cores.slice_core`` on the
    blocks of ``christoffel.christoffel_tree``: every core, to 1e-13 of its
    norm, also with the base 10 km from the world origin; and the base's
    angular slices, read from the same blocks, to rounding."""
    model, _ = _case(name)
    rng = np.random.default_rng(5)
    nb = model.nb
    data = model.data(np.dtype(np.float64))
    for _ in range(3):
        q, v = _state(model, rng)
        q[:3] += distance
        all_terms(model, q, v, christoffel=False)  # the forward pass into data
        out = np.zeros((2, nb, nb, nb))
        _cores_both_ways(data, out)
        for k in range(BASE_ANGULAR, nb):
            scale = np.linalg.norm(out[0, k], 2)
            assert scale > 0.0
            assert np.abs(out[1, k] - out[0, k]).max() < 1e-13 * scale, k


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_layout_holds_every_symbol(seed):
    """related(k) is k, its ancestors and descendants (from the parents
    anew), and every nonzero symbol of Pinocchio's Gamma lies in a block."""
    urdf = random_urdf(np.random.default_rng(300 + seed), 9, tree=True)
    model = load_urdf(urdf)
    oracle = PinocchioOracle(load_pinocchio(urdf), model.joint_names)
    parent = list(model.parent)

    def ancestors(k):
        out = set()
        while k >= 0:
            out.add(k)
            k = parent[k]
        return out

    for k, members in enumerate(related_sets(parent)):
        want = {a for a in range(model.nb) if a in ancestors(k) or k in ancestors(a)}
        assert set(members.tolist()) == want
    layout = slice_layout(parent)
    gamma = oracle.christoffel_symbols(np.random.default_rng(seed).uniform(-1, 1, model.nv))
    scale = np.abs(gamma).max()
    a, b, k = np.nonzero(np.abs(gamma) > 1e-14 * scale)
    assert np.all(layout.local[k, a] >= 0) and np.all(layout.local[k, b] >= 0)


def test_linear_base_slices_vanish():
    """docs/math.md: with only a linear base speed nothing turns, and the
    Christoffel-consistent C(q, e_k) is zero for k < 3 (Pinocchio's, to
    rounding), which the bounds use."""
    model, oracle = _case("tree10-floating")
    rng = np.random.default_rng(9)
    for _ in range(3):
        q, _ = _state(model, rng)
        gamma = oracle.christoffel_symbols(q)
        scale = np.abs(gamma).max()
        assert np.abs(gamma[:, :, :3]).max() <= 1e-13 * scale


def test_certified_norm_is_an_upper_bound():
    """certified_top_singular_value: at least ||G||_2 and within 1e-13 of it
    when the top pair stands out; -1 (not a number) when nothing does; 0
    for G = 0."""
    rng = np.random.default_rng(10)
    for n in (8, 35, 61):
        U, _ = np.linalg.qr(rng.standard_normal((n, n)))
        W, _ = np.linalg.qr(rng.standard_normal((n, n)))
        sigma = np.concatenate(([30.0, 30.0 * (1 - 1e-3)], rng.uniform(0, 2, n - 2)))
        G = U @ np.diag(sigma) @ W.T
        X = W[:, :2].T + 0.3 * rng.standard_normal((2, n))
        value = certified_top_singular_value(G, X, np.zeros((4 + n, n)))
        exact = np.linalg.norm(G, 2)
        assert exact <= value <= exact * (1 + 1e-13), (n, value, exact)
        flat = U @ W.T  # every singular value 1: no pair to find
        assert certified_top_singular_value(flat, rng.standard_normal((2, n)), np.zeros((4 + n, n))) == -1.0
    assert certified_top_singular_value(np.zeros((5, 5)), np.eye(2, 5), np.zeros((9, 5))) == 0.0


@pytest.mark.parametrize("distance", [1e2, 1e4])
@pytest.mark.slow
def test_cores_far_from_the_world_origin(distance):
    """The slices' cores (``cores``: a floating tree's slices made smaller
    through the motion subspaces of their ancestors) lose nothing with the
    base far from the world origin, where those subspaces in world
    coordinates are as ill-conditioned as the distance: k_c equals the
    dense computation from the whole Gamma to 1e-12 (the world-frame Gamma
    itself is good to about 1e-12 of LAPACK on Pinocchio's at 1 km, 5e-10
    at 10 km, with or without the cores)."""
    model, _ = _case("tree10-floating")
    rng = np.random.default_rng(11)
    for _ in range(2):
        q, v = _state(model, rng)
        q[:3] = distance * rng.uniform(0.5, 1.0, 3)
        dense = bound_vectors(model, christoffel_symbols(model, q)[None], mass_matrix(model, q)[None],
                              v[None], (("q", q), ("qd", v)))[0]
        tree = all_terms(model, q, v, christoffel=False).coriolis_bounds
        assert rel_err(tree[1], dense[1]) < 1e-12, (tree[1], dense[1])


@pytest.mark.parametrize("name", MASSLESS)
def test_joints_that_move_nothing(name):
    """``holds_mass`` (``inertia.subtree_holds_mass``) is 0 for exactly the
    speeds whose row of Pinocchio's M is zero, some in each case; the
    bounds then drop them (``bounds.massive_speeds``): M's smallest
    eigenvalue is 0 exactly, and every field matches LAPACK on Pinocchio's
    Gamma, C and M (``test_bounds_without_gamma_match_lapack``), also with
    the dense Gamma asked for."""
    model, oracle = _case(name)
    holds = subtree_holds_mass(model.parent, model.inertia)  # what the model record holds
    rng = np.random.default_rng(12)
    for _ in range(2):
        q, v = _state(model, rng)
        mass = oracle.mass_matrix(q)
        zero_rows = np.abs(mass).max(axis=1) <= 1e-15 * np.abs(mass).max()
        assert zero_rows.any() and not zero_rows.all()
        np.testing.assert_array_equal(holds == 0, zero_rows)
        for christoffel in (False, True):
            bounds = all_terms(model, q, v, christoffel=christoffel).coriolis_bounds
            assert bounds[BOUNDS_FIELDS.index("m_eig_min")] == 0.0
            errors = bound_errors(bounds, oracle, q, v)
            assert max(errors.values()) < 1e-12, errors


def test_a_payload_on_a_massless_link_moves_its_joints():
    """A payload on one of romeo's massless thumb links: the new model's
    joints from that link up the hand hold mass (those only), and its bounds
    are the dense computation's from its whole Gamma and M (the route that
    drops nothing), to 1e-12; the other hand still moves nothing, so M's
    smallest eigenvalue stays 0."""
    model = load_urdf(example_robot_urdf("romeo"), base="floating")
    loaded = model.with_payload("LThumb3Link", 0.05, [0.01, 0.0, 0.0], 1e-5 * np.eye(3))
    before = subtree_holds_mass(model.parent, model.inertia).astype(bool)
    after = subtree_holds_mass(loaded.parent, loaded.inertia).astype(bool)
    body = loaded.link_frames["LThumb3Link"][0]
    chain = set()
    while body >= 0:
        chain.add(body)
        body = loaded.parent[body]
    assert set(np.flatnonzero(after & ~before)) == chain - set(np.flatnonzero(before))
    assert not (before & ~after).any() and (~after).any()
    rng = np.random.default_rng(13)
    compared = [BOUNDS_FIELDS.index(f) for f in ("coriolis_norm", "kc_config", "coriolis_bound",
                                                 "m_eig_min", "m_eig_max")]
    for _ in range(2):
        q, v = _state(loaded, rng)
        tree = all_terms(loaded, q, v, christoffel=False).coriolis_bounds
        dense = bound_vectors(loaded, christoffel_symbols(loaded, q)[None], mass_matrix(loaded, q)[None],
                              v[None], (("q", q), ("qd", v)))[0]
        assert tree[BOUNDS_FIELDS.index("m_eig_min")] == 0.0
        assert rel_err(tree[compared], dense[compared]) < 1e-12, (tree, dense)

"""Frames (issue 48): the pose, Jacobian and acceleration bias of every link.

Against Pinocchio (``updateFramePlacements``, ``getFrameJacobian`` and
``getFrameClassicalAcceleration``, LOCAL_WORLD_ALIGNED, after
``computeJointJacobians`` and ``forwardKinematics(q, v, 0)``) to 1e-12 at
100 random states, for every link of the URDF (Pinocchio keeps each as a
BODY frame, found by name): arms (panda, ur5 with its merged tool0,
talos_left_arm), trees (baxter), floating bases (solo12, talos_reduced)
and random chains and trees with fixed joints, fixed and floating. Then
without an oracle: J v against the central difference of the pose along the
motion, J̇v against the central difference of J v; a batch against single
calls bit for bit; every frame at once (``frame_terms``) against the three
functions frame by frame; the terms and the frames in one call
(``state_terms``) against ``all_terms`` and ``frame_terms``; mimic reduction; a robot placed far from the world's
origin; bad names and bad numbers refused; the same results without numba's
compiler. Conventions: docs/math.md, "Frames".
"""
import textwrap
import xml.etree.ElementTree as ET
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from coriolis_cases import mimic_map
from robots import (PinocchioOracle, example_robot_urdf, joint_ranges, load_pinocchio, pin,
                    random_urdf, rel_err, root_links, urdf_links, urdf_text,
                    worst_error_without_jit)

from robot_dynamics_ros.dynamics import (DynamicsError, FrameError, StateError, all_terms, frame_jacobian,
                                         frame_jacobian_dot_v, frame_placement, frame_terms, load_urdf,
                                         state_terms)

TOL = 1e-12
N_STATES = 100
# J v against the pose's central difference, J̇v against J v's: step and tolerance
STEP, FD_TOL = 1e-5, 1e-6

# (name, floating): example-robot-data's arms, a fixed tree, floating trees
ROBOT_CASES = [("panda", False), ("ur5_robot", False), ("talos_left_arm", False),
               ("baxter", False), ("solo12", True), ("talos_reduced", True)]
# (seed, moving joints, tree, floating): random robots with fixed joints,
# links hanging off the root and massless links (robots.random_urdf)
RANDOM_CASES = [(480, 1, False, False), (481, 7, False, False), (482, 12, True, False),
                (483, 30, True, False), (484, 5, False, True), (485, 16, True, True)]


def _rng(label):
    return np.random.default_rng(zlib.crc32(label.encode()))


def random_states(model, urdf, rng, count):
    """``count`` random (q, v): joints within the URDF's limits, a floating
    base within 2 m of the origin with a uniformly random unit quaternion,
    speeds in [-2, 2]."""
    ranges = joint_ranges(model, urdf)
    qs = ranges[:, 0] + (ranges[:, 1] - ranges[:, 0]) * rng.random((count, len(ranges)))
    if model.floating:
        quaternions = rng.standard_normal((count, 4))
        quaternions /= np.linalg.norm(quaternions, axis=1, keepdims=True)
        qs = np.concatenate((rng.uniform(-2.0, 2.0, (count, 3)), quaternions, qs), axis=1)
    return qs, rng.uniform(-2.0, 2.0, (count, model.nv))


class PinocchioFrames:
    """Pinocchio's pose, Jacobian and classical acceleration of a frame, in
    our joint order."""

    def __init__(self, pin_model, model):
        self.oracle = PinocchioOracle(pin_model, model.joint_names)
        self.model, self.data = pin_model, pin_model.createData()

    def frame_id(self, name):
        frame = self.model.getFrameId(name, pin.BODY)
        assert frame < len(self.model.frames), f"Pinocchio has no body frame {name!r}"
        return frame

    def at(self, q, v):
        """Every frame's quantities at (q, v), qdd = 0: ``(pose, J, Jdv)`` of a frame id."""
        pq, pv = self.oracle.q(q), self.oracle.v(v)
        pin.computeJointJacobians(self.model, self.data, pq)
        pin.forwardKinematics(self.model, self.data, pq, pv, np.zeros_like(pv))
        pin.updateFramePlacements(self.model, self.data)
        world = pin.LOCAL_WORLD_ALIGNED

        def frame(fid):
            # (6, nv); Pinocchio gives a single column as a vector
            jacobian = pin.getFrameJacobian(self.model, self.data, fid, world).reshape(6, -1)
            return (self.data.oMf[fid].homogeneous.copy(), jacobian[:, self.oracle.order_v],
                    pin.getFrameClassicalAcceleration(self.model, self.data, fid, world).vector.copy())
        return frame


def compare_with_pinocchio(model, pin_model, urdf, label, count=N_STATES):
    """Worst relative error (``rel_err``) of the pose, J and J̇v over every
    frame and ``count`` random states; asserts each within TOL."""
    reference = PinocchioFrames(pin_model, model)
    frames = list(model.link_frames)
    ids = [reference.frame_id(name) for name in frames]
    worst = {"pose": 0.0, "J": 0.0, "Jdv": 0.0}
    qs, vs = random_states(model, urdf, _rng(label), count)
    for q, v in zip(qs, vs):
        theirs = reference.at(q, v)
        for name, fid in zip(frames, ids):
            pose, jacobian, bias = theirs(fid)
            errors = {"pose": rel_err(frame_placement(model, q, name), pose),
                      "J": rel_err(frame_jacobian(model, q, name), jacobian),
                      "Jdv": rel_err(frame_jacobian_dot_v(model, q, v, name), bias)}
            for key, err in errors.items():
                assert err <= TOL, (f"{label}, frame {name}: {key} relative error {err:.3g} "
                                    f"at q={q.tolist()}, v={v.tolist()}")
                worst[key] = max(worst[key], err)
    print(f"\n{label} ({len(frames)} frames): "
          + ", ".join(f"{key} {err:.1e}" for key, err in worst.items()))
    return worst


@pytest.mark.parametrize("name,floating", ROBOT_CASES, ids=[n for n, _ in ROBOT_CASES])
def test_every_frame_of_example_robots_vs_pinocchio(name, floating):
    path = example_robot_urdf(name)
    model = load_urdf(path, base="floating" if floating else "fixed")
    # every link is a frame, the merged ones included
    assert set(model.link_frames) == set(urdf_links(path))
    compare_with_pinocchio(model, load_pinocchio(path, free_flyer=floating), path, name)


def test_ur5_tool0_is_a_merged_frame():
    """tool0 hangs off wrist_3_link by fixed joints: no body of its own,
    its frame offset from the body's."""
    model = load_urdf(example_robot_urdf("ur5_robot"))
    body, pose = model.link_frames["tool0"]
    assert body == model.link_frames["wrist_3_link"][0] and not np.allclose(pose, np.eye(4))
    q = np.linspace(-1.0, 1.0, model.nv)
    assert not np.allclose(frame_placement(model, q, "tool0"),
                           frame_placement(model, q, "wrist_3_link"))


@pytest.mark.parametrize("seed,n,tree,floating", RANDOM_CASES,
                         ids=[f"{'tree' if t else 'chain'}{n}-{'floating' if f else 'fixed'}-seed{s}"
                              for s, n, t, f in RANDOM_CASES])
def test_every_frame_of_random_robots_vs_pinocchio(seed, n, tree, floating):
    text = random_urdf(np.random.default_rng(seed), n, tree=tree)
    model = load_urdf(text, base="floating" if floating else "fixed")
    assert set(model.link_frames) == set(urdf_links(text))
    compare_with_pinocchio(model, load_pinocchio(text, free_flyer=floating), text,
                           f"random-{seed}-{n}")


def with_root_joint(urdf, kind, xyz, rpy="0 0 0"):
    """The URDF with a massless ``world`` link joined to its root link by a
    joint of type ``kind`` at ``xyz``/``rpy``."""
    root = ET.fromstring(urdf_text(urdf))
    base = root_links(urdf)[0]
    root.insert(0, ET.fromstring('<link name="world"/>'))
    root.append(ET.fromstring(
        f'<joint name="world_joint" type="{kind}"><parent link="world"/><child link="{base}"/>'
        f'<origin xyz="{xyz}" rpy="{rpy}"/></joint>'))
    return ET.tostring(root, encoding="unicode")


def test_a_urdf_floating_joint_with_an_origin_vs_pinocchio():
    """The free-flyer placed by the URDF's floating joint: the world link
    stays put, the others carry the joint's origin (Pinocchio's free-flyer
    placement)."""
    text = with_root_joint(random_urdf(np.random.default_rng(486), 8, tree=True), "floating",
                           xyz="0.3 -0.2 1.1", rpy="0.4 -0.7 2.0")
    model = load_urdf(text)
    assert model.floating and model.link_frames["world"][0] == -1
    compare_with_pinocchio(model, load_pinocchio(text), text, "floating joint", count=20)


def test_a_fixed_base_far_from_the_world_origin():
    """A robot bolted 1e6 m from the world origin (placed in a map): the pose
    is Pinocchio's there; J and J̇v, which do not depend on where the robot
    stands, are Pinocchio's at the origin to TOL (Pinocchio's own, taken at
    the far place, lose about 1e-10 to the size of p)."""
    path = example_robot_urdf("panda")
    offset = np.array([1e6, -1e6, 3e5])
    far = with_root_joint(path, "fixed", xyz=" ".join(map(str, offset.tolist())))
    model = load_urdf(far)
    there = PinocchioFrames(load_pinocchio(far), model)
    here = PinocchioFrames(load_pinocchio(path), model)
    qs, vs = random_states(model, path, _rng("far away"), 10)
    for q, v in zip(qs, vs):
        far_frames, near_frames = there.at(q, v), here.at(q, v)
        for name in load_urdf(path).link_frames:
            pose = far_frames(there.frame_id(name))[0]
            _, jacobian, bias = near_frames(here.frame_id(name))
            assert rel_err(frame_placement(model, q, name), pose) <= TOL, name
            assert rel_err(frame_jacobian(model, q, name), jacobian) <= TOL, name
            assert rel_err(frame_jacobian_dot_v(model, q, v, name), bias) <= TOL, name


# -- without an oracle: finite differences along a motion ---------------------


def advance(model, q, v, t):
    """q after moving for time t at the constant generalized speed v: the
    joints by ``t v``, a floating base by its body twist's exponential
    (``pose exp(t [v_lin; w])``, as Pinocchio's ``integrate``)."""
    if not model.floating:
        return q + t * v
    base = pin.XYZQUATToSE3(q[:7]) * pin.exp6(pin.Motion(t * v[:3], t * v[3:6]))
    return np.concatenate((pin.SE3ToXYZQUAT(base), q[7:] + t * v[6:]))


def pose_rate(model, q, v, frame, h=STEP):
    """[p'; w] of the frame by central differences of its pose: the linear
    velocity of its origin and its angular velocity, world axes."""
    later = frame_placement(model, advance(model, q, v, h), frame)
    earlier = frame_placement(model, advance(model, q, v, -h), frame)
    linear = (later[:3, 3] - earlier[:3, 3]) / (2 * h)
    angular = pin.log3(later[:3, :3] @ earlier[:3, :3].T) / (2 * h)
    return np.concatenate((linear, angular))


def velocity_rate(model, q, v, frame, h=STEP):
    """d/dt (J(q(t)) v) at constant v (qdd = 0) by central differences."""
    return (frame_jacobian(model, advance(model, q, v, h), frame) @ v
            - frame_jacobian(model, advance(model, q, v, -h), frame) @ v) / (2 * h)


@pytest.mark.parametrize("name,floating", [("panda", False), ("ur5_robot", False),
                                           ("solo12", True), ("random tree", False),
                                           ("random floating tree", True)])
def test_jacobian_and_bias_against_finite_differences(name, floating):
    """J v is the rate of the pose, J̇v the rate of J v along the motion at
    constant speeds: both to FD_TOL relative, for every frame."""
    path = (random_urdf(np.random.default_rng(487), 10, tree=True) if name.startswith("random")
            else example_robot_urdf(name))
    model = load_urdf(path, base="floating" if floating else "fixed")
    qs, vs = random_states(model, path, _rng(f"fd {name}"), 5)
    worst = [0.0, 0.0]
    for q, v in zip(qs, vs):
        for frame in model.link_frames:
            errors = (rel_err(frame_jacobian(model, q, frame) @ v, pose_rate(model, q, v, frame)),
                      rel_err(frame_jacobian_dot_v(model, q, v, frame),
                              velocity_rate(model, q, v, frame)))
            assert max(errors) <= FD_TOL, (name, frame, errors)
            worst = [max(a, b) for a, b in zip(worst, errors)]
    print(f"\n{name}: J v vs pose rate {worst[0]:.1e}, J̇v vs rate of J v {worst[1]:.1e}")


# -- batches, out=, mimic ------------------------------------------------------


@pytest.mark.parametrize("name,floating", [("panda", False), ("solo12", True)])
@pytest.mark.parametrize("count", [3, 80])  # 80: on the thread pool (calls.PARALLEL_FROM)
def test_a_batch_equals_single_calls_bit_for_bit(name, floating, count):
    path = example_robot_urdf(name)
    model = load_urdf(path, base="floating" if floating else "fixed")
    qs, vs = random_states(model, path, _rng(f"batch {name}"), count)
    for frame in model.link_frames:
        batch = (frame_placement(model, qs, frame), frame_jacobian(model, qs, frame),
                 frame_jacobian_dot_v(model, qs, vs, frame))
        assert [x.shape for x in batch] == [(count, 4, 4), (count, 6, model.nv), (count, 6)]
        for k in range(count):
            np.testing.assert_array_equal(batch[0][k], frame_placement(model, qs[k], frame))
            np.testing.assert_array_equal(batch[1][k], frame_jacobian(model, qs[k], frame))
            np.testing.assert_array_equal(batch[2][k],
                                          frame_jacobian_dot_v(model, qs[k], vs[k], frame))


def model_and_states(name, base, mimic, label, count):
    """The model of ``name`` and ``count`` random states (one, not stacked,
    for None)."""
    path = example_robot_urdf(name)
    model = load_urdf(path, base=base, mimic=mimic)
    qs, vs = random_states(model, path, _rng(f"{label} {name}"), count or 1)
    return (model, qs[0], vs[0]) if count is None else (model, qs, vs)


# a chain, a floating tree and a mimic-reduced tree
SHAPES = [("panda", "fixed", "independent"), ("solo12", "floating", "independent"), ("pr2", "fixed", "reduce")]


@pytest.mark.parametrize("name,base,mimic", SHAPES)
@pytest.mark.parametrize("count", [None, 3, 80])  # None: one sample; 80: on the thread pool
def test_all_frames_at_once_equal_the_three_functions_frame_by_frame(name, base, mimic, count):
    """``frame_terms`` runs one forward pass for all the frames, in any
    order and with repeats; the numbers are those of the single functions."""
    model, qs, vs = model_and_states(name, base, mimic, "all frames", count)
    names = list(model.link_frames)
    frames = [names[-1], names[0], names[len(names) // 2], names[-1]]
    poses, J, bias = frame_terms(model, qs, vs, frames)
    lead = () if count is None else (count,)
    assert (poses.shape, J.shape, bias.shape) == (lead + (4, 7), lead + (4, 6, model.nv), lead + (4, 6))
    for k, frame in enumerate(frames):
        # the pose [x y z qx qy qz qw]: the placement's origin, and a unit
        # quaternion whose rotation (scipy's) is the placement's
        X = frame_placement(model, qs, frame)
        np.testing.assert_allclose(poses[..., k, :3], X[..., :3, 3], rtol=0, atol=1e-15)
        np.testing.assert_allclose(np.linalg.norm(poses[..., k, 3:], axis=-1), 1.0, rtol=0, atol=1e-15)
        np.testing.assert_allclose(Rotation.from_quat(poses[..., k, 3:].reshape(-1, 4)).as_matrix(),
                                   X[..., :3, :3].reshape(-1, 3, 3), rtol=0, atol=1e-14)
        np.testing.assert_allclose(J[..., k, :, :], frame_jacobian(model, qs, frame), rtol=0, atol=1e-15)
        np.testing.assert_allclose(bias[..., k, :], frame_jacobian_dot_v(model, qs, vs, frame),
                                   rtol=0, atol=1e-13)
    with pytest.raises(FrameError, match="panda_tool"):
        frame_terms(model, qs, vs, ["panda_tool"])


@pytest.mark.parametrize("name,base", [("panda", "fixed"), ("solo12", "floating")])
def test_one_sample_of_frame_terms_is_the_batchs_and_the_callers_own(name, base):
    """One float64 sample takes the hot path (a kernel bound to a ``Data``
    that holds the frames, one per thread): its numbers are the batch's row,
    bit for bit, from any thread, and the arrays it returns stay the
    caller's when the next call comes."""
    model, qs, vs = model_and_states(name, base, "independent", "hot path", 3)
    frames = list(model.link_frames)[-2:]
    batch = frame_terms(model, qs, vs, frames)
    first = frame_terms(model, qs[0], vs[0], frames)
    kept = [x.copy() for x in first]
    second = frame_terms(model, qs[1], vs[1], frames)  # on this thread's Data, as the first
    for got, want in zip(first, kept):
        np.testing.assert_array_equal(got, want)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda k: frame_terms(model, qs[k % 3], vs[k % 3], tuple(frames)), range(60)))
    for k, got in [(0, first), (1, second)] + [(k % 3, r) for k, r in enumerate(results)]:
        for a, b in zip(got, batch):
            np.testing.assert_array_equal(a, b[k])


@pytest.mark.parametrize("name,base,mimic", SHAPES)
@pytest.mark.parametrize("count", [None, 80])  # None: one sample; 80: on the thread pool
@pytest.mark.slow
def test_state_terms_are_all_terms_and_frame_terms_bit_for_bit(name, base, mimic, count):
    """``state_terms`` computes the frames from the forward pass of the
    terms, in one kernel: the numbers are those of ``all_terms`` and
    ``frame_terms`` called apart, bit for bit (what lets the node and the
    replay agree byte for byte)."""
    model, qs, vs = model_and_states(name, base, mimic, "state terms", count)
    names = list(model.link_frames)
    frames = (names[-1], names[len(names) // 2])
    for christoffel in (False, True):
        terms, got = state_terms(model, qs, vs, frames, christoffel=christoffel)
        want = all_terms(model, qs, vs, christoffel=christoffel)
        for a, b in zip(terms, want):
            assert (a is None and b is None) or np.array_equal(a, b)
        for a, b in zip(got, frame_terms(model, qs, vs, frames)):
            np.testing.assert_array_equal(a, b)


def test_state_terms_write_the_frames_into_out():
    """``out``: the frames are written into the caller's arrays, checked on
    the first call; a wrong one is refused, naming what it must be, and
    changes nothing."""
    model = load_urdf(example_robot_urdf("panda"))
    frames = ("panda_hand_tcp", "panda_link4")
    q, v = np.linspace(-1.0, 1.0, model.nv), np.linspace(1.0, -0.5, model.nv)
    want = frame_terms(model, q, v, frames)
    out = (np.empty((2, 7)), np.empty((2, 6, model.nv)), np.empty((2, 6)))
    for _ in range(2):  # the second call uses the checked out
        _, got = state_terms(model, q, v, frames, christoffel=False, out=out)
        assert all(a is b for a, b in zip(got, out))
        for a, b in zip(out, want):
            np.testing.assert_array_equal(a, b)
    before = [x.copy() for x in out]
    with pytest.raises(DynamicsError, match="out must be"):
        state_terms(model, q, v, frames, out=out[:2])
    with pytest.raises(DynamicsError, match="out must be"):
        state_terms(model, q, v, frames, out=(np.empty((2, 7)), np.empty((2, 6, model.nv)), np.empty((2, 7))))
    with pytest.raises(DynamicsError, match="out must be"):
        state_terms(model, q, v, frames, out=(np.empty((2, 7)), np.empty((2, 6, model.nv), np.float32),
                                              np.empty((2, 6))))
    for x, y in zip(out, before):
        np.testing.assert_array_equal(x, y)
    # a list is checked at every call, and a batch written through out as well
    _, got = state_terms(model, np.stack([q, -q]), np.stack([v, v]), frames,
                         out=[np.empty((2, 2, 7)), np.empty((2, 2, 6, model.nv)), np.empty((2, 2, 6))])
    for a, b in zip(got, frame_terms(model, np.stack([q, -q]), np.stack([v, v]), frames)):
        np.testing.assert_array_equal(a, b)


def test_out_and_array_likes():
    model = load_urdf(example_robot_urdf("panda"))
    q = np.linspace(-1.0, 1.0, model.nv)
    frame = "panda_hand_tcp"
    expected = (frame_placement(model, q, frame), frame_jacobian(model, q, frame),
                frame_jacobian_dot_v(model, q, q, frame))
    outs = (np.empty((4, 4)), np.empty((6, model.nv)), np.empty(6))
    assert frame_placement(model, q, frame, out=outs[0]) is outs[0]
    assert frame_jacobian(model, q, frame, out=outs[1]) is outs[1]
    assert frame_jacobian_dot_v(model, q, q, frame, out=outs[2]) is outs[2]
    for got, want in zip(outs, expected):
        np.testing.assert_array_equal(got, want)
    # lists and strided views take the general path, with the same numbers
    np.testing.assert_array_equal(frame_jacobian(model, q.tolist(), frame), expected[1])
    wide = np.repeat(q, 2)[::2]
    np.testing.assert_array_equal(frame_jacobian_dot_v(model, wide, wide, frame), expected[2])
    with pytest.raises(DynamicsError, match="out must be"):
        frame_jacobian(model, q, frame, out=np.empty((6, model.nv + 1)))


@pytest.mark.parametrize("name", ["panda", "pr2"])
def test_mimic_reduction_maps_the_columns(name):
    """``mimic="reduce"``: the pose and J̇v are the independent model's at
    the full q and qd, and J's columns are mapped, ``J_r = J coordinate_map``."""
    path = example_robot_urdf(name)
    reduced, full = load_urdf(path, mimic="reduce"), load_urdf(path)
    assert reduced.nv < full.nv, "the robot has mimic joints"
    jmap, offset = mimic_map(path, reduced.joint_names, full.joint_names)
    qs, vs = random_states(reduced, path, _rng(f"mimic {name}"), 5)
    for q, v in zip(qs, vs):
        q_full, v_full = jmap @ q + offset, jmap @ v
        for frame in reduced.link_frames:
            assert rel_err(frame_placement(reduced, q, frame),
                           frame_placement(full, q_full, frame)) <= 1e-14
            assert rel_err(frame_jacobian(reduced, q, frame),
                           frame_jacobian(full, q_full, frame) @ jmap) <= 1e-14
            assert rel_err(frame_jacobian_dot_v(reduced, q, v, frame),
                           frame_jacobian_dot_v(full, q_full, v_full, frame)) <= 1e-14
    frame = list(reduced.link_frames)[-1]
    batch = frame_jacobian(reduced, qs, frame)
    assert batch.shape == (5, 6, reduced.nv)
    np.testing.assert_array_equal(batch[2], frame_jacobian(reduced, qs[2], frame))


# -- refusals ---------------------------------------------------------------------


@pytest.mark.parametrize("frame", ["panda_tool", "", 3, None, "PANDA_HAND"])
def test_an_unknown_frame_is_refused_with_the_known_ones(frame):
    model = load_urdf(example_robot_urdf("panda"))
    q = np.zeros(model.nv)
    for call in (lambda: frame_placement(model, q, frame), lambda: frame_jacobian(model, q, frame),
                 lambda: frame_jacobian_dot_v(model, q, q, frame)):
        with pytest.raises(FrameError) as error:
            call()
        assert isinstance(error.value, DynamicsError) and isinstance(error.value, ValueError)
        message = str(error.value)
        assert repr(frame) in message and "panda" in message
        for link in model.link_frames:
            assert link in message


def test_not_a_model_is_refused():
    with pytest.raises(DynamicsError, match="must be a Model"):
        frame_jacobian("panda", np.zeros(9), "panda_hand")


def test_non_finite_input_is_refused():
    model = load_urdf(example_robot_urdf("panda"))
    q = np.zeros(model.nv)
    bad = q.copy()
    bad[2] = np.nan
    for call in (lambda: frame_placement(model, bad, "panda_hand"),
                 lambda: frame_jacobian(model, bad, "panda_hand"),
                 lambda: frame_jacobian_dot_v(model, bad, q, "panda_hand")):
        with pytest.raises(StateError, match=r"q\[2\] \(joint 'panda_joint3'\) is nan"):
            call()
    fast = q.copy()
    fast[4] = np.inf
    with pytest.raises(StateError, match=r"qd\[4\] \(joint 'panda_joint5'\) is inf"):
        frame_jacobian_dot_v(model, q, fast, "panda_hand")
    batch = np.zeros((3, model.nv))
    batch[1, 0] = -np.inf
    with pytest.raises(StateError, match=r"q\[1, 0\]"):
        frame_jacobian(model, batch, "panda_hand")
    # a link fixed to the world needs no kinematics, but its q is checked all the same
    with pytest.raises(StateError, match=r"q\[2\]"):
        frame_placement(model, bad, "panda_link0")
    with pytest.raises(StateError, match="must have shape"):
        frame_jacobian(model, np.zeros(model.nv + 1), "panda_hand")


def test_a_floating_base_quaternion_far_from_unit_length_is_refused():
    model = load_urdf(example_robot_urdf("solo12"), base="floating")
    q = np.zeros(model.nq)
    q[6] = 0.9
    with pytest.raises(StateError, match=r"q\[3:7\].*unit quaternion"):
        frame_jacobian(model, q, "FL_FOOT")


# -- without numba's compiler --------------------------------------------------

_NOJIT_SCRIPT = textwrap.dedent("""
    from robots import example_robot_urdf, load_pinocchio, rel_err
    from test_frames import PinocchioFrames, random_states, _rng
    from robot_dynamics_ros.dynamics import (frame_jacobian, frame_jacobian_dot_v,
                                             frame_placement, load_urdf)
    worst = 0.0
    for name, floating in (("ur5_robot", False), ("solo12", True)):
        path = example_robot_urdf(name)
        model = load_urdf(path, base="floating" if floating else "fixed")
        reference = PinocchioFrames(load_pinocchio(path, free_flyer=floating), model)
        qs, vs = random_states(model, path, _rng("no jit"), 2)
        for q, v in zip(qs, vs):
            theirs = reference.at(q, v)
            for frame in model.link_frames:
                pose, jacobian, bias = theirs(reference.frame_id(frame))
                worst = max(worst, rel_err(frame_placement(model, q, frame), pose),
                            rel_err(frame_jacobian(model, q, frame), jacobian),
                            rel_err(frame_jacobian_dot_v(model, q, v, frame), bias))
        batch = frame_jacobian(model, qs, frame)
        worst = max(worst, rel_err(batch[1], frame_jacobian(model, qs[1], frame)))
    print("WORST", worst)
""")


def test_correct_without_jit():
    worst = worst_error_without_jit(_NOJIT_SCRIPT)
    assert worst <= TOL, f"without JIT: worst relative error {worst}"

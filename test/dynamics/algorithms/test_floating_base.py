"""Floating-base robots (issue 11) against Pinocchio's free-flyer model.

Every legged robot, humanoid, mobile manipulator and aerial robot of
example-robot-data, and random floating trees up to 40 joints: M, g, inverse
dynamics, C, Gamma and forward dynamics (both methods) against
``pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())`` at random states
whose base poses have random unit quaternions and whose base twists are
random. Then the properties that need no oracle (Mdot - 2C skew along a
motion integrated on the manifold, C v = ID(q, v, 0) - g, M independent of
the base pose), the base block of M against the composite inertia of all the
bodies, base="auto"/"fixed" rules, batches, float32, payloads, mimic
reduction, bounds and bad input. Conventions: docs/floating_base.md.
"""
import xml.etree.ElementTree as ET
import zlib

import numpy as np
import pytest

from robots import (PinocchioOracle, add_payload_pinocchio, example_robot_urdf, joint_ranges,
                    load_pinocchio, pin, random_inertia, random_urdf, rel_err, root_links,
                    urdf_indefinite_inertias, urdf_text, worst_error_without_jit)

from robot_dynamics_ros.dynamics import (DynamicsError, StateError, URDFError, all_terms,
                                         christoffel_symbols, coriolis_bounds, coriolis_matrix,
                                         forward_dynamics, gravity_torques, inverse_dynamics,
                                         load_urdf, mass_matrix, simulate)

TOL = 1e-10
N_STATES = 20
# The free-flyer's numbers in q and v (Pinocchio's layout, ours).
NQ_BASE, NV_BASE = 7, 6

# example-robot-data's floating-base robots, by kind. tiago, tiago_dual,
# tiago_no_hand and romeo_laas_small have links with indefinite inertias,
# which load_urdf refuses (naming the link) for any base: checked as such.
FLOATING_ROBOTS = {
    "legged": ["solo", "solo12", "bolt", "anymal_b_simple/anymal", "anymal_c_simple/anymal",
               "anymal-kinova", "a1", "go1", "go2", "b1", "b1-z1", "laikago", "hyq_no_sensors",
               "quadruped", "alexander_v1.lowerBodyOnly"],
    "humanoid": ["talos_full_v2", "talos_full_v2_box", "talos_reduced", "talos_reduced_box",
                 "talos_reduced_corrected", "g1_29dof_rev_1_0", "g1_29dof_with_hand_rev_1_0",
                 "icub", "icub_reduced", "romeo", "romeo_small", "romeo_laas_small",
                 "simple_humanoid", "simple_humanoid_classical", "alex_nub_hands",
                 "alex_psyonic_hands", "alex_sake_hands", "human", "centauro"],
    "mobile manipulator": ["tiago", "tiago_dual", "tiago_no_hand", "tiago_pro", "pr2"],
    "aerial": ["quadrotor_base", "iris", "iris_simple", "borinot_flying_arm_2",
               "hextilt_flying_arm_5"],
}
ROBOT_CASES = [(kind, name) for kind, names in FLOATING_ROBOTS.items() for name in names]
# (seed, moving joints): random floating trees, chains among them
RANDOM_CASES = [(100, 1, False), (101, 3, True), (102, 8, False), (103, 12, True),
                (104, 20, True), (105, 30, False), (106, 40, True), (107, 40, True)]


def _rng(label):
    return np.random.default_rng(zlib.crc32(label.encode()))


def random_states(model, rng, count, urdf):
    """``count`` random (q, v, vdot): base anywhere within 2 m with a
    uniformly random unit quaternion (normalized Gaussian 4-vectors), random
    base twists, joints within the URDF's limits."""
    ranges = joint_ranges(model, urdf)
    quaternions = rng.standard_normal((count, 4))
    quaternions /= np.linalg.norm(quaternions, axis=1, keepdims=True)
    joints = ranges[:, 0] + (ranges[:, 1] - ranges[:, 0]) * rng.random((count, len(ranges)))
    qs = np.concatenate((rng.uniform(-2.0, 2.0, (count, 3)), quaternions, joints), axis=1)
    vs = rng.uniform(-2.0, 2.0, (count, model.nv))
    accelerations = rng.uniform(-5.0, 5.0, (count, model.nv))
    return qs, vs, accelerations


def _fd_tolerance(cond):
    """TOL, widened where M is ill-conditioned: two correct solvers differ by
    up to about cond(M) eps (test_forward_dynamics._tolerance)."""
    return max(TOL, 1e-14 * cond)


def compare_with_pinocchio(model, pin_model, urdf, label, count=N_STATES, base_offset=0.0):
    """Worst relative error per quantity over ``count`` random states;
    asserts each within TOL; ours with the base moved by ``base_offset`` (m,
    along (1, -2, 0.5) / |.|), Pinocchio's where it was: no output depends
    on the base's position. Forward dynamics: within TOL widened by cond(M)
    against ``pin.aba``, and a backward error (residual of M qdd = tau - C v
    - g with Pinocchio's M and bias) within 1e-13 whatever cond(M); where
    Pinocchio's M is singular (massless finger links), both methods must
    refuse with DynamicsError."""
    oracle = PinocchioOracle(pin_model, model.joint_names)
    assert (oracle.base_q, oracle.base_v) == (NQ_BASE, NV_BASE)
    # Pinocchio stores a continuous joint as (cos, sin): its nq may be larger
    assert model.nv == pin_model.nv and model.nq == model.nv + 1, label
    qs, vs, accelerations = random_states(model, _rng(label), count, urdf)
    worst = {}
    away = np.zeros(model.nq)
    away[:3] = base_offset * np.array([1.0, -2.0, 0.5]) / np.sqrt(5.25)
    for k in range(count):
        q, v, vdot = qs[k], vs[k], accelerations[k]
        mass = oracle.mass_matrix(q)
        tau = oracle.inverse_dynamics(q, v, vdot)
        q_ours = q + away
        errors = {
            "M": (rel_err(mass_matrix(model, q_ours), mass), TOL),
            "g": (rel_err(gravity_torques(model, q_ours), oracle.gravity_torques(q)), TOL),
            "ID": (rel_err(inverse_dynamics(model, q_ours, v, vdot), tau), TOL),
            "C": (rel_err(coriolis_matrix(model, q_ours, v), oracle.coriolis_matrix(q, v)), TOL),
            "Gamma": (rel_err(christoffel_symbols(model, q_ours), oracle.christoffel_symbols(q)), TOL),
        }
        eig = np.linalg.eigvalsh(mass)
        aba = oracle.ours_vec(pin.aba(oracle.model, oracle.data, oracle.q(q),
                                      oracle.v(v), oracle.v(tau)))
        bias = tau - mass @ vdot  # C v + g
        for method in ("recursive", "cholesky"):
            try:
                qdd = forward_dynamics(model, q_ours, v, tau, method=method)
            except DynamicsError as exc:
                # refused only where M is singular to working precision (romeo's
                # massless finger links), saying so
                assert "singular" in str(exc) and eig[0] <= 1e-12 * eig[-1], (label, exc, eig)
                worst[f"FD {method}"] = "M singular: refused"
                continue
            residual = (np.abs(mass @ qdd - (tau - bias)).max()
                        / (np.abs(mass).max() * np.abs(qdd).max() + np.abs(tau - bias).max()))
            errors[f"FD {method}"] = (rel_err(qdd, aba), _fd_tolerance(eig[-1] / abs(eig[0])))
            errors[f"FD {method} residual"] = (residual, 1e-13)
        for key, (err, tol) in errors.items():
            assert err <= tol, (f"{label}: {key} relative error {err:.3g} > {tol:.3g} at "
                                f"q={q.tolist()}, v={v.tolist()}")
            if not isinstance(worst.get(key), str):
                worst[key] = max(worst.get(key, 0.0), err)
    print(f"\n{label}: " + ", ".join(f"{key} {err:.1e}" if isinstance(err, float) else
                                     f"{key} {err}" for key, err in worst.items()))
    return worst


def _path(name):
    return example_robot_urdf(name)


@pytest.mark.parametrize("kind,name", ROBOT_CASES, ids=[n for _, n in ROBOT_CASES])
def test_example_robot_vs_pinocchio_free_flyer(kind, name):
    path = _path(name)
    invalid = urdf_indefinite_inertias(path)
    if invalid:
        with pytest.raises(URDFError, match="|".join(invalid)):
            load_urdf(path, base="floating")
        return
    model = load_urdf(path, base="floating")
    assert model.floating and model.base_link == root_links(path)[0]
    assert model.velocity_names[NV_BASE:] == model.joint_names
    compare_with_pinocchio(model, load_pinocchio(path, free_flyer=True), path, name)


@pytest.mark.parametrize("seed,n,tree", RANDOM_CASES,
                         ids=[f"{'tree' if t else 'chain'}{n}-seed{s}" for s, n, t in RANDOM_CASES])
def test_random_floating_robot_vs_pinocchio(seed, n, tree):
    text = random_urdf(np.random.default_rng(seed), n, tree=tree)
    compare_with_pinocchio(load_urdf(text, base="floating"), load_pinocchio(text, free_flyer=True),
                           text, f"random-{seed}-{n}")


@pytest.mark.parametrize("offset", [1e4, 5e6, 1e12])
def test_a_base_far_from_the_world_origin_vs_pinocchio_at_the_origin(offset):
    """Odometry in a UTM map frame puts the base 5e6 m away: the outputs
    are Pinocchio's at the origin (they lost 4e-4 to 1.0 of their digits at
    5e6 m when positions were measured from the world origin)."""
    path = _path("solo12")
    compare_with_pinocchio(load_urdf(path, base="floating"), load_pinocchio(path, free_flyer=True),
                           path, f"solo12 {offset:g} m away", count=5, base_offset=offset)


def test_a_fixed_base_placed_far_from_the_world_origin_vs_pinocchio_at_the_origin():
    """A world joint 1e6 m from the world origin (a robot placed in a map):
    M, C, Gamma, g, inverse and forward dynamics are Pinocchio's for the
    robot at the origin."""
    path = _path("panda")
    model = load_urdf(with_floating_joint(path, xyz="1e6 -1e6 3e5", kind="fixed"))
    oracle = PinocchioOracle(load_pinocchio(path), model.joint_names)
    rng = _rng("fixed far away")
    ranges = joint_ranges(model, path)
    for _ in range(5):
        q = ranges[:, 0] + (ranges[:, 1] - ranges[:, 0]) * rng.random(len(ranges))
        v, vdot = rng.uniform(-2.0, 2.0, (2, model.nv))
        tau = oracle.inverse_dynamics(q, v, vdot)
        assert rel_err(mass_matrix(model, q), oracle.mass_matrix(q)) <= TOL
        assert rel_err(gravity_torques(model, q), oracle.gravity_torques(q)) <= TOL
        assert rel_err(inverse_dynamics(model, q, v, vdot), tau) <= TOL
        assert rel_err(coriolis_matrix(model, q, v), oracle.coriolis_matrix(q, v)) <= TOL
        assert rel_err(christoffel_symbols(model, q), oracle.christoffel_symbols(q)) <= TOL
        mass = oracle.mass_matrix(q)
        cond = np.linalg.cond(mass)
        assert rel_err(forward_dynamics(model, q, v, tau), vdot) <= _fd_tolerance(cond)


# -- a URDF's own floating joint ---------------------------------------------


def with_floating_joint(urdf, xyz="0 0 0", rpy="0 0 0", kind="floating", name="root_joint"):
    """The URDF with a massless ``world`` link and a joint of type ``kind``
    from it to the root link, its origin at ``xyz``/``rpy``."""
    root = ET.fromstring(urdf_text(urdf))
    base = root_links(urdf)[0]
    root.insert(0, ET.fromstring('<link name="world"/>'))
    root.append(ET.fromstring(
        f'<joint name="{name}" type="{kind}"><parent link="world"/><child link="{base}"/>'
        f'<origin xyz="{xyz}" rpy="{rpy}"/></joint>'))
    return ET.tostring(root, encoding="unicode")


def test_auto_base_follows_a_floating_root_joint():
    text = random_urdf(np.random.default_rng(7), 9, tree=True)
    assert not load_urdf(text).floating and load_urdf(text).base == "fixed"
    floating = with_floating_joint(text, xyz="0.3 -0.2 1.1", rpy="0.4 -0.7 2.0")
    model = load_urdf(floating)
    assert model.floating and model.base == "floating" and model.base_link == root_links(text)[0]
    # Pinocchio turns the URDF's floating joint, origin included, into its free-flyer
    compare_with_pinocchio(model, load_pinocchio(floating), floating, "floating-joint", count=5)
    assert load_urdf(floating, base="floating").joint_names == model.joint_names


def test_fixed_base_welds_a_floating_root_joint_bit_for_bit():
    text = random_urdf(np.random.default_rng(8), 10, tree=True)
    origin = dict(xyz="0.3 -0.2 1.1", rpy="0.4 -0.7 2.0")
    welded = load_urdf(with_floating_joint(text, **origin), base="fixed")
    bolted = load_urdf(with_floating_joint(text, kind="fixed", **origin))
    assert not welded.floating and welded.nq == welded.nv == len(welded.joint_names)
    q = np.random.default_rng(0).uniform(-1, 1, (3, welded.nv))
    for f in (mass_matrix, gravity_torques, christoffel_symbols):
        np.testing.assert_array_equal(f(welded, q), f(bolted, q))
    np.testing.assert_array_equal(coriolis_matrix(welded, q, q), coriolis_matrix(bolted, q, q))


def test_default_and_fixed_base_are_the_same_model():
    # no floating joint: "auto" (the default) and "fixed" are today's model
    path = _path("solo12")
    auto, fixed = load_urdf(path), load_urdf(path, base="fixed")
    assert auto.base == fixed.base == "fixed" and auto.nq == auto.nv == 12
    assert auto.velocity_names == auto.configuration_names == auto.joint_names
    q, v = _rng("same").uniform(-1, 1, (2, 12))
    np.testing.assert_array_equal(mass_matrix(auto, q), mass_matrix(fixed, q))
    np.testing.assert_array_equal(coriolis_matrix(auto, q, v), coriolis_matrix(fixed, q, v))


@pytest.mark.parametrize("case,match", [
    ("inside", "floating joint 'inner' joins link"),
    ("two", "2 floating joints"),
    ("beside", "relative to the world link 'world'"),
    ("planar", "type 'planar'"),
    ("reserved", "reserved for the floating base"),
    ("base", "base must be 'auto', 'fixed' or 'floating'"),
])
def test_floating_joints_refused_where_they_make_no_floating_base(case, match):
    text = random_urdf(np.random.default_rng(9), 4)
    base = "auto"
    if case == "inside":
        root = ET.fromstring(text)
        for joint in root.iter("joint"):
            if joint.get("type") in ("revolute", "continuous", "prismatic"):
                joint.set("type", "floating")
                joint.set("name", "inner")
                break
        text = ET.tostring(root, encoding="unicode")
    elif case == "two":
        root = ET.fromstring(with_floating_joint(text))
        root.append(ET.fromstring('<link name="spare"/>'))
        root.append(ET.fromstring('<joint name="second" type="floating"><parent link="world"/>'
                                  '<child link="spare"/></joint>'))
        text = ET.tostring(root, encoding="unicode")
    elif case == "beside":
        root = ET.fromstring(with_floating_joint(text))
        root.append(ET.fromstring('<link name="arm"><inertial><mass value="1"/><inertia ixx="1" '
                                  'ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>'))
        root.append(ET.fromstring('<joint name="arm_joint" type="continuous"><parent link="world"/>'
                                  '<child link="arm"/><axis xyz="0 0 1"/></joint>'))
        text = ET.tostring(root, encoding="unicode")
    elif case == "planar":
        text = with_floating_joint(text, kind="planar")
    elif case == "reserved":
        root = ET.fromstring(text)
        next(j for j in root.iter("joint") if j.get("type") != "fixed").set("name", "base_wz")
        text = ET.tostring(root, encoding="unicode")
        base = "floating"
    else:
        base = "free"
    with pytest.raises(URDFError, match=match):
        load_urdf(text, base=base)


# -- properties that need no oracle -------------------------------------------


def _quaternion_product(a, b):
    """a b for quaternions stored (x, y, z, w)."""
    (ax, ay, az, aw), (bx, by, bz, bw) = a, b
    return np.array([aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz])


def _rotation(quaternion):
    x, y, z, w = quaternion / np.linalg.norm(quaternion)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def integrate(q, v, t):
    """q moved for time t at the constant speeds v: joints by t v, the
    base's orientation by the exact exponential of its body-frame angular
    velocity (quat * exp(w t / 2)), its position by the first-order step
    R v_lin t (M does not depend on the base pose; this moves it anyway)."""
    out = q.copy()
    w = v[3:6] * t
    angle = np.linalg.norm(w)
    half = np.concatenate((np.sin(angle / 2) * w / angle if angle else np.zeros(3),
                           [np.cos(angle / 2)]))
    out[3:7] = _quaternion_product(q[3:7], half)
    out[:3] = q[:3] + _rotation(q[3:7]) @ v[:3] * t
    out[NQ_BASE:] = q[NQ_BASE:] + v[NV_BASE:] * t
    return out


PROPERTY_ROBOTS = ["solo12", "talos_full_v2", "g1_29dof_rev_1_0", "random-40"]


def _robot(name):
    if name.startswith("random"):
        text = random_urdf(np.random.default_rng(int(name.split("-")[1])), 40, tree=True)
        return text, load_urdf(text, base="floating")
    return _path(name), load_urdf(_path(name), base="floating")


@pytest.mark.parametrize("name", PROPERTY_ROBOTS)
def test_mdot_minus_2c_is_skew_and_c_v_is_the_velocity_product(name):
    urdf, model = _robot(name)
    qs, vs, _ = random_states(model, _rng("skew" + name), 5, urdf)
    h = 1e-6
    for q, v in zip(qs, vs):
        mdot = (mass_matrix(model, integrate(q, v, h))
                - mass_matrix(model, integrate(q, v, -h))) / (2 * h)
        coriolis = coriolis_matrix(model, q, v)
        # central differences: O(h^2) truncation, O(eps / h) rounding
        assert rel_err(mdot, coriolis + coriolis.T) <= 1e-7
        velocity_product = (inverse_dynamics(model, q, v, np.zeros(model.nv))
                            - gravity_torques(model, q))
        assert rel_err(coriolis @ v, velocity_product) <= 1e-12
        # Gamma[:, :, k] = C(q, e_k): C is linear in v
        np.testing.assert_allclose(np.einsum("ijk,k->ij", christoffel_symbols(model, q), v),
                                   coriolis, rtol=0, atol=1e-12 * max(1.0, np.abs(coriolis).max()))


@pytest.mark.parametrize("name", PROPERTY_ROBOTS)
def test_m_and_gamma_do_not_depend_on_the_base_pose_g_on_its_position(name):
    urdf, model = _robot(name)
    qs, _, _ = random_states(model, _rng("pose" + name), 4, urdf)
    moved = qs.copy()
    moved[:, :NQ_BASE] = qs[::-1, :NQ_BASE]  # other base poses, same joints
    scale = np.abs(mass_matrix(model, qs)).max()
    assert np.abs(mass_matrix(model, qs) - mass_matrix(model, moved)).max() <= 1e-13 * scale
    gamma, gamma_moved = christoffel_symbols(model, qs), christoffel_symbols(model, moved)
    assert np.abs(gamma - gamma_moved).max() <= 1e-13 * max(1.0, np.abs(gamma).max())
    shifted = qs.copy()
    shifted[:, :3] += 5.0
    g = gravity_torques(model, qs)
    assert np.abs(gravity_torques(model, shifted) - g).max() <= 1e-12 * np.abs(g).max()


def _composite_inertia_in_root_frame(pin_model, pin_q):
    """The spatial inertia of all Pinocchio bodies, moved to the world with
    their placements from forward kinematics, then to the root joint's frame;
    6 x 6, [linear; angular] (Pinocchio's order, ours)."""
    data = pin_model.createData()
    pin.forwardKinematics(pin_model, data, pin_q)
    total = pin.Inertia.Zero()
    for i in range(1, pin_model.njoints):
        total += data.oMi[i].act(pin_model.inertias[i])
    return data.oMi[1].actInv(total).matrix()


@pytest.mark.parametrize("name", ["solo12", "talos_full_v2", "random-40"])
def test_base_block_is_the_composite_inertia_of_the_whole_robot(name):
    urdf, model = _robot(name)
    pin_model = load_pinocchio(urdf, free_flyer=True)
    oracle = PinocchioOracle(pin_model, model.joint_names)
    masses = [float(m.get("value")) for m in ET.fromstring(urdf_text(urdf)).iter("mass")]
    for q in random_states(model, _rng("block" + name), 3, urdf)[0]:
        block = mass_matrix(model, q)[:NV_BASE, :NV_BASE]
        assert rel_err(block, _composite_inertia_in_root_frame(pin_model, oracle.q(q))) <= TOL
        # the total mass of the URDF's links (read from the XML) on the diagonal
        np.testing.assert_allclose(np.diag(block)[:3], sum(masses), rtol=1e-13)


# -- batches, float32, payloads, mimic joints, bounds -------------------------


# A small floating tree for what computes the global Coriolis constant
# (all_terms, coriolis_bounds): its search costs 0.6 s here, solo12's 190 s.
SMALL = (21, 4)


def _small_robot():
    text = random_urdf(np.random.default_rng(SMALL[0]), SMALL[1], tree=True)
    return text, load_urdf(text, base="floating")


def test_batches_equal_single_calls_bitwise():
    urdf, model = _robot("random-40")
    qs, vs, accelerations = random_states(model, _rng("batch"), 70, urdf)  # threads from 64 on
    taus = inverse_dynamics(model, qs, vs, accelerations)
    batch = {"M": mass_matrix(model, qs), "g": gravity_torques(model, qs), "ID": taus,
             "C": coriolis_matrix(model, qs, vs), "Gamma": christoffel_symbols(model, qs),
             "FD": forward_dynamics(model, qs, vs, taus),
             "FD cholesky": forward_dynamics(model, qs, vs, taus, method="cholesky")}
    for k in range(0, 70, 9):
        q, v = qs[k], vs[k]
        single = {"M": mass_matrix(model, q), "g": gravity_torques(model, q),
                  "ID": inverse_dynamics(model, q, v, accelerations[k]),
                  "C": coriolis_matrix(model, q, v), "Gamma": christoffel_symbols(model, q),
                  "FD": forward_dynamics(model, q, v, taus[k]),
                  "FD cholesky": forward_dynamics(model, q, v, taus[k], method="cholesky")}
        for key, value in single.items():
            np.testing.assert_array_equal(batch[key][k], value, err_msg=key)
    urdf, model = _small_robot()
    qs, vs, _ = random_states(model, _rng("batch-terms"), 70, urdf)
    terms = all_terms(model, qs, vs)
    for k in range(0, 70, 9):
        one = all_terms(model, qs[k], vs[k])
        for name, value in zip(terms._fields, one):
            np.testing.assert_array_equal(getattr(terms, name)[k], value, err_msg=name)
        np.testing.assert_array_equal(one.mass_matrix, mass_matrix(model, qs[k]))
        np.testing.assert_array_equal(one.christoffel_symbols, christoffel_symbols(model, qs[k]))
        np.testing.assert_array_equal(one.coriolis_matrix, coriolis_matrix(model, qs[k], vs[k]))
        np.testing.assert_array_equal(one.gravity_torques, gravity_torques(model, qs[k]))


@pytest.mark.parametrize("method", ["recursive", "cholesky"])
@pytest.mark.slow
def test_float32_forward_dynamics(method):
    path = _path("solo12")
    model = load_urdf(path, base="floating")
    qs, vs, _ = random_states(model, _rng("float32" + method), 20, path)
    taus = _rng("tau").uniform(-10, 10, vs.shape)
    q32, v32, tau32 = (x.astype(np.float32) for x in (qs, vs, taus))
    away = q32.copy()
    away[:, :3] += np.float32(1000.0)  # float32 positions of 1 km have 6e-5 m steps
    single = forward_dynamics(model, away, v32, tau32, method=method)
    double = forward_dynamics(model, q32.astype(float), v32.astype(float), tau32.astype(float),
                              method=method)
    assert single.dtype == np.float32 and single.shape == vs.shape
    assert rel_err(single, double) <= 1e-3
    # computed in float32, not float64 rounded at the end
    assert np.mean(single != double.astype(np.float32)) > 0.5


PAYLOAD_LINKS = {"solo12": ["base_link", "FL_LOWER_LEG"],
                 "talos_full_v2": ["base_link", "torso_2_link", "gripper_left_base_link"]}


@pytest.mark.parametrize("name", sorted(PAYLOAD_LINKS))
def test_payloads_on_a_floating_model_vs_pinocchio(name):
    path = _path(name)
    model = load_urdf(path, base="floating")
    pin_model = load_pinocchio(path, free_flyer=True)
    rng = _rng("payload" + name)
    for link in PAYLOAD_LINKS[name]:
        mass, com = rng.uniform(0.5, 3.0), rng.uniform(-0.1, 0.1, 3)
        inertia = random_inertia(rng, mass, 0.1)
        loaded = model.with_payload(link, mass, com, inertia)
        pin_loaded = add_payload_pinocchio(pin_model, link, mass, com, inertia)
        compare_with_pinocchio(loaded, pin_loaded, path, f"{name}+{link}", count=3)


def test_mimic_reduced_floating_model():
    # talos's grippers: mimic joints follow gripper_*_joint; the base speeds
    # pass through the coordinate map unchanged
    path = _path("talos_full_v2")
    model = load_urdf(path, base="floating", mimic="reduce")
    root = ET.fromstring(urdf_text(path))
    mimic = {j.get("name"): j.find("mimic") for j in root.iter("joint") if j.find("mimic") is not None}
    full_names = list(model.joint_names) + sorted(mimic)
    oracle = PinocchioOracle(load_pinocchio(path, free_flyer=True), full_names)
    jmap = np.zeros((NV_BASE + len(full_names), model.nv))
    jmap[:NV_BASE, :NV_BASE] = np.eye(NV_BASE)
    offsets = np.zeros(len(full_names))
    for row, joint in enumerate(full_names):
        if joint in mimic:
            column = model.joint_names.index(mimic[joint].get("joint"))
            jmap[NV_BASE + row, NV_BASE + column] = float(mimic[joint].get("multiplier", 1.0))
            offsets[row] = float(mimic[joint].get("offset", 0.0))
        else:
            jmap[NV_BASE + row, NV_BASE + model.joint_names.index(joint)] = 1.0
    assert jmap.shape[0] > jmap.shape[1], "talos's mimic joints are gone?"
    qs, vs, accelerations = random_states(model, _rng("mimic"), 3, path)
    for q, v, vdot in zip(qs, vs, accelerations):
        q_full = np.concatenate((q[:NQ_BASE], jmap[NV_BASE:, NV_BASE:] @ q[NQ_BASE:] + offsets))
        v_full, vdot_full = jmap @ v, jmap @ vdot
        mass = jmap.T @ oracle.mass_matrix(q_full) @ jmap
        assert rel_err(mass_matrix(model, q), mass) <= TOL
        assert rel_err(gravity_torques(model, q), jmap.T @ oracle.gravity_torques(q_full)) <= TOL
        assert rel_err(inverse_dynamics(model, q, v, vdot),
                       jmap.T @ oracle.inverse_dynamics(q_full, v_full, vdot_full)) <= TOL
        assert rel_err(coriolis_matrix(model, q, v),
                       jmap.T @ oracle.coriolis_matrix(q_full, v_full) @ jmap) <= TOL
        gamma = np.einsum("ai,bj,ck,abc->ijk", jmap, jmap, jmap, oracle.christoffel_symbols(q_full),
                          optimize=True)
        assert rel_err(christoffel_symbols(model, q), gamma) <= TOL
        tau = jmap.T @ oracle.inverse_dynamics(q_full, v_full, vdot_full)
        assert rel_err(forward_dynamics(model, q, v, tau), vdot) <= _fd_tolerance(
            np.linalg.cond(mass))


def test_bounds_of_a_floating_model():
    path, model = _small_robot()
    qs, vs, _ = random_states(model, _rng("bounds"), 4, path)
    terms = all_terms(model, qs, vs)
    rng = _rng("bounds-xy")
    for k, (q, v) in enumerate(zip(qs, vs)):
        bounds = coriolis_bounds(model, q, v)
        gamma = christoffel_symbols(model, q)
        kc = np.sqrt(sum(np.linalg.norm(gamma[:, :, i], 2) ** 2 for i in range(model.nv)))
        assert rel_err(bounds.kc_config, kc) <= TOL
        assert rel_err(bounds.coriolis_norm, np.linalg.norm(coriolis_matrix(model, q, v), 2)) <= TOL
        assert np.isfinite(bounds.kc_global) and bounds.kc_global > 0
        assert terms.coriolis_bounds[k, 2] == bounds.kc_global
        # ||C(q, x) y|| <= k_c(q) ||x|| ||y||, Gamma not symmetric in j, k
        for x, y in rng.standard_normal((10, 2, model.nv)):
            cxy = coriolis_matrix(model, q, x) @ y
            assert np.linalg.norm(cxy) <= bounds.kc_config * np.linalg.norm(x) * np.linalg.norm(y)
    # the global search moves the joints only: its value holds for any base pose
    assert bounds.kc_global >= max(coriolis_bounds(model, q, v).kc_config for q, v in zip(qs, vs))


# -- bad input and what has no meaning ----------------------------------------


def test_bad_configurations_are_state_errors():
    model = load_urdf(_path("solo12"), base="floating")
    q = np.r_[0.1, 0.2, 0.3, 0.0, 0.0, 0.0, 1.0, np.zeros(12)]
    v = np.zeros(18)
    for f in (mass_matrix, gravity_torques):
        f(model, q)  # a unit quaternion: fine
    slightly = q.copy()
    slightly[6] = 1.0 + 5e-4  # within the tolerance: normalized
    np.testing.assert_allclose(gravity_torques(model, slightly), gravity_torques(model, q),
                               rtol=0, atol=1e-12)
    far = q.copy()
    far[3:7] = [0.0, 0.0, 0.0, 2.0]
    calls = [lambda x: mass_matrix(model, x), lambda x: gravity_torques(model, x),
             lambda x: inverse_dynamics(model, x, v, v), lambda x: coriolis_matrix(model, x, v),
             lambda x: christoffel_symbols(model, x), lambda x: forward_dynamics(model, x, v, v),
             lambda x: forward_dynamics(model, x, v, v, method="cholesky"),
             lambda x: all_terms(model, x, v), lambda x: coriolis_bounds(model, x, v)]
    for call in calls:
        with pytest.raises(StateError,
                           match=r"q\[(0, )?3:7\], the base orientation quaternion.*norm 2"):
            call(far)
    batch = np.stack([q, q, far])
    with pytest.raises(StateError, match=r"q\[2, 3:7\]"):
        mass_matrix(model, batch)
    zero = q.copy()
    zero[3:7] = 0.0
    with pytest.raises(StateError, match="norm 0"):
        mass_matrix(model, zero)
    nan = q.copy()
    nan[4] = np.nan
    with pytest.raises(StateError, match=r"q\[4\] \(base coordinate 'base_qy'\) is nan"):
        mass_matrix(model, nan)
    v_bad = v.copy()
    v_bad[8] = np.inf  # the third joint: solo12's FL_KFE
    with pytest.raises(StateError, match=r"qd\[8\] \(joint 'FL_KFE'\) is inf"):
        coriolis_matrix(model, q, v_bad)
    # q of length nv (a fixed-base habit) or qd of length nq: named with the layout
    with pytest.raises(StateError, match=r"q must have shape \(19,\).*quaternion \(x, y, z, w\)"):
        mass_matrix(model, np.zeros(18))
    with pytest.raises(StateError, match=r"qd must have shape \(18,\).*got \(19,\)"):
        coriolis_matrix(model, q, np.zeros(19))


def test_what_has_no_meaning_for_a_floating_base_is_refused():
    model = load_urdf(_path("solo12"), base="floating")
    q = np.r_[np.zeros(6), 1.0, np.zeros(12)]
    with pytest.raises(DynamicsError, match="floating base: use method='tree'"):
        christoffel_symbols(model, q, method="safeea")
    with pytest.raises(DynamicsError, match="floating base; only fixed-base"):
        simulate(model, q, np.zeros(18), lambda t, q, qd: np.zeros(18), 0.1)


def test_without_jit_floating_base_matches_pinocchio():
    # DESIGN.md: NUMBA_DISABLE_JIT=1 must give the same (slow) results
    worst = worst_error_without_jit("""
from robots import PinocchioOracle, load_pinocchio, random_urdf, rel_err, pin
from test_floating_base import random_states
from robot_dynamics_ros.dynamics import *
text = random_urdf(np.random.default_rng(3), 6, tree=True)
model = load_urdf(text, base="floating")
oracle = PinocchioOracle(load_pinocchio(text, free_flyer=True), model.joint_names)
qs, vs, accs = random_states(model, np.random.default_rng(1), 2, text)
worst = 0.0
for q, v, a in zip(qs, vs, accs):
    tau = oracle.inverse_dynamics(q, v, a)
    worst = max(worst, rel_err(mass_matrix(model, q), oracle.mass_matrix(q)),
                rel_err(inverse_dynamics(model, q, v, a), tau),
                rel_err(christoffel_symbols(model, q), oracle.christoffel_symbols(q)),
                rel_err(coriolis_matrix(model, q, v), oracle.coriolis_matrix(q, v)),
                rel_err(forward_dynamics(model, q, v, tau), a))
print("WORST", worst)
""")
    assert worst <= TOL

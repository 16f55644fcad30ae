"""Bad input raises DynamicsError naming what is wrong and where (DESIGN.md).

And the reverse: the noise real URDFs carry (materials without colour,
transmissions, gazebo tags, unnamed visuals, unknown elements) loads, and
gives the same dynamics as the clean file.
"""
import re
import sys

import numpy as np
import pytest

from robots import PinocchioOracle, load_pinocchio, random_configurations, rel_err
from urdf_snippets import INERTIAL, assert_rejected, elbow, inertial, urdf  # noqa: F401

from robot_dynamics_ros.dynamics import (DynamicsError, gravity_torques,
                                         inverse_dynamics, load_urdf,
                                         mass_matrix)



def test_dynamics_error_is_a_value_error():
    assert issubclass(DynamicsError, ValueError)


def test_the_template_is_valid():
    # The error cases below are one change away from this robot: it must load.
    text = urdf()
    model = load_urdf(text)
    assert set(model.joint_names) == {"shoulder", "elbow", "wrist"}
    assert load_pinocchio(text) is not None


# ---------------------------------------------------------------------------
# Structure

def test_malformed_xml():
    assert_rejected(urdf()[:-20], re.compile(r"(?i)xml|pars|syntax|malformed"))


def test_not_a_robot():
    assert_rejected('<?xml version="1.0"?><model name="x"/>',
                    re.compile(r"(?i)robot|urdf"))


def test_missing_parent_link():
    assert_rejected(urdf(joints=elbow(parent="ghost_link")), "ghost_link", "elbow")


def test_missing_child_link():
    assert_rejected(urdf(joints=elbow(child="phantom")), "phantom", "elbow")


def test_cycle():
    # hand -> upper_arm closes a loop: upper_arm gets a second parent.
    text = urdf(joints={"loop": ("revolute", "hand", "upper_arm",
                                 '<axis xyz="0 0 1"/>'
                                 '<limit lower="-1" upper="1" effort="1" velocity="1"/>')})
    assert_rejected(text, re.compile(r"upper_arm|loop"))


def test_pure_cycle_without_second_parent():
    # a -> b -> c -> a: every link has one parent, the loop hangs off nothing.
    extra = ''.join(f'<link name="{n}">{INERTIAL}</link>' for n in "abc")
    extra += ''.join(
        f'<joint name="r_{p}{c}" type="revolute"><parent link="{p}"/><child link="{c}"/>'
        '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
        for p, c in [("a", "b"), ("b", "c"), ("c", "a")])
    assert_rejected(urdf(extra=extra), re.compile(r"(?i)cycle|loop|r_ab|r_bc|r_ca"))


def test_two_roots():
    extra = (f'<link name="island">{INERTIAL}</link><link name="island_tip">{INERTIAL}</link>'
             '<joint name="island_joint" type="revolute"><parent link="island"/>'
             '<child link="island_tip"/><axis xyz="0 0 1"/>'
             '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>')
    assert_rejected(urdf(extra=extra), "island", "base")


def test_duplicate_link_name():
    extra = f'<link name="forearm">{INERTIAL}</link>'
    assert_rejected(urdf(extra=extra), "forearm")


@pytest.mark.parametrize("kind", ["floating", "planar"])
def test_multi_dof_joint(kind):
    text = urdf(joints={"elbow": (kind, "upper_arm", "forearm",
                                  '<origin xyz="0.4 0 0" rpy="0 0 0"/>')})
    assert_rejected(text, "elbow", kind)


# ---------------------------------------------------------------------------
# Numbers in the URDF

def test_negative_mass():
    assert_rejected(urdf(links={"forearm": inertial(mass="-1")}), "forearm", "mass")


def test_indefinite_inertia():
    assert_rejected(urdf(links={"forearm": inertial(ixx="-0.02")}), "forearm",
                    re.compile(r"(?i)inertia"))


def test_indefinite_inertia_with_positive_diagonal():
    # every diagonal entry positive, but ixy makes one principal moment < 0
    assert_rejected(urdf(links={"forearm": inertial(ixx="0.02", iyy="0.03", ixy="0.1")}),
                    "forearm", re.compile(r"(?i)inertia"))


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf"])
@pytest.mark.parametrize("where", ["joint_xyz", "joint_rpy", "axis", "mass",
                                   "inertia", "inertial_xyz", "inertial_rpy"])
def test_non_finite_number(where, bad):
    if where == "joint_xyz":
        text, name = urdf(joints=elbow(origin=f'<origin xyz="0.4 {bad} 0" rpy="0 0 0"/>')), "elbow"
    elif where == "joint_rpy":
        text, name = urdf(joints=elbow(origin=f'<origin xyz="0.4 0 0" rpy="0 {bad} 0"/>')), "elbow"
    elif where == "axis":
        text, name = urdf(joints=elbow(axis=f"0 {bad} 0")), "elbow"
    elif where == "mass":
        text, name = urdf(links={"forearm": inertial(mass=bad)}), "forearm"
    elif where == "inertia":
        text, name = urdf(links={"forearm": inertial(iyy=bad)}), "forearm"
    elif where == "inertial_xyz":
        text, name = urdf(links={"forearm": inertial(xyz=f"0.1 {bad} 0")}), "forearm"
    else:
        text, name = urdf(links={"forearm": inertial(rpy=f"{bad} 0 0")}), "forearm"
    assert_rejected(text, name)


def test_zero_axis():
    assert_rejected(urdf(joints=elbow(axis="0 0 0")), "elbow", "axis")


def test_unparsable_number():
    assert_rejected(urdf(links={"forearm": inertial(mass="heavy")}), "forearm")


VISUAL = '<visual><geometry><box size="0.1 0.1 0.3"/></geometry></visual>'


def test_a_visual_only_description_is_refused_not_served_as_zeros():
    """No link a joint moves carries inertia: every output would be zero. The
    root link's inertia does not count on a fixed base (it never moves)."""
    visual_only = {name: VISUAL for name in ("upper_arm", "forearm", "hand")}
    assert_rejected(urdf(links=visual_only), "arm", "no link", "inertia", "visual-only")
    assert_rejected(urdf(links=dict(visual_only, base=INERTIAL)), "no link", "inertia")
    assert_rejected(urdf(links=dict(visual_only, hand=inertial(mass="0", ixx="0", iyy="0", izz="0"))),
                    "no link", "inertia")


def test_one_moving_link_with_inertia_is_enough():
    """A rotor (inertia without mass) or a floating root link with mass makes
    the dynamics non-zero: loaded. Which of those M is singular for is the
    business of the algorithms that need its inverse."""
    visual_only = {name: VISUAL for name in ("upper_arm", "forearm", "hand")}
    rotor = load_urdf(urdf(links=dict(visual_only, hand=inertial(mass="0"))))
    assert mass_matrix(rotor, np.zeros(rotor.nv)).any()
    floating = load_urdf(urdf(links=dict(visual_only, base=INERTIAL)), base="floating")
    q = np.zeros(floating.nq)
    q[6] = 1.0  # the base's unit quaternion (x, y, z, w)
    assert mass_matrix(floating, q).any()


# ---------------------------------------------------------------------------
# States

@pytest.fixture(scope="module")
def arm():
    return load_urdf(urdf())


def _calls(model, q=None, qd=None, qdd=None):
    n = model.nv
    q = np.zeros(n) if q is None else q
    qd = np.zeros(n) if qd is None else qd
    qdd = np.zeros(n) if qdd is None else qdd
    return [lambda: mass_matrix(model, q), lambda: gravity_torques(model, q),
            lambda: inverse_dynamics(model, q, qd, qdd)]


@pytest.mark.parametrize("length", [0, 2, 4])
def test_q_wrong_length(arm, length):
    for call in _calls(arm, q=np.zeros(length)):
        with pytest.raises(DynamicsError) as info:
            call()
        msg = str(info.value)
        assert str(arm.nv) in msg and str(length) in msg, msg


@pytest.mark.parametrize("which", ["qd", "qdd"])
def test_qd_qdd_wrong_length(arm, which):
    args = {which: np.zeros(arm.nv + 1)}
    with pytest.raises(DynamicsError, match=which):
        _calls(arm, **args)[2]()


def test_batch_shape_mismatch(arm):
    # q (5, n) with qd (4, n): no silent broadcasting
    with pytest.raises(DynamicsError):
        inverse_dynamics(arm, np.zeros((5, arm.nv)), np.zeros((4, arm.nv)),
                         np.zeros((5, arm.nv)))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("which", ["q", "qd", "qdd"])
def test_non_finite_state(arm, which, bad):
    x = np.zeros(arm.nv)
    x[1] = bad
    calls = _calls(arm, **{which: x})
    if which != "q":
        calls = calls[2:]  # only inverse dynamics takes qd and qdd
    for call in calls:
        with pytest.raises(DynamicsError) as info:
            call()
        msg = str(info.value)
        assert re.search(rf"\b{which}\b", msg), msg
        assert re.search(r"(?i)nan|inf|finite", msg), msg


def test_non_finite_in_batch(arm):
    q = np.zeros((6, arm.nv))
    q[4, 2] = np.nan
    with pytest.raises(DynamicsError, match=r"\bq\b"):
        mass_matrix(arm, q)


# ---------------------------------------------------------------------------
# Payloads

GOOD_I = np.diag([0.01, 0.02, 0.025])


@pytest.mark.parametrize("mass,com,inertia,needle", [
    (-1.0, np.zeros(3), GOOD_I, "mass"),
    (1.0, np.zeros(3), np.array([[0.01, 0.001, 0], [0, 0.02, 0], [0, 0, 0.025]]), "symmetric"),
    (1.0, np.zeros(3), np.diag([0.01, -0.02, 0.025]), re.compile(r"(?i)definite|negative|moment")),
    (1.0, np.zeros(3), np.diag([0.01, 0.01, 0.05]), "triangle"),
    (1.0, np.array([0.0, np.nan, 0.0]), GOOD_I, re.compile(r"(?i)nan|finite")),
    (np.inf, np.zeros(3), GOOD_I, re.compile(r"(?i)inf|finite")),
    (1.0, np.zeros(3), np.full((3, 3), np.nan), re.compile(r"(?i)nan|finite")),
    (1.0, np.zeros(2), GOOD_I, re.compile(r"(?i)com|3")),
], ids=["negative-mass", "non-symmetric", "indefinite", "triangle", "nan-com",
        "inf-mass", "nan-inertia", "com-shape"])
def test_bad_payload(arm, mass, com, inertia, needle):
    with pytest.raises(DynamicsError) as info:
        arm.with_payload("hand", mass, com, inertia)
    msg = str(info.value)
    assert "hand" in msg, msg
    if isinstance(needle, re.Pattern):
        assert needle.search(msg), msg
    else:
        assert needle in msg.lower(), msg


def test_unknown_payload_link(arm):
    with pytest.raises(DynamicsError, match="gripper_tool"):
        arm.with_payload("gripper_tool", 1.0, np.zeros(3), GOOD_I)


def test_rejected_payload_leaves_model_usable(arm):
    q = np.array([0.3, -0.2, 0.1])
    before = mass_matrix(arm, q).copy()
    with pytest.raises(DynamicsError):
        arm.with_payload("hand", -1.0, np.zeros(3), GOOD_I)
    np.testing.assert_array_equal(mass_matrix(arm, q), before)


# ---------------------------------------------------------------------------
# Noise that real URDFs carry: must load, with unchanged dynamics

VISUALS = ('<visual><geometry><box size="0.1 0.1 0.1"/></geometry>'
           '<material name="nocolour"/></visual>'
           '<collision><geometry><cylinder radius="0.05" length="0.2"/></geometry></collision>'
           '<visual><origin xyz="0 0 0.1"/><geometry><mesh filename="package://x/y.stl"/>'
           '</geometry></visual>')

NOISE = {
    "material-without-colour":
        urdf(extra='<material name="steel"/><material name="dark"><texture/></material>'),
    "material-without-colour-in-visual":
        urdf(links={"forearm": INERTIAL + VISUALS}),
    "transmission":
        urdf(extra='<transmission name="t1"><type>transmission_interface/SimpleTransmission'
                   '</type><joint name="elbow"><hardwareInterface>hardware_interface/'
                   'EffortJointInterface</hardwareInterface></joint><actuator name="m1">'
                   '<mechanicalReduction>50</mechanicalReduction></actuator></transmission>'),
    "gazebo":
        urdf(extra='<gazebo reference="forearm"><material>Gazebo/Grey</material>'
                   '<mu1>0.2</mu1></gazebo><gazebo><plugin name="p" filename="libp.so">'
                   '<robotNamespace>/arm</robotNamespace></plugin></gazebo>'),
    "unnamed-visual-collision":
        urdf(links={"upper_arm": INERTIAL + VISUALS, "hand": VISUALS + INERTIAL}),
    "unknown-elements":
        urdf(links={"forearm": INERTIAL + '<sensor_mount frame="x"/><foo bar="1">baz</foo>'},
             extra='<ros2_control name="arm" type="system"><hardware><plugin>mock</plugin>'
                   '</hardware></ros2_control><safety_stuff/>'),
    "joint-extras":
        urdf(joints={"elbow": ("revolute", "upper_arm", "forearm",
                               '<origin xyz="0.4 0 0" rpy="0.1 0 0"/><axis xyz="0 1 0"/>'
                               '<limit lower="-2" upper="2" effort="10" velocity="1"/>'
                               '<dynamics damping="0.1" friction="0.2"/>'
                               '<safety_controller soft_lower_limit="-1.9" '
                               'soft_upper_limit="1.9" k_position="10" k_velocity="1"/>'
                               '<calibration rising="0.0"/>')}),
}


@pytest.mark.parametrize("case", list(NOISE), ids=list(NOISE))
def test_urdf_noise_loads_with_unchanged_dynamics(case):
    text = NOISE[case]
    model = load_urdf(text)
    clean = urdf()
    oracle = PinocchioOracle(load_pinocchio(clean), model.joint_names)
    rng = np.random.default_rng(3)
    for q in random_configurations(model, rng, 3, urdf=clean):
        qd, qdd = rng.uniform(-1, 1, (2, model.nv))
        assert rel_err(mass_matrix(model, q), oracle.mass_matrix(q)) <= 1e-10
        assert rel_err(inverse_dynamics(model, q, qd, qdd),
                       oracle.inverse_dynamics(q, qd, qdd)) <= 1e-10


def test_parser_warnings_are_silenced_without_touching_sys_stderr(capfd, monkeypatch):
    """urdf-parser-py's warnings stay off stderr, and sys.stderr itself is left
    alone while it parses: the node parses on its builder thread while its
    executor thread uses stderr (a swapped stream once ended the node)."""
    from urdf_parser_py.urdf import URDF

    seen = []
    parse = URDF.from_xml_string

    def spy(text):
        seen.append(sys.stderr)
        return parse(text)

    monkeypatch.setattr(URDF, "from_xml_string", staticmethod(spy))
    stream = sys.stderr
    # an attribute of <joint> urdf-parser-py does not know: it warns through its hook
    model = load_urdf(urdf(extra=f'<link name="tool">{INERTIAL}</link><joint name="tool_mount" '
                                 'type="fixed" spin="fast"><parent link="hand"/><child link="tool"/></joint>'))
    assert model.nv == 3
    assert seen == [stream]
    assert "spin" not in capfd.readouterr().err

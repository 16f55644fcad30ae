"""Property: mutated real URDFs load with finite dynamics or fail with a DynamicsError.

Hypothesis mutates the numbers (extremes, overflowing magnitudes, NaN, text
that is no number) and the structure (elements removed or duplicated,
joints re-parented or re-typed, attributes dropped) of URDFs of
example-robot-data and of the embedded PUMA. Whatever it makes, ``load_urdf``
either raises a DynamicsError or gives a model whose M, g and C are finite at
random states within the joint limits. The number of examples is bounded for
CI (``HOSTILE_URDF_EXAMPLES``, default 500: a few seconds).
"""
import os
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from robots import example_robot_urdf, urdf_text
from robot_dynamics_ros.dynamics import (DynamicsError, coriolis_matrix, gravity_torques,
                                         load_urdf, mass_matrix, puma_urdf)

ROBOTS = {name: urdf_text(example_robot_urdf(name))
          for name in ("panda", "ur5_robot", "solo12", "double_pendulum", "talos_left_arm")}
ROBOTS["puma"] = puma_urdf()
NUMERIC = ("xyz", "rpy", "value", "ixx", "ixy", "ixz", "iyy", "iyz", "izz",
           "lower", "upper", "multiplier", "offset")
JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar", "bogus")
EXTREMES = ("1e155", "-1e155", "1e200", "1e308", "-1e308", "1e400", "5e-324", "0", "-0",
            "1e6", "-1e6", "1.000001e6", "1e9", "1.1e9", "1e15", "1e16", "-1e16",
            "nan", "inf", "-inf", "abc", "", "1 2", "0x10")

numbers = st.one_of(st.sampled_from(EXTREMES),
                    st.floats(allow_nan=True, allow_infinity=True).map(repr),
                    st.floats(-10.0, 10.0).map(repr))


def numeric_attributes(root):
    return [(element, name) for element in root.iter() for name in element.attrib
            if name in NUMERIC]


@st.composite
def mutated_urdfs(draw):
    """(robot name, mutated URDF text, mimic mode)."""
    name = draw(st.sampled_from(sorted(ROBOTS)))
    root = ET.fromstring(ROBOTS[name])
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(("number", "number", "number", "remove", "duplicate",
                                     "reparent", "retype", "drop_attribute")))
        tops = [e for e in root if e.tag in ("link", "joint")]
        joints = [e for e in tops if e.tag == "joint"]
        if kind == "number":
            element, attribute = draw(st.sampled_from(numeric_attributes(root)))
            tokens = element.get(attribute).split() or [""]
            tokens[draw(st.integers(0, len(tokens) - 1))] = draw(numbers)
            element.set(attribute, " ".join(tokens))
        elif kind == "remove":
            root.remove(draw(st.sampled_from(tops)))
        elif kind == "duplicate":
            root.append(ET.fromstring(ET.tostring(draw(st.sampled_from(tops)))))
        elif kind == "reparent" and joints:
            joint = draw(st.sampled_from(joints))
            links = [e.get("name") for e in root if e.tag == "link" and e.get("name")] or ["none"]
            role = draw(st.sampled_from(("parent", "child")))
            target = joint.find(role)
            if target is not None:
                target.set("link", draw(st.sampled_from(links)))
        elif kind == "retype" and joints:
            draw(st.sampled_from(joints)).set("type", draw(st.sampled_from(JOINT_TYPES)))
        elif kind == "drop_attribute":
            element = draw(st.sampled_from([e for e in root.iter() if e.attrib]))
            del element.attrib[draw(st.sampled_from(sorted(element.attrib)))]
    mimic = draw(st.sampled_from(("independent", "reduce")))
    return name, ET.tostring(root, encoding="unicode"), mimic


def random_states(model, rng, count=3):
    """q within the joint limits (within +-3 where a joint has none), qd in [-3, 3].

    A mutation can make a joint at the root ``floating``, which load_urdf
    turns into a floating base: its q starts with a position in [-3, 3] and
    a random unit quaternion (docs/floating_base.md).
    """
    full_lower = np.where(np.isfinite(model.lower), model.lower, -3.0)
    full_upper = np.where(np.isfinite(model.upper), model.upper, 3.0)
    # q's coordinates are the actuated joints; the mimic map takes them to all joints.
    actuated = [model.body_joint_names.index(j) for j in model.joint_names]
    lower, upper = full_lower[actuated], full_upper[actuated]
    for _ in range(count):
        q = lower + (upper - lower) * rng.random(len(lower))
        if model.floating:
            quaternion = rng.standard_normal(4)
            q = np.concatenate((rng.uniform(-3.0, 3.0, 3), quaternion / np.linalg.norm(quaternion), q))
        yield q, rng.uniform(-3.0, 3.0, model.nv)


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("HOSTILE_URDF_EXAMPLES", "500")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=mutated_urdfs(), seed=st.integers(0, 2**32 - 1))
def test_mutated_urdf_loads_finite_or_raises_dynamics_error(case, seed):
    name, text, mimic = case
    try:
        model = load_urdf(text, mimic=mimic)
    except DynamicsError as error:
        assert str(error), f"{name}: a DynamicsError without a message"
        event(f"refused: {type(error).__name__}")
        return
    event("loaded")
    # Any other exception escapes here and fails the test with the mutated text.
    rng = np.random.default_rng(seed)
    for q, qd in random_states(model, rng):
        for what, value in (("M", mass_matrix(model, q)), ("g", gravity_torques(model, q)),
                            ("C", coriolis_matrix(model, q, qd))):
            assert np.all(np.isfinite(value)), (
                f"{name} ({mimic}): {what} not finite at q={q.tolist()}, qd={qd.tolist()}")


MODELS = {name: load_urdf(text) for name, text in ROBOTS.items()}
# Mostly plausible numbers, so that a fair share of payloads is accepted and
# their dynamics checked, with extremes mixed in.
payload_numbers = st.one_of(*[st.floats(0.0, 2.0)] * 6,
                            st.sampled_from([float(x) for x in EXTREMES[:-5] if x]),
                            st.floats(allow_nan=True, allow_infinity=True))


@settings(max_examples=int(os.environ.get("HOSTILE_URDF_EXAMPLES", "500")), deadline=None)
@given(name=st.sampled_from(sorted(MODELS)), data=st.data(),
       values=st.lists(payload_numbers, min_size=10, max_size=10), seed=st.integers(0, 2**32 - 1))
def test_payload_gives_finite_dynamics_or_raises_dynamics_error(name, data, values, seed):
    """The same property for payloads: any numbers on any link."""
    model = MODELS[name]
    link = data.draw(st.sampled_from(model.link_names))
    mass, com, six = values[0], values[1:4], values[4:]
    if data.draw(st.booleans()):  # a sphere's inertia: valid whenever its moment is >= 0
        inertia = np.diag([six[0]] * 3)
    else:
        inertia = np.array([[six[0], six[1], six[2]], [six[1], six[3], six[4]], [six[2], six[4], six[5]]])
    try:
        loaded = model.with_payload(link, mass, com, inertia)
    except DynamicsError:
        event("refused")
        return
    event("accepted")
    for q, qd in random_states(loaded, np.random.default_rng(seed), 2):
        for what, value in (("M", mass_matrix(loaded, q)), ("g", gravity_torques(loaded, q)),
                            ("C", coriolis_matrix(loaded, q, qd))):
            assert np.all(np.isfinite(value)), f"{name}, payload on {link}: {what} not finite"

"""Hostile requests to the model service, the model source and the message conversions.

Each is refused with the module's typed error naming what is wrong
(RequestRefused, DescriptionError or another URDFError, PayloadError,
JointStateRejected), and a refused request changes nothing: not the
parameters, not the served model.
"""
import array
import math
from types import SimpleNamespace

import numpy as np
import pytest

import test_model_service
from urdf_snippets import urdf
from test_model_service import DEFAULTS, LINK, parameters

from robot_dynamics_ros.dynamics import PayloadError, URDFError, puma_urdf
from robot_dynamics_ros.messages.inputs import JointStateMatcher, JointStateRejected
from robot_dynamics_ros.node.model_service import ModelService, RequestRefused
from robot_dynamics_ros.served.model import (DescriptionError, Payload, load_description,
                                             read_description_file)

INERTIA = [0.01, 0.0, 0.0, 0.01, 0.0, 0.01]
service = test_model_service.service  # the fixture: the PUMA served, a Gate as prepare


# ---------------------------------------------------------------------------
# ModelService: numbers beyond a float, and whatever a request's ``make`` raises


def assert_refused_with_nothing_changed(service, request, kind, *needles):
    before = service.live
    with pytest.raises(RequestRefused) as info:
        request()
    for needle in needles:
        assert needle in str(info.value), str(info.value)
    assert dict(service.parameters) == DEFAULTS
    assert service.live is before and not service.update_pending
    assert service.refused[kind] == 1
    assert str(info.value) in service.reports[-1]


@pytest.mark.parametrize("changes, needle", [
    ({"payload.mass": 10**400}, "payload mass"),
    (parameters(LINK, 1.0, [10**400, 0, 0], INERTIA), "payload CoM"),
    (parameters(LINK, 1.0, [0, 0, 0], [10**400, 0, 0, 1, 0, 1]), "payload inertia"),
    (parameters(LINK, 1.0, [0, 0, 0], [1j, 0, 0, 1, 0, 1]), "payload inertia"),
], ids=["mass", "com", "inertia", "complex-inertia"])
def test_parameters_beyond_a_float_are_refused(service, changes, needle):
    assert_refused_with_nothing_changed(
        service, lambda: service.set_parameters({"publish_christoffel": True, **changes}),
        "payload_parameters", needle)


@pytest.mark.parametrize("make, needles", [
    (lambda: Payload.create(LINK, 10**400, [0, 0, 0], INERTIA), ("payload mass",)),
    (lambda: Payload.create(LINK, 1.0, [0, 0, 10**400], INERTIA), ("payload CoM",)),
    (lambda: {}["m"], ("KeyError", "'m'")),
    (lambda: "not a payload", ("AttributeError",)),
], ids=["mass", "com", "key-error", "not-a-payload"])
def test_a_payload_request_that_fails_is_refused(service, make, needles):
    assert_refused_with_nothing_changed(
        service, lambda: service.request_payload(make), "payload_topic", *needles)


# ---------------------------------------------------------------------------
# model_source: Payload.create and load_description


@pytest.mark.parametrize("mass, com, inertia, what", [
    (1.0, np.array([1j, 0, 0]), INERTIA, "payload CoM"),
    (1.0, [0, 0, 0], np.eye(3) * (1 + 1j), "payload inertia"),
    (1.0 + 1j, [0, 0, 0], INERTIA, "payload mass"),
    (10**400, [0, 0, 0], INERTIA, "payload mass"),
    ([1.0, 2.0], [0, 0, 0], INERTIA, "payload mass must be one number"),
    (1.0, ["a", 0, 0], INERTIA, "payload CoM"),
], ids=["complex-com", "complex-inertia", "complex-mass", "int-overflow", "two-masses", "text"])
def test_payload_create_refuses_what_is_no_real_number(mass, com, inertia, what):
    with pytest.raises(PayloadError, match=what):
        Payload.create(LINK, mass, com, inertia)


@pytest.mark.parametrize("text", [puma_urdf().encode(), None, 42],
                         ids=["bytes", "None", "int"])
def test_load_description_takes_text_only(text):
    with pytest.raises(DescriptionError, match=f"must be URDF XML text .*{type(text).__name__}"):
        load_description(text)


@pytest.mark.parametrize("gravity", [None, 9.81, "down", (0.0, 0.0, math.nan), (0.0, 0.0, -9.81j)],
                         ids=["None", "one-number", "text", "nan", "complex"])
def test_load_description_and_the_service_check_gravity(gravity):
    with pytest.raises(URDFError, match="gravity"):
        load_description(urdf(), gravity=gravity)
    # the node's service: a refusal it reports (the node keeps waiting), no crash
    reports = []
    service = ModelService(parameters=DEFAULTS, gravity=gravity, report=reports.append)
    service.start()
    try:
        service.request_description("test", urdf)
        test_model_service.wait_until(lambda: reports)
        assert service.live is None and "gravity" in reports[0], reports
    finally:
        service.stop()


def test_a_byte_order_mark_does_not_make_a_description_a_path(tmp_path):
    served = load_description("\ufeff" + urdf())
    assert served.joints == ("shoulder", "elbow", "wrist")
    path = tmp_path / "bom.urdf"
    path.write_bytes(b"\xef\xbb\xbf" + urdf().encode())
    assert load_description(read_description_file(path)).joints == served.joints


# ---------------------------------------------------------------------------
# JointStateMatcher: arrays of other types, names that are no list of strings

JOINTS = ("a", "b", "c", "d")


def joint_state(name=JOINTS, position=(1.0, 2.0, 3.0, 4.0), velocity=(), effort=()):
    return SimpleNamespace(name=list(name) if isinstance(name, tuple) else name,
                           position=position, velocity=velocity, effort=effort)


@pytest.mark.parametrize("position", [
    array.array("f", [1, 2, 3, 4]), array.array("i", [1, 2, 3, 4]), array.array("d", [1, 2, 3, 4]),
    np.array([1, 2, 3, 4], dtype=np.float32), [1, 2, 3, 4.0],
], ids=["array-f", "array-i", "array-d", "float32", "list"])
def test_positions_of_any_real_type_are_read_as_their_values(position):
    q, qd = JointStateMatcher(JOINTS).match(joint_state(position=position))
    assert q.dtype == np.float64 and q.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert qd.tolist() == [0.0] * 4


def test_a_short_float32_array_is_read_not_reinterpreted():
    q, _ = JointStateMatcher(("a", "b")).match(
        joint_state(name=("a", "b"), position=array.array("f", [1, 2]),
                    velocity=array.array("f", [0.5, -0.5])))
    assert q.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("field, values", [
    ("position", [1j, 2, 3, 4]), ("position", ["1", "2", "3", "4"]), ("velocity", [None] * 4),
    ("velocity", array.array("u", "abcd")),
], ids=["complex", "text", "none", "array-u"])
def test_values_that_are_no_real_numbers_are_rejected(field, values):
    with pytest.raises(JointStateRejected, match=f"{field} is not a sequence of real numbers") as info:
        JointStateMatcher(JOINTS).match(joint_state(**{field: values}))
    assert info.value.kind == "not_numbers"


def test_names_as_a_numpy_array_are_matched_by_name():
    matcher = JointStateMatcher(("c", "a"))
    for _ in range(2):  # the second time from the cache
        q, _ = matcher.match(joint_state(name=np.array(JOINTS)))
        assert q.tolist() == [3.0, 1.0]


@pytest.mark.parametrize("name, needle", [
    ([["a"], "b", "c", "d"], r"joint name 0 is not a string: \['a'\]"),
    (["a", "b", 3, "d"], "joint name 2 is not a string: 3"),
    (["a", "b", "c", np.array([1, 2])], r"joint name 3 is not a string: array\(\[1, 2\]\)"),
    (None, "name is a NoneType"),
], ids=["unhashable", "int", "array-element", "None"])
def test_names_that_are_no_strings_are_rejected(name, needle):
    matcher = JointStateMatcher(JOINTS)
    matcher.match(joint_state())  # a cached name list to compare with
    with pytest.raises(JointStateRejected, match=needle) as info:
        matcher.match(joint_state(name=name))
    assert info.value.kind == "bad_name"

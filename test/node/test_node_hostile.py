"""Hostile requests to the node over DDS: each refused, counted under its reason, no effect.

One node process (panda from the robot_description topic, publish_christoffel
false). Every kind of bad parameter request, ~/payload message and robot
description is sent; after each the node must still serve Pinocchio's
outputs for good joint states, /diagnostics must count it under its reason
at WARN with last_error set, and a refused parameter request must change
nothing at all (parameters, payloads, which topics are published).
"""

import math

import pytest
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.parameter import Parameter
from rclpy.serialization import serialize_message
from std_msgs.msg import String

import robots
import ros_harness as harness
from panda_node import HAND, HAND_PAYLOAD, inertia_msg, panda_node, payload_parameters

GOOD_INERTIA = [0.01, 0.0, 0.0, 0.01, 0.0, 0.01]
RUNTIME = ["publish_christoffel", "payload.link", "payload.mass", "payload.com", "payload.inertia"]


@pytest.fixture(scope="module")
def panda(tmp_path_factory):
    yield from panda_node(tmp_path_factory, "-p", "publish_christoffel:=false")


def counted(panda, key, before, what):
    """The first diagnostics report where ``key`` grew by one: it must be a WARN
    naming the problem in last_error."""
    values = panda.peer.diagnostics(lambda v: int(v.get(key, 0)) == before + 1, timeout=20.0)
    assert values["level"] == int.from_bytes(DiagnosticStatus.WARN, "little"), (what, values)
    assert values["last_error"], what
    return values


def serves_unchanged(panda, christoffel_count):
    """Good joint states still give Pinocchio's outputs of the payload-free panda,
    and no Christoffel symbols (publish_christoffel stayed false)."""
    q, qd = panda.state()
    harness.check_outputs(panda.compute(q, qd), panda.oracle, q, qd)
    assert panda.peer.count("christoffel_symbols") == christoffel_count
    assert panda.node.alive()


def test_refused_atomic_request_has_no_effect(panda):
    """Issue 13 item 6: the flag in a refused request used to take effect."""
    peer = panda.peer
    before_values = peer.get_parameters(RUNTIME)
    christoffel = peer.count("christoffel_symbols")
    refused = int(peer.diagnostics().get("refused.payload_parameters", 0))
    [result] = peer.set_parameters(
        [Parameter("publish_christoffel", value=True)]
        + payload_parameters(HAND, -5.0, [0, 0, 0], GOOD_INERTIA), atomically=True)
    assert not result.successful and "negative mass" in result.reason
    assert peer.get_parameters(RUNTIME) == before_values
    counted(panda, "refused.payload_parameters", refused, "negative mass")
    for _ in range(3):
        serves_unchanged(panda, christoffel)


BAD_PARAMETERS = [
    ("mass 1e200", (HAND, 1e200, [0, 0, 0], GOOD_INERTIA), "mass"),
    ("CoM 1e200", (HAND, 1.0, [1e200, 0, 0], GOOD_INERTIA), "CoM"),
    ("inertia 1e308", (HAND, 1.0, [0, 0, 0], [1e308, 0, 0, 1e308, 0, 1e308]), "inertia"),
    ("NaN mass", (HAND, math.nan, [0, 0, 0], GOOD_INERTIA), "mass"),
    ("unknown link", ("no_such_link", 1.0, [0, 0, 0], GOOD_INERTIA), "no_such_link"),
]


@pytest.mark.parametrize("what, payload, in_reason", BAD_PARAMETERS, ids=[b[0] for b in BAD_PARAMETERS])
def test_bad_payload_parameters(panda, what, payload, in_reason):
    peer = panda.peer
    before_values = peer.get_parameters(RUNTIME)
    refused = int(peer.diagnostics().get("refused.payload_parameters", 0))
    [result] = peer.set_parameters(payload_parameters(*payload), atomically=True)
    assert not result.successful and in_reason in result.reason, (what, result.reason)
    assert peer.get_parameters(RUNTIME) == before_values
    values = counted(panda, "refused.payload_parameters", refused, what)
    assert values["payloads"] == "" and values["update_pending"] == "no", what
    serves_unchanged(panda, peer.count("christoffel_symbols"))


BAD_MESSAGES = [
    ("mass 1e200", (HAND, 1e200, [0, 0, 0], GOOD_INERTIA)),
    ("CoM 1e200", (HAND, 1.0, [0, 1e200, 0], GOOD_INERTIA)),
    ("inertia 1e200", (HAND, 1.0, [0, 0, 0], [1e200, 0, 0, 1e200, 0, 1e200])),
    ("infinite mass", (HAND, math.inf, [0, 0, 0], GOOD_INERTIA)),
    ("negative mass", (HAND, -1.0, [0, 0, 0], GOOD_INERTIA)),
    ("unknown frame", ("no_such_link", 1.0, [0, 0, 0], GOOD_INERTIA)),
    ("empty frame", ("", 1.0, [0, 0, 0], GOOD_INERTIA)),
]


@pytest.mark.parametrize("what, payload", BAD_MESSAGES, ids=[b[0] for b in BAD_MESSAGES])
def test_bad_payload_messages(panda, what, payload):
    peer = panda.peer
    refused = int(peer.diagnostics().get("refused.payload_topic", 0))
    peer.payload_pub.publish(inertia_msg(*payload))
    values = counted(panda, "refused.payload_topic", refused, what)
    assert "payload" in values["last_error"], values["last_error"]
    assert values["payloads"] == "" and values["update_pending"] == "no", what
    serves_unchanged(panda, peer.count("christoffel_symbols"))


def bad_descriptions():
    urdf = robots.urdf_text(robots.example_robot_urdf("panda"))
    huge_origin = urdf.replace('<origin rpy="1.5707963267948966 0 0" xyz="0 -0.316 0"/>',
                               '<origin rpy="1.5707963267948966 0 0" xyz="1e200 -0.316 0"/>', 1)
    assert huge_origin.count("1e200") == 1
    links = "".join(f'<link name="l{i}"/>' for i in range(30_000))
    return [
        ("origin 1e200", huge_origin, "panda_joint3"),
        ("no moving joints", '<robot name="r"><link name="a"/></robot>', "no moving joints"),
        ("no links", '<robot name="r"/>', "no links"),
        ("30,000 links", f'<robot name="big">{links}</robot>', "30000"),
        ("mass 1e308", urdf.replace('<mass value="', '<mass value="1e308', 1), "mass"),
    ]


@pytest.mark.parametrize("what, text, in_error", bad_descriptions(), ids=[d[0] for d in bad_descriptions()])
def test_bad_descriptions(panda, what, text, in_error):
    peer = panda.peer
    before = int(peer.diagnostics()["descriptions_rejected"])
    peer.description_pub.publish(String(data=text))
    values = counted(panda, "descriptions_rejected", before, what)
    assert values["model"] == "panda" and in_error in values["last_error"], (what, values["last_error"])
    assert int(values["refused.description"]) == before + 1
    serves_unchanged(panda, peer.count("christoffel_symbols"))


def test_good_payload_is_still_served_after_all_of_that(panda):
    """Nothing refused above stuck in the node's queue: a good payload is served exactly."""
    peer = panda.peer
    results = peer.set_parameters(payload_parameters(*HAND_PAYLOAD), atomically=True)
    assert results[0].successful, results[0].reason
    peer.diagnostics(lambda v: v["payloads"] == f"{HAND}:1.5kg" and v["update_pending"] == "no", timeout=60)
    q, qd = panda.state()
    harness.check_outputs(panda.compute(q, qd), panda.oracle_with(HAND_PAYLOAD), q, qd)
    peer.set_parameters(payload_parameters(HAND, 0.0, [0, 0, 0], [0] * 6), atomically=True)
    peer.diagnostics(lambda v: v["payloads"] == "" and v["update_pending"] == "no", timeout=60)


def test_bytes_that_are_not_a_joint_state_are_counted_and_nothing_else_changes(panda):
    """The node reads joint states from their bytes (cdr_inputs): a truncated
    message is dropped as malformed, and good ones are served on."""
    peer = panda.peer
    q, qd = panda.state()
    data = serialize_message(harness.joint_state(list(panda.oracle.joint_names), q, qd,
                                                 stamp_=peer.next_stamp()))
    key = "dropped.malformed"
    before = int(peer.diagnostics().get(key, 0))
    christoffel = peer.count("christoffel_symbols")
    peer.joint_pub.publish(data[:len(data) // 2])
    values = counted(panda, key, before, "a truncated joint state")
    assert values["last_error"].startswith("dropped joint_states (malformed)"), values["last_error"]
    serves_unchanged(panda, christoffel)


def test_stamps_a_publisher_skipped_are_no_loss(panda):
    """A 1 kHz stream (by its stamps) with holes the publisher left: nothing
    was lost on the way (the DDS sequence numbers have no hole), so nothing
    is counted as lost, and every joint state sent is served."""
    peer = panda.peer
    names = list(panda.oracle.joint_names)
    q, qd = panda.state()
    # one joint state answered first: a hole an earlier test's burst left in
    # this writer's sequence is counted with it, before ``before`` is read
    start = peer.diagnostics()
    count = peer.count("gravity_torques")
    peer.joint_pub.publish(harness.joint_state(names, q, qd, stamp_=peer.next_stamp()))
    peer.wait_until(lambda: peer.count("gravity_torques") > count, 10.0, "one output")
    before = peer.diagnostics(lambda v: int(v["processed"]) > int(start["processed"]))
    start_ns = 2_000_000_000_000_000_000  # after every stamp the other tests send
    missing = {90, 91, 92, 120, 150, 151}
    sent = [k for k in range(300) if k not in missing]
    for k in sent:
        count = peer.count("gravity_torques")
        t = start_ns + k * 1_000_000
        peer.joint_pub.publish(harness.joint_state(names, q, qd, stamp_=harness.stamp(t // 10**9, t % 10**9)))
        peer.wait_until(lambda: peer.count("gravity_torques") > count, 10.0, "one output")
    values = peer.diagnostics(lambda v: int(v["processed"]) == int(before["processed"]) + len(sent))
    for reason in ("dropped.lost_before_callback", "dropped.stamp_gap"):
        assert int(values.get(reason, 0)) - int(before.get(reason, 0)) == 0, (reason, values)

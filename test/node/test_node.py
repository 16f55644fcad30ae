"""The node in its own process, talked to over DDS, checked against Pinocchio.

One node process serves the whole module (starting one costs seconds on a
2-core machine): panda from a transient-local robot_description published
before the node starts, then payloads, bad input, a broken description and a
switch to a tree robot (solo12) on the same topic. Tests run in file order
and each leaves the node without payloads.
"""

import hashlib
import math
import time

import numpy as np
import pytest
from std_msgs.msg import String

import robots
import ros_harness as harness
from robot_dynamics_ros.dynamics import load_urdf
from robot_dynamics_ros.dynamics.kc import refinement_for

from panda_node import (HAND, HAND_PAYLOAD, PAYLOAD_TIMEOUT, STARTUP_TIMEOUT,  # noqa: F401
                        inertia_msg, payload_parameters)


def wait_served(peer, *payloads):
    """Wait until the node serves exactly ``payloads`` ((link, mass, ...) tuples)."""
    want = sorted(f"{link}:{mass:g}kg" for link, mass, *_ in payloads)

    def serving(values):
        return (values["update_pending"] == "no"
                and sorted(filter(None, values["payloads"].split(";"))) == want)

    return peer.diagnostics(serving, timeout=PAYLOAD_TIMEOUT)


@pytest.fixture
def no_payloads(panda):
    """Leaves the node without payloads, whatever the test did."""
    yield
    panda.peer.set_parameters(payload_parameters(HAND, 0.0, [0, 0, 0], [0] * 6), atomically=True)
    for link in ("panda_link7", HAND):
        panda.peer.payload_pub.publish(inertia_msg(link, 0.0, [0, 0, 0], [0] * 6))
    wait_served(panda.peer)


@pytest.mark.slow
def test_description_published_before_start_is_picked_up(panda):
    values = panda.peer.diagnostics(timeout=5.0)
    assert values["model"] == "panda"
    assert values["dof"] == "9"
    movable = [n for n, j in robots.urdf_joints(panda.path).items() if j["type"] != "fixed"]
    assert sorted(values["joints"].split(",")) == sorted(movable)


def test_diagnostics_come_every_period(panda):
    """The tests' nodes run with ``diagnostic_updater.period`` 0.1 s (the
    default is 1 s): the reports come ten times as often, and no faster."""
    peer = panda.peer
    peer.diagnostics(timeout=5.0)
    start, since = peer.count("diagnostics"), time.monotonic()
    time.sleep(2.0)
    rate = (peer.count("diagnostics") - start) / (time.monotonic() - since)
    assert 5.0 <= rate <= 1.2 / harness.DIAGNOSTIC_PERIOD, rate


def test_outputs_equal_pinocchio(panda):
    worst = {}
    for _ in range(5):
        q, qd = panda.state()
        out = panda.compute(q, qd, christoffel=True)
        for key, err in harness.check_outputs(out, panda.oracle, q, qd).items():
            worst[key] = max(worst.get(key, 0.0), err)
    print(f"panda: worst relative error vs Pinocchio over 5 states: {worst}")
    state = out["state"]
    assert state.header.frame_id == "panda_link0"  # a fixed base: the root link
    np.testing.assert_array_equal(out["position"], q)
    np.testing.assert_array_equal(out["velocity"], qd)


def test_kc_interval_only_tightens_and_diagnostics_show_it(panda, no_payloads):
    """kc_global starts at most at the first guaranteed bound (computed here
    from the same URDF) and only decreases while the background refinement
    runs, kc_global_lower only increases, a payload swap is served with its
    own first bound at once, and /diagnostics reports the interval."""
    first = refinement_for(load_urdf(robots.urdf_text(panda.path))).interval
    fields = harness.BOUNDS_FIELDS
    upper, lower = fields.index("kc_global"), fields.index("kc_global_lower")
    seen = []
    for _ in range(6):
        q, qd = panda.state()
        seen.append(panda.compute(q, qd)["coriolis_bounds"])
        time.sleep(0.2)
    uppers, lowers = [b[upper] for b in seen], [b[lower] for b in seen]
    assert uppers[0] <= first.upper * (1 + 1e-12)
    assert all(b <= a for a, b in zip(uppers, uppers[1:])), uppers
    assert all(b >= a for a, b in zip(lowers, lowers[1:])), lowers
    values = panda.peer.diagnostics(lambda v: v.get("kc_refinement") in ("running", "done", "budget spent"))
    assert float(values["kc_global_lower"]) <= float(values["kc_global"])
    assert float(values["kc_gap"]) >= 1.0
    # A heavy payload: K_c grows, and the first output already has a bound for it.
    payload = (HAND, 5.0, [0.0, 0.0, 0.1], [0.01, 0.0, 0.0, 0.01, 0.0, 0.01])
    panda.peer.set_parameters(payload_parameters(*payload), atomically=True)
    wait_served(panda.peer, payload)
    heavy = load_urdf(robots.urdf_text(panda.path)).with_payload(
        HAND, 5.0, payload[2], np.array([[0.01, 0, 0], [0, 0.01, 0], [0, 0, 0.01]]))
    q, qd = panda.state()
    bounds = panda.compute(q, qd)["coriolis_bounds"]
    assert bounds[fields.index("kc_config")] <= bounds[upper]
    assert bounds[upper] <= refinement_for(heavy).first_bound * (1 + 1e-12)


def test_model_topic_describes_each_revision(panda, no_payloads):
    """~/model: one message per revision (again when its K_c interval
    tightens), the robot as its URDF says (names, limits, description hash),
    the payloads served, and an interval that only tightens within a revision;
    a late subscriber gets the current one (transient local)."""
    peer = panda.peer
    payload = HAND_PAYLOAD
    peer.set_parameters(payload_parameters(*payload), atomically=True)
    wait_served(peer, payload)
    q, qd = panda.state()
    state = panda.compute(q, qd)["state"]
    models = peer.messages("model")
    revisions = [m.revision for m in models]
    assert revisions == sorted(revisions) and state.model_revision == revisions[-1]
    current = models[-1]
    urdf = robots.urdf_text(panda.path)
    joints = robots.urdf_joints(panda.path)
    assert (current.robot_name, current.base, current.nq, current.nv) == ("panda", "fixed", 9, 9)
    assert list(current.names) == list(state.names)
    assert current.description_sha256 == hashlib.sha256(urdf.encode()).hexdigest()
    limited = [name for name in current.names if joints[name]["lower"] is not None]
    assert list(current.limited_joints) == limited
    np.testing.assert_array_equal(current.lower_limits, [joints[name]["lower"] for name in limited])
    np.testing.assert_array_equal(current.upper_limits, [joints[name]["upper"] for name in limited])
    (served,) = current.payloads
    link, mass, com, inertia = payload
    assert (served.header.frame_id, served.inertia.m) == (link, mass)
    assert [served.inertia.com.x, served.inertia.com.y, served.inertia.com.z] == com
    assert [served.inertia.ixx, served.inertia.ixy, served.inertia.ixz, served.inertia.iyy,
            served.inertia.iyz, served.inertia.izz] == inertia
    for revision in set(revisions):
        mine = [m for m in models if m.revision == revision]
        assert all(m.kc_source in ("first_bound", "refining", "refined") for m in mine)
        assert all(b.kc_global <= a.kc_global and b.kc_global_lower >= a.kc_global_lower
                   for a, b in zip(mine, mine[1:]))
    assert current.kc_global >= state.kc_config
    late = harness.Peer("late_peer", outputs=("model",))
    try:
        late.wait_until(lambda: late.count("model") > 0, 10.0, "~/model for a late subscriber")
        assert late.messages("model")[-1].revision == peer.messages("model")[-1].revision
    finally:
        late.close()


def test_names_in_any_order_extra_names_and_empty_velocity(panda):
    q, _ = panda.state()
    names = list(panda.oracle.joint_names)
    order = panda.rng.permutation(len(names))
    # The extra joint carries NaN: values of joints the model does not have are ignored.
    sent_names = [names[i] for i in order] + ["gripper_extra_joint"]
    sent_q = list(q[order]) + [math.nan]
    out = panda.peer.compute(sent_names, sent_q, ())
    harness.check_outputs(out, panda.oracle, q, np.zeros_like(q))
    assert not np.any(out["coriolis_matrix"]), "empty velocity must mean qd = 0"


BAD_JOINT_STATES = [
    # (kind counted by the node, how the message is broken)
    ("missing_joint", lambda n, q, qd: (n[:-1], q[:-1], qd[:-1], [])),
    ("duplicate_name", lambda n, q, qd: (n + [n[0]], q + [q[0]], qd + [qd[0]], [])),
    ("non_finite", lambda n, q, qd: (n, [math.nan] + q[1:], qd, [])),
    ("non_finite", lambda n, q, qd: (n, q, qd[:-1] + [math.inf], [])),
    ("length_mismatch", lambda n, q, qd: (n, q[:-1], qd, [])),
    ("length_mismatch", lambda n, q, qd: (n, q, qd[:3], [])),
    ("length_mismatch", lambda n, q, qd: (n, q, qd, [0.0, 1.0])),
    ("missing_joint", lambda n, q, qd: ([], [], [], [])),
]


def test_bad_joint_states_are_dropped_and_counted(panda):
    peer = panda.peer
    before = peer.diagnostics(timeout=5.0)
    outputs_before = peer.count("state")
    names = list(panda.oracle.joint_names)
    expected_drops = {}
    for kind, corrupt in BAD_JOINT_STATES:
        q, qd = panda.state()
        bad = corrupt(names, list(q), list(qd))
        peer.joint_pub.publish(harness.joint_state(*bad, stamp_=peer.next_stamp()))
        expected_drops[kind] = expected_drops.get(kind, 0) + 1
        # A valid message right after: it must still be served, and correctly.
        q, qd = panda.state()
        harness.check_outputs(panda.compute(q, qd), panda.oracle, q, qd)
    good = len(BAD_JOINT_STATES)

    def counted(values):
        return int(values["processed"]) == int(before["processed"]) + good

    after = peer.diagnostics(counted, timeout=5.0)
    for kind, count in expected_drops.items():
        assert int(after[f"dropped.{kind}"]) - int(before.get(f"dropped.{kind}", 0)) == count, kind
    # refused, by reason; samples an earlier test's burst lost in transport
    # are counted apart (lost_before_callback) when this writer's next one comes
    lost = int(after.get("dropped.lost_before_callback", 0)) - int(before.get("dropped.lost_before_callback", 0))
    assert int(after["dropped"]) - int(before["dropped"]) - lost == len(BAD_JOINT_STATES)
    assert after["last_error"].startswith("dropped joint_states")
    assert peer.count("state") - outputs_before == good, "a dropped message was published"
    assert panda.node.alive()


def test_payload_through_set_parameters(panda, no_payloads):
    q, qd = panda.state()
    results = panda.peer.set_parameters(payload_parameters(*HAND_PAYLOAD))
    assert [r.successful for r in results] == [True] * 4, [r.reason for r in results]
    wait_served(panda.peer, HAND_PAYLOAD)
    with_payload = panda.oracle_with(HAND_PAYLOAD)
    out = panda.compute(q, qd)
    errors = harness.check_outputs(out, with_payload, q, qd)
    print(f"panda with payload on {HAND}: relative error vs Pinocchio {errors}")
    # The payload must be visible, else this test would pass without one.
    assert robots.rel_err(out["mass_matrix"], panda.oracle.mass_matrix(q)) > 1e-3


INVALID_PAYLOADS = [
    # (what is wrong, parameters; the reason must contain the given text)
    ("negative mass", (HAND, -1.0, [0, 0, 0], [0.01, 0, 0, 0.01, 0, 0.01]), ""),
    ("not positive semidefinite", (HAND, 1.0, [0, 0, 0], [-0.01, 0, 0, 0.01, 0, 0.01]), ""),
    ("triangle inequality", (HAND, 1.0, [0, 0, 0], [0.01, 0, 0, 0.01, 0, 0.05]), ""),
    ("non-finite CoM", (HAND, 1.0, [math.nan, 0, 0], [0.01, 0, 0, 0.01, 0, 0.01]), ""),
    ("infinite mass", (HAND, math.inf, [0, 0, 0], [0.01, 0, 0, 0.01, 0, 0.01]), ""),
    ("unknown link", ("no_such_link", 1.0, [0, 0, 0], [0.01, 0, 0, 0.01, 0, 0.01]), "no_such_link"),
    ("5 inertia values", (HAND, 1.0, [0, 0, 0], [0.01, 0, 0, 0.01, 0]), "6"),
    ("2 CoM values", (HAND, 1.0, [0, 0], [0.01, 0, 0, 0.01, 0, 0.01]), "3"),
]


def test_invalid_payload_is_refused_and_nothing_changes(panda, no_payloads):
    peer = panda.peer
    names = ["payload.link", "payload.mass", "payload.com", "payload.inertia"]
    assert all(r.successful for r in peer.set_parameters(payload_parameters(*HAND_PAYLOAD), atomically=True))
    wait_served(peer, HAND_PAYLOAD)
    before = peer.get_parameters(names)
    for what, payload, in_reason in INVALID_PAYLOADS:
        [result] = peer.set_parameters(payload_parameters(*payload), atomically=True)
        assert not result.successful, f"{what} was accepted"
        assert result.reason and in_reason in result.reason, (what, result.reason)
        assert peer.get_parameters(names) == before, what
    values = wait_served(peer, HAND_PAYLOAD)
    assert int(values["payloads_refused"]) >= len(INVALID_PAYLOADS)
    q, qd = panda.state()
    harness.check_outputs(panda.compute(q, qd), panda.oracle_with(HAND_PAYLOAD), q, qd)


def test_payload_topic_one_payload_per_link(panda, no_payloads):
    peer = panda.peer
    assert all(r.successful for r in peer.set_parameters(payload_parameters(*HAND_PAYLOAD), atomically=True))
    on_link7 = ("panda_link7", 0.8, [0.0, 0.03, 0.1], [0.002, 0, 0, 0.002, 0, 0.001])
    peer.payload_pub.publish(inertia_msg(*on_link7))
    wait_served(peer, HAND_PAYLOAD, on_link7)
    q, qd = panda.state()
    harness.check_outputs(panda.compute(q, qd), panda.oracle_with(HAND_PAYLOAD, on_link7), q, qd)

    # A later request for the same link replaces the earlier one, whatever its source.
    replacement = (HAND, 0.3, [0.0, 0.0, 0.02], [0.0005, 0, 0, 0.0005, 0, 0.0005])
    peer.payload_pub.publish(inertia_msg(*replacement))
    wait_served(peer, replacement, on_link7)
    q, qd = panda.state()
    harness.check_outputs(panda.compute(q, qd), panda.oracle_with(replacement, on_link7), q, qd)

    refused_before = int(peer.diagnostics()["payloads_refused"])
    peer.payload_pub.publish(inertia_msg("panda_link7", -2.0, [0, 0, 0], [0.01, 0, 0, 0.01, 0, 0.01]))
    values = peer.diagnostics(lambda v: int(v["payloads_refused"]) == refused_before + 1)
    assert "panda_link7" in values["last_error"]
    wait_served(peer, replacement, on_link7)
    q, qd = panda.state()
    harness.check_outputs(panda.compute(q, qd), panda.oracle_with(replacement, on_link7), q, qd)

    peer.payload_pub.publish(inertia_msg("panda_link7", 0.0, [0, 0, 0], [0] * 6))
    wait_served(peer, replacement)
    q, qd = panda.state()
    harness.check_outputs(panda.compute(q, qd), panda.oracle_with(replacement), q, qd)


def test_fixed_base_ignores_odometry(panda):
    """With base auto and a fixed-base robot, odometry (even malformed) is no
    part of the state: not counted, not refused, and the outputs stay Pinocchio's."""
    from nav_msgs.msg import Odometry

    peer = panda.peer
    publisher = peer.odom_pub
    peer.wait_until(lambda: publisher.get_subscription_count() > 0, 10.0, "the node's odom subscription")
    msg = Odometry(child_frame_id="elsewhere")
    msg.pose.pose.position.x = math.nan
    publisher.publish(msg)
    q, qd = panda.state()
    harness.check_outputs(panda.compute(q, qd), panda.oracle, q, qd)
    values = peer.diagnostics()
    assert values["base"] == "fixed"
    assert values["odometry_received"] == "0" and values["odometry_refused"] == "0"


def broken_descriptions():
    urdf = robots.urdf_text(robots.example_robot_urdf("panda"))
    laughs = ('<?xml version="1.0"?><!DOCTYPE robot [<!ENTITY a "aaaaaaaaaa">'
              '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><robot name="lol">&b;</robot>')
    padding = "<!-- " + "x" * (10 * 1024 * 1024) + " -->"
    return [
        ("truncated XML", urdf[: len(urdf) // 2], None),
        ("joint to a missing link", urdf.replace('child link="panda_link3"', 'child link="nowhere"'), None),
        ("entity declarations", laughs, "entity"),
        ("larger than 10 MB", urdf.replace("</robot>", padding + "</robot>"), "bytes"),
        ("a file path instead of XML", "/etc/hostname", "XML"),
    ]


def test_broken_description_is_rejected_and_old_model_serves(panda):
    peer = panda.peer
    for what, text, in_error in broken_descriptions():
        before = int(peer.diagnostics()["descriptions_rejected"])
        peer.description_pub.publish(String(data=text))
        values = peer.diagnostics(lambda v: int(v["descriptions_rejected"]) == before + 1, timeout=20.0)
        assert values["model"] == "panda", what
        assert "rejected robot description" in values["last_error"], what
        if in_error:
            assert in_error.lower() in values["last_error"].lower(), (what, values["last_error"])
        q, qd = panda.state()
        harness.check_outputs(panda.compute(q, qd), panda.oracle, q, qd)
    assert panda.node.alive()


def test_new_description_switches_to_tree_robot(panda):
    """solo12, fixed base: four 3-joint legs on one trunk, published while running."""
    peer = panda.peer
    path = robots.example_robot_urdf("solo12")
    peer.description_pub.publish(String(data=robots.urdf_text(path)))
    # a tree's bound kernels are compiled here when this file runs alone on a fresh cache
    values = peer.diagnostics(lambda v: v["model"] == "solo", timeout=STARTUP_TIMEOUT)
    assert values["dof"] == "12"
    pin_model = robots.load_pinocchio(path)
    oracle = robots.PinocchioOracle(pin_model, values["joints"].split(","))
    rng = np.random.default_rng(7)
    worst = {}
    for q in robots.random_configurations(oracle, rng, 5, path):
        qd = rng.uniform(-3.0, 3.0, len(q))
        out = peer.compute(oracle.joint_names, q, qd, christoffel=True)
        for key, err in harness.check_outputs(out, oracle, q, qd).items():
            worst[key] = max(worst.get(key, 0.0), err)
    print(f"solo12: worst relative error vs Pinocchio over 5 states: {worst}")


"""A floating-base robot (solo12 with base:=floating) through the node over DDS.

One node process serves the module. Each joint state needs the base state
from ``odom``: the tests publish an odometry message, wait until the node's
diagnostics count it (odometry and joint states travel on two topics, whose
order DDS does not keep), then the joint state with the same stamp. The
oracle is the library itself on the same q and v: the node only plumbs
messages into it.
"""

import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from nav_msgs.msg import Odometry
from rclpy.serialization import serialize_message

import robots
import ros_harness as harness
from robot_dynamics_ros.dynamics import BOUNDS_FIELDS, all_terms, load_urdf

STARTUP_TIMEOUT = 180.0  # first run on a machine compiles the numba kernels
TIMEOUT = 0.1  # base_state_timeout, s
ROOT = "base_link"


def odometry(stamp, position, velocity, child=ROOT) -> Odometry:
    return harness.odometry(stamp, position, velocity, child)


class Solo:
    def __init__(self, peer, node, path):
        self.peer = peer
        self.node = node
        self.path = path
        self.model = load_urdf(path, base="floating")
        self.joints = list(self.model.joint_names)
        self.rng = np.random.default_rng(11)
        self.odometry_sent = 0

    def base_state(self):
        """A random base pose (unit quaternion) and twist."""
        quaternion = self.rng.normal(size=4)
        position = np.concatenate([self.rng.uniform(-2.0, 2.0, 3), quaternion / np.linalg.norm(quaternion)])
        return position, self.rng.uniform(-1.5, 1.5, 6)

    def joint_state(self):
        ranges = robots.joint_ranges(self.model, self.path)
        q = ranges[:, 0] + (ranges[:, 1] - ranges[:, 0]) * self.rng.random(len(ranges))
        return q, self.rng.uniform(-3.0, 3.0, len(q))

    def send_odometry(self, msg):
        """Publish and wait until the node has received it (its diagnostics count it)."""
        self.odometry_sent += 1
        self.peer.odom_pub.publish(msg)
        return self.peer.diagnostics(
            lambda v: int(v.get("odometry_received", 0)) >= self.odometry_sent, timeout=10.0)


@pytest.fixture(scope="module")
def solo(tmp_path_factory):
    harness.isolate_ros_environment()
    path = robots.example_robot_urdf("solo12")
    # the array topics too: their labels name the base coordinates
    peer = harness.Peer(outputs=("state", "model", "gravity_torques", "mass_matrix", "christoffel_symbols"))
    node = harness.NodeProcess("-p", f"urdf_file:={path}", "-p", "base:=floating",
                               "-p", f"base_state_timeout:={TIMEOUT}", "-p", "publish_christoffel:=true",
                               "-p", "publish_arrays:=true",
                               log_path=tmp_path_factory.mktemp("node") / "node.log")
    try:
        peer.wait_for_model("solo", STARTUP_TIMEOUT, node)
        yield Solo(peer, node, path)
    finally:
        node.stop()
        peer.close()


def dropped_after(solo, before, kind):
    """Wait until the node counted one more joint state dropped as ``kind``."""
    key = f"dropped.{kind}"
    return solo.peer.diagnostics(lambda v: int(v.get(key, 0)) == int(before.get(key, 0)) + 1)


def test_joint_state_without_any_odometry_is_dropped(solo):
    """First in the file: the node has received no odometry yet."""
    peer = solo.peer
    before = peer.diagnostics()
    assert before["base"] == f"floating, root link {ROOT}"
    assert before["dof"] == str(6 + len(solo.joints))
    outputs = peer.count("state")
    q, qd = solo.joint_state()
    peer.joint_pub.publish(harness.joint_state(solo.joints, q, qd, stamp_=peer.next_stamp()))
    after = dropped_after(solo, before, "no_base_state")
    assert "no usable odometry" in after["last_error"]
    assert peer.count("state") == outputs


def upcoming_stamp_plus(peer, offset_ns: int):
    """The stamp of the next joint state ``peer`` sends, plus ``offset_ns`` (signed)."""
    t = peer.upcoming_stamp().sec * 10**9 + offset_ns
    return harness.stamp(t // 10**9, t % 10**9)


def compute_floating(solo, base_position, base_velocity, q, qd, odometry_offset_ns=0):
    """Odometry then the joint state it pairs with; the node's outputs for them."""
    stamp = upcoming_stamp_plus(solo.peer, odometry_offset_ns)
    solo.send_odometry(odometry(stamp, base_position, base_velocity))
    return solo.peer.compute(solo.joints, q, qd, christoffel=True)


def test_outputs_equal_the_librarys(solo):
    names = list(solo.model.velocity_names)
    assert names[:6] == ["base_vx", "base_vy", "base_vz", "base_wx", "base_wy", "base_wz"]
    for k in range(4):
        position, velocity = solo.base_state()
        q, qd = solo.joint_state()
        # Odometry stamped up to the timeout before or after the joint state pairs with it.
        offset = [0, 50_000_000, -90_000_000, 0][k]
        out = compute_floating(solo, position, velocity, q, qd, offset)
        want = all_terms(solo.model, np.concatenate([position, q]), np.concatenate([velocity, qd]))
        # K_c's interval is the node's, refined in its background: it need
        # only overlap this process's (both hold K_c); the rest is equal.
        kc = [BOUNDS_FIELDS.index("kc_global"), BOUNDS_FIELDS.index("kc_global_lower")]
        assert out["coriolis_bounds"][kc[1]] <= want.coriolis_bounds[kc[0]]
        assert want.coriolis_bounds[kc[1]] <= out["coriolis_bounds"][kc[0]]
        out["coriolis_bounds"] = np.delete(out["coriolis_bounds"], kc)
        want = want._replace(coriolis_bounds=np.delete(want.coriolis_bounds, kc))
        for key in ("mass_matrix", "coriolis_matrix", "christoffel_symbols", "gravity_torques",
                    "coriolis_bounds"):
            np.testing.assert_allclose(out[key], getattr(want, key), rtol=1e-12, atol=1e-12,
                                       err_msg=key)
        assert out["joints"] == names, "DynamicsState names every coordinate of v"
        state = out["state"]
        assert state.header.frame_id == "odom", "a floating base's state is in the odometry's frame"
        np.testing.assert_array_equal(out["position"], np.concatenate([position, q]))
        np.testing.assert_array_equal(out["velocity"], np.concatenate([velocity, qd]))
    # publish_arrays: the arrays of the last joint state (calls are sequential)
    # hold the same values, labelled with the coordinates
    n = len(names)
    labels = ",".join(names)
    peer = solo.peer
    peer.wait_until(lambda: peer.count("mass_matrix") >= 4 and peer.count("christoffel_symbols") >= 4,
                    10.0, "the array topics")
    mass, gamma = peer.messages("mass_matrix")[-1], peer.messages("christoffel_symbols")[-1]
    assert [(d.label, d.size, d.stride) for d in mass.layout.dim] == [
        (f"row:{labels}", n, n * n), (f"column:{labels}", n, n)]
    assert [d.label for d in gamma.layout.dim] == [f"{axis}:{labels}" for axis in "ijk"]
    np.testing.assert_array_equal(harness.from_multiarray(mass), out["mass_matrix"])
    np.testing.assert_array_equal(harness.from_multiarray(gamma), out["christoffel_symbols"])
    # The base block of M is the composite inertia of the whole robot: its mass on the diagonal.
    mass = sum(float(m.get("value")) for m in ET.parse(solo.path).getroot().iter("mass"))
    np.testing.assert_allclose(np.diag(out["mass_matrix"])[:3], mass, rtol=1e-12)


BAD_ODOMETRY = [
    # (reason counted, how the odometry is broken)
    ("non_finite", lambda p, v: (np.r_[math.nan, p[1:]], v, ROOT)),
    ("non_finite", lambda p, v: (p, np.r_[v[:5], math.inf], ROOT)),
    ("quaternion", lambda p, v: (np.r_[p[:3], 2 * p[3:]], v, ROOT)),
    ("quaternion", lambda p, v: (np.r_[p[:3], 0.0, 0.0, 0.0, 0.0], v, ROOT)),
    ("child_frame", lambda p, v: (p, v, "FL_FOOT")),
    ("child_frame", lambda p, v: (p, v, "")),
    ("malformed", None),  # bytes that are not an Odometry: a truncated one
]


def test_bad_odometry_is_refused_and_its_joint_state_dropped(solo):
    """The joint state stamped as a refused odometry has only older ones (1 s
    before, from the test before): it is dropped as stale, never computed
    from the bad one."""
    peer = solo.peer
    outputs = peer.count("state")
    for kind, corrupt in BAD_ODOMETRY:
        before = peer.diagnostics()
        stamp = peer.upcoming_stamp()
        if corrupt is None:
            msg = serialize_message(odometry(stamp, *solo.base_state(), ROOT))[:60]
        else:
            msg = odometry(stamp, *corrupt(*solo.base_state()))
        values = solo.send_odometry(msg)
        key = f"odometry_refused.{kind}"
        assert int(values.get(key, 0)) == int(before.get(key, 0)) + 1, kind
        assert int(values["odometry_refused"]) == int(before["odometry_refused"]) + 1
        assert values["last_error"].startswith(f"dropped odometry ({kind})"), values["last_error"]
        q, qd = solo.joint_state()
        peer.joint_pub.publish(harness.joint_state(solo.joints, q, qd, stamp_=peer.next_stamp()))
        dropped_after(solo, before, "stale_base_state")
        # Good odometry again: the node serves on.
        position, velocity = solo.base_state()
        q, qd = solo.joint_state()
        compute_floating(solo, position, velocity, q, qd)
        outputs += 1
    assert peer.count("state") == outputs, "a joint state without a base state was published"
    assert solo.node.alive()


@pytest.mark.parametrize("offset_s", [-0.2, 0.2])
def test_odometry_beyond_the_timeout_is_not_paired(solo, offset_s):
    """Odometry stamped 0.2 s before (or after) the joint state, the timeout
    being 0.1 s: the joint state has nothing within reach (the odometry of the
    test before is 1 s older) and is dropped as stale."""
    peer = solo.peer
    before = peer.diagnostics()
    outputs = peer.count("state")
    solo.send_odometry(odometry(upcoming_stamp_plus(peer, round(offset_s * 1e9)), *solo.base_state()))
    q, qd = solo.joint_state()
    peer.joint_pub.publish(harness.joint_state(solo.joints, q, qd, stamp_=peer.next_stamp()))
    after = dropped_after(solo, before, "stale_base_state")
    assert "base_state_timeout 0.1 s" in after["last_error"]
    assert peer.count("state") == outputs


def test_joint_state_older_than_every_odometry_is_dropped(solo):
    """Stamped 0.5 s, before every odometry received (from 1 s on): another clock."""
    peer = solo.peer
    before = peer.diagnostics()
    outputs = peer.count("state")
    q, qd = solo.joint_state()
    peer.joint_pub.publish(harness.joint_state(solo.joints, q, qd, stamp_=harness.stamp(0, 500_000_000)))
    after = dropped_after(solo, before, "future_base_state")
    assert "same clock" in after["last_error"]
    assert peer.count("state") == outputs

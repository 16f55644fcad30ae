"""Offline replay of a floating-base robot (solo12): joint states and odometry in one bag.

The input is a real rosbag2 bag written with rosbags: 4 s of solo12 joint
states at 200 Hz and odometry at 100 Hz, stamped 3 ms apart and recorded in
bag-time order, with a hole in the odometry (its joint states have no base
state within the timeout), a joint state before the first odometry and a few
broken odometry messages. The expected pairing is worked out here by brute
force from the rule (the newest odometry received before the joint state and
stamped within the timeout of it), and the outputs are checked against the
library on the paired q and v.
"""

import math
from collections import Counter

import numpy as np
import pytest
from rosbags.rosbag2 import Writer

import robots
from robot_dynamics_ros.dynamics import all_terms, load_urdf
from robot_dynamics_ros.replay.cli import parse_args
from robot_dynamics_ros.replay.run import replay as run_replay
from bag_files import STORAGES, TYPESTORE, decode_outputs, read_bag

ROOT = "base_link"
SEC = 10**9
STAMP0 = 1_700_000_000 * SEC
JOINT_PERIOD, ODOM_PERIOD = 5_000_000, 10_000_000  # ns: 200 Hz, 100 Hz
DURATION = 4 * SEC
HOLE = (STAMP0 + 2 * SEC, STAMP0 + 2 * SEC + 300_000_000)  # no odometry stamped in here
BROKEN = {40: "non_finite", 41: "quaternion", 42: "child_frame"}  # odometry index -> reason
TIMEOUT = 0.02  # s


class Recording:
    """The solo12 run: joint and base states, their stamps and bag times."""

    def __init__(self, seed=3):
        rng = np.random.default_rng(seed)
        self.path = robots.example_robot_urdf("solo12")
        self.model = load_urdf(self.path, base="floating")
        self.joints = list(self.model.joint_names)
        n = len(self.joints)
        # Joint states from 10 ms before the first odometry (none to pair with).
        self.joint_stamps = STAMP0 - 10_000_000 + np.arange(0, DURATION, JOINT_PERIOD)
        k = len(self.joint_stamps)
        self.q = rng.uniform(-1.0, 1.0, (k, n))
        self.qd = rng.uniform(-3.0, 3.0, (k, n))
        stamps = STAMP0 + np.arange(0, DURATION, ODOM_PERIOD)
        self.odom_stamps = stamps[(stamps < HOLE[0]) | (stamps >= HOLE[1])]
        m = len(self.odom_stamps)
        quaternions = rng.normal(size=(m, 4))
        self.base_position = np.column_stack([rng.uniform(-2.0, 2.0, (m, 3)),
                                              quaternions / np.linalg.norm(quaternions, axis=1, keepdims=True)])
        self.base_velocity = rng.uniform(-1.5, 1.5, (m, 6))
        # Each message recorded 3 ms after its stamp.
        self.joint_times = self.joint_stamps + 3_000_000
        self.odom_times = self.odom_stamps + 3_000_000

    def expected_pairing(self, timeout_ns: int):
        """Per joint state, the index of its odometry or -1, and the reasons of
        the drops counted: the rule by brute force."""
        valid = np.array([i not in BROKEN for i in range(len(self.odom_stamps))])
        pairing, drops = [], Counter()
        for stamp, time in zip(self.joint_stamps, self.joint_times):
            received = valid & (self.odom_times <= time)
            candidates = np.flatnonzero(received & (np.abs(self.odom_stamps - stamp) <= timeout_ns))
            pairing.append(candidates[np.argmax(self.odom_stamps[candidates])] if len(candidates) else -1)
            if not len(candidates):
                drops["no_base_state" if not received.any() else "stale_base_state"
                      if (self.odom_stamps[received] <= stamp + timeout_ns).any() else "future_base_state"] += 1
        return np.array(pairing), drops

    def write(self, path, storage):
        types = TYPESTORE.types
        Time, Header = types["builtin_interfaces/msg/Time"], types["std_msgs/msg/Header"]
        JointState, Odometry = types["sensor_msgs/msg/JointState"], types["nav_msgs/msg/Odometry"]
        Pose, Point, Quaternion = (types["geometry_msgs/msg/" + t] for t in ("Pose", "Point", "Quaternion"))
        Twist, Vector3 = types["geometry_msgs/msg/Twist"], types["geometry_msgs/msg/Vector3"]
        PoseCov = types["geometry_msgs/msg/PoseWithCovariance"]
        TwistCov = types["geometry_msgs/msg/TwistWithCovariance"]

        def header(ns, frame=""):
            return Header(stamp=Time(sec=int(ns) // SEC, nanosec=int(ns) % SEC), frame_id=frame)

        messages = []  # (bag time, topic, message)
        for i, stamp in enumerate(self.joint_stamps):
            messages.append((self.joint_times[i], "/joint_states", JointState(
                header=header(stamp), name=self.joints, position=self.q[i], velocity=self.qd[i],
                effort=np.zeros(0))))
        for i, stamp in enumerate(self.odom_stamps):
            p, v = self.base_position[i].copy(), self.base_velocity[i].copy()
            child = ROOT
            if BROKEN.get(i) == "non_finite":
                v[4] = math.nan
            elif BROKEN.get(i) == "quaternion":
                p[3:] *= 1.5
            elif BROKEN.get(i) == "child_frame":
                child = "FR_FOOT"
            messages.append((self.odom_times[i], "/odom", Odometry(
                header=header(stamp, "odom"), child_frame_id=child,
                pose=PoseCov(pose=Pose(position=Point(x=p[0], y=p[1], z=p[2]),
                                       orientation=Quaternion(x=p[3], y=p[4], z=p[5], w=p[6])),
                             covariance=np.zeros(36)),
                twist=TwistCov(twist=Twist(linear=Vector3(x=v[0], y=v[1], z=v[2]),
                                           angular=Vector3(x=v[3], y=v[4], z=v[5])),
                               covariance=np.zeros(36)))))
        # Bag-time order; at equal times the odometry first, as the rule reads "received before".
        messages.sort(key=lambda m: (m[0], m[1] != "/odom"))
        with Writer(path, version=8, storage_plugin=STORAGES[storage]) as writer:
            connections = {topic: writer.add_connection(topic, msgtype, typestore=TYPESTORE)
                           for topic, msgtype in (("/joint_states", "sensor_msgs/msg/JointState"),
                                                  ("/odom", "nav_msgs/msg/Odometry"))}
            for time, topic, msg in messages:
                writer.write(connections[topic], int(time),
                             TYPESTORE.serialize_cdr(msg, connections[topic].msgtype))


@pytest.fixture(scope="module")
def recording():
    return Recording()


@pytest.mark.parametrize("storage", list(STORAGES))
def test_floating_replay_equals_the_library(recording, storage, tmp_path):
    source, target = tmp_path / "solo", tmp_path / "solo_out"
    recording.write(source, storage)
    summary = run_replay(parse_args([str(source), str(target), "--urdf", recording.path,
                                     "--base", "floating", "--base-state-timeout", str(TIMEOUT),
                                     "--christoffel", "--quiet", "--kc-time-budget", "0"]))
    pairing, drops = recording.expected_pairing(round(TIMEOUT * 1e9))
    paired = np.flatnonzero(pairing >= 0)
    # The bag has joint states to drop for want of odometry, else this would test nothing.
    assert drops["no_base_state"] >= 1 and drops["stale_base_state"] > 20
    assert summary["processed"] == len(paired)
    assert summary["dropped"] == {
        **drops, "odometry_non_finite": 1, "odometry_quaternion": 1, "odometry_child_frame": 1}

    out = decode_outputs(read_bag(target))
    names = list(recording.model.velocity_names)
    assert out["joints"] == {tuple(names)}
    np.testing.assert_array_equal(out["stamps"], recording.joint_stamps[paired])
    np.testing.assert_array_equal(out["state_times"], recording.joint_times[paired])
    odom = pairing[paired]
    q = np.column_stack([recording.base_position[odom], recording.q[paired]])
    v = np.column_stack([recording.base_velocity[odom], recording.qd[paired]])
    np.testing.assert_array_equal(out["position"], q)
    np.testing.assert_array_equal(out["velocity"], v)
    assert out["frames"] == {"odom"}  # the odometry's frame, which the recording writes
    want = all_terms(recording.model, q, v)
    for key in ("mass_matrix", "coriolis_matrix", "christoffel_symbols", "gravity_torques",
                "coriolis_bounds"):
        expected = getattr(want, key).reshape(len(paired), -1)
        np.testing.assert_allclose(out[key], expected, rtol=1e-12, atol=1e-12, err_msg=key)


def test_floating_model_without_odometry_in_the_bag_is_an_error(recording, tmp_path, capsys):
    from robot_dynamics_ros.replay.cli import main

    source = tmp_path / "solo"
    recording.write(source, "sqlite3")
    code = main([str(source), str(tmp_path / "out"), "--urdf", recording.path, "--base", "floating",
                 "--odom-topic", "/base_odometry", "--quiet"])
    assert code == 1
    error = capsys.readouterr().err
    assert "floating base" in error and "/base_odometry" in error and "/odom (nav_msgs/msg/Odometry)" in error
    assert not (tmp_path / "out").exists()

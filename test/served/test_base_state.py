"""The odometry checks and the pairing rule of served/base_state.py, without ROS.

Messages are built as plain objects with the fields of nav_msgs/Odometry and
read by ``odometry_reading``, as the replay reads rosbags' messages (the node
reads the same fields from the bytes: test_cdr_inputs.py).
"""

import math
from types import SimpleNamespace

import numpy as np
import pytest

from robot_dynamics_ros.served.base_state import (
    BUFFER_DEPTH,
    BaseStatePairing,
    BaseStateRejected,
    base_state_from_odometry,
    base_frames,
    full_state,
    matrix_quaternion,
    odometry_reading,
    quaternion_matrix,
)

ROOT = "base_link"
FRAMES = base_frames(ROOT, {ROOT: np.eye(4)}, np.eye(4))  # the root link alone, placed at the origin
SEC = 1_000_000_000


def time_(ns: int):
    return SimpleNamespace(sec=ns // SEC, nanosec=ns % SEC)


def vector(x, y, z):
    return SimpleNamespace(x=x, y=y, z=z)


def odometry(t_ns=0, position=(1.0, 2.0, 0.3), quaternion=(0.0, 0.0, 0.6, 0.8),
             linear=(0.1, -0.2, 0.3), angular=(0.4, 0.5, -0.6), child=ROOT):
    x, y, z, w = quaternion
    return odometry_reading(SimpleNamespace(
        header=SimpleNamespace(stamp=time_(t_ns), frame_id="odom"), child_frame_id=child,
        pose=SimpleNamespace(pose=SimpleNamespace(
            position=vector(*position), orientation=SimpleNamespace(x=x, y=y, z=z, w=w))),
        twist=SimpleNamespace(twist=SimpleNamespace(linear=vector(*linear), angular=vector(*angular)))))


def test_odometry_of_the_root_link_is_the_base_state():
    state = base_state_from_odometry(odometry(5 * SEC + 7), FRAMES)
    assert state.stamp_ns == 5 * SEC + 7
    # Pinocchio's free-flyer order: position, quaternion (x, y, z, w); linear, angular.
    np.testing.assert_array_equal(state.position, [1.0, 2.0, 0.3, 0.0, 0.0, 0.6, 0.8])
    np.testing.assert_array_equal(state.velocity, [0.1, -0.2, 0.3, 0.4, 0.5, -0.6])
    q, v = full_state(state.position, state.velocity, np.array([0.5, -0.5]), np.array([1.5, 2.5]))
    np.testing.assert_array_equal(q, [1.0, 2.0, 0.3, 0.0, 0.0, 0.6, 0.8, 0.5, -0.5])
    np.testing.assert_array_equal(v, [0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 1.5, 2.5])


@pytest.mark.parametrize("kind, msg, in_reason", [
    ("child_frame", odometry(child="base_footprint"), "'base_footprint'"),
    ("child_frame", odometry(child=""), "empty"),
    ("non_finite", odometry(position=(math.nan, 0.0, 0.0)), "position.x"),
    ("non_finite", odometry(quaternion=(0.0, 0.0, 0.0, math.inf)), "orientation.w"),
    ("non_finite", odometry(linear=(0.0, -math.inf, 0.0)), "linear.y"),
    ("non_finite", odometry(angular=(0.0, 0.0, math.nan)), "angular.z"),
    ("quaternion", odometry(quaternion=(0.0, 0.0, 0.0, 0.0)), "norm 0"),
    ("quaternion", odometry(quaternion=(0.0, 0.0, 0.6, 0.81)), "unit"),
    ("quaternion", odometry(quaternion=(0.0, 0.0, 1.0, 1.0)), "1.41421"),
])
def test_malformed_odometry_is_refused_with_its_reason(kind, msg, in_reason):
    with pytest.raises(BaseStateRejected) as error:
        base_state_from_odometry(msg, FRAMES)
    assert error.value.kind == kind
    assert in_reason in str(error.value)
    if kind == "child_frame":
        assert repr(ROOT) in str(error.value), "the reason must say which frame is wanted"


def test_quaternion_within_the_tolerance_is_kept_as_sent():
    """The dynamics normalize q's quaternion; a filter's rounding is no error."""
    quaternion = (0.0, 0.0, 0.6, 0.8 * (1 + 1e-5))
    state = base_state_from_odometry(odometry(quaternion=quaternion), FRAMES)
    np.testing.assert_array_equal(state.position[3:], quaternion)


def pairing_with(timeout, *stamps_ns):
    pairing = BaseStatePairing(timeout)
    for i, t in enumerate(stamps_ns):
        pairing.add(odometry(t, position=(float(i), 0.0, 0.0)), FRAMES)
    return pairing


def paired_index(pairing, t_ns):
    """Which odometry (by its position.x, the order it was added in) pairs with t_ns."""
    return int(pairing.pair(t_ns, ROOT).position[0])


def rejection(pairing, t_ns):
    with pytest.raises(BaseStateRejected) as error:
        pairing.pair(t_ns, ROOT)
    return error.value.kind


def test_newest_odometry_within_the_timeout_pairs():
    ms = 1_000_000
    pairing = pairing_with(0.1, 100 * SEC, 100 * SEC + 10 * ms, 100 * SEC + 20 * ms)
    assert paired_index(pairing, 100 * SEC + 20 * ms) == 2
    assert paired_index(pairing, 100 * SEC + 15 * ms) == 2  # future, within the timeout
    assert paired_index(pairing, 100 * SEC - 80 * ms) == 2  # 100 ms ahead: still within
    assert paired_index(pairing, 100 * SEC + 120 * ms) == 2  # exactly the timeout old
    assert rejection(pairing, 100 * SEC + 120 * ms + 1) == "stale_base_state"
    # Only the first is within 100 ms after it: the later ones are too far ahead.
    assert paired_index(pairing, 100 * SEC - 95 * ms) == 0
    assert rejection(pairing, 100 * SEC - 100 * ms - 1) == "future_base_state"


def test_newest_by_stamp_whatever_the_arrival_order():
    pairing = pairing_with(0.5, 3 * SEC, 1 * SEC, 2 * SEC)
    assert paired_index(pairing, 3 * SEC) == 0
    assert paired_index(pairing, 2 * SEC) == 2
    assert paired_index(pairing, 1 * SEC + SEC // 4) == 1


def test_no_odometry_and_zero_timeout():
    pairing = BaseStatePairing(0.0)
    assert rejection(pairing, SEC) == "no_base_state"
    pairing.add(odometry(SEC, position=(0.0, 0.0, 0.0)), FRAMES)
    assert paired_index(pairing, SEC) == 0  # timeout 0: equal stamps only
    assert rejection(pairing, SEC + 1) == "stale_base_state"
    assert rejection(pairing, SEC - 1) == "future_base_state"


def test_refused_odometry_is_counted_and_never_paired():
    pairing = pairing_with(0.1, SEC)
    for msg in (odometry(2 * SEC, child="odom"), odometry(2 * SEC, position=(math.nan, 0, 0)),
                odometry(2 * SEC, quaternion=(1, 1, 0, 0)), odometry(2 * SEC, child="")):
        with pytest.raises(BaseStateRejected):
            pairing.add(msg, FRAMES)
    assert rejection(pairing, 2 * SEC) == "stale_base_state"
    assert pairing.counts() == {
        "odometry_received": "5", "odometry_refused": "4", "odometry_refused.child_frame": "2",
        "odometry_refused.non_finite": "1", "odometry_refused.quaternion": "1"}


def test_a_new_root_link_forgets_the_old_robots_odometry():
    pairing = pairing_with(0.1, SEC)
    assert paired_index(pairing, SEC) == 0
    with pytest.raises(BaseStateRejected) as error:
        pairing.pair(SEC, "trunk")
    assert error.value.kind == "no_base_state"


def test_buffer_is_bounded_and_keeps_the_newest():
    pairing = pairing_with(1e-3, *(k * SEC for k in range(BUFFER_DEPTH + 10)))
    assert paired_index(pairing, (BUFFER_DEPTH + 9) * SEC) == BUFFER_DEPTH + 9
    assert paired_index(pairing, 10 * SEC) == 10
    assert rejection(pairing, 9 * SEC) == "future_base_state"  # forgotten


@pytest.mark.parametrize("timeout", [-0.1, math.nan, math.inf])
def test_bad_timeout_is_refused(timeout):
    with pytest.raises(ValueError, match="base_state_timeout"):
        BaseStatePairing(timeout)


def test_odometry_of_a_link_fixed_to_the_root_link_is_transformed_exactly():
    """The odometry an IMU fixed to the root link would report (made here
    with scipy's rotations and the rigid-body velocity rule) gives back the
    root link's pose and twist."""
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(5)
    for _ in range(20):
        # The IMU's pose in the root link's frame, and the root link's state.
        offset, origin = Rotation.random(random_state=rng), rng.uniform(-0.3, 0.3, 3)
        root, root_position = Rotation.random(random_state=rng), rng.uniform(-2, 2, 3)
        linear, angular = rng.uniform(-1, 1, 3), rng.uniform(-2, 2, 3)
        imu = root * offset
        imu_position = root_position + root.apply(origin)
        # Velocity of the IMU's origin: the root's plus w x (its arm), both in root axes.
        imu_linear = offset.inv().apply(linear + np.cross(angular, origin))
        imu_angular = offset.inv().apply(angular)
        pose = np.eye(4)
        pose[:3, :3], pose[:3, 3] = offset.as_matrix(), origin
        frames = base_frames(ROOT, {ROOT: np.eye(4), "imu_link": pose}, np.eye(4))
        assert set(frames.rigid) == {"imu_link"} and frames.placement is None
        state = base_state_from_odometry(odometry(
            position=imu_position, quaternion=imu.as_quat(), linear=imu_linear, angular=imu_angular,
            child="imu_link"), frames)
        np.testing.assert_allclose(state.position[:3], root_position, atol=1e-12)
        assert abs(np.linalg.norm(state.position[3:]) - 1) < 1e-12
        np.testing.assert_allclose(Rotation.from_quat(state.position[3:]).as_matrix(),
                                   root.as_matrix(), atol=1e-12)
        np.testing.assert_allclose(state.velocity, np.concatenate([linear, angular]), atol=1e-12)
    # A link the frames do not list (beyond a moving joint) is still refused.
    with pytest.raises(BaseStateRejected, match="or a link fixed to it"):
        base_state_from_odometry(odometry(child="FL_FOOT"), frames)


def test_a_placed_floating_joint_takes_the_placement_out_of_q():
    """A URDF floating joint with an origin P: the root link's pose in the world
    is P times q's base pose, so q's is P^-1 times the odometry's; the twist,
    in the root link's frame, stays as it is."""
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(8)
    placement_rotation, placement_origin = Rotation.random(random_state=rng), rng.uniform(-1, 1, 3)
    placement = np.eye(4)
    placement[:3, :3], placement[:3, 3] = placement_rotation.as_matrix(), placement_origin
    frames = base_frames(ROOT, {}, placement)
    q_rotation, q_origin = Rotation.random(random_state=rng), rng.uniform(-2, 2, 3)
    world_rotation = placement_rotation * q_rotation
    world_origin = placement_origin + placement_rotation.apply(q_origin)
    state = base_state_from_odometry(odometry(position=world_origin, quaternion=world_rotation.as_quat()),
                                     frames)
    np.testing.assert_allclose(state.position[:3], q_origin, atol=1e-12)
    np.testing.assert_allclose(Rotation.from_quat(state.position[3:]).as_matrix(), q_rotation.as_matrix(),
                               atol=1e-12)
    np.testing.assert_array_equal(state.velocity, [0.1, -0.2, 0.3, 0.4, 0.5, -0.6])


@pytest.mark.parametrize("seed", range(8))
def test_rotation_matrix_to_quaternion(seed):
    from scipy.spatial.transform import Rotation

    rotation = Rotation.random(random_state=seed)
    # Also the rotations by pi, where the trace is -1 and w is 0.
    for r in (rotation, Rotation.from_rotvec(np.pi * rotation.apply([1.0, 0.0, 0.0]))):
        q = matrix_quaternion(r.as_matrix())
        np.testing.assert_allclose(Rotation.from_quat(q).as_matrix(), r.as_matrix(), atol=1e-14)
        np.testing.assert_allclose(quaternion_matrix(q), r.as_matrix(), atol=1e-14)

"""robot_dynamics_replay --frames: the task-space fields of every
DynamicsState the replay writes, against the library's frame functions at
the state's own position and velocity, read back with nothing but the
definitions stored in the bag."""

import numpy as np
import pytest
from bag_files import PREFIX, read_bag
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from robot_dynamics_ros.dynamics import frame_jacobian, frame_jacobian_dot_v, frame_placement, load_urdf
from robot_dynamics_ros.replay.cli import main as replay_main

FRAMES = ["panda_hand_tcp", "panda_link4"]


def states(bag):
    store = get_typestore(Stores.EMPTY)
    for msgtype, definition in bag.definitions.items():
        store.register(get_types_from_msg(definition, msgtype))
    msgtype, _, raws = bag[PREFIX + "state"]
    return [store.deserialize_cdr(raw, msgtype) for raw in raws]


def rotation(x, y, z, w):
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


@pytest.fixture(scope="module")
def replayed(short_panda, short_bag, tmp_path_factory):
    out = tmp_path_factory.mktemp("frames") / "out"
    assert replay_main([str(short_bag), str(out), "--frames", *FRAMES, "--quiet", "--kc-time-budget", "0"]) == 0
    return load_urdf(short_panda.urdf), read_bag(out)


def test_every_state_carries_the_frames_of_its_own_state(replayed):
    model, bag = replayed
    written = states(bag)
    assert len(written) > 100
    order = [list(written[0].names).index(name) for name in model.joint_names]  # model order
    nv = model.nv
    for state in written[::17]:
        assert list(state.frame_names) == FRAMES
        q, v = np.asarray(state.position)[order], np.asarray(state.velocity)[order]
        jacobians = np.asarray(state.frame_jacobians).reshape(len(FRAMES), 6, nv)
        bias = np.asarray(state.frame_jacobian_dot_v).reshape(len(FRAMES), 6)
        for k, frame in enumerate(FRAMES):
            pose = state.frame_poses[k]
            placement = frame_placement(model, q, frame)
            p, o = pose.position, pose.orientation
            np.testing.assert_allclose([p.x, p.y, p.z], placement[:3, 3], atol=1e-12)
            np.testing.assert_allclose(rotation(o.x, o.y, o.z, o.w), placement[:3, :3], atol=1e-12)
            # the message's columns are in its names' order
            np.testing.assert_allclose(jacobians[k][:, order], frame_jacobian(model, q, frame), atol=1e-12)
            np.testing.assert_allclose(bias[k], frame_jacobian_dot_v(model, q, v, frame), atol=1e-12)


def test_an_unknown_frame_is_refused_with_the_known_ones(short_bag, tmp_path, capsys):
    assert replay_main([str(short_bag), str(tmp_path / "out"), "--frames", "no_such_link", "--quiet",
                        "--kc-time-budget", "0"]) != 0
    error = capsys.readouterr().err
    assert "no_such_link" in error and "panda_hand_tcp" in error
    assert not (tmp_path / "out").exists()

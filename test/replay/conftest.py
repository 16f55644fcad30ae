"""The replay room's shared fixtures: a short panda trajectory (1 s at
200 Hz, names shuffled, one unmodelled joint) and its joint states as a
real MCAP bag, one of each per module."""

import pytest
import robots
from bag_files import Trajectory, write_joint_state_bag


@pytest.fixture(scope="module")
def short_panda():
    return Trajectory(robots.example_robot_urdf("panda"), 1.0, 200.0, seed=7)


@pytest.fixture(scope="module")
def short_bag(short_panda, tmp_path_factory):
    path = tmp_path_factory.mktemp("short") / "panda_in"
    write_joint_state_bag(path, "mcap", short_panda)
    return path

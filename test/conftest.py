"""What the tests of every room share.

test/ mirrors the package: a folder per room (dynamics/ with its own rooms,
served/, messages/, node/, replay/, certify/, demo/) and package/ for the
repository as a whole (layers, dependencies, documents, builds, launch).
Helpers that tests import (robots and the Pinocchio oracle, the node
harness, bag files, streams) live in support/, which pytest.ini puts on the
path; fixtures live in the conftest.py of the folder whose tests share them.

Markers (pytest.ini): ``colcon`` for tests that build the package with
colcon, ``slow`` for tests that run against a time budget of seconds;
``scripts/run.sh test --quick`` leaves both out.
"""

import pytest
from robots import PinocchioOracle, example_robot_urdf, load_pinocchio, urdf_text

from robot_dynamics_ros.dynamics import load_urdf


@pytest.fixture(scope="session")
def model_and_oracle():
    """``make(urdf, floating=False)``: our model of a URDF (a path, its text
    or an example-robot-data name) and Pinocchio's oracle of the same file,
    in our joint order; made once per session and shared."""
    made = {}

    def make(urdf: str, floating: bool = False):
        key = (urdf, floating)
        if key not in made:
            path = urdf if "<robot" in urdf or urdf.endswith(".urdf") else example_robot_urdf(urdf)
            model = load_urdf(urdf_text(path), base="floating" if floating else "fixed")
            made[key] = model, PinocchioOracle(load_pinocchio(path, free_flyer=floating), model.joint_names)
        return made[key]

    return make

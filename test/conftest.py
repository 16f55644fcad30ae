"""What the tests of every room share.

test/ mirrors the package: a folder per room (dynamics/ with its own rooms,
served/, messages/, node/, replay/, certify/, demo/) and package/ for the
repository as a whole (layers, dependencies, documents, builds, launch).
Helpers that tests import (robots and the Pinocchio oracle, the node
harness, bag files, streams) live in support/, which pytest.ini puts on the
path; fixtures live in the conftest.py of the folder whose tests share them.

Markers (pytest.ini): ``colcon`` for tests that build the package with
colcon, ``slow`` for tests that take seconds of their own (pytest.ini);
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


def pytest_configure(config):
    """Fill numba's cache with the shared kernels before any test runs, in
    a run spread over pytest-xdist's workers (in the controlling process
    only): the fixed- and the floating-base kernels compile side by side,
    each once, instead of in every worker that needs them. With a warm cache
    this loads them and costs a few seconds."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    if hasattr(config, "workerinput") or os.environ.get("NUMBA_DISABLE_JIT") == "1":
        return
    # only for runs spread over workers (scripts/run.sh test): one file run
    # on its own compiles what it needs, and a file of docs tests nothing
    if config.getoption("collectonly", False) or not config.getoption("numprocesses", None):
        return
    support = Path(__file__).resolve().parent / "support"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(support.parents[1]), str(support),
                                                       env.get("PYTHONPATH")]))
    script = str(support / "warm_kernels.py")
    runs = [subprocess.Popen([sys.executable, script, kind], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True) for kind in ("fixed", "floating")]
    for run in runs:
        _, error = run.communicate()
        # a failure here is the tests' to report, with its own context
        if run.returncode and config.option.verbose > 0:
            print(f"warm_kernels: {error.strip().splitlines()[-1:]}", file=sys.stderr)

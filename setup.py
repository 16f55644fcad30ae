from glob import glob

from setuptools import find_packages, setup

package_name = "robot_dynamics_ros"

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test", "bench"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
        ("share/" + package_name + "/launch", glob("launch/*.py")),
        ("share/" + package_name + "/config", glob("config/*")),
    ],
    package_data={package_name: ["data/*.urdf"]},
    install_requires=["setuptools", "numpy", "numba", "urdf-parser-py"],
    extras_require={
        "simulate": ["scipy"],  # dynamics.simulate and the demo
        "replay": ["rosbags", "matplotlib"],  # robot_dynamics_replay, --plot
        "certify": ["dask", "distributed"],  # robot_dynamics_certify
    },
    zip_safe=True,
    maintainer="robot_dynamics_ros developers",
    maintainer_email="robot-dynamics-ros@example.org",
    description="Live rigid-body dynamics for ROS 2: mass matrix, Christoffel-consistent "
    "Coriolis matrix, Christoffel symbols and Coriolis bounds from the URDF.",
    license="BSD-3-Clause",
    tests_require=["pytest"],
    entry_points={
        "console_scripts": [
            "robot_dynamics_node = robot_dynamics_ros.node_cli:main",
            "robot_dynamics_demo = robot_dynamics_ros.demo:main",
            "robot_dynamics_replay = robot_dynamics_ros.replay:main",
            "robot_dynamics_certify = robot_dynamics_ros.certify.cli:main",
        ],
    },
)

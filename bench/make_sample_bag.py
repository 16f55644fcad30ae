"""Write a sample rosbag2 bag to try the replay on: panda, 60 s at 500 Hz.

The bag holds /robot_description and /joint_states of the test trajectory
(test/replay/test_replay.py: every joint on a sine inside its limits, names in a
driver's order plus one unmodelled joint). Usage:
    python bench/make_sample_bag.py OUTPUT_BAG [--storage mcap|sqlite3]
"""
import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402,F401  (puts test/ on sys.path)
from robots import example_robot_urdf  # noqa: E402
from bag_files import STORAGES, Trajectory, write_joint_state_bag  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path)
    parser.add_argument("--storage", choices=sorted(STORAGES), default="mcap")
    args = parser.parse_args()
    write_joint_state_bag(args.output, args.storage,
                          Trajectory(example_robot_urdf("panda"), duration=60.0, rate=500.0))
    print(f"wrote {args.output} ({args.storage}): 30,000 panda joint states")


if __name__ == "__main__":
    main()

"""The certificate's setup of one part (``kc.partition.prepare``): seconds
and peak memory, per robot.

``prepare`` expands Gamma over the part's domain and bounds its mixed
second derivatives and its frozen coordinates from squared norms
(``kc.mixed``); a certificate makes it once for the search and once for
``--verify``. Each robot in a fresh process, after one small model's
setup has loaded the kernels, so that the figure is the setup's own: its
wall time, the part of it in ``mixed.add_squares``, and the peak resident
memory it added (VmHWM after it minus VmRSS before). Run alone (2 cores
shared); to compare two commits, run it in both checkouts in turn:

    python bench/bench_box_setup.py [--robots panda ur5_robot] [--rounds 2]
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPOSITORY = str(Path(__file__).absolute().parent.parent)

ONE_ROBOT = """
import json, sys, time
sys.path[:0] = [{repository!r}, {support!r}]
from robots import example_robot_urdf
from robot_dynamics_ros.dynamics import load_urdf, puma_urdf
from robot_dynamics_ros.dynamics.kc import mixed, partition

def status(field):
    with open("/proc/self/status") as lines:
        return next(int(line.split()[1]) for line in lines if line.startswith(field)) / 1024

partition.prepare(load_urdf(puma_urdf()))  # the kernels, loaded or compiled
model = load_urdf(example_robot_urdf({robot!r}))
spent = [0.0]
add_squares = mixed.add_squares

def timed(*args):
    start = time.perf_counter()
    add_squares(*args)
    spent[0] += time.perf_counter() - start

mixed.add_squares = timed
before = status("VmRSS:")
start = time.perf_counter()
partition.prepare(model)
seconds = time.perf_counter() - start
print(json.dumps(dict(seconds=seconds, squares=spent[0], mb=status("VmHWM:") - before)))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robots", nargs="+", default=["panda", "ur5_robot"])
    parser.add_argument("--rounds", type=int, default=2)
    arguments = parser.parse_args()
    print("| robot | prepare s | of which add_squares s | peak MB added |")
    print("|---|---|---|---|")
    for robot in arguments.robots:
        runs = []
        for _ in range(arguments.rounds):
            code = ONE_ROBOT.format(repository=REPOSITORY, robot=robot,
                                    support=os.path.join(REPOSITORY, "test", "support"))
            out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
            runs.append(json.loads(out.stdout.splitlines()[-1]))
        print(f"| {robot} | " + " | ".join(", ".join(f"{run[key]:.{digits}f}" for run in runs)
                                           for key, digits in (("seconds", 1), ("squares", 1), ("mb", 0)))
              + " |", flush=True)


if __name__ == "__main__":
    main()

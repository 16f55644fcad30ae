"""Payload identification accuracy on ground-truth bags (issue 23's targets).

For panda and ur5, 60 s at 500 Hz with effort noise 1% of each joint's
effort range (bench/make_payload_bag.py), payloads of 1 and 3 kg with the
CoM 2 cm and 10 cm off the flange (in a direction drawn per case), and a
still robot: the estimate by ``robot_dynamics_replay --identify-payload``'s
own path against the truth. Targets: mass within 2%, CoM within 5 mm; the
still robot must say the CoM is not identifiable.

Run: python bench/bench_identification.py [--seconds 60]
"""
import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from make_payload_bag import write_payload_bag  # noqa: E402

from robot_dynamics_ros.replay.cli import parse_args  # noqa: E402
from robot_dynamics_ros.replay.run import replay  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    rng = np.random.default_rng(23)
    cases = []
    for robot in ("panda", "ur5"):
        for mass in (1.0, 3.0):
            for offset in (0.02, 0.10):
                direction = rng.normal(size=3)
                cases.append((robot, mass, offset * direction / np.linalg.norm(direction), "exciting"))
        cases.append((robot, 2.0, np.array([0.03, 0.02, 0.06]), "still"))
    print(f"{'robot':<6} {'trajectory':<9} {'mass':>5} {'|com|':>6}  {'mass error':>10}  {'com error':>9}  "
          f"{'seconds':>7}  verdict")
    with tempfile.TemporaryDirectory() as tmp:
        for k, (robot, mass, com, kind) in enumerate(cases):
            path = Path(tmp) / f"bag{k}"
            truth = write_payload_bag(path, robot=robot, mass=mass, com=com, duration=args.seconds, kind=kind, seed=k)
            start = time.perf_counter()
            estimate = replay(parse_args([str(path), "--identify-payload", truth["link"],
                                          "--kc-time-budget", "0", "--quiet"]))["payload"]
            seconds = time.perf_counter() - start
            mass_error = (f"{100 * (float(estimate.mass.value) - mass) / mass:+.2f}%"
                          if estimate.mass.identified else "n/i")
            com_error = (f"{1000 * np.max(np.abs(estimate.com.value - com)):.2f} mm"
                         if estimate.com.identified else "n/i")
            if kind == "still":
                verdict = "ok" if not estimate.com.identified else "WRONG: CoM printed"
            else:
                ok = (estimate.mass.identified and estimate.com.identified
                      and abs(float(estimate.mass.value) - mass) <= 0.02 * mass
                      and np.max(np.abs(estimate.com.value - com)) <= 0.005)
                verdict = "ok" if ok else "MISSED"
            print(f"{robot:<6} {kind:<9} {mass:5.1f} {np.linalg.norm(com):6.3f}  {mass_error:>10}  {com_error:>9}  "
                  f"{seconds:7.1f}  {verdict}", flush=True)


if __name__ == "__main__":
    main()

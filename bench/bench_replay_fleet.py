"""Fleet replay throughput on a Dask LocalCluster with 1 and 2 workers.

Writes BAGS ground-truth panda bags (bench/make_payload_bag.py, SECONDS each
at 500 Hz, efforts included) and replays the folder as one fleet with
--residuals and --identify-payload panda_link8 (K_c refinement off, as a
fleet of one robot would take a certificate), per-bag outputs included.
Reports wall time from the command's start (cluster start-up included) and
joint states per second over the fleet.

Run: python bench/bench_replay_fleet.py [--bags 20] [--seconds 10] [--workers 1 2]
"""
import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
from make_payload_bag import write_payload_bag  # noqa: E402

from robot_dynamics_ros.replay.cli import main  # noqa: E402


def run(folder: Path, out: Path, workers: int) -> float:
    start = time.perf_counter()
    status = main([str(folder), str(out), "--residuals", "--identify-payload", "panda_link8",
                   "--kc-time-budget", "0", "--workers", str(workers), "--quiet"])
    assert status == 0, status
    return time.perf_counter() - start


def main_bench():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bags", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "fleet"
        folder.mkdir()
        total = 0
        for k in range(args.bags):
            total += write_payload_bag(folder / f"run{k:02d}", robot="panda", mass=2.0, com=(0.03, 0.0, 0.05),
                                       duration=args.seconds, seed=k)["samples"]
        print(f"{args.bags} bags, {total} joint states; load average {os.getloadavg()[0]:.1f}")
        for workers in args.workers:
            seconds = run(folder, Path(tmp) / f"out{workers}", workers)
            print(f"workers {workers}: {seconds:.1f} s, {total / seconds:,.0f} joint states/s "
                  f"(load average {os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main_bench()

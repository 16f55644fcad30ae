"""K_c certificates (issue 20): gap against time and workers, per robot.

For each robot and each worker count, ``robot_dynamics_certify``'s search
(``certify.search.certify``) runs on a fresh local Dask cluster to
``--gap`` (default 1.05; 1.10 for panda, whose fingers make it harder)
within ``--budget`` seconds, and prints upper / lower every
``--every`` seconds, then the end: time, gap, boxes, units and their mean
size (boxes and seconds), leaves kept, and the time ``--verify`` takes.

What a larger cluster would need, per unit: the bytes of its result as
the engine sends it (pickled), the client's seconds to log and merge it,
and each worker's peak resident memory at the end (its model, box setup
and kernels); a unit's input is at most 256 boxes, ``m + 8 m + 9`` bytes
each.

Robots: ur5, kinova, the PUMA, panda (9 joints with its fingers), a
12-joint arm with a gripper (a seeded 6-joint arm, then a palm with three
2-joint fingers: a tree), and the 7-joint arms of issue 50: xarm7 and
baxter (two 7-joint arms and a head, searched apart) with wide limits, TALOS's
left arm (7 joints and a gripper), and a seeded random chain of 7 joints, two
of them continuous. Run alone (2 cores shared):

    python bench/bench_certify.py [--robots ur5 puma] [--workers 1 2] [--budget 120]
"""
import argparse
import os
import pickle
import resource
import sys
import tempfile
import time
from pathlib import Path

REPOSITORY = str(Path(__file__).absolute().parent.parent)
sys.path.insert(0, os.path.join(REPOSITORY, "test", "support"))
# This checkout's package, here and in the engine's worker processes (they
# import it anew: an older installed copy would be measured instead).
sys.path.insert(0, REPOSITORY)
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [REPOSITORY, os.environ.get("PYTHONPATH")]))
from kc_robots import arm_with_gripper  # noqa: E402
from robots import example_robot_urdf, named_urdf  # noqa: E402

from robot_dynamics_ros.certify.engine import start_client  # noqa: E402
from robot_dynamics_ros.certify import search  # noqa: E402
from robot_dynamics_ros.certify.search import certify  # noqa: E402
from robot_dynamics_ros.dynamics import load_urdf, puma_urdf  # noqa: E402
from robot_dynamics_ros.dynamics.kc.certificate import verify, write_certificate  # noqa: E402


ROBOTS = {
    "ur5": (lambda: example_robot_urdf("ur5_robot"), 1.05),
    "kinova": (lambda: example_robot_urdf("kinova"), 1.05),
    "puma": (puma_urdf, 1.05),
    "panda": (lambda: example_robot_urdf("panda"), 1.10),
    "arm_gripper12": (arm_with_gripper, 2.0),
    "xarm7": (lambda: example_robot_urdf("xarm7"), 1.05),
    "baxter": (lambda: example_robot_urdf("baxter"), 1.05),
    "chain7": (lambda: named_urdf("chain-13-7"), 1.05),
    "talos_arm": (lambda: example_robot_urdf("talos_left_arm"), 1.05),
}


class UnitCosts:
    """Wraps the search's merge: per finished unit, the pickled size of its
    result and the client's seconds spent logging and merging it."""

    def __init__(self):
        self.sizes, self.seconds = [], 0.0
        self.merge = search._Search._merge

    def __enter__(self):
        costs = self

        def merge(self_, done):
            for future in done:
                if future.status == "finished":
                    costs.sizes.append(len(pickle.dumps(future.result(), protocol=pickle.HIGHEST_PROTOCOL)))
            start = time.monotonic()
            costs.merge(self_, done)
            costs.seconds += time.monotonic() - start

        search._Search._merge = merge
        return self

    def __exit__(self, *exc):
        search._Search._merge = self.merge


def _peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Recorder:
    """Stands in for the progress line: keeps gap against time."""

    def __init__(self, every):
        self.every, self.next, self.rows = every, 0.0, []

    def show(self, *, lower, upper, gap, open_boxes, rate, settled, elapsed, budget, final=False):
        if final or elapsed >= self.next:
            self.rows.append((elapsed, upper / lower, open_boxes, rate))
            print(f"    {elapsed:7.1f} s  gap {upper / lower:8.4f}  open {open_boxes:7d}  {rate:7.0f} boxes/s",
                  flush=True)
            self.next = elapsed + self.every


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robots", nargs="*", default=list(ROBOTS), choices=list(ROBOTS))
    parser.add_argument("--workers", nargs="*", type=int, default=[1, 2])
    parser.add_argument("--budget", type=float, default=120.0)
    parser.add_argument("--gap", type=float, default=None, help="target gap (default: per robot)")
    parser.add_argument("--unit-seconds", type=float, default=2.0)
    parser.add_argument("--every", type=float, default=10.0)
    options = parser.parse_args()
    for name in options.robots:
        source, gap = ROBOTS[name]
        gap = options.gap or gap
        text = source()
        model = load_urdf(Path(text) if not text.lstrip().startswith("<") else text)
        for workers in options.workers:
            print(f"{name} ({model.nv} joints), {workers} worker(s), target gap {gap}, budget {options.budget:g} s")
            start = time.monotonic()
            client, cluster, count = start_client(workers)
            print(f"    cluster up in {time.monotonic() - start:.1f} s", flush=True)
            recorder = Recorder(options.every)
            with tempfile.TemporaryDirectory() as directory:
                try:
                    with UnitCosts() as costs:
                        document, leaves = certify(model, gap=gap, time_budget=options.budget, client=client,
                                                   workers=count, checkpoint_dir=Path(directory) / "checkpoint",
                                                   unit_seconds=options.unit_seconds, progress=recorder)
                    memory = client.run(_peak_rss_mb)
                finally:
                    client.close()
                    cluster.close()
                path = Path(directory) / "model.kc.json"
                write_certificate(path, document, leaves)
                start = time.monotonic()
                verify(path, model)
                checked = time.monotonic() - start
            work = document["work"]
            boxes = sum(part["boxes"] for part in document["parts"])
            units = max(1, work["units"])
            print(f"    end: {document['seconds']:.1f} s, gap {document['kc_global'] / document['kc_global_lower']:.4f} "
                  f"(K_c in [{document['kc_global_lower']:.6g}, {document['kc_global']:.6g}]), "
                  f"{work['boxes_bounded']} boxes bounded in {work['units']} units "
                  f"({work['boxes_bounded'] / units:.0f} boxes, ~{options.unit_seconds:g} s each), "
                  f"{boxes} leaves kept, --verify {checked:.1f} s", flush=True)
            merged = max(1, len(costs.sizes))
            print(f"    per unit: result {sum(costs.sizes) / merged / 1e3:.0f} kB (largest "
                  f"{max(costs.sizes, default=0) / 1e3:.0f} kB), merged by the client in "
                  f"{1e3 * costs.seconds / merged:.1f} ms; workers' peak memory "
                  f"{', '.join(f'{v:.0f}' for v in memory.values())} MB", flush=True)


if __name__ == "__main__":
    main()

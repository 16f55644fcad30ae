"""Offline bag replay throughput: joint states per second for panda, bag in and bag out.

A 60 s, 500 Hz panda bag (30,000 joint states, the test trajectory of
test/replay/test_replay.py) in sqlite3 and in MCAP, replayed end to end by
``robot_dynamics_replay`` (reading, decoding, dynamics, encoding, writing,
model load and the model's first K_c bound included; no refinement,
``--kc-time-budget 0``). Then where the time goes,
stage by stage, on the same bag. Target: at least 20,000 joint states/s.
Run: python bench/bench_replay.py [--baseline CHECKOUT] [--rounds 4]

``--baseline CHECKOUT``: also this checkout's replay against another's (an
earlier revision's working tree) on the same MCAP bag, paired: in each round
both run, in alternating order, each in a fresh process that replays the bag
once to load its kernels and then once timed, so the machine's load falls on
both alike; the ratio of their median times is the figure to judge.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402,F401  (puts test/ on sys.path)
from robots import example_robot_urdf  # noqa: E402
from bag_files import Trajectory, write_joint_state_bag  # noqa: E402

from robot_dynamics_ros import dynamics  # noqa: E402
from robot_dynamics_ros.replay import bags  # noqa: E402
from robot_dynamics_ros.dynamics.kc import global_coriolis_constant  # noqa: E402
from robot_dynamics_ros.messages.inputs import JointStateMatcher  # noqa: E402
from robot_dynamics_ros.served.model import load_description  # noqa: E402
from robot_dynamics_ros.messages.outputs import compute_outputs  # noqa: E402
from robot_dynamics_ros.replay.cli import main  # noqa: E402
from robot_dynamics_ros.replay.inputs import CHUNK, match_chunk  # noqa: E402
from robot_dynamics_ros.replay.run import OutputStreams  # noqa: E402

TARGET = 20_000


def end_to_end(source: Path, target: Path) -> float:
    start = time.perf_counter()
    assert main([str(source), str(target), "--quiet", "--kc-time-budget", "0"]) == 0
    return time.perf_counter() - start


def stages(source: Path, target: Path, urdf: str) -> dict:
    """Seconds per stage for one pass over the bag, the model's first K_c bound computed first."""
    served = load_description(urdf)
    model = served.model
    seconds = Counter()
    start = time.perf_counter()
    kc = global_coriolis_constant(model)
    seconds["K_c first bound (once per model)"] = time.perf_counter() - start
    reader = bags.open_reader(source)
    writer = bags.open_writer(target, "sqlite3")
    streams = OutputStreams(writer, served, False, (0.0, global_coriolis_constant(model)), "first_bound")
    matcher = JointStateMatcher(model.joint_names)
    connections = bags.topic_connections(reader, "/joint_states", bags.JOINT_STATE)
    chunks = bags.read_chunks(reader, connections, CHUNK, source)
    while True:
        start = time.perf_counter()
        chunk = next(chunks, None)
        if chunk is None:
            break
        times, stamps, q, qd = match_chunk(matcher, *chunk, Counter(), {}, source)
        seconds["read + decode + match by name"] += time.perf_counter() - start
        start = time.perf_counter()
        outputs = compute_outputs(model, q, qd)
        terms = outputs[0]
        seconds["dynamics (batch)"] += time.perf_counter() - start
        start = time.perf_counter()
        dynamics.coriolis_bounds(model, q, qd, christoffel=terms.christoffel_symbols,
                                 mass=terms.mass_matrix)
        seconds["  of which coriolis_bounds (timed again)"] += time.perf_counter() - start
        start = time.perf_counter()
        streams.write(times, stamps, None, q, qd, outputs)
        seconds["encode + write"] += time.perf_counter() - start
    start = time.perf_counter()
    writer.close()
    reader.close()
    seconds["encode + write"] += time.perf_counter() - start
    return seconds


# One timed replay of a bag in a fresh process, after a first that loads the kernels.
DRIVER = """
import sys, time
from robot_dynamics_ros.replay.cli import main
source, target = sys.argv[1:3]
assert main([source, target + "_warm", "--quiet", "--kc-time-budget", "0"]) == 0
start = time.perf_counter()
assert main([source, target, "--quiet", "--kc-time-budget", "0"]) == 0
print(time.perf_counter() - start)
"""


def timed_in_process_of(checkout: Path, source: Path, target: Path) -> float:
    env = dict(os.environ, PYTHONPATH=str(checkout),
               NUMBA_CACHE_DIR=str(Path(tempfile.gettempdir()) / f"numba-bench-{checkout.name}"))
    run_ = subprocess.run([sys.executable, "-c", DRIVER, str(source), str(target)], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=600)
    if run_.returncode:
        raise SystemExit(f"the replay of {checkout} failed:\n{run_.stderr[-3000:]}")
    return float(run_.stdout.split()[-1])


def paired(baseline: Path, rounds: int, source: Path, count: int, root: Path):
    ours = Path(__file__).absolute().parent.parent
    times = {"this checkout": [], f"baseline {baseline}": []}
    checkouts = list(zip(times, (ours, baseline)))
    for k in range(rounds):
        for name, checkout in checkouts[::1 if k % 2 else -1]:
            times[name].append(timed_in_process_of(checkout, source, root / f"paired_{k}_{checkout.name}"))
    print(f"  paired, {rounds} rounds, MCAP in and out (median; joint states/s):")
    for name, values in times.items():
        median = sorted(values)[len(values) // 2]
        print(f"    {name:<40} {median:6.2f} s  {count / median:8,.0f}/s   "
              f"(all: {', '.join(f'{v:.2f}' for v in values)})")
    ours_s, base_s = (sorted(v)[len(v) // 2] for v in times.values())
    print(f"    throughput ratio, this / baseline: {base_s / ours_s:.2f}")


def run(baseline=None, rounds: int = 4):
    urdf = example_robot_urdf("panda")
    traj = Trajectory(urdf, 60.0, 500.0)
    count = len(traj.t)
    with tempfile.TemporaryDirectory(prefix="bench_replay_") as tmp:
        root = Path(tmp)
        warm = Trajectory(urdf, 0.2, 500.0)
        write_joint_state_bag(root / "warm", "mcap", warm)
        end_to_end(root / "warm", root / "warm_out")  # numba kernels loaded or compiled
        print(f"panda, {count} joint states (60 s at 500 Hz), {os.cpu_count()} cores")
        elapsed = {}
        for storage in ("sqlite3", "mcap"):
            write_joint_state_bag(root / storage, storage, traj)
            elapsed[storage] = end_to_end(root / storage, root / f"{storage}_out")
            print(f"  end to end, {storage:>7} in and out: {elapsed[storage]:6.2f} s, "
                  f"{count / elapsed[storage]:8,.0f} joint states/s   (target >= {TARGET:,}/s)")
        print("  stages, sqlite3 (s, and us per joint state):")
        seconds = stages(root / "sqlite3", root / "stages_out", traj.urdf)
        for stage, value in seconds.items():
            print(f"    {stage:<42} {value:6.2f} s  {value / count * 1e6:7.1f} us")
        # K_c's first bound is once per model, whatever the bag's length: a
        # longer bag approaches this rate.
        search = seconds["K_c first bound (once per model)"]
        for storage, value in elapsed.items():
            print(f"  end to end without K_c's first bound, {storage:>7}: "
                  f"{count / (value - search):8,.0f} joint states/s")
        if baseline is not None:
            paired(baseline, rounds, root / "mcap", count, root)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, help="another checkout to compare with, paired")
    parser.add_argument("--rounds", type=int, default=4)
    options = parser.parse_args()
    run(options.baseline and options.baseline.absolute(), options.rounds)

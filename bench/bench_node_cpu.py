"""The node's joint-state callback, in CPU time: this checkout against another.

    python bench/bench_node_cpu.py --baseline CHECKOUT [--robot panda] [--states 5000] [--rounds 6]

Each round starts, in alternating order, a fresh process per checkout that
builds the node in process as it starts by default (this checkout: ``~/state``
and ``~/gravity_torques``; the baseline, e.g. the revision before
``~/state``: its four array topics), waits for its model, and calls its
joint_states callback directly on ``--states`` different joint states (one
name list, stamps 1 ms apart), five passes, each with fresh stamp-gap
counting. The figure is the callback's CPU time per joint state
(``time.thread_time_ns``: what the executor thread itself spent, so time
the scheduler gave to other processes is left out), the median of the
passes; the ratio of the two checkouts' medians over the rounds is the one
to judge, on a shared machine too. Everything the callback does is in:
stamp gaps, matching, ``all_terms``, serialization and publishing (with no
subscriber).
"""
import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

DRIVER = """
import sys, time
import numpy as np
root, robot, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, root + "/test/support")
import robots, ros_harness as harness
import rclpy
from rclpy.parameter import Parameter
from robot_dynamics_ros.node.dynamics_node import DynamicsNode
harness.isolate_ros_environment()
rclpy.init()
node = DynamicsNode(parameter_overrides=[Parameter("urdf_file", value=robots.example_robot_urdf(robot)),
                                         Parameter("base", value="fixed"),
                                         Parameter("kc_refinement.time_budget", value=0.0)])
deadline = time.monotonic() + 300
while node._service.live is None and time.monotonic() < deadline:
    rclpy.spin_once(node, timeout_sec=0.1)
names = list(node._service.live.served.model.joint_names)
rng = np.random.default_rng(0)
try:  # a node that reads its joint states from their bytes (cdr_inputs) is called with bytes
    import robot_dynamics_ros.messages.cdr_inputs
    from rclpy.serialization import serialize_message as as_input
except ImportError:
    as_input = lambda msg: msg
states = [as_input(harness.joint_state(names, q, qd, stamp_=harness.stamp(1000 + k // 1000, (k % 1000) * 1_000_000)))
          for k, (q, qd) in enumerate(rng.uniform(-1, 1, (count, 2, len(names))))]
# a node that counts losses from DDS sequence numbers takes the message info too:
# numbered on, as one writer numbers what it writes
import inspect
with_info = len(inspect.signature(node._on_joint_state).parameters) == 2
infos = iter([{"publication_sequence_number": k + 1} for k in range(300 + 5 * count)])
call = (lambda msg: node._on_joint_state(msg, next(infos))) if with_info else node._on_joint_state
for msg in states[:300]:
    call(msg)
passes = []
for _ in range(5):
    node._handler._stamp_gaps = type(node._handler._stamp_gaps)()
    start = time.thread_time_ns()
    for msg in states:
        call(msg)
    passes.append((time.thread_time_ns() - start) / count / 1e3)
print(sorted(passes)[2])
node.destroy_node()
rclpy.shutdown()
"""


def cpu_us(checkout: Path, robot: str, states: int) -> float:
    env = dict(os.environ, PYTHONPATH=str(checkout), OPENBLAS_NUM_THREADS="1",
               NUMBA_CACHE_DIR=str(Path(tempfile.gettempdir()) / f"numba-bench-{checkout.name}"))
    run = subprocess.run([sys.executable, "-c", DRIVER, str(checkout), robot, str(states)], cwd=checkout,
                         env=env, capture_output=True, text=True, timeout=900)
    if run.returncode:
        raise SystemExit(f"the node of {checkout} failed:\n{run.stderr[-3000:]}")
    return float(run.stdout.split()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, required=True, help="another checkout (a git worktree)")
    parser.add_argument("--robot", default="panda", help="example-robot-data URDF name (panda)")
    parser.add_argument("--states", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=6)
    options = parser.parse_args()
    ours = Path(__file__).absolute().parent.parent
    checkouts = {"this checkout": ours, f"baseline {options.baseline}": options.baseline.absolute()}
    times = {name: [] for name in checkouts}
    load = []
    for k in range(options.rounds):
        for name, checkout in list(checkouts.items())[::1 if k % 2 else -1]:
            times[name].append(cpu_us(checkout, options.robot, options.states))
        load.append(os.getloadavg()[0])
    print(f"bench_node_cpu: {options.robot}, callback CPU time per joint state, {options.rounds} rounds "
          f"of {options.states} joint states (load average {min(load):.1f}-{max(load):.1f})")
    medians = {}
    for name, values in times.items():
        medians[name] = sorted(values)[len(values) // 2]
        print(f"  {name:<45} median {medians[name]:6.1f} us   (rounds: "
              f"{', '.join(f'{v:.1f}' for v in values)})")
    ours_us, base_us = medians.values()
    print(f"  ratio this / baseline: {ours_us / base_us:.2f}")


if __name__ == "__main__":
    main()

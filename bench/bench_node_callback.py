"""The node's joint-state callback in process: what one joint state costs the node.

    python bench/bench_node_callback.py [--states 20000] [--robot panda]

Starts the node in this process (real rclpy, its publishers live), waits until
it serves the robot, then calls its joint_states callback directly with
``--states`` different joint states and reports the time per call: matching
the names, ``compute_outputs`` (all_terms) and serializing the outputs, plus
publishing them. Unlike bench_node.py, nothing else shares the process, so
the figure is the node's own cost, free of DDS and of the harness; it is
what a revision of the numerics changes (run it on two checkouts to compare).
Also reported: the part before publishing (what /diagnostics calls compute)
and ``compute_outputs`` alone on the same states.
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).absolute().parent.parent / "test"))
import robots  # noqa: E402
import ros_harness as harness  # noqa: E402

import rclpy  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from robot_dynamics_ros.messages import compute_outputs  # noqa: E402
from robot_dynamics_ros.node import DynamicsNode  # noqa: E402


def report(label, seconds):
    us = 1e6 * seconds
    print(f"{label}: mean {us.mean():.1f} us, p50 {np.median(us):.1f} us, "
          f"p99 {np.percentile(us, 99):.1f} us")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--states", type=int, default=20000)
    parser.add_argument("--robot", default="panda")
    args = parser.parse_args()
    harness.isolate_ros_environment()
    rclpy.init()
    path = robots.example_robot_urdf(args.robot)
    node = DynamicsNode(parameter_overrides=[Parameter("urdf_file", value=path)])
    try:
        deadline = time.monotonic() + 300
        while node._service.live is None and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.1)
        model = node._service.live.served.model
        names = list(model.joint_names)
        rng = np.random.default_rng(0)
        states = [harness.joint_state(names, q, qd)
                  for q, qd in rng.uniform(-1, 1, (args.states, 2, model.nv))]
        for msg in states[:200]:  # the first calls bind the hot path
            node._on_joint_state(msg)
        times = np.empty(len(states))
        for k, msg in enumerate(states):
            start = time.perf_counter()
            node._on_joint_state(msg)
            times[k] = time.perf_counter() - start
        report(f"{args.robot} ({model.nv} DoF), {len(states)} joint states, callback", times)
        # what /diagnostics calls compute: callback start to outputs serialized
        window = min(node._latency_count, len(node._latency_ns))
        report("  of which before publishing (the node's 'compute')", node._latency_ns[:window] * 1e-9)
        matched = [node._service.live.matcher.match(msg) for msg in states]
        for k, (q, qd) in enumerate(matched):
            start = time.perf_counter()
            compute_outputs(model, q, qd)
            times[k] = time.perf_counter() - start
        report("  of which compute_outputs (all_terms)", times)
    finally:
        node.destroy_node()
        rclpy.shutdown()


if __name__ == "__main__":
    main()

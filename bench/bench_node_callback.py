"""The node's joint-state callback in process: what one joint state costs the node.

    python bench/bench_node_callback.py [--states 20000] [--robot panda] [--floating]
                                        [--frames F1 F2 ...]

Starts the node in this process (real rclpy, its publishers live, with
``publish_arrays`` on so that both kinds of output exist), waits until it
serves the robot, then calls its callbacks directly with ``--states``
different joint states (each after its odometry for a floating base, with
the same stamp) and reports the time per call, publishing what the node
publishes by default (``~/state`` and ``~/gravity_torques``). Nothing else
shares the process, so the figure is the node's own cost, free of DDS and
of the harness. Then the same callbacks again, on new stamps, with the node's
``compute_outputs`` handing back one stored result: what the node spends
on a joint state besides the dynamics (reading, checking, pairing,
serializing, publishing).

Then, on the same states and the same ``all_terms`` results, the cost of the
outputs alone, paired per state in alternation (so the machine's load falls
on both alike):
- ``~/state``: serialize one DynamicsState and publish it;
- ``arrays``: what the node published per joint state before ``~/state``:
  ``~/mass_matrix``, ``~/coriolis_matrix``, ``~/coriolis_bounds`` and
  ``~/gravity_torques`` (four topics; five with ``--christoffel``);
and the DynamicsState's size in bytes.

``--frames``: the node's ``frames`` parameter (the task space: each
DynamicsState also carries those links' poses, Jacobians and J̇v).
``--paired``, with ``--frames``: two nodes in this process, one with the
frames and one without, fed the same joint states in alternation (which
goes first changes each state), so that the machine's load falls on both
alike; reported: each one's time per joint state and the ratio of the two,
the median over rounds of ``--round`` states, and the ratio of the two
nodes' own compute times (what ``/diagnostics`` reports: without the
publishing).
"""
import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).absolute().parent.parent / "test" / "support"))
import robots  # noqa: E402
import ros_harness as harness  # noqa: E402

import robot_dynamics_ros.node.joint_state_handler as handler_module  # noqa: E402

import rclpy  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.serialization import serialize_message  # noqa: E402

from robot_dynamics_ros.served.base_state import full_state  # noqa: E402
from robot_dynamics_ros.messages.outputs import ARRAY_TOPICS, compute_outputs, state_values  # noqa: E402
from robot_dynamics_ros.node.dynamics_node import DynamicsNode  # noqa: E402


def report(label, seconds):
    us = 1e6 * np.asarray(seconds)
    print(f"{label}: mean {us.mean():.1f} us, p50 {np.median(us):.1f} us, p99 {np.percentile(us, 99):.1f} us")


def full_state_of(live, msg, floating):
    """q, qd of a joint state, the base at a fixed pose and twist for a floating model."""
    q, qd = live.matcher.match(msg)
    if floating:
        q, qd = full_state(np.r_[0.1, 0.2, 0.3, 0.0, 0.0, 0.0, 1.0], np.full(6, 0.1), q, qd)
    return q, qd


def time_callbacks(node, live, rng, names, floating, first_second, count):
    """Seconds per joint state (with its odometry first for a floating base)
    of ``count`` new states 1 ms apart from ``first_second``, after 200 that
    bind the hot path: serialized beforehand, as the node takes them."""
    messages = messages_for(live, rng, names, floating, first_second, 200 + count)
    callbacks = callbacks_of(node, floating)
    processed, dropped = node._status.processed, sum(node._status.dropped.values())
    times = np.empty(count)
    for k, pair in enumerate(messages):
        start = time.perf_counter()
        for callback, data in zip(callbacks, pair):
            callback(data)
        if k >= 200:
            times[k - 200] = time.perf_counter() - start
    answered_all(node, processed, dropped, len(messages))
    return times


def messages_for(live, rng, names, floating, first_second, count):
    """``count`` joint states 1 ms apart from ``first_second``, serialized as
    the node takes them, each after its odometry for a floating base."""
    messages = []
    for k in range(count):
        stamp = harness.stamp(first_second + k // 1000, (k % 1000) * 1_000_000)
        q, qd = rng.uniform(-1, 1, (2, len(names)))
        pair = [serialize_message(harness.joint_state(names, q, qd, stamp_=stamp))]
        if floating:
            quaternion = rng.normal(size=4)
            pose = np.r_[rng.uniform(-1, 1, 3), quaternion / np.linalg.norm(quaternion)]
            pair.insert(0, serialize_message(harness.odometry(stamp, pose, rng.uniform(-1, 1, 6),
                                                              live.served.root_link)))
        messages.append(pair)
    return messages


def callbacks_of(node, floating):
    """The node's callbacks for one joint state (odometry first for a floating
    base), each joint state with the message info of its take, numbered on as
    one DDS writer numbers them."""
    infos = ({"publication_sequence_number": k} for k in itertools.count(1))
    on_joint_state = lambda data: node._on_joint_state(data, next(infos))  # noqa: E731
    return (node._handler.add_odometry, on_joint_state) if floating else (on_joint_state,)


def answered_all(node, processed, dropped, count):
    if node._status.processed - processed != count or sum(node._status.dropped.values()) != dropped:
        raise SystemExit(f"the node did not answer every joint state: {dict(node._status.dropped)}")


def start_node(path, args, frames=(), namespace=None, arrays=False):
    """A DynamicsNode in this process serving ``path``, once it serves it;
    ``arrays``: with the array topics' publishers (``publish_arrays``)."""
    node = DynamicsNode(namespace=namespace, parameter_overrides=[
        Parameter("urdf_file", value=path), Parameter("publish_arrays", value=arrays),
        Parameter("base", value="floating" if args.floating else "fixed"),
        Parameter("publish_christoffel", value=args.christoffel),
        Parameter("kc_refinement.time_budget", value=0.0)]
        + ([Parameter("frames", value=list(frames))] if frames else []))
    deadline = time.monotonic() + 300
    while node._service.live is None and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.1)
    return node


def paired(path, args):
    """Two nodes, without and with ``args.frames``, on the same joint states in alternation."""
    nodes = {"without frames": start_node(path, args, (), "/without"),
             "with frames": start_node(path, args, args.frames, "/with")}
    try:
        live = nodes["without frames"]._service.live
        names = list(live.served.model.joint_names)
        messages = messages_for(live, np.random.default_rng(0), names, args.floating, 10, 200 + args.states)
        callbacks = {name: callbacks_of(node, args.floating) for name, node in nodes.items()}
        before = {name: (node._status.processed, sum(node._status.dropped.values())) for name, node in nodes.items()}
        times = {name: np.empty(args.states) for name in nodes}
        for k, pair in enumerate(messages):
            for name in list(nodes)[::1 if k % 2 else -1]:
                start = time.perf_counter()
                for callback, data in zip(callbacks[name], pair):
                    callback(data)
                if k >= 200:  # the first bind the hot path
                    times[name][k - 200] = time.perf_counter() - start
        for name, node in nodes.items():
            answered_all(node, *before[name], len(messages))
        label = f"{args.robot} ({len(names)} DoF{', floating' if args.floating else ''})"
        for name, seconds in times.items():
            report(f"{label}, {args.states} joint states, callback {name}", seconds)
        rounds = args.states // args.round
        ratios = [np.median(times["with frames"][r * args.round:(r + 1) * args.round])
                  / np.median(times["without frames"][r * args.round:(r + 1) * args.round]) for r in range(rounds)]
        print(f"  with frames {' '.join(args.frames)} / without: median over {rounds} rounds of {args.round} "
              f"states {np.median(ratios):.3f} (quartiles {np.percentile(ratios, 25):.3f}, "
              f"{np.percentile(ratios, 75):.3f}); ratio of means "
              f"{times['with frames'].mean() / times['without frames'].mean():.3f}")
        # what /diagnostics reports as compute time: from the bytes in to the
        # outputs serialized, without publishing (the last joint states the node kept)
        kept = {name: node._status._latency_ns[:node._status._latency_count] for name, node in nodes.items()}
        compute = {name: np.median(ns) / 1e3 for name, ns in kept.items()}
        print(f"  the nodes' compute time (p50 of the last {len(kept['with frames'])} "
              f"joint states): without {compute['without frames']:.1f} us, with "
              f"{compute['with frames']:.1f} us, ratio {compute['with frames'] / compute['without frames']:.3f}")
    finally:
        for node in nodes.values():
            node.destroy_node()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--states", type=int, default=20000)
    parser.add_argument("--robot", default="panda")
    parser.add_argument("--floating", action="store_true", help="serve the robot as a floating base")
    parser.add_argument("--christoffel", action="store_true", help="with Gamma (publish_christoffel)")
    parser.add_argument("--frames", nargs="+", default=[], metavar="FRAME",
                        help="the node's frames parameter: links whose pose, J and Jdot v ~/state carries")
    parser.add_argument("--paired", action="store_true",
                        help="with --frames: a node with them and one without, in alternation")
    parser.add_argument("--round", type=int, default=500, help="states per round of --paired (500)")
    args = parser.parse_args()
    if args.paired and not args.frames:
        parser.error("--paired compares a node with --frames to one without: name the frames")
    harness.isolate_ros_environment()
    rclpy.init()
    path = robots.example_robot_urdf(args.robot)
    if args.paired:
        try:
            return paired(path, args)
        finally:
            rclpy.shutdown()
    node = start_node(path, args, args.frames, arrays=True)
    try:
        live = node._service.live
        served, model = live.served, live.served.model
        names = list(model.joint_names)
        rng = np.random.default_rng(0)
        states = [harness.joint_state(names, q, qd, stamp_=harness.stamp(1, k))
                  for k, (q, qd) in enumerate(rng.uniform(-1, 1, (args.states, 2, len(names))))]
        label = (f"{args.robot} ({model.nv} DoF{', floating' if args.floating else ''}"
                 f"{', frames ' + ' '.join(args.frames) if args.frames else ''})")
        timed = "odometry and joint state callbacks" if args.floating else "callback"
        stored = compute_outputs(model, *full_state_of(live, states[0], args.floating), args.christoffel,
                                 served.frames)
        for without_dynamics in (False, True):
            if without_dynamics:
                handler_module.compute_outputs = lambda *_: stored
            node._publish_arrays = False  # as the node runs by default: ~/state and ~/gravity_torques
            try:
                # the second run's stamps after the first's
                first_second = 10 + without_dynamics * (len(states) // 1000 + 2)
                times = time_callbacks(node, live, rng, names, args.floating, first_second, len(states))
            finally:
                handler_module.compute_outputs = compute_outputs
                node._publish_arrays = True
            what = "without the dynamics (one stored result)" if without_dynamics else "as by default"
            report(f"{label}, {len(states)} joint states, {timed} {what}", times)

        # The outputs alone, on the same all_terms results
        christoffel = args.christoffel
        inputs = []
        for msg in states:
            q, qd = full_state_of(live, msg, args.floating)
            # as the node computes them: Gamma only when it publishes it
            inputs.append((msg.header.stamp, q, qd, compute_outputs(model, q, qd, christoffel, served.frames)))
        template = live.state_template("odom" if args.floating else served.root_link, christoffel)[0]
        topics = [t for t in ARRAY_TOPICS if christoffel or t != "christoffel_symbols"]

        def state(stamp, q, qd, outputs):
            node._pub_state.publish(template.encode_one(state_values(served, q, qd, outputs, christoffel), stamp))

        def arrays(stamp, q, qd, outputs):
            terms = outputs[0]
            for topic in topics:
                node._pub_arrays[topic].publish(live.templates[topic].encode_one((getattr(terms, topic),)))
            node._pub_gravity.publish(live.templates["gravity_torques"].encode_one((terms.gravity_torques,), stamp))

        for case in inputs[:200]:
            state(*case)
            arrays(*case)
        cost = {"state": np.empty(len(inputs)), "arrays": np.empty(len(inputs))}
        for k, case in enumerate(inputs):
            for name, publish in (("state", state), ("arrays", arrays))[::1 if k % 2 else -1]:
                start = time.perf_counter()
                publish(*case)
                cost[name][k] = time.perf_counter() - start
        size = len(template.encode_one(state_values(served, *inputs[0][1:3], inputs[0][3], christoffel),
                                       inputs[0][0]))
        print(f"{label}: one DynamicsState is {size} bytes ({size * 1000 / 1e6:.1f} MB/s at 1 kHz)")
        report(f"  ~/state: serialize and publish", cost["state"])
        report(f"  {len(topics) + 1} array topics as before ~/state: serialize and publish", cost["arrays"])
        print(f"  ratio of means ~/state / arrays: {cost['state'].mean() / cost['arrays'].mean():.2f}")
        times = np.empty(len(inputs))
        for k, (_, q, qd, _) in enumerate(inputs):
            start = time.perf_counter()
            compute_outputs(model, q, qd, christoffel, served.frames)
            times[k] = time.perf_counter() - start
        report("  compute_outputs on the same states", times)
    finally:
        node.destroy_node()
        rclpy.shutdown()


if __name__ == "__main__":
    main()

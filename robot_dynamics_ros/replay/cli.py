"""Offline replay of a rosbag2 bag through the dynamics: ``robot_dynamics_replay``.

Reads the joint states of a bag (sqlite3 or MCAP) and writes a new bag with
what a default-launched ``robot_dynamics`` node would have published for them:
the same topics, message types, layouts, joint order and values, each output
stamped with its input's bag time (and, on ``gravity_torques``, its header
stamp); with --csv and --plot also a table and a plot, and then the bag is
optional. The joint states go through the batch dynamics in chunks, not one by
one. Model, payloads and messages are built as the node builds them
(``served.model``, ``messages``); ``bags`` does the bag files.

This module is the command line only; the work is done by ``inputs`` (model
and joint states), ``run`` (the chunked evaluation and the output bag),
``table``, ``plot`` and ``staging`` (outputs staged and moved into place),
and ``fleet`` for many bags.

Nothing is left at OUTPUT_BAG, --csv or --plot unless the replay succeeds: all
outputs are written under temporary names first and moved to their names at
the end, never over an existing path (two replays to one output: one wins, the
other fails and leaves the winner's files alone). A failure to write (missing
or read-only folder, full file system) and SIGTERM end the replay the same way
as bad input: a one-line error, exit status 1 (143 for SIGTERM), nothing left.
"""

import argparse
import signal
import sys
from pathlib import Path
from typing import Optional, Sequence

from robot_dynamics_ros.identification.residuals import Differentiator
from robot_dynamics_ros.replay import bags
from robot_dynamics_ros.replay.fleet import find_bags, run_fleet, split_output, summary_table
from robot_dynamics_ros.replay.run import output_topics, replay
from robot_dynamics_ros.replay.staging import TERMINATION, ReplayError, Terminated
from robot_dynamics_ros.served.model import PAYLOAD_ARGUMENTS, PAYLOAD_HELP

PROG = "robot_dynamics_replay"


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    """The replay's arguments, checked (``parser.error`` exits with the
    usage and the reason): the bags of INPUT found and OUTPUT split off."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Run the joint states of a rosbag2 bag (sqlite3 or MCAP) through the dynamics "
            "offline and write a bag with what a default-launched robot_dynamics node "
            "publishes for them: " + ", ".join(output_topics())
            + " (DynamicsState, one per joint state, and DynamicsModel, their definitions "
            "stored in the bag). Each DynamicsState has its input's bag time and copies its "
            "header stamp."),
    )
    for add_arguments in (_model_arguments, _output_arguments, _analysis_arguments, _fleet_arguments):
        add_arguments(parser)
    args = parser.parse_args(argv)
    _check_args(parser, args)
    return args


def _model_arguments(parser):
    """The bags, and the model and joint states to take from them, as the node's parameters."""
    parser.add_argument("paths", nargs="+", metavar="INPUT", type=str,
                        help="a bag (directory or .db3/.mcap file), then optionally OUTPUT_BAG: a new "
                        "bag directory (must not exist; optional with --csv, --plot, --residuals or "
                        "--identify-payload). Several bags, a folder of bags or a quoted glob make a "
                        "fleet, replayed in parallel; OUTPUT is then a new folder for each bag's "
                        "outputs and summary.csv")
    parser.add_argument("--urdf", type=Path, metavar="FILE",
                        help="URDF file; default: the first message on /robot_description in the bag")
    parser.add_argument("--payload", nargs=len(PAYLOAD_ARGUMENTS), action="append", default=[],
                        metavar=PAYLOAD_ARGUMENTS, help=PAYLOAD_HELP + "; repeat for more links")
    parser.add_argument("--frames", nargs="+", default=[], metavar="FRAME",
                        help="links whose pose, Jacobian and Jdot v each DynamicsState carries, as "
                        "the node's frames parameter (default: none)")
    parser.add_argument("--joint-states", default="/joint_states", metavar="TOPIC",
                        help="sensor_msgs/JointState topic to replay (default: %(default)s)")
    parser.add_argument("--base", choices=("auto", "fixed", "floating"), default="auto",
                        help="root of the model, as the node's base parameter: floating adds a "
                        "free-flyer joint to the world, auto does when the URDF declares a floating "
                        "root joint (default: %(default)s)")
    parser.add_argument("--odom-topic", default="/odom", metavar="TOPIC",
                        help="floating base: nav_msgs/Odometry topic with the root link's pose and "
                        "twist (default: %(default)s)")
    parser.add_argument("--base-state-timeout", type=float, default=0.1, metavar="SECONDS",
                        help="floating base: a joint state takes the newest odometry received "
                        "before it and stamped within this many seconds of it, as the node's "
                        "base_state_timeout (default: %(default)s)")


def _output_arguments(parser):
    """What is written: the output bag's contents and storage, the plot, the
    table, and the K_c interval every message carries."""
    parser.add_argument("--christoffel", action="store_true",
                        help="fill DynamicsState.christoffel_symbols (node parameter publish_christoffel)")
    parser.add_argument("--storage", choices=sorted(bags.STORAGES),
                        help="storage of the output bag (default: that of the input)")
    parser.add_argument("--plot", type=Path, metavar="PNG",
                        help="plot ||C||_2 with its bounds, eig(M) and g(q) over time")
    parser.add_argument("--csv", type=Path, metavar="CSV",
                        help="flat table: times, q, qd, bounds, g, M and C entries per joint state")
    parser.add_argument("--kc-certificate", type=Path, metavar="CERT",
                        help="a K_c certificate file (robot_dynamics_certify), or a directory of them "
                        "searched by model hash: a match is the interval of every message")
    parser.add_argument("--kc-time-budget", type=float, default=0.0, metavar="SECONDS",
                        help="without a certificate, seconds to tighten the guaranteed K_c interval "
                        "before replaying, so every message carries the final one (default: "
                        "%(default)s, the first guaranteed bound)")


def _analysis_arguments(parser):
    """The analyses of the efforts: residuals and payload
    identification, with the Savitzky-Golay derivative they take qdd from."""
    parser.add_argument("--residuals", action="store_true",
                        help="efforts minus ID(q, qd, qdd), qdd by a Savitzky-Golay derivative "
                        "of qd: a summary, per-joint statistics beside --csv (<stem>_residuals.csv) and "
                        "a panel in --plot")
    parser.add_argument("--identify-payload", metavar="LINK",
                        help="estimate the payload on LINK from the efforts by least squares and print "
                        "the ros2 param set / YAML lines that apply it")
    parser.add_argument("--sg-window", type=int, default=31, metavar="SAMPLES",
                        help="Savitzky-Golay window for accelerations, odd (default: %(default)s)")
    parser.add_argument("--sg-order", type=int, default=3, metavar="DEGREE",
                        help="Savitzky-Golay polynomial degree (default: %(default)s)")


def _fleet_arguments(parser):
    """Where a fleet of bags runs, and the terminal output."""
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="fleet: a Dask scheduler to run on (default: a local cluster)")
    parser.add_argument("--workers", type=int, metavar="N",
                        help="fleet: worker processes of the local cluster (default: one per core)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar and summary")


def _check_args(parser, args):
    """Sets ``args.inputs``, ``args.fleet``, ``args.input`` and
    ``args.output`` from the paths; ``parser.error`` for paths that name no
    bag, nothing to write, and settings out of range."""
    try:
        inputs, args.output = split_output(args.paths)
        args.inputs, args.fleet = find_bags(inputs)
    except ReplayError as error:
        parser.error(str(error))
    args.input = args.inputs[0]
    if args.fleet and args.storage and args.output is None:
        parser.error("--storage: a fleet writes bags only into an OUTPUT folder")
    if args.output is None and not (args.csv or args.plot or args.residuals or args.identify_payload):
        parser.error("nothing to write: give OUTPUT_BAG, --csv or --plot, or ask for --residuals or "
                     "--identify-payload")
    try:
        Differentiator(args.sg_window, args.sg_order)
    except ValueError as error:
        parser.error(str(error))
    if args.workers is not None and args.workers < 1:
        parser.error(f"--workers must be at least 1, got {args.workers}")
    if not 0.0 <= args.kc_time_budget < float("inf"):
        parser.error(f"--kc-time-budget must be a number of seconds >= 0, got {args.kc_time_budget}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    if args.fleet:
        return main_fleet(args)
    previous = signal.signal(signal.SIGTERM, TERMINATION.handler)
    try:
        summary = replay(args)
    except (ReplayError, bags.BagError) as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 1
    except Terminated:
        print(f"{PROG}: error: terminated (SIGTERM); nothing partial left", file=sys.stderr)
        return 128 + signal.SIGTERM
    finally:
        signal.signal(signal.SIGTERM, previous)
    if not args.quiet:
        rate = summary["processed"] / max(summary["seconds"], 1e-9)
        written = [str(path) for path in (args.csv, args.plot) if path]
        if args.output:
            written.insert(0, f"{str(args.output)!r} ({summary['storage']}): {', '.join(summary['topics'])}")
        print(f"{summary['processed']} of {summary['read']} joint states replayed in "
              f"{summary['seconds']:.1f} s ({rate:,.0f}/s) into {'; '.join(written)}")
        lower, upper, finished = summary["kc_interval"]
        source = summary["kc_source"]
        how = (f"from the certificate {summary['kc_certificate']}" if source == "certificate"
               else "refinement finished" if finished else "refinement stopped by --kc-time-budget")
        print(f"K_c in [{lower:.6g}, {upper:.6g}] (guaranteed upper bound; {how})")
        for kind, count in summary["dropped"].items():
            print(f"dropped {count} ({kind}), e.g.: {summary['reasons'][kind]}", file=sys.stderr)
    for warning in summary["warnings"]:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    if summary["residuals"] is not None:
        print(summary["residuals"].summary())
    if summary["payload"] is not None:
        print(summary["payload"].report())
    return 0


def main_fleet(args) -> int:
    """A fleet: the summary table; exit status 1 when any bag failed."""
    try:
        rows = run_fleet(args.inputs, args, args.output)
    except (ReplayError, OSError) as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 1
    print(summary_table(rows))
    failed = [row for row in rows if row["error"]]
    if failed:
        print(f"{PROG}: error: {len(failed)} of {len(rows)} bags failed", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

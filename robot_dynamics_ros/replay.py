"""Offline replay of a rosbag2 bag through the dynamics: ``robot_dynamics_replay``.

Reads the joint states of a bag (sqlite3 or MCAP) and writes a new bag with
what a default-launched ``robot_dynamics`` node would have published for them:
the same topics, message types, layouts, joint order and values, each output
stamped with its input's bag time (and, on ``gravity_torques``, its header
stamp); with --csv and --plot also a table and a plot, and then the bag is
optional. The joint states go through the batch dynamics in chunks, not one by
one. Model, payloads and messages are built by the node's own modules
(``model_source``, ``messages``); ``bag_io`` does the bag files.

Nothing is left at OUTPUT_BAG, --csv or --plot unless the replay succeeds: all
outputs are written under temporary names first and moved to their names at
the end, never over an existing path (two replays to one output: one wins, the
other fails and leaves the winner's files alone). A failure to write (missing
or read-only folder, full file system) and SIGTERM end the replay the same way
as bad input: a one-line error, exit status 1 (143 for SIGTERM), nothing left.
"""

import argparse
import contextlib
import csv
import errno
import io
import os
import shutil
import signal
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, Optional, Sequence

import numpy as np

from robot_dynamics_ros import bag_io
from robot_dynamics_ros.base_state import BaseStatePairing, BaseStateRejected, full_state
from robot_dynamics_ros.cdr import serialize
from robot_dynamics_ros.dynamics import coriolis_constant_interval
from robot_dynamics_ros.dynamics import BOUNDS_FIELDS
from robot_dynamics_ros.messages import JointStateMatcher, JointStateRejected
from robot_dynamics_ros.model_source import Payload, ServedModel, load_description, read_description_file
from robot_dynamics_ros.outputs import compute_outputs, model_message, state_frame, state_template, state_values

PROG = "robot_dynamics_replay"
# The node's "~/name" topics resolved for its default name in the root namespace.
NODE_PREFIX = "/robot_dynamics/"
# Joint states per batch call: large enough that per-call overhead vanishes,
# small enough that a chunk's outputs (Christoffel: n^3 doubles each) stay a
# few tens of MB.
CHUNK = 2048


class ReplayError(Exception):
    """Input the replay cannot use; the message says what and where."""


class Terminated(BaseException):
    """SIGTERM arrived: unwind like KeyboardInterrupt (past every `except Exception`),
    so the staged outputs are removed."""


class _Termination:
    """The SIGTERM handler, held off while a staged file exists but is not yet
    recorded (it would be left behind), or while outputs move into place."""

    def __init__(self):
        self.depth = 0
        self.pending = False

    def handler(self, signum, frame):
        if self.depth:
            self.pending = True
        else:
            raise Terminated()

    @contextlib.contextmanager
    def deferred(self):
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            if not self.depth and self.pending:
                self.pending = False
                raise Terminated()


TERMINATION = _Termination()


def output_topics() -> Dict[str, str]:
    """Topic -> message type of the output bag: the node's ``~/state`` and ``~/model``."""
    return {NODE_PREFIX + "state": bag_io.DYNAMICS_STATE, NODE_PREFIX + "model": bag_io.DYNAMICS_MODEL}


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
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
    parser.add_argument("input", type=Path, metavar="INPUT_BAG", help="bag directory or .db3/.mcap file")
    parser.add_argument("output", type=Path, metavar="OUTPUT_BAG", nargs="?",
                        help="new bag directory (must not exist); optional with --csv or --plot")
    parser.add_argument("--urdf", type=Path, metavar="FILE",
                        help="URDF file; default: the first message on /robot_description in the bag")
    parser.add_argument("--payload", nargs=11, action="append", default=[],
                        metavar=("LINK", "MASS", "X", "Y", "Z", "IXX", "IXY", "IXZ", "IYY", "IYZ", "IZZ"),
                        help="rigid payload on LINK: kg, CoM in the link frame (m), inertia about the "
                        "CoM in link axes (kg m^2); repeat for more links")
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
    parser.add_argument("--christoffel", action="store_true",
                        help="fill DynamicsState.christoffel_symbols (node parameter publish_christoffel)")
    parser.add_argument("--storage", choices=sorted(bag_io.STORAGES),
                        help="storage of the output bag (default: that of the input)")
    parser.add_argument("--plot", type=Path, metavar="PNG",
                        help="plot ||C||_2 with its bounds, eig(M) and g(q) over time")
    parser.add_argument("--csv", type=Path, metavar="CSV",
                        help="flat table: times, q, qd, bounds, g, M and C entries per joint state")
    parser.add_argument("--kc-time-budget", type=float, default=60.0, metavar="SECONDS",
                        help="seconds to tighten the guaranteed K_c interval before replaying, so every "
                        "message carries the final one (default: %(default)s; the node does this in "
                        "the background)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar and summary")
    args = parser.parse_args(argv)
    if args.output is None and args.csv is None and args.plot is None:
        parser.error("nothing to write: give OUTPUT_BAG, --csv or --plot")
    if not 0.0 <= args.kc_time_budget < float("inf"):
        parser.error(f"--kc-time-budget must be a number of seconds >= 0, got {args.kc_time_budget}")
    return args


def payloads_from_args(values) -> list:
    payloads = []
    for link, *numbers in values:
        try:
            mass, *rest = (float(x) for x in numbers)
        except ValueError as error:
            raise ReplayError(f"--payload {link}: {error}") from error
        payloads.append(Payload.create(link, mass, rest[:3], rest[3:]))
    return payloads


def load_model(reader, args, input_path: Path) -> ServedModel:
    """The model the node would serve: --urdf, else the bag's /robot_description."""
    if args.urdf is not None:
        origin = f"URDF file {str(args.urdf)!r}"
        try:
            text = read_description_file(args.urdf)
        except ValueError as error:
            raise ReplayError(str(error)) from error
    else:
        origin = "/robot_description in the bag"
        connections = bag_io.topic_connections(reader, "/robot_description", bag_io.STRING)
        msg = bag_io.read_first(reader, connections, input_path)
        if msg is None:
            raise ReplayError(f"no /robot_description message in {str(input_path)!r}; pass --urdf FILE")
        text = msg.data
    try:
        return load_description(text, base=args.base, payloads=payloads_from_args(args.payload))
    except ValueError as error:
        raise ReplayError(f"model from {origin}: {error}") from error


class OutputStreams:
    """The node's ``~/state`` and ``~/model`` on a rosbags Writer: one
    DynamicsState per joint state (the node's bytes, from its templates) and
    the DynamicsModel, revision 1, before the first of them."""

    def __init__(self, writer, served: ServedModel, christoffel: bool, kc_interval, kc_source: str):
        self.writer = writer
        self.served = served
        self.christoffel = christoffel
        (state_topic, state_type), (model_topic, model_type) = output_topics().items()
        self.state = writer.add_connection(state_topic, state_type, typestore=bag_io.TYPESTORE)
        self.model = writer.add_connection(model_topic, model_type, typestore=bag_io.TYPESTORE)
        self._model_cdr = serialize(model_message(served, 1, kc_interval, kc_source))
        self._templates = {}  # frame_id -> the state template

    def write(self, times: np.ndarray, stamps: np.ndarray, frames, q, qd, outputs):
        """One DynamicsState per joint state, at the input times; ``frames``:
        each one's odometry frame (floating base), or None."""
        if self._model_cdr is not None:
            self.writer.write(self.model, int(times[0]), self._model_cdr)
            self._model_cdr = None
        values = state_values(self.served, q, qd, outputs, self.christoffel, batch=True)
        frames = np.array([state_frame(self.served)] * len(times) if frames is None else frames)
        rows = [None] * len(times)
        for frame in np.unique(frames):  # one, but for odometry that changes its frame
            template = self._templates.get(frame)
            if template is None:
                template = self._templates[frame] = state_template(self.served, 1, str(frame),
                                                                   self.christoffel)
            take = np.flatnonzero(frames == frame)
            for i, row in zip(take.tolist(), template.encode([v[take] for v in values], stamps[take])):
                rows[i] = row
        write = self.writer.write
        for t, row in zip(times.tolist(), rows):
            write(self.state, t, row.tobytes())


def match_chunk(matcher: JointStateMatcher, times, raws, dropped: Counter, reasons: dict, path: Path):
    """(times, stamps (k, 2), q, qd) of the usable messages of a chunk, by the node's rules.

    Groups that ``bag_io`` read as arrays are checked by ``matcher.match`` on
    their first message (names and lengths are the same for the whole group)
    and take their columns with ``matcher.indices``. Every other message, and
    any with a non-finite value, goes through ``matcher.match`` alone, which
    drops it with the node's reason.
    """
    count, n = len(raws), len(matcher.joint_names)
    q, qd = np.zeros((count, n)), np.zeros((count, n))
    stamps = np.zeros((count, 2), dtype=np.int64)
    usable = np.zeros(count, dtype=bool)
    groups, alone = bag_io.decode_joint_states(raws, path)
    for group in groups:
        try:
            matcher.match(group.template)
        except JointStateRejected:
            alone.extend(group.rows.tolist())
            continue
        take = matcher.indices(group.template.name)
        group_q = group.position[:, take]
        group_qd = group.velocity[:, take] if group.velocity.shape[1] else np.zeros_like(group_q)
        finite = np.isfinite(group_q).all(axis=1) & np.isfinite(group_qd).all(axis=1)
        rows = group.rows[finite]
        q[rows], qd[rows], stamps[rows], usable[rows] = group_q[finite], group_qd[finite], group.stamps[finite], True
        alone.extend(group.rows[~finite].tolist())
    for i in alone:
        msg = bag_io.deserialize(raws[i], bag_io.JOINT_STATE, path)
        try:
            q[i], qd[i] = matcher.match(msg)
        except JointStateRejected as error:
            dropped[error.kind] += 1
            reasons.setdefault(error.kind, str(error))
            continue
        stamps[i] = msg.header.stamp.sec, msg.header.stamp.nanosec
        usable[i] = True
    return times[usable], stamps[usable], q[usable], qd[usable]


class BaseStates:
    """Floating base: the bag's odometry, fed in bag-time order to the node's
    pairing (``base_state``), so each joint state gets the base state the node
    would have given it: the newest odometry received before it (bag time)
    and stamped within the timeout of its stamp."""

    def __init__(self, reader, served: ServedModel, args):
        connections = bag_io.topic_connections(reader, args.odom_topic, bag_io.ODOMETRY)
        if not connections:
            topics = ", ".join(f"{c.topic} ({c.msgtype})" for c in reader.connections) or "none"
            raise ReplayError(
                f"the model {served.model.name!r} has a floating base, whose state comes from "
                f"nav_msgs/Odometry, and there is no {args.odom_topic} topic in "
                f"{str(args.input)!r} (name it with --odom-topic, or pass --base fixed); "
                f"topics: {topics}")
        try:
            self.pairing = BaseStatePairing(args.base_state_timeout)
        except ValueError as error:
            raise ReplayError(f"--base-state-timeout: {error}") from error
        self._root_link = served.root_link
        self._frames = served.base_frames
        self._path = args.input
        self._chunks = bag_io.read_chunks(reader, connections, CHUNK, args.input)
        self._times, self._raws, self._next = [], [], 0

    def _receive_until(self, bag_time: int, reasons: dict):
        """Hand the pairing every odometry message with a bag time up to ``bag_time``."""
        while True:
            if self._next == len(self._raws):
                chunk = next(self._chunks, None)
                if chunk is None:
                    return
                (times, self._raws), self._next = chunk, 0
                self._times = times.tolist()
            if self._times[self._next] > bag_time:
                return
            msg = bag_io.deserialize(self._raws[self._next], bag_io.ODOMETRY, self._path)
            self._next += 1
            try:
                self.pairing.add(msg, self._frames)
            except BaseStateRejected as error:  # counted by the pairing
                reasons.setdefault(f"odometry_{error.kind}", str(error))

    def pair(self, times, stamps, q, qd, dropped: Counter, reasons: dict):
        """(times, stamps, odometry frames, q, v) of the joint states that have a
        base state, with it."""
        usable = np.zeros(len(times), dtype=bool)
        position, velocity = np.zeros((len(times), 7)), np.zeros((len(times), 6))
        frames = [""] * len(times)
        for i, (bag_time, (sec, nanosec)) in enumerate(zip(times.tolist(), stamps.tolist())):
            self._receive_until(bag_time, reasons)
            try:
                base = self.pairing.pair(sec * 1_000_000_000 + nanosec, self._root_link)
            except BaseStateRejected as error:
                dropped[error.kind] += 1
                reasons.setdefault(error.kind, str(error))
                continue
            position[i], velocity[i], usable[i] = base.position, base.velocity, True
            frames[i] = base.frame_id
        q, qd = full_state(position[usable], velocity[usable], q[usable], qd[usable])
        return times[usable], stamps[usable], [f for f, u in zip(frames, usable) if u], q, qd

    def refused(self) -> dict:
        """Odometry messages refused, by reason, as the summary counts them."""
        return {f"odometry_{kind}": n for kind, n in self.pairing.refused.items()}


class Progress:
    """A one-line progress bar on stderr, only when it is a terminal."""

    def __init__(self, total: int, enabled: bool):
        self.total = max(total, 1)
        self.enabled = enabled and sys.stderr.isatty()
        self.start = time.perf_counter()

    def update(self, done: int):
        if not self.enabled:
            return
        width = 30
        filled = int(width * min(done / self.total, 1.0))
        rate = done / max(time.perf_counter() - self.start, 1e-9)
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{self.total} "
                         f"joint states, {rate:,.0f}/s ")
        sys.stderr.flush()

    def close(self):
        if self.enabled:
            sys.stderr.write("\n")


class CsvTable:
    """--csv: one row per processed joint state, written chunk by chunk."""

    def __init__(self, handle, served: ServedModel):
        self.handle = handle
        positions = served.model.configuration_names
        velocities = served.coordinates
        n = len(velocities)
        cells = [f"[{r}][{c}]" for r in range(n) for c in range(n)]
        header = (["bag_time_ns", "stamp_sec", "stamp_nanosec"]
                  + [f"q[{j}]" for j in positions] + [f"qd[{j}]" for j in velocities]
                  + list(BOUNDS_FIELDS) + [f"gravity_torques[{j}]" for j in velocities]
                  + ["mass_matrix" + c for c in cells] + ["coriolis_matrix" + c for c in cells])
        # quoted where needed: a URDF's joint names may hold commas, quotes, newlines
        csv.writer(handle, lineterminator="\n").writerow(header)

    def write(self, times, stamps, q, qd, outputs):
        count = len(times)
        values = np.column_stack([
            q, qd, outputs.coriolis_bounds, outputs.gravity_torques,
            outputs.mass_matrix.reshape(count, -1), outputs.coriolis_matrix.reshape(count, -1)])
        text = io.StringIO()
        np.savetxt(text, values, fmt="%.17g", delimiter=",")
        # Times are int64 nanoseconds: formatted apart, a float64 would round them.
        for t, (sec, nanosec), line in zip(times.tolist(), stamps.tolist(), text.getvalue().splitlines()):
            self.handle.write(f"{t},{sec},{nanosec},{line}\n")


# Legends beside the axes, so that no curve hides under them.
OUTSIDE = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "borderaxespad": 0.0}


class PlotSeries:
    """--plot: the few series the figure needs, gathered chunk by chunk."""

    def __init__(self):
        self.parts = []

    def add(self, times, qd, outputs):
        bounds = outputs.coriolis_bounds
        field = {name: bounds[:, i] for i, name in enumerate(BOUNDS_FIELDS)}
        self.parts.append((
            times, field["coriolis_norm"], field["coriolis_bound"],
            field["kc_global"] * np.linalg.norm(qd, axis=-1),
            np.linalg.eigvalsh(outputs.mass_matrix), outputs.gravity_torques))

    def save(self, path: Path, fmt: str, joints: Sequence[str], title: str):
        import matplotlib.pyplot as plt

        times, norm, bound, global_bound, eig, gravity = (np.concatenate(x) for x in zip(*self.parts))
        seconds = (times - times[0]) / 1e9
        fig, axes = plt.subplots(3, 1, sharex=True, figsize=(13, 10), constrained_layout=True)
        ax = axes[0]
        ax.plot(seconds, global_bound, color="tab:red", lw=1.0, label=r"$K_c\,\|\dot q\|$ (global bound)")
        ax.plot(seconds, bound, color="tab:orange", lw=1.0, label=r"$k_c(q)\,\|\dot q\|$ (configuration bound)")
        ax.plot(seconds, norm, color="tab:blue", lw=1.0, label=r"$\|C(q, \dot q)\|_2$")
        ax.set_ylabel("Coriolis matrix norm\n[N m s/rad]")
        ax.set_title(f"{title}: Coriolis matrix and its bounds")
        ax.legend(**OUTSIDE, fontsize="small")
        ax = axes[1]
        for i in range(eig.shape[1]):
            ax.plot(seconds, eig[:, i], lw=1.0, label=rf"$\lambda_{{{i + 1}}}$")
        ax.set_yscale("log")
        ax.set_ylabel("eigenvalues of M(q)\n[kg m$^2$]")
        ax.set_title("Mass matrix spectrum (log scale)")
        ax.legend(**OUTSIDE, fontsize="small", ncol=1 + eig.shape[1] // 10)
        ax = axes[2]
        for i, joint in enumerate(joints):
            ax.plot(seconds, gravity[:, i], lw=1.0, label=joint)
        ax.set_ylabel("gravity torque g(q)\n[N m; N for prismatic]")
        ax.set_title("Gravity torques")
        ax.set_xlabel("time since the first joint state [s]")
        ax.legend(**OUTSIDE, fontsize="small", ncol=1 + len(joints) // 10)
        for ax in axes:
            ax.grid(True, alpha=0.3)
        fig.savefig(path, format=fmt, dpi=110)
        plt.close(fig)


class StagedOutputs:
    """Each output is written under a hidden temporary name beside it; commit() renames."""

    def __init__(self):
        self.outputs = []  # (temporary path, final path, folder to remove)

    def bag(self, final: Path) -> Path:
        # The bag keeps its final name inside a hidden folder, so its storage
        # file (named after the bag directory) is already named right.
        with TERMINATION.deferred():
            folder = Path(tempfile.mkdtemp(prefix=f".{final.name}.partial-", dir=final.absolute().parent))
            self.outputs.append((folder / final.name, final, folder))
        return folder / final.name

    def file(self, final: Path) -> Path:
        with TERMINATION.deferred():
            handle, name = tempfile.mkstemp(prefix=f".{final.name}.partial-", suffix=final.suffix,
                                            dir=final.absolute().parent)
            self.outputs.append((Path(name), final, None))
        os.close(handle)
        # mkstemp makes the file private (0600); the output gets the usual umask mode.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(name, 0o666 & ~umask)
        return Path(name)

    def commit(self):
        """Move the files first and the bag last (a complete bag means a complete
        replay), each only where nothing exists: a hard link for a file, an
        exclusive mkdir and a rename onto that empty folder for the bag. On a
        failure the outputs moved so far are taken back."""
        with TERMINATION.deferred():
            self._move_into_place()

    def _move_into_place(self):
        done = []
        try:
            for staged, final, folder in sorted(self.outputs, key=lambda o: o[2] is not None):
                if folder is None:
                    os.link(staged, final)
                    done.append(final)
                    os.unlink(staged)
                else:
                    os.mkdir(final)
                    done.append(final)
                    os.rename(staged, final)
        except OSError as error:
            for final in reversed(done):
                if final.is_dir():
                    shutil.rmtree(final, ignore_errors=True)
                else:
                    final.unlink()
            if error.errno == errno.EEXIST:
                raise ReplayError(f"{str(error.filename2 or error.filename)!r} was created by "
                                  "someone else during the replay; not overwriting it") from error
            raise

    def discard(self):
        with TERMINATION.deferred():
            for staged, _, folder in self.outputs:
                if folder is not None:
                    shutil.rmtree(folder, ignore_errors=True)
                elif staged.exists():
                    staged.unlink()


def plot_format(path: Path) -> str:
    """The image format matplotlib will write for ``path``, checked before any work."""
    try:
        import matplotlib
    except ImportError as error:
        raise ReplayError(f"--plot needs matplotlib (pip install matplotlib): {error}") from error
    matplotlib.use("Agg")  # files only: no display needed
    from matplotlib.figure import Figure

    fmt = path.suffix.lstrip(".").lower() or "png"
    supported = Figure().canvas.get_supported_filetypes()
    if fmt not in supported:
        raise ReplayError(f"--plot {str(path)!r}: no image format {fmt!r}; "
                          f"use one of {', '.join(sorted(supported))}")
    return fmt


def check_output_paths(paths: Sequence[Optional[Path]]):
    """Each output a new, distinct path in an existing folder, before any work."""
    given = [path for path in paths if path is not None]
    seen = {}
    for path in given:
        # lexists: a dangling symlink exists too, and writing through it is refused.
        if os.path.lexists(path):
            raise ReplayError(f"{str(path)!r} exists already; not overwriting it")
        parent = path.absolute().parent
        if not parent.is_dir():
            raise ReplayError(f"cannot write {str(path)!r}: {str(parent)!r} is not a directory")
        key = os.path.realpath(path)
        if key in seen:
            raise ReplayError(f"{str(seen[key])!r} and {str(path)!r} name the same file; "
                              "each output needs its own")
        seen[key] = path


def replay(args) -> dict:
    """Run the replay described by parsed arguments; returns a summary."""
    check_output_paths((args.output, args.csv, args.plot))
    if args.plot:
        args.plot_format = plot_format(args.plot)
    reader = bag_io.open_reader(args.input)
    try:
        served = load_model(reader, args, args.input)
        connections = bag_io.topic_connections(reader, args.joint_states, bag_io.JOINT_STATE)
        if not connections:
            topics = ", ".join(f"{c.topic} ({c.msgtype})" for c in reader.connections) or "none"
            raise ReplayError(f"no {args.joint_states} topic in {str(args.input)!r}; topics: {topics}")
        base_states = BaseStates(reader, served, args) if served.base else None
        # after every check of the bag: a refused replay does not wait for K_c
        kc = coriolis_constant_interval(served.model, time_budget=args.kc_time_budget)
        staged = StagedOutputs()
        try:
            summary = run(reader, connections, served, base_states, args, staged, kc)
            summary["kc_interval"] = (kc.lower, kc.upper, kc.finished)
            staged.commit()
        # sqlite3.Error: the sqlite3 storage reports a full disk as its own error.
        except (OSError, sqlite3.Error) as error:
            raise ReplayError(f"cannot write the outputs: {error}") from error
        finally:
            staged.discard()
    finally:
        reader.close()
    return summary


def run(reader, connections, served: ServedModel, base_states, args, staged: StagedOutputs, kc) -> dict:
    storage = args.storage or bag_io.storage_of(args.input)
    writer = bag_io.open_writer(staged.bag(args.output), storage) if args.output else None
    csv_handle = open(staged.file(args.csv), "w") if args.csv else None
    try:
        streams = OutputStreams(writer, served, args.christoffel, (kc.lower, kc.upper),
                                "refined" if args.kc_time_budget > 0 else "first_bound") if writer else None
        table = CsvTable(csv_handle, served) if csv_handle else None
        series = PlotSeries() if args.plot else None
        matcher = JointStateMatcher(served.model.joint_names)
        dropped, reasons = Counter(), {}
        total = sum(c.msgcount for c in connections)
        progress = Progress(total, not args.quiet)
        processed = read = 0
        start = time.perf_counter()

        def finish(chunk):
            """Write a chunk whose outputs were computed on the side thread."""
            nonlocal processed
            outputs, times, stamps, frames, q, qd = chunk
            try:
                outputs = outputs.result()
            # The node drops such a joint state; offline, a numerics
            # failure is reported rather than left as a hole in the output.
            except (ValueError, ArithmeticError) as error:
                raise ReplayError(
                    f"the dynamics failed on the joint states at bag times {times[0]} to "
                    f"{times[-1]} ns: {type(error).__name__}: {error}") from error
            if streams:
                streams.write(times, stamps, frames, q, qd, outputs)
            if table:
                table.write(times, stamps, q, qd, outputs)
            if series:
                series.add(times, qd, outputs)
            processed += len(times)

        # The numerics release the GIL: chunk k + 1 is computed while chunk k
        # is encoded and written (rosbags' writer is Python, one core).
        pending = None
        try:
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="replay") as ahead:
                for times, raws in bag_io.read_chunks(reader, connections, CHUNK, args.input):
                    read += len(raws)
                    times, stamps, q, qd = match_chunk(matcher, times, raws, dropped, reasons, args.input)
                    frames = None
                    if base_states:
                        times, stamps, frames, q, qd = base_states.pair(
                            times, stamps, q, qd, dropped, reasons)
                    chunk = (ahead.submit(compute_outputs, served.model, q, qd),
                             times, stamps, frames, q, qd) if len(times) else None
                    if pending:
                        finish(pending)
                    pending = chunk
                    progress.update(read)
                if pending:
                    finish(pending)
        finally:
            progress.close()
        if base_states:
            dropped.update(base_states.refused())
        if processed == 0:
            why = "; ".join(f"{kind}: {reason}" for kind, reason in reasons.items())
            raise ReplayError(f"none of the {read} joint states on {args.joint_states} matches "
                              f"the model {served.model.name!r} ({why or 'no messages'})")
        if writer:
            writer.close()
        elapsed = time.perf_counter() - start
    except BaseException:
        if writer and writer.storage is not None:
            writer.abort()
        raise
    finally:
        if csv_handle:
            csv_handle.close()
    if series:
        series.save(staged.file(args.plot), args.plot_format, served.coordinates,
                    f"{served.model.name}, {args.input.name}")
    return {"read": read, "processed": processed, "dropped": dict(dropped), "reasons": reasons,
            "seconds": elapsed, "storage": storage, "topics": output_topics()}


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    previous = signal.signal(signal.SIGTERM, TERMINATION.handler)
    try:
        summary = replay(args)
    except (ReplayError, bag_io.BagError) as error:
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
        print(f"K_c in [{lower:.6g}, {upper:.6g}] (guaranteed upper bound; "
              f"{'refinement finished' if finished else 'refinement stopped by --kc-time-budget'})")
        for kind, count in summary["dropped"].items():
            print(f"dropped {count} ({kind}), e.g.: {summary['reasons'][kind]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

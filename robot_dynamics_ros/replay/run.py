"""One bag replayed: its joint states read in chunks, evaluated by the batch
dynamics (chunk k + 1 computed while chunk k is written), and written to the
output bag, the CSV and the plot series.
"""

import sqlite3
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Dict

import numpy as np

from robot_dynamics_ros.replay import bags
from robot_dynamics_ros.messages.cdr import serialize
from robot_dynamics_ros.dynamics import coriolis_constant_interval
from robot_dynamics_ros.dynamics.kc.certificate import CertificateError, serve_certificate
from robot_dynamics_ros.messages.inputs import JointStateMatcher
from robot_dynamics_ros.served.model import ServedModel
from robot_dynamics_ros.messages.outputs import compute_outputs, model_message, state_frame, state_template, state_values
from robot_dynamics_ros.replay.analysis import EffortSeries, analyse, residual_table_path, write_residual_table
from robot_dynamics_ros.replay.table import CsvTable
from robot_dynamics_ros.replay.inputs import CHUNK, BaseStates, load_model, match_chunk
from robot_dynamics_ros.replay.plot import PlotSeries, plot_format
from robot_dynamics_ros.replay.staging import TERMINATION, ReplayError, StagedOutputs, check_output_paths

# The node's "~/name" topics resolved for its default name in the root namespace.
NODE_PREFIX = "/robot_dynamics/"


def output_topics() -> Dict[str, str]:
    """Topic -> message type of the output bag: the node's ``~/state`` and ``~/model``."""
    return {NODE_PREFIX + "state": bags.DYNAMICS_STATE, NODE_PREFIX + "model": bags.DYNAMICS_MODEL}


class OutputStreams:
    """The node's ``~/state`` and ``~/model`` on a rosbags Writer: one
    DynamicsState per joint state (the node's bytes, from its templates) and
    the DynamicsModel, revision 1, before the first of them."""

    def __init__(self, writer, served: ServedModel, christoffel: bool, kc_interval, kc_source: str,
                 kc_certificate: str = ""):
        self.writer = writer
        self.served = served
        self.christoffel = christoffel
        (state_topic, state_type), (model_topic, model_type) = output_topics().items()
        self.state = writer.add_connection(state_topic, state_type, typestore=bags.TYPESTORE)
        self.model = writer.add_connection(model_topic, model_type, typestore=bags.TYPESTORE)
        self._model_cdr = serialize(model_message(served, 1, kc_interval, kc_source, kc_certificate))
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


class _NoBar:
    def update(self, count):
        pass

    def close(self):
        pass


def progress_bar(total: int, enabled: bool, unit: str = "joint state"):
    """A tqdm bar on stderr when it is a terminal, else nothing. Made with
    SIGTERM held off: a tqdm interrupted in its constructor fails again in
    its destructor."""
    if not (enabled and sys.stderr.isatty()):
        return _NoBar()
    from tqdm import tqdm

    with TERMINATION.deferred():
        return tqdm(total=total, unit=f" {unit}s", unit_scale=True, dynamic_ncols=True, leave=False)


def replay(args) -> dict:
    """Run the replay described by parsed arguments; returns a summary."""
    residual_table = residual_table_path(args.csv) if args.csv and args.residuals else None
    check_output_paths((args.output, args.csv, args.plot, residual_table))
    if args.plot:
        args.plot_format = plot_format(args.plot)
    reader = bags.open_reader(args.input)
    try:
        served = load_model(reader, args, args.input)
        connections = bags.topic_connections(reader, args.joint_states, bags.JOINT_STATE)
        if not connections:
            topics = ", ".join(f"{c.topic} ({c.msgtype})" for c in reader.connections) or "none"
            raise ReplayError(f"no {args.joint_states} topic in {str(args.input)!r}; topics: {topics}")
        base_states = BaseStates(reader, served, args) if served.base else None
        certificate = served_certificate(served.model, args.kc_certificate)
        # after every check of the bag: a refused replay does not wait for K_c
        if not certificate and args.kc_time_budget > 0 and not args.quiet and sys.stderr.isatty():
            print(f"tightening the guaranteed K_c interval for up to {args.kc_time_budget:g} s "
                  "(--kc-time-budget) ...", file=sys.stderr, flush=True)
        kc = coriolis_constant_interval(served.model, time_budget=0.0 if certificate else args.kc_time_budget)
        source = ("certificate" if certificate else "refined" if args.kc_time_budget > 0 else "first_bound")
        staged = StagedOutputs()
        try:
            summary = run(reader, connections, served, base_states, args, staged, kc, source, certificate)
            summary.update(kc_interval=(kc.lower, kc.upper, kc.finished), kc_source=source,
                           kc_certificate=certificate)
            staged.commit()
        # sqlite3.Error: the sqlite3 storage reports a full disk as its own error.
        except (OSError, sqlite3.Error) as error:
            raise ReplayError(f"cannot write the outputs: {error}") from error
        finally:
            staged.discard()
    finally:
        reader.close()
    return summary


def served_certificate(model, location) -> str:
    """The certificate file that now serves ``model``'s K_c interval
    (``--kc-certificate``), or "" when none was given or a directory holds
    none for it; ReplayError for a file made for another model."""
    if location is None:
        return ""
    try:
        certificate = serve_certificate(model, location)
    except (CertificateError, OSError) as error:
        raise ReplayError(f"--kc-certificate {location}: {error}") from error
    return str(certificate.path) if certificate is not None else ""


def run(reader, connections, served: ServedModel, base_states, args, staged: StagedOutputs, kc,
        kc_source: str, certificate: str = "") -> dict:
    """Replay the joint states of ``connections`` into the staged outputs
    (the bag, the CSV table, the plot) and analyse their efforts; returns
    the summary (``replay`` adds the K_c interval to it). A failed output
    bag is aborted, the CSV file closed either way."""
    storage = args.storage or bags.storage_of(args.input)
    writer = bags.open_writer(staged.bag(args.output), storage) if args.output else None
    csv_handle = open(staged.file(args.csv), "w") if args.csv else None
    try:
        streams = OutputStreams(writer, served, args.christoffel, (kc.lower, kc.upper), kc_source,
                                certificate) if writer else None
        table = CsvTable(csv_handle, served) if csv_handle else None
        series = PlotSeries() if args.plot else None
        efforts = EffortSeries() if args.residuals or args.identify_payload else None
        outputs = _ChunkOutputs(streams, table, series)
        progress = progress_bar(sum(c.msgcount for c in connections), not args.quiet)
        start = time.perf_counter()
        read, dropped, reasons = _replay_chunks(reader, connections, served, base_states, args, efforts,
                                                outputs, progress)
        if outputs.processed == 0:
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
    warnings = []
    analysis = analyse(served, efforts, args, warnings)
    if analysis["residuals"] is not None and args.csv:
        write_residual_table(staged.file(residual_table_path(args.csv)), analysis["residuals"])
    if series:
        series.save(staged.file(args.plot), args.plot_format, served.coordinates,
                    f"{served.model.name}, {args.input.name}", analysis["residuals"])
    return {"read": read, "processed": outputs.processed, "dropped": dict(dropped), "reasons": reasons,
            "seconds": elapsed, "storage": storage, "topics": output_topics(), "warnings": warnings,
            "duration": outputs.duration, **analysis}


class _ChunkOutputs:
    """The per-state outputs of one replay (the bag's streams, the CSV
    table, the plot series; each None when not asked for), written a chunk
    at a time, with the count of joint states written and the bag times of
    the first and last."""

    def __init__(self, streams, table, series):
        self.streams = streams
        self.table = table
        self.series = series
        self.processed = 0
        self.times_span = []  # bag times of the first and last joint state replayed

    @property
    def writes(self) -> bool:
        """Something takes the per-state dynamics (else only --residuals or
        --identify-payload: no per-state dynamics to compute)."""
        return bool(self.streams or self.table or self.series)

    @property
    def duration(self) -> float:
        """Seconds of bag time from the first joint state written to the last."""
        return (self.times_span[1] - self.times_span[0]) / 1e9 if self.times_span else 0.0

    def finish(self, chunk):
        """Write a chunk whose outputs were computed on the side thread."""
        outputs, times, stamps, frames, q, qd = chunk
        try:
            outputs = outputs.result() if outputs is not None else None
        # The node drops such a joint state; offline, a numerics
        # failure is reported rather than left as a hole in the output.
        except (ValueError, ArithmeticError) as error:
            raise ReplayError(
                f"the dynamics failed on the joint states at bag times {times[0]} to "
                f"{times[-1]} ns: {type(error).__name__}: {error}") from error
        if self.streams:
            self.streams.write(times, stamps, frames, q, qd, outputs)
        if self.table:
            self.table.write(times, stamps, q, qd, outputs[0])
        if self.series:
            self.series.add(times, qd, outputs[0])
        self.processed += len(times)
        self.times_span[:] = [times[0] if not self.times_span else self.times_span[0], times[-1]]


def _replay_chunks(reader, connections, served: ServedModel, base_states, args, efforts,
                  outputs: _ChunkOutputs, progress):
    """Read the joint states in chunks of ``CHUNK``, match them to the
    model (and, floating base, to the odometry), add them to ``efforts``
    and write their outputs (``outputs.finish``); returns (joint states
    read, dropped per kind, a reason per kind). ``progress`` is closed at
    the end.

    The numerics release the GIL: chunk k + 1 is computed on a side thread
    while chunk k is encoded and written (rosbags' writer is Python, one
    core)."""
    dropped, reasons = Counter(), {}
    read = 0
    pending = None
    try:
        matcher = JointStateMatcher(served.model.joint_names)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="replay") as ahead:
            for times, raws in bags.read_chunks(reader, connections, CHUNK, args.input):
                read += len(raws)
                if efforts is not None and not base_states:
                    times, stamps, q, qd, effort = match_chunk(matcher, times, raws, dropped, reasons,
                                                               args.input, efforts=True)
                    efforts.add(stamps, q, qd, effort)
                else:
                    times, stamps, q, qd = match_chunk(matcher, times, raws, dropped, reasons, args.input)
                frames = None
                if base_states:
                    times, stamps, frames, q, qd = base_states.pair(
                        times, stamps, q, qd, dropped, reasons)
                future = (ahead.submit(compute_outputs, served.model, q, qd, args.christoffel,
                                       served.frames) if outputs.writes else None)
                chunk = (future, times, stamps, frames, q, qd) if len(times) else None
                if pending:
                    outputs.finish(pending)
                pending = chunk
                progress.update(len(raws))
            if pending:
                outputs.finish(pending)
    finally:
        progress.close()
    if base_states:
        dropped.update(base_states.refused())
    return read, dropped, reasons

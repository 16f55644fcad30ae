"""rosbag2 bags (sqlite3 or MCAP) through ``rosbags``: reading joint states, writing outputs.

Bags are opened and written with rosbags' ROS 2 Jazzy typestore, with this
package's DynamicsState and DynamicsModel registered from their ``.msg`` text
(``cdr.TYPESTORE``), so they hold the real message definitions and type hashes and ``ros2 bag``,
Foxglove and PlotJuggler read them. The outputs are written as the bytes the
node publishes (``outputs``, ``cdr.CdrTemplate``).

The typestore deserializes a message into Python objects field by field,
which costs as much as an arm's dynamics, so whole chunks go through numpy
instead, with the typestore as the reference for each layout: ``decode_joint_states`` deserializes the
first JointState of a chunk with the typestore, finds where its stamp and
arrays lie, and reads every message whose other bytes (names, frame_id,
lengths) are identical to it as array views; the others are left to the
typestore.
"""

import dataclasses
import struct
from collections import defaultdict
from itertools import islice
from pathlib import Path
from typing import Iterator, List, NamedTuple, Tuple

import numpy as np
from rosbags.rosbag2 import Reader, StoragePlugin, Writer

from robot_dynamics_ros.messages.cdr import OWN_MESSAGES, PROBE_STAMP, TYPESTORE

DYNAMICS_STATE, DYNAMICS_MODEL = OWN_MESSAGES
JOINT_STATE = "sensor_msgs/msg/JointState"
ODOMETRY = "nav_msgs/msg/Odometry"
STRING = "std_msgs/msg/String"
STORAGES = {"sqlite3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}
# rosbag2 format version written by ROS 2 Jazzy's own recorder, so Jazzy reads our bags.
BAG_VERSION = 8


class BagError(Exception):
    """A bag that cannot be read or written; the message says which and why."""


def storage_of(path: Path) -> str:
    """``sqlite3`` or ``mcap``: the storage of a bag directory or file."""
    files = [path] if path.is_file() else list(path.iterdir())
    return "mcap" if any(f.suffix == ".mcap" for f in files) else "sqlite3"


def open_reader(path: Path) -> Reader:
    """An open rosbags Reader, or BagError saying why the bag cannot be opened."""
    if not path.exists():
        raise BagError(f"input bag {str(path)!r} does not exist")
    # Opening a FIFO waits for a writer, in sqlite and in Python alike, where
    # no signal reaches the replay: a bag is regular files only.
    try:
        entries = list(path.iterdir()) if path.is_dir() else [path]
    except OSError as error:
        raise BagError(f"cannot open input bag {str(path)!r}: {error}") from error
    for entry in entries:
        if not (entry.is_file() or entry.is_dir()):
            raise BagError(f"input bag {str(path)!r}: {str(entry)!r} is not a regular file "
                           "(a FIFO, socket or device)")
    try:
        reader = Reader(path)
        reader.open()
    # rosbags raises ReaderError for what it checks; a damaged database or
    # metadata file can fail deeper (sqlite3, yaml, KeyError) before that.
    except Exception as error:  # noqa: BLE001
        raise BagError(f"cannot open input bag {str(path)!r}: {error}") from error
    return reader


def topic_connections(reader: Reader, topic: str, msgtype: str) -> list:
    """The connections of ``topic``; BagError when it has another message type."""
    connections = [c for c in reader.connections if c.topic == topic]
    wrong = sorted({c.msgtype for c in connections if c.msgtype != msgtype})
    if wrong:
        raise BagError(f"topic {topic} in the bag has type {', '.join(wrong)}, not {msgtype}")
    return connections


def deserialize(raw: bytes, msgtype: str, path: Path):
    """One message by the typestore; BagError when its bytes are not a valid message."""
    try:
        return TYPESTORE.deserialize_cdr(raw, msgtype)
    # Damaged CDR fails wherever the decoder notices it (struct, index, unicode errors).
    except Exception as error:  # noqa: BLE001
        raise BagError(f"cannot read input bag {str(path)!r}: a {msgtype} message is damaged "
                       f"({type(error).__name__}: {error})") from error


def read_first(reader: Reader, connections: list, path: Path):
    """The first message (deserialized) on ``connections``, or None."""
    if not connections:
        return None  # reader.messages(connections=[]) would read every topic
    for _, raws in read_chunks(reader, connections, 1, path):
        return deserialize(raws[0], connections[0].msgtype, path)
    return None


def read_chunks(reader: Reader, connections: list, size: int, path: Path
                ) -> Iterator[Tuple[np.ndarray, List[bytes]]]:
    """(bag times in ns (k,), serialized messages) in chunks of ``size``, in time order."""
    messages = reader.messages(connections=connections)
    while True:
        try:
            raw = list(islice(messages, size))
        # A corrupted file fails wherever rosbags' readers happen to notice it
        # (sqlite3, MCAP records): all of them mean "this bag is damaged".
        except Exception as error:  # noqa: BLE001
            raise BagError(f"cannot read input bag {str(path)!r}: "
                           f"{type(error).__name__}: {error}") from error
        if not raw:
            return
        yield np.array([t for _, t, _ in raw], dtype=np.int64), [data for _, _, data in raw]


class JointStateArrays(NamedTuple):
    """JointStates that share names, frame_id and array lengths, read as arrays."""

    rows: np.ndarray  # their indices in the chunk
    template: object  # the first of them, deserialized by the typestore
    stamps: np.ndarray  # (k, 2) header stamp sec, nanosec
    position: np.ndarray  # (k, len(template.position))
    velocity: np.ndarray  # (k, len(template.velocity))
    effort: np.ndarray  # (k, len(template.effort))


def _joint_state_layout(raw: bytes, path: Path):
    """Where the parts of one JointState CDR lie, for reading others like it as arrays.

    Returns (the message deserialized, {array field: byte offset of its values},
    mask of the bytes that are neither stamp nor array values), or None when
    the typestore does not reproduce those bytes (big-endian, unusual padding).
    """
    msg = deserialize(raw, JOINT_STATE, path)
    fields = ("position", "velocity", "effort")
    probes = {f: np.arange(len(getattr(msg, f)), dtype="<f8") + 1e6 * (k + 1) + 0.5
              for k, f in enumerate(fields)}
    probe = dataclasses.replace(
        msg, **probes,
        header=dataclasses.replace(msg.header, stamp=dataclasses.replace(
            msg.header.stamp, sec=PROBE_STAMP[0], nanosec=PROBE_STAMP[1])))
    cdr = bytes(TYPESTORE.serialize_cdr(probe, JOINT_STATE))
    if len(cdr) != len(raw) or cdr[4:12] != struct.pack("<iI", *PROBE_STAMP):
        return None
    offsets = {}
    same = np.ones(len(raw), dtype=bool)  # bytes that are neither stamp nor array values
    same[4:12] = False
    for field, values in probes.items():
        data = values.tobytes()
        if data:
            if cdr.count(data) != 1:
                return None
            offsets[field] = cdr.index(data)
            same[offsets[field]:offsets[field] + len(data)] = False
    mine, theirs = np.frombuffer(cdr, np.uint8), np.frombuffer(raw, np.uint8)
    if not np.array_equal(mine[same], theirs[same]):
        return None
    return msg, offsets, same


def decode_joint_states(raws: List[bytes], path: Path) -> Tuple[List[JointStateArrays], List[int]]:
    """The JointStates of a chunk as arrays, and the rows left to the typestore.

    Messages are grouped by size; in each group the first is the template and
    every message whose bytes equal it outside the stamp and the arrays is
    read through array views (one template per size keeps the cost linear).
    """
    by_size = defaultdict(list)
    for i, raw in enumerate(raws):
        by_size[len(raw)].append(i)
    groups, rest = [], []
    for size, rows in by_size.items():
        layout = _joint_state_layout(raws[rows[0]], path)
        if layout is None:
            rest.extend(rows)
            continue
        template, offsets, same = layout
        block = np.frombuffer(b"".join(raws[i] for i in rows), np.uint8).reshape(len(rows), size)
        alike = (block[:, same] == block[0, same]).all(axis=1)
        rows = np.array(rows)
        rest.extend(rows[~alike].tolist())
        block = block[alike]

        def values(field, block=block, offsets=offsets, template=template):
            count = len(getattr(template, field))
            start = offsets.get(field, 0)
            return np.ascontiguousarray(block[:, start:start + 8 * count]).view("<f8")

        stamps = np.ascontiguousarray(block[:, 4:12]).view([("sec", "<i4"), ("nanosec", "<u4")])[:, 0]
        groups.append(JointStateArrays(
            rows=rows[alike], template=template,
            stamps=np.column_stack([stamps["sec"], stamps["nanosec"]]).astype(np.int64),
            position=values("position"), velocity=values("velocity"), effort=values("effort")))
    return groups, rest


def open_writer(path: Path, storage: str) -> Writer:
    """A rosbags Writer for a new bag at ``path`` (which must not exist)."""
    writer = Writer(path, version=BAG_VERSION, storage_plugin=STORAGES[storage])
    writer.open()
    return writer

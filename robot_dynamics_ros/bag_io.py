"""rosbag2 bags (sqlite3 or MCAP) through ``rosbags``: reading inputs, encoding outputs.

Messages are (de)serialized by rosbags' ROS 2 Jazzy typestore, so the bags hold
the real message definitions and type hashes and ``ros2 bag`` reads them. The
outputs are built by ``messages`` as rclpy message objects, exactly as the node
builds them, and converted field by field (``to_rosbags``).

Serializing 30,000 messages one by one costs about 15 us each, more than the
dynamics of a 9-joint arm, so ``CdrTemplate`` serializes one message per output
stream with the typestore and then writes whole chunks of them with numpy: for
these outputs the CDR bytes differ between messages only in the trailing
float64 array and the header stamp, which the template checks once.
"""

import array
import struct
from itertools import islice
from pathlib import Path
from typing import Callable, Iterator, List, Optional, Tuple

import numpy as np
from builtin_interfaces.msg import Time
from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

TYPESTORE = get_typestore(Stores.ROS2_JAZZY)
JOINT_STATE = "sensor_msgs/msg/JointState"
STRING = "std_msgs/msg/String"
STORAGES = {"sqlite3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}
# rosbag2 format version written by ROS 2 Jazzy's own recorder, so Jazzy reads our bags.
BAG_VERSION = 8
# CDR encapsulation header of little-endian plain CDR, what rosbags and Fast DDS write.
CDR_LE = b"\x00\x01\x00\x00"


class BagError(Exception):
    """A bag that cannot be read or written; the message says which and why."""


def ros_type(msg) -> str:
    """``pkg/msg/Name`` of an rclpy message object."""
    return f"{type(msg).__module__.split('.')[0]}/msg/{type(msg).__name__}"


def to_rosbags(msg):
    """The rosbags message object equal to an rclpy message object, field by field."""
    fields = {}
    for name in msg.get_fields_and_field_types():
        value = getattr(msg, name)
        if hasattr(value, "get_fields_and_field_types"):
            value = to_rosbags(value)
        elif isinstance(value, array.array):
            value = np.frombuffer(value, dtype=value.typecode).copy()
        elif isinstance(value, list):
            value = [to_rosbags(v) if hasattr(v, "get_fields_and_field_types") else v for v in value]
        fields[name] = value
    return TYPESTORE.types[ros_type(msg)](**fields)


class CdrTemplate:
    """CDR bytes of many messages of one stream, written by numpy from one template.

    ``make(values, stamp)`` builds the rclpy message for one row of ``size``
    float64 values (and a builtin_interfaces Time when ``stamped``). The
    template is serialized by the typestore with probe values, and the
    constructor checks that the values are the message's last ``8 * size``
    bytes and the stamp its first field (bytes 4..12, the header's stamp), so
    ``encode`` gives byte for byte what the typestore would give.
    """

    def __init__(self, make: Callable, size: int, stamped: bool):
        probe = np.arange(size, dtype=np.float64) + 0.5
        probe_stamp = (0x12345678, 0x2BCDEF01)
        msg = make(probe, Time(sec=probe_stamp[0], nanosec=probe_stamp[1]))
        self.msgtype = ros_type(msg)
        cdr = TYPESTORE.serialize_cdr(to_rosbags(msg), self.msgtype)
        tail = len(cdr) - 8 * size
        if cdr[:4] != CDR_LE or cdr[tail:] != probe.astype("<f8").tobytes():
            raise AssertionError(f"{self.msgtype}: values are not the trailing float64 block")
        if stamped and cdr[4:12] != struct.pack("<iI", *probe_stamp):
            raise AssertionError(f"{self.msgtype}: the header stamp is not at bytes 4..12")
        self.template = np.frombuffer(cdr, dtype=np.uint8)
        self.tail = tail
        self.stamped = stamped

    def encode(self, values: np.ndarray, stamps: Optional[np.ndarray] = None) -> np.ndarray:
        """(N, bytes) array: row i is message i, for values (N, size) and stamps (N, 2)."""
        count = len(values)
        out = np.empty((count, self.template.size), dtype=np.uint8)
        out[:] = self.template
        out[:, self.tail:] = np.ascontiguousarray(values, dtype="<f8").reshape(count, -1).view(np.uint8)
        if self.stamped:
            stamp = np.empty(count, dtype=[("sec", "<i4"), ("nanosec", "<u4")])
            stamp["sec"], stamp["nanosec"] = stamps[:, 0], stamps[:, 1]
            out[:, 4:12] = stamp.view(np.uint8).reshape(count, 8)
        return out


def storage_of(path: Path) -> str:
    """``sqlite3`` or ``mcap``: the storage of a bag directory or file."""
    files = [path] if path.is_file() else list(path.iterdir())
    return "mcap" if any(f.suffix == ".mcap" for f in files) else "sqlite3"


def open_reader(path: Path) -> Reader:
    """An open rosbags Reader, or BagError saying why the bag cannot be opened."""
    if not path.exists():
        raise BagError(f"input bag {str(path)!r} does not exist")
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


def read_first(reader: Reader, connections: list, path: Path):
    """The first message (deserialized) on ``connections``, or None."""
    for batch in read_chunks(reader, connections, 1, path):
        return batch[1][0]
    return None


def read_chunks(reader: Reader, connections: list, size: int, path: Path
                ) -> Iterator[Tuple[np.ndarray, List]]:
    """(bag times in ns (k,), deserialized messages) in chunks of ``size``, in time order."""
    messages = reader.messages(connections=connections)
    while True:
        try:
            raw = list(islice(messages, size))
            msgs = [TYPESTORE.deserialize_cdr(data, c.msgtype) for c, _, data in raw]
        # A corrupted file fails wherever rosbags' decoders happen to notice it
        # (sqlite3, MCAP records, CDR): all of them mean "this bag is damaged".
        except Exception as error:  # noqa: BLE001
            raise BagError(f"cannot read input bag {str(path)!r}: "
                           f"{type(error).__name__}: {error}") from error
        if not raw:
            return
        yield np.array([t for _, t, _ in raw], dtype=np.int64), msgs


def open_writer(path: Path, storage: str) -> Writer:
    """A rosbags Writer for a new bag at ``path`` (which must not exist)."""
    writer = Writer(path, version=BAG_VERSION, storage_plugin=STORAGES[storage])
    writer.open()
    return writer

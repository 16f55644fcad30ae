"""Serialized (CDR) output messages, made from one template per stream.

The node sends one DynamicsState per joint state and the replay writes
millions; building each as an rclpy message object and converting it costs
more than the dynamics of a 9-joint arm. The messages of one output stream
(one model, one frame) differ only in their header stamp and the values of
some float64 fields, whose sizes the model fixes, so every byte offset is
fixed too: the stream's message is serialized once with probe values, the
probes are found in the bytes, and each message after that is the
template's constant runs with the stamp and the values put between them.
Publishers take these bytes (``Publisher.publish(bytes)``), bag writers too.

Templates are serialized by rosbags' ROS 2 Jazzy typestore, with this
package's messages registered from their ``.msg`` text: plain little-endian
CDR with zero padding, which Fast DDS (rclpy), ``ros2 bag`` and rosbags all
read. Fast-CDR's own output (``rclpy.serialization``) is not used: it aligns
an empty float64 sequence to 8 bytes, and rosbags refuses such a message
(an empty ``christoffel_symbols`` ends every DynamicsState by default).
"""

import array
import struct
from importlib.resources import files
from typing import Callable, Sequence, Tuple

import numpy as np
from builtin_interfaces.msg import Time
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

# CDR encapsulation header of little-endian plain CDR, what rosbags and Fast DDS write.
CDR_LE = b"\x00\x01\x00\x00"
# A header stamp no real message has, to find where the stamp lies in a CDR.
PROBE_STAMP = (0x12345678, 0x2BCDEF01)
_STAMP = struct.Struct("<iI")
OWN_MESSAGES = ("robot_dynamics_ros/msg/DynamicsState", "robot_dynamics_ros/msg/DynamicsModel")


def message_definition(msgtype: str) -> str:
    """The ``.msg`` text of one of this package's messages, installed beside
    the generated classes."""
    return (files("robot_dynamics_ros.msg") / f"{msgtype.rsplit('/', 1)[1]}.msg").read_text()


def _typestore():
    store = get_typestore(Stores.ROS2_JAZZY)
    for msgtype in OWN_MESSAGES:
        store.register(get_types_from_msg(message_definition(msgtype), msgtype))
    return store


TYPESTORE = _typestore()


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
        elif isinstance(value, (array.array, np.ndarray)):  # numeric sequences and fixed arrays
            value = np.array(value)
        elif isinstance(value, list):
            value = [to_rosbags(v) if hasattr(v, "get_fields_and_field_types") else v for v in value]
        fields[name] = value
    return TYPESTORE.types[ros_type(msg)](**fields)


def serialize(msg) -> bytes:
    """Plain CDR of an rclpy message object, as rosbags writes it."""
    return bytes(TYPESTORE.serialize_cdr(to_rosbags(msg), ros_type(msg)))


def probe_values(field: int, size: int) -> np.ndarray:
    """Values no real message field holds, different for every ``field``: a
    serialized probe then contains each field's bytes exactly once."""
    return np.arange(size, dtype=np.float64) + (field + 1) * 2.0 ** 30 + 0.5


class CdrTemplate:
    """The CDR bytes of one stream's messages, from one serialized probe.

    ``make(values, stamp)`` builds the rclpy message for a tuple of float64
    arrays, one per entry of ``sizes`` (their sizes, in the order the fields
    appear in the message), and a builtin_interfaces Time when ``stamped``
    (the header stamp, the message's first field). The constructor checks that
    each array's bytes appear once, in that order, and the stamp at bytes
    4..12, so ``encode_one`` and ``encode`` give the probe's bytes with the
    values and stamp replaced: byte for byte what ``serialize`` gives.
    """

    def __init__(self, make: Callable, sizes: Sequence[int], stamped: bool):
        probes = tuple(probe_values(k, size) for k, size in enumerate(sizes))
        msg = make(probes, Time(sec=PROBE_STAMP[0], nanosec=PROBE_STAMP[1]))
        self.msgtype = ros_type(msg)
        cdr = serialize(msg)
        if cdr[:4] != CDR_LE:
            raise AssertionError(f"{self.msgtype}: not little-endian plain CDR")
        if stamped and cdr[4:12] != _STAMP.pack(*PROBE_STAMP):
            raise AssertionError(f"{self.msgtype}: the header stamp is not at bytes 4..12")
        # (start, stop) of each variable part: the stamp, then the fields
        spans = [(4, 12)] if stamped else []
        for values in probes:
            data = values.astype("<f8").tobytes()
            start = cdr.find(data)
            if not data or start < 0 or cdr.find(data, start + 1) >= 0:
                raise AssertionError(f"{self.msgtype}: a field of {values.size} values is not "
                                     "found once in the probe")
            spans.append((start, start + len(data)))
        if any(a[1] > b[0] for a, b in zip(spans, spans[1:])):
            raise AssertionError(f"{self.msgtype}: fields are not in message order")
        self.size = len(cdr)
        self.stamped = stamped
        self.sizes = tuple(sizes)
        self.spans: Tuple[Tuple[int, int], ...] = tuple(spans)
        self.template = np.frombuffer(cdr, dtype=np.uint8)
        # encode_one's message: the template in a buffer whose float64 fields
        # are 8-byte aligned (CDR aligns them to 8 after the 4-byte
        # encapsulation header), each field a float64 view into it
        raw = np.empty(len(cdr) + 4, dtype=np.uint8)
        self._buffer = raw[4:]
        self._buffer[:] = self.template
        self._fields = tuple(raw[4 + start:4 + stop].view(np.float64)
                             for start, stop in spans[1 if stamped else 0:])

    def field_views(self) -> Tuple[np.ndarray, ...]:
        """``encode_one``'s float64 fields in its buffer, one flat view each in
        ``sizes`` order: a computation may write a field's values straight
        into it (as the node's frames are, ``outputs.frames_in_place``)."""
        return self._fields

    def encode_one(self, values: Sequence[np.ndarray], stamp: Time = None) -> bytes:
        """One message: one array per field (any shape, row-major), and a Time
        when stamped; fields after the last of ``values`` keep what was
        written into their ``field_views``. Writes into one buffer per
        template: one thread (the node's executor) per template."""
        if self.stamped:
            _STAMP.pack_into(self._buffer, 4, stamp.sec, stamp.nanosec)
        for field, array in zip(self._fields, values):
            field[:] = array.ravel()
        return self._buffer.tobytes()

    def encode(self, values: Sequence[np.ndarray], stamps: np.ndarray = None) -> np.ndarray:
        """(N, bytes) array: row i is message i, for one (N, ...) array per
        field and stamps (N, 2) [sec, nanosec] when stamped."""
        count = len(values[0]) if values else len(stamps)
        out = np.empty((count, self.size), dtype=np.uint8)
        out[:] = self.template
        spans = self.spans
        if self.stamped:
            stamp = np.empty(count, dtype=[("sec", "<i4"), ("nanosec", "<u4")])
            stamp["sec"], stamp["nanosec"] = stamps[:, 0], stamps[:, 1]
            out[:, 4:12] = stamp.view(np.uint8).reshape(count, 8)
            spans = spans[1:]
        for (start, stop), array in zip(spans, values):
            out[:, start:stop] = np.ascontiguousarray(array, dtype="<f8").reshape(count, -1).view(np.uint8)
        return out

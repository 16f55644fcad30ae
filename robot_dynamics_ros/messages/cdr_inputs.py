"""The node's inputs read from their serialized bytes (CDR).

The node takes ``joint_states`` and ``odom`` as serialized messages
(rclpy's ``raw`` subscriptions) and reads here only what it uses: rclpy's
conversion into Python messages costs more than the reading, most for a
nav_msgs/Odometry (a dozen nested message objects) and for the joint names
of a sensor_msgs/JointState (a new string for each of them in every
message). What it saves: docs/benchmarks-archive.md, "The node's inputs as
bytes (issue 21, 2026-11-27)".

CDR as ROS 2 writes it (OMG DDS-XTypes 1.3, Sec. 7.4.3.5, plain CDR): a
4-byte encapsulation header (its second byte 1 for little endian, 0 for big
endian), then the fields in order, each primitive aligned to its size
counted from the end of that header; a string is a uint32 length (with the
terminating NUL) and its bytes; a sequence a uint32 count and its elements;
a fixed array its elements only.
"""

import struct
from typing import NamedTuple

import numpy as np

from robot_dynamics_ros.served.base_state import OdometryReading, stamp_ns


class MalformedMessage(ValueError):
    """Bytes that are not the serialized message they should be."""

    kind = "malformed"  # the key it is counted by


class Stamp(NamedTuple):
    """A header stamp (builtin_interfaces/Time's two fields)."""
    sec: int
    nanosec: int


class JointStateReading(NamedTuple):
    """What the node reads of a sensor_msgs/JointState (``JointStateMatcher``
    takes it as it takes the message). ``name`` is one list object for as
    long as a publisher sends the same names, as the matcher's cache wants."""
    stamp: Stamp
    name: list
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray


_LITTLE_ENDIAN = (struct.Struct("<i"), struct.Struct("<I"), np.dtype("<f8"))
_BIG_ENDIAN = (struct.Struct(">i"), struct.Struct(">I"), np.dtype(">f8"))
_ODOMETRY_DOUBLES = 3 + 4 + 36 + 3 + 3 + 36  # pose, its covariance, twist, its covariance


class _Reader:
    """Reads a CDR buffer from the front, checking every length against the bytes left."""

    def __init__(self, data: bytes, what: str):
        self.data, self.what = data, what
        if len(data) < 4 or data[1] not in (0, 1):
            raise self.error("no CDR encapsulation header")
        self.int32, self.uint32, self.float64 = _LITTLE_ENDIAN if data[1] == 1 else _BIG_ENDIAN
        self.offset = 4

    def error(self, why: str) -> MalformedMessage:
        return MalformedMessage(f"{self.what}: {len(self.data)} bytes that are not one in CDR ({why})")

    def align(self, size: int):
        self.offset += -(self.offset - 4) % size

    def _need(self, size: int):
        if self.offset + size > len(self.data):
            raise self.error(f"{size} bytes needed at offset {self.offset}")

    def int(self, signed: bool = False) -> int:
        self.align(4)
        self._need(4)
        value = (self.int32 if signed else self.uint32).unpack_from(self.data, self.offset)[0]
        self.offset += 4
        return value

    def string_bytes(self) -> bytes:
        length = self.int()
        self._need(length)
        start = self.offset
        self.offset += length
        return self.data[start:start + length - 1 if length else start]  # without the NUL

    def string(self) -> str:
        try:
            return self.string_bytes().decode()
        except UnicodeDecodeError as error:
            raise self.error(f"a string that is not UTF-8: {error}") from None

    def doubles(self, count: int) -> np.ndarray:
        if count:  # an empty sequence's elements have no alignment (rclpy's and rosbags' CDR)
            self.align(8)
        self._need(8 * count)
        values = np.frombuffer(self.data, dtype=self.float64, count=count, offset=self.offset)
        self.offset += 8 * count
        return values

    def double_sequences(self, count: int) -> list:
        """``count`` float64 sequences in a row: ``int`` and ``doubles`` written
        out, since a joint state's three are on the node's hot path."""
        data, offset, size, uint32, float64 = self.data, self.offset, len(self.data), self.uint32, self.float64
        sequences = []
        for _ in range(count):
            offset += -(offset - 4) % 4
            if offset + 4 > size:
                self.offset = offset
                self._need(4)
            length = uint32.unpack_from(data, offset)[0]
            offset += 4
            if length:
                offset += -(offset - 4) % 8
                if offset + 8 * length > size:
                    self.offset = offset
                    self._need(8 * length)
            sequences.append(np.frombuffer(data, float64, length, offset))
            offset += 8 * length
        self.offset = offset
        return sequences


class JointStateReader:
    """sensor_msgs/JointState from its CDR bytes. Keeps the name list of the
    last message: a publisher sends the same names every time, and this
    compares their bytes instead of making new strings (all of them first;
    then all but the padding between names, which Fast-CDR leaves as it
    found it in its buffer). One per subscription."""

    def __init__(self):
        # The last message's names: where they began (their padding depends on
        # it), their bytes as they came, a mask of 0 on the padding between
        # them and 255 elsewhere, and their bytes under that mask.
        self._name_start, self._name_raw = -1, b""
        self._name_mask = self._name_bytes = np.zeros(0, np.uint8)
        self._names = []

    def read(self, data: bytes) -> JointStateReading:
        """Raises MalformedMessage."""
        reader = _Reader(data, "joint_states message")
        stamp = Stamp(reader.int(signed=True), reader.int())
        reader.string_bytes()  # frame_id
        start, size = reader.offset, self._name_mask.size
        if start == self._name_start and (data.startswith(self._name_raw, start) or (
                start + size <= len(data) and np.array_equal(
                    np.frombuffer(data, np.uint8, size, start) & self._name_mask, self._name_bytes))):
            reader.offset += size  # the names of the message before (and maybe its padding)
        else:
            count = reader.int()
            if count > len(data) // 4:
                raise reader.error(f"{count} names")
            mask = bytearray(reader.offset - 4 - start) + b"\xff" * 4  # the count, after its padding
            names = []
            for _ in range(count):
                before = reader.offset
                reader.align(4)
                begin = reader.offset
                names.append(reader.string())
                mask += bytes(begin - before) + b"\xff" * (reader.offset - begin)
            self._name_mask = np.frombuffer(bytes(mask), np.uint8)
            self._name_raw = data[start:reader.offset]
            self._name_bytes = np.frombuffer(self._name_raw, np.uint8) & self._name_mask
            self._name_start, self._names = start, names
        position, velocity, effort = reader.double_sequences(3)
        return JointStateReading(stamp, self._names, position, velocity, effort)


def read_odometry(data: bytes) -> OdometryReading:
    """nav_msgs/Odometry from its CDR bytes; raises MalformedMessage."""
    reader = _Reader(data, "odom message")
    stamp = Stamp(reader.int(signed=True), reader.int())
    frame_id = reader.string()
    child_frame_id = reader.string()
    values = reader.doubles(_ODOMETRY_DOUBLES)
    return OdometryReading(stamp_ns(stamp), frame_id, child_frame_id,
                           values[0:7].copy(), values[43:49].copy())

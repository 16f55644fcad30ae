"""Serialized (CDR) output messages, made from one template per stream.

The node sends four messages per joint state and the replay writes millions;
building each as an rclpy message object and converting it costs more than
the dynamics of a 9-joint arm. The messages of one output stream differ only
in their trailing float64 array (the data of a Float64MultiArray, the effort
of ``~/gravity_torques``) and the header stamp, so each stream's message is
serialized once with probe values by rosbags' ROS 2 Jazzy typestore (plain
little-endian CDR, zero padding, as ``ros2 bag`` and Fast DDS read it), and
every message after that is the template with its values and stamp copied in.
Publishers take these bytes (``Publisher.publish(bytes)``), bag writers too.
"""

import array
import struct
from typing import Callable, Optional

import numpy as np
from builtin_interfaces.msg import Time
from rosbags.typesys import Stores, get_typestore

TYPESTORE = get_typestore(Stores.ROS2_JAZZY)
# CDR encapsulation header of little-endian plain CDR, what rosbags and Fast DDS write.
CDR_LE = b"\x00\x01\x00\x00"
# A header stamp no real message has, to find where the stamp lies in a CDR.
PROBE_STAMP = (0x12345678, 0x2BCDEF01)


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
    """The CDR bytes of one stream's messages, from one serialized template.

    ``make(values, stamp)`` builds the rclpy message for one row of ``size``
    float64 values (and a builtin_interfaces Time when ``stamped``). The
    template is serialized by the typestore with probe values, and the
    constructor checks that the values are the message's last ``8 * size``
    bytes and the stamp its first field (bytes 4..12, the header's stamp), so
    ``encode`` and ``encode_one`` give byte for byte what the typestore would.
    """

    def __init__(self, make: Callable, size: int, stamped: bool):
        probe = np.arange(size, dtype=np.float64) + 0.5
        msg = make(probe, Time(sec=PROBE_STAMP[0], nanosec=PROBE_STAMP[1]))
        self.msgtype = ros_type(msg)
        cdr = bytes(TYPESTORE.serialize_cdr(to_rosbags(msg), self.msgtype))
        tail = len(cdr) - 8 * size
        if cdr[:4] != CDR_LE or cdr[tail:] != probe.astype("<f8").tobytes():
            raise AssertionError(f"{self.msgtype}: values are not the trailing float64 block")
        if stamped and cdr[4:12] != struct.pack("<iI", *PROBE_STAMP):
            raise AssertionError(f"{self.msgtype}: the header stamp is not at bytes 4..12")
        self.template = np.frombuffer(cdr, dtype=np.uint8)
        self.tail = tail
        self.stamped = stamped
        # what precedes the stamp, and what lies between the stamp (or the
        # encapsulation header) and the values
        self._head = cdr[:4]
        self._middle = cdr[12 if stamped else 4:tail]

    def encode_one(self, values: np.ndarray, stamp: Optional[Time] = None) -> bytes:
        """One message: ``size`` values (any shape, row-major), and a Time when stamped."""
        data = np.ascontiguousarray(values, dtype="<f8").tobytes()
        if self.stamped:
            return b"".join((self._head, struct.pack("<iI", stamp.sec, stamp.nanosec), self._middle, data))
        return b"".join((self._head, self._middle, data))

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

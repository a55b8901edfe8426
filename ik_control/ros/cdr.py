"""
Serialized (CDR) joint_states and trajectories on the 1 kHz path, without Python messages.

rclpy turns every message into Python objects on take and back on publish: for SIMON's
16-joint JointTrajectory about 35 us per take and 10 us per publish on this project's
machines, more than the whole IK step. The loop instead takes the serialized bytes
(``raw=True`` subscriptions) and publishes bytes (``Publisher.publish(bytes)``):

* :class:`JointStateReader` reads the stamp, names and positions of a serialized
  sensor_msgs/JointState. A robot sends the same names every time, so the bytes from the
  frame id to the first position (but the alignment padding, which serializers leave
  uninitialised) are remembered with the offset of the positions; a message whose bytes
  match reads its positions with one ``numpy.frombuffer``. Anything
  else is deserialized by rclpy (and its layout remembered once its positions are found
  where the layout says).
* :class:`SerializedTemplate` is a serialized message whose float64 arrays (and stamp)
  are overwritten in place: the template is serialized once with marker values in the
  arrays, whose byte offsets are then found and checked.

Both rely only on the bytes rclpy itself produces and reads (CDR, little endian, as
Fast DDS and Cyclone DDS use for ROS 2 types); every layout is checked against rclpy's
own deserialization before it is used.
"""

import struct

import numpy as np
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState

_STAMP = struct.Struct('<iI')
_U32 = struct.Struct('<I')
_HEADER = 4  # encapsulation header; CDR alignment counts from its end


def _align(offset, size, padding=None):
    """
    Offset rounded up to ``size`` (CDR alignment, relative to the payload start).

    The skipped bytes are appended to ``padding`` as a range: serializers leave them
    uninitialised, so they may differ between otherwise equal messages.
    """
    rel = offset - _HEADER
    aligned = _HEADER + (rel + size - 1) // size * size
    if padding is not None and aligned > offset:
        padding.append((offset, aligned))
    return aligned


def _positions_offset(raw, padding=None):
    """Byte offset and count of JointState.position in ``raw`` (CDR; see module docstring)."""
    off = _HEADER + 8                        # header.stamp
    off += 4 + _U32.unpack_from(raw, off)[0]  # header.frame_id
    off = _align(off, 4, padding)
    count = _U32.unpack_from(raw, off)[0]    # name
    off += 4
    for _ in range(count):
        off = _align(off, 4, padding)
        off += 4 + _U32.unpack_from(raw, off)[0]
    off = _align(off, 4, padding)
    n = _U32.unpack_from(raw, off)[0]        # position
    off += 4
    if n:
        off = _align(off, 8, padding)
    return off, n


class JointStateReader:
    """Stamp, names and positions of serialized sensor_msgs/JointState (module docstring)."""

    def __init__(self):
        """Start with no remembered layout."""
        self._key = None        # bytes from the frame id to the first position, padding 0
        self._mask = None       # 0 on padding bytes, 0xFF elsewhere
        self._size = -1
        self._offset = 0
        self._count = 0
        self._names = ()
        self.fast_reads = 0     # messages read through the remembered layout

    def read(self, raw):
        """
        Return ``(stamp [s], names tuple, positions array)`` of the message ``raw``.

        The positions may be a read-only view of ``raw``. Names and positions are not
        checked against each other here (the controller refuses a mismatch).
        """
        sec, nanosec = _STAMP.unpack_from(raw, _HEADER)
        stamp = sec + 1e-9 * nanosec
        off = self._offset
        if len(raw) == self._size and np.array_equal(
                np.frombuffer(raw, np.uint8, off - _HEADER - 8, _HEADER + 8) & self._mask,
                self._key):
            self.fast_reads += 1
            return stamp, self._names, np.frombuffer(raw, '<f8', self._count, off)
        msg = deserialize_message(raw, JointState)
        names, positions = tuple(msg.name), np.array(msg.position, dtype=float)
        self._learn(raw, names, positions)
        return stamp, names, positions

    def _learn(self, raw, names, positions):
        """Remember the layout of ``raw`` if its positions are where it says."""
        padding = []
        try:
            off, n = _positions_offset(raw, padding)
            found = np.frombuffer(raw, '<f8', n, off)
        except (struct.error, ValueError):
            return
        if n != positions.size or not np.array_equal(found, positions, equal_nan=True):
            return
        start = _HEADER + 8
        mask = np.full(off - start, 0xFF, dtype=np.uint8)
        for a, b in padding:
            mask[a - start:b - start] = 0
        self._mask = mask
        self._key = np.frombuffer(raw, np.uint8, off - start, start) & mask
        self._size, self._offset, self._count, self._names = len(raw), off, n, names


class SerializedTemplate:
    """
    A serialized message with writable float64 arrays (module docstring).

    ``arrays`` maps a name to a function ``set(msg, values)`` that puts a sequence of
    ``n`` floats into the template message; :meth:`view` returns that array inside the
    serialized bytes, and :meth:`payload` the bytes to publish.
    """

    def __init__(self, msg, arrays, n):
        """Serialize ``msg`` with marker values in every array; find and check them."""
        self._views = {}
        markers = {}
        for k, (name, put) in enumerate(arrays.items()):
            markers[name] = 1.0e15 + 1.0e12 * k + np.arange(n)  # no other field holds these
            put(msg, markers[name].tolist())
        self._buffer = bytearray(serialize_message(msg))
        for name, values in markers.items():
            first = bytes(self._buffer).find(struct.pack('<d', values[0]))
            if first < 0:
                raise ValueError(f'{name} not found in the serialized {type(msg).__name__}')
            view = np.frombuffer(self._buffer, '<f8', n, first)
            if not np.array_equal(view, values):
                raise ValueError(f'{name} is not contiguous in the serialized message')
            self._views[name] = view
        self._type = type(msg)
        for view in self._views.values():
            view[:] = 0.0
        if deserialize_message(bytes(self._buffer), self._type) is None:
            raise ValueError(f'the serialized {self._type.__name__} does not read back')

    def view(self, name):
        """Return float64 array ``name`` inside the serialized message (write to it)."""
        return self._views[name]

    def set_stamp(self, nanoseconds):
        """Write ``header.stamp`` (the first field of a stamped message) [ns]."""
        sec, nsec = divmod(int(nanoseconds), 1_000_000_000)
        _STAMP.pack_into(self._buffer, _HEADER, sec, nsec)

    def payload(self):
        """Return the serialized message, as ``Publisher.publish`` takes it."""
        return bytes(self._buffer)

    def message(self):
        """Return the template deserialized (for checks)."""
        return deserialize_message(bytes(self._buffer), self._type)

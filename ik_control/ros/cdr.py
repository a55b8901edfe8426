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

from numba import njit
import numpy as np
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState

_STAMP = struct.Struct('<iI')
_U32 = struct.Struct('<I')
_HEADER = 4  # encapsulation header; CDR alignment counts from its end


def stamp_seconds(raw, epoch=(0, 0)):
    """
    Return the header stamp of serialized message ``raw`` in seconds after ``epoch``.

    ``epoch`` is ``(sec, nanosec)``. Epoch seconds as a float carry only about 0.24 us
    (2^-22 s near 1.8e9 s): times that differ by microseconds (trajectory knots, control
    ticks) are counted from an epoch near them instead, to the nanosecond.
    """
    sec, nanosec = _STAMP.unpack_from(raw, _HEADER)
    return (sec - epoch[0]) + 1e-9 * (nanosec - epoch[1])


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

    def __init__(self, epoch_ns=0):
        """Start with no remembered layout; stamps are read as seconds after ``epoch_ns``."""
        self.epoch = divmod(int(epoch_ns), 1_000_000_000)
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

        The stamp counts from the reader's epoch (:func:`stamp_seconds`).

        The positions may be a read-only view of ``raw``. Names and positions are not
        checked against each other here (the controller refuses a mismatch).
        """
        stamp = stamp_seconds(raw, self.epoch)
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


@njit(cache=True, nogil=True)
def _write_points(raw, start, times, positions, velocities):
    """
    Write the points sequence of a JointTrajectory at byte ``start`` of ``raw``.

    ``raw`` holds the serialized message from byte 4 on (so that payload offsets that are
    multiples of 8 are 8-aligned in memory); offsets here count from the payload start
    (after the 4-byte encapsulation header), as CDR aligns them. Returns the end offset.
    Each point: positions and velocities (uint32 count, float64 values aligned to 8),
    empty accelerations and effort, time_from_start (int32 sec, uint32 nanosec).
    """
    u32 = raw.view(np.uint32)
    i32 = raw.view(np.int32)
    f64 = raw.view(np.float64)
    k, n = positions.shape
    off = start  # aligned to 4
    u32[(off + 8) // 4] = k
    off += 4
    for p in range(k):
        for values in (positions, velocities):
            u32[(off + 8) // 4] = n
            off += 4
            off = (off + 7) // 8 * 8
            base = (off + 8) // 8
            for j in range(n):
                f64[base + j] = values[p, j]
            off += 8 * n
        u32[(off + 8) // 4] = 0  # accelerations
        u32[(off + 12) // 4] = 0  # effort
        off += 8
        ns = int(round(times[p] * 1e9))
        sec = ns // 1000000000
        i32[(off + 8) // 4] = sec
        u32[(off + 12) // 4] = ns - sec * 1000000000
        off += 8
    return off


class TrajectoryWriter:
    """
    Serialized trajectory_msgs/JointTrajectory with any number of points, without messages.

    The header and joint names are serialized once by rclpy (with no points); each
    :meth:`payload` writes the stamp and the points (positions, velocities,
    time_from_start) with a compiled kernel into a preallocated buffer. Checked against
    rclpy's deserialization in the tests.
    """

    def __init__(self, joint_names, frame_id='', max_points=256):
        """Serialize the fixed part; allocate room for ``max_points`` points."""
        from trajectory_msgs.msg import JointTrajectory

        msg = JointTrajectory(joint_names=list(joint_names))
        msg.header.frame_id = frame_id
        prefix = serialize_message(msg)  # ends with the points count (0)
        self._start = len(prefix) - 4 - _HEADER  # payload offset of the points count
        n = len(joint_names)
        point = 2 * (8 + 8 * n) + 16
        size = len(prefix) + max_points * point + 64
        # 4 bytes before the message: payload offsets 8k fall on 8-aligned memory
        self._raw = np.zeros((size + 4 + 7) // 8 * 8, dtype=np.uint8)
        self._raw[4:4 + len(prefix)] = np.frombuffer(prefix, np.uint8)
        self.max_points = max_points
        self._n = n
        self._type = JointTrajectory
        # compile (or load) the kernel now, not on the first tick
        self.payload(0, np.zeros(1), np.zeros((1, n)), np.zeros((1, n)))

    def payload(self, stamp_ns, times, positions, velocities):
        """Return the serialized message: header stamp [ns] and points (times [s] from it)."""
        if len(times) > self.max_points:
            raise ValueError(f'{len(times)} points, room for {self.max_points}')
        sec, nsec = divmod(int(stamp_ns), 1_000_000_000)
        _STAMP.pack_into(self._raw, 4 + _HEADER, sec, nsec)
        end = _write_points(self._raw, self._start, times, positions, velocities)
        return self._raw[4:4 + _HEADER + end].tobytes()


@njit(cache=True, nogil=True)
def _read_points(raw, start, m, times, positions, velocities):
    """
    Read the points sequence of a serialized JointTrajectory at payload offset ``start``.

    ``raw`` is the whole message, the 4-byte encapsulation header first (offsets count
    from its end, as CDR aligns them).

    Fills ``times`` [s], ``positions`` and ``velocities`` (room for ``len(times)`` points of
    ``m`` joints). Returns ``(count, has_velocities)``; count -1: a point whose positions
    do not have ``m`` values, or velocities neither ``m`` values nor none in every point,
    -2: more points than room, -3: the message ends early.
    """
    size = raw.size
    off = start
    if off + 8 > size:
        return -3, False
    k = raw[off + 4] | (raw[off + 5] << 8) | (raw[off + 6] << 16) | (raw[off + 7] << 24)
    off += 4
    if k > times.size:
        return -2, False
    has_v = True
    for p in range(k):
        for s in range(4):  # positions, velocities, accelerations, effort
            off = (off + 3) // 4 * 4
            if off + 8 > size:
                return -3, False
            count = (raw[off + 4] | (raw[off + 5] << 8) | (raw[off + 6] << 16)
                     | (raw[off + 7] << 24))
            off += 4
            if count:
                off = (off + 7) // 8 * 8
            if off + 4 + 8 * count > size:
                return -3, False
            if s == 0:
                if count != m:
                    return -1, False
                positions[p] = raw[off + 4:off + 4 + 8 * m].view(np.float64)
            elif s == 1:
                if count == m and (has_v or p == 0):
                    velocities[p] = raw[off + 4:off + 4 + 8 * m].view(np.float64)
                elif count == 0 and (p == 0 or not has_v):
                    has_v = False
                else:
                    return -1, False
            off += 8 * count
        off = (off + 3) // 4 * 4
        if off + 12 > size:
            return -3, False
        sec = raw[off + 4:off + 8].view(np.int32)[0]
        nsec = raw[off + 8:off + 12].view(np.uint32)[0]
        times[p] = sec + 1e-9 * nsec
        off += 8
    return k, has_v


class TrajectoryReader:
    """
    Stamp, joint names and points of serialized trajectory_msgs/JointTrajectory.

    rclpy takes milliseconds to turn a many-point trajectory into Python objects; this
    reads the bytes (CDR, as :class:`TrajectoryWriter` and every ROS 2 publisher writes
    them): the names are parsed in Python (and remembered while the same bytes come), the
    points by a compiled kernel. Checked against rclpy's deserialization in the tests.
    """

    def __init__(self, max_points=1024, max_joints=64, epoch_ns=0):
        """Allocate room; header stamps are read as seconds after ``epoch_ns``."""
        self.epoch = divmod(int(epoch_ns), 1_000_000_000)
        self._times = np.zeros(max_points)
        self._q = np.zeros((max_points, max_joints))
        self._v = np.zeros((max_points, max_joints))
        self._key = None
        self._names = ()
        self._points_offset = 0
        # compile (or load) the kernel now, not on the first message
        one = np.zeros((1, 1))
        self.read(TrajectoryWriter(['a'], max_points=1).payload(0, np.zeros(1), one, one))
        self._key = None

    def read(self, raw):
        """
        Return ``(stamp [s], names, times [s], positions, velocities or None)``.

        The stamp counts from the reader's epoch (:func:`stamp_seconds`); a zero stamp
        ("start now") reads 0.

        Arrays are copies. Raises ValueError for a message this reader cannot take
        (inconsistent point sizes, too many points or joints, truncated bytes).
        """
        sec, nanosec = _STAMP.unpack_from(raw, _HEADER)
        stamp = 0.0 if sec == nanosec == 0 else stamp_seconds(raw, self.epoch)
        names, off = self._names_and_offset(raw)
        m = len(names)
        if m > self._q.shape[1]:
            raise ValueError(f'trajectory names {m} joints, at most {self._q.shape[1]}')
        data = np.frombuffer(raw, np.uint8)
        k, has_v = _read_points(data, off, m, self._times, self._q[:, :m], self._v[:, :m])
        k = int(k)
        if k < 0:
            raise ValueError({-1: 'trajectory points do not all have one position per joint '
                                  'and one velocity per joint (or none)',
                              -2: f'trajectory has more than {self._times.size} points',
                              -3: 'trajectory message is truncated'}[k])
        return (stamp, names, self._times[:k].copy(), self._q[:k, :m].copy(),
                self._v[:k, :m].copy() if has_v and k else None)

    def _names_and_offset(self, raw):
        """Joint names and the payload offset of the points count (cached by bytes)."""
        start = _HEADER + 8
        key = self._key
        if key is not None and raw[start:start + len(key)] == key:
            return self._names, self._points_offset
        off = start
        length = _U32.unpack_from(raw, off)[0]
        off += 4 + length
        off = _align(off, 4)
        count = _U32.unpack_from(raw, off)[0]
        off += 4
        names = []
        for _ in range(count):
            off = _align(off, 4)
            length = _U32.unpack_from(raw, off)[0]
            names.append(bytes(raw[off + 4:off + 3 + length]).decode())
            off += 4 + length
        off = _align(off, 4)
        self._key = bytes(raw[start:off])
        self._names = tuple(names)
        self._points_offset = off - _HEADER
        return self._names, self._points_offset

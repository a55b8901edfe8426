"""
Conversions between ROS messages and numpy arrays (allocation-light).

Times are float seconds, positions rad or m, velocities rad/s or m/s.
Message sequences of ``float64`` are ``array.array('d')`` in rclpy; they are
read through the buffer protocol and written in place when the length does
not change.
"""

import array
from typing import NamedTuple, Optional, Sequence, Tuple

from builtin_interfaces.msg import Duration, Time
import numpy as np
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

__all__ = [
    'JointTrajectoryArrays', 'JointStateReorder', 'arrays_to_joint_state',
    'arrays_to_joint_trajectory', 'joint_trajectory_to_arrays', 'sec_to_duration',
    'sec_to_time', 'time_to_sec',
]


def time_to_sec(t) -> float:
    """Return seconds [s] of a ``builtin_interfaces`` Time/Duration or an rclpy Time/Duration."""
    ns = getattr(t, 'nanoseconds', None)
    if ns is not None:
        return ns * 1e-9
    return t.sec + t.nanosec * 1e-9


def _split(t: float) -> Tuple[int, int]:
    ns = int(round(float(t) * 1e9))
    sec, nanosec = divmod(ns, 1_000_000_000)
    return sec, nanosec


def sec_to_time(t: float, msg: Optional[Time] = None) -> Time:
    """Return (or fill ``msg`` with) a ``builtin_interfaces/Time`` of ``t`` [s]."""
    msg = Time() if msg is None else msg
    msg.sec, msg.nanosec = _split(t)
    return msg


def sec_to_duration(t: float, msg: Optional[Duration] = None) -> Duration:
    """Return (or fill ``msg`` with) a ``builtin_interfaces/Duration`` of ``t`` [s]."""
    msg = Duration() if msg is None else msg
    msg.sec, msg.nanosec = _split(t)
    return msg


def _write(msg, field: str, values) -> None:
    """Set a float64[] field from an array, in place when the length is unchanged."""
    if values is None:
        if len(getattr(msg, field)):
            setattr(msg, field, array.array('d'))
        return
    values = np.asarray(values, dtype=float).reshape(-1)
    current = getattr(msg, field)
    if isinstance(current, array.array) and len(current) == values.size and values.size:
        np.frombuffer(current, dtype=float)[:] = values
    else:
        setattr(msg, field, array.array('d', values.tobytes()))


def arrays_to_joint_state(names: Sequence[str], position, velocity=None, effort=None,
                          stamp=None, msg: Optional[JointState] = None) -> JointState:
    """
    Return (or refill) a ``sensor_msgs/JointState``.

    Parameters
    ----------
    names:
        Joint names; copied into the message only when they differ.
    position, velocity, effort:
        Arrays of shape (n,) [rad, rad/s, N m]; ``None`` leaves the field empty.
    stamp:
        ``builtin_interfaces/Time``, rclpy ``Time`` or float seconds; None keeps
        the message's stamp.
    msg:
        Message to refill (reused between calls to avoid allocations).

    """
    msg = JointState() if msg is None else msg
    if stamp is not None:
        if isinstance(stamp, Time):
            msg.header.stamp = stamp
        elif hasattr(stamp, 'to_msg'):
            msg.header.stamp = stamp.to_msg()
        else:
            sec_to_time(stamp, msg.header.stamp)
    if list(msg.name) != list(names):
        msg.name = list(names)
    _write(msg, 'position', position)
    _write(msg, 'velocity', velocity)
    _write(msg, 'effort', effort)
    return msg


class JointStateReorder:
    """
    Read a ``JointState`` (any joint order, extra joints ignored) into a fixed order.

    The name-to-index map is cached for the last ``msg.name`` seen, so a
    stream of messages with the same names costs one list comparison and two
    numpy gathers per message.
    """

    def __init__(self, joint_names: Sequence[str]):
        """Store the joint order ``joint_names`` that every result follows."""
        self.joint_names = tuple(joint_names)
        self._names = None
        self._idx = None

    def indices(self, names: Sequence[str]) -> np.ndarray:
        """
        Return, for each of :attr:`joint_names`, its index in ``names``.

        Raises :class:`ValueError` naming the joints that are missing.
        """
        if self._names is None or list(names) != self._names:
            lookup = {name: i for i, name in enumerate(names)}
            missing = [n for n in self.joint_names if n not in lookup]
            if missing:
                raise ValueError('joint_states lacks joint(s) %s' % missing)
            self._idx = np.array([lookup[n] for n in self.joint_names], dtype=np.intp)
            self._names = list(names)
        return self._idx

    def __call__(self, msg: JointState, position_out=None, velocity_out=None
                 ) -> Tuple[np.ndarray, Optional[np.ndarray]]:
        """
        Return ``(position, velocity)`` in :attr:`joint_names` order.

        ``velocity`` is None when the message has no velocities. Raises
        :class:`ValueError` for missing joints, a position/velocity array
        shorter than ``name`` or non-finite positions.
        """
        idx = self.indices(msg.name)
        n_names = len(msg.name)
        if len(msg.position) != n_names:
            raise ValueError('joint_states has %d names but %d positions'
                             % (n_names, len(msg.position)))
        position = np.take(np.asarray(msg.position, dtype=float), idx, out=position_out)
        if not np.all(np.isfinite(position)):
            raise ValueError('joint_states has non-finite positions')
        velocity = None
        if len(msg.velocity):
            if len(msg.velocity) != n_names:
                raise ValueError('joint_states has %d names but %d velocities'
                                 % (n_names, len(msg.velocity)))
            velocity = np.take(np.asarray(msg.velocity, dtype=float), idx, out=velocity_out)
        return position, velocity


class JointTrajectoryArrays(NamedTuple):
    """
    A ``JointTrajectory`` as arrays.

    ``times`` [s] shape (N,), ``positions`` shape (N, m), ``velocities`` shape
    (N, m) or None, ``start_time`` = header stamp [s] (0 = now).
    """

    joint_names: Tuple[str, ...]
    times: np.ndarray
    positions: np.ndarray
    velocities: Optional[np.ndarray]
    start_time: float


def joint_trajectory_to_arrays(msg: JointTrajectory) -> JointTrajectoryArrays:
    """
    Convert a ``trajectory_msgs/JointTrajectory`` into :class:`JointTrajectoryArrays`.

    Accelerations and efforts are ignored. Raises :class:`ValueError` when a
    point's positions do not match ``joint_names`` in length, or when
    velocities are given for some points only or with a wrong length. Semantic
    checks (known joints, increasing times, finite values) are the sampler's
    (:meth:`ik_control.sim.JointTrajectorySampler.set_trajectory`).
    """
    names = tuple(msg.joint_names)
    m = len(names)
    points = msg.points
    n_points = len(points)
    times = np.empty(n_points)
    positions = np.empty((n_points, m))
    n_vel = sum(1 for p in points if len(p.velocities))
    if n_vel not in (0, n_points):
        raise ValueError('velocities are given for %d of %d points; give them for '
                         'every point or for none' % (n_vel, n_points))
    velocities = np.empty((n_points, m)) if n_vel else None
    for i, p in enumerate(points):
        if len(p.positions) != m:
            raise ValueError('point %d has %d positions for %d joint_names'
                             % (i, len(p.positions), m))
        positions[i] = p.positions
        times[i] = p.time_from_start.sec + p.time_from_start.nanosec * 1e-9
        if velocities is not None:
            if len(p.velocities) != m:
                raise ValueError('point %d has %d velocities for %d joint_names'
                                 % (i, len(p.velocities), m))
            velocities[i] = p.velocities
    return JointTrajectoryArrays(names, times, positions, velocities,
                                 time_to_sec(msg.header.stamp))


def arrays_to_joint_trajectory(joint_names: Sequence[str], times, positions,
                               velocities=None, stamp=0.0, frame_id: str = '',
                               msg: Optional[JointTrajectory] = None) -> JointTrajectory:
    """
    Return (or refill) a ``trajectory_msgs/JointTrajectory``.

    Parameters
    ----------
    joint_names:
        m joint names.
    times:
        ``time_from_start`` per point [s], shape (N,).
    positions, velocities:
        Shape (N, m) [rad or m, rad/s or m/s]; velocities may be None.
    stamp:
        Header stamp: float seconds (0 = "start now"), ``builtin_interfaces/Time``
        or rclpy ``Time``.
    frame_id:
        Header frame id.
    msg:
        Message to refill; its points are reused when N is unchanged.

    """
    msg = JointTrajectory() if msg is None else msg
    times = np.asarray(times, dtype=float).reshape(-1)
    positions = np.asarray(positions, dtype=float).reshape(times.size, -1)
    if velocities is not None:
        velocities = np.asarray(velocities, dtype=float).reshape(positions.shape)
    if isinstance(stamp, Time):
        msg.header.stamp = stamp
    elif hasattr(stamp, 'to_msg'):
        msg.header.stamp = stamp.to_msg()
    else:
        sec_to_time(stamp, msg.header.stamp)
    msg.header.frame_id = frame_id
    if list(msg.joint_names) != list(joint_names):
        msg.joint_names = list(joint_names)
    if len(msg.points) != times.size:
        msg.points = [JointTrajectoryPoint() for _ in range(times.size)]
    for i, p in enumerate(msg.points):
        _write(p, 'positions', positions[i])
        _write(p, 'velocities', None if velocities is None else velocities[i])
        sec_to_duration(times[i], p.time_from_start)
    return msg

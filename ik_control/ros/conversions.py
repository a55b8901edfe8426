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
from geometry_msgs.msg import PoseStamped
from ik_control.validation import (finite_vector, matrix_to_quaternion, quaternion_to_matrix,
                                   unit_quaternion)
import numpy as np
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

__all__ = [
    'JointTrajectoryArrays', 'arrays_to_joint_state', 'arrays_to_joint_trajectory',
    'joint_trajectory_to_arrays', 'matrix_to_pose', 'pose_stamped', 'pose_to_matrix',
    'sec_to_duration', 'sec_to_time',
    'time_to_sec', 'write_float_array',
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


def pose_to_matrix(pose, what='pose'):
    """
    Return the 4x4 placement of a geometry_msgs/Pose [m].

    Raises InputError for a non-finite position or a quaternion whose norm is not 1
    within 1e-3 (``what`` names the pose in the message).
    """
    p, o = pose.position, pose.orientation
    T = np.eye(4)
    T[:3, 3] = finite_vector([p.x, p.y, p.z], 3, f'{what} position')
    T[:3, :3] = quaternion_to_matrix(unit_quaternion([o.x, o.y, o.z, o.w],
                                                     f'{what} orientation'))
    return T


def matrix_to_pose(T, pose):
    """Fill the geometry_msgs/Pose ``pose`` with the 4x4 placement ``T`` [m]; return it."""
    p, o = pose.position, pose.orientation
    p.x, p.y, p.z = (float(v) for v in T[:3, 3])
    o.x, o.y, o.z, o.w = (float(v) for v in matrix_to_quaternion(T[:3, :3]))
    return pose


def pose_stamped(T, frame_id, stamp=None):
    """
    Return a PoseStamped of the 4x4 placement ``T`` [m] in ``frame_id``.

    ``stamp``: a ``builtin_interfaces/Time``, an rclpy Time or seconds; None leaves it
    zero.
    """
    msg = PoseStamped()
    msg.header.frame_id = frame_id
    if stamp is not None:
        _set_stamp(msg.header, stamp)
    matrix_to_pose(T, msg.pose)
    return msg


def joint_state_positions(msg, joint_names: Sequence[str]):
    """
    Return the positions of ``joint_names`` from a sensor_msgs/JointState (any order).

    None when a joint is missing, the arrays disagree in length or a value is not finite:
    the caller keeps its last good state.
    """
    index = {n: i for i, n in enumerate(msg.name)}
    if len(msg.position) != len(msg.name) or not all(n in index for n in joint_names):
        return None
    q = np.array([msg.position[index[n]] for n in joint_names])
    return q if np.all(np.isfinite(q)) else None


def write_float_array(msg, field: str, values) -> None:
    """
    Set the ``float64[]`` field ``field`` of ``msg`` to ``values`` (None empties it).

    When ``values`` has the field's length, the message's own ``array.array('d')`` is
    overwritten in place; a float64 numpy vector is then copied through the buffer
    protocol without creating Python floats (cheaper than ``values.tolist()``).
    Otherwise the field gets a new ``array.array('d')``.
    """
    current = getattr(msg, field)
    if values is None:
        if len(current):
            setattr(msg, field, array.array('d'))
        return
    try:
        memoryview(current)[:] = values
        return
    except (TypeError, ValueError):  # not a float64 vector of the field's length
        values = np.ascontiguousarray(values, dtype=float).reshape(-1)
    if isinstance(current, array.array) and len(current) == values.size:
        memoryview(current)[:] = values
    else:
        setattr(msg, field, array.array('d', values.tobytes()))


def _set_stamp(header, stamp) -> None:
    """Set ``header.stamp`` from a ``builtin_interfaces/Time``, an rclpy Time or seconds."""
    if isinstance(stamp, Time):
        header.stamp = stamp
    elif hasattr(stamp, 'to_msg'):
        header.stamp = stamp.to_msg()
    else:
        sec_to_time(stamp, header.stamp)


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
        _set_stamp(msg.header, stamp)
    if list(msg.name) != list(names):
        msg.name = list(names)
    write_float_array(msg, 'position', position)
    write_float_array(msg, 'velocity', velocity)
    write_float_array(msg, 'effort', effort)
    return msg


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
        times[i] = time_to_sec(p.time_from_start)
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
    _set_stamp(msg.header, stamp)
    msg.header.frame_id = frame_id
    if list(msg.joint_names) != list(joint_names):
        msg.joint_names = list(joint_names)
    if len(msg.points) != times.size:
        msg.points = [JointTrajectoryPoint() for _ in range(times.size)]
    for i, p in enumerate(msg.points):
        write_float_array(p, 'positions', positions[i])
        write_float_array(p, 'velocities', None if velocities is None else velocities[i])
        sec_to_duration(times[i], p.time_from_start)
    return msg

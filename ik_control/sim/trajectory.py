"""
Joint trajectory sampling with ros2_control joint_trajectory_controller semantics.

The embedded robot obeys the same rules as ros2_control's
``joint_trajectory_controller`` (JTC) receiving a ``trajectory_msgs/JointTrajectory``
on its topic interface:

* A new trajectory **replaces** the active one (no queueing, no splicing).
* A start stamp of zero means "start now" (the time the trajectory is received).
* Before the first point the setpoint moves from the state at the time the
  trajectory was received (JTC's ``set_point_before_trajectory_msg``: the
  current state is an implicit point 0 at the receipt time ``t_r``) to the first
  point, which is reached at ``start + time_from_start[0]``. If that instant is
  not after ``t_r`` (stamp zero and ``time_from_start[0] == 0``, or a start in
  the past) there is no implicit point and sampling begins on the message's own
  points, as in JTC.
* Between two points: cubic Hermite interpolation when velocities are given,
  linear interpolation otherwise. Accelerations are ignored (JTC would use
  quintic splines with them).
* After the last point the last position is held with zero velocity, even if
  the last point has nonzero velocities (as JTC does with
  ``allow_nonzero_velocity_at_trajectory_end``: it holds the last point).
* A trajectory may name a subset of the joints, in any order. The joints it
  does not name keep their current setpoint (constant, zero velocity). This
  mirrors JTC with ``allow_partial_joints_goal: true``.
* Invalid trajectories raise :class:`ValueError` with the reason and leave the
  active trajectory unchanged (JTC logs and rejects them).

Checked against ros2_controllers' joint_trajectory_controller (2026):
``JointTrajectoryController::validate_trajectory_msg`` rejects a stamped trajectory whose
start plus last ``time_from_start`` is before now, times that do not increase and
unknown joints; ``Trajectory::sample`` interpolates from the state before the message
to the first point only when the first point lies ahead, uses cubic Hermite splines when
positions and velocities are given (the coefficients below), and holds the last point
after the end. Differences, none of which matter to ik_controller's windows (which name
every joint, carry velocities and end at rest): a JTC takes a message at its next update
(here: on receipt) and commands the sample one update period ahead; its default refuses
partial joint sets and a moving last point (here accepted); recent versions blend a new
trajectory into the active one unless ``allow_trajectory_replacement`` is false (here:
the classic replacement, which config/*_controllers.yaml selects).

All times are in seconds on one clock (the node uses its ROS clock); positions
in rad (revolute) or m (prismatic), velocities in rad/s or m/s.
"""

import bisect
from typing import Optional, Sequence, Tuple

import numpy as np

__all__ = ['JointTrajectorySampler']


class JointTrajectorySampler:
    r"""
    Setpoint generator for one active joint trajectory.

    The active trajectory is stored in the full joint order (``n`` joints) as
    knots :math:`(T_k, p_k, v_k)`, :math:`k = 0..K-1`, with absolute times
    :math:`T_k` [s], and per-segment cubic polynomial coefficients so that for
    :math:`T_k \le t < T_{k+1}` and :math:`s = t - T_k`

    .. math::

        q(t) = a_0 + a_1 s + a_2 s^2 + a_3 s^3, \qquad
        \dot q(t) = a_1 + 2 a_2 s + 3 a_3 s^2 .

    Linear segments (no velocities): :math:`a_0 = p_k`,
    :math:`a_1 = (p_{k+1} - p_k)/h`, :math:`a_2 = a_3 = 0`, with
    :math:`h = T_{k+1} - T_k`.

    Cubic Hermite segments (velocities given):
    :math:`a_0 = p_k`, :math:`a_1 = v_k`,
    :math:`a_2 = (3 (p_{k+1} - p_k)/h - 2 v_k - v_{k+1})/h`,
    :math:`a_3 = (2 (p_k - p_{k+1})/h + v_k + v_{k+1})/h^2`,
    which matches positions and velocities at both knots.

    For :math:`t < T_0` the first knot is held, for :math:`t \ge T_{K-1}` the
    last position is held with zero velocity.

    Parameters
    ----------
    joint_names:
        Names of all joints of the robot, in the order of every array here.
    initial_positions:
        Setpoint held until the first trajectory arrives [rad or m], shape (n,).
    t0:
        Time of the initial setpoint [s].

    """

    def __init__(self, joint_names: Sequence[str], initial_positions,
                 t0: float = 0.0):
        names = tuple(str(name) for name in joint_names)
        if len(set(names)) != len(names):
            raise ValueError('duplicate joint names: %s' % _duplicates(names))
        q0 = np.array(initial_positions, dtype=float).reshape(-1)
        if q0.shape != (len(names),):
            raise ValueError(
                'initial_positions has %d values for %d joints'
                % (q0.size, len(names)))
        if not np.all(np.isfinite(q0)):
            raise ValueError('initial_positions must be finite')
        self._names = names
        self._index = {name: i for i, name in enumerate(names)}
        n = len(names)
        self._out = np.zeros((2, n))
        self._q = self._out[0]
        self._qd = self._out[1]
        # Rows: monomials of s for q, their derivatives for qd.
        self._basis = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]])
        self._hold(float(t0), q0)
        self._q[:] = q0
        self._qd[:] = 0.0

    # ------------------------------------------------------------------ state

    @property
    def joint_names(self) -> Tuple[str, ...]:
        """Names of all joints, in the order of every array."""
        return self._names

    @property
    def start_time(self) -> float:
        """Start time of the active trajectory [s] (absolute; stamp zero resolved)."""
        return self._start

    @property
    def received_time(self) -> float:
        """Time at which the active trajectory was received [s]."""
        return self._received

    @property
    def times(self) -> np.ndarray:
        """
        Knot times relative to :attr:`start_time` [s], shape (K,).

        Includes the implicit point 0 (the state at receipt) when present; its
        relative time is ``received_time - start_time`` (<= 0).
        """
        return self._knot_t - self._start

    @property
    def positions(self) -> np.ndarray:
        """Knot positions in full joint order [rad or m], shape (K, n)."""
        return self._knot_p

    @property
    def velocities(self) -> Optional[np.ndarray]:
        """Knot velocities [rad/s or m/s], shape (K, n), or None (linear)."""
        return self._knot_v

    @property
    def end_time(self) -> float:
        """Absolute time of the last knot [s]; after it the last position is held."""
        return float(self._knot_t[-1])

    @property
    def active_joints(self) -> Tuple[str, ...]:
        """Joints named by the active trajectory (all of them while holding)."""
        return self._active

    def done(self, t: float) -> bool:
        """Return True when the active trajectory has ended at time ``t`` [s]."""
        return t >= self._knot_t[-1]

    # --------------------------------------------------------------- commands

    def hold(self, t: float, positions) -> None:
        """Replace the active trajectory by holding ``positions`` from time ``t`` [s]."""
        q = np.array(positions, dtype=float).reshape(-1)
        if q.shape != (len(self._names),) or not np.all(np.isfinite(q)):
            raise ValueError('hold positions must be %d finite values' % len(self._names))
        self._hold(float(t), q)

    def set_trajectory(self, joint_names: Sequence[str], times_from_start,
                       positions, velocities=None, start_time: float = 0.0,
                       now: float = 0.0, current_position=None,
                       current_velocity=None) -> None:
        """
        Validate a trajectory and make it the active one (JTC replacement).

        Parameters
        ----------
        joint_names:
            Joints the trajectory names (a subset of :attr:`joint_names`, any
            order, no duplicates), ``m`` entries.
        times_from_start:
            ``time_from_start`` of each point [s], shape (N,), strictly
            increasing, first >= 0.
        positions:
            Point positions [rad or m], shape (N, m).
        velocities:
            Point velocities [rad/s or m/s], shape (N, m), or None for linear
            interpolation.
        start_time:
            Header stamp [s]; 0 means "now".
        now:
            Time of receipt [s]; the implicit point 0 is placed here.
        current_position, current_velocity:
            State at ``now`` in full joint order (shape (n,)); default: the
            current setpoint. Only the named joints use it: the others hold
            their setpoint.

        Raises
        ------
        ValueError
            With the reason, if the trajectory is invalid. The active
            trajectory is then unchanged.

        """
        idx, times, pos, vel, start = self._validate(
            joint_names, times_from_start, positions, velocities, start_time, now)
        now = float(now)
        # Current setpoint: what the joints that are not named keep.
        q_set, qd_set = self.sample(now)
        q_set = q_set.copy()
        p0 = q_set.copy()
        v0 = np.zeros_like(q_set)
        if current_position is not None:
            p0[idx] = np.asarray(current_position, dtype=float).reshape(-1)[idx]
        if vel is not None:
            cur_v = qd_set if current_velocity is None else np.asarray(
                current_velocity, dtype=float).reshape(-1)
            v0[idx] = cur_v[idx]

        knot_t = start + times
        implicit = knot_t[0] > now
        n_knots = times.size + (1 if implicit else 0)
        knot_p = np.empty((n_knots, q_set.size))
        knot_p[:] = q_set
        knot_p[n_knots - times.size:, idx] = pos
        knot_v = None
        if vel is not None:
            knot_v = np.zeros((n_knots, q_set.size))
            knot_v[n_knots - times.size:, idx] = vel
        if implicit:
            knot_t = np.concatenate(([now], knot_t))
            knot_p[0] = p0
            if knot_v is not None:
                knot_v[0] = v0
        self._set_knots(knot_t, knot_p, knot_v, start, now)
        self._active = tuple(self._names[i] for i in idx)

    def sample(self, t: float) -> Tuple[np.ndarray, np.ndarray]:
        r"""
        Return the setpoint ``(q, qd)`` at time ``t`` [s] in full joint order.

        The returned arrays are internal buffers, overwritten by the next call:
        copy them to keep them. Cost: one small matrix product
        :math:`[q; \dot q] = B(s)\, A_k` with
        :math:`B(s) = [[1, s, s^2, s^3], [0, 1, 2s, 3s^2]]`.
        """
        tk = self._knot_list
        if t >= tk[-1]:
            self._q[:] = self._knot_p[-1]
            self._qd[:] = 0.0
            return self._q, self._qd
        if t < tk[0]:
            self._q[:] = self._knot_p[0]
            self._qd[:] = 0.0
            return self._q, self._qd
        k = self._k
        if not (tk[k] <= t < tk[k + 1]):
            k = self._k = bisect.bisect_right(tk, t) - 1
        s = t - tk[k]
        basis = self._basis
        basis[0, 1] = s
        basis[0, 2] = s * s
        basis[0, 3] = s * s * s
        basis[1, 2] = 2.0 * s
        basis[1, 3] = 3.0 * s * s
        np.matmul(basis, self._coef[k], out=self._out)
        return self._q, self._qd

    # -------------------------------------------------------------- internals

    def _hold(self, t: float, q: np.ndarray) -> None:
        self._set_knots(np.array([t]), q.reshape(1, -1).copy(), None, t, t)
        self._active = self._names

    def _set_knots(self, knot_t, knot_p, knot_v, start, received) -> None:
        h = np.diff(knot_t)[:, None]
        dp = np.diff(knot_p, axis=0)
        coef = np.zeros((max(knot_t.size - 1, 0), 4, knot_p.shape[1]))
        coef[:, 0] = knot_p[:-1]
        if knot_v is None:
            coef[:, 1] = dp / h
        else:
            v0, v1 = knot_v[:-1], knot_v[1:]
            coef[:, 1] = v0
            coef[:, 2] = (3.0 * dp / h - 2.0 * v0 - v1) / h
            coef[:, 3] = (-2.0 * dp / h + v0 + v1) / (h * h)
        self._knot_t = knot_t
        self._knot_list = knot_t.tolist()
        self._k = 0
        self._knot_p = knot_p
        self._knot_v = knot_v
        self._coef = coef
        self._start = float(start)
        self._received = float(received)

    def _validate(self, joint_names, times_from_start, positions, velocities,
                  start_time, now):
        names = [str(name) for name in joint_names]
        if not names:
            raise ValueError('trajectory names no joints')
        unknown = [name for name in names if name not in self._index]
        if unknown:
            raise ValueError('unknown joint name(s) %s; this robot has %s'
                             % (unknown, list(self._names)))
        if len(set(names)) != len(names):
            raise ValueError('duplicate joint name(s) %s' % _duplicates(names))
        idx = np.array([self._index[name] for name in names], dtype=np.intp)
        m = len(names)

        times = np.asarray(times_from_start, dtype=float).reshape(-1)
        if times.size == 0:
            raise ValueError('trajectory has no points')
        pos = _point_values('positions', positions, times.size, m)
        vel = None if velocities is None else _point_values('velocities', velocities,
                                                            times.size, m)
        if not np.all(np.isfinite(times)):
            raise ValueError('non-finite time_from_start at point %d'
                             % int(np.flatnonzero(~np.isfinite(times))[0]))
        for label, arr in (('positions', pos), ('velocities', vel)):
            if arr is not None and not np.all(np.isfinite(arr)):
                i, j = np.argwhere(~np.isfinite(arr))[0]
                raise ValueError('non-finite %s value at point %d, joint %r'
                                 % (label, i, names[j]))
        if times[0] < 0.0:
            raise ValueError('time_from_start of point 0 is negative (%g s)'
                             % times[0])
        bad = np.flatnonzero(np.diff(times) <= 0.0)
        if bad.size:
            i = int(bad[0]) + 1
            raise ValueError(
                'time_from_start must be strictly increasing: point %d at %g s '
                'is not after point %d at %g s' % (i, times[i], i - 1, times[i - 1]))
        start_time = float(start_time)
        if not np.isfinite(start_time):
            raise ValueError('start time (header stamp) is not finite')
        if start_time == 0.0:
            start = float(now)
        else:
            start = start_time
            if start + times[-1] < now:
                raise ValueError(
                    'trajectory with start time %.6f s ends at %.6f s, in the past '
                    '(now %.6f s)' % (start, start + times[-1], now))
        return idx, times, pos, vel, start


def _point_values(label, values, n_points, m):
    """Return ``values`` as an (n_points, m) float array, or raise ValueError naming ``label``."""
    arr = np.asarray(values, dtype=float)
    if arr.shape != (n_points, m):
        raise ValueError('%s have shape %s; expected (%d points, %d joints)'
                         % (label, arr.shape, n_points, m))
    return arr


def _duplicates(names):
    seen, dup = set(), []
    for name in names:
        if name in seen and name not in dup:
            dup.append(name)
        seen.add(name)
    return dup

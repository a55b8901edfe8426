"""
Key poses with times, fitted by a spline: SAM's position-error motion specification (sec. VI).

Maciejewski & Klein give a task as positions and orientations the hand must reach at
given times; "using the initial state of the hand as an additional constraint, a spline
of a specified order of continuity is fitted through the required positions and
orientations", sampled every cycle; the error between the actual pose and the next
sample, eq. (20) ``e_p = p_d(t + dt) - p_a(t)`` and eq. (21), drives the arm, so that
numerical error never accumulates. Here:

* position: a clamped cubic spline through the start position and the key positions,
  C2 everywhere (:func:`cubic_knot_velocities`), starting with the current velocity and
  ending at rest;
* orientation: ``R(t) = R_0 exp([phi(t)]x)`` with ``R_0`` the start orientation and
  ``phi`` a clamped cubic spline through the rotation vectors ``phi_k`` of
  ``R_0^T R_k`` (each chosen among its ``2 pi`` equivalents as the one nearest the
  previous knot's, so the path does not turn the long way round). ``exp`` is smooth, so
  ``R(t)`` is C2 and the angular velocity ``w = R_0 J_l(phi) phi'`` (SO(3) left Jacobian)
  is continuous;
* :class:`PathFollower` holds the active path; a new one starts from the current sample
  of the old one, with its velocity, so replacing a path makes no jump.

Units: metres, radians, seconds; poses are 4x4 homogeneous matrices in the base frame.
"""

import math

from ik_control.validation import InputError, rigid_transform
import numpy as np
import pinocchio as pin
from scipy.linalg import solve_banded

MAX_KEYS = 10000  # key poses in one path; more are refused


def cubic_knot_velocities(times, values, v_start, v_end):
    """
    Knot derivatives ``m_k`` of the C2 clamped cubic spline through ``values`` at ``times``.

    With ``h_k = t_{k+1} - t_k`` and ``m_0 = v_start``, ``m_n = v_end``, continuity of the
    second derivative at every inner knot is the tridiagonal system::

        h_k m_{k-1} + 2 (h_{k-1} + h_k) m_k + h_{k-1} m_{k+1}
            = 3 (h_k (y_k - y_{k-1}) / h_{k-1} + h_{k-1} (y_{k+1} - y_k) / h_k)

    ``values`` is (n + 1, d); returns (n + 1, d). Solved as the banded system it is (LAPACK
    ``gbsv``: O(n); the dense solve it replaced took 15 s for ``MAX_KEYS`` poses).
    """
    t = np.asarray(times, dtype=float)
    y = np.asarray(values, dtype=float)
    h = np.diff(t)
    m = np.zeros_like(y)
    m[0], m[-1] = v_start, v_end
    n = t.size - 1
    if n < 2:
        return m
    before, after = h[:-1, None], h[1:, None]  # h_{k-1}, h_k for k = 1 .. n-1
    dy = np.diff(y, axis=0)
    rhs = 3.0 * (after * dy[:-1] / before + before * dy[1:] / after)
    rhs[0] -= h[1] * m[0]
    rhs[-1] -= h[n - 2] * m[-1]
    bands = np.zeros((3, n - 1))  # rows: above, on and below the diagonal
    bands[0, 1:] = h[:n - 2]
    bands[1] = 2.0 * (h[:-1] + h[1:])
    bands[2, :-1] = h[2:]
    m[1:n] = solve_banded((1, 1), bands, rhs)
    return m


class CubicSpline:
    """
    Piecewise cubic Hermite curve through ``values`` at ``times`` with knot slopes ``slopes``.

    Constant (the first or last value, at rest) outside ``[times[0], times[-1]]``.
    """

    def __init__(self, times, values, slopes):
        self.times = np.asarray(times, dtype=float)
        self.values = np.asarray(values, dtype=float)
        self.slopes = np.asarray(slopes, dtype=float)

    def evaluate(self, t):
        """Value, first and second derivative at time ``t`` [s] (three arrays of size d)."""
        ts = self.times
        if t < ts[0] or t > ts[-1]:
            zero = np.zeros_like(self.values[0])
            return self.values[0 if t < ts[0] else -1].copy(), zero, zero.copy()
        k = min(int(np.searchsorted(ts, t, side='right')) - 1, ts.size - 2)
        h = ts[k + 1] - ts[k]
        s = (t - ts[k]) / h
        y0, y1 = self.values[k], self.values[k + 1]
        m0, m1 = self.slopes[k] * h, self.slopes[k + 1] * h
        s2, s3 = s * s, s * s * s
        value = ((2 * s3 - 3 * s2 + 1) * y0 + (s3 - 2 * s2 + s) * m0
                 + (-2 * s3 + 3 * s2) * y1 + (s3 - s2) * m1)
        d1 = ((6 * s2 - 6 * s) * y0 + (3 * s2 - 4 * s + 1) * m0
              + (-6 * s2 + 6 * s) * y1 + (3 * s2 - 2 * s) * m1) / h
        d2 = ((12 * s - 6) * y0 + (6 * s - 4) * m0 + (-12 * s + 6) * y1
              + (6 * s - 2) * m1) / (h * h)
        return value, d1, d2


def _nearest_equivalent(phi, previous):
    """Return the rotation vector equivalent to ``phi`` (angle + 2 pi n) nearest ``previous``."""
    theta = float(np.linalg.norm(phi))
    if theta < 1e-12:
        axis = previous / max(np.linalg.norm(previous), 1e-300)
        candidates = [axis * 2.0 * math.pi * n for n in range(-2, 3)]
    else:
        axis = phi / theta
        candidates = [axis * (theta + 2.0 * math.pi * n) for n in range(-2, 3)]
    return min(candidates, key=lambda c: float(np.linalg.norm(c - previous)))


def _check_poses(times, poses, start_time):
    times = np.asarray(times, dtype=float).reshape(-1)
    poses = np.asarray(poses, dtype=float)
    if times.size == 0 or times.size > MAX_KEYS:
        raise InputError(f'a path needs 1 to {MAX_KEYS} key poses, got {times.size}')
    if poses.shape != (times.size, 4, 4):
        raise InputError(f'key poses must be {times.size} 4x4 matrices, got shape {poses.shape}')
    if not (np.all(np.isfinite(times)) and np.all(np.isfinite(poses))):
        raise InputError('key poses and times must be finite')
    if not (times[0] > start_time and np.all(np.diff(times) > 0)):
        raise InputError('key pose times must increase and come after the path start '
                         f'({start_time:g} s)')
    for k, T in enumerate(poses):
        rigid_transform(T, f'key pose {k}')
    return times, poses


class KeyPosePath:
    """
    Spline through key poses from a start state (module docstring).

    ``start_pose`` (4x4) at ``start_time`` [s] moving with ``start_twist`` (linear [m/s],
    angular [rad/s], base axes; default at rest); ``poses`` (k, 4, 4) reached at
    ``times`` (k,) [s, same clock, after ``start_time``); at rest at the last one.
    """

    def __init__(self, start_time, start_pose, times, poses, start_twist=None):
        times, poses = _check_poses(times, poses, float(start_time))
        start_pose = np.asarray(start_pose, dtype=float)
        twist = np.zeros(6) if start_twist is None else np.asarray(start_twist, dtype=float)
        if start_pose.shape != (4, 4) or twist.shape != (6,) or not (
                np.all(np.isfinite(start_pose)) and np.all(np.isfinite(twist))):
            raise InputError('the start pose must be a finite 4x4 matrix and the twist 6 values')
        knots = np.concatenate([[float(start_time)], times])
        self.R0 = start_pose[:3, :3].copy()
        positions = np.vstack([start_pose[:3, 3], poses[:, :3, 3]])
        phis = [np.zeros(3)]
        for T in poses:
            phis.append(_nearest_equivalent(pin.log3(self.R0.T @ T[:3, :3]), phis[-1]))
        phis = np.array(phis)
        zero = np.zeros(3)
        self.position = CubicSpline(knots, positions,
                                    cubic_knot_velocities(knots, positions, twist[:3], zero))
        # phi'(t0) = R0^T w0: the left Jacobian is the identity at phi = 0
        self.rotation = CubicSpline(knots, phis, cubic_knot_velocities(
            knots, phis, self.R0.T @ twist[3:], zero))
        self.start_time = float(start_time)
        self.end_time = float(times[-1])
        self.key_times = times

    def sample(self, t):
        """Pose (4x4) at time ``t`` [s]: the start before it, the last key pose after."""
        T = np.eye(4)
        T[:3, 3] = self.position.evaluate(t)[0]
        T[:3, :3] = self.R0 @ pin.exp3(self.rotation.evaluate(t)[0])
        return T

    def twist(self, t):
        """Linear [m/s] and angular [rad/s] velocity at ``t``, base axes, as 6 values."""
        v = self.position.evaluate(t)[1]
        phi, dphi, _ = self.rotation.evaluate(t)
        w = self.R0 @ (pin.Jexp3(phi).T @ dphi)   # J_l(phi) = J_r(phi)^T
        return np.concatenate([v, w])

    def acceleration(self, t):
        """Linear acceleration [m/s^2] at ``t`` (base axes)."""
        return self.position.evaluate(t)[2]


class PathFollower:
    """
    The active key-pose path of one end effector, replaced without a jump.

    A node calls :meth:`replace` when a path arrives (key poses with times relative to
    now) and, every tick, ``controller.set_target_matrix(frame, follower.target(now, dt))``:
    the sample one tick ahead, SAM eq. (20) with the controller's gain at ``rate_hz``.
    """

    def __init__(self):
        self.path = None

    def replace(self, now, current_pose, offsets, poses):
        """
        Start a new path at ``now`` [s] through ``poses`` at ``now + offsets`` [s].

        It starts from the old path's sample and velocity at ``now`` while one is active
        (no jump in pose or velocity), else from ``current_pose`` at rest.
        """
        if self.path is not None and now < self.path.end_time:
            start, twist = self.path.sample(now), self.path.twist(now)
        else:
            start, twist = np.asarray(current_pose, dtype=float), None
        times = now + np.asarray(offsets, dtype=float)
        self.path = KeyPosePath(now, start, times, poses, twist)
        return self.path

    def target(self, now, dt):
        """Pose the effector should have at ``now + dt`` [s] (None without a path)."""
        return None if self.path is None else self.path.sample(now + dt)

    def done(self, now):
        """Return True when there is no path or ``now`` is past its last key time."""
        return self.path is None or now >= self.path.end_time

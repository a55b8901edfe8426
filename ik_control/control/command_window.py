"""
The controller's committed joint path, and the stamped command windows cut from it.

A streamed command is only safe when its late or bunched delivery cannot move the robot
differently from its timely delivery. A one-point command "be at ``q`` one period from
now" (header stamp zero) is applied on receipt: commands held up by the transport and
then delivered together make a joint_trajectory_controller (JTC) jump through several
periods' worth of motion in one. The fix, as in MoveIt Servo's command queue with
``max_expected_latency`` (moveit2 PR 2594), is to command ahead in time, stamped:

* every tick at time ``t`` appends one knot ``(tau, q, v)`` at ``tau = t + L`` (``L`` =
  ``max_expected_latency`` [s]) to a **committed path**: knots, once sent, never change;
* each message (header stamp ``t``) carries the committed path from ``t`` on -- its
  state at ``t`` as point 0 (``time_from_start`` 0), then every knot up to ``tau`` --
  followed by a **braking tail** from the last knot to rest within the acceleration
  limits (:meth:`CommandWindow.tail`);
* between knots the JTC interpolates cubic Hermite splines through positions and
  velocities. The knots advance by the trapezoidal rule
  (:func:`ik_control.control.limits.integrate`), so each segment is exactly the
  constant-acceleration motion between two knots, inside the velocity and acceleration
  limits, and splitting a segment at any instant (point 0) gives back the same curve.

So a message delivered up to ``L - 1/rate`` late replaces the active one at an instant
where both say the same position and velocity: no jump, whatever the bunching or
reordering. If the stream stops (controller killed, network lost) the robot follows the
tail of the last message it got and comes to rest smoothly. When the controller itself
was late (a stall longer than two periods), the knot it adds starts from the tail it
sent, sampled at ``tau - 1/rate`` (:meth:`CommandWindow.start`): the path it commands
is the one the robot may already be on.

Braking tail: all joints decelerate together (``T = max_i |v_i| / a_i``, joint ``i`` at
``|v_i| / T``), which keeps the joint-space direction, unless a joint would then pass its
bound; then each joint brakes at its own limit ``a_i`` (the limiter already keeps every
joint able to do so: :func:`ik_control.control.limits.limit_velocity`, rule 3). Either way
each joint's motion is piecewise quadratic with breaks at the tail's knots, so the
Hermite interpolation between them is exact; only stops closer together than
:data:`TIME_RESOLUTION` share a knot, and the joint rests inside one such short segment
(:meth:`CommandWindow._snap_stops`: the cubic misses by less than ``a r^2``).
"""

import numpy as np

__all__ = ['CommandWindow', 'hermite', 'sample_points']

#: Resolution of knot times [s]: knots closer than this are not made (ROS durations count
#: nanoseconds; a trajectory controller needs strictly increasing times).
TIME_RESOLUTION = 1e-6

#: Least time [s] from a window's point 0 to its next point: a knot closer than
#: TIME_RESOLUTION after the window's time is still sent (10 ns: distinct in the
#: nanoseconds of ROS durations). Dropped, the window's first segment would span it, and
#: the cubic the robot follows there would miss the path by up to ~1e-8 rad (a knot
#: 0.8 us after the window's time, where the deceleration changed, was seen to).
POINT_SEPARATION = 1e-8

#: A knot more than this many control periods after the last one starts from the
#: braking tail (the controller was late, the robot may be braking already).
LATE_PERIODS = 2.0


def hermite(t0, p0, v0, t1, p1, v1, t):
    r"""
    Cubic Hermite interpolation between knots ``(t0, p0, v0)`` and ``(t1, p1, v1)`` at ``t``.

    With :math:`h = t_1 - t_0`, :math:`s = (t - t_0)/h` and
    :math:`h_{00} = 2s^3 - 3s^2 + 1`, :math:`h_{10} = s^3 - 2s^2 + s`,
    :math:`h_{01} = -2s^3 + 3s^2`, :math:`h_{11} = s^3 - s^2`:
    :math:`p = h_{00} p_0 + h_{10} h v_0 + h_{01} p_1 + h_{11} h v_1` and its derivative
    for the velocity (as joint_trajectory_controller's cubic splines). Returns ``(p, v)``.
    """
    h = t1 - t0
    s = (t - t0) / h
    s2, s3 = s * s, s * s * s
    p = ((2 * s3 - 3 * s2 + 1) * p0 + (s3 - 2 * s2 + s) * h * v0 + (-2 * s3 + 3 * s2) * p1
         + (s3 - s2) * h * v1)
    v = ((6 * s2 - 6 * s) * p0 / h + (3 * s2 - 4 * s + 1) * v0 + (-6 * s2 + 6 * s) * p1 / h
         + (3 * s2 - 2 * s) * v1)
    return p, v


def sample_points(times, positions, velocities, t):
    """
    Sample trajectory points ``(times [s], positions, velocities)`` at ``t`` [s].

    As a joint_trajectory_controller does with cubic splines: :func:`hermite` between
    the points around ``t``; the first point before them, the last position (at rest)
    after them. Returns new arrays ``(q, v)``.
    """
    if t >= times[-1]:
        return positions[-1].copy(), np.zeros_like(velocities[-1])
    if t <= times[0]:
        return positions[0].copy(), velocities[0].copy()
    k = int(np.searchsorted(times, t, side='right'))
    return hermite(times[k - 1], positions[k - 1], velocities[k - 1], times[k], positions[k],
                   velocities[k], t)


class CommandWindow:
    """
    The committed path of ``n`` joints and its braking tail (module docstring).

    Parameters
    ----------
    lower, upper:
        Joint position limits [rad or m], shape (n,).
    capacity:
        Knots kept (past ones are dropped first); at least the window plus
        :attr:`keep` seconds of history at the control rate.
    keep:
        How long knots are kept after their time [s], to compare measured states
        (stamped in the past) with the path.

    """

    def __init__(self, lower, upper, capacity=1024, keep=0.25):
        self.lower = np.asarray(lower, dtype=float)
        self.upper = np.asarray(upper, dtype=float)
        n = self.lower.size
        self.keep = float(keep)
        self._t = np.zeros(capacity)
        self._q = np.zeros((capacity, n))
        self._v = np.zeros((capacity, n))
        self._lo = 0   # first kept knot
        self._hi = 0   # one past the last knot
        self._decel = np.zeros(n)  # tail deceleration per joint [rad/s^2] (>= 0)
        self._t_stop = np.zeros(n)  # tail stop time per joint after the last knot [s]
        self._no_stops = np.zeros(0)
        self._stops = self._no_stops  # the distinct stops, sorted: the tail's knots [s]
        self.margin = 0.0
        self.a_max = np.ones(n)

    # ------------------------------------------------------------------ state
    @property
    def empty(self):
        """Return True before the first :meth:`reset`."""
        return self._hi == self._lo

    @property
    def last_time(self):
        """Time of the last knot [s]."""
        return float(self._t[self._hi - 1])

    def last(self):
        """Position and velocity of the last knot (views; do not modify)."""
        return self._q[self._hi - 1], self._v[self._hi - 1]

    def knots(self):
        """Return the kept knots: times [s], positions and velocities (views)."""
        return (self._t[self._lo:self._hi], self._q[self._lo:self._hi],
                self._v[self._lo:self._hi])

    # ------------------------------------------------------------------ updates
    def reset(self, t, q, v, a_max, margin):
        """Start a new path at ``(t, q, v)`` (initialisation or re-seed); its tail brakes."""
        self._lo, self._hi = 0, 1
        self._t[0] = t
        self._q[0] = q
        self._v[0] = v
        self.a_max = np.asarray(a_max, dtype=float)
        self.margin = float(margin)
        self._plan_tail()

    def shift(self, dt):
        """Move every knot by ``dt`` [s] (a backward jump of the clock)."""
        self._t[self._lo:self._hi] += dt

    def start(self, tau, period, late=True):
        """
        Return ``(q, v, h)``: the state the knot at ``tau`` [s] is integrated from, and the step.

        Normally the last knot, ``h = tau - last_time``; if that is more than
        :data:`LATE_PERIODS` periods, the tail sampled at ``tau - period`` (added as a
        knot, after the tail's own knots before it: the robot may be on it) with
        ``h = period``; with ``late`` False (commands without a tail: one point, stamp
        zero), always the last knot. None if ``tau`` is not after
        the last knot.
        """
        h = tau - self.last_time
        if h < TIME_RESOLUTION:
            return None
        if late and h > LATE_PERIODS * period:
            t_start = tau - period
            q, v = self.sample(t_start)
            tail_t, tail_q, tail_v = self.tail()
            for k in np.flatnonzero(tail_t < t_start - TIME_RESOLUTION):
                self._append(tail_t[k], tail_q[k], tail_v[k])  # the path stays the same
            self._append(t_start, q, v)
            h = period
        q, v = self.last()
        return q, v, h

    def append(self, tau, q, v, a_max, margin):
        """Commit the knot ``(tau, q, v)`` and plan the tail after it."""
        self.a_max = a_max
        self.margin = margin
        self._append(tau, q, v)
        self._plan_tail()

    def truncate(self, t):
        """Brake from time ``t`` [s] on: the knots after ``t`` are dropped (a stop)."""
        q, v = self.sample(t)
        times = self._t[self._lo:self._hi]
        self._hi = self._lo + int(np.searchsorted(times, t, side='left'))
        self._append(t, q, v)
        self._plan_tail()

    def _append(self, t, q, v):
        if self._hi == self._t.size:
            self._compact(t)
        self._t[self._hi] = t
        self._q[self._hi] = q
        self._v[self._hi] = v
        self._hi += 1

    def _compact(self, t):
        """Drop knots older than ``keep`` before ``t`` (one kept before); make room."""
        times = self._t[self._lo:self._hi]
        first = self._lo + max(int(np.searchsorted(times, t - self.keep)) - 1, 0)
        if first == self._lo:
            first = self._lo + (self._hi - self._lo) // 2  # over capacity: drop half
        count = self._hi - first
        self._t[:count] = self._t[first:self._hi]
        self._q[:count] = self._q[first:self._hi]
        self._v[:count] = self._v[first:self._hi]
        self._lo, self._hi = 0, count

    # ------------------------------------------------------------------ the tail
    def _plan_tail(self):
        """Choose the tail's per-joint decelerations and stop times (module docstring)."""
        q, v = self.last()
        speed = np.abs(v)
        a = self.a_max
        t_sync = float(np.max(speed / a))
        if t_sync > 0.0:
            room = np.where(v > 0.0, np.maximum(self.upper - self.margin, q) - q,
                            q - np.minimum(self.lower + self.margin, q))
            if np.all(speed * t_sync <= 2.0 * room + 1e-12):
                self._decel[:] = speed / t_sync
                self._t_stop[:] = np.where(speed > 0.0, t_sync, 0.0)
                self._snap_stops()
                return
        self._decel[:] = a
        self._t_stop[:] = speed / a
        self._snap_stops()

    def _snap_stops(self):
        """
        Place the tail's knots: the distinct stops, :data:`TIME_RESOLUTION` apart.

        A stop less than that after the last knot or after the knot before gets its knot
        later: ``t_k = max(s_k, t_{k-1} + TIME_RESOLUTION)`` (``t_{-1} = 0``), vectorised
        with the distinct stops sorted as ``k r + max(r, max_{i<=k}(s_i - i r))``. The
        joint still brakes at its own deceleration and rests at its own stop (never further:
        a joint braking to its bound stays inside it); it is at rest at its knot. The rest
        it takes within a segment is confined to one segment of length ``r`` (the stop lies
        after the knot before, which is then ``r`` before its own), where its speed is at
        most ``a r``: the JTC's cubic there misses the path by less than ``a r^2`` (5e-12
        rad at 5 rad/s^2), and the knot velocities change by at most ``a r``.

        (Moving the stop to the knot with a gentler deceleration instead, as an earlier
        version did, made the joint travel ``speed * shift / 2`` further: a joint braking
        exactly to its bound was commanded up to 3e-7 rad past it, seen in a 10-minute
        soak.)
        """
        moving = self._t_stop > 0.0
        if not moving.any():
            self._stops = self._no_stops
            return
        stops = np.unique(self._t_stop[moving])
        r = TIME_RESOLUTION * np.arange(stops.size)
        self._stops = r + np.maximum(TIME_RESOLUTION, np.maximum.accumulate(stops - r))

    def _tail_state(self, s, q_out, v_out):
        """State ``s`` >= 0 seconds after the last knot on the braking tail."""
        q, v = self.last()
        ts = np.minimum(s, self._t_stop)
        sign = np.sign(v)
        np.multiply(sign * self._decel, ts, out=v_out)
        q_out[:] = q + v * ts - 0.5 * v_out * ts
        v_out[:] = v - v_out
        v_out[s >= self._t_stop] = 0.0
        return q_out, v_out

    def tail(self):
        """
        Return the tail's knots after the last knot (breaks, rest): times [s], states.

        A knot at each joint's stop, at least :data:`TIME_RESOLUTION` after the one
        before (the distinct stops as :meth:`_snap_stops` spaced them).
        """
        stops = self._stops
        q = np.empty((stops.size, self.lower.size))
        v = np.empty_like(q)
        for k, s in enumerate(stops):
            self._tail_state(s, q[k], v[k])
        return self.last_time + stops, q, v

    # ------------------------------------------------------------------ reading
    def sample(self, t):
        """Return position and velocity of the path (with its tail) at time ``t`` [s]."""
        times = self._t[self._lo:self._hi]
        n = self.lower.size
        if t >= times[-1]:
            return self._tail_state(t - times[-1], np.empty(n), np.empty(n))
        k = int(np.searchsorted(times, t, side='right'))
        if k == 0:
            return self._q[self._lo].copy(), self._v[self._lo].copy()
        i = self._lo + k - 1
        return hermite(self._t[i], self._q[i], self._v[i], self._t[i + 1], self._q[i + 1],
                       self._v[i + 1], t)

    def window(self, t):
        """
        Return the command at time ``t`` [s]: ``(times from t, positions, velocities)``.

        Point 0 is the path at ``t``; then the knots at least :data:`POINT_SEPARATION`
        after ``t``; then the tail. Every point is on the path, the last at rest.
        """
        q0, v0 = self.sample(t)
        times = self._t[self._lo:self._hi]
        # knots closer to t than that would share its time (point 0 is the path there)
        after = t + POINT_SEPARATION
        k = self._lo + int(np.searchsorted(times, after, side='left'))
        tail_t, tail_q, tail_v = self.tail()
        tail_keep = tail_t >= after
        if k == self._hi and not tail_keep.any() and np.any(v0):
            # within the resolution of the stop: come to rest one resolution later
            rest = tail_q[-1] if len(tail_t) else self.last()[0]
            tail_t, tail_q, tail_v = np.array([after]), rest[None], np.zeros((1, rest.size))
            tail_keep = np.array([True])
        out_t = np.concatenate(([t], self._t[k:self._hi], tail_t[tail_keep])) - t
        out_q = np.concatenate((q0[None], self._q[k:self._hi], tail_q[tail_keep]))
        out_v = np.concatenate((v0[None], self._v[k:self._hi], tail_v[tail_keep]))
        return out_t, out_q, out_v

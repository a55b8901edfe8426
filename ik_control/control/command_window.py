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
(:meth:`CommandWindow._plan_tail`: the cubic misses by less than ``a r^2``).
"""

from typing import NamedTuple

from numba import njit
import numpy as np

__all__ = ['Command', 'CommandWindow', 'hermite', 'sample_points']

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


@njit(cache=True, nogil=True)
def _hermite_into(t0, p0, v0, t1, p1, v1, t, p, v):
    """Write :func:`hermite` at ``t`` to ``p`` and ``v`` (the path's compiled sampling)."""
    h = t1 - t0
    s = (t - t0) / h
    s2, s3 = s * s, s * s * s
    c00, c10 = 2 * s3 - 3 * s2 + 1, (s3 - 2 * s2 + s) * h
    c01, c11 = -2 * s3 + 3 * s2, (s3 - s2) * h
    d00, d10 = 6 * s2 - 6 * s, 3 * s2 - 4 * s + 1
    d01, d11 = -6 * s2 + 6 * s, 3 * s2 - 2 * s
    for j in range(p.size):
        p[j] = c00 * p0[j] + c10 * v0[j] + c01 * p1[j] + c11 * v1[j]
        v[j] = d00 * p0[j] / h + d10 * v0[j] + d01 * p1[j] / h + d11 * v1[j]


@njit(cache=True, nogil=True)
def hermite(t0, p0, v0, t1, p1, v1, t):
    r"""
    Cubic Hermite interpolation between knots ``(t0, p0, v0)`` and ``(t1, p1, v1)`` at ``t``.

    With :math:`h = t_1 - t_0`, :math:`s = (t - t_0)/h` and
    :math:`h_{00} = 2s^3 - 3s^2 + 1`, :math:`h_{10} = s^3 - 2s^2 + s`,
    :math:`h_{01} = -2s^3 + 3s^2`, :math:`h_{11} = s^3 - s^2`:
    :math:`p = h_{00} p_0 + h_{10} h v_0 + h_{01} p_1 + h_{11} h v_1` and its derivative
    for the velocity (as joint_trajectory_controller's cubic splines). ``p0`` ... ``v1``
    are arrays of joint values; returns new arrays ``(p, v)``.
    """
    p = np.empty(p0.shape)
    v = np.empty(p0.shape)
    _hermite_into(t0, p0.ravel(), v0.ravel(), t1, p1.ravel(), v1.ravel(), t, p.ravel(),
                  v.ravel())
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
    return hermite(float(times[k - 1]), positions[k - 1], velocities[k - 1],
                   float(times[k]), positions[k], velocities[k], float(t))


class Command(NamedTuple):
    """
    Joint command: positions and velocities (k, n) at ``times`` (k,) [s] from now.

    A window of the committed path (:mod:`ik_control.control.command_window`): point 0 at
    ``times[0] == 0`` is the path now, the last point is at rest.
    """

    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray

    def at(self, t):
        """Position and velocity ``t`` [s] from now, as a trajectory controller samples it."""
        return sample_points(self.times, self.positions, self.velocities, t)


@njit(cache=True, nogil=True)
def _tail_state(q, v, decel, t_stop, s, q_out, v_out):
    """
    Write the state ``s`` >= 0 seconds after the knot ``(q, v)`` on its braking tail.

    Each joint ``j`` decelerates at ``decel[j]`` until ``t_stop[j]``:
    ``q + v t - sign(v) decel t^2 / 2``, ``v - sign(v) decel t`` with ``t = min(s, t_stop)``.
    """
    for j in range(q.size):
        ts = min(s, t_stop[j])
        d = np.sign(v[j]) * decel[j] * ts
        q_out[j] = q[j] + v[j] * ts - 0.5 * d * ts
        v_out[j] = 0.0 if s >= t_stop[j] else v[j] - d


@njit(cache=True, nogil=True)
def _tail_points(q, v, decel, t_stop, stops, q_out, v_out):
    """Write the tail's states at ``stops`` [s] after the knot ``(q, v)`` as output rows."""
    for k in range(stops.size):
        _tail_state(q, v, decel, t_stop, stops[k], q_out[k], v_out[k])


@njit(cache=True, nogil=True)
def _plan_tail(q, v, a_max, lower, upper, margin, decel, t_stop, stops):
    """
    Choose the tail after knot ``(q, v)``: ``decel``, ``t_stop`` and its knots ``stops``.

    Synchronised (``T = max_j |v_j| / a_j``, joint ``j`` at ``|v_j| / T``) unless a joint
    would then pass its bound less ``margin``; then each joint at ``a_max``. The
    distinct stops, sorted, are placed :data:`TIME_RESOLUTION` apart
    (:meth:`CommandWindow.tail`). Returns how many ``stops`` holds.
    """
    n = q.size
    t_sync = 0.0
    for j in range(n):
        t_sync = max(t_sync, abs(v[j]) / a_max[j])
    synced = t_sync > 0.0
    if synced:
        for j in range(n):
            if v[j] > 0.0:
                room = max(upper[j] - margin, q[j]) - q[j]
            else:
                room = q[j] - min(lower[j] + margin, q[j])
            if not abs(v[j]) * t_sync <= 2.0 * room + 1e-12:
                synced = False
                break
    m = 0
    for j in range(n):
        speed = abs(v[j])
        if synced:
            decel[j] = speed / t_sync
            t_stop[j] = t_sync if speed > 0.0 else 0.0
        else:
            decel[j] = a_max[j]
            t_stop[j] = speed / a_max[j]
        if t_stop[j] > 0.0:
            stops[m] = t_stop[j]
            m += 1
    if m == 0:
        return 0
    stops[:m] = np.sort(stops[:m])
    u = 1
    for k in range(1, m):
        if stops[k] != stops[u - 1]:
            stops[u] = stops[k]
            u += 1
    # t_k = max(s_k, t_{k-1} + r) as k r + max(r, max_{i<=k}(s_i - i r))
    acc = -np.inf
    for k in range(u):
        r = TIME_RESOLUTION * k
        acc = max(acc, stops[k] - r)
        stops[k] = r + max(TIME_RESOLUTION, acc)
    return u


@njit(cache=True, nogil=True)
def _sample(t_arr, q_arr, v_arr, lo, hi, decel, t_stop, t, q_out, v_out):
    """Write the path's state at ``t`` [s] (:meth:`CommandWindow.sample`) to the outputs."""
    last = hi - 1
    if t >= t_arr[last]:
        _tail_state(q_arr[last], v_arr[last], decel, t_stop, t - t_arr[last], q_out, v_out)
        return
    k = np.searchsorted(t_arr[lo:hi], t, side='right')
    if k == 0:
        q_out[:] = q_arr[lo]
        v_out[:] = v_arr[lo]
        return
    i = lo + k - 1
    _hermite_into(t_arr[i], q_arr[i], v_arr[i], t_arr[i + 1], q_arr[i + 1], v_arr[i + 1], t,
                  q_out, v_out)


@njit(cache=True, nogil=True)
def _window(t_arr, q_arr, v_arr, lo, hi, decel, t_stop, stops, m, t):
    """Return the command at ``t`` [s] (:meth:`CommandWindow.window`) in new arrays."""
    n = q_arr.shape[1]
    q0 = np.empty(n)
    v0 = np.empty(n)
    _sample(t_arr, q_arr, v_arr, lo, hi, decel, t_stop, t, q0, v0)
    after = t + POINT_SEPARATION
    k = lo + np.searchsorted(t_arr[lo:hi], after, side='left')
    last = hi - 1
    t_last = t_arr[last]
    first = 0  # the tail's knots from here on are kept (its times increase)
    while first < m and not t_last + stops[first] >= after:
        first += 1
    moving = False
    for j in range(n):
        if v0[j] != 0.0:
            moving = True
    if k == hi and first == m and moving:
        # within the resolution of the stop: come to rest one resolution later
        out_t = np.empty(2)
        out_q = np.empty((2, n))
        out_v = np.zeros((2, n))
        out_t[0] = 0.0
        out_t[1] = after - t
        out_q[0] = q0
        out_v[0] = v0
        if m > 0:
            _tail_state(q_arr[last], v_arr[last], decel, t_stop, stops[m - 1], out_q[1],
                        out_v[1])
            out_v[1] = 0.0
        else:
            out_q[1] = q_arr[last]
        return out_t, out_q, out_v
    count = 1 + (hi - k) + (m - first)
    out_t = np.empty(count)
    out_q = np.empty((count, n))
    out_v = np.empty((count, n))
    out_t[0] = t - t
    out_q[0] = q0
    out_v[0] = v0
    p = 1
    for i in range(k, hi):
        out_t[p] = t_arr[i] - t
        out_q[p] = q_arr[i]
        out_v[p] = v_arr[i]
        p += 1
    for i in range(first, m):
        out_t[p] = (t_last + stops[i]) - t
        _tail_state(q_arr[last], v_arr[last], decel, t_stop, stops[i], out_q[p], out_v[p])
        p += 1
    return out_t, out_q, out_v


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
        self._stops = np.zeros(n)  # the distinct stops, sorted: the tail's knots [s]
        self._m = 0  # how many of _stops there are
        self.margin = 0.0
        self.a_max = np.ones(n)

    # ------------------------------------------------------------------ state
    @property
    def empty(self):
        """Return True before the first :meth:`reset`."""
        return self._hi == self._lo

    @property
    def max_points(self):
        """
        Return the most points :meth:`window` gives: point 0, every kept knot, a tail knot each.

        Late ticks add the tail's knots to the path (:meth:`start`), up to ``n + 1`` per
        late tick, so a window's length follows the timing, not ``max_expected_latency``
        alone: size a message buffer by this.
        """
        return 1 + self._t.size + self.lower.size

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
        self._set_limits(a_max, margin)
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
        self._set_limits(a_max, margin)
        self._append(tau, q, v)
        self._plan_tail()

    def truncate(self, t):
        """Brake from time ``t`` [s] on: the knots after ``t`` are dropped (a stop)."""
        q, v = self.sample(t)
        times = self._t[self._lo:self._hi]
        self._hi = self._lo + int(np.searchsorted(times, t, side='left'))
        self._append(t, q, v)
        self._plan_tail()

    def _set_limits(self, a_max, margin):
        """Tail deceleration limits [rad/s^2] per joint (or one for all) and bound margin."""
        if a_max is not self.a_max:
            a = np.asarray(a_max, dtype=float)
            self.a_max = a if a.shape == self.lower.shape else np.broadcast_to(
                a, self.lower.shape).copy()
        self.margin = float(margin)

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
        """
        Choose the tail's per-joint decelerations and stop times (module docstring).

        Its knots are the distinct stops, :data:`TIME_RESOLUTION` apart: a stop less than
        that after the last knot or after the knot before gets its knot later:
        ``t_k = max(s_k, t_{k-1} + TIME_RESOLUTION)`` (``t_{-1} = 0``), i.e. with the
        distinct stops sorted ``k r + max(r, max_{i<=k}(s_i - i r))``. The joint still
        brakes at its own deceleration and rests at its own stop (never further: a joint
        braking to its bound stays inside it); it is at rest at its knot. The rest it
        takes within a segment is confined to one segment of length ``r`` (the stop lies
        after the knot before, which is then ``r`` before its own), where its speed is at
        most ``a r``: the JTC's cubic there misses the path by less than ``a r^2`` (5e-12
        rad at 5 rad/s^2), and the knot velocities change by at most ``a r``.

        (Moving the stop to the knot with a gentler deceleration instead, as an earlier
        version did, made the joint travel ``speed * shift / 2`` further: a joint braking
        exactly to its bound was commanded up to 3e-7 rad past it, seen in a 10-minute
        soak.)
        """
        q, v = self.last()
        self._m = _plan_tail(q, v, self.a_max, self.lower, self.upper, self.margin,
                             self._decel, self._t_stop, self._stops)

    def tail(self):
        """
        Return the tail's knots after the last knot (breaks, rest): times [s], states.

        A knot at each joint's stop, at least :data:`TIME_RESOLUTION` after the one
        before (the distinct stops as :meth:`_plan_tail` spaced them).
        """
        stops = self._stops[:self._m]
        q_last, v_last = self.last()
        q = np.empty((stops.size, self.lower.size))
        v = np.empty_like(q)
        _tail_points(q_last, v_last, self._decel, self._t_stop, stops, q, v)
        return self.last_time + stops, q, v

    # ------------------------------------------------------------------ reading
    def sample(self, t):
        """Return position and velocity of the path (with its tail) at time ``t`` [s]."""
        n = self.lower.size
        q, v = np.empty(n), np.empty(n)
        _sample(self._t, self._q, self._v, self._lo, self._hi, self._decel, self._t_stop,
                float(t), q, v)
        return q, v

    def window(self, t):
        """
        Return the command at time ``t`` [s]: ``(times from t, positions, velocities)``.

        Point 0 is the path at ``t``; then the knots at least :data:`POINT_SEPARATION`
        after ``t``; then the tail. Every point is on the path, the last at rest.
        """
        return _window(self._t, self._q, self._v, self._lo, self._hi, self._decel,
                       self._t_stop, self._stops, self._m, float(t))


def compile_kernels(lower, upper, q, a_max, period):
    """
    Run every kernel of :class:`CommandWindow` and :func:`sample_points` once, on a scratch window.

    Called by the controller at construction (``ResolvedRateController._compile``): the
    first tick must not compile or load them. ``q`` [rad or m] inside ``[lower, upper]``,
    ``a_max`` [rad/s^2] per joint, ``period`` [s] the tick period.
    """
    window = CommandWindow(lower, upper, capacity=16)
    v = np.zeros_like(q)
    window.reset(0.0, q, v, a_max, 0.0)
    window.start(period, period)
    window.append(period, q, v, a_max, 0.0)
    window.sample(0.5 * period)
    command = window.window(0.0)
    sample_points(*command, 0.5 * period)
    window.truncate(0.5 * period)
    window.tail()

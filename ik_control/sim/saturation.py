"""
Robot-side saturation of joint setpoints, as ros2_control's joint_limits does it.

ros2_control's ``JointSaturationLimiter`` (package joint_limits) runs after the
controllers, in the hardware write, and overwrites a position command that the joint
could not follow: from the previous command ``(q_prev, v_prev)`` and the period ``dt``,
per joint,

1. the velocity the command implies, ``v = (q_des - q_prev) / dt``, is clipped to
   ``[-v_max, v_max]``;
2. the acceleration ``(v - v_prev) / dt_mean`` is clipped to ``[-a_max, a_max]``
   (``dt_mean``: the mean of this step and the one before, the time between the middles
   of the two steps whose mean velocities are compared: the simulated robot's steps are
   not all equal);
3. toward a position limit ``d`` away, ``v dt + v^2 / (2 a_max) <= d``: the joint can
   still brake before it (as the limiter's velocity bound from the position limits); never
   more than (2) allows (a step longer than the one before would ask a little more: the
   clip (4) then stops the joint at the limit);
4. the position ``q_prev + v dt`` is clipped into the position limits (and ``v`` with it).

A robot whose setpoint had to be clipped was sent an unsafe command stream: every clip
is counted (:attr:`SetpointSaturation.clamps`, the number of setpoints changed by more
than :data:`CLAMP_TOLERANCE`), so the stream can be judged by it.
"""

import numpy as np

__all__ = ['SetpointSaturation']

#: Relative excess of a setpoint velocity over its bounds that makes a clamp (float
#: rounding of a setpoint that is within the limits stays far below it).
CLAMP_TOLERANCE = 1e-6

#: Position difference [rad or m] below which a setpoint counts as on its bound: a
#: trajectory message carries its knot times in whole nanoseconds, so where a new
#: window takes over from the one before, the two agree only to ``v * 0.5 ns`` (5e-10
#: rad at 1 rad/s) plus float rounding; over a short step (0.1 ms) that alone would
#: read as 1e-5 rad/s beyond a velocity bound. Added to the velocity slack as
#: ``POSITION_TOLERANCE / dt``.
POSITION_TOLERANCE = 1e-8


class SetpointSaturation:
    """
    Saturate a stream of position setpoints (module docstring).

    Parameters
    ----------
    lower, upper:
        Position limits [rad or m], shape (n,).
    v_max:
        Velocity limits [rad/s or m/s], shape (n,) (inf: none).
    a_max:
        Acceleration limits [rad/s^2 or m/s^2], shape (n,) (inf: none).
    q0:
        The setpoint it starts from (at rest).

    """

    def __init__(self, lower, upper, v_max, a_max, q0):
        self.lower = np.asarray(lower, dtype=float)
        self.upper = np.asarray(upper, dtype=float)
        self.v_max = np.asarray(v_max, dtype=float)
        self.a_max = np.asarray(a_max, dtype=float)
        self.q = np.array(q0, dtype=float)
        self.v = np.zeros_like(self.q)
        self._dt = 0.0
        self.clamps = 0
        #: the last clamp: (joint index, velocity asked [rad/s], its bounds lo and hi
        #: [rad/s], the velocity before [rad/s], the step [s]); None before the first
        self.last_clamp = None

    def reset(self, q):
        """Start again from ``q`` at rest (a clock reset)."""
        self.q[:] = q
        self.v[:] = 0.0
        self._dt = 0.0

    def apply(self, q_des, dt):
        """Return the saturated setpoint ``(q, v)`` for ``q_des`` one step of ``dt`` [s] on."""
        if dt <= 0.0:
            return self.q, self.v
        wanted = (q_des - self.q) / dt
        # the velocity bounds of (1)-(3)
        dv = self.a_max * (0.5 * (dt + self._dt) if self._dt > 0.0 else dt)
        lo = np.maximum(-self.v_max, self.v - dv)
        hi = np.minimum(self.v_max, self.v + dv)
        finite = np.isfinite(self.a_max)
        if finite.any():  # 3. room to brake before the position limits
            a = np.where(finite, self.a_max, 1.0)
            ad = a * dt
            up = np.sqrt(ad * ad + 2.0 * a * np.maximum(self.upper - self.q, 0.0)) - ad
            down = np.sqrt(ad * ad + 2.0 * a * np.maximum(self.q - self.lower, 0.0)) - ad
            hi = np.where(finite, np.minimum(hi, np.maximum(up, self.v - dv)), hi)
            lo = np.where(finite, np.maximum(lo, -np.maximum(down, -self.v - dv)), lo)
        # a setpoint within the bounds (up to rounding) passes exactly: integrating the
        # velocity would let rounding pile up, which tiny steps then read as speed
        slack = CLAMP_TOLERANCE * (np.abs(wanted) + 1.0) + POSITION_TOLERANCE / dt
        out = (wanted < lo - slack) | (wanted > hi + slack) | (q_des < self.lower) | (
            q_des > self.upper)
        q = np.array(q_des, dtype=float)
        v = wanted
        if out.any():
            self.clamps += 1
            # the worst joint, for the log: how far past its bounds [rad/s] it was asked
            excess = np.where(out, np.maximum(np.maximum(wanted - hi, lo - wanted), 0.0), 0.0)
            j = int(np.argmax(excess))
            self.last_clamp = (j, float(wanted[j]), float(lo[j]), float(hi[j]),
                               float(self.v[j]), dt)
            v = np.where(out, np.clip(wanted, lo, hi), wanted)
            q = np.where(out, np.clip(self.q + v * dt, self.lower, self.upper), q)
            v = np.where(out, (q - self.q) / dt, v)
        self._dt = dt
        self.q[:] = q
        self.v[:] = v
        return self.q, self.v

"""
The controller's link to the robot: which measured states it believes, and in which state it is.

A joint_states sample is *plausible* when the robot could have got there from the last
plausible sample ``(t_0, q_0)``: for every joint ``j``

    ``|q_j - q_0j| <= SPEED_FACTOR * v_max_j * (t - t_0) + POSITION_NOISE``

with ``v_max`` the URDF velocity limits (what the joint can do, not what the controller
commands). A glitch (one bad sample), joint names reordered while the positions were not,
or a sample from a different robot fails this and is refused. A robot that really is
elsewhere (restarted, pushed, stalled while its drive kept moving) is believed once
``CONFIRM_SAMPLES`` consecutive refused samples are plausible from one another: it is
then followed after that many samples, a bound independent of how far it went.

Link states (:class:`LinkState`): ``NO_STATE`` before the first sample, ``TRACKING``
while fresh samples agree with the committed path, ``JOINING`` after a re-seed onto a
stream that jumped (a fresh sample further than ``reseed_tolerance`` from the path,
believed only after ``CONFIRM_SAMPLES``: the command is steered to the measurement within
the limits, :func:`join_velocity`), ``STALE`` without samples for ``joint_state_timeout``
(the arm is stopped; it restarts from the measured state, at rest, when samples return).

A robot that fell off the path while its stream stayed continuous (each sample plausible
from the one before: it could not follow, was blocked, lagged) is re-seeded onto its own
motion instead: the path restarts at the measured position and velocity
(:meth:`PlausibilityFilter.velocity`). Steering the command to it would not do: a robot
whose setpoints are saturated (ros2_control's joint_limits, sim_robot) chases a command a
few milliradians away at its acceleration limit without braking in time, overshoots, and
keeps oscillating about it, clamped at every update; the command chasing it back does not
settle that either (measured in ``test_glitches.py``).
"""

import enum
import math

import numpy as np

__all__ = ['CONFIRM_SAMPLES', 'join_velocity', 'LinkState', 'PlausibilityFilter',
           'POSITION_NOISE', 'SPEED_FACTOR']

#: measured speeds up to this multiple of the URDF velocity limit are believed (a drive
#: overshoots its limit briefly; sample stamps jitter) [-]
SPEED_FACTOR = 1.5
#: position change believed whatever the time between samples: sensor noise and the
#: stamp resolution [rad or m]
POSITION_NOISE = 0.01
#: consecutive samples, plausible from one another, that show the robot is elsewhere
CONFIRM_SAMPLES = 5
#: a join ends when the measurement is this fraction of reseed_tolerance from the path [-]
JOIN_DONE = 0.5
#: braking-distance factor of the join velocity: below 1 leaves the limiter room to brake
#: on a tick grid (sqrt(2 a d) is exact only in continuous time) [-]
JOIN_BRAKING = 0.8


class LinkState(enum.IntEnum):
    """State of the link to the robot (module docstring)."""

    NO_STATE = 0
    TRACKING = 1
    JOINING = 2
    STALE = 3


class PlausibilityFilter:
    """
    Refuse joint_states samples the robot cannot have produced (module docstring).

    ``v_max`` [rad/s or m/s] per joint: the URDF velocity limits.
    """

    def __init__(self, v_max):
        self.v_max = np.asarray(v_max, dtype=float)
        self.reset()

    def reset(self):
        """Forget every sample: the next one is believed."""
        self.t0 = -math.inf
        self.q0 = None
        self._run = []  # consecutive refused samples plausible from one another: (t, q)
        #: ``(t, q)`` of the believed sample before the last one when the last continues
        #: it (plausible from it); None for the first sample and after a confirmed jump
        self.before = None

    def shift(self, dt):
        """Move the kept sample times by ``dt`` [s] (a backward jump of the clock)."""
        self.t0 += dt
        self._run = [(t + dt, q) for t, q in self._run]

    def reachable(self, t0, q0, t, q):
        """Index of the first joint that moved too fast from ``(t0, q0)`` to ``(t, q)``, or -1."""
        allowed = SPEED_FACTOR * self.v_max * max(t - t0, 0.0) + POSITION_NOISE
        over = np.abs(q - q0) > allowed
        return int(np.argmax(over)) if over.any() else -1

    def check(self, t, q):
        """
        Take sample ``q`` measured at ``t`` [s]: '' if believed, else why it is refused.

        A believed sample becomes the reference of the next check.
        """
        if self.q0 is None:
            self._accept(t, q, False)
            return ''
        j = self.reachable(self.t0, self.q0, t, q)
        if j < 0:
            self._accept(t, q, True)
            return ''
        run = self._run
        if run and self.reachable(run[-1][0], run[-1][1], t, q) >= 0:
            run.clear()
        run.append((t, q.copy()))
        if len(run) >= CONFIRM_SAMPLES:
            self._accept(t, q, False)
            return ''
        dt = max(t - self.t0, 0.0)
        return (f'joint {j} moved {q[j] - self.q0[j]:+.4g} in {dt:.4g} s, faster than it '
                f'can ({SPEED_FACTOR:g} x {self.v_max[j]:g}): implausible sample refused')

    @property
    def continuous(self):
        """Whether the last believed sample continues the one before: the robot's own motion."""
        return self.before is not None

    def _accept(self, t, q, continuous):
        self.before = (self.t0, self.q0) if continuous else None
        self.t0 = t
        self.q0 = q.copy()
        self._run.clear()

    def velocity(self, out):
        """
        Return the velocity ``(q - q_before) / (t - t_before)`` of the last two believed samples.

        Zero where they do not continue one another (the first sample, a confirmed
        jump) or share a stamp. ``out`` [rad/s or m/s] is filled and returned.
        """
        if not self.continuous or not self.t0 > self.before[0]:
            out[:] = 0.0
            return out
        np.subtract(self.q0, self.before[1], out=out)
        out /= self.t0 - self.before[0]
        return out


def join_velocity(q_cmd, q_target, v_max, a_max, out):
    """
    Velocity that brings ``q_cmd`` to ``q_target`` and stops there: ``out`` (re-seed join).

    Per joint with ``e = q_target - q_cmd``: ``sign(e) min(v_max, sqrt(2 c a_max |e|))``
    (``c`` = ``JOIN_BRAKING``): the speed from which the joint can still brake to rest at
    the target within its acceleration limit. The limiter then bounds the step by the
    velocity, acceleration and position limits (:func:`limits.limit_velocity`).
    """
    e = q_target - q_cmd
    np.sqrt(2.0 * JOIN_BRAKING * a_max * np.abs(e), out=out)
    np.minimum(out, v_max, out=out)
    out *= np.sign(e)
    return out

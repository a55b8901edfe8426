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

from ik_control.validation import InputError
from numba import njit
import numpy as np

__all__ = ['CONFIRM_SAMPLES', 'ConfirmingRun', 'join_velocity', 'LinkState', 'MAX_LAG',
           'off_path', 'PlausibilityFilter',
           'POSITION_NOISE', 'RobotLink', 'SPEED_FACTOR', 'STATE_LIMIT_TOLERANCE']

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
#: the longest a servo is taken to lag its command (:func:`off_path`) [s]
MAX_LAG = 0.2
#: measured positions further outside the URDF limits are refused: a drive's overshoot
#: and sensor noise, not a sample 0.05 rad past the limit [rad or m]
STATE_LIMIT_TOLERANCE = 0.02


class LinkState(enum.IntEnum):
    """State of the link to the robot (module docstring)."""

    NO_STATE = 0
    TRACKING = 1
    JOINING = 2
    STALE = 3


class ConfirmingRun:
    """
    Consecutive samples, each plausible from the one before: where the robot now is.

    One sample far from what was believed may be a glitch; ``CONFIRM_SAMPLES`` in a row
    that continue one another (``reachable``: :meth:`PlausibilityFilter.reachable`) show
    that the robot is there. A sample that does not continue the run starts a new one.
    """

    def __init__(self, reachable):
        self._reachable = reachable
        self._samples = []  # (t, q)

    def add(self, t, q):
        """Add sample ``q`` measured at ``t`` [s]; True (and the run restarts) once confirmed."""
        run = self._samples
        if run and self._reachable(run[-1][0], run[-1][1], t, q) >= 0:
            run.clear()
        run.append((t, q.copy()))
        if len(run) < CONFIRM_SAMPLES:
            return False
        run.clear()
        return True

    def clear(self):
        """Forget the run."""
        self._samples.clear()

    def shift(self, dt):
        """Move the kept sample times by ``dt`` [s] (a backward jump of the clock)."""
        self._samples = [(t + dt, q) for t, q in self._samples]


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
        self._run = ConfirmingRun(self.reachable)  # refused samples that continue each other
        #: ``(t, q)`` of the believed sample before the last one when the last continues
        #: it (plausible from it); None for the first sample and after a confirmed jump
        self.before = None

    def shift(self, dt):
        """Move the kept sample times by ``dt`` [s] (a backward jump of the clock)."""
        self.t0 += dt
        self._run.shift(dt)

    def reachable(self, t0, q0, t, q):
        """Index of the first joint that moved too fast from ``(t0, q0)`` to ``(t, q)``, or -1."""
        return _first_too_fast(q0, q, self.v_max, max(t - t0, 0.0))

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
        if self._run.add(t, q):  # the robot is confirmed there
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
    Velocity along the straight joint line to ``q_target`` that stops there: ``out``.

    With ``e = q_target - q_cmd``, each joint's cap ``min(v_max, sqrt(2 c a_max |e|))``
    (``c`` = ``JOIN_BRAKING``: the speed from which it can still brake to rest at the
    target within its acceleration limit), and ``out = s e`` with the one scale
    ``s = min_j cap_j / |e_j|``: every joint arrives together, so the motion stays on the
    segment (the re-seed join; the fallback's approach, whose segment the collision check
    cleared). The limiter then bounds the step by the velocity, acceleration and position
    limits (:func:`limits.limit_velocity`; its scaling is uniform too).
    """
    return _join_velocity(q_cmd, q_target, v_max, a_max, JOIN_BRAKING, out)


@njit(cache=True, nogil=True)
def _first_too_fast(q0, q, v_max, dt):
    """
    Return the first joint that moved too fast over ``dt`` [s], or -1.

    Joint ``j`` did when ``|q_j - q0_j| > SPEED_FACTOR v_max_j dt + POSITION_NOISE``
    (:meth:`PlausibilityFilter.reachable`).
    """
    for j in range(q.shape[0]):
        if abs(q[j] - q0[j]) > SPEED_FACTOR * v_max[j] * dt + POSITION_NOISE:
            return j
    return -1


@njit(cache=True, nogil=True)
def _within(q, lo, hi):
    """Whether every ``q_j`` is within ``[lo_j, hi_j]`` (NaN is within no bounds)."""
    for j in range(q.shape[0]):
        if not (q[j] >= lo[j] and q[j] <= hi[j]):
            return False
    return True


@njit(cache=True, nogil=True)
def _join_velocity(q_cmd, q_target, v_max, a_max, braking, out):
    """Compiled :func:`join_velocity`."""
    scale = np.inf
    for j in range(q_cmd.shape[0]):
        e = abs(q_target[j] - q_cmd[j])
        if e > 0.0:
            cap = min(v_max[j], np.sqrt(2.0 * braking * a_max[j] * e))
            scale = min(scale, cap / e)
    if scale == np.inf:
        scale = 0.0
    for j in range(q_cmd.shape[0]):
        out[j] = scale * (q_target[j] - q_cmd[j])
    return out


def off_path(error, v_path, max_lag):
    """
    Turn ``error = q - q_path(t)`` into ``|q - (q_path(t) - tau v_path)|`` in place.

    A servo lags its command along the path: the sample is nearest the path a time
    ``tau`` earlier, ``tau = clip(-error . v_path / |v_path|^2, 0, max_lag)`` [s] (the
    path to first order, ``q_path(t - tau) = q_path(t) - tau v_path``). What is left is
    how far the robot is off its path, per joint [rad or m]; a robot merely behind its
    command on the same path has none.
    """
    speed2 = float(v_path @ v_path)
    if speed2 > 0.0:
        tau = min(max(-float(error @ v_path) / speed2, 0.0), max_lag)
        error += tau * v_path
    np.abs(error, out=error)


class RobotLink:
    """
    The robot as the controller knows it: the latest believed sample and the link state.

    ``model``: the :class:`~ik_control.kinematics.robot_model.RobotModel` (joint names,
    limits, URDF velocity limits); ``events``: the queue transitions go to. Attributes:
    ``q`` the latest believed positions (None before the first), ``time`` when it came
    (the caller's clock) and ``stamp`` when the robot measured it [s], ``fresh`` whether
    no tick has used it yet, ``state`` (:class:`LinkState`), ``implausible`` samples
    refused as impossible motion, ``reseeds`` and ``reseed_time`` [s] (the last one),
    ``tracking_error`` [rad or m] per joint: how far the latest sample lies off the
    committed path (:func:`off_path`; 0 after the path restarts on it; the collision stage
    keeps that much more room, :mod:`~ik_control.control.collision_stage`).
    """

    def __init__(self, model, events):
        self.joint_names = model.joint_names
        self.lower, self.upper = model.lower, model.upper
        self._lo = model.lower - STATE_LIMIT_TOLERANCE
        self._hi = model.upper + STATE_LIMIT_TOLERANCE
        self.filter = PlausibilityFilter(model.velocity_limit)
        self.events = events
        self.q = None
        self.time = -math.inf
        self.stamp = -math.inf
        self.fresh = False
        self.state = LinkState.NO_STATE
        self.implausible = 0
        self.reseeds = 0
        self.reseed_time = -math.inf
        self._velocity = np.zeros(model.nq)  # measured velocity at a re-seed [rad/s]
        self.tracking_error = np.zeros(model.nq)
        self._elsewhere = ConfirmingRun(self.filter.reachable)  # after a gap, off the path
        self._names = (None, None)  # the last names seen, and the controlled joints in them

    def positions(self, names, positions):
        """
        Return the controlled joints' positions in a joint_states sample (any name order).

        Raises :class:`InputError` for mismatched lengths, duplicate names, missing
        controlled joints, non-finite values or positions more than
        ``STATE_LIMIT_TOLERANCE`` outside the joint limits (a wrong joint mapping or a
        sensor fault: commanding from there would be unsafe).
        """
        names = tuple(names)
        if len(names) != len(positions):
            raise InputError(f'joint_states has {len(names)} names but {len(positions)} '
                             'positions')
        cached_names, index = self._names
        if names != cached_names:
            lookup = {}
            for i, name in enumerate(names):
                if name in lookup:
                    raise InputError(f"joint_states names joint '{name}' twice")
                lookup[name] = i
            missing = [n for n in self.joint_names if n not in lookup]
            if missing:
                raise InputError(f'joint_states lacks controlled joints {missing}')
            index = np.array([lookup[n] for n in self.joint_names], dtype=np.int64)
            self._names = (names, index)
        q = np.asarray(positions, dtype=float)[index]
        if not _within(q, self._lo, self._hi):  # NaN fails too
            if not np.isfinite(q).all():
                raise InputError('joint_states positions contain NaN or infinite values')
            i = int(np.argmax(np.maximum(self._lo - q, q - self._hi)))
            raise InputError(f"joint_states puts joint '{self.joint_names[i]}' at "
                             f'{q[i]:.6g}, more than {STATE_LIMIT_TOLERANCE} outside its '
                             f'limits [{self.lower[i]:.6g}, {self.upper[i]:.6g}]')
        return q

    def take(self, q, now, stamp):
        """
        Take positions ``q`` measured at ``stamp`` [s], come at ``now``: '' or why refused.

        ``stamp`` None, or more than a second away from ``now``, counts as ``now``. A
        sample the robot cannot have produced (:class:`PlausibilityFilter`) is refused
        and counted in ``implausible``; the previous state is kept.
        """
        measured = now if stamp is None or not abs(now - stamp) < 1.0 else stamp
        reason = self.filter.check(measured, q)
        if reason:
            self.implausible += 1
            return reason
        self.q = q
        self.time = now
        self.stamp = measured
        self.fresh = True
        return ''

    def shift(self, dt):
        """Move the kept times by ``dt`` [s] (a backward jump of the clock)."""
        self.time += dt
        self.stamp += dt
        self.reseed_time += dt
        self.filter.shift(dt)
        self._elsewhere.shift(dt)

    def follow(self, path, now, tolerance, v_max, a_max, margin):
        """
        Apply the re-seed rule to a fresh believed sample; False while still ``STALE``.

        ``path`` is the committed :class:`~ik_control.control.command_window.CommandWindow`,
        ``tolerance`` [rad or m] ``reseed_tolerance``, ``v_max``, ``a_max`` and ``margin``
        the controller's limits. STALE: the stream had stopped; restart from the measured
        state, at rest (a re-seed when it is further than ``tolerance`` from where the
        path stopped, once ``CONFIRM_SAMPLES`` samples agree), unless the stop is still
        under way and the robot on it: then the path goes on. TRACKING: a sample further
        than that from the path at its stamp is a re-seed: the path restarts at the
        measured position and velocity when the stream is continuous (the robot could not
        follow), or a join starts (``JOINING``) after a jump in the stream. JOINING: back
        to TRACKING once within ``JOIN_DONE`` of it.
        """
        q_path, v_path = path.sample(self.stamp)
        error = self.tracking_error
        np.subtract(self.q, q_path, out=error)
        gap = float(np.abs(error).max())
        off_path(error, v_path, MAX_LAG)
        if self.state == LinkState.STALE:
            if gap > tolerance and not self._confirmed_elsewhere():
                return False
            self.state = LinkState.TRACKING
            if gap <= tolerance and path.sample(now)[1].any():
                # back before the stop ended, on the path: it goes on from there
                self.events.post('state_regained', 'info', 'joint_states regained')
                return True
            path.reset(now, self.q, np.zeros_like(self.q), a_max, margin)
            error[:] = 0.0
            if gap > tolerance:
                self._note_reseed(now)
            self.events.post('state_regained', 'info',
                             f'joint_states regained: the robot is {gap:.3g} rad from where the '
                             'arm stopped; commanding from there, at rest')
            return True
        if self.state == LinkState.TRACKING and gap > tolerance:
            self._note_reseed(now)
            if self.filter.continuous:  # the robot's own motion: restart on it
                v = self.filter.velocity(self._velocity)
                np.clip(v, -v_max, v_max, out=v)
                path.reset(self.stamp, self.q, v, a_max, margin)
                error[:] = 0.0
                self.events.post('reseed', 'warn',
                                 f'robot {gap:.3g} rad from the commanded path (reseed_tolerance'
                                 f' {tolerance:g}): re-seeded at its measured position and '
                                 'velocity')
                return True
            self.state = LinkState.JOINING
            self.events.post('reseed', 'warn',
                             f'robot {gap:.3g} rad from the commanded path (reseed_tolerance '
                             f'{tolerance:g}) after a jump in joint_states: re-seeding, joining '
                             'the measured state within the limits; goals wait')
        elif self.state == LinkState.JOINING and gap <= JOIN_DONE * tolerance:
            self.state = LinkState.TRACKING
            self.events.post('rejoined', 'info', f'command joined the measured state ({gap:.3g} '
                             'rad): following goals again')
        return True

    def _confirmed_elsewhere(self):
        """
        Whether the robot is confirmed elsewhere after a stale gap (``CONFIRM_SAMPLES``).

        After a gap the robot may have gone anywhere, so one sample could be a glitch:
        the command restarts there once that many consecutive samples agree (each
        plausible from the one before).
        """
        return self._elsewhere.add(self.stamp, self.q)

    def _note_reseed(self, now):
        self.reseeds += 1
        self.reseed_time = now

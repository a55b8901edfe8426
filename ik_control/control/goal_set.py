"""
The end effectors' goals: what each one pursues, and where its goal is in its lifecycle.

One :class:`GoalSet` per controller holds, per end effector (arrays indexed by effector):

- what it pursues (``mode``): ``MODE_IDLE`` (no goal: it keeps the pose it has),
  ``MODE_POSE`` (a pose goal), ``MODE_TWIST`` (a velocity, integrated into a virtual
  target) or ``MODE_MOTION`` (a moving goal: a key-pose spline or a velocity profile);
- ``targets``: the pose the solver drives it to (the goal, the virtual target, the pose it
  keeps, or the closest pose it holds when parked), and ``goal``: the user's goal;
- its lifecycle (:class:`~ik_control.control.goal_state.GoalState`), changed only here:
  :meth:`accept_pose` / :meth:`accept_motion` (``ACCEPTED``, or ``HELD`` while paused;
  the goal it replaces ``REPLACED``), :meth:`follow_twist` (``TWIST``), the first tick
  (``ACTIVE``), :meth:`pause` / :meth:`resume` (``HELD`` / ``ACTIVE``), :meth:`judge`
  and :meth:`transitions` (``REACHED``, back to ``ACTIVE`` when it leaves tolerance),
  :meth:`park` (``UNREACHABLE``), :meth:`stop` (no goal);
- progress (:meth:`judge`): the best error and when it was reached, from which a goal
  without progress is found (:meth:`restart_progress`, :meth:`excuse_pause`).

Nothing outside this class writes its arrays: the referee and the controller call its
methods (:meth:`withdraw_reached`, :meth:`clear_reason`, :meth:`start_at`, ...).

Three things keep a pose, and they have three names: an effector without a goal is
*idle* (``MODE_IDLE``); the goals of every effector are *paused* by ``~/hold``
(``holding``: the arm decelerates to rest, the goals wait); a goal found unreachable is
*parked* (``parked``: the effector holds the closest pose it reached, the goal stays
``UNREACHABLE`` until replaced).

Every transition is an :class:`~ik_control.control.goal_state.Event` on the controller's
queue, for the node to log once.
"""

import math

from ik_control.control.goal_state import GoalState
from ik_control.ik.pose_error import log3
from numba import njit
import numpy as np
import pinocchio as pin

__all__ = ['CREEP_PERIODS', 'GOAL_SPEED', 'GoalSet', 'MODE_IDLE', 'MODE_MOTION', 'MODE_POSE',
           'MODE_TWIST', 'PROGRESS_FRACTION', 'SLOW_PERIODS', 'STILL_SPEED']

MODE_IDLE, MODE_POSE, MODE_TWIST, MODE_MOTION = 0, 1, 2, 3
# fall of the goal error, as a fraction of itself, that counts as progress to a goal;
# errors are measured in tolerances (position / goal.position_tolerance plus rotation /
# goal.orientation_tolerance), so the rule has no length scale [-]
PROGRESS_FRACTION = 0.01
# joint speed, over the whole command window (now to max_expected_latency ahead), below
# which a goal within tolerance counts as reached: the robot, which follows the window, is
# then within GOAL_SPEED * max_expected_latency of the commanded pose [rad/s]
GOAL_SPEED = 0.01
STILL_SPEED = 0.01  # joint speed below which the arm counts as at rest [rad/s]
# a goal without progress is declared unreachable once the arm is at rest, or after this
# many unreachable_time without progress whatever the arm does (it may creep for ever
# along a singular direction) [-]
CREEP_PERIODS = 4.0
# a goal whose error has not halved for this many unreachable_time is slow (creeping
# toward it along a singular direction, say): it goes to the position-IK fallback,
# though it is not unreachable [-]
SLOW_PERIODS = 4.0
# judge's flags
STUCK, SLOW, SETTLING = 1, 2, 4
# the states the tick's transitions compare with, as plain ints (an IntEnum member read on
# the class goes through enum's __getattr__ in Python 3.11: about 1.5 us a tick)
_ACCEPTED, _ACTIVE, _REACHED = (int(GoalState.ACCEPTED), int(GoalState.ACTIVE),
                                int(GoalState.REACHED))


@njit(cache=True, nogil=True)
def _judge_kernel(err_p, err_r, tol_p, tol_r, mode, parked, v_cmd, best_error, best_time, now,
                  unreachable_time, goal_reached, stuck, slow):
    """
    Goal bookkeeping of one tick (:meth:`GoalSet.judge`).

    Sets ``goal_reached`` (within each goal's tolerances ``tol_p[i]`` [m], ``tol_r[i]``
    [rad], a pose goal, not parked, every joint slower
    than ``GOAL_SPEED`` at every point of ``v_cmd``, the command window's velocities),
    records progress in ``best_error``/``best_time`` (ne x 2) -- the error ``e = err_p /
    tol_p + err_r / tol_r`` counts as progress when ``e < (1 - PROGRESS_FRACTION)
    best_error[:, 0]``, and as halved when ``e < best_error[:, 1] / 2`` -- and marks in
    ``stuck`` the pose goals without progress for ``unreachable_time`` and either the arm
    at rest (every joint slower than ``STILL_SPEED``) or no progress for
    ``CREEP_PERIODS`` times as long, in ``slow`` those not halved for ``SLOW_PERIODS``
    times as long. Returns ``STUCK`` when some are stuck, plus ``SLOW`` when some are
    slow, plus ``SETTLING`` when a pose goal is within tolerance while the joints still
    move (the caller then judges the hand's own speed: a nullspace motion moves the
    joints, not the hand).
    """
    speed = 0.0
    for j in range(v_cmd.size):
        speed = max(speed, abs(v_cmd[j]))
    settled = speed < GOAL_SPEED
    flags = 0
    for i in range(err_p.size):
        close = err_p[i] <= tol_p[i] and err_r[i] <= tol_r[i]
        pose = mode[i] == MODE_POSE
        goal_reached[i] = close and pose and not parked[i] and settled
        if close and pose and not parked[i] and not settled:
            flags |= SETTLING
        e = err_p[i] / tol_p[i] + err_r[i] / tol_r[i]
        if e < (1.0 - PROGRESS_FRACTION) * best_error[i, 0]:
            best_error[i, 0] = e
            best_time[i, 0] = now
        if e < 0.5 * best_error[i, 1]:
            best_error[i, 1] = e
            best_time[i, 1] = now
        idle = now - best_time[i, 0]
        pending = pose and not close and not parked[i]
        stuck[i] = (pending and idle >= unreachable_time
                    and (speed < STILL_SPEED or idle >= CREEP_PERIODS * unreachable_time))
        slow[i] = pending and now - best_time[i, 1] >= SLOW_PERIODS * unreachable_time
        if stuck[i]:
            flags |= STUCK
        if slow[i]:
            flags |= SLOW
    return flags


class GoalSet:
    """Every end effector's goal and its lifecycle (module docstring)."""

    def __init__(self, names, events):
        """``names``: the end effectors' frames; ``events``: the queue transitions go to."""
        ne = len(names)
        self.names = list(names)
        self.events = events
        self.mode = np.full(ne, MODE_IDLE, dtype=np.int64)
        self.targets = np.tile(np.eye(4), (ne, 1, 1))  # what the solver drives each to
        self.goal = self.targets.copy()  # the user's goal (parked: not the target)
        # each goal's tolerances, position [m] and rotation [rad]: the controller's
        # (default_tolerances) unless the goal came with its own (an action's)
        self.tol_p = np.ones(ne)
        self.tol_r = np.ones(ne)
        self.own_tolerance = np.zeros(ne, dtype=bool)
        self._default_tolerance = (1.0, 1.0)
        self.twist = np.zeros((ne, 6))  # MODE_TWIST: linear [m/s], angular [rad/s]
        self.twist_time = np.full(ne, -math.inf)  # when each twist came [s]
        self.motions = [None] * ne  # MODE_MOTION: (motion, its start time [s])
        self.reached = np.zeros(ne, dtype=bool)
        self.parked = np.zeros(ne, dtype=bool)
        self.unreachable_reason = [''] * ne
        self.state = np.full(ne, int(GoalState.NONE), dtype=np.int64)
        self.ids = np.zeros(ne, dtype=np.int64)  # goals accepted per effector
        self.holding = False  # paused by ~/hold
        self.stuck = np.zeros(ne, dtype=bool)  # judge: no progress
        self.slow = np.zeros(ne, dtype=bool)  # judge: not halving
        # per effector: [1 % progress, halving] trackers (_judge_kernel)
        self.best_error = np.full((ne, 2), math.inf)
        self.best_time = np.full((ne, 2), math.inf)
        self._reached_before = np.zeros(ne, dtype=bool)
        self._rot = np.zeros(3)  # rotation vector buffer of :func:`_toward`

    # ------------------------------------------------------------------ new goals
    def replace(self, i):
        """Mark the goal effector ``i`` pursues, if any, ``REPLACED`` (a new one came)."""
        if self.state[i] in (GoalState.ACCEPTED, GoalState.ACTIVE, GoalState.HELD):
            self.state[i] = GoalState.REPLACED
            self.events.post('goal_replaced', 'info',
                             f"goal {self.ids[i]} for '{self.names[i]}' replaced")

    def default_tolerances(self, position, rotation):
        """Goals without their own are reached within ``position`` [m], ``rotation`` [rad]."""
        self._default_tolerance = (float(position), float(rotation))
        self.tol_p[~self.own_tolerance] = position
        self.tol_r[~self.own_tolerance] = rotation

    def _accept(self, i, mode, what, tolerance=None):
        self.replace(i)
        self.own_tolerance[i] = tolerance is not None
        self.tol_p[i], self.tol_r[i] = self._default_tolerance if tolerance is None else tolerance
        self.mode[i] = mode
        self.reached[i] = False
        self.parked[i] = False
        self.best_error[i] = math.inf
        self.ids[i] += 1
        self.state[i] = GoalState.HELD if self.holding else GoalState.ACCEPTED
        self.events.post('goal_accepted', 'info',
                         f"goal {self.ids[i]} for '{self.names[i]}' accepted: {what}"
                         + (' (held until resume)' if self.holding else ''))

    def accept_pose(self, i, T, tolerance=None):
        """
        Accept the pose goal ``T`` (4x4, base frame) for effector ``i``.

        ``tolerance``: its own ``(position [m], rotation [rad])``, or None for the defaults.
        """
        self.targets[i] = T
        self.goal[i] = T
        self._accept(i, MODE_POSE,
                     f'position [{T[0, 3]:.4g}, {T[1, 3]:.4g}, {T[2, 3]:.4g}] m', tolerance)

    def accept_motion(self, i, motion, now, what):
        """Accept a moving goal for effector ``i`` from ``now`` [s] (``what``: its log name)."""
        self.motions[i] = (motion, float(now))
        self._accept(i, MODE_MOTION, f'{what} over {motion.end_time:.3g} s')

    def follow_twist(self, i, v, w, now, pose):
        """
        Effector ``i`` follows the twist ``v`` [m/s], ``w`` [rad/s] that came at ``now``.

        Entering velocity mode ends its goal; its virtual target starts at ``pose`` (its
        placement now; None before the first state: the target it has).
        """
        if self.mode[i] != MODE_TWIST:
            self.replace(i)
            self.state[i] = GoalState.TWIST
            self.events.post('twist', 'info',
                             f"'{self.names[i]}' follows target_twist (velocity mode)")
            if pose is not None:
                self.targets[i] = pose
        self.twist[i, :3] = v
        self.twist[i, 3:] = w
        self.twist_time[i] = now
        self.mode[i] = MODE_TWIST
        self.parked[i] = False
        self.reached[i] = False

    def stop(self, which, poses):
        """Effectors ``which`` (indices or a mask) end their goals and keep ``poses[which]``."""
        for i in np.arange(len(self.names))[which]:
            self.replace(i)
        self.targets[which] = poses[which]
        self.mode[which] = MODE_IDLE
        self.twist[which] = 0.0
        self.parked[which] = False
        self.reached[which] = False

    def idle(self, poses):
        """
        Every effector keeps ``poses`` (the end of a joint plan): idle, twists zeroed.

        The goals' lifecycle is left as it is (the plan had replaced them already).
        """
        self.targets[:] = poses
        self.mode[:] = MODE_IDLE
        self.twist[:] = 0.0

    def motion_played_out(self, i, now):
        """Effector ``i``'s motion has played out: its last pose is an ordinary pose goal."""
        motion = self.motions[i][0]
        self.targets[i] = motion.sample(motion.end_time)
        self.goal[i] = self.targets[i]
        self.mode[i] = MODE_POSE
        self.motions[i] = None
        self.best_time[i] = now

    # ------------------------------------------------------------------ pause
    def pause(self, why):
        """``~/hold`` (or a cancel's braking, ``why``): the pursued goals wait (``HELD``)."""
        if not self.holding:
            paused = np.isin(self.state, (GoalState.ACCEPTED, GoalState.ACTIVE))
            self.state[paused] = GoalState.HELD
            self.events.post('hold', 'info', f'holding ({why}): {int(paused.sum())} goal(s) '
                             'paused')
        self.holding = True

    def resume(self, now, poses):
        """
        Leave the pause: held goals go on, progress counted from ``now`` [s].

        Idle effectors keep ``poses`` (their placements now; None before the first state).
        """
        if self.holding:
            if poses is not None:
                idle = self.mode == MODE_IDLE
                self.targets[idle] = poses[idle]
            held = self.state == GoalState.HELD
            self.state[held] = GoalState.ACTIVE
            self.best_time[:] = now
            self.events.post('resume', 'info', f'resumed: {int(held.sum())} goal(s) continue')
        self.holding = False

    # ------------------------------------------------------------------ each tick
    def aim(self, now, dt, gain, twist_timeout, reach, frame_T, lead, out):
        """
        Move the moving targets on; write the pose the solver aims at for each effector.

        Velocity mode (SAM's joystick mode): the virtual target moves with the twist
        ``(v, w)`` over ``dt`` [s], ``p += v dt``, ``R = exp(w dt) R``, and is kept within
        ``reach`` [m] of its effector (``frame_T``: the placements now); a twist older
        than ``twist_timeout`` [s] is zeroed. A moving goal's target is its sample at the
        knot being committed, ``lead`` [s] after ``now``; once it has played out, its
        last pose is a pose goal. Both are fed forward: the solver aims at
        ``(p + v / K, exp(w / K) R)`` with ``K = gain`` [1/s], so that ``K e`` is the
        twist itself at zero error; a motion's primary weight takes the aim that fraction
        of the way from the effector (SAM sec. V, :func:`_toward`). The other
        effectors aim at their targets. ``out`` (ne, 4, 4) receives the aims.

        Returns whether a twist has timed out, and the last moving goal's weight of the
        secondary goals at this time (1 without one).
        """
        out[:] = self.targets
        timed_out = False
        for i in (self.mode == MODE_TWIST).nonzero()[0]:
            if now - self.twist_time[i] > twist_timeout:
                self.twist[i] = 0.0
                timed_out = True
            v, w = self.twist[i, :3], self.twist[i, 3:]
            T = self.targets[i]
            T[:3, 3] += v * dt
            T[:3, :3] = pin.exp3(w * dt) @ T[:3, :3]
            offset = T[:3, 3] - frame_T[i, :3, 3]
            dist = np.linalg.norm(offset)
            if dist > reach:
                T[:3, 3] = frame_T[i, :3, 3] + offset * (reach / dist)
            _feed_forward(T, v / gain, w / gain, out[i])
        secondary = 1.0
        for i in (self.mode == MODE_MOTION).nonzero()[0]:
            motion, start = self.motions[i]
            t = now + lead - start
            if t >= motion.end_time:
                self.motion_played_out(i, now)
                out[i] = self.targets[i]
                continue
            weights = getattr(motion, 'weights', None)
            w = weights(t) if weights is not None else {}
            secondary = w.get('secondary', 1.0)
            self.targets[i] = motion.sample(t)
            twist = motion.twist(t)
            _feed_forward(self.targets[i], twist[:3] / gain, twist[3:] / gain, out[i])
            primary = w.get('primary', 1.0)
            if primary != 1.0:
                _toward(frame_T[i], out[i], primary, self._rot)
        return timed_out, secondary

    def restart_progress(self, which, now):
        """Count progress of the goals ``which`` afresh from ``now`` [s] (a new approach)."""
        self.best_error[which] = math.inf
        self.best_time[which] = now

    def excuse_pause(self, which, now):
        """
        Excuse a pause: no lack of progress for the goals ``which``, waiting from ``now`` [s].

        A pause is no lack of progress (a stale gap, a joint-space approach for every
        goal, a position-IK solve pending): their best error is kept, only the time since
        it was reached restarts.
        """
        self.best_time[which] = now

    def start_at(self, poses):
        """Start: effectors without a pose goal keep (or move from) ``poses`` (the first state)."""
        idle = self.mode != MODE_POSE
        self.targets[idle] = poses[idle]

    def withdraw_reached(self, which):
        """Withdraw ``reached`` of the goals ``which`` (indices or a mask): measured off."""
        self.reached[which] = False

    def clear_reason(self, i):
        """Clear effector ``i``'s unreachable reason (its goal ended or changed)."""
        self.unreachable_reason[i] = ''

    def judge(self, err_p, err_r, velocities, now, unreachable_time):
        """
        Set ``reached``, ``stuck`` and ``slow`` at this tick (:func:`_judge_kernel`).

        ``err_p`` [m], ``err_r`` [rad]: each effector's error at the commanded state,
        judged by each goal's tolerances (:attr:`tol_p`, :attr:`tol_r`);
        ``velocities``: the command window's [rad/s]. Returns the kernel's flags.
        """
        return _judge_kernel(err_p, err_r, self.tol_p, self.tol_r, self.mode, self.parked,
                             velocities.reshape(-1), self.best_error, self.best_time, now,
                             unreachable_time, self.reached, self.stuck, self.slow)

    def settle_hands(self, hand_speed, row_frame, err_p, err_r):
        """
        Set ``reached`` for pose goals within tolerance whose hand is at rest.

        ``hand_speed``: per task row, the largest ``|J v|`` over the command window
        (rotation rows weighted by ``orientation_weight`` [m/rad]); below ``GOAL_SPEED``
        the hand is at rest though the joints may still move in the nullspace.
        """
        for i in ((self.mode == MODE_POSE) & ~self.parked & ~self.reached).nonzero()[0]:
            if (err_p[i] <= self.tol_p[i] and err_r[i] <= self.tol_r[i]
                    and np.max(hand_speed[row_frame == i]) < GOAL_SPEED):
                self.reached[i] = True

    def park(self, which, reason, poses, errors):
        """
        Goals of effectors ``which`` (mask) are unreachable: each holds ``poses[i]``.

        Its own placement becomes its target, so the slow drift of damped least squares
        along the singular direction stops; ``goal`` keeps the user's goal. ``errors(i)``
        gives the position [m] and rotation [rad] error left, for the log.
        """
        self.targets[which] = poses[which]
        self.parked |= which
        for i in np.flatnonzero(which):
            self.state[i] = GoalState.UNREACHABLE
            self.unreachable_reason[i] = reason
            err_p, err_r = errors(i)
            self.events.post('goal_unreachable', 'warn',
                             f"goal {self.ids[i]} for '{self.names[i]}' unreachable: {reason}; "
                             f'error {err_p:.4g} m, {err_r:.4g} rad; holding the closest pose')

    def transitions(self, err_p, err_r):
        """Goals ACCEPTED -> ACTIVE at the first tick, ACTIVE <-> REACHED by ``reached``."""
        states, reached = self.state, self.reached
        accepted = states == _ACCEPTED
        if not (accepted.any() or (reached != self._reached_before).any()):
            return
        states[accepted] = _ACTIVE
        for i in (reached & ~self._reached_before).nonzero()[0]:
            if states[i] == _ACTIVE:
                states[i] = _REACHED
                self.events.post('goal_reached', 'info',
                                 f"goal {self.ids[i]} for '{self.names[i]}' reached (error "
                                 f'{err_p[i]:.3g} m, {err_r[i]:.3g} rad)')
        states[(states == _REACHED) & ~reached] = _ACTIVE
        self._reached_before[:] = reached

    def shift(self, jump):
        """Move the times kept by ``jump`` [s] (a backward clock jump)."""
        self.twist_time += jump
        self.best_time += jump
        self.motions = [None if m is None else (m[0], m[1] + jump) for m in self.motions]


def _feed_forward(T, dp, dr, out):
    """Pose ``T`` moved by ``dp`` [m] and turned by ``exp(dr)`` [rad]: ``out`` (4x4)."""
    out[:3, 3] = T[:3, 3] + dp
    out[:3, :3] = pin.exp3(dr) @ T[:3, :3]


def _toward(A, B, w, rot):
    """
    Move pose ``B`` (4x4, in place) to ``w`` of the way from pose ``A``: the primary weight.

    ``p = p_A + w (p_B - p_A)``, ``R = exp(w log(R_B R_A^T)) R_A``: the task's correction
    ``J^# K e`` scaled by ``w`` (SAM sec. V's primary weight; ``rot``: a 3-vector buffer).
    """
    B[:3, 3] = A[:3, 3] + w * (B[:3, 3] - A[:3, 3])
    log3(B[:3, :3] @ A[:3, :3].T, rot)
    B[:3, :3] = pin.exp3(w * rot) @ A[:3, :3]

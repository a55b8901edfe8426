"""
The goal referee: after each tick, which goals are reached, stalled, or unreachable.

A goal is *reached* when the kernel's rule holds at the commanded state (within the goal
tolerances, the command window at rest: :meth:`GoalSet.judge
<ik_control.control.goal_set.GoalSet.judge>`) and the pose measured from joint_states is
within the tolerances too. A goal whose error has not fallen by ``PROGRESS_FRACTION`` of
itself for ``unreachable_time`` (scale-free) is *stalled*: it goes to the position-IK
fallback (:mod:`ik_control.control.fallback`) up to ``MAX_TRIES`` times, then it is
*unreachable*: the effector is *parked* at the closest pose it reached. The referee also
takes the fallback's answers (approach its solution, or park the goals it could not
solve) and ends the joint-space approach when it arrives.

Every decision is an event on the controller's queue; nothing here runs unless a goal's
state changes, except :meth:`GoalReferee.judge`, which costs one compiled kernel call per
tick.
"""

from ik_control.control.fallback import MAX_TRIES
from ik_control.control.goal_set import SETTLING
from ik_control.control.robot_link import join_velocity
from ik_control.ik.pose_error import pose_distance
from ik_control.ik.solver import INFO_SIGMA_MIN
import numpy as np

__all__ = ['GoalReferee']

#: A joint-space approach that the collision stage bounds this many ``unreachable_time``
#: in a row, with no progress (:data:`APPROACH_PROGRESS`) for one ``unreachable_time``, is
#: blocked: its goals are unreachable for COLLISION
APPROACH_BLOCKED = 2.0
#: progress of an approach: its largest joint distance to the next waypoint falls by this
#: fraction of itself [-]
APPROACH_PROGRESS = 0.01


class GoalReferee:
    """
    Judge the goals of a :class:`GoalSet` after each tick (module docstring).

    Parameters
    ----------
    model:
        The :class:`~ik_control.kinematics.robot_model.RobotModel`.
    goals:
        The controller's :class:`~ik_control.control.goal_set.GoalSet`.
    fallback:
        Its :class:`~ik_control.control.fallback.IkFallback`.
    solver:
        Its :class:`~ik_control.ik.solver.VelocitySolver`: the errors, Jacobian and poses
        of the tick just solved.
    events:
        Its :class:`~ik_control.control.goal_state.EventQueue`.

    """

    def __init__(self, model, goals, fallback, solver, events):
        self.model, self.goals, self.fallback = model, goals, fallback
        self.solver, self.events = solver, events
        self._meas_ws = model.workspace()  # FK of the measured state
        self.collision = None       # the controller's CollisionStage, or None
        self.blocked_since = None   # since when the collision stage bounds the motion [s]
        self._approach_left = np.inf   # the approach's least distance to the IK's solution so
        self._approach_time = 0.0      # far [rad], and when it last fell (APPROACH_PROGRESS)

    def collision_reason(self):
        """'COLLISION: ...' naming the nearest pair while the collision stage bounds, or ''."""
        stage = self.collision
        if stage is None or self.blocked_since is None or not stage.closest_pair:
            return ''
        return (f'COLLISION: {stage.closest_pair} {1e3 * stage.closest_distance:.1f} mm apart '
                f'(security distance {1e3 * stage.security:g} mm)')

    def judge(self, now, velocities, config, q_cmd, q_meas):
        """
        Set goal reached per effector, and act on targets the effectors make no progress to.

        Reached: the kernel's rule at the commanded state (within tolerance, the command
        window ``velocities`` at rest), and the pose measured from joint_states
        (``q_meas``) within tolerance too. No progress: the error has not fallen by
        ``PROGRESS_FRACTION`` of itself (in tolerances: scale-free) for
        ``unreachable_time`` seconds with the arm at rest, or for ``CREEP_PERIODS`` times as
        long while it still creeps. Such a goal goes to the position-IK fallback
        (:meth:`_request_fallback`, seeded with ``q_cmd``), or, once it has had
        ``MAX_TRIES`` (or with ``fallback.strategy: off``), is unreachable (:meth:`park`).
        Returns True while some goal is parked.
        """
        cfg, goals, solver, fallback = config, self.goals, self.solver, self.fallback
        if fallback.approach is not None:
            # the joint-space approach is progress for every goal: its q* reaches all the
            # targets together. Counted for the stalled hand alone, the other hand's error
            # (which the approach need not shrink) flagged it slow, its own fallback
            # replaced the approach, and the first hand, its tries spent, was parked
            # unreachable (SIMON under load)
            goals.excuse_pause(slice(None), now)
        flags = goals.judge(solver.err_pos, solver.err_rot, velocities, now,
                            cfg.goal.unreachable_time)
        if flags & SETTLING:  # the hand's own speed, per task row, over the window
            hand = np.max(np.abs(velocities @ solver.J.T), axis=0)
            goals.settle_hands(hand, self.model.row_frame, solver.err_pos, solver.err_rot)
        if goals.reached.any():
            self._confirm_measured(q_meas)
        if flags:
            stuck = goals.stuck & ~fallback.seeking  # a pending solve decides those
            retry = ((stuck | goals.slow) & ~fallback.seeking
                     & (fallback.tries < MAX_TRIES))
            if cfg.fallback.strategy != 'off' and retry.any():
                self._request_fallback(now, retry, q_cmd, cfg.fallback.strategy)
                stuck &= ~retry
            if stuck.any():
                why = ('no progress again after the position-IK fallback'
                       if cfg.fallback.strategy != 'off' else 'no progress (fallback off)')
                blocked = self.collision_reason()
                self.park(stuck, f'{blocked}; {why}' if blocked else
                          f'{why} for {cfg.goal.unreachable_time:g} s')
        done = goals.reached | goals.parked
        if fallback.posture is not None and done[fallback.serving].all():
            self.end_fallback(np.flatnonzero(fallback.serving)[0])
        goals.transitions(solver.err_pos, solver.err_rot)
        return bool(goals.parked.any())

    def _confirm_measured(self, q_meas):
        """Keep ``goal_reached`` only where the measured pose is within tolerance too."""
        ws, goals = self._meas_ws, self.goals
        ws.update(q_meas, jacobian=False)
        for i in np.flatnonzero(goals.reached):
            err_p, err_r = pose_distance(ws.frame_T[i], goals.targets[i])
            if err_p > goals.tol_p[i] or (self.model.task_is_pose[i] and err_r > goals.tol_r[i]):
                self.goals.withdraw_reached(i)

    def park(self, which, reason):
        """Goals of effectors ``which`` (bool mask) are unreachable: hold the closest pose."""
        if self.fallback.serving[which].any():
            self.end_fallback(np.flatnonzero(which & self.fallback.serving)[0])
        frame_T, goal = self.solver.frame_T, self.goals.goal
        self.goals.park(which, reason, frame_T, lambda i: pose_distance(frame_T[i], goal[i]))

    def _request_fallback(self, now, which, q_cmd, strategy):
        """Ask the position IK for every effector's target at once (module fallback.py)."""
        which = self.fallback.ask(which, self.goals.targets, q_cmd, self.goals.ids)
        self.goals.excuse_pause(which, now)
        names = [self.model.end_effector_names[i] for i in np.flatnonzero(which)]
        self.events.post('fallback', 'info',
                         f'no progress to the goal of {names} (error '
                         f'{float(np.max(self.solver.err_pos[which])):.4g} m, sigma_min '
                         f'{float(self.solver.info[INFO_SIGMA_MIN]):.3g}): asking the '
                         f'position IK ({strategy} strategy)')

    def poll(self, now, strategy):
        """Take a finished position-IK solve: approach its solution, or park the goals."""
        done = self.fallback.take(self.goals.ids, strategy)
        if done is None:
            return
        which, result = done
        if result.success and self.collision is not None:
            rows, d = self.collision.cm.distances(result.q, within=self.collision.security)
            if rows.size:
                i = int(np.argmin(d))
                self.park(which, "COLLISION: the position IK's solution brings "
                          f'{self.collision.cm.pair_name(rows[i])} {1e3 * d[i]:.1f} mm apart')
                return
        if not result.success and result.rejected:
            self.park(which, f'COLLISION: the {result.rejected} solutions the position IK '
                      f'found in {1e3 * self.fallback.time_budget:.3g} ms of CPU each bring '
                      'a pair nearer than the security distance')
            return
        if not result.success:
            self.park(which, f'the position IK found no solution in '
                      f'{1e3 * self.fallback.time_budget:.3g} ms of CPU (best '
                      f'{result.position_error:.3g} m, {result.rotation_error:.3g} rad)')
            return
        self.goals.restart_progress(which, now)
        self._approach_left = np.inf  # a new approach: its progress from here
        self.events.post('fallback_found', 'info',
                         f'position IK solution in {1e3 * result.seconds:.3g} ms (error '
                         f'{result.position_error:.2g} m): '
                         + ('joint-space approach, then Cartesian tracking'
                            if self.fallback.approach is not None
                            else 'pulled toward it in the nullspace'))

    def approach_velocity(self, now, q_cmd, v_max, a_max, out, unreachable_time):
        """
        Joint strategy: desired velocity toward the IK's solution into ``out``.

        Hands back to Cartesian tracking (``out`` untouched) once every joint is within
        ``HANDBACK`` of the solution. ``unreachable_time`` [s]: ``goal.unreachable_time``,
        the measure of an approach blocked without progress (:data:`APPROACH_BLOCKED`).
        """
        fallback = self.fallback
        target = fallback.approach
        left = float(np.max(np.abs(target - q_cmd)))
        if left < (1.0 - APPROACH_PROGRESS) * self._approach_left:
            self._approach_left, self._approach_time = left, now
        if (self.blocked_since is not None
                and now - self.blocked_since > APPROACH_BLOCKED * unreachable_time
                and now - self._approach_time > unreachable_time):
            # the straight joint-space path to the IK's configuration runs into a pair:
            # another solution may have a free path (the goal asks again when it stalls),
            # unless its tries are spent
            serving = fallback.serving.copy()
            if (fallback.tries[serving] >= MAX_TRIES).any():
                self.park(serving, f'{self.collision_reason()}; the joint-space approach to '
                          "the position IK's solution is blocked")
                return
            tries = fallback.tries.copy()
            self.end_fallback(np.flatnonzero(serving)[0])
            fallback.tries[:] = tries  # (ending it would forget them)
            self.goals.restart_progress(slice(None), now)
            self.events.post('fallback_blocked', 'info', 'joint-space approach blocked: '
                             f'{self.collision_reason()}; Cartesian tracking from here')
            return
        if fallback.approach_done(q_cmd):
            self.end_fallback(np.flatnonzero(fallback.serving)[0])
            self.goals.restart_progress(slice(None), now)  # every goal, as in judge
            self.events.post('fallback_handback', 'info', 'joint-space approach done: '
                             'Cartesian tracking from here')
            return
        join_velocity(q_cmd, target, v_max, a_max, out)

    def end_fallback(self, i):
        """Effector ``i``'s goal ended or changed: drop a fallback it is part of."""
        self.fallback.end(i)
        self.goals.clear_reason(i)

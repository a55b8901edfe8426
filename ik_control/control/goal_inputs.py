"""
The controller's goal API: what each end effector (or the whole arm) is to do next.

Each call validates its input (:class:`~ik_control.validation.InputError` with the reason
for anything that cannot be followed: the command does not change), ends what it
replaces (the goal the effector had, its position-IK fallback, a joint trajectory being
followed) and hands the new goal to the :class:`~ik_control.control.goal_set.GoalSet`,
which records its lifecycle. The next tick follows it.

* pose goals: :meth:`GoalInputs.set_pose_target`, :meth:`GoalInputs.set_target_matrix`;
* pose goals for several effectors with one outcome (an action's):
  :meth:`GoalInputs.track_pose_goal`, :meth:`GoalInputs.cancel_goal`,
  :meth:`GoalInputs.preempt_goal` (:mod:`~ik_control.control.goal_outcomes`);
* moving goals (SAM sec. VI): :meth:`GoalInputs.motion_start`,
  :meth:`GoalInputs.follow_motion`;
* velocity goals (SAM's joystick mode): :meth:`GoalInputs.set_twist_target`;
* obstacles (SAM eq. 19): :meth:`GoalInputs.set_obstacles`,
  :meth:`GoalInputs.set_obstacle_shapes`;
* a joint trajectory (a planner's, the style adapter's):
  :meth:`GoalInputs.set_joint_trajectory`;
* ending and pausing: :meth:`GoalInputs.stop_goals`, :meth:`GoalInputs.hold`,
  :meth:`GoalInputs.resume` (handing the robot back and taking it again:
  :mod:`~ik_control.control.handover`).

A mixin of :class:`~ik_control.control.controller.ResolvedRateController`, whose goals,
solver, referee, clock and commanded state it uses.
"""

from ik_control.control.goal_outcomes import Outcome
from ik_control.control.goal_set import MODE_MOTION, MODE_TWIST, STILL_SPEED
from ik_control.control.joint_goal import JointGoal
from ik_control.validation import (finite_vector, InputError, quaternion_to_matrix,
                                   rigid_transform, unit_quaternion)
import numpy as np

__all__ = ['GoalInputs', 'MAX_TWIST']

PLAN_CHECK_STEP = 0.01  # largest joint move between two samples of a plan's check [rad]
MAX_TWIST = 1e3  # twist components beyond this are refused as malformed [m/s, rad/s]


class GoalInputs:
    """The goal API of the resolved-rate controller (module docstring)."""

    def set_pose_target(self, frame, position, quaternion_xyzw):
        """Pose goal for end effector ``frame`` in the base frame [m, unit quaternion]."""
        p = finite_vector(position, 3, 'target position')
        T = np.eye(4)
        T[:3, :3] = quaternion_to_matrix(unit_quaternion(quaternion_xyzw, 'target orientation'))
        T[:3, 3] = p
        self.set_target_matrix(frame, T)

    def set_target_matrix(self, frame, T):
        """
        Pose goal as a finite 4x4 homogeneous matrix in the base frame.

        Raises :class:`InputError` unless ``T`` is a finite rigid transform (rotation
        orthonormal with determinant 1 within ``RIGID_TOLERANCE``, last row 0 0 0 1).
        """
        self.check_engaged()
        i = self.end_effector_index(frame)
        self._accept_pose(i, rigid_transform(T, 'target matrix'), None)

    def _accept_pose(self, i, T, tolerance):
        """Effector ``i`` pursues the pose ``T`` (checked) within ``tolerance`` (None: default)."""
        self._cancel_joint_goal('a pose goal')
        self._end_goal(i)
        self.goals.accept_pose(i, T, tolerance)
        self.solver.reset_targets([i])  # Buss's D_max,i: this effector's target jumped

    # ------------------------------------------------------------------ goals with an outcome
    def track_pose_goal(self, frames, targets, tolerances, time_limit, now):
        """
        Pose goals for the effectors ``frames`` as one request with an outcome (an action's).

        ``targets``: a 4x4 placement (base frame) each; ``tolerances``: ``(position [m],
        rotation [rad])`` each, > 0; ``time_limit`` [s], 0 for none. Each becomes its
        effector's pose goal as :meth:`set_target_matrix` makes it, reached within its own
        tolerances. Returns the :class:`~ik_control.control.goal_outcomes.TrackedGoal` whose
        outcome the ticks decide (:mod:`~ik_control.control.goal_outcomes`). Raises
        :class:`InputError` for a request that cannot be followed; nothing changes then.
        """
        self.check_engaged()
        which = [self.end_effector_index(frame) for frame in frames]
        if not which or len(set(which)) != len(which):
            raise InputError(f'name each end effector once, got {list(frames)}')
        poses = [rigid_transform(T, f'{frame} target') for frame, T in zip(frames, targets)]
        tolerances = [tuple(finite_vector(tol, 2, f'{frame} tolerances'))
                      for frame, tol in zip(frames, tolerances)]
        if len(poses) != len(which) or len(tolerances) != len(which):
            raise InputError('one target and one tolerance pair per end effector')
        if not all(min(tol) > 0.0 for tol in tolerances):
            raise InputError(f'tolerances must be > 0, got {tolerances}')
        if not time_limit >= 0.0:
            raise InputError(f'time_limit must be >= 0 s, got {time_limit}')
        self._observe_clock(now)
        for i, T, tolerance in zip(which, poses, tolerances):
            self._accept_pose(i, T, tolerance)
        return self.outcomes.track(which, now, time_limit)

    def cancel_goal(self, goal, reason='canceled: holding the arm where it stopped'):
        """
        End the tracked ``goal`` ``CANCELLED``: its effectors stop where the arm comes to rest.

        Every joint brakes within its acceleration limit (the goals are paused as by
        :meth:`hold`); at rest the goal's effectors keep that pose, the others' goals go
        on (a goal given to one of them meanwhile too). No effect on a decided goal.
        """
        if self.outcomes.close(goal, Outcome.CANCELLED, reason):
            self._stop_at_rest(goal)

    def preempt_goal(self, goal, reason):
        """End the tracked ``goal`` ``REPLACED`` by the caller's rule; the arm goes on."""
        self.outcomes.close(goal, Outcome.REPLACED, reason)

    def _stop_at_rest(self, goal):
        """Brake to rest, then ``goal``'s effectors keep their pose (:meth:`cancel_goal`)."""
        which = goal.effectors
        self._stop_ids[which] = self.goals.ids[which]
        if self.goals.holding and not self._braking:  # ~/hold's: they stop now
            self._end_stop()
            return
        self._braking = True
        self.goals.pause('braking to rest')

    def _end_stop(self):
        """Stop the effectors of :meth:`_stop_at_rest` (those not given a newer goal since)."""
        stop = self._stop_ids >= 0
        if stop.any():
            which = np.flatnonzero(stop & (self._stop_ids == self.goals.ids))
            self._stop_ids[:] = -1
            self.stop_goals([self.model.end_effector_names[i] for i in which])

    def _judge_outcomes(self, now):
        """After a tick: end the braking at rest; decide the tracked goals' outcomes."""
        if self._braking and float(np.max(np.abs(self.v_cmd))) < STILL_SPEED:
            self.resume()
        if self.outcomes.pending:
            for goal in self.outcomes.judge(now, self.status, self.config.joint_state_timeout,
                                            self.joint_goal is not None):
                self._stop_at_rest(goal)

    def motion_start(self, frame, now):
        """
        Return ``(pose, twist)`` a new motion of ``frame`` starts from at ``now`` [s].

        The sample and twist (6 values, base axes) of the motion it follows, so a new one
        replaces it without a jump in pose or velocity; else its pose at the commanded
        state (its target before the first joint_states), at rest.
        """
        self.check_engaged()
        i = self.end_effector_index(frame)
        goals = self.goals
        if goals.mode[i] == MODE_MOTION:
            motion, start = goals.motions[i]
            t = min(max(now - start, 0.0), motion.end_time)
            return motion.sample(t), motion.twist(t)
        if not self.initialized:
            return goals.targets[i].copy(), np.zeros(6)
        self.solver.ws.update(self.q_cmd, jacobian=False)
        return self.solver.ws.frame_T[i].copy(), np.zeros(6)

    def follow_motion(self, frame, motion, now, what):
        """
        Make ``frame`` follow ``motion`` from ``now`` [s]: SAM's moving goals (sec. VI).

        ``motion`` has ``sample(t)`` (pose, 4x4, base frame), ``twist(t)`` (linear [m/s]
        and angular [rad/s] velocity, base axes) at ``t`` [s] after ``now``, and
        ``end_time`` [s]: a key-pose spline (:class:`~.spline_path.KeyPosePath`) or a
        velocity profile (:class:`~.velocity_profile.ProfileMotion`), built from
        :meth:`motion_start`. Each tick the target is its sample at the knot being
        committed, with its twist as feed-forward: eq. (20), the error to the next sample
        drives the arm, so integration error never accumulates. A motion with
        ``weights(t)`` (a profile's ``priorities``, SAM sec. V) scales the obstacle
        avoidance gain by its ``secondary`` weight while it plays. Once it has played out
        its last pose is an ordinary pose goal, reached or unreachable by the usual rules.
        A motion is a goal (``goals.ids``, :class:`GoalState`); ``what`` names it in the log.
        """
        self.check_engaged()
        i = self.end_effector_index(frame)
        self._cancel_joint_goal(what)
        self._end_goal(i)
        self._observe_clock(now)
        self.goals.accept_motion(i, motion, now, what)

    def _end_goal(self, i):
        """Replace the goal effector ``i`` pursues, if any: its fallback ends too."""
        self.referee.end_fallback(i)
        self.goals.replace(i)

    def set_twist_target(self, frame, linear, angular, now):
        """
        Velocity goal for ``frame`` in base axes [m/s, rad/s], valid for ``twist_timeout``.

        Components beyond ``MAX_TWIST`` are refused (:class:`InputError`): they are not
        a command any arm could follow, and they would overflow the target integration.
        """
        self.check_engaged()
        i = self.end_effector_index(frame)
        v = finite_vector(linear, 3, 'twist linear')
        w = finite_vector(angular, 3, 'twist angular')
        if max(np.max(np.abs(v)), np.max(np.abs(w))) > MAX_TWIST:
            raise InputError(f'twist components must be within {MAX_TWIST:g} m/s and rad/s')
        self._cancel_joint_goal('a twist goal')  # only a valid twist ends a plan
        self._observe_clock(now)
        if self.goals.mode[i] != MODE_TWIST:
            self.referee.end_fallback(i)
        self.goals.follow_twist(i, v, w, now,
                                self.solver.frame_T[i] if self.initialized else None)

    def set_obstacles(self, centers, radii):
        """
        Replace the obstacle spheres (centres [m] in the base frame, radii [m]).

        The arm keeps ``obstacles.influence_distance`` of clearance where its task allows (SAM eq.
        19, :mod:`ik_control.ik.obstacles`). Raises :class:`InputError` for non-finite
        centres, radii outside ``[0, MAX_RADIUS]`` or more than ``MAX_OBSTACLES`` spheres.
        """
        try:
            self.obstacles.set_obstacles(centers, radii)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        self._collision_scene([('sphere', _translation(c), (2.0 * r,) * 3)
                               for c, r in zip(self.obstacles.centers, self.obstacles.radii)])

    def set_obstacle_shapes(self, shapes):
        """
        Replace the obstacles by spheres, boxes and cylinders, avoided as exact shapes.

        ``shapes``: ``(shape, pose, scale)`` as :meth:`ObstacleAvoidance.set_shapes` takes
        them (pose 4x4 in the base frame, Marker sizes [m]). Raises :class:`InputError`
        where that raises ValueError.
        """
        shapes = list(shapes)
        try:
            self.obstacles.set_shapes(shapes)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        self._collision_scene(shapes)

    def _collision_scene(self, shapes):
        """Give the collision stage the same obstacles, as exact shapes."""
        if self.guard is not None:
            self.guard.set_scene(shapes)

    def set_joint_trajectory(self, names, times, positions, velocities, start):
        """
        Follow a joint trajectory (a planner's or the style adapter's) starting at ``start``.

        See :mod:`ik_control.control.joint_goal`: ``times`` [s] from ``start`` [s], positions
        [rad or m] and optional velocities for every controlled joint, in any order. A pose
        or twist goal ends it; when it ends the arm holds its last pose. Raises
        :class:`InputError` for a trajectory that cannot be followed.
        """
        self.check_engaged()
        goal = JointGoal(self.model, names, times, positions, velocities, start)
        if self.collision is not None:
            self._check_plan_collisions(goal, start)
        self._cancel_joint_goal('a new joint trajectory')
        for i in range(self.ne):
            self._end_goal(i)  # the plan replaces the Cartesian goals
        self.joint_goal = goal
        self.events.post('trajectory_accepted', 'info',
                         f'joint trajectory accepted: {len(goal.times)} points, ends in '
                         f'{goal.end_time - start:.3g} s')

    def _check_plan_collisions(self, goal, start):
        """
        Refuse a plan that brings a checked pair below ``collision.security_distance``.

        The plan is sampled so that no joint moves more than ``PLAN_CHECK_STEP`` between
        two samples; the first offending sample names the pair and the time.
        """
        stage = self.collision
        times = goal.times
        travel = np.abs(np.diff(goal.positions, axis=0)).max(axis=1) if times.size > 1 else []
        count = max(2, int(np.ceil(np.sum(travel) / PLAN_CHECK_STEP)) + times.size)
        for t in np.linspace(times[0], times[-1], count):
            q, _ = goal.reference(t)
            rows, d = stage.cm.distances(q, within=stage.security)
            if rows.size:
                i = int(np.argmin(d))
                raise InputError(f'joint trajectory refused: at {t - start:.3f} s it brings '
                                 f'{stage.cm.pair_name(rows[i])} {1e3 * d[i]:.1f} mm apart, '
                                 f'below collision.security_distance '
                                 f'({1e3 * stage.security:g} mm)')

    def _cancel_joint_goal(self, why):
        if self.joint_goal is not None:
            self.joint_goal = None
            self.events.post('trajectory_replaced', 'info', f'joint trajectory replaced by {why}')

    def stop_goals(self, frames):
        """
        End the goals of the effectors ``frames``: each holds its pose at the commanded state.

        What a cancelled action goal leaves: the arm stays where it stopped (a later
        ``resume`` does not bring those goals back).
        """
        if not self.initialized:
            return
        which = [self.end_effector_index(frame) for frame in frames]
        for i in which:
            self.referee.end_fallback(i)
        self.solver.ws.update(self.q_cmd, jacobian=False)
        self.goals.stop(which, self.solver.ws.frame_T)
        self.solver.reset_targets(which)

    def hold(self):
        """Pause: decelerate to rest and keep the pose; the goals wait (``HELD``)."""
        self._end_stop()  # the braking of a cancel becomes this hold
        self._braking = False
        self.goals.pause('~/hold')

    def resume(self):
        """
        Leave hold: the paused goals (and those sent during hold) are followed again.

        Effectors without a goal keep the pose they have now. Progress towards the goals
        is counted from now (the pause is no lack of progress).
        """
        self._end_stop()  # a cancelled goal's effectors keep the pose they have
        self._braking = False
        if self.goals.holding and self.initialized:
            self.solver.ws.update(self.q_cmd, jacobian=False)
            self.goals.resume(self._clock, self.solver.ws.frame_T)
            self.solver.reset_targets()
        else:
            self.goals.resume(self._clock, None)


def _translation(c):
    """Return the 4x4 placement of a point ``c`` [m] (identity rotation)."""
    T = np.eye(4)
    T[:3, 3] = c
    return T

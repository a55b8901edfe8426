"""
The ``~/move_to_pose`` action server of ``ik_controller`` (ik_control_interfaces/MoveToPose).

A goal names end effectors and gives one PoseStamped target each, tolerances and a time
limit (the action definition documents the fields). Its life:

* **checked** when it arrives: every name an end effector of the node, none twice, one
  target per name, positions finite, quaternions of unit norm (within 1e-3), frames the
  base frame, a frame of the robot model or a tf2 frame, tolerances finite and >= 0 (one
  or one per effector), a time limit >= 0. ROS 2 cannot attach a reason to a rejection, so
  an invalid goal is accepted and at once aborted with ``INVALID_GOAL`` and the reason in
  ``message`` (as MoveIt's move_group reports errors); the goal being followed carries on;
* **followed**: the targets are set as a ``~/E/target_pose`` message would set them, and
  a 10 Hz timer of the executor thread (never the control loop's tick) publishes feedback
  and decides the outcome from a copy of the controller's state, taken under the node's
  lock in a few microseconds (the loop waits for that lock: nothing slow happens there);
* **succeeds** once every named effector is within its tolerances of its target (position
  ``|p - p_goal|``, rotation angle of ``R_goal^T R``), both as joint_states measure it and
  as commanded, and the command is at rest (every joint slower than the controller's
  ``GOAL_SPEED`` at the newest committed knot, at two checks in a row), at least two ticks
  after the targets were set;
* **aborts** with ``UNREACHABLE`` when the controller parks a named effector
  (``Status.TARGET_UNREACHABLE``: no progress for ``unreachable_time``, the arm still;
  it holds the closest pose), ``STALE_STATE`` when joint_states go stale (the arm is
  stopped) or none came within ``joint_state_timeout`` of acceptance, ``TIMEOUT`` after
  ``time_limit`` (the arm holds where it is), ``PREEMPTED`` when a newer goal takes over:
  another MoveToPose goal, or a ``target_pose``/``target_twist`` message for one of its
  effectors; ``INACTIVE`` when the node is deactivated (the arm brakes to rest; a goal
  sent while it is inactive is ``INVALID_GOAL``);
* **canceled**: the arm stops where it comes to rest: the controller's hold brakes every
  joint within its acceleration limit; at rest, the hold ends with that pose as the
  target of every effector (pose goals that came on the topics meanwhile are kept).

Feedback and results give the errors per effector in goal order, of the measured state.

A goal stays ACCEPTED while it is followed and is executed only once its outcome is
decided (its execute callback applies the outcome and returns the result at once).
rclpy's executor re-runs a pending coroutine on every turn, so an execute callback that
waited for the outcome would keep the executor thread busy, and take the interpreter
lock from the control loop, for as long as the arm moves.
"""

import math
from typing import NamedTuple, Optional

from ik_control.control import status as status_mod
from ik_control.control.goal_set import GOAL_SPEED, MODE_POSE, STILL_SPEED
from ik_control.ik.pose_error import pose_distance
from ik_control.ros.conversions import pose_to_matrix, sec_to_duration, time_to_sec
from ik_control.validation import finite_vector, InputError
import numpy as np
from rclpy.action import ActionServer, CancelResponse, GoalResponse

ACTION_NAME = '~/move_to_pose'
FEEDBACK_RATE = 10.0  # feedback messages and outcome checks per second [Hz]
SETTLE_TICKS = 2  # control ticks after the targets are set before the errors count
_STALE = int(status_mod.Status.STALE_STATE)
_NO_STATE = int(status_mod.Status.NO_STATE)
_INACTIVE = int(status_mod.Status.INACTIVE)


def load_action_type():
    """Return the MoveToPose action type, or None when ik_control_interfaces is not built."""
    try:
        from ik_control_interfaces.action import MoveToPose
    except ImportError:
        return None
    return MoveToPose


def per_effector(values, count, default, name):
    """
    Expand a tolerance list to ``count`` values [m or rad].

    Empty: ``default`` for each; one value: that value for each; else exactly ``count``
    values. Every value finite and >= 0; 0 means ``default``. InputError otherwise.
    """
    values = list(values)
    if len(values) not in (0, 1, count):
        raise InputError(f'{name} needs no value, one, or one per end effector ({count}), '
                         f'got {len(values)}')
    if not values:
        return np.full(count, float(default))
    arr = finite_vector(values, len(values), name)
    if np.any(arr < 0.0):
        raise InputError(f'{name} values must be >= 0, got {list(arr)}')
    arr = np.where(arr == 0.0, default, arr)
    return np.broadcast_to(arr, (count,)).astype(float)


class _Snapshot(NamedTuple):
    """The controller's state for a goal at one check (:meth:`MoveToPoseServer._snapshot`)."""

    now: float  # node time [s]
    status: int  # Status bit field
    commanded: Optional[list]  # commanded placements of the goal's effectors (4x4)
    q_meas: Optional[np.ndarray]  # measured joint positions [rad]
    parked: list  # the goal's effectors parked at their closest pose (unreachable)
    reasons: list  # why, as the controller says (COLLISION: ... when a pair blocks them)
    speed: float  # fastest joint at the newest committed knot [rad/s]
    ticks: int  # control ticks since the targets were set
    preempted: list  # the goal's effectors that took a topic goal since


class _Goal:
    """One accepted goal: its targets in the base frame, tolerances and bookkeeping."""

    def __init__(self, handle, names, indices, targets, tol_p, tol_r, time_limit):
        self.handle = handle
        self.names = names
        self.indices = indices
        self.targets = targets
        self.tol_p = tol_p
        self.tol_r = tol_r
        self.time_limit = time_limit
        self.start = 0.0
        self.ticks = 0
        self.topic_goals = []
        self.speed = math.inf  # fastest joint at the previous check [rad/s]
        self.err_p = np.full(len(names), np.nan)
        self.err_r = np.full(len(names), np.nan)


class MoveToPoseServer:
    """Serve ``~/move_to_pose`` for an :class:`IkControllerNode` (module docstring)."""

    def __init__(self, node, action_type):
        """Create the action server and the (idle) feedback timer on ``node``."""
        self.node = node
        self.action = action_type
        self.active = None
        self._outcomes = {}  # goal id -> (state, result) decided, until executed
        self._releasing = None  # topic goal counts when _hold began, until released
        self._stopped = []  # the effectors of the goal that _hold stopped
        self._ws = node.model.workspace()  # kinematics of the measured state, off the lock
        self._server = ActionServer(node, action_type, ACTION_NAME,
                                    execute_callback=self._execute,
                                    goal_callback=self._on_goal,
                                    handle_accepted_callback=self._on_accepted,
                                    cancel_callback=self._on_cancel)
        self._timer = node.create_timer(1.0 / FEEDBACK_RATE, self._monitor)
        self._timer.cancel()  # runs only while a goal is followed

    @classmethod
    def create(cls, node):
        """Return the server, or None (with a warning) if ik_control_interfaces is missing."""
        action_type = load_action_type()
        if action_type is None:
            node.get_logger().warning(
                'ik_control_interfaces is not installed: the ~/move_to_pose action is off '
                '(make venv builds it; in a workspace, colcon build it: see README)')
            return None
        return cls(node, action_type)

    def destroy(self):
        """Destroy the action server and the timer."""
        self._timer.cancel()
        self.node.destroy_timer(self._timer)
        self._server.destroy()

    # ------------------------------------------------------------------ goal arrival
    def _on_goal(self, request):
        """Accept every goal: an invalid one is aborted with its reason (module docstring)."""
        return GoalResponse.ACCEPT

    def _parse(self, handle):
        """Check a goal and express its targets in the base frame; InputError if invalid."""
        request = handle.request
        node, controller = self.node, self.node.controller
        controller.check_engaged()
        names = list(request.end_effectors)
        if not names:
            raise InputError('end_effectors is empty: name at least one of '
                             f'{list(node.model.end_effector_names)}')
        if len(set(names)) != len(names):
            raise InputError(f'end_effectors names an effector twice: {names}')
        if len(request.targets) != len(names):
            raise InputError(f'{len(request.targets)} targets for {len(names)} end effectors '
                             '(one each, in the same order)')
        indices = np.array([controller.end_effector_index(ee) for ee in names])
        cfg = controller.config
        tol_p = per_effector(request.position_tolerance, len(names),
                             cfg.goal_position_tolerance, 'position_tolerance')
        tol_r = per_effector(request.orientation_tolerance, len(names),
                             cfg.goal_orientation_tolerance, 'orientation_tolerance')
        time_limit = time_to_sec(request.time_limit)
        if not time_limit >= 0.0:
            raise InputError(f'time_limit must be >= 0 s, got {time_limit:g} s')
        targets = np.empty((len(names), 4, 4))
        for k, (ee, target) in enumerate(zip(names, request.targets)):
            T = pose_to_matrix(target.pose, f'{ee} target')
            with node.lock:  # frames of the model are placed at the commanded state
                targets[k] = node.frames.to_base(target.header.frame_id, T,
                                                 target.header.stamp)
            if not np.all(np.isfinite(targets[k])):
                raise InputError(f'{ee} target is not finite in the base frame')
        return _Goal(handle, names, indices, targets, tol_p, tol_r, time_limit)

    def _on_accepted(self, handle):
        """Start following a valid goal (preempting the active one), or abort an invalid one."""
        node = self.node
        try:
            goal = self._parse(handle)
        except InputError as exc:
            with node.lock:
                node._refuse(f'move_to_pose goal: {exc}')
            goal = _Goal(handle, [], np.zeros(0, int), np.zeros((0, 4, 4)), None, None, 0.0)
            self._finish(goal, 'abort', self.action.Result.INVALID_GOAL, str(exc))
        else:
            previous = self.active
            if self._releasing is not None:
                self._release(force=True)
            with node.lock:
                for ee, T in zip(goal.names, goal.targets):
                    node.controller.set_target_matrix(ee, T)
                goal.start = node._now()
                goal.ticks = node.stats.count
                goal.topic_goals = list(node.topic_goals)
                self.active = goal
                node._publish_goal(force=True)  # goal_reached false, as a topic goal does
            if previous is not None:
                self._finish(previous, 'abort', self.action.Result.PREEMPTED,
                             'preempted by a newer MoveToPose goal')
            node.get_logger().debug(f'move_to_pose: following a goal for {goal.names}')
            self._timer.reset()

    def _on_cancel(self, handle):
        """Accept a cancel of the active goal: stop the arm where it comes to rest."""
        goal = self.active
        if goal is None or goal.handle is not handle:
            return CancelResponse.REJECT
        with self.node.lock:
            self._hold(goal)
        # executing now, then canceling (rclpy's next step), the result is CANCELED
        self._finish(goal, 'canceled', self.action.Result.CANCELED,
                     'canceled: holding the arm where it stopped')
        return CancelResponse.ACCEPT

    def _execute(self, handle):
        """Apply the outcome already decided (module docstring: execution comes last)."""
        state, result = self._outcomes.pop(bytes(handle.goal_id.uuid))
        if state == 'succeed':
            handle.succeed()
        elif state == 'canceled':
            handle.canceled()
        else:
            handle.abort()
        return result

    # ------------------------------------------------------------------ following
    def _hold(self, goal):
        """
        Stop the arm where it comes to rest (node lock held): the controller's hold.

        The controller brakes every joint within its acceleration limit (``hold``); once
        the arm is at rest, :meth:`_release` leaves hold with that pose as the target, so
        later goals (topics or actions) are followed as usual.
        """
        if not self.node.controller.holding:  # a hold of ~/hold is the user's to end
            self.node.controller.hold()
            self._releasing = list(self.node.topic_goals)
            self._stopped = list(goal.names)
            self._timer.reset()

    def _release(self, force=False):
        """
        Leave the hold of :meth:`_hold` once the arm is at rest (or at once with ``force``).

        Pose goals that came on the topics during the braking are kept.
        """
        node, c = self.node, self.node.controller
        with node.lock:
            if not force and float(np.max(np.abs(c.v_cmd))) >= STILL_SPEED:
                return
            newer = [(i, c.goals.targets[i].copy()) for i, n in enumerate(node.topic_goals)
                     if n != self._releasing[i] and c.goals.mode[i] == MODE_POSE]
            if c.holding:
                c.resume()
            # the stopped goal's effectors stay where they came to rest
            c.stop_goals([ee for ee in self._stopped
                          if c.end_effector_index(ee) not in dict(newer)])
            for i, T in newer:
                c.set_target_matrix(c.model.end_effectors[i].frame, T)
        self._releasing = None

    def _snapshot(self, goal):
        """Copy the controller's state that decides ``goal`` under the node's lock."""
        node, c = self.node, self.node.controller
        with node.lock:
            now = node._now()
            snap = _Snapshot(
                now=now, status=c.status,
                commanded=([c.current_pose(ee) for ee in goal.names] if c.initialized
                           else None),
                q_meas=None if c.q_meas is None else c.q_meas.copy(),
                parked=[ee for ee, i in zip(goal.names, goal.indices) if c.parked[i]],
                reasons=[c.unreachable_reason[i] for i in goal.indices if c.parked[i]],
                speed=float(np.max(np.abs(c.v_cmd))),
                ticks=node.stats.count - goal.ticks,
                preempted=[ee for ee, i in zip(goal.names, goal.indices)
                           if node.topic_goals[i] != goal.topic_goals[i]])
        return snap

    def _monitor(self):
        """Publish feedback and decide the outcome of the active goal (10 Hz, executor)."""
        if self._releasing is not None:
            self._release()
        goal = self.active
        if goal is None:
            if self._releasing is None:
                self._timer.cancel()
            return
        Result = self.action.Result
        snap = self._snapshot(goal)
        elapsed = snap.now - goal.start
        # errors of the robot as joint_states give it (the feedback's and the result's);
        # the commanded pose must be within tolerance too: the robot stops there
        within = np.zeros(len(goal.names), dtype=bool)
        if snap.q_meas is not None:
            self._ws.update(snap.q_meas, jacobian=False)
            for k, i in enumerate(goal.indices):
                goal.err_p[k], goal.err_r[k] = pose_distance(self._ws.frame_T[i],
                                                             goal.targets[k])
            within = self._within(goal, goal.err_p, goal.err_r)
        if snap.commanded is not None:
            errors = np.array([pose_distance(T, goal.targets[k])
                               for k, T in enumerate(snap.commanded)])
            commanded_within = self._within(goal, errors[:, 0], errors[:, 1])
        timeout = self.node.controller.config.joint_state_timeout
        outcome = None
        if snap.status & _INACTIVE:
            outcome = ('abort', Result.INACTIVE, 'the controller was deactivated: the arm '
                       'braked to rest')
        elif snap.preempted:
            outcome = ('abort', Result.PREEMPTED, 'preempted by a target_pose or '
                       f'target_twist message for {snap.preempted}')
        elif snap.status & _STALE or (snap.status & _NO_STATE and elapsed > timeout):
            outcome = ('abort', Result.STALE_STATE, f'joint_states stale (none for {timeout:g} '
                       's): the arm stopped')
        elif snap.ticks < SETTLE_TICKS:
            pass  # the errors and flags are still those of the previous targets
        elif snap.commanded is not None and (within.all() and commanded_within.all()
                                             and max(snap.speed, goal.speed) < GOAL_SPEED):
            outcome = ('succeed', Result.SUCCEEDED, 'every end effector within tolerance, '
                       'at rest')
        elif snap.parked:
            outcome = ('abort', Result.UNREACHABLE, f'{snap.parked} cannot reach the target '
                       f'({"; ".join(snap.reasons)}): holding the closest pose found')
        elif goal.time_limit > 0.0 and elapsed > goal.time_limit:
            with self.node.lock:
                self._hold(goal)
            outcome = ('abort', Result.TIMEOUT, f'time_limit {goal.time_limit:g} s passed: '
                       'holding the arm where it stopped')
        goal.speed = snap.speed
        feedback = self.action.Feedback()
        feedback.elapsed = sec_to_duration(max(elapsed, 0.0))
        feedback.end_effectors = goal.names
        feedback.position_errors = [float(e) for e in goal.err_p]
        feedback.orientation_errors = [float(e) for e in goal.err_r]
        feedback.within_tolerance = [bool(w) for w in within]
        feedback.status_codes = status_mod.names(snap.status)
        goal.handle.publish_feedback(feedback)
        if outcome is not None:
            self._finish(goal, *outcome)

    def _within(self, goal, err_p, err_r):
        """Which effectors are within tolerance (orientation ignored for position-only ones)."""
        ees = self.node.model.end_effectors
        rot_ok = np.array([err_r[k] <= goal.tol_r[k] or ees[i].mode == 'position'
                           for k, i in enumerate(goal.indices)], dtype=bool)
        return (err_p <= goal.tol_p) & rot_ok

    def _finish(self, goal, state, code, message):
        """Complete ``goal`` with ``state`` ('succeed', 'abort', 'canceled'), code, message."""
        result = self.action.Result(error_code=code, message=message,
                                    end_effectors=goal.names,
                                    position_errors=[float(e) for e in goal.err_p],
                                    orientation_errors=[float(e) for e in goal.err_r])
        # a preempted goal is routine for a client that streams goals: no log line (each
        # is a /rosout message too)
        if code in (self.action.Result.SUCCEEDED, self.action.Result.CANCELED):
            self.node.get_logger().info(f'move_to_pose: {message}')
        elif code != self.action.Result.PREEMPTED:
            self.node.get_logger().warning(f'move_to_pose: {message}')
        if self.active is goal:
            self.active = None
            if self._releasing is None:
                self._timer.cancel()
        self._outcomes[bytes(goal.handle.goal_id.uuid)] = (state, result)
        goal.handle.execute()

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
* **followed** as one request of the controller
  (:meth:`~ik_control.control.goal_inputs.GoalInputs.track_pose_goal`): the targets become
  the effectors' pose goals, each reached within the goal's tolerances, and the controller
  decides the outcome at the end of its tick
  (:class:`~ik_control.control.goal_outcomes.OutcomeBook`), as it judges a topic's goal;
  this server only maps that outcome to the result. The server never calls the
  controller: what it asks (follow, preempt, cancel) it posts to the node's inbox
  (:class:`~ik_control.control.inbox.Inbox`), which the next tick runs with its own time;
  what it checks and reads (the goal against the controller's effectors, the frames at
  the commanded state, the outcome and a copy of the measured state for the feedback) it
  reads through the node's ``read``, under the tick's lock, in a few microseconds. A
  10 Hz timer of the executor thread (never the control loop's tick) reads the outcome;
* **succeeds** (``REACHED``) once every named effector is within its tolerances of its
  target (position ``|p - p_goal|``, rotation angle of ``R_goal^T R``), both as
  joint_states measure it and as commanded, and the command window is at rest;
* **aborts** with ``UNREACHABLE`` when the controller parks a named effector (no progress
  for ``unreachable_time``: it holds the closest pose), ``STALE_STATE`` when joint_states
  go stale (the arm is stopped) or none came within ``joint_state_timeout`` of acceptance,
  ``TIMEOUT`` after ``time_limit`` (the arm stops where it comes to rest, as on a
  cancel), ``PREEMPTED`` when a newer goal takes over: another MoveToPose goal, or a
  ``target_pose``/``target_twist``/``target_path``/``velocity_profile``/
  ``joint_trajectory`` message for one of its effectors; ``INACTIVE`` when the node is
  deactivated (the arm brakes to rest; a goal sent while it is inactive is
  ``INVALID_GOAL``);
* **canceled**: the controller's :meth:`~ik_control.control.goal_inputs.GoalInputs.
  cancel_goal`: every joint brakes within its acceleration limit, and at rest the goal's
  effectors keep that pose (goals the others have, or that came meanwhile, go on).

Feedback and results give the errors per effector in goal order, of the measured state.

A goal stays ACCEPTED while it is followed and is executed only once its outcome is
decided (its execute callback applies the outcome and returns the result at once).
rclpy's executor re-runs a pending coroutine on every turn, so an execute callback that
waited for the outcome would keep the executor thread busy, and take the interpreter
lock from the control loop, for as long as the arm moves.
"""

from ik_control.control import status as status_mod
from ik_control.control.goal_outcomes import Outcome
from ik_control.ik.pose_error import pose_distance
from ik_control.ros.conversions import pose_to_matrix, sec_to_duration, time_to_sec
from ik_control.validation import finite_vector, InputError
import numpy as np
from rclpy.action import ActionServer, CancelResponse, GoalResponse

ACTION_NAME = '~/move_to_pose'
FEEDBACK_RATE = 10.0  # feedback messages and outcome checks per second [Hz]
_PREEMPTED_BY_ACTION = 'preempted by a newer MoveToPose goal'
#: the controller's outcome -> the action's state and result code (Result's constant)
OUTCOMES = {Outcome.REACHED: ('succeed', 'SUCCEEDED'),
            Outcome.UNREACHABLE: ('abort', 'UNREACHABLE'),
            Outcome.REPLACED: ('abort', 'PREEMPTED'),
            Outcome.CANCELLED: ('canceled', 'CANCELED'),
            Outcome.TIMED_OUT: ('abort', 'TIMEOUT'),
            Outcome.STALE: ('abort', 'STALE_STATE'),
            Outcome.INACTIVE: ('abort', 'INACTIVE')}


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


class _Goal:
    """One accepted goal: its targets in the base frame, tolerances, the controller's request."""

    def __init__(self, handle, names, indices, targets, tol_p, tol_r, time_limit):
        self.handle = handle
        self.names = names
        self.indices = indices
        self.targets = targets
        self.tol_p = tol_p
        self.tol_r = tol_r
        self.time_limit = time_limit
        self.request = None  # the controller's TrackedGoal
        self.controller = None  # whose request it is (cleanup makes a new controller)
        self.failure = None  # why the tick could not take it, if it could not
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

    def _parse(self, handle, controller):
        """
        Check a goal and express its targets in the base frame; InputError if invalid.

        Run through the node's :meth:`read` (under the tick's lock): the goal is checked
        against the controller as it is, and model frames are placed at its commanded state.
        """
        request = handle.request
        node = self.node
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
                             cfg.goal.position_tolerance, 'position_tolerance')
        tol_r = per_effector(request.orientation_tolerance, len(names),
                             cfg.goal.orientation_tolerance, 'orientation_tolerance')
        time_limit = time_to_sec(request.time_limit)
        if not time_limit >= 0.0:
            raise InputError(f'time_limit must be >= 0 s, got {time_limit:g} s')
        targets = np.empty((len(names), 4, 4))
        for k, (ee, target) in enumerate(zip(names, request.targets)):
            T = pose_to_matrix(target.pose, f'{ee} target')
            targets[k] = node.frames.to_base(target.header.frame_id, T, target.header.stamp)
            if not np.all(np.isfinite(targets[k])):
                raise InputError(f'{ee} target is not finite in the base frame')
        goal = _Goal(handle, names, indices, targets, tol_p, tol_r, time_limit)
        goal.controller = controller
        return goal

    def _on_accepted(self, handle):
        """
        Start following a valid goal (preempting the active one), or abort an invalid one.

        The goal is checked here; the controller takes it at the start of the next tick
        (an entry of the node's inbox), and the active goal it preempts ends now.
        """
        node = self.node
        try:
            goal = node.read(lambda c, now: self._parse(handle, c))
        except InputError as exc:
            node.refuse(f'move_to_pose goal: {exc}')
            goal = _Goal(handle, [], np.zeros(0, int), np.zeros((0, 4, 4)), None, None, 0.0)
            self._finish(goal, 'abort', self.action.Result.INVALID_GOAL, str(exc))
            return
        previous = self.active  # (a refused goal preempts nothing)
        self.active = goal

        def track(now):
            c = goal.controller
            if c is not node.controller:  # cleaned up meanwhile: the monitor says so
                return
            try:
                goal.request = c.track_pose_goal(goal.names, goal.targets,
                                                 list(zip(goal.tol_p, goal.tol_r)),
                                                 goal.time_limit, now)
            except InputError as exc:  # deactivated since it was checked
                goal.failure = str(exc)
                raise InputError(f'move_to_pose goal: {exc}') from None
            if previous is not None and previous.request is not None \
                    and previous.controller is c:
                c.preempt_goal(previous.request, _PREEMPTED_BY_ACTION)
            node.announce_goal()  # goal_reached false, as a topic goal does
        node.post(track)
        if previous is not None:
            self._finish(previous, 'abort', self.action.Result.PREEMPTED, _PREEMPTED_BY_ACTION)
        node.get_logger().debug(f'move_to_pose: following a goal for {goal.names}')
        self._timer.reset()

    def _on_cancel(self, handle):
        """Accept a cancel of the active goal: the controller stops the arm where it rests."""
        goal = self.active
        if goal is None or goal.handle is not handle:
            return CancelResponse.REJECT
        node = self.node

        def cancel(now):  # after the goal's own entry: its request is there
            if goal.request is not None and goal.controller is node.controller:
                goal.controller.cancel_goal(goal.request)
        node.post(cancel)
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
    def _monitor(self):
        """Publish feedback; map the controller's outcome of the active goal (10 Hz, executor)."""
        goal = self.active
        if goal is None:
            self._timer.cancel()
            return
        now, status, q_meas, outcome, reason = self.node.read(
            lambda c, now: self._look(goal, c, now))
        if goal.request is None and outcome == Outcome.PENDING:
            return  # the tick has not taken it yet
        # errors of the robot as joint_states give it (the feedback's and the result's)
        within = np.zeros(len(goal.names), dtype=bool)
        if q_meas is not None:
            self._ws.update(q_meas, jacobian=False)
            for k, i in enumerate(goal.indices):
                goal.err_p[k], goal.err_r[k] = pose_distance(self._ws.frame_T[i],
                                                             goal.targets[k])
            within = self._within(goal, goal.err_p, goal.err_r)
        feedback = self.action.Feedback()
        start = now if goal.request is None else goal.request.start
        feedback.elapsed = sec_to_duration(max(now - start, 0.0))
        feedback.end_effectors = goal.names
        feedback.position_errors = [float(e) for e in goal.err_p]
        feedback.orientation_errors = [float(e) for e in goal.err_r]
        feedback.within_tolerance = [bool(w) for w in within]
        feedback.status_codes = status_mod.names(status)
        goal.handle.publish_feedback(feedback)
        if outcome != Outcome.PENDING:
            state, code = OUTCOMES[outcome]
            if outcome == Outcome.REPLACED:
                reason = ('preempted by a target_pose, target_twist, target_path, '
                          f'velocity_profile or joint_trajectory message: {reason}')
            self._finish(goal, state, getattr(self.action.Result, code), reason)

    @staticmethod
    def _look(goal, c, now):
        """Return copies of what the monitor needs of controller ``c`` at ``now`` (quickly)."""
        q_meas = None if c.robot.q is None else c.robot.q.copy()
        if goal.controller is not c:  # cleaned up: a new controller
            return now, c.status, q_meas, Outcome.INACTIVE, 'the controller was cleaned up'
        if goal.failure is not None:  # the tick refused it (deactivated meanwhile)
            return now, c.status, q_meas, Outcome.INACTIVE, goal.failure
        request = goal.request
        if request is None:
            return now, c.status, q_meas, Outcome.PENDING, ''
        return now, c.status, q_meas, request.outcome, request.reason

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
            self._timer.cancel()
        self._outcomes[bytes(goal.handle.goal_id.uuid)] = (state, result)
        goal.handle.execute()

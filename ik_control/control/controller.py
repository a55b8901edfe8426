"""
The resolved-motion-rate controller: latest state and goals -> one limited joint command.

Every tick (Whitney's resolved motion rate control, SAM sec. III-V; Buss mode (i)) runs
four stages, a method each: the link to the robot (:meth:`~ResolvedRateController.
_link_stage`), the desired velocity (:meth:`~ResolvedRateController._velocity_stage`),
limit and commit (:mod:`~ik_control.control.commit_stage`: the limiter and the knot ``q_c +
(v_prev + v_c) dt / 2``), judge (:meth:`~ResolvedRateController._judge_stage`); then the
outcome of each request for several effectors (an action's,
:mod:`~ik_control.control.goal_outcomes`). Each end effector has a goal: a pose
(``set_pose_target``), a twist (``set_twist_target``, SAM's joystick mode: a virtual
target integrated at the commanded twist, with feed-forward, decelerating to rest after
``twist_timeout``), or, without either, the pose it had when the controller started.

Without joint states for ``joint_state_timeout`` the controller stops commanding motion:
its last command is a stop trajectory that brakes every joint at its acceleration limit
from the commanded state (``q(t) = q + v t - a sign(v) t^2 / 2`` until ``t = |v| / a``),
then it commands nothing until states return (``STALE_STATE``); it resumes from the
measured state, at rest (the robot is there: its command stream had stopped).

Every goal ends (:mod:`~ik_control.control.goal_state`): reached (the *measured* pose,
from joint_states, within tolerance, and the command at rest), replaced, or unreachable.
A goal whose error has not fallen by ``PROGRESS_FRACTION`` of itself for
``unreachable_time`` (scale-free: a goal 10 m or 1e12 m away is judged as surely as one
1 cm beyond reach, while the arm still creeps) is handed to the position-IK fallback
(:mod:`~ik_control.control.fallback`); it is unreachable when the position IK finds no
solution, or when it stalls again after the fallback (both judged by
:class:`~ik_control.control.goal_referee.GoalReferee`). ``hold`` pauses the goals,
``resume`` continues them. Transitions are queued as events (:meth:`drain_events`).

Times come from the caller's clock (the node's: system or simulated time). When it jumps
backward (a simulation reset, a looping bag, a clock step), every time the controller
keeps -- the state's, the twists', the last tick's -- is shifted by the jump, so ages
carry on as if the clock had not jumped: a twist still times out ``twist_timeout`` after
it arrived, and a state is still stale ``joint_state_timeout`` after it came. A forward
jump is time that passed: twists time out, the state may go stale (the arm stops). So
every ``now`` given to a method must be a clock reading taken in call order (one taken
before one already given is a backward jump): the node's inputs wait in an
:class:`~ik_control.control.inbox.Inbox` that each tick drains with its own reading.
"""

from dataclasses import replace
import math

from ik_control.control import classical_mode, collision_guard, constrained_motion
from ik_control.control import limits as limits_mod
from ik_control.control.cartesian_stage import CartesianStage
from ik_control.control.command_window import Command, CommandWindow, TIME_RESOLUTION
from ik_control.control.commit_stage import CommitStage
from ik_control.control.config import ControllerConfig
from ik_control.control.fallback import IkFallback
from ik_control.control.goal_inputs import GoalInputs
from ik_control.control.goal_outcomes import OutcomeBook
from ik_control.control.goal_referee import GoalReferee
from ik_control.control.goal_set import GoalSet
from ik_control.control.goal_state import EventQueue
from ik_control.control.handover import Handover
from ik_control.control.robot_link import join_velocity, LinkState, RobotLink
from ik_control.control.status import Status
from ik_control.control.tick_state import TickState
from ik_control.control.warm_up import warm_up
from ik_control.ik.obstacles import ObstacleAvoidance
from ik_control.ik.pose_error import pose_distance
from ik_control.ik.solver import INFO_SIGMA_MIN, SolverConfig, VelocitySolver
from ik_control.validation import InputError
import numpy as np


# status bits as plain ints: IntFlag's | costs microseconds a tick (``status`` is an int
# bit field of :class:`Status` flags)
_BAD_INPUT = int(Status.BAD_INPUT)
_HOLDING = int(Status.HOLDING)
_INACTIVE = int(Status.INACTIVE)
_NONE = int(Status.NONE)
_NO_STATE = int(Status.NO_STATE)
_RESEEDED = int(Status.RESEEDED)
_STALE_STATE = int(Status.STALE_STATE)
_TARGET_UNREACHABLE = int(Status.TARGET_UNREACHABLE)


class ResolvedRateController(GoalInputs, Handover):
    """
    ROS-free controller core (module docstring). Not thread-safe: one caller at a time.

    Its goal API (poses, motions, twists, obstacles, joint trajectories, hold) is
    :class:`~ik_control.control.goal_inputs.GoalInputs`, release and engage
    :class:`~ik_control.control.handover.Handover`; the tick is :meth:`update`.
    """

    def __init__(self, model, config=None):
        self.model = model
        self.nq = model.nq
        self.ne = len(model.end_effectors)
        self.config = None
        self.solver = VelocitySolver(model, SolverConfig())
        self.obstacles = ObstacleAvoidance(model)  # its shapes: _configure_collision
        self.guard = None  # the collision checks (CollisionGuard), when enabled
        self.collision = None  # its CollisionStage (the distances the node reports), or None
        self.events = EventQueue()  # transitions for the node to log
        n = self.nq
        self.q_cmd = np.zeros(n)
        self.v_cmd = np.zeros(n)
        self._v_des = np.zeros(n)
        self.goals = GoalSet(model.end_effector_names, self.events)
        self.outcomes = OutcomeBook(self.goals)  # requests with an outcome (actions')
        self._stop_ids = np.full(self.ne, -1)  # goals to end once at rest (cancel_goal)
        self._braking = False  # the goals paused for that braking, not by ~/hold
        # what the velocity terms read: the knot, the limits, the goals (not the controller)
        self.tick = TickState(self.q_cmd, self.v_cmd, self._v_des, self.goals, self.solver)
        self.configure(config or ControllerConfig())
        self.path = CommandWindow(model.lower, model.upper,
                                  capacity=int(2 * (self.lead + 0.25) * self.config.rate_hz)
                                  + 64)
        self.initialized = False
        self.robot = RobotLink(model, self.events)
        self.referee = GoalReferee(model, self.goals, self.fallback, self.solver, self.events)
        self.referee.collision = self.collision
        self.cartesian = CartesianStage(model, self.solver, self.goals, self.fallback,
                                        self.referee, self.obstacles)
        self.cartesian.configure(self.config)
        self.status = _NO_STATE
        self.joint_goal = None  # a joint trajectory being followed (JointGoal), or None
        self._bad_input_time = -math.inf
        self._clock = -math.inf  # latest time seen, to notice backward clock jumps
        self.clock_jumps_back = 0  # backward clock jumps seen (module docstring)
        self.last_refusal = ''
        self.late_ticks = 0  # ticks so late that the command followed its braking tail
        self.late_time = 0.0  # how long it followed it over those ticks [s]
        self._knot_time = -math.inf  # when the last tick's knot is [s]
        self.commit = CommitStage(model, self.events)  # limit and commit the knot
        self._ee_index = {e.frame: i for i, e in enumerate(model.end_effectors)}
        warm_up(model, self.solver, self.v_max, self.a_max, self.dt)  # no tick compiles

    # ------------------------------------------------------------------ configuration
    def configure(self, config):
        """Apply a new configuration (validated first; on error nothing changes)."""
        config.validate(self.nq)
        # the controller's gains are per second, the solver's per update
        solver_config = replace(config.solver, gain=config.gain / config.rate_hz,
                                centering_gain=config.solver.centering_gain / config.rate_hz,
                                manipulability_gain=config.solver.manipulability_gain
                                / config.rate_hz,
                                max_joint_step=config.solver.max_joint_step)
        model = self.model
        v_max, a_max = limits_mod.joint_limits(model, config)
        ik_mode = classical_mode.build(getattr(self, 'ik_mode', None), model, config)
        constrained = constrained_motion.build(getattr(self, 'constrained', None), model, config)
        self.solver.configure(solver_config)  # the last check: on error nothing changes
        self.ik_mode, self.constrained = ik_mode, constrained
        self.obstacles.influence = config.obstacles.influence_distance
        self.obstacles.gain = config.obstacles.gain
        self.obstacles.link_radius = config.obstacles.link_radius
        self.v_max, self.a_max = v_max, a_max
        self.dt = 1.0 / config.rate_hz
        self.lead = max(config.max_expected_latency, self.dt)
        tolerances = (config.limits.position_margin, config.goal.position_tolerance,
                      config.goal.orientation_tolerance)
        if self.config is None:
            self.fallback = IkFallback(model, *tolerances)
        elif (self.fallback.ik.margin, self.config.goal.position_tolerance,
              self.config.goal.orientation_tolerance) != tolerances:
            self.fallback.reconfigure(*tolerances)
        self.fallback.time_budget = config.fallback.time_budget
        self.goals.default_tolerances(config.goal.position_tolerance,
                                      config.goal.orientation_tolerance)
        self._configure_collision(config)
        self.tick.configure(config, v_max, a_max)
        if hasattr(self, 'cartesian'):
            self.cartesian.configure(config)
        self.config = config

    def _configure_collision(self, config):
        """
        Build, re-parameterise or drop the collision checks (``collision.*`` settings).

        SAM eq. 19's term measures the links by the same shapes as the stage: meshes or,
        with ``collision.convex_meshes``, their hulls (its obstacles kept).
        """
        convex = config.collision.convex_meshes
        if self.config is None or self.config.collision.convex_meshes != convex:
            shapes = collision_guard.eq19_shapes(self.model, convex)
            if shapes is not None and self.obstacles.shapes is not None:
                shapes.set_scene(self.obstacles.shapes.scene)
            self.obstacles.shapes = shapes
        self.guard = collision_guard.configure(self.guard, self.model, config, self.events)
        self.collision = None if self.guard is None else self.guard.stage
        self.fallback.accept = self.guard.accept if self.guard is not None else None
        if hasattr(self, 'referee'):
            self.referee.collision = self.collision

    # ------------------------------------------------------------------ inputs
    def _observe_clock(self, now):
        """Shift the kept times by a backward clock jump (module docstring)."""
        jump = now - self._clock
        if jump < 0.0:
            self.clock_jumps_back += 1
            self.events.post('clock_jump', 'warn', f'the clock jumped back {-jump:.6g} s: the '
                             'times kept (state, twists, committed path) are moved with it')
            self._bad_input_time += jump
            self.cartesian.last_tick += jump
            self.robot.shift(jump)
            self.goals.shift(jump)
            if not self.path.empty:
                self.path.shift(jump)
        self._clock = now

    def refuse(self, now, reason):
        """Record a refused input (diagnostic ``BAD_INPUT`` for a second)."""
        self._observe_clock(now)
        self._bad_input_time = now
        self.last_refusal = reason

    def set_joint_state(self, names, positions, now, stamp=None):
        """
        Latest measured joint positions by name (any order; extra joints ignored).

        ``stamp`` [s] is when the robot measured them (default ``now``, also when it is
        more than a second away from ``now``): they are compared with the committed path
        at that time.

        Raises :class:`InputError` for a malformed sample
        (:meth:`~ik_control.control.robot_link.RobotLink.positions`); the previous state
        is kept. A well-formed sample the robot cannot have produced (faster than its
        joints: :class:`~ik_control.control.robot_link.PlausibilityFilter`) is refused
        too, as bad input (``BAD_INPUT``, :attr:`last_refusal`,
        ``robot.implausible``), without an exception: returns False. Returns True for
        a sample taken.
        """
        q = self.robot.positions(names, positions)
        self._observe_clock(now)
        reason = self.robot.take(q, now, stamp)
        if reason:
            self.refuse(now, f'joint_states: {reason}')
            return False
        return True

    def end_effector_index(self, frame):
        """Index of end effector ``frame``; :class:`InputError` if it is not one."""
        try:
            return self._ee_index[frame]
        except KeyError:
            raise InputError(f"'{frame}' is not an end effector; end effectors: "
                             f'{list(self._ee_index)}') from None

    def drain_events(self):
        """Return the transitions since the last call (:class:`Event` list), oldest first."""
        return self.events.drain()

    # ------------------------------------------------------------------ the tick
    def _initialize(self, now):
        self.q_cmd[:] = self.robot.q
        self.v_cmd[:] = 0.0
        self.path.reset(now, self.robot.q, self.v_cmd, self.a_max,
                        self.config.limits.position_margin)
        self.robot.tracking_error[:] = 0.0
        # effectors without a pose goal hold (or integrate twists from) where they are; a
        # pose goal sent before the first state is kept
        self.solver.ws.update(self.q_cmd, jacobian=False)
        self.goals.start_at(self.solver.ws.frame_T)
        self.solver.reset_targets()
        if self.guard is not None:
            self.guard.allow_start_contacts(self.q_cmd)
        self.initialized = True

    def update(self, now):
        """
        Run one control tick at time ``now`` [s]; return the :class:`Command`, or None.

        The tick commits one knot ``lead`` seconds ahead (``q_cmd``, ``v_cmd``) and returns
        the window of the committed path from ``now`` (module
        :mod:`~ik_control.control.command_window`); after joint states go stale, once, the
        path cut short to brake from ``now``; None while there is nothing to command.
        Then the tracked goals' outcomes (:mod:`~ik_control.control.goal_outcomes`).
        """
        command = self._tick(now)
        if self._braking or self.outcomes.pending:
            self._judge_outcomes(now)
        return command

    def _tick(self, now):
        """Run the stages (module docstring): link, velocity, limit and commit, judge."""
        self._observe_clock(now)
        status = _BAD_INPUT if now - self._bad_input_time < 1.0 else _NONE
        ended = self._link_stage(now)
        if ended is not None:
            self.status = status | ended[0]
            return ended[1]
        path, lead = self.path, self.lead
        # the stamp-zero, one-point format (lead of one period) sends no braking tail
        last = path.last_time
        due = now + lead - last
        start = path.start(now + lead, self.dt, late=lead > self.dt)
        if start is None:  # the clock did not move on: the path as it stands
            self.status = status
            return Command(*path.window(now))
        q_start, v_start, h = start
        if due - h > TIME_RESOLUTION and last == self._knot_time:
            self._note_late_tick(due - h)  # (not the first tick after a reset)
            if self.joint_goal is not None:  # the plan waits for the command
                self.joint_goal.slow_down(now + lead - h, q_start, v_start, due - h,
                                          self.a_max)
        self.q_cmd[:] = q_start
        self.v_cmd[:] = v_start
        bits, paused = self._velocity_stage(now, h)
        status |= bits | self.commit.commit(self.tick, h, now + lead, path)
        self._knot_time = path.last_time
        command = Command(*path.window(now))
        self.status = status | self._judge_stage(now, command, paused)
        return command

    def _link_stage(self, now):
        """
        Stage 1, the link to the robot: None when the tick goes on, else ``(bits, command)``.

        The commanded state ``(q_c, v_c)`` is the integration origin, not the noisy
        measured one, while the two agree within ``reseed_tolerance``
        (:meth:`RobotLink.follow <ik_control.control.robot_link.RobotLink.follow>`); when a
        believed measurement differs from the committed path by more, the controller
        re-seeds (``RESEEDED``, link state ``JOINING``) and steers the path to it within
        the limits (states it cannot have produced were refused on arrival). No state
        yet: nothing; released: :meth:`released_command`; stale: the stop once, then nothing.
        """
        cfg, robot = self.config, self.robot
        if robot.q is None:
            return _NO_STATE, None
        if self.released:  # handed back: braking, then nothing (Handover)
            return _INACTIVE, self.released_command(now)
        if now - robot.time > cfg.joint_state_timeout:
            stopped = robot.state == LinkState.STALE
            if not stopped:
                robot.state = LinkState.STALE
                self.events.post('state_lost', 'warn',
                                 f'joint_states lost (none for {now - robot.time:.3g} s): '
                                 'stopping the arm')
            if not self.initialized or stopped:
                return _STALE_STATE, None
            return _STALE_STATE, self._stop(now)
        if not self.initialized:
            self._initialize(now)
            self.events.post('state_regained' if robot.state == LinkState.STALE else 'state_first',
                             'info', 'joint_states received: commanding from the measured state')
            robot.state = LinkState.TRACKING
        elif robot.fresh:
            stale = robot.state == LinkState.STALE
            if robot.follow(self.path, now, cfg.reseed_tolerance, self.v_max, self.a_max,
                            cfg.limits.position_margin) and stale:
                self.goals.excuse_pause(slice(None), now)
        robot.fresh = False
        if robot.state == LinkState.STALE:  # not yet believed elsewhere after the gap
            return _STALE_STATE, None
        return None

    def _velocity_stage(self, now, h):
        """
        Stage 2, the desired velocity ``tick.v_des`` over the step ``h`` [s].

        Joining the measurement comes first (the command must meet the robot), then the
        hold, the joint trajectory, or the Cartesian stage (:meth:`CartesianStage.velocity
        <ik_control.control.cartesian_stage.CartesianStage.velocity>`: ``q_dot = J^# K e``
        plus the nullspace terms); then Welman's constraints and the collision stage
        bound it. Each reads the tick through :class:`TickState`, not the controller.
        Returns its status bits, and whether the goals wait (joining or holding).
        """
        joining = self.robot.state == LinkState.JOINING
        holding = self.goals.holding
        cartesian = False
        status = _NONE
        if joining or holding:
            status |= _HOLDING if holding else _NONE
            if joining:
                join_velocity(self.q_cmd, self.robot.q, self.v_max, self.a_max, self._v_des)
            else:
                self._v_des[:] = 0.0
            self.solver.ws.update(self.q_cmd, jacobian=False)
            self.goals.excuse_pause(slice(None), now)
        elif self.joint_goal is not None:
            status |= self._follow_joint_goal(now + self.lead)
        else:
            cartesian = True
            status |= self.cartesian.velocity(now, self.tick, self.lead, self.ik_mode)
        if joining or now - self.robot.reseed_time < 1.0:
            status |= _RESEEDED
        if self.constrained is not None and not joining and self.joint_goal is None:
            self.constrained.apply(self.tick, h, task=not holding)  # Welman's constraints
        if self.guard is not None and not joining:
            status |= self.guard.bound(now, self.tick, self.solver.ws.joint_T,
                                       self.solver.J if cartesian else None, h,
                                       self.robot.tracking_error)
            self.referee.blocked_since = self.guard.limited_since
        return status, joining or holding

    def _judge_stage(self, now, command, paused):
        """
        Stage 4, judge ``command``: the plan's end, then the goals; return the status bits.

        The goals unless ``paused`` (joining or holding), by
        :class:`~ik_control.control.goal_referee.GoalReferee`: reached (measured and
        commanded, the window at rest), stalled (to the fallback), unreachable.
        """
        goal = self.joint_goal
        if goal is not None and goal.done(now + self.lead, self.q_cmd, command.velocities):
            self.joint_goal = None
            self._hold_pose_at_command()
            self.events.post('trajectory_done', 'info', 'joint trajectory done: holding its last '
                             'pose')
        if not (paused or self.joint_goal is not None):
            if self.referee.judge(now, command.velocities, self.config, self.q_cmd,
                                  self.robot.q):
                return _TARGET_UNREACHABLE
        elif self.goals.parked.any():
            return _TARGET_UNREACHABLE
        return _NONE

    def _note_late_tick(self, lost):
        """
        Count a tick that came ``lost`` [s] after the path's committed knots ran out.

        The robot may have followed the window's braking tail meanwhile (a command may
        reach it ``max_expected_latency`` late): the path keeps that part of the tail
        (:meth:`CommandWindow.start`), the motion slows down, a timed plan falls behind.
        Logged when ``lost`` is half ``max_expected_latency`` or more: a 1 kHz loop on a
        busy host misses its period by a few ms often (5 % of the time on an idle 2-core
        machine), which the counts show without a line each second.
        """
        self.late_ticks += 1
        self.late_time += lost
        if lost >= 0.5 * self.config.max_expected_latency:  # told; the counts take all
            self.events.post('late_tick', 'warn',
                             f'control tick late: the command followed {lost * 1e3:.3g} ms of its '
                             'braking tail (the robot may have); the motion slows down')

    def _hold_pose_at_command(self):
        """Every effector holds its pose at the commanded state (the end of a plan)."""
        self.solver.ws.update(self.q_cmd, jacobian=False)
        self.goals.idle(self.solver.ws.frame_T)
        self.solver.reset_targets()

    def _follow_joint_goal(self, tau):
        """Desired velocity toward the joint trajectory at the knot time ``tau`` [s]."""
        self.joint_goal.desired_velocity(tau, self.q_cmd, self.config.gain, self._v_des)
        self.solver.ws.update(self.q_cmd, jacobian=False)
        return _NONE

    def _stop(self, now):
        """Brake from ``now`` (:meth:`cut_path`): the stop command; None if at rest already."""
        if not self.path.sample(now)[1].any():
            return None
        self.cut_path(now)
        return Command(*self.path.window(now))

    # ------------------------------------------------------------------ reporting
    def tracking_errors(self):
        """
        Position [m] and rotation [rad] error of each effector at the last tick.

        To the user's goal: a parked effector's target is the pose it holds, its error
        is still counted to the goal it could not reach.
        """
        err_p, err_r = self.solver.err_pos.copy(), self.solver.err_rot.copy()
        for i in np.flatnonzero(self.goals.parked):
            err_p[i], err_r[i] = pose_distance(self.solver.frame_T[i], self.goals.goal[i])
        return err_p, err_r

    def sigma_min(self):
        """Smallest singular value of the weighted task Jacobian at the last tick (-1 unknown)."""
        return float(self.solver.info[INFO_SIGMA_MIN])

    def current_pose(self, frame):
        """Placement (4x4, base frame) of end effector ``frame`` at the commanded state."""
        i = self.end_effector_index(frame)
        return self.solver.frame_T[i].copy()

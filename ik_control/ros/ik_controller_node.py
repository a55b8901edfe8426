"""
``ik_controller``: follows Cartesian goals with resolved-motion-rate control.

Topics (``E`` is each frame in ``end_effectors``):

* subscribes ``joint_states`` (sensor_msgs/JointState; any order, extra joints ignored),
  ``~/E/target_pose`` (geometry_msgs/PoseStamped) and ``~/E/target_twist`` (geometry_msgs/
  TwistStamped, velocity mode in its frame's axes, valid for ``twist_timeout``);
* publishes, per ``command_interface``, on ``output_topic``: stamped
  trajectory_msgs/JointTrajectory windows of the committed path (header stamp = the tick's
  time, points up to ``max_expected_latency`` ahead, then braking to rest; see
  :mod:`ik_control.control.command_window`), or std_msgs/Float64MultiArray positions or
  velocities for the forward command controllers; latched, on change, ``~/status``
  (std_msgs/UInt32, the Status bit field), ``~/E/goal_reached`` (std_msgs/Bool) and
  ``~/E/goal_state`` (std_msgs/UInt8, the GoalState code); diagnostic_msgs/DiagnosticArray
  on ``/diagnostics`` at ``diagnostics_rate``; ``~/markers`` (visualization_msgs/
  MarkerArray: goals, targets, obstacles, the closest pair) at ``markers_rate`` while
  anything subscribes to it;
* subscribes ``~/joint_trajectory`` (trajectory_msgs/JointTrajectory, every controlled
  joint, header stamp zero = now): a joint-space plan (``jt_rrt_planner``'s, the style
  adapter's) followed within the limits until its end, then held; a pose or twist goal
  ends it (:mod:`ik_control.control.joint_goal`);
* subscribes ``~/E/target_path`` (nav_msgs/Path): key poses, each reached at its
  header stamp, counted from the path's header stamp (a zero path stamp: the pose
  stamps are seconds from now), strictly increasing; fitted by a C2 spline from where
  the effector is (or from the motion it follows, without a jump) and followed as a
  moving goal, SAM's position-error specification (sec. VI, eq. 20-21; see
  :mod:`ik_control.control.spline_path`); its last pose is then an ordinary pose goal;
* subscribes ``~/E/velocity_profile`` (std_msgs/String): a velocity profile played from
  where the effector is, SAM's velocity-profile specification (a file path, or the name
  of a profile shipped in ``config/motions``, e.g. ``wave``, or ``{profile: wave,
  perturbation: [0.02, 0.1], seed: 1}`` for SAM's small perturbations [m/s, rad/s]; the
  file's ``priorities`` weight the obstacle avoidance while it plays; see
  :mod:`ik_control.control.velocity_profile`);
* services ``~/hold`` and ``~/resume`` (std_srvs/Trigger);
* serves the ``~/move_to_pose`` action (ik_control_interfaces/MoveToPose, see
  :mod:`ik_control.ros.move_to_pose_server`; off, with a warning, where the interface
  package is not installed);
* subscribes ``~/obstacles`` (visualization_msgs/MarkerArray): SPHERE, CUBE and CYLINDER
  markers (ADD/MODIFY by namespace and id, DELETE, DELETEALL) are obstacles, each its
  exact shape, the arm keeps ``obstacles.influence_distance`` away from where its task
  allows (SAM eq. 19, see :mod:`ik_control.ik.obstacles`); other marker types, non-finite
  or non-positive sizes, unnormalised orientations and unknown frames are refused one
  marker at a time.

A managed (lifecycle) node: with ``autostart`` it configures and activates itself at
start; ``deactivate`` brakes the arm to rest and then publishes no command, ``activate``
takes it again from the measured state (:mod:`ik_control.ros.controller_lifecycle`).

Goals in ``base_frame`` (or with an empty frame_id) are used as they are; goals in another
frame of the robot model are transformed by forward kinematics at the commanded state;
other frames go through tf2 where tf2_ros is installed, and are refused otherwise.
Refused messages never change the command; the reason is logged (throttled) and
reported in the diagnostics. So is every transition of the controller (joint_states lost
and regained, re-seeds, goals accepted, reached, unreachable or replaced, hold and
resume, position limits engaged): once each, at most once per ``EVENT_LOG_PERIOD`` per
kind (:mod:`ik_control.ros.controller_report`), never per tick, and by the executor thread
within ``EVENT_DRAIN_PERIOD``, never on the control tick.
"""

from concurrent.futures import ThreadPoolExecutor
import threading
import time

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, TwistStamped
from ik_control.control.controller import ResolvedRateController
from ik_control.control.inbox import Inbox
from ik_control.ros.cdr import JointStateReader, TrajectoryReader
from ik_control.ros.command_publisher import CommandPublisher
from ik_control.ros.controller_lifecycle import ControllerLifecycle
from ik_control.ros.controller_markers import controller_markers
from ik_control.ros.controller_report import (controller_values, diagnostic_array, EventLog,
                                              StatusTopics)
from ik_control.ros.frame_resolver import FrameResolver
from ik_control.ros.goal_topics import GoalTopics
from ik_control.ros.ik_controller_parameters import (COMMAND_INTERFACES, controller_config,
                                                     fixed_obstacles, load_model, LOOP_MODES,
                                                     PARAMETERS, warn_deprecated)
from ik_control.ros.move_to_pose_server import MoveToPoseServer
from ik_control.ros.obstacle_markers import ObstacleMarkers
from ik_control.ros.parameters import coerce, declare_all, run_node, StartupError
from ik_control.ros.realtime_loop import (INPUT_PHASE, LoopStats, PolledGroup, PUBLISH_PHASE,
                                          RealtimeLoop, set_realtime_priority, take_latest,
                                          TICK_PHASES, TRIGGER_DEADLINE_PERIODS,
                                          UPDATE_PHASE)
from ik_control.validation import IkControlError, InputError
from nav_msgs.msg import Path
import numpy as np
from rcl_interfaces.msg import SetParametersResult
from rclpy.lifecycle import LifecycleNode
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import MarkerArray

NODE_NAME = 'ik_controller'
#: a kind of controller event is logged at most once per this period; the ones left out
#: are counted in the next message [s]
EVENT_LOG_PERIOD = 1.0
#: the executor thread takes the controller's events and logs them this often, off the
#: control tick (a log call costs the tick tens to hundreds of microseconds) [s]
EVENT_DRAIN_PERIOD = 0.05
#: joint_states older than this when the command goes out (or stamped in the future) do
#: not count in the latency statistics: a wrong or zero stamp, not a latency [s]
MAX_LATENCY = 1.0


class IkControllerNode(ControllerLifecycle, GoalTopics, LifecycleNode):
    """
    The ``ik_controller`` node (module docstring).

    Its transitions: :class:`ControllerLifecycle`; its goal callbacks: :class:`GoalTopics`.
    """

    def __init__(self, **kwargs):
        """Declare the parameters; with ``autostart``, configure and activate (ManagedNode)."""
        super().__init__(NODE_NAME, **kwargs)
        self.values = declare_all(self, PARAMETERS)
        self.controller = None  # until configured
        # goal inputs (topics, services, the action) go to the inbox, which the tick drains
        # at its start: only the tick calls the controller's goal methods
        self.inbox = Inbox()
        # the realtime loop ticks in the main thread and the executor serves parameters,
        # lifecycle transitions, diagnostics and reads from another: the tick and each of
        # them hold this while they use the controller
        self.lock = threading.Lock()
        self._pending_state = None  # loop 'timer': the newest joint_states bytes, untaken
        if self.values['autostart']:
            self._configure()  # a StartupError: one line, exit 2 (run_node)
            self.trigger_configure()
            self.trigger_activate()

    def _configure(self):
        """Check parameters, load the model, create interfaces and the timers (configure)."""
        values = self.values
        self.model = load_model(values)
        self.clock_ = self.get_clock()
        # the controller counts time from here: epoch seconds as floats resolve 0.24 us
        self.epoch_ns = self._now_ns()
        self._epoch = divmod(self.epoch_ns, 1_000_000_000)
        # the position-IK fallback solves on its own thread, never on the control tick (one
        # pool, kept by a configure that follows a failed one)
        if getattr(self, '_ik_pool', None) is None:
            self._ik_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix='ik_fallback')
        self.controller = self._new_controller()
        warn_deprecated(values, self.get_logger())
        self._refusals, self._bad_stamps = 0, 0  # bad stamps: no latency (MAX_LATENCY)
        self._event_log = EventLog(self.get_logger(), EVENT_LOG_PERIOD)
        self.stats = LoopStats(phases=TICK_PHASES)
        self._last_tick = -np.inf
        self.period = 1.0 / values['rate_hz']
        if values['loop'] not in LOOP_MODES:
            raise StartupError(f"loop must be one of {LOOP_MODES}, not '{values['loop']}'")
        polled = PolledGroup() if values['loop'] != 'timer' else None
        # under use_sim_time the robot's clock is the only one that means anything (a
        # simulator may run slower or faster than real time): a synchronized loop on the
        # wall clock would command too much motion per simulated second, so it ticks on
        # joint_states instead
        self._sim_time = bool(self.get_parameter('use_sim_time').value)
        self._triggered = values['loop'] == 'on_joint_states' or (
            values['loop'] == 'synchronized' and self._sim_time)
        # goal frames (topics, action, markers): other model frames at the commanded state
        self.frames = FrameResolver(self.model, self, lambda: (
            self.controller.q_cmd if self.controller is not None and self.controller.initialized
            else self.model.center))

        # commands are published serialized (ik_control.ros.cdr): no Python messages on
        # the 1 kHz path, whatever the number of points
        self._state_reader = JointStateReader(self.epoch_ns)
        interface = values['command_interface']
        if interface not in COMMAND_INTERFACES:
            raise StartupError(f'command_interface must be one of {list(COMMAND_INTERFACES)}, '
                               f"not '{interface}'")
        output_topic = values['output_topic'] or COMMAND_INTERFACES[interface]
        self.joint_state_sub = self.create_subscription(
            JointState, 'joint_states', self._on_joint_state,
            QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE), callback_group=polled,
            raw=True)
        self._status_topics = StatusTopics(self, self.model.end_effector_names)
        self.announce_goal()
        self._target_subs = []
        # targets are taken as bytes and only the newest of a tick is deserialized: rclpy
        # takes a PoseStamped in 33 us, its bytes in 4 us, so a 10 kHz stream of goals
        # (20 a tick at 500 Hz) no longer costs a third of the tick
        for ee in self.model.end_effector_names:
            pose = self.create_subscription(
                PoseStamped, f'~/{ee}/target_pose', lambda raw, ee=ee: self._on_pose(ee, raw),
                10, callback_group=polled, raw=True)
            twist = self.create_subscription(
                TwistStamped, f'~/{ee}/target_twist',
                lambda raw, ee=ee: self._on_twist(ee, raw), 10, callback_group=polled,
                raw=True)
            self._target_subs += [(pose, pose.callback), (twist, twist.callback)]
            # moving goals are rare: taken by the executor thread, into the inbox
            self.create_subscription(Path, f'~/{ee}/target_path',
                                     lambda msg, ee=ee: self._on_path(ee, msg), 10)
            self.create_subscription(String, f'~/{ee}/velocity_profile',
                                     lambda msg, ee=ee: self._on_profile(ee, msg), 10)
        # a joint trajectory to follow (a planner's, the style adapter's): read from its bytes
        self._joint_trajectory_reader = TrajectoryReader(epoch_ns=self.epoch_ns)
        plan = self.create_subscription(JointTrajectory, '~/joint_trajectory',
                                        self._on_joint_trajectory, 10, callback_group=polled,
                                        raw=True)
        self._target_subs.append((plan, plan.callback))
        if polled is None:  # the executor takes them (loop 'timer'), not the tick
            self._target_subs = []
        self._out = CommandPublisher(self, interface, output_topic, self.model.joint_names,
                                     self.period, self.controller.path.max_points,
                                     values['max_expected_latency'] == 0.0)
        self._diag = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._viz = self.create_publisher(MarkerArray, '~/markers', 10)  # controller_markers
        self.create_subscription(MarkerArray, '~/obstacles', self._on_obstacles, 10)
        self.create_service(Trigger, '~/hold', self._on_hold)
        self.create_service(Trigger, '~/resume', self._on_resume)
        # served by the executor thread, off the control loop (None without the interfaces)
        self.move_to_pose = MoveToPoseServer.create(self)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        if polled is None:
            self.create_timer(self.period, self._tick)
        self.create_timer(1.0 / values['diagnostics_rate'], self._publish_diagnostics)
        self.create_timer(1.0 / values['markers_rate'], self._publish_markers)
        self.create_timer(EVENT_DRAIN_PERIOD, self._log_events)
        # tick statistics over the ticks since the last diagnostics (the whole 64k buffer
        # took 22 ms, a stall of the loop, twice a second)
        self._ticks_per_diagnostics = max(10, int(values['rate_hz'] / values['diagnostics_rate']))
        if self._sim_time and values['loop'] == 'synchronized':
            self.get_logger().info('use_sim_time: ticking on joint_states (the simulated '
                                   "clock drives the loop, as with loop 'on_joint_states')")
        self.get_logger().info(
            f"controlling {len(self.model.joint_names)} joints of '{self.model.name}' at "
            f"{values['rate_hz']:g} Hz, end effectors {list(self.model.end_effector_names)}, "
            f"commands on '{self._out.publisher.topic_name}'")

    def _new_controller(self):
        """Return the controller of the parameters, with the fixed obstacles, inactive."""
        try:
            controller = ResolvedRateController(self.model, controller_config(self.values))
        except IkControlError as exc:
            raise StartupError(str(exc)) from None
        controller.fallback.executor = self._ik_pool
        controller.release(self._now())  # ControllerLifecycle.on_activate engages it
        self._markers = ObstacleMarkers(fixed_obstacles(self.values['obstacles.fixed']))
        if self._markers.fixed:
            controller.set_obstacle_shapes(self._markers.shapes())
        return controller

    # ------------------------------------------------------------------ time
    def _now_ns(self):
        """Node clock [ns]: the system clock unless use_sim_time (``Clock.now()`` costs ~7 us)."""
        if self.clock_.ros_time_is_active:
            return self.clock_.now().nanoseconds
        return time.time_ns()

    def _now(self):
        """Node clock [s] after :attr:`epoch_ns` (to the nanosecond: see cdr.stamp_seconds)."""
        return (self._now_ns() - self.epoch_ns) * 1e-9

    def _stamp_seconds(self, stamp):
        """Return a builtin_interfaces/Time in seconds after :attr:`epoch_ns` (zero stays zero)."""
        if stamp.sec == 0 and stamp.nanosec == 0:
            return 0.0
        return (stamp.sec - self._epoch[0]) + 1e-9 * (stamp.nanosec - self._epoch[1])

    # ------------------------------------------------------------------ inputs
    def post(self, entry, key=None):
        """Have the next tick run ``entry(now)`` at its start, ``now`` its time [s] (Inbox)."""
        self.inbox.post(entry, key)

    def read(self, look):
        """Return ``look(controller, now)`` under the tick's lock: a consistent look, quickly."""
        with self.lock:
            return look(self.controller, self._now())

    def refuse(self, reason, now=None):
        """
        Refuse an input: counted and logged now, the controller told at the tick's time.

        ``now`` [s]: the tick's, inside an entry; None: the next tick's (a cleanup in
        between drops only the controller's ``BAD_INPUT``).
        """
        self._refusals += 1
        self.get_logger().warn(f'refused: {reason}', throttle_duration_sec=1.0)
        if now is None:
            self.post(lambda now: self.controller.refuse(now, reason))
        else:
            self.controller.refuse(now, reason)

    def _refuse_entry(self, exc, now):
        """Refuse the input of an inbox entry that raised ``exc`` at ``now`` (the tick goes on)."""
        if isinstance(exc, InputError):
            self.refuse(str(exc), now)
        else:  # a fault of ours, not the input's: said as such, the tick goes on
            self.refuse(f'an input failed: {type(exc).__name__}: {exc}', now)

    def announce_goal(self):
        """Publish the goal topics now, changed or not (a new goal: goal_reached false)."""
        self._status_topics.publish(self.controller, force=True)

    def _on_joint_state(self, raw):
        """Keep the newest serialized joint_states for the next tick (``loop: timer``)."""
        self._pending_state = raw

    def _on_serialized_joint_state(self, raw, now):
        """Take a serialized joint_states message; return its stamp [s], or None if refused."""
        stamp, names, positions = self._state_reader.read(raw)
        try:
            if self.controller.set_joint_state(names, positions, now, stamp):
                return stamp
            # implausible (faster than the joints can move): refused by the controller
            self._refusals += 1
            self.get_logger().warning(f'refused: {self.controller.last_refusal}',
                                      throttle_duration_sec=1.0)
            return None
        except InputError as exc:
            self.refuse(str(exc), now)  # (a later clock reading would come before `now`)
            return None

    def _on_set_parameters(self, params):
        values = dict(self.values)
        for p in params:
            if p.name == 'use_sim_time':
                # switching clocks mid-run would jump (or freeze) the time that twist
                # timeouts and stale-state detection rely on: set it at start-up only
                return SetParametersResult(successful=False,
                                           reason='use_sim_time cannot change at run time')
            if p.name not in PARAMETERS:
                continue
            if not PARAMETERS[p.name].dynamic:
                return SetParametersResult(successful=False,
                                           reason=f'{p.name} cannot change at run time')
            value, reason = coerce(PARAMETERS, p.name, p.value)
            if reason:
                return SetParametersResult(successful=False, reason=reason)
            values[p.name] = list(value) if isinstance(value, (list, tuple)) else value
        try:
            with self.lock:
                self.controller.configure(controller_config(values))
        except IkControlError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        warn_deprecated(values, self.get_logger())
        self.values = values
        return SetParametersResult(successful=True)

    def destroy_node(self):
        """Stop the position-IK worker, then destroy the node."""
        pool = getattr(self, '_ik_pool', None)  # absent on a start-up failure
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        return super().destroy_node()

    # ------------------------------------------------------------------ the loop
    def _tick(self):
        """Run one tick from the executor's timer (``loop: timer``), on the newest state."""
        t0 = time.perf_counter()
        state, self._pending_state = self._pending_state, None
        age = self.realtime_tick(state)
        self.stats.record(t0, time.perf_counter() - t0, np.nan if age is None else age)

    def _control(self, now=None):
        now = self._now() if now is None else now
        phase = self.stats.phase
        t0 = time.perf_counter()
        command = self.controller.update(now)
        t1 = time.perf_counter()
        phase[UPDATE_PHASE] = t1 - t0
        if command is not None:
            self._out.publish(command, self.epoch_ns + round(now * 1e9), self.controller)
            phase[PUBLISH_PHASE] = time.perf_counter() - t1
        self._status_topics.publish(self.controller)
        return command

    def _log_events(self):
        """
        Log the controller's transitions (:class:`EventLog`), off the tick.

        Run by the executor (every ``EVENT_DRAIN_PERIOD``), never
        by the tick: the queue is taken under the lock, the logging done after it. Call
        without the lock held.
        """
        if not self.controller.events:  # the usual case: no need to take the tick's lock
            return
        with self.lock:
            events = self.controller.drain_events()
        self._event_log.log(events, time.monotonic())

    def realtime_tick(self, state):
        """
        Run one tick of the :class:`RealtimeLoop`, or of the timer (``loop: timer``).

        With ``loop: timer`` on the newest joint_states its callback kept.

        ``state`` is the newest joint_states message (or None); pending goals are taken
        from their subscriptions and the inbox first, oldest first. Returns the age [s] of
        ``state`` when the command is published: the joint_states-to-command latency.
        """
        with self.lock:
            return self._locked_tick(state)

    def _locked_tick(self, state):
        # goals first, all at the tick's one clock reading (the inbox): the newest of each
        # polled subscription goes in, then every entry runs, in the order posted
        t0 = time.perf_counter()
        for sub, callback in self._target_subs:
            message = take_latest(sub)
            if message is not None:
                callback(message)
        now = self._now()
        self.inbox.drain(now, self._refuse_entry)
        stamp = None if state is None else self._on_serialized_joint_state(state, now)
        if state is not None and stamp is None:
            # on_joint_states: a refused state is no reason to tick: each extra tick would
            # integrate the command once more, so a stream of bad messages would speed the
            # arm beyond its limits. Only past the loop's deadline (no good state for
            # TRIGGER_DEADLINE_PERIODS) does it tick, as without a message, so a stale
            # state is noticed.
            # (synchronized ticks keep their own period whatever comes.)
            if (self._triggered and time.perf_counter() - self._last_tick
                    < TRIGGER_DEADLINE_PERIODS * self.period):
                self.stats.declined = True
                return None
        self._last_tick = time.perf_counter()
        self.stats.phase[INPUT_PHASE] = self._last_tick - t0
        command = self._control(now)
        if stamp is None or command is None:
            return None
        age = self._now() - stamp
        if not 0.0 <= age <= MAX_LATENCY:  # a zero, future or far-past stamp
            self._bad_stamps += 1
            return None
        return age

    def spin(self, executor):
        """Run the node: the realtime loop once configured, or the executor (``loop: timer``)."""
        while self.controller is None and self.values['loop'] != 'timer':
            executor.spin_once(timeout_sec=0.1)  # autostart false: until configure
        if self.values['loop'] == 'timer':
            try:
                executor.spin()
            finally:
                if self.values['statistics_file']:
                    self.stats.save(self.values['statistics_file'])
            return
        self.loop = RealtimeLoop(self, executor, self.period, self.realtime_tick,
                                 trigger=self.joint_state_sub,
                                 priority=self.values['realtime_priority'], stats=self.stats,
                                 synchronize=not self._triggered,
                                 spin_margin=self.values['busy_wait'])
        if self.values['realtime_priority'] > 1:
            # the executor thread one priority below the loop: at normal priority it was
            # descheduled while holding the interpreter lock the loop waits for (priority
            # inversion; with action goals at 2 Hz the p99 jitter of bench loop rose from
            # 50 us to 600 us, 150 us with this). Run by the executor thread itself.
            executor.create_task(set_realtime_priority, self.values['realtime_priority'] - 1,
                                 self.get_logger())
        self._loop_runs = True
        try:
            self.loop.run()
        except Exception:  # noqa: B902 - Ctrl-C mid-wait invalidates the subscriptions
            if self.context.ok():
                raise
        finally:
            if self.values['statistics_file']:
                self.stats.save(self.values['statistics_file'])

    def _publish_diagnostics(self):
        with self.lock:  # a consistent picture of the controller, taken quickly
            c = self.controller
            status = c.status
            values = controller_values(c, self._refusals, self._bad_stamps)
        values += [(key, f'{value:.1f}') for key, value in
                   self.stats.summary(self.period, self._ticks_per_diagnostics).items()]
        stamp = self.clock_.now().to_msg()
        self._diag.publish(diagnostic_array(f'{self.get_name()}: resolved-rate controller',
                                            self.model.name, status, values, stamp))

    def _publish_markers(self):
        """Publish ``~/markers`` (controller_markers) if anything subscribes to it."""
        if self._viz.get_subscription_count() == 0:
            return
        with self.lock:  # the goals, targets and scene at one tick, copied quickly
            c = self.controller
            seen = (c.goals.goal.copy(), c.goals.targets.copy(), self._markers.shapes(),
                    None if c.collision is None or not c.collision.closest_pair else
                    (c.collision.closest_pair, c.collision.closest_distance))
        self._viz.publish(controller_markers(*seen, self.model.base_frame,
                                             self.clock_.now().to_msg()))


def main(args=None):
    """Entry point of ``ros2 run ik_control ik_controller``."""
    import sys

    sys.exit(run_node(NODE_NAME, IkControllerNode, args=args))


if __name__ == '__main__':
    main()

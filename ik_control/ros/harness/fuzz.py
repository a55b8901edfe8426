"""
``ik_control bench fuzz``: valid and malformed messages against a running sim + controller.

``sim_robot`` and ``ik_controller`` run as separate processes (the robot's parameter file,
a private namespace, ``/diagnostics`` remapped into it, the user's ``ROS_DOMAIN_ID``,
discovery on this host unless ``ROS_AUTOMATIC_DISCOVERY_RANGE`` says otherwise). This
process sends random messages at a bounded rate, in cycles of three phases:

1. *mixed*: valid goals (reachable, unreachable and singular poses, small twists, poses
   with old stamps) among malformed messages -- sensor_msgs/JointState with mismatched
   lengths, missing, duplicated or unknown joints, NaN, inf, huge or out-of-range
   positions; geometry_msgs/PoseStamped with NaN or inf positions, zero-norm,
   unnormalised or NaN quaternions, unknown frames; geometry_msgs/TwistStamped with NaN,
   inf or huge components, unknown frames, stamps far in the past or future;
   visualization_msgs/MarkerArray obstacles beside the arm with NaN positions, zero,
   negative, infinite or huge sizes, zero-norm or unnormalised orientations, unknown
   frames, marker types that are not shapes, unknown actions, or 200 markers at once;
2. *anchor*: a valid pose goal at each effector's current pose; wait until the command
   is steady (positions unchanged within :data:`SETTLE_TOLERANCE` for
   :data:`SETTLE_TIME`);
3. *quiet*: malformed messages only; every command received meanwhile must equal the
   steady one (within :data:`IDENTICAL_TOLERANCE`): no refused message changed it.

Every JointTrajectory the controller publishes is checked (:class:`CommandChecker`):
positions within ``[lower + margin, upper - margin]`` of the URDF, velocities within the
velocity limits, and velocity changes between consecutive commands within the
acceleration limit. The figures: messages sent (valid / malformed), messages refused as
counted by the node (``refused_messages`` in its diagnostics; malformed messages that a
newer one on the same topic superseded before a tick are not counted), violations (must
be 0), crashes (node processes that died or exited non-zero; must be 0), duration.

The robot's measured speed against the limits (:class:`MotionMonitor`) and the commands
per joint_states message (one tick per state: more would mean messages the controller
refused caused ticks) are reported too.
"""

import math
import os
import time

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, TwistStamped
from ik_control import robots
from ik_control.control.command_window import sample_points
from ik_control.control.motion_meter import MotionMeter
from ik_control.ros.conversions import pose_stamped, sec_to_time
from ik_control.ros.harness.node_process import node_environment, NodeProcess
from ik_control.ros.realtime_loop import PolledGroup, take_all
import numpy as np
from rcl_interfaces.srv import GetParameters
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import Marker, MarkerArray

STARTUP_TIMEOUT = 120.0     # process start, discovery, numba cache load or compile [s]
STOP_TIMEOUT = 5.0          # SIGINT to exit, then SIGKILL [s]
DIAGNOSTICS_RATE = 10.0     # the controller's /diagnostics rate during the run [Hz]
SETTLE_TIME = 0.3           # the command must be steady this long before a quiet window [s]
SETTLE_TIMEOUT = 8.0        # longest wait for a steady command [s]
SETTLE_TOLERANCE = 1e-10    # steady: positions within this over SETTLE_TIME [rad]
IDENTICAL_TOLERANCE = 1e-9  # quiet window: positions and velocities within this [rad, rad/s]
LIMIT_TOLERANCE = 1e-9      # slack of the limit checks (float rounding) [rad, rad/s]
VALID_FRACTION = 0.1        # share of valid goals in the mixed phase
QUEUE_DEPTH = 1000          # recorder subscription depth (no loss while polling)

JOINT_STATE_FAULTS = ('length_mismatch', 'missing_joint', 'duplicate_joint', 'unknown_joints',
                      'nan_position', 'inf_position', 'huge_position', 'outside_limits',
                      'empty')
POSE_FAULTS = ('nan_position', 'inf_position', 'zero_quaternion', 'unnormalised_quaternion',
               'nan_quaternion', 'unknown_frame')
TWIST_FAULTS = ('nan_linear', 'inf_angular', 'huge', 'unknown_frame', 'stamp_far_past',
                'stamp_far_future')
MARKER_FAULTS = ('nan_position', 'zero_size', 'negative_size', 'inf_size', 'huge_size',
                 'zero_quaternion', 'unnormalised_quaternion', 'unknown_frame',
                 'unsupported_type', 'unknown_action', 'too_many_markers')
POSE_GOALS = ('reachable', 'unreachable', 'singular', 'old_stamp')


ROBOT_STATUS = 'simulated robot'  # the end of sim_robot's diagnostic status name


class FuzzError(Exception):
    """The run cannot go on (a node did not start, nothing arrived); the message says why."""


# ---------------------------------------------------------------------- processes
class Pair:
    """
    ``sim_robot`` + ``ik_controller`` for bundled ``robot`` in namespace ``namespace``.

    Both get the robot's parameter file and its URDF; ``controller_args`` and
    ``sim_args`` are extra ``--ros-args`` (e.g. ``['-p', 'rate_hz:=1000.0']``).
    """

    def __init__(self, robot, namespace, env=None, controller_args=(), sim_args=()):
        """Remember the command lines; :meth:`start` starts the nodes."""
        self.robot = robot
        self.namespace = namespace
        self.env = env or node_environment()
        common = ['--params-file', robots.data_path('config', f'{robot}.yaml'),
                  '-r', f'__ns:={namespace}', '-p', f'urdf_path:={robots.urdf_path(robot)}']
        self.sim_args = common + ['-r', f'/diagnostics:={namespace}/diagnostics', *sim_args]
        self.controller_args = common + ['-p', f'diagnostics_rate:={DIAGNOSTICS_RATE}',
                                         '-r', f'/diagnostics:={namespace}/diagnostics',
                                         *controller_args]
        self.sim = self.controller = None
        self.crashes = []

    def start_sim(self, extra=()):
        """Start (or restart) the simulated robot."""
        self.sim = NodeProcess('sim_robot', 'ik_control.ros.sim_robot_node',
                               self.sim_args + list(extra), self.env, STOP_TIMEOUT)
        return self.sim

    def start_controller(self, extra=()):
        """Start (or restart) the controller."""
        self.controller = NodeProcess('ik_controller', 'ik_control.ros.ik_controller_node',
                                      self.controller_args + list(extra), self.env,
                                      STOP_TIMEOUT)
        return self.controller

    def start(self):
        """Start both nodes; returns self."""
        self.start_sim()
        self.start_controller()
        return self

    def processes(self):
        """Return the running node processes."""
        return [p for p in (self.sim, self.controller) if p is not None]

    def check_alive(self):
        """Raise FuzzError naming a node that exited, with the tail of its output."""
        for p in self.processes():
            if not p.alive():
                raise FuzzError(f'{p.name} exited with status {p.proc.returncode}; its last '
                                f'output:\n{p.output_tail()}')

    def stop(self):
        """Stop both nodes; record as crashes those that died or exit non-zero on SIGINT."""
        for p in (self.controller, self.sim):
            if p is None:
                continue
            died = not p.alive()
            code = p.stop()
            if died or code != 0:
                self.crashes.append({'node': p.name, 'exit_code': code,
                                     'died_before_stop': died, 'output': p.output_tail()})
        return self.crashes

    def __enter__(self):
        """Start both nodes."""
        return self.start()

    def __exit__(self, *exc):
        """Stop both nodes."""
        self.stop()


# ---------------------------------------------------------------------- limit checks
class CommandChecker:
    """
    Check every JointTrajectory command against the limits; count and describe violations.

    Positions within ``[lower + margin, upper - margin]``, ``|v| <= v_max``, and between
    consecutive points ``|v_k - v_(k-1)| <= a_max dt``. A stamped window
    (:mod:`ik_control.control.command_window`) must start at ``time_from_start`` 0,
    increase strictly and end at rest; consecutive windows are checked to continue one
    path: the new point 0 equals the previous window sampled at the new stamp (counted in
    ``acceleration_checked``; a re-seed from the measured state or a stop that starts a
    new path is counted in ``acceleration_skipped``). A one-point, stamp-zero command is
    checked against the previous one when they are consecutive ticks
    (``q_k = q_(k-1) + (v_(k-1) + v_k) dt / 2``, how the controller integrates).
    """

    def __init__(self, joint_names, lower, upper, margin, v_max, a_max,
                 tolerance=LIMIT_TOLERANCE):
        """Set the limits (arrays over ``joint_names``)."""
        self.joint_names = tuple(joint_names)
        self.lo = np.asarray(lower, dtype=float) + margin - tolerance
        self.hi = np.asarray(upper, dtype=float) - margin + tolerance
        self.v_max = np.asarray(v_max, dtype=float) * (1 + tolerance) + tolerance
        self.a_max = np.asarray(a_max, dtype=float)
        self.tolerance = tolerance
        self.commands = self.points = 0
        self.acceleration_checked = self.acceleration_skipped = 0
        self.violations = 0
        self.examples = []
        self._order = (None, None)
        self._previous = None  # (stamp [s], times, q, v) of the last command

    def _violation(self, what):
        self.violations += 1
        if len(self.examples) < 10:
            self.examples.append(what)

    def arrays(self, msg):
        """Return (times, positions, velocities) of ``msg`` in checker joint order, or None."""
        names = tuple(msg.joint_names)
        if names != self._order[0]:
            try:
                self._order = (names, np.array([names.index(n) for n in self.joint_names]))
            except ValueError:
                self._violation(f'command names joints {list(names)}')
                return None
        index = self._order[1]
        times = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec
                          for p in msg.points])
        try:
            q = np.array([np.asarray(p.positions)[index] for p in msg.points])
            v = np.array([np.asarray(p.velocities)[index] for p in msg.points])
        except IndexError:
            self._violation('command point without positions or velocities for every joint')
            return None
        return times, q, v

    def check(self, msg):
        """Check one command; return the number of violations it had."""
        before = self.violations
        self.commands += 1
        arrays = self.arrays(msg)
        if arrays is None or not len(arrays[0]):
            if arrays is not None:
                self._violation('command without points')
            return self.violations - before
        times, q, v = arrays
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec  # [ns]
        self.points += len(times)
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v)) and times[0] >= 0.0
                and np.all(np.diff(times) > 0.0) and (stamp > 0 or times[0] > 0.0)):
            self._violation('non-finite command, or time_from_start not increasing from 0 '
                            '(stamped) or from a positive time (stamp zero): stamp '
                            f'{stamp} ns, times {list(times)}')
            return self.violations - before
        low, high = q < self.lo, q > self.hi
        if low.any() or high.any():
            k, j = np.argwhere(low | high)[0]
            self._violation(f'{self.joint_names[j]} commanded to {q[k, j]:.6g}, outside '
                            f'[{self.lo[j]:.6g}, {self.hi[j]:.6g}] (limits less margin)')
        fast = np.abs(v) > self.v_max
        if fast.any():
            k, j = np.argwhere(fast)[0]
            self._violation(f'{self.joint_names[j]} velocity {v[k, j]:.6g} beyond '
                            f'{self.v_max[j]:.6g}')
        if stamp > 0 and np.any(v[-1]):
            self._violation('stamped command window does not end at rest')
        dt = np.diff(times)
        for k in range(1, len(times)):
            self._check_acceleration(v[k] - v[k - 1], dt[k - 1])
        self._check_continuity(stamp, times, q, v)
        self._previous = (stamp, times, q, v)
        return self.violations - before

    def _check_acceleration(self, dv, dt):
        self.acceleration_checked += 1
        dv = np.abs(dv)
        # times travel in whole nanoseconds: a spacing may read 1 ns short
        over = dv > self.a_max * (dt + 1e-9) * (1 + 1e-6) + self.tolerance
        if over.any():
            j = int(np.argmax(over))
            self._violation(f'{self.joint_names[j]} velocity change {dv[j]:.6g} in '
                            f'{dt:.6g} s beyond acceleration {self.a_max[j]:.6g}')

    def _check_continuity(self, stamp, times, q, v):
        """Check the step from the previous command (class docstring)."""
        if self._previous is None:
            return
        p_stamp, p_times, p_q, p_v = self._previous
        if stamp > 0 and p_stamp > 0 and stamp >= p_stamp:
            q_prev, v_prev = sample_points(p_times, p_q, p_v, 1e-9 * (stamp - p_stamp))
            tol = 1e-6
            if (np.max(np.abs(q[0] - q_prev)) <= tol and np.max(np.abs(v[0] - v_prev))
                    <= tol + self.tolerance):
                self.acceleration_checked += 1
            else:
                self.acceleration_skipped += 1
            return
        if stamp == 0 and p_stamp == 0 and len(times) == 1 and len(p_times) == 1:
            step = 0.5 * (p_v[0] + v[0]) * times[0]
            if np.all(np.abs(q[0] - p_q[0] - step) <= 1e-12 + 1e-12 * np.abs(q[0])):
                self._check_acceleration(v[0] - p_v[0], times[0])
                return
        self.acceleration_skipped += 1

    def summary(self):
        """Return the counts and the first violations, as a dict."""
        return {'commands': self.commands, 'points': self.points,
                'acceleration_checked': self.acceleration_checked,
                'acceleration_skipped': self.acceleration_skipped,
                'violations': self.violations, 'violation_examples': list(self.examples)}


class MotionMonitor:
    """
    The robot's measured motion (its joint_states) against its limits.

    The velocities the robot reports, and its positions over its own stamps through a
    :class:`~ik_control.control.motion_meter.MotionMeter` (speed between consecutive
    samples and over 10 ms spans, acceleration over 10 ms spans): figures of what the
    robot did, whatever was commanded.
    """

    def __init__(self, probe, v_max, a_max):
        """Watch the states ``probe`` reads."""
        self.probe = probe
        self.v_max = np.asarray(v_max, dtype=float)
        self.meter = MotionMeter(v_max, a_max)
        self.reported_ratio = 0.0
        self.states = 0
        self._epoch = None

    def on_state(self, msg, t):
        """Update the figures with one joint_states message."""
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        self.states += 1
        if self._epoch is None:
            self._epoch = stamp  # counted from here, to the nanosecond
        if len(msg.velocity) == len(msg.name):
            v = np.asarray(msg.velocity)[self.probe._state_order[1]]
            self.reported_ratio = max(self.reported_ratio, float(np.max(np.abs(v) / self.v_max)))
        self.meter.add(1e-9 * (stamp - self._epoch), self.probe.last_state_q)

    def summary(self):
        """Return the measured ratios to the limits (a dict)."""
        return {'reported_speed': self.reported_ratio, **self.meter.summary()}


def checker_for(model, parameters):
    """Return a :class:`CommandChecker` for ``model`` and the controller's ``parameters``."""
    n = model.nq
    margin = parameters['limits.position_margin']
    v_max = np.asarray(parameters['limits.max_velocity'] or [], dtype=float)
    if v_max.size == 0:
        v_max = model.velocity_limit * parameters['limits.velocity_scale']
    a_max = np.asarray(parameters['limits.max_acceleration'], dtype=float)
    return CommandChecker(model.joint_names, model.lower, model.upper, margin,
                          np.broadcast_to(v_max, (n,)), np.broadcast_to(a_max, (n,)))


# ---------------------------------------------------------------------- the bench's node
def _stamp(msg, seconds):
    sec_to_time(seconds, msg.header.stamp)


class Probe:
    """
    The bench's own rclpy node: publishes inputs, polls the controller's outputs.

    Commands, joint_states and diagnostics are read without an executor (a
    :class:`~ik_control.ros.realtime_loop.PolledGroup`, depth :data:`QUEUE_DEPTH`) by
    :meth:`poll`, which passes each command to ``on_command(msg, t)`` and each state to
    ``on_state(msg, t)`` (``t`` = ``time.monotonic()`` when taken); during each call
    :attr:`sent` is when that message was published (DDS source timestamp [s], system
    clock), which does not depend on how late this process takes it.
    """

    def __init__(self, model, namespace, name='ik_control_fuzz', context_args=None):
        """Create the node in its own context (Ctrl-C stays a KeyboardInterrupt)."""
        self.model = model
        self.namespace = namespace
        self.context = rclpy.Context()
        rclpy.init(context=self.context, args=context_args,
                   signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        node, ctl = self.node, f'{namespace}/ik_controller'
        polled = PolledGroup()
        deep = QoSProfile(depth=QUEUE_DEPTH, reliability=ReliabilityPolicy.RELIABLE)
        self.command_sub = node.create_subscription(
            JointTrajectory, f'{namespace}/joint_trajectory_controller/joint_trajectory',
            lambda m: None, deep, callback_group=polled)
        self.state_sub = node.create_subscription(JointState, f'{namespace}/joint_states',
                                                  lambda m: None, deep, callback_group=polled)
        self.diag_sub = node.create_subscription(DiagnosticArray, f'{namespace}/diagnostics',
                                                 lambda m: None, 100, callback_group=polled)
        self.state_pub = node.create_publisher(JointState, f'{namespace}/joint_states', 100)
        self.pose_pub = {ee: node.create_publisher(PoseStamped, f'{ctl}/{ee}/target_pose', 100)
                         for ee in model.end_effector_names}
        self.obstacle_pub = node.create_publisher(MarkerArray, f'{ctl}/obstacles', 100)
        self.twist_pub = {ee: node.create_publisher(TwistStamped, f'{ctl}/{ee}/target_twist',
                                                    100)
                          for ee in model.end_effector_names}
        self.on_command = self.on_state = None
        self.sent = math.nan
        self.last_command = None
        self.last_state = None
        self.last_state_q = None
        self.commands = self.states = 0
        self.diagnostics = {}     # latest key/values of the controller
        self.robot_diagnostics = {}  # latest key/values of sim_robot (its clamps)
        self.diagnostics_time = -math.inf
        self.status_codes_seen = set()
        self._state_order = (None, None)

    def close(self):
        """Destroy the node and shut the context down."""
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)

    # ------------------------------------------------------------------ reading
    def poll(self):
        """Take every waiting command, state and diagnostics message; return how many."""
        t = time.monotonic()
        count = 0
        for msg, info in take_all(self.command_sub, with_info=True):
            self.sent = 1e-9 * info['source_timestamp']
            self.commands += 1
            self.last_command = msg
            if self.on_command is not None:
                self.on_command(msg, t)
            count += 1
        for msg, info in take_all(self.state_sub, with_info=True):
            self.sent = 1e-9 * info['source_timestamp']
            if msg.header.frame_id == 'ik_control_fuzz':
                continue  # our own malformed joint_states
            q = self.state_positions(msg)
            if q is None:
                continue
            self.states += 1
            self.last_state, self.last_state_q = msg, q
            if self.on_state is not None:
                self.on_state(msg, t)
            count += 1
        for msg in take_all(self.diag_sub):
            for status in msg.status:
                if status.hardware_id == self.model.name:
                    self.diagnostics = {kv.key: kv.value for kv in status.values}
                    self.diagnostics['level'] = int.from_bytes(status.level, 'little') if \
                        isinstance(status.level, bytes) else int(status.level)
                    self.diagnostics_time = t
                    self.status_codes_seen.update(
                        self.diagnostics.get('status_codes', '').split(','))
                elif status.name.endswith(ROBOT_STATUS):
                    self.robot_diagnostics = {kv.key: kv.value for kv in status.values}
            count += 1
        return count

    def state_positions(self, msg):
        """Positions of ``msg`` in model joint order, or None if it does not name them all."""
        names = tuple(msg.name)
        if names != self._state_order[0]:
            try:
                self._state_order = (names, [names.index(n) for n in self.model.joint_names])
            except ValueError:
                return None
        if len(msg.position) != len(names):
            return None
        return np.asarray(msg.position)[self._state_order[1]]

    def spin_for(self, seconds, period=0.001):
        """Poll and serve services for ``seconds`` [s]."""
        self.spin_until(lambda: False, seconds, period)

    def spin_until(self, predicate, timeout, period=0.001, pair=None):
        """Poll until ``predicate()`` or ``timeout`` [s]; return ``predicate()``."""
        end = time.monotonic() + timeout
        next_check = 0.0
        while True:
            self.poll()
            if predicate():
                return True
            now = time.monotonic()
            if now >= end:
                return False
            if pair is not None and now >= next_check:
                pair.check_alive()
                next_check = now + 0.2
            self.executor.spin_once(timeout_sec=0.0)
            time.sleep(period)

    def refused(self):
        """Refused messages as last reported by the controller (-1 before any diagnostics)."""
        return int(self.diagnostics.get('refused_messages', -1))

    def fresh_diagnostics(self, timeout=5.0, pair=None):
        """Wait for a diagnostics message published after this call; return its values."""
        start = time.monotonic()
        if not self.spin_until(lambda: self.diagnostics_time > start + 0.05, timeout,
                               pair=pair):
            raise FuzzError('no diagnostics from the controller')
        return self.diagnostics

    def wait_ready(self, timeout=STARTUP_TIMEOUT, pair=None):
        """Wait for joint_states, commands, diagnostics and matched goal subscriptions."""
        pubs = (list(self.pose_pub.values()) + list(self.twist_pub.values())
                + [self.obstacle_pub])

        def ready():
            return (self.last_state is not None and self.commands > 0 and self.diagnostics
                    and all(p.get_subscription_count() > 0 for p in pubs))
        if not self.spin_until(ready, timeout, pair=pair):
            raise FuzzError(f'the nodes did not come up within {timeout:.0f} s (joint_states '
                            f'{self.states}, commands {self.commands}, diagnostics '
                            f'{bool(self.diagnostics)})')

    def call(self, srv_type, name, request, timeout=5.0):
        """Call service ``name`` and return the response (FuzzError on timeout)."""
        client = self.node.create_client(srv_type, name)
        try:
            if not client.wait_for_service(timeout_sec=timeout):
                raise FuzzError(f'service {name} not available')
            future = client.call_async(request)
            self.executor.spin_until_future_complete(future, timeout_sec=timeout)
            if not future.done():
                raise FuzzError(f'service {name} did not answer within {timeout} s')
            return future.result()
        finally:
            self.node.destroy_client(client)

    def controller_parameters(self, names, node='ik_controller'):
        """
        Return ``{name: value}`` of the controller's parameters (get_parameters service).

        One request per name: rclpy answers a request naming an unset parameter (an array
        without a default) with no values at all; such parameters are None here.
        """
        from rclpy.parameter import parameter_value_to_python
        out = {}
        for name in names:
            response = self.call(GetParameters, f'{self.namespace}/{node}/get_parameters',
                                 GetParameters.Request(names=[name]))
            out[name] = (parameter_value_to_python(response.values[0]) if response.values
                         else None)
        return out

    # ------------------------------------------------------------------ writing
    def current_poses(self):
        """Placements (ne, 4, 4) of the effectors at the last measured state."""
        return self.model.frame_placements(self.last_state_q)

    def pose_message(self, T, frame_id=None, stamp=None):
        """Return a PoseStamped of ``T`` (4x4, in the base frame unless ``frame_id``)."""
        return pose_stamped(T, self.model.base_frame if frame_id is None else frame_id,
                            time.time() if stamp is None else stamp)

    def send_pose(self, ee, T, frame_id=None, stamp=None):
        """Publish a pose goal for ``ee`` (4x4 in the base frame); return the message."""
        msg = self.pose_message(T, frame_id, stamp)
        self.pose_pub[ee].publish(msg)
        return msg


class MessageFactory:
    """Random valid and malformed messages for the controller of ``model``."""

    def __init__(self, model, rng):
        """Precompute the ready pose and the effector list."""
        self.model = model
        self.rng = rng
        self.ees = list(model.end_effector_names)
        setup = next((s for s in robots.SETUPS.values()
                      if s.joints == tuple(model.joint_names)), None)
        self.ready = (np.array(setup.ready) if setup is not None
                      else np.clip(np.zeros(model.nq), model.lower, model.upper))
        self.faults = ([('joint_states', f) for f in JOINT_STATE_FAULTS]
                       + [('pose', f) for f in POSE_FAULTS]
                       + [('twist', f) for f in TWIST_FAULTS]
                       + [('obstacles', f) for f in MARKER_FAULTS])

    def _ee(self):
        return self.ees[int(self.rng.integers(len(self.ees)))]

    def pose_goal(self, kind):
        """(ee, PoseStamped) of a valid goal of ``kind`` (see :data:`POSE_GOALS`)."""
        m, rng = self.model, self.rng
        ee = self._ee()
        i = self.ees.index(ee)
        q = np.clip(self.ready + rng.normal(0, 0.3, m.nq), m.lower + 0.1, m.upper - 0.1)
        if kind == 'singular':
            q = np.clip(np.zeros(m.nq), m.lower + 0.05, m.upper - 0.05)
        T = m.frame_placements(q)[i]
        if kind == 'unreachable':
            T[:3, 3] += rng.normal(0, 2.0, 3)
        msg = self._pose_msg(T)
        if kind == 'old_stamp':  # a goal pose does not expire: accepted whatever its stamp
            _stamp(msg, time.time() - 1e4)
        return ee, msg

    def _pose_msg(self, T):
        frame = self.model.base_frame if self.rng.random() < 0.5 else ''
        return pose_stamped(T, frame, time.time())

    def twist_goal(self):
        """(ee, TwistStamped) of a small valid twist."""
        msg = TwistStamped()
        msg.header.frame_id = self.model.base_frame
        _stamp(msg, time.time())
        t = msg.twist
        t.linear.x, t.linear.y, t.linear.z = (float(v) for v in self.rng.normal(0, 0.05, 3))
        t.angular.x, t.angular.y, t.angular.z = (float(v) for v in self.rng.normal(0, 0.2, 3))
        return self._ee(), msg

    def valid(self):
        """(topic kind, ee, message) of a random valid goal."""
        if self.rng.random() < 0.7:
            kind = POSE_GOALS[int(self.rng.integers(len(POSE_GOALS)))]
            return ('pose',) + self.pose_goal(kind)
        return ('twist',) + self.twist_goal()

    def malformed(self):
        """(topic kind, ee or None, message, fault name) of a random malformed message."""
        topic, fault = self.faults[int(self.rng.integers(len(self.faults)))]
        if topic == 'joint_states':
            return topic, None, self.joint_state(fault), fault
        if topic == 'obstacles':
            return topic, None, self.obstacles(fault), fault
        if topic == 'pose':
            ee, msg = self.pose_goal('reachable')
            p, o = msg.pose.position, msg.pose.orientation
            if fault == 'nan_position':
                p.y = math.nan
            elif fault == 'inf_position':
                p.z = -math.inf
            elif fault == 'zero_quaternion':
                o.x = o.y = o.z = o.w = 0.0
            elif fault == 'unnormalised_quaternion':
                scale = float(self.rng.choice([0.5, 1.5, 1e6]))
                o.x, o.y, o.z, o.w = o.x * scale, o.y * scale, o.z * scale, o.w * scale
            elif fault == 'nan_quaternion':
                o.w = math.nan
            elif fault == 'unknown_frame':
                msg.header.frame_id = 'no_such_frame'
            return topic, ee, msg, fault
        ee, msg = self.twist_goal()
        t = msg.twist
        if fault == 'nan_linear':
            t.linear.x = math.nan
        elif fault == 'inf_angular':
            t.angular.z = math.inf
        elif fault == 'huge':
            t.linear.y = 1e300
        elif fault == 'unknown_frame':
            msg.header.frame_id = 'no_such_frame'
        elif fault == 'stamp_far_past':
            _stamp(msg, 1.0)
        elif fault == 'stamp_far_future':
            _stamp(msg, time.time() + 1e6)
        return topic, ee, msg, fault

    def obstacles(self, fault):
        """
        Return a MarkerArray of one degenerate obstacle (or too many) beside the arm.

        Its sphere would touch the arm at the ready pose: were it taken, the command would
        change.
        """
        m, rng = self.model, self.rng
        T = m.frame_placements(self.ready)[0]
        center = T[:3, 3] + rng.normal(0, 0.05, 3)
        marker = Marker(ns='ik_control_fuzz', id=int(rng.integers(1000)), type=Marker.SPHERE,
                        action=Marker.ADD)
        marker.header.frame_id = m.base_frame
        p, o, size = marker.pose.position, marker.pose.orientation, marker.scale
        p.x, p.y, p.z = (float(v) for v in center)
        o.w = 1.0
        size.x = size.y = size.z = 0.2
        if fault == 'nan_position':
            p.x = math.nan
        elif fault == 'zero_size':
            size.y = 0.0
        elif fault == 'negative_size':
            size.z = -0.2
        elif fault == 'inf_size':
            size.x = math.inf
        elif fault == 'huge_size':
            size.x = size.y = size.z = 1e300
        elif fault == 'zero_quaternion':
            o.w = 0.0
        elif fault == 'unnormalised_quaternion':
            o.w = float(rng.choice([0.5, 1.5, 1e6]))
        elif fault == 'unknown_frame':
            marker.header.frame_id = 'no_such_frame'
        elif fault == 'unsupported_type':
            marker.type = int(rng.choice([Marker.ARROW, Marker.LINE_STRIP, Marker.MESH_RESOURCE,
                                          Marker.TEXT_VIEW_FACING, 99]))
        elif fault == 'unknown_action':
            marker.action = 7
        markers = [marker]
        if fault == 'too_many_markers':
            markers = [marker] * 200
        return MarkerArray(markers=markers)

    def joint_state(self, fault):
        """Return a malformed JointState (frame_id 'ik_control_fuzz' marks it as ours)."""
        m, rng = self.model, self.rng
        names = list(m.joint_names)
        q = list(np.clip(self.ready + rng.normal(0, 0.2, m.nq), m.lower, m.upper))
        i = int(rng.integers(len(names)))
        if fault == 'length_mismatch':
            q = q[:-1] if rng.random() < 0.5 else q + [0.0]
        elif fault == 'missing_joint':
            del names[i], q[i]
        elif fault == 'duplicate_joint':
            names[i] = names[(i + 1) % len(names)]
        elif fault == 'unknown_joints':
            names = [f'not_{n}' for n in names]
        elif fault == 'nan_position':
            q[i] = math.nan
        elif fault == 'inf_position':
            q[i] = math.inf
        elif fault == 'huge_position':
            q[i] = 1e300
        elif fault == 'outside_limits':
            q[i] = float(m.upper[i] + 1.0)
        elif fault == 'empty':
            names, q = [], []
        msg = JointState(name=names, position=[float(v) for v in q])
        msg.header.frame_id = 'ik_control_fuzz'
        _stamp(msg, time.time())
        return msg


def _publish(probe, topic, ee, msg):
    if topic == 'joint_states':
        probe.state_pub.publish(msg)
    elif topic == 'obstacles':
        probe.obstacle_pub.publish(msg)
    elif topic == 'pose':
        probe.pose_pub[ee].publish(msg)
    else:
        probe.twist_pub[ee].publish(msg)


# ---------------------------------------------------------------------- the run
def _settle(probe, pair, timeout=SETTLE_TIMEOUT):
    """Wait until the command is steady; return it (positions, velocities) or None."""
    history = []

    def steady():
        msg = probe.last_command
        if msg is None:
            return False
        now = time.monotonic()
        q = np.array(msg.points[0].positions)
        if not history or np.max(np.abs(q - history[-1][1])) > SETTLE_TOLERANCE:
            history.append((now, q))
            return False
        return now - history[-1][0] >= SETTLE_TIME
    if not probe.spin_until(steady, timeout, pair=pair):
        return None
    point = probe.last_command.points[0]
    return np.array(point.positions), np.array(point.velocities)


def _send_window(probe, pair, factory, count, rate, valid_fraction, tally, deadline_check):
    """Send ``count`` messages at ``rate`` [1/s], ``valid_fraction`` of them valid goals."""
    period = 1.0 / rate
    start = time.monotonic()
    next_check = start
    for k in range(count):
        target = start + k * period
        while True:
            now = time.monotonic()
            if now >= target:
                break
            probe.poll()
            time.sleep(min(0.001, target - now))
        if factory.rng.random() < valid_fraction:
            topic, ee, msg = factory.valid()
            tally['valid'] += 1
        else:
            topic, ee, msg, fault = factory.malformed()
            tally['malformed'] += 1
            key = f'{topic}.{fault}'
            tally['faults'][key] = tally['faults'].get(key, 0) + 1
        _publish(probe, topic, ee, msg)
        if now >= next_check:
            pair.check_alive()
            deadline_check()
            next_check = now + 0.2
    probe.poll()


def run(messages=100000, rate=2000.0, robot='wam', seed=0, cycle=4000, quiet=1000,
        progress=None, namespace=None):
    """
    Fuzz a sim + controller pair with ``messages`` messages; return the figures (a dict).

    Cycles of ``cycle`` mixed messages, an anchor goal and settling, then ``quiet``
    malformed-only messages (see the module docstring), at ``rate`` messages per second.
    ``progress(text)`` receives progress lines. Raises :class:`FuzzError` if the nodes do
    not start.
    """
    if messages < 1 or rate <= 0 or cycle < 1 or quiet < 1:
        raise ValueError('messages, rate, cycle and quiet must be positive')
    say = progress or (lambda text: None)
    model = robots.robot(robot)
    namespace = namespace or f'/ik_control_fuzz_{os.getpid()}'
    rng = np.random.default_rng(seed)
    factory = MessageFactory(model, rng)
    tally = {'valid': 0, 'malformed': 0, 'faults': {}}
    quiet_windows = {'checked': 0, 'not_settled': 0, 'changed': 0, 'commands': 0,
                     'examples': []}
    pair = Pair(robot, namespace)
    probe = None
    started = time.monotonic()
    try:
        pair.start()
        say(f'started sim_robot and ik_controller for {robot} in {namespace} '
            f"(ROS_DOMAIN_ID={pair.env.get('ROS_DOMAIN_ID', '0')})")
        probe = Probe(model, namespace)
        probe.wait_ready(pair=pair)
        parameters = probe.controller_parameters(
            ['rate_hz', 'limits.position_margin', 'limits.velocity_scale',
             'limits.max_velocity', 'limits.max_acceleration'])
        checker = checker_for(model, parameters)
        probe.on_command = lambda msg, t: checker.check(msg)
        monitor = MotionMonitor(probe, checker.v_max, checker.a_max)
        probe.on_state = monitor.on_state
        refused_start = probe.refused()
        say(f"ready after {time.monotonic() - started:.1f} s; {parameters['rate_hz']:g} Hz; "
            f'sending {messages} messages at {rate:g}/s')
        t0 = time.monotonic()
        sent = 0
        window = None

        def in_window(msg, t):
            checker.check(msg)
            if window is None:
                return
            point = msg.points[0] if msg.points else None
            window['count'] += 1
            if point is None or max(
                    np.max(np.abs(np.array(point.positions) - window['q'])),
                    np.max(np.abs(np.array(point.velocities) - window['v']))) > \
                    IDENTICAL_TOLERANCE:
                window['changed'] += 1
        probe.on_command = in_window
        while sent < messages:
            n = min(cycle, messages - sent)
            _send_window(probe, pair, factory, n, rate, VALID_FRACTION, tally, lambda: None)
            sent += n
            if sent >= messages:
                break
            for i, ee in enumerate(model.end_effector_names):  # anchor: stay where you are
                probe.send_pose(ee, probe.current_poses()[i])
            steady = _settle(probe, pair)
            n = min(quiet, messages - sent)
            if steady is None:
                quiet_windows['not_settled'] += 1
                _send_window(probe, pair, factory, n, rate, 0.0, tally, lambda: None)
            else:
                window = {'q': steady[0], 'v': steady[1], 'count': 0, 'changed': 0}
                _send_window(probe, pair, factory, n, rate, 0.0, tally, lambda: None)
                probe.spin_for(0.1)  # the last refused messages reach a tick
                quiet_windows['checked'] += 1
                quiet_windows['commands'] += window['count']
                if window['changed']:
                    quiet_windows['changed'] += 1
                    if len(quiet_windows['examples']) < 5:
                        quiet_windows['examples'].append(
                            f"window {quiet_windows['checked']}: {window['changed']} of "
                            f"{window['count']} commands differ from the steady one")
                window = None
            sent += n
            say(f'{sent}/{messages} messages, refused so far {probe.refused() - refused_start}, '
                f'violations {checker.violations}, quiet windows {quiet_windows["checked"]} '
                f'({quiet_windows["changed"]} changed)')
        duration = time.monotonic() - t0
        probe.spin_for(0.3)
        diagnostics = probe.fresh_diagnostics(pair=pair)
        refused = probe.refused() - refused_start
        alive = {p.name: p.alive() for p in pair.processes()}
    finally:
        if probe is not None:
            probe.close()
        crashes = pair.stop()
    summary = checker.summary()
    return {
        'robot': robot, 'rate_hz': parameters['rate_hz'], 'messages_sent': tally['valid'] +
        tally['malformed'], 'valid_sent': tally['valid'], 'malformed_sent': tally['malformed'],
        'faults_sent': dict(sorted(tally['faults'].items())),
        'refused_counted_by_node': refused, 'send_rate': rate, 'duration_s': duration,
        'commands_checked': summary['commands'], 'points_checked': summary['points'],
        'acceleration_checked': summary['acceleration_checked'],
        'acceleration_skipped': summary['acceleration_skipped'],
        'violations': summary['violations'] + quiet_windows['changed'],
        'states_received': monitor.states,
        'commands_per_state': summary['commands'] / max(monitor.states, 1),
        'limit_violations': summary['violations'],
        'violation_examples': summary['violation_examples'] + quiet_windows['examples'],
        'quiet_windows': quiet_windows, 'crashes': len(crashes), 'crash_details': crashes,
        'measured_motion': monitor.summary(),
        'alive_at_end': alive,
        'status_codes_seen': sorted(c for c in probe.status_codes_seen if c),
        'final_diagnostics': diagnostics,
    }


def table(results):
    """Return the figures of :func:`run` as a text table."""
    q = results['quiet_windows']
    rows = [
        ('robot', results['robot']),
        ('control rate [Hz]', f"{results['rate_hz']:g}"),
        ('messages sent', f"{results['messages_sent']} ({results['valid_sent']} valid, "
                          f"{results['malformed_sent']} malformed)"),
        ('send rate [1/s]', f"{results['send_rate']:g}"),
        ('refused (counted by the node)', str(results['refused_counted_by_node'])),
        ('commands checked', f"{results['commands_checked']} ({results['points_checked']} "
                             'points)'),
        ('acceleration pairs checked / skipped',
         f"{results['acceleration_checked']} / {results['acceleration_skipped']}"),
        ('quiet windows checked', f"{q['checked']} ({q['commands']} commands; "
                                  f"{q['not_settled']} not settled)"),
        ('commands changed in quiet windows', str(q['changed'])),
        ('limit violations', str(results['limit_violations'])),
        ('commands per joint_states received', f"{results['commands_per_state']:.3f}"),
        ('robot speed / limit, max', '{reported_speed:.3f} reported; from positions '
                                     '{step_speed_ratio:.3f} between samples, '
                                     '{span_speed_ratio:.3f} over 10 ms'.format(
                                         **results['measured_motion'])),
        ('robot acceleration / limit, max', '{span_acceleration_ratio:.3f} over 10 ms'.format(
            **results['measured_motion'])),
        ('violations (must be 0)', str(results['violations'])),
        ('crashes (must be 0)', str(results['crashes'])),
        ('duration [s]', f"{results['duration_s']:.1f}"),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [f'{k:<{width}}  {v}' for k, v in rows]
    for example in results['violation_examples']:
        lines.append(f'  violation: {example}')
    for crash in results['crash_details']:
        lines.append(f"  crash: {crash['node']} exit code {crash['exit_code']}")
    return '\n'.join(lines)

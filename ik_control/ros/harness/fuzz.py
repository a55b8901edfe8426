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

Every JointTrajectory the controller publishes is checked
(:class:`~ik_control.ros.harness.checks.CommandChecker`):
positions within ``[lower + margin, upper - margin]`` of the URDF, velocities within the
velocity limits, and velocity changes between consecutive commands within the
acceleration limit. The figures: messages sent (valid / malformed), messages refused as
counted by the node (``refused_messages`` in its diagnostics; malformed messages that a
newer one on the same topic superseded before a tick are not counted), violations (must
be 0), crashes (node processes that died or exited non-zero; must be 0), duration.

The robot's measured speed against the limits
(:class:`~ik_control.ros.harness.checks.MotionMonitor`) and the commands
per joint_states message (one tick per state: more would mean messages the controller
refused caused ticks) are reported too.
"""


import math
import os
import time

from geometry_msgs.msg import TwistStamped
from ik_control import robots
from ik_control.ros.conversions import pose_stamped, sec_to_time
from ik_control.ros.harness.checks import checker_for, MotionMonitor
from ik_control.ros.harness.node_rig import Pair, Probe
import numpy as np
from sensor_msgs.msg import JointState
from visualization_msgs.msg import Marker, MarkerArray
SETTLE_TIME = 0.3           # the command must be steady this long before a quiet window [s]
SETTLE_TIMEOUT = 8.0        # longest wait for a steady command [s]
SETTLE_TOLERANCE = 1e-10    # steady: positions within this over SETTLE_TIME [rad]
IDENTICAL_TOLERANCE = 1e-9  # quiet window: positions and velocities within this [rad, rad/s]
VALID_FRACTION = 0.1        # share of valid goals in the mixed phase

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


def _stamp(msg, seconds):
    sec_to_time(seconds, msg.header.stamp)


# ---------------------------------------------------------------------- the messages
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
    ``progress(text)`` receives progress lines. Raises
    :class:`~ik_control.ros.harness.node_rig.FuzzError` if the nodes do not start.
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

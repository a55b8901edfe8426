"""
``ik_control demo``: the controller following a sequence of goals on the simulated robot.

``sim_robot`` and ``ik_controller`` run as separate processes, as on a robot
(``sys.executable -m ik_control.ros.<node>`` with the robot's parameter file from the
package share), in the private namespace :data:`NAMESPACE` with their ``/diagnostics``
remapped into it, on the user's ``ROS_DOMAIN_ID`` (DDS discovery limited to this host
unless ``ROS_AUTOMATIC_DISCOVERY_RANGE`` says otherwise).

For every goal the demo publishes a geometry_msgs/PoseStamped per end effector and waits
for ``~/<ee>/goal_reached`` (converged) or for the diagnostics to report
``TARGET_UNREACHABLE`` (the controller holds the closest pose it found). The final
errors are computed here, by forward kinematics of the *measured* ``joint_states``
against the goal. A velocity-mode segment streams geometry_msgs/TwistStamped at
:data:`TWIST_RATE` and measures the effector speed the same way.

The robot's own speeds are checked too: a :class:`~ik_control.control.motion_meter.
MotionMeter` over the recorded joint_states (speed over spans of 10 ms) against the URDF
velocity limits; above ``SPEED_TOLERANCE`` times them the demo fails, whatever the goals
did (issue 10: the MuJoCo wrist rang at 16 times its limit while every goal converged).

Progress goes to stderr, the summary table to stdout, and a PNG (matplotlib, Agg) shows
the effector paths, the errors over time with the goal changes, and the joint positions
normalised to their limits.
"""

from dataclasses import dataclass, field
import math
import os
import signal
import sys
import time

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, TwistStamped
from ik_control import robots
from ik_control.control.motion_meter import MotionMeter
from ik_control.ik.pose_error import pose_distance
from ik_control.ros.conversions import pose_stamped
from ik_control.ros.harness.demo_plot import plot
from ik_control.ros.harness.node_process import node_environment, NodeProcess
import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool
from trajectory_msgs.msg import JointTrajectory

NAMESPACE = '/ik_control_demo'
ROBOTS = ('wam', 'simon')
BACKENDS = ('kinematic', 'mujoco')
STARTUP_TIMEOUT = 120.0    # process start, discovery, numba cache load or compile (first run) [s]
GOAL_TIMEOUT = 15.0        # longest wait for one goal [s]
UNREACHABLE_GRACE = 3.0    # after TARGET_UNREACHABLE, time left to the other effectors [s]
SETTLE_TIME = 0.3          # goal_reached must stay True this long to count [s]
TWIST_RATE = 50.0          # TwistStamped messages per second [Hz]
TWIST_DURATION = 1.0       # length of the velocity-mode segment [s]
DIAGNOSTICS_RATE = 10.0    # the controller's /diagnostics rate during the demo [Hz]
STOP_TIMEOUT = 10.0        # SIGINT to exit, then SIGKILL [s]
EXIT_FAILED = 1
#: measured joint speed over the URDF velocity limit above which the demo fails: the
#: servo's overshoot and the stamps' jitter, not a ringing joint [-]
SPEED_TOLERANCE = 1.05
EXIT_INTERRUPTED = 130
LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)

CONVERGED = 'converged'
UNREACHABLE = 'unreachable (holding closest pose)'
TIMED_OUT = 'NOT converged (timeout)'


class DemoError(Exception):
    """The demo cannot go on (a node died, nothing arrived); the message says why."""


# ---------------------------------------------------------------------- goals
def _rot(axis, angle):
    """Return the rotation matrix of ``angle`` [rad] about base axis ``axis`` ('x', 'y', 'z')."""
    c, s = math.cos(angle), math.sin(angle)
    i = 'xyz'.index(axis)
    j, k = (i + 1) % 3, (i + 2) % 3
    R = np.eye(3)
    R[j, j] = R[k, k] = c
    R[k, j], R[j, k] = s, -s
    return R


def _pose(position, R):
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = position
    return T


@dataclass
class Step:
    """
    One step of the demo: a pose goal per end effector, or a velocity-mode segment.

    ``targets`` maps end effector -> 4x4 goal in the base frame; ``expect`` maps end
    effector -> CONVERGED or UNREACHABLE (what the controller should do); ``twist`` maps
    end effector -> (vx, vy, vz) [m/s] for a velocity segment.
    """

    name: str
    targets: dict = field(default_factory=dict)
    expect: dict = field(default_factory=dict)
    twist: dict = field(default_factory=dict)


def wam_steps(model):
    """Return the WAM's steps: reachable poses, velocity mode, near-singular, out of reach."""
    ready = model.frame_placements(robots.ready_pose('wam'))[0]
    p0, R0 = ready[:3, 3], ready[:3, :3]
    # tool high above the front of the base: sigma_min at the goal 0.056 (singular_epsilon
    # 0.04); the way there from the side passes closer to the shoulder/elbow singularity
    high = model.frame_placements(np.array([0.0, 0.3, 0.0, 0.6, 0.0, 0.3, 0.0]))[0]
    reach = {'tool': CONVERGED}
    return [
        Step('forward and down', {'tool': _pose(p0 + [0.12, 0.0, -0.12], R0)}, reach),
        Step('left, tilted', {'tool': _pose(p0 + [-0.10, 0.30, 0.05], _rot('x', 0.4) @ R0)},
             reach),
        Step('right and up, tilted',
             {'tool': _pose(p0 + [-0.10, -0.30, 0.20], _rot('x', -0.4) @ R0)}, reach),
        Step('velocity mode', twist={'tool': (0.0, 0.1, 0.0)}),
        Step('high, via near-singular poses', {'tool': high}, reach),
        Step('out of reach (2 m ahead)', {'tool': _pose(p0 + [2.0, 0.0, 0.0], R0)},
             {'tool': UNREACHABLE}),
        Step('back within reach', {'tool': _pose(p0 + [0.10, 0.0, -0.05], R0)}, reach),
        Step('back to ready', {'tool': ready}, reach),
    ]


def simon_steps(model):
    """Return SIMON's steps: both hands at once, lift in velocity mode, one out of reach."""
    ready = model.frame_placements(robots.ready_pose('simon'))
    forward = _rot('y', -math.pi / 2)  # forearms pointing forward, palms facing each other
    both = {'right_hand': CONVERGED, 'left_hand': CONVERGED}
    return [
        Step('box hold', {'right_hand': _pose([0.42, -0.17, 1.05], forward),
                          'left_hand': _pose([0.42, 0.17, 1.05], forward)}, both),
        Step('velocity mode (lift)', twist={'right_hand': (0.0, 0.0, 0.1),
                                            'left_hand': (0.0, 0.0, 0.1)}),
        Step('box raised, to the left',
             {'right_hand': _pose([0.40, -0.10, 1.15], _rot('z', 0.2) @ forward),
              'left_hand': _pose([0.40, 0.24, 1.15], _rot('z', 0.2) @ forward)}, both),
        Step('right out of reach, left reaches out',
             {'right_hand': _pose([0.4, -1.8, 1.3], forward),
              'left_hand': _pose([0.40, 0.34, 1.15], _rot('z', 0.2) @ forward)},
             {'right_hand': UNREACHABLE, 'left_hand': CONVERGED}),
        Step('back to ready', {'right_hand': ready[0], 'left_hand': ready[1]}, both),
    ]


STEPS = {'wam': wam_steps, 'simon': simon_steps}


# ---------------------------------------------------------------------- processes
class StopRequest:
    """
    SIGINT/SIGTERM handler: raise KeyboardInterrupt at once, or at the next check.

    While rclpy runs (``deferred``), a KeyboardInterrupt raised inside rclpy's C++ code
    can surface as an unrelated RuntimeError; the request is then only recorded, and
    :meth:`check` (called by the spin loop every few milliseconds) raises it.
    """

    def __init__(self):
        """Start with no request, raising immediately."""
        self.deferred = False
        self.requested = False

    def __call__(self, signum, frame):
        """Record the request; raise KeyboardInterrupt unless deferred."""
        self.requested = True
        if not self.deferred:
            raise KeyboardInterrupt

    def check(self):
        """Raise KeyboardInterrupt if a stop was requested."""
        if self.requested:
            raise KeyboardInterrupt


def start_nodes(robot, backend, env):
    """Start sim_robot and ik_controller for ``robot``; return them (sim, controller)."""
    params = robots.data_path('config', f'{robot}.yaml')
    common = ['--params-file', params, '-r', f'__ns:={NAMESPACE}',
              '-p', f'urdf_path:={robots.urdf_path(robot)}']
    sim = NodeProcess('sim_robot', 'ik_control.ros.sim_robot_node',
                      common + ['-p', f'backend:={backend}'], env, STOP_TIMEOUT)
    try:
        ctl = NodeProcess('ik_controller', 'ik_control.ros.ik_controller_node',
                          common + ['-p', f'diagnostics_rate:={DIAGNOSTICS_RATE}',
                                    '-r', f'/diagnostics:={NAMESPACE}/diagnostics'], env,
                          STOP_TIMEOUT)
    except BaseException:
        sim.stop()
        raise
    return sim, ctl


# ---------------------------------------------------------------------- the ROS client
class Recorder:
    """The demo's own rclpy node: publishes goals, records joint_states and diagnostics."""

    def __init__(self, model, processes, stop=None):
        """Create the node (own context) with publishers and subscriptions in NAMESPACE."""
        self.model = model
        self.processes = processes
        self.stop = stop or StopRequest()
        self.context = rclpy.Context()
        # no rclpy signal handlers: Ctrl-C goes to StopRequest, which stops the nodes
        rclpy.init(context=self.context, signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node('ik_control_demo', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.times, self.positions = [], []
        self._order = (None, None)
        self.goal_reached = {ee: [] for ee in model.end_effector_names}
        self.diagnostics = []
        self.commands = 0
        node, ctl = self.node, f'{NAMESPACE}/ik_controller'
        node.create_subscription(JointState, f'{NAMESPACE}/joint_states', self._on_state, 100)
        node.create_subscription(DiagnosticArray, f'{NAMESPACE}/diagnostics',
                                 self._on_diagnostics, 10)
        self._command_sub = node.create_subscription(
            JointTrajectory, f'{NAMESPACE}/joint_trajectory_controller/joint_trajectory',
            self._on_command, 10)
        self.pose_pub, self.twist_pub = {}, {}
        for ee in model.end_effector_names:
            node.create_subscription(Bool, f'{ctl}/{ee}/goal_reached',
                                     lambda m, ee=ee: self.goal_reached[ee].append(
                                         (time.time(), m.data)), LATCHED)
            self.pose_pub[ee] = node.create_publisher(PoseStamped, f'{ctl}/{ee}/target_pose',
                                                      10)
            self.twist_pub[ee] = node.create_publisher(TwistStamped,
                                                       f'{ctl}/{ee}/target_twist', 10)

    # --------------------------------------------------------------- callbacks
    def _on_state(self, msg):
        names = tuple(msg.name)
        if self._order[0] != names:
            try:
                self._order = (names, [names.index(n) for n in self.model.joint_names])
            except ValueError:
                return
        if len(msg.position) != len(names):
            return
        stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        self.times.append(stamp if stamp > 0 else time.time())
        self.positions.append(np.asarray(msg.position)[self._order[1]])

    def _on_diagnostics(self, msg):
        for status in msg.status:
            if status.hardware_id == self.model.name:
                stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
                values = {kv.key: kv.value for kv in status.values}
                self.diagnostics.append((stamp, values))

    def _on_command(self, msg):
        self.commands += 1

    # --------------------------------------------------------------- spinning
    def check_processes(self):
        """Raise DemoError naming a node that exited, with the tail of its output."""
        for p in self.processes:
            if not p.alive():
                raise DemoError(f'{p.name} exited with status {p.proc.returncode}; its last '
                                f'output:\n{p.output_tail()}')

    def spin_for(self, seconds):
        """Process callbacks for ``seconds`` [s], checking the node processes."""
        self.spin_until(lambda: False, seconds)

    def spin_until(self, predicate, timeout):
        """Process callbacks until ``predicate()`` or ``timeout`` [s]; return ``predicate()``."""
        end = time.monotonic() + timeout
        next_check = 0.0
        while True:
            self.stop.check()
            if predicate():
                return True
            now = time.monotonic()
            if now >= end:
                return False
            if now >= next_check:
                self.check_processes()
                next_check = now + 0.2
            self.executor.spin_once(timeout_sec=min(0.005, end - now))

    def wait_ready(self, timeout):
        """Wait for joint_states, a first command and matched goal subscriptions."""
        pubs = list(self.pose_pub.values()) + list(self.twist_pub.values())

        def ready():
            return (self.positions and self.commands > 0
                    and all(p.get_subscription_count() > 0 for p in pubs)
                    and all(self.goal_reached[ee] for ee in self.goal_reached))
        start = time.monotonic()
        while not self.spin_until(ready, min(10.0, start + timeout - time.monotonic())):
            if time.monotonic() - start >= timeout:
                break
            _progress(f'waiting for the nodes ({time.monotonic() - start:.0f} s): '
                      f"joint_states {'yes' if self.positions else 'no'}, commands "
                      f"{'yes' if self.commands else 'no'} (the first start compiles "
                      'the numba kernels)')
        if not ready():
            raise DemoError(f'the nodes did not come up within {timeout:.0f} s (joint_states '
                            f'{len(self.positions)}, commands {self.commands})')
        self.node.destroy_subscription(self._command_sub)
        self.spin_for(0.5)  # let discovery finish, to see foreign publishers
        topic = f'{NAMESPACE}/joint_states'
        count = self.node.count_publishers(topic)
        if count > 1:
            raise DemoError(f'{count} publishers on {topic}: another demo or sim_robot runs in '
                            f"ROS_DOMAIN_ID={os.environ.get('ROS_DOMAIN_ID', '0')}; stop it "
                            'or choose another ROS_DOMAIN_ID')

    def settled_q(self, timeout=2.0, still=1e-5):
        """
        Return the measured joint positions [rad] once the arm is at rest.

        At rest: no joint moved more than ``still`` [rad] over the last 0.1 s of
        joint_states, the newest of them less than 50 ms old; at most ``timeout`` [s].
        """
        def at_rest():
            if not self.times or time.time() - self.times[-1] > 0.05:
                return False
            times = np.array(self.times[-2000:])
            k = int(np.searchsorted(times, times[-1] - 0.1))
            if times[k] > times[-1] - 0.09:
                return False
            recent = np.array(self.positions[len(self.positions) - len(times) + k:])
            return float(np.max(np.ptp(recent, axis=0))) < still
        self.spin_until(at_rest, timeout)
        return self.positions[-1]

    def send_pose(self, ee, T):
        """Publish the goal ``T`` (4x4, base frame) for end effector ``ee``."""
        self.pose_pub[ee].publish(
            pose_stamped(T, self.model.base_frame, self.node.get_clock().now()))

    def send_twist(self, ee, linear):
        """Publish a velocity command [m/s] for end effector ``ee`` (base frame)."""
        msg = TwistStamped()
        msg.header.frame_id = self.model.base_frame
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.twist.linear.x, msg.twist.linear.y, msg.twist.linear.z = (float(v) for v in linear)
        self.twist_pub[ee].publish(msg)

    def close(self):
        """Destroy the node and shut the context down."""
        try:
            self.executor.shutdown()
            self.node.destroy_node()
        finally:
            rclpy.try_shutdown(context=self.context)


# ---------------------------------------------------------------------- running steps
@dataclass
class Row:
    """One line of the summary: a goal of one end effector, or a velocity segment."""

    step: str
    effector: str
    result: str
    seconds: float
    position_mm: float = math.nan
    orientation_mrad: float = math.nan
    notes: str = ''
    ok: bool = True


def _flags_since(rec, t0):
    """Return the status codes of the diagnostics stamped after ``t0``, and min sigma_min."""
    flags, sigma = set(), math.inf
    for stamp, values in rec.diagnostics:
        if stamp >= t0:
            flags.update(f for f in values.get('status_codes', '').split(',') if f != 'NONE')
            try:
                sigma = min(sigma, float(values.get('sigma_min', 'inf')))
            except ValueError:
                pass
    return flags, sigma


def run_pose_step(rec, step):
    """Send the goals of ``step`` and wait for each effector's outcome; return its rows."""
    ees = list(step.targets)
    t_send = time.time()
    marks = {ee: len(rec.goal_reached[ee]) for ee in ees}
    for ee, T in step.targets.items():
        rec.send_pose(ee, T)
    outcome, when = {}, {}
    unreachable_seen = [None]
    scanned = [len(rec.diagnostics)]

    def update():
        now = time.time()
        for ee in ees:
            if ee in outcome:
                continue
            msgs = rec.goal_reached[ee][marks[ee]:]
            # the controller answers a new goal with False, then True once reached; an arm
            # passing through the goal can flip it back: converged = True for SETTLE_TIME
            accepted = next((i for i, (_, v) in enumerate(msgs) if not v), None)
            if accepted is not None and msgs[-1][1] and len(msgs) > accepted + 1:
                if now - msgs[-1][0] >= SETTLE_TIME:
                    outcome[ee], when[ee] = CONVERGED, msgs[-1][0] - t_send
        while unreachable_seen[0] is None and scanned[0] < len(rec.diagnostics):
            stamp, values = rec.diagnostics[scanned[0]]
            scanned[0] += 1
            if stamp > t_send + 0.1 and 'TARGET_UNREACHABLE' in values.get('status_codes', ''):
                unreachable_seen[0] = now
        seen = unreachable_seen[0]
        # the flag is per controller: with several effectors still open, give the ones that
        # are not parked time to converge before calling all open ones unreachable
        grace = UNREACHABLE_GRACE if len(ees) - len(outcome) > 1 else 0.0
        if seen is not None and now - seen >= grace:
            for ee in ees:
                if ee not in outcome:
                    outcome[ee], when[ee] = UNREACHABLE, seen - t_send
        return len(outcome) == len(ees)

    rec.spin_until(update, GOAL_TIMEOUT)
    T = rec.model.frame_placements(rec.settled_q())
    flags, sigma = _flags_since(rec, t_send + 0.1)
    notes = ','.join(sorted(flags - {'TARGET_UNREACHABLE', 'ERROR_CLAMPED',
                                     'VELOCITY_LIMITED', 'ACCELERATION_LIMITED'}))
    if math.isfinite(sigma):
        notes = f'sigma_min {sigma:.3g}' + (f'; {notes}' if notes else '')
    rows = []
    for i, ee in enumerate(rec.model.end_effector_names):
        if ee not in step.targets:
            continue
        result = outcome.get(ee, TIMED_OUT)
        seconds = when.get(ee, time.time() - t_send)
        pos, rot = pose_distance(T[i], step.targets[ee])
        ok = result == step.expect.get(ee, CONVERGED)
        if result == CONVERGED:
            ok = ok and pos < 1e-3 and rot < 1e-2
        rows.append(Row(step.name, ee, result, seconds, pos * 1e3, rot * 1e3, notes, ok))
    return rows


def run_twist_step(rec, step):
    """Stream the twists of ``step`` at TWIST_RATE for TWIST_DURATION; return its rows."""
    start = time.time()
    period = 1.0 / TWIST_RATE
    next_send = time.monotonic()
    while time.time() - start < TWIST_DURATION:
        for ee, v in step.twist.items():
            rec.send_twist(ee, v)
        next_send += period
        rec.spin_until(lambda: False, max(0.0, next_send - time.monotonic()))
    rec.spin_for(0.6)  # twist_timeout, then deceleration to rest
    times = np.array(rec.times)
    window = (times >= start + 0.3) & (times <= start + TWIST_DURATION)
    idx = np.flatnonzero(window)
    rows = []
    for i, ee in enumerate(rec.model.end_effector_names):
        if ee not in step.twist:
            continue
        commanded = float(np.linalg.norm(step.twist[ee]))
        if len(idx) < 2:
            rows.append(Row(step.name, ee, 'no joint_states during the segment',
                            TWIST_DURATION, ok=False))
            continue
        # least-squares slope of the effector position over the joint_states stamps
        ws = rec.model.workspace()
        P = np.empty((len(idx), 3))
        for k, j in enumerate(idx):
            ws.update(rec.positions[j], jacobian=False)
            P[k] = ws.frame_T[i, :3, 3]
        velocity = np.polyfit(times[idx] - times[idx[0]], P, 1)[0]
        along = float(velocity @ np.asarray(step.twist[ee]) / commanded)
        ok = abs(along - commanded) < 0.15 * commanded
        axis = 'xyz'[int(np.argmax(np.abs(step.twist[ee])))]
        rows.append(Row(step.name, ee, f'twist {commanded * 1e3:.0f} mm/s along {axis}: '
                        f'measured {np.linalg.norm(velocity) * 1e3:.1f} mm/s',
                        TWIST_DURATION, ok=ok))
    return rows


# ---------------------------------------------------------------------- output
def _fmt(value, digits=2):
    return '-' if not math.isfinite(value) else f'{value:.{digits}f}'


def summary_table(rows):
    """Return the summary table (columns separated by at least two spaces)."""
    header = ('goal', 'effector', 'result', 'time [s]', 'position error [mm]',
              'orientation error [mrad]', 'notes')
    lines = [(r.step, r.effector, r.result, _fmt(r.seconds), _fmt(r.position_mm, 3),
              _fmt(r.orientation_mrad, 2), r.notes or '-') for r in rows]
    widths = [max(len(str(c)) for c in col) for col in zip(header, *lines)]
    out = []
    for line in [header] + lines:
        out.append('  '.join(str(c).ljust(w) for c, w in zip(line, widths)).rstrip())
        if line is header:
            out.append('  '.join('-' * w for w in widths))
    return '\n'.join(out)


def limits_report(model, positions):
    """Return a line on how close the measured joints came to their limits."""
    Q = np.array(positions)
    lo = (Q - model.lower).min(axis=0)
    hi = (model.upper - Q).min(axis=0)
    j = int(np.argmin(np.minimum(lo, hi)))
    side = 'lower' if lo[j] <= hi[j] else 'upper'
    closest = min(lo[j], hi[j])
    inside = bool(np.all(lo >= -1e-9) and np.all(hi >= -1e-9))
    return (f"joints inside their limits throughout: {'yes' if inside else 'NO'} (closest: "
            f'{model.joint_names[j]}, {closest * 1e3:.1f} mrad from its {side} limit)'), inside


def speeds_report(model, times, positions):
    """Return a line on the robot's measured speeds against its limits, and whether within."""
    meter = MotionMeter(model.velocity_limit, np.full(model.nq, np.inf))
    for t, q in zip(times, positions):
        meter.add(t, q)
    ratio = meter.span_speed_ratio
    ok = ratio <= SPEED_TOLERANCE
    where = meter.worst.get('span_speed_ratio')
    joint = model.joint_names[where[1]] if where else '-'
    return (f"robot speeds within the velocity limits: {'yes' if ok else 'NO'} (largest "
            f'{ratio:.3f} of the limit over 10 ms, {joint}; {meter.samples} joint_states)'), ok


# ---------------------------------------------------------------------- main
def _progress(message):
    print(f'[demo] {message}', file=sys.stderr, flush=True)


def run(robot='wam', backend='kinematic', plot_path=None):
    """Run the demo; return the exit status (0: every goal behaved as expected)."""
    if robot not in ROBOTS:
        raise DemoError(f"unknown robot '{robot}'; choose one of {', '.join(ROBOTS)}")
    if backend not in BACKENDS:
        raise DemoError(f"unknown backend '{backend}'; choose one of {', '.join(BACKENDS)}")
    stop = StopRequest()
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        return _run(robot, backend, plot_path or f'demo_{robot}.png', stop)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _run(robot, backend, plot_path, stop):
    env = node_environment()
    started = time.monotonic()
    _progress(f"starting sim_robot ({backend}) and ik_controller for '{robot}' in "
              f"{NAMESPACE} (ROS_DOMAIN_ID={env.get('ROS_DOMAIN_ID', '0')}, "
              f"discovery {env['ROS_AUTOMATIC_DISCOVERY_RANGE']})")
    processes, rec, interrupted = [], None, False
    try:
        processes = list(start_nodes(robot, backend, env))
        model = robots.robot(robot)
        steps = STEPS[robot](model)
        stop.deferred = True  # rclpy from here: stop at the next check, not inside rclpy
        rec = Recorder(model, processes, stop)
        rec.wait_ready(STARTUP_TIMEOUT)
        _progress(f'nodes up after {time.monotonic() - started:.1f} s')
        rows, marks = run_steps(rec, steps)
    except KeyboardInterrupt:
        interrupted = True
        _progress('interrupted: stopping the nodes')
    except DemoError as exc:
        print(f'ik_control demo: {exc}', file=sys.stderr, flush=True)
        return EXIT_FAILED
    finally:
        if rec is not None:
            rec.close()
        for p in reversed(processes):  # the controller first: no command to a stopped robot
            running = p.alive()  # a node that died is reported by its DemoError
            code = p.stop(grace=1.0 if interrupted else 0.0)
            if running and code not in (0, -signal.SIGINT) and not interrupted:
                _progress(f'{p.name} exited with status {code}:\n{p.output_tail(10)}')
        stop.deferred = False
    if interrupted or stop.requested:
        return EXIT_INTERRUPTED
    _progress(f'nodes stopped; writing {plot_path}')
    plot(plot_path, rec, marks, robot, backend)
    line, inside = limits_report(model, rec.positions)
    speeds, slow_enough = speeds_report(model, rec.times, rec.positions)
    print(f'ik_control demo: {robot}, {backend} sim_robot, '
          f'{time.monotonic() - started:.1f} s')
    print(summary_table(rows))
    print(line)
    print(speeds)
    print(f'plot: {plot_path}')
    failed = [r for r in rows if not r.ok]
    if failed or not inside or not slow_enough:
        print(f'ik_control demo: {len(failed)} goal(s) did not behave as expected: '
              + ', '.join(f'{r.step} ({r.effector})' for r in failed), file=sys.stderr)
        return EXIT_FAILED
    return 0


def run_steps(rec, steps):
    """Run every step; return the summary rows and the goal marks (time, name, targets)."""
    rows, marks = [], []
    for n, step in enumerate(steps, 1):
        marks.append((time.time(), step.name, step.targets or None))
        if step.twist:
            new = run_twist_step(rec, step)
        else:
            new = run_pose_step(rec, step)
        for r in new:
            detail = (f'{r.result} after {r.seconds:.2f} s, error {r.position_mm:.3f} mm / '
                      f'{r.orientation_mrad:.2f} mrad' if step.targets else r.result)
            _progress(f"{n}/{len(steps)} '{step.name}' {r.effector}: {detail}")
        rows += new
    return rows, marks

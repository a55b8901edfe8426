"""ik_controller and sim_robot as real nodes in separate processes, over real DDS."""

import signal
import time

from command_checks import assert_window_within_limits
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, TwistStamped
from ik_control import robots
from ik_control.validation import matrix_to_quaternion
import numpy as np
import pytest
from rclpy.qos import DurabilityPolicy, QoSProfile
from ros_helpers import NodeProcess, RosTestContext
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import Marker, MarkerArray

LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
STARTUP = 30.0  # process start, discovery and numba cache load on a busy machine [s]


def _array(values):
    return '[' + ', '.join(repr(float(v)) for v in values) + ']'


def _strings(values):
    return '[' + ', '.join(values) + ']'


class Bringup:
    """sim_robot + ik_controller for one bundled robot under namespace ``/name``."""

    def __init__(self, name, rate_hz, extra=(), ns=None):
        setup = robots.SETUPS[name]
        self.name = name
        self.model = robots.robot(name)
        self.ns = ns or f'/{name}_test'
        urdf = robots.urdf_path(name)
        self.sim_args = ['-r', f'__ns:={self.ns}', '-p', f'urdf_path:={urdf}',
                         '-p', f'joints:={_strings(setup.joints)}',
                         '-p', f'initial_positions:={_array(setup.ready)}',
                         '-p', f'rate_hz:={rate_hz}']
        self.sim = self.ctl = self.ctx = None
        try:
            self._start(name, rate_hz, setup, urdf, extra)
        except BaseException:
            self.close()
            raise

    def _start(self, name, rate_hz, setup, urdf, extra):
        self.sim = NodeProcess('ik_control.ros.sim_robot_node', self.sim_args)
        self.ctl = NodeProcess('ik_control.ros.ik_controller_node', [
            '-r', f'__ns:={self.ns}', '-p', f'urdf_path:={urdf}',
            '-p', f'base_frame:={setup.base_frame}',
            '-p', f'end_effectors:={_strings(setup.end_effectors)}',
            '-p', f'joints:={_strings(setup.joints)}', '-p', f'rate_hz:={rate_hz}',
            '-p', 'joint_state_timeout:=0.1', *extra])
        self.ctx = RosTestContext(f'{name}_tester')
        node = self.ctx.node
        self.states = self.ctx.collect(JointState, f'{self.ns}/joint_states', 50)
        self.commands = self.ctx.collect(
            JointTrajectory, f'{self.ns}/joint_trajectory_controller/joint_trajectory', 50)
        self.diagnostics = self.ctx.collect(DiagnosticArray, '/diagnostics', 10)
        self.goal = {ee: self.ctx.collect(Bool, f'{self.ns}/ik_controller/{ee}/goal_reached',
                                          LATCHED) for ee in setup.end_effectors}
        self.pose_pub = {ee: node.create_publisher(
            PoseStamped, f'{self.ns}/ik_controller/{ee}/target_pose', 10)
            for ee in setup.end_effectors}
        self.twist_pub = {ee: node.create_publisher(
            TwistStamped, f'{self.ns}/ik_controller/{ee}/target_twist', 10)
            for ee in setup.end_effectors}
        self.state_pub = node.create_publisher(JointState, f'{self.ns}/joint_states', 10)
        self.commands.wait(timeout=STARTUP)
        for pub in list(self.pose_pub.values()) + list(self.twist_pub.values()):
            assert self.ctx.wait_for_subscribers(pub, 1, timeout=STARTUP)

    def close(self):
        for part in (self.ctl, self.sim):
            if part is not None:
                part.stop()
        if self.ctx is not None:
            self.ctx.close()

    def q(self):
        msg = self.states.wait(timeout=5.0)
        index = [list(msg.name).index(n) for n in self.model.joint_names]
        return np.array(msg.position)[index]

    def send_pose(self, ee, T, frame_id=None):
        msg = PoseStamped()
        msg.header.frame_id = self.model.base_frame if frame_id is None else frame_id
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, T[:3, 3])
        x, y, z, w = matrix_to_quaternion(T[:3, :3])
        o = msg.pose.orientation
        o.x, o.y, o.z, o.w = float(x), float(y), float(z), float(w)
        self.goal[ee].clear()
        self.pose_pub[ee].publish(msg)

    def wait_goal(self, ee, timeout=15.0):
        """Wait for goal_reached True on ``ee`` since its last goal was sent."""
        if any(m.data for m in self.goal[ee].messages):
            return
        self.goal[ee].wait(lambda m: m.data, timeout=timeout)

    def diagnostic(self, predicate, timeout=5.0):
        def mine(msg):
            return any(s.hardware_id == self.model.name and predicate(s) for s in msg.status)
        msg = self.diagnostics.wait(mine, timeout=timeout)
        return next(s for s in msg.status if s.hardware_id == self.model.name)


def _pose_errors(model, q, targets):
    T = model.frame_placements(q)
    pos = [np.linalg.norm(T[i, :3, 3] - targets[i][:3, 3]) for i in range(len(targets))]
    rot = [np.arccos(np.clip((np.trace(T[i, :3, :3].T @ targets[i][:3, :3]) - 1) / 2, -1, 1))
           for i in range(len(targets))]
    return np.array(pos), np.array(rot)


def _assert_in_limits(model, q, margin=0.0):
    assert np.all(q >= model.lower + margin - 1e-9) and np.all(q <= model.upper - margin + 1e-9)


@pytest.fixture(scope='module')
def wam():
    bringup = Bringup('wam', 500.0)
    yield bringup
    bringup.close()


@pytest.fixture  # one test uses it: a 1 kHz pair left running would load the later ones
def simon():
    bringup = Bringup('simon', 1000.0)
    yield bringup
    bringup.close()


def _reachable_targets(model, q, offset):
    T = model.frame_placements(q + offset)
    return [T[i] for i in range(len(T))]


def _assert_tool_reaches(wam, offset):
    """Send the tool to the pose of ready + ``offset``; assert 1 mm / 10 mrad, in limits."""
    targets = _reachable_targets(wam.model, robots.ready_pose('wam'), np.array(offset))
    wam.send_pose('tool', targets[0])
    wam.wait_goal('tool')
    _settled_command(wam)
    wam.ctx.spin_for(0.1)
    q = wam.q()
    pos, rot = _pose_errors(wam.model, q, targets)
    assert pos[0] < 1e-3 and rot[0] < 1e-2
    _assert_in_limits(wam.model, q)


def test_wam_reaches_a_reachable_goal_within_1mm_and_10mrad(wam):
    _assert_tool_reaches(wam, [0.3, -0.2, 0.2, -0.3, 0.2, 0.3, 0.4])


def test_wam_on_an_rclpy_timer_loop_reaches_a_goal():
    """``loop: timer`` (the executor runs the ticks) follows goals like the realtime loop."""
    bringup = Bringup('wam', 500.0, extra=['-p', 'loop:=timer'], ns='/wam_timer')
    try:
        _assert_tool_reaches(bringup, [0.2, -0.2, 0.1, -0.2, 0.1, 0.2, 0.3])
    finally:
        bringup.close()


def test_simon_reaches_goals_with_both_hands_at_once(simon):
    targets = _reachable_targets(simon.model, robots.ready_pose('simon'),
                                 0.25 * np.sin(np.arange(16)))
    for ee, T in zip(('right_hand', 'left_hand'), targets):
        simon.send_pose(ee, T)
    simon.wait_goal('right_hand')
    simon.wait_goal('left_hand')
    _settled_command(simon)
    simon.ctx.spin_for(0.1)
    pos, rot = _pose_errors(simon.model, simon.q(), targets)
    assert np.all(pos < 1e-3) and np.all(rot < 1e-2)


def test_wam_out_of_reach_goal_leaves_a_still_stretched_arm_inside_limits(wam):
    T = wam.model.frame_placements(robots.ready_pose('wam'))[0]
    T[:3, 3] = [2.0, 0.5, 1.0]  # about 2 m away: the WAM reaches ~1 m
    wam.send_pose('tool', T)
    wam.diagnostic(lambda s: 'TARGET_UNREACHABLE' in _value(s, 'status_codes'), timeout=15.0)
    wam.states.clear()
    wam.ctx.spin_for(1.0)
    qs = np.array([[m.position[m.name.index(n)] for n in wam.model.joint_names]
                   for m in wam.states.messages])
    assert len(qs) > 100
    assert np.max(np.ptp(qs, axis=0)) < 1e-3  # still: no oscillation
    for q in qs:
        _assert_in_limits(wam.model, q)
    tool = wam.model.frame_placements(qs[-1])[0, :3, 3]
    start = wam.model.frame_placements(robots.ready_pose('wam'))[0, :3, 3]
    # stretched toward the target: shoulder to tool 0.91 m at full extension
    assert np.linalg.norm(tool - [0, 0, 0.346]) > 0.8
    assert np.linalg.norm(tool - T[:3, 3]) < np.linalg.norm(start - T[:3, 3]) - 0.15


def test_wam_velocity_mode_moves_at_the_commanded_twist(wam):
    target = _reachable_targets(wam.model, robots.ready_pose('wam'), 0.0)[0]
    wam.send_pose('tool', target)
    wam.wait_goal('tool')
    # the robot itself there and at rest (the arm may come from far: the test before
    # leaves it stretched)
    assert wam.ctx.spin_until(lambda: _pose_errors(wam.model, wam.q(), [target])[0][0] < 1e-3
                              and np.max(np.abs(wam.states.last.velocity)) < 1e-3, 15.0)
    speed = 0.05
    msg = TwistStamped()
    msg.header.frame_id = 'wam_base'
    msg.twist.linear.y = speed
    wam.states.clear()
    start = wam.ctx.node.get_clock().now().nanoseconds * 1e-9
    while wam.ctx.node.get_clock().now().nanoseconds * 1e-9 - start < 1.5:
        wam.twist_pub['tool'].publish(msg)
        wam.ctx.spin_for(0.02)
    # fit the tool path against the simulator's own stamps, 0.6-1.4 s after the start
    stamps, points = [], []
    for m in wam.states.messages:
        t = m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec - start
        if 0.6 <= t <= 1.4:
            q = np.array([m.position[m.name.index(n)] for n in wam.model.joint_names])
            stamps.append(t)
            points.append(wam.model.frame_placements(q)[0, :3, 3])
    # a straight-line fit over 0.8 s: some tens of samples are plenty (the test process
    # may miss states while busy; the robot's own stamps time the ones it has)
    assert len(stamps) > 20
    velocity = np.polyfit(stamps, np.array(points), 1)[0]
    assert velocity[1] == pytest.approx(speed, rel=0.15)
    assert abs(velocity[0]) < 0.2 * speed and abs(velocity[2]) < 0.2 * speed
    # the command times out and the arm comes to rest
    wam.ctx.spin_for(1.0)
    wam.states.clear()
    wam.ctx.spin_for(0.5)
    q_a, q_b = wam.states.messages[0], wam.states.messages[-1]
    assert np.max(np.abs(np.array(q_a.position) - np.array(q_b.position))) < 1e-4


def _value(status, key):
    return next((kv.value for kv in status.values if kv.key == key), '')


def _settled_command(bringup, timeout=10.0):
    """Wait until the commanded positions stop changing (converged); return them."""
    previous = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        q = np.array(bringup.commands.wait(timeout=2.0).points[0].positions)
        if previous is not None and np.max(np.abs(q - previous)) < 1e-10:
            return q
        previous = q
        bringup.ctx.spin_for(0.1)
    raise AssertionError('the command did not settle')


def _bad_poses(wam):
    T = wam.model.frame_placements(robots.ready_pose('wam'))[0]
    nan = T.copy()
    nan[0, 3] = np.nan
    inf = T.copy()
    inf[2, 3] = np.inf
    return [('nan position', nan, None), ('inf position', inf, None),
            ('unknown frame', T, 'no_such_frame')]


def test_bad_goals_and_states_are_refused_and_leave_the_command_unchanged(wam):
    wam.send_pose('tool', _reachable_targets(wam.model, robots.ready_pose('wam'), 0.1)[0])
    wam.wait_goal('tool')
    before = _settled_command(wam)
    refused_before = int(_value(wam.diagnostic(lambda s: True), 'refused_messages'))
    # one at a time: of a burst, only the newest goal counts
    for _, T, frame in _bad_poses(wam):
        wam.send_pose('tool', T, frame)
        wam.ctx.spin_for(0.05)
    for w in (0.3, 0.0):  # norm 0.3 (not normalised), norm 0
        bad_quat = PoseStamped()
        bad_quat.header.frame_id = 'wam_base'
        bad_quat.pose.orientation.w = w
        wam.pose_pub['tool'].publish(bad_quat)
        wam.ctx.spin_for(0.05)
    bad_twist = TwistStamped()
    bad_twist.header.frame_id = 'wam_base'
    bad_twist.twist.linear.x = float('nan')
    wam.twist_pub['tool'].publish(bad_twist)
    status = wam.diagnostic(lambda s: int(_value(s, 'refused_messages'))
                            >= refused_before + 6, timeout=5.0)
    assert 'BAD_INPUT' in _value(status, 'status_codes')
    # malformed joint_states, interleaved with the simulator's at 500 Hz: the controller
    # keeps only the newest state, so each is sent until some are refused
    bad_states = ((list(wam.model.joint_names), [0.0] * 6),  # length mismatch
                  (list(wam.model.joint_names), [float('nan')] * 7),
                  (list(wam.model.joint_names[:6]), [0.0] * 6),  # missing joint
                  (['wam_j1'] * 7, [0.0] * 7))  # duplicates
    for _ in range(20):
        for names, positions in bad_states:
            wam.state_pub.publish(JointState(name=names, position=positions))
        wam.ctx.spin_for(0.005)
    status = wam.diagnostic(lambda s: 'joint_states' in _value(s, 'last_refusal'), timeout=5.0)
    assert int(_value(status, 'refused_messages')) > refused_before + 6
    wam.ctx.spin_for(0.3)
    after = np.array(wam.commands.wait(timeout=2.0).points[0].positions)
    np.testing.assert_allclose(after, before, atol=1e-9)


def _sphere(ns, i, center, diameter, frame='wam_base', action=Marker.ADD, kind=Marker.SPHERE,
            orientation=(0.0, 0.0, 0.0, 1.0)):
    m = Marker(ns=ns, id=i, type=kind, action=action)
    m.header.frame_id = frame
    m.pose.position.x, m.pose.position.y, m.pose.position.z = map(float, center)
    o = m.pose.orientation
    o.x, o.y, o.z, o.w = orientation
    m.scale.x = m.scale.y = m.scale.z = float(diameter)
    return m


def test_wam_moves_its_arm_off_an_obstacle_and_refuses_degenerate_ones(wam):
    from ik_control.ik.obstacles import ObstacleAvoidance
    pub = wam.ctx.node.create_publisher(MarkerArray, f'{wam.ns}/ik_controller/obstacles', 10)
    assert wam.ctx.wait_for_subscribers(pub, 1, timeout=STARTUP)
    q = wam.q()
    tool = wam.model.frame_placements(q)[0]
    wam.send_pose('tool', tool)  # hold the tool where it is
    wam.wait_goal('tool')
    avoid = ObstacleAvoidance(wam.model)
    ws = wam.model.workspace()
    ws.update(q)
    a, b = avoid.endpoints(ws.joint_T, ws.frame_T)
    s = len(a) // 2  # a segment mid-arm
    side = np.cross(b[s] - a[s], [0.0, 0.0, 1.0])
    center = 0.5 * (a[s] + b[s]) + side / np.linalg.norm(side) * (0.05 + 0.05 + 0.03)
    refused_before = int(_value(wam.diagnostic(lambda s: True), 'refused_messages'))
    bad = [_sphere('bad', 0, [np.nan, 0.0, 0.0], 0.1),
           _sphere('bad', 1, center, 0.0),                          # zero size
           _sphere('bad', 2, center, -0.1),                         # negative size
           _sphere('bad', 3, center, 0.1, orientation=(0.0, 0.0, 0.0, 2.0)),
           _sphere('bad', 4, center, 0.1, frame='no_such_frame'),
           _sphere('bad', 5, center, 0.1, kind=Marker.ARROW),
           _sphere('bad', 6, center, float('inf'))]
    pub.publish(MarkerArray(markers=bad + [_sphere('table', 0, center, 0.1)]))
    status = wam.diagnostic(lambda s: _value(s, 'obstacles') == '1', timeout=5.0)
    assert int(_value(status, 'refused_messages')) >= refused_before + len(bad)
    status = wam.diagnostic(lambda s: float(_value(s, 'obstacle_clearance_m')) > 0.06,
                            timeout=10.0)
    q = wam.q()
    _assert_in_limits(wam.model, q)
    pos, rot = _pose_errors(wam.model, q, [tool])
    assert pos[0] < 2e-3 and rot[0] < 1e-2  # the task first: the tool stays
    pub.publish(MarkerArray(markers=[_sphere('', 0, center, 0.1, action=Marker.DELETEALL)]))
    wam.diagnostic(lambda s: _value(s, 'obstacles') == '0', timeout=5.0)


def test_wam_avoids_a_box_as_a_box_not_its_bounding_sphere(wam):
    """
    A 0.4 m x 0.4 m x 0.02 m plate whose face is 0.25 m from a mid-arm segment.

    As the exact box it is beyond the influence distance (0.1 m clearance): the arm does
    not move, and the node reports the clearance ObstacleAvoidance computes for the box at
    that state. Its bounding sphere (radius 0.28 m, centre 0.26 m from the segment) would
    come within the link radius: a node that avoided bounding spheres would report a
    clearance below zero and move the arm.
    """
    import pinocchio as pin
    from ik_control.ik.obstacles import bounding_radius, ObstacleAvoidance
    pub = wam.ctx.node.create_publisher(MarkerArray, f'{wam.ns}/ik_controller/obstacles', 10)
    assert wam.ctx.wait_for_subscribers(pub, 1, timeout=STARTUP)
    q = wam.q()
    tool = wam.model.frame_placements(q)[0]
    wam.send_pose('tool', tool)
    wam.wait_goal('tool')
    q = wam.q()
    avoid = ObstacleAvoidance(wam.model)
    ws = wam.model.workspace()
    ws.update(q)
    a, b = avoid.endpoints(ws.joint_T, ws.frame_T)
    s = len(a) // 2
    side = np.cross(b[s] - a[s], [0.0, 0.0, 1.0])
    side /= np.linalg.norm(side)
    T = np.eye(4)
    T[:3, 3] = 0.5 * (a[s] + b[s]) + side * (0.25 + 0.01)
    axis = np.cross([0.0, 0.0, 1.0], side)  # the plate's thin axis (its z) along ``side``
    T[:3, :3] = pin.exp3(axis / np.linalg.norm(axis) * np.arccos(side[2]))
    x, y, z, w = matrix_to_quaternion(T[:3, :3])
    plate = _sphere('plate', 0, T[:3, 3], 0.4, kind=Marker.CUBE,
                    orientation=(float(x), float(y), float(z), float(w)))
    plate.scale.z = 0.02
    expected = {}
    bounding = 2.0 * bounding_radius('box', [0.4, 0.4, 0.02])
    for kind, scale in (('box', [0.4, 0.4, 0.02]), ('sphere', [bounding] * 3)):
        avoid.set_shapes([(kind, T, scale)])
        expected[kind] = float(avoid.clearances(ws.joint_T, ws.frame_T)[0].min())
    assert expected['box'] > 0.1 > 0.0 > expected['sphere']
    pub.publish(MarkerArray(markers=[plate]))
    status = wam.diagnostic(lambda s: _value(s, 'obstacles') == '1', timeout=5.0)
    assert abs(float(_value(status, 'obstacle_clearance_m')) - expected['box']) < 1e-3
    wam.ctx.spin_for(1.0)
    np.testing.assert_allclose(wam.q(), q, atol=1e-6)  # nothing to avoid: the arm stays
    pub.publish(MarkerArray(markers=[_sphere('', 0, T[:3, 3], 0.1, action=Marker.DELETEALL)]))
    wam.diagnostic(lambda s: _value(s, 'obstacles') == '0', timeout=5.0)


@pytest.fixture
def own_wam():
    """Give a test that stops the robot its own sim + controller pair (no cascade)."""
    bringup = Bringup('wam', 500.0, ns='/wam_own')  # beside the module's pair
    yield bringup
    bringup.close()


# DDS timing on a shared 2-core machine: a test that stops a node is retried from a fresh
# pair of nodes before it counts as failed (a real fault fails every attempt).
@pytest.mark.flaky(reruns=2, reruns_delay=1)
def test_wam_stops_when_the_robot_shuts_down_and_resumes_without_a_jump(own_wam):
    """
    Stop the robot with SIGINT, a clean shutdown (test_reliability kills it with SIGKILL).

    The stop trajectory comes within joint_state_timeout of the last state, brakes within
    the acceleration limit, and is the last command until states return; then commands
    resume from where the robot stopped.
    """
    wam = own_wam
    # when each message was sent (DDS source timestamps, system clock [ns]): the test
    # process may lag behind, its own arrival times would not say when the stop was sent
    arrivals, state_times = [], []
    node = wam.ctx.node
    node.create_subscription(JointTrajectory,
                             f'{wam.ns}/joint_trajectory_controller/joint_trajectory',
                             lambda m, info: arrivals.append((info['source_timestamp'], m)),
                             50)
    node.create_subscription(JointState, f'{wam.ns}/joint_states',
                             lambda m, info: state_times.append(info['source_timestamp']), 50)
    assert wam.ctx.spin_until(lambda: len(arrivals) > 10 and len(state_times) > 10, 10.0)
    T = wam.model.frame_placements(robots.ready_pose('wam'))[0]
    T[:3, 3] += [0.0, -0.3, 0.0]
    wam.send_pose('tool', T)
    wam.commands.wait(lambda m: np.max(np.abs(m.points[0].velocities)) > 0.05, timeout=10.0)
    wam.sim.proc.send_signal(signal.SIGINT)  # the robot shuts down and falls silent
    wam.ctx.spin_for(1.5)
    assert wam.sim.stop() == 0
    t_stop, stop = arrivals[-1]  # the stop: the last command until states return
    last_state = max(state_times)
    # it comes after joint_state_timeout (0.1 s), within a tick plus delivery slack; the
    # commands before it were sent while the states were fresh
    delay = 1e-9 * (t_stop - last_state)
    print(f'stop trajectory {delay * 1e3:.0f} ms after the last joint_states')
    assert 0.1 <= delay < 0.1 + 0.002 + 0.05, wam.ctl.stderr[-3000:]
    assert 1e-9 * (arrivals[-2][0] - last_state) < 0.1 + 0.002
    # it brakes from the path at its stamp to rest, within the limits
    times = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec
                      for p in stop.points])
    q = np.array([p.positions for p in stop.points])
    v = np.array([p.velocities for p in stop.points])
    assert_window_within_limits(wam.model.lower, wam.model.upper, wam.model.velocity_limit,
                                10.0, (times, q, v))  # limits.max_acceleration
    assert np.all(np.diff(np.abs(v), axis=0) <= 1e-12)  # every joint slows down
    assert times[-1] <= np.max(np.abs(v[0])) / 10.0 + 1e-6
    status = wam.diagnostic(lambda s: 'STALE_STATE' in _value(s, 'status_codes'))
    assert status.level == LEVEL_ERROR
    # the robot comes back where it stopped: commands resume from there, at rest
    q_stop = np.array(stop.points[-1].positions)
    wam.sim = NodeProcess('ik_control.ros.sim_robot_node', [
        f'initial_positions:={_array(q_stop)}' if a.startswith('initial_positions') else a
        for a in wam.sim_args])
    msg = wam.commands.wait(timeout=STARTUP)
    assert np.max(np.abs(np.array(msg.points[0].positions) - q_stop)) < 0.01


LEVEL_ERROR = b'\x02'


WAM_ARGS = ['-p', f'urdf_path:={robots.urdf_path("wam")}', '-p', 'base_frame:=wam_base',
            '-p', 'end_effectors:=[tool]']
BAD_STARTUPS = {
    'no_effectors': (['-p', f'urdf_path:={robots.urdf_path("wam")}'],
                     'end_effectors is empty'),
    'unknown_joint': (WAM_ARGS + ['-p', 'joints:=[wam_j1, elbow]'], "'elbow'"),
    'obstacles_not_a_list': (WAM_ARGS + ['-p', "obstacles.fixed:='{a: 1}'"],
                             'obstacles.fixed: must be a YAML list'),
    'obstacle_type': (WAM_ARGS + ['-p', "obstacles.fixed:='[{type: cone, size: [1], "
                                  "position: [0, 0, 0]}]'"], 'type must be one of'),
    'obstacle_size': (WAM_ARGS + ['-p', "obstacles.fixed:='[{type: box, size: [0.1, 0, 0.1], "
                                  "position: [0, 0, 0]}]'"], 'sizes must be > 0 m'),
    # rcl itself cannot parse a mapping as a parameter value (unquoted YAML)
    'unparsable_arguments': (WAM_ARGS + ['-p', 'obstacles.fixed:={a: 1}'],
                             'cannot parse the command line'),
    'dh_file': (['-p', 'urdf_path:=/nonexistent/robot.yaml', '-p', 'end_effectors:=[tool]'],
                '/nonexistent/robot.yaml'),
}


@pytest.fixture(scope='module')
def bad_startups():
    """Start every bad configuration at once (they run in parallel) and collect them."""
    procs = {key: NodeProcess('ik_control.ros.ik_controller_node', args)
             for key, (args, _) in BAD_STARTUPS.items()}
    results = {}
    for key, proc in procs.items():
        try:
            rc = proc.wait(timeout=60.0)
        finally:
            proc.stop()
        results[key] = (rc, proc.stderr)
    return results


@pytest.mark.parametrize('case', sorted(BAD_STARTUPS))
def test_bad_startup_parameters_exit_2_with_one_clear_line(bad_startups, case):
    rc, stderr = bad_startups[case]
    assert rc == 2, stderr
    lines = [line for line in stderr.splitlines() if 'startup failed' in line]
    assert len(lines) == 1 and lines[0].startswith('[ik_controller] startup failed: '), stderr
    assert BAD_STARTUPS[case][1] in lines[0]
    assert 'Traceback' not in stderr


def test_fixed_obstacles_from_the_parameter_are_avoided_with_the_markers():
    args = WAM_ARGS + ['-r', '__ns:=/wam_fixed', '-p', "obstacles.fixed:='[{name: table, "
                       'type: box, size: [1.0, 1.0, 0.05], position: [0.5, 0, -0.1]}, '
                       '{type: cylinder, size: [0.05, 0.5], position: [0.6, 0.4, 0.3], '
                       "rpy: [0, 1.5708, 0]}]'"]
    with RosTestContext('fixed_obstacles') as ctx:
        diagnostics = ctx.collect(DiagnosticArray, '/diagnostics', 10)
        proc = NodeProcess('ik_control.ros.ik_controller_node', args)
        try:
            msg = diagnostics.wait(lambda m: any(
                s.hardware_id == 'wam' and _value(s, 'obstacles') == '2' for s in m.status),
                timeout=STARTUP)
            assert msg is not None
        finally:
            assert proc.stop() == 0, proc.stderr[-2000:]

"""
SAM's moving goals (Maciejewski & Klein sec. VI): key-pose paths and velocity profiles.

On the controller core (``follow_motion``, closed loop with a perfect robot) and through
ik_controller over real DDS (``~/tool/target_path``, ``~/tool/velocity_profile``), where
the pose reached is computed from the robot's own joint_states with pinocchio directly
from the URDF (not the project's RobotModel).
"""

import time

from builtin_interfaces.msg import Time
from geometry_msgs.msg import PoseStamped
from ik_control import robots
from ik_control.control.closed_loop import run_closed_loop
from ik_control.control.config import ControllerConfig
from ik_control.control.controller import ResolvedRateController
from ik_control.control.goal_state import GoalState
from ik_control.control.spline_path import KeyPosePath
from ik_control.control.velocity_profile import load_profile, ProfileMotion
from ik_control.validation import matrix_to_quaternion
from nav_msgs.msg import Path
import numpy as np
import pinocchio as pin
import pytest
from ros_helpers import stamp_seconds
from std_msgs.msg import String
from test_ik_controller_node import Bringup, STARTUP

WAM = robots.robot('wam')
READY = robots.ready_pose('wam')
OFFSETS = ([0.1, 0.0, 0.0], [0.1, 0.15, 0.0], [0.0, 0.1, -0.1])  # key positions [m]
KEY_TIMES = [1.0, 2.0, 3.0]  # [s] after the path is given


def _keys(T0):
    poses = np.tile(T0, (len(OFFSETS), 1, 1))
    poses[:, :3, 3] += OFFSETS
    return poses


def _controller():
    c = ResolvedRateController(WAM, ControllerConfig(rate_hz=500.0))  # the node's defaults
    c.set_joint_state(WAM.joint_names, READY, 0.0)
    c.update(0.0)
    return c


def test_a_key_pose_path_is_tracked_within_a_millimetre_and_its_last_pose_is_reached():
    c = _controller()
    start, twist = c.motion_start('tool', 0.1)
    path = KeyPosePath(0.0, start, KEY_TIMES, _keys(start), twist)
    given = {}

    def before_tick(ctrl, now):
        if not given and now >= 0.1:
            ctrl.follow_motion('tool', path, now, 'a path')
            given['t'] = now
            assert ctrl.goals.state[0] == GoalState.ACCEPTED

    record = run_closed_loop(c, READY, 4.0, before_tick)
    moving = record.times > given['t']
    wanted = np.array([path.sample(t - given['t'])[:3, 3] for t in record.times[moving]])
    error = np.linalg.norm(record.poses[moving, 0, :3, 3] - wanted, axis=1)
    # without the feed-forward twist the hand lags the path by speed / gain (gain 10 1/s):
    # 19 mm at the fastest
    assert np.max(error) < 1e-3, np.max(error)
    assert c.goals.state[0] == GoalState.REACHED and c.goals.reached[0]
    assert np.linalg.norm(record.poses[-1, 0, :3, 3] - path.sample(KEY_TIMES[-1])[:3, 3]) < 1e-4


def test_a_new_path_starts_from_the_old_ones_pose_and_velocity():
    c = _controller()
    start, twist = c.motion_start('tool', 0.0)
    old = KeyPosePath(0.0, start, KEY_TIMES, _keys(start), twist)
    c.follow_motion('tool', old, 0.0, 'the first path')
    for k in range(1, 600):  # 1.2 s: mid-way, moving
        c.set_joint_state(WAM.joint_names, c.q_cmd, k * 0.002)
        c.update(k * 0.002)
    now = 1.2
    pose, velocity = c.motion_start('tool', now)
    np.testing.assert_allclose(pose, old.sample(now), atol=1e-12)
    np.testing.assert_allclose(velocity, old.twist(now), atol=1e-12)
    assert np.linalg.norm(velocity[:3]) > 0.05  # it was moving: a jump would show
    new = KeyPosePath(0.0, pose, [1.0], _keys(pose)[2:], velocity)
    np.testing.assert_allclose(new.sample(0.0), pose, atol=1e-12)
    np.testing.assert_allclose(new.twist(0.0), velocity, atol=1e-9)
    c.follow_motion('tool', new, now, 'the second path')
    assert c.goals.state[0] == GoalState.ACCEPTED and c.goals.ids[0] == 2


def test_a_velocity_profile_plays_from_the_current_pose_and_the_wave_returns():
    c = _controller()
    profile = load_profile(robots.motion_path('wave'))
    start, _ = c.motion_start('tool', 0.0)
    motion = ProfileMotion(profile, start)

    def before_tick(ctrl, now):
        if now == 0.0:
            ctrl.follow_motion('tool', motion, now, 'the wave')

    record = run_closed_loop(c, READY, profile.duration + 1.0, before_tick)
    y = record.poses[:, 0, 1, 3] - start[1, 3]
    assert np.ptp(y) > 0.1  # about 13 cm side to side
    np.testing.assert_allclose(record.poses[-1, 0], start, atol=1e-3)  # back where it began
    assert c.goals.state[0] == GoalState.REACHED


def test_a_profiles_priorities_weight_the_obstacle_avoidance_while_it_plays():
    """step.yaml's ``secondary`` weight scales the obstacle gain (SAM sec. V), then not."""
    c = _controller()
    profile = load_profile(robots.motion_path('step'))
    start, _ = c.motion_start('tool', 0.0)
    motion = ProfileMotion(profile, start)
    c.follow_motion('tool', motion, 0.0, 'the step')
    gains, expected = [], []
    for k in range(1, int((profile.duration + 0.5) / 0.002)):
        now = k * 0.002
        c.set_joint_state(WAM.joint_names, c.q_cmd, now)
        c.update(now)
        gains.append(c.obstacles.gain)
        t = now + c.lead
        expected.append(c.config.obstacles.gain * (
            motion.weights(t).get('secondary', 1.0) if t < profile.duration else 1.0))
    np.testing.assert_allclose(gains, expected, rtol=0, atol=1e-12)
    assert np.ptp(gains) > 0.5 * c.config.obstacles.gain  # the weights do vary
    assert gains[-1] == c.config.obstacles.gain


class _WeightedLine:
    """A motion 10 cm along y in 1 s, its ``primary`` weight constant (SAM sec. V)."""

    end_time = 1.0

    def __init__(self, start, primary):
        self.start, self.primary = start, primary

    def sample(self, t):
        T = self.start.copy()
        T[1, 3] += 0.1 * min(max(t, 0.0), 1.0)
        return T

    def twist(self, t):
        return np.array([0.0, 0.1 if 0.0 <= t < 1.0 else 0.0, 0.0, 0.0, 0.0, 0.0])

    def weights(self, t):
        return {'primary': self.primary, 'secondary': 1.0}


@pytest.mark.parametrize('primary', [0.0, 0.5, 1.0])
def test_a_motions_primary_weight_scales_how_closely_the_hand_follows(primary):
    # the task's correction J^# K e times the weight: 0 holds the hand, 1 tracks the line
    c = _controller()
    start, _ = c.motion_start('tool', 0.0)
    motion = _WeightedLine(start, primary)
    c.follow_motion('tool', motion, 0.0, 'a weighted line')
    for k in range(1, int(0.5 / 0.002)):
        now = k * 0.002
        c.set_joint_state(WAM.joint_names, c.q_cmd, now)
        c.update(now)
    moved = WAM.frame_placements(c.q_cmd)[0, 1, 3] - start[1, 3]
    due = motion.sample(0.5 + c.lead)[1, 3] - start[1, 3]  # where the line is by then
    if primary == 0.0:
        assert abs(moved) < 1e-6
    elif primary == 1.0:
        assert abs(moved - due) < 1e-3
    else:  # a first-order lag behind the line at rate 0.5 K: well behind, still moving
        assert 0.2 * due < moved < due - 5e-3


def test_velocity_profile_requests_parse_or_are_refused():
    from ik_control.ros.ik_controller_parameters import profile_request as _profile_request
    from ik_control.validation import InputError

    assert _profile_request(' wave ') == ('wave', 0.0, None)
    name, amplitude, seed = _profile_request('{profile: step, perturbation: [0.02, 0.1], '
                                             'seed: 3}')
    assert (name, list(amplitude), seed) == ('step', [0.02, 0.1], 3)
    for bad in ('{profile: wave, perturbation: [1, 2, 3]}', '{profile: wave, seed: -1}',
                '{perturbation: 0.1}', '{profile: wave, speed: 2}', '{profile: [}'):
        with pytest.raises(InputError, match='velocity_profile'):
            _profile_request(bad)


# ---------------------------------------------------------------- over real DDS
class UrdfFk:
    """The tool's placement from joint_states by name, with pinocchio on the URDF itself."""

    def __init__(self):
        self.model = pin.buildModelFromUrdf(robots.urdf_path('wam'))
        self.data = self.model.createData()
        self.frame = self.model.getFrameId('tool')

    def __call__(self, msg):
        q = pin.neutral(self.model)
        for name, value in zip(msg.name, msg.position):
            if self.model.existJointName(name):
                q[self.model.joints[self.model.getJointId(name)].idx_q] = value
        pin.framesForwardKinematics(self.model, self.data, q)
        return self.data.oMf[self.frame].homogeneous.copy()


@pytest.fixture(scope='module')
def wam():
    bringup = Bringup('wam', 500.0, ns='/wam_motion', extra=['-p', 'joint_state_timeout:=0.5'])
    node = bringup.ctx.node
    bringup.path_pub = node.create_publisher(Path, f'{bringup.ns}/ik_controller/tool/target_path',
                                             10)
    bringup.profile_pub = node.create_publisher(
        String, f'{bringup.ns}/ik_controller/tool/velocity_profile', 10)
    for pub in (bringup.path_pub, bringup.profile_pub):
        assert bringup.ctx.wait_for_subscribers(pub, 1, timeout=STARTUP)
    yield bringup
    bringup.close()


def _path_message(frame, poses, times):
    msg = Path()
    msg.header.frame_id = frame  # stamp zero: the pose stamps are seconds from now
    for T, t in zip(poses, times):
        p = PoseStamped()
        p.header.stamp = Time(sec=int(t), nanosec=int(round((t % 1.0) * 1e9)))
        p.pose.position.x, p.pose.position.y, p.pose.position.z = map(float, T[:3, 3])
        o = p.pose.orientation
        o.x, o.y, o.z, o.w = map(float, matrix_to_quaternion(T[:3, :3]))
        msg.poses.append(p)
    return msg


def _measured_poses(wam, fk, seconds):
    """Tool placements from the joint_states of the next ``seconds``, with their stamps."""
    n = len(wam.states.messages)
    wam.ctx.spin_for(seconds)
    msgs = wam.states.messages[n:]
    stamps = np.array([stamp_seconds(m) for m in msgs])
    return stamps, np.array([fk(m) for m in msgs])


def test_a_path_and_a_profile_sent_to_the_node_move_the_robot_as_specified(wam):
    fk = UrdfFk()
    wam.ctx.spin_for(0.5)
    T0 = fk(wam.states.current())
    keys = _keys(T0)
    wam.goal['tool'].clear()
    sent = time.time()
    wam.path_pub.publish(_path_message(wam.model.base_frame, keys, KEY_TIMES))
    stamps, poses = _measured_poses(wam, fk, KEY_TIMES[-1] + 1.5)
    # the hand passes every key position, about when it should (the path starts when the
    # node takes it, a few milliseconds after it was sent)
    for T, t in zip(keys, KEY_TIMES):
        near = np.abs(stamps - (sent + t)) < 0.1
        # (a hole in what this process received, or in what the robot published; seen once
        # in a fresh-clone run, 2026-11-24: the gap says which samples are missing)
        assert near.any(), (f'no joint_states within 0.1 s of {t} s after the path was '
                            f'sent; largest gap {np.max(np.diff(stamps)):.3f} s, at '
                            f'{stamps[np.argmax(np.diff(stamps))] - sent:.3f} s')
        assert np.min(np.linalg.norm(poses[near, :3, 3] - T[:3, 3], axis=1)) < 0.005, t
    np.testing.assert_allclose(poses[-1, :3, 3], keys[-1, :3, 3], atol=1e-3)
    wam.wait_goal('tool', timeout=5.0)

    # the wave, from wherever the hand is now: side to side, and back where it began
    start = poses[-1]
    wam.profile_pub.publish(String(data='wave'))
    profile = load_profile(robots.motion_path('wave'))
    stamps, poses = _measured_poses(wam, fk, profile.duration + 1.5)
    assert np.ptp(poses[:, 1, 3]) > 0.1
    np.testing.assert_allclose(poses[-1, :3, 3], start[:3, 3], atol=2e-3)

    # an unknown profile, a path whose times go back and a malformed perturbation are
    # refused, each counted, and change nothing
    refused = int(_value(wam.diagnostic(lambda s: True), 'refused_messages'))
    wam.profile_pub.publish(String(data='no_such_motion'))
    wam.diagnostic(lambda s: "'no_such_motion'" in _value(s, 'last_refusal'))
    wam.path_pub.publish(_path_message(wam.model.base_frame, keys[:2], [2.0, 1.0]))
    wam.diagnostic(lambda s: 'must increase' in _value(s, 'last_refusal'))
    wam.profile_pub.publish(String(data='{profile: wave, perturbation: [1, 2, 3]}'))
    status = wam.diagnostic(lambda s: 'perturbation must be' in _value(s, 'last_refusal'))
    assert int(_value(status, 'refused_messages')) == refused + 3
    _, poses = _measured_poses(wam, fk, 0.5)
    assert np.max(np.linalg.norm(poses[:, :3, 3] - start[:3, 3], axis=1)) < 2e-3


def _value(status, key):
    return next((v.value for v in status.values if v.key == key), '')

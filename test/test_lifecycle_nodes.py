"""
ik_controller as a managed node, over real DDS: sim_robot + ik_controller (WAM).

Judged from the robot's own joint_states (speeds and accelerations by
:class:`~ik_control.control.motion_meter.MotionMeter`, poses by pinocchio) and from
what is published on the joint_trajectory_controller's topic: deactivate in mid-motion
brakes the robot within its limits and then publishes nothing; another controller (a
second ``ik_controller`` started with ``autostart: false``) then configures, activates
and is the only one the robot follows; activating the first again starts from the
measured state without a jump; cleanup and configure make it ready again.
"""

from geometry_msgs.msg import PoseStamped
from ik_control import robots
from ik_control.control.motion_meter import MotionMeter
from ik_control.control.status import Status
from ik_control.ros.conversions import pose_stamped
from lifecycle_msgs.msg import State, Transition
from lifecycle_msgs.srv import ChangeState, GetState
import numpy as np
import pytest
from ros_helpers import NodeProcess
from std_msgs.msg import UInt32
from test_glitches_nodes import _robot_states
from test_ik_controller_node import _reachable_targets, _strings, Bringup, LATCHED, STARTUP
from trajectory_msgs.msg import JointTrajectory

A_MAX = 10.0  # limits.max_acceleration default [rad/s^2]
REST_SPEED = 1e-3  # a joint slower than this is at rest [rad/s]


@pytest.fixture(scope='module')
def wam():
    bringup = Bringup('wam', 500.0, ns='/wam_lifecycle')
    yield bringup
    print('controller log:\n' + bringup.ctl.stderr[-4000:], bringup.ctl.returncode)
    bringup.close()


def _transition(bringup, node, transition):
    """Ask ``node`` for a lifecycle ``transition`` (Transition id); return its success."""
    client = bringup.ctx.node.create_client(ChangeState, f'{bringup.ns}/{node}/change_state')
    assert client.wait_for_service(timeout_sec=STARTUP)
    future = client.call_async(ChangeState.Request(transition=Transition(id=transition)))
    assert bringup.ctx.spin_until(future.done, 15.0)
    return future.result().success


def _state(bringup, node):
    """Return the lifecycle state id of ``node`` (lifecycle_msgs/State)."""
    client = bringup.ctx.node.create_client(GetState, f'{bringup.ns}/{node}/get_state')
    assert client.wait_for_service(timeout_sec=STARTUP)
    future = client.call_async(GetState.Request())
    assert bringup.ctx.spin_until(future.done, 10.0)
    return future.result().current_state.id


def _motion(bringup, since):
    """Return the robot's measured speed and acceleration ratios to its limits from ``since``."""
    meter = MotionMeter(bringup.model.velocity_limit, np.full(bringup.model.nq, A_MAX))
    for t, q in zip(*_robot_states(bringup, since)):
        meter.add(t, q)
    return meter


def _speed(bringup, since, window=0.05):
    """Return the fastest joint speed of the robot over the last ``window`` [s] [rad/s]."""
    t, q = _robot_states(bringup, since)
    k = np.searchsorted(t, t[-1] - window)
    return float(np.max(np.abs(q[-1] - q[k])) / max(t[-1] - t[k], 1e-9))


def _goal(bringup, offset):
    """Return the tool's pose at the robot's measured state plus joint ``offset`` [rad]."""
    return _reachable_targets(bringup.model, bringup.q(), np.array(offset))[0]


def test_deactivate_brakes_within_limits_then_another_controller_takes_the_robot(wam):
    """The lifecycle as a user hands the robot to another controller and takes it back."""
    status = wam.ctx.collect(UInt32, f'{wam.ns}/ik_controller/status', LATCHED)
    sources = []  # the publisher of each command the robot was sent (its DDS gid)
    wam.ctx.node.create_subscription(
        JointTrajectory, f'{wam.ns}/joint_trajectory_controller/joint_trajectory',
        lambda _, info: sources.append(repr(info['publisher_gid'])), 1000, raw=True)
    wam.ctx.spin_until(lambda: sources, 5.0)
    assert _state(wam, 'ik_controller') == State.PRIMARY_STATE_ACTIVE  # autostart
    # in mid-motion: a goal far enough that the arm is still moving fast when deactivated
    since = len(wam.states.messages)
    wam.send_pose('tool', _goal(wam, [0.8, -0.5, 0.6, 0.5, 0.0, 0.0, 0.0]))
    assert wam.ctx.spin_until(lambda: _speed(wam, since) > 0.2, 10.0), 'the arm never moved'
    assert _transition(wam, 'ik_controller', Transition.TRANSITION_DEACTIVATE)
    commands_at_return = len(wam.commands.messages)
    first_controller = set(sources)
    assert len(first_controller) == 1
    sources.clear()
    assert _state(wam, 'ik_controller') == State.PRIMARY_STATE_INACTIVE
    wam.ctx.spin_for(2.0)
    assert len(wam.commands.messages) == commands_at_return, 'commands after deactivate'
    assert _speed(wam, since) < REST_SPEED, 'the robot did not come to rest'
    motion = _motion(wam, since)
    assert motion.span_speed_ratio <= 1.0 + 1e-6 and motion.span_acceleration_ratio <= 1.05, \
        motion.summary()
    assert wam.ctx.spin_until(lambda: status.last is not None
                              and status.last.data & Status.INACTIVE, 5.0)
    # goals are refused while inactive: the robot stays where it is
    q_rest = wam.q()
    wam.send_pose('tool', _goal(wam, [0.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]))
    wam.ctx.spin_for(1.0)
    assert len(wam.commands.messages) == commands_at_return
    assert np.max(np.abs(wam.q() - q_rest)) < 1e-9

    # a second controller, started unconfigured, is the only one the robot follows
    other = NodeProcess('ik_control.ros.ik_controller_node', [
        '-r', f'__ns:={wam.ns}', '-r', '__node:=other_controller',
        '-p', f'urdf_path:={robots.urdf_path("wam")}',
        '-p', 'base_frame:=wam_base', '-p', f'end_effectors:={_strings(["tool"])}',
        '-p', f'joints:={_strings(wam.model.joint_names)}', '-p', 'rate_hz:=500.0',
        '-p', 'autostart:=false'])
    try:
        assert _state(wam, 'other_controller') == State.PRIMARY_STATE_UNCONFIGURED
        assert _transition(wam, 'other_controller', Transition.TRANSITION_CONFIGURE)
        wam.ctx.spin_for(0.5)
        assert len(wam.commands.messages) == commands_at_return, 'an inactive node commanded'
        assert _transition(wam, 'other_controller', Transition.TRANSITION_ACTIVATE)
        pub = wam.ctx.node.create_publisher(
            PoseStamped, f'{wam.ns}/other_controller/tool/target_pose', 10)
        assert wam.ctx.wait_for_subscribers(pub, 1, timeout=STARTUP)
        target = _goal(wam, [0.0, 0.3, 0.0, -0.3, 0.0, 0.0, 0.0])
        pub.publish(pose_stamped(target, 'wam_base'))
        assert wam.ctx.spin_until(lambda: np.linalg.norm(
            wam.model.frame_placements(wam.q())[0][:3, 3] - target[:3, 3]) < 1e-3, 15.0), \
            other.stderr[-3000:]
        assert _transition(wam, 'other_controller', Transition.TRANSITION_DEACTIVATE)
    finally:
        other.stop()
    # every command meanwhile came from the other controller
    assert sources and not set(sources) & first_controller
    commands_other = len(wam.commands.messages)

    # the first controller again: it starts from the measured state, without a jump
    q_meas = wam.q()
    assert _transition(wam, 'ik_controller', Transition.TRANSITION_ACTIVATE)
    first = wam.commands.wait(timeout=5.0)
    assert np.max(np.abs(np.array(first.points[0].positions) - q_meas)) < 1e-3
    assert len(wam.commands.messages) > commands_other
    target = _goal(wam, [-0.3, 0.0, 0.0, 0.3, 0.0, 0.0, 0.0])
    since = len(wam.states.messages)
    wam.send_pose('tool', target)
    wam.wait_goal('tool')
    motion = _motion(wam, since)
    assert motion.span_speed_ratio <= 1.0 + 1e-6, motion.summary()

    # cleanup forgets the goal; configure and activate make it ready again
    assert _transition(wam, 'ik_controller', Transition.TRANSITION_DEACTIVATE)
    assert _transition(wam, 'ik_controller', Transition.TRANSITION_CLEANUP)
    assert _state(wam, 'ik_controller') == State.PRIMARY_STATE_UNCONFIGURED
    assert _transition(wam, 'ik_controller', Transition.TRANSITION_CONFIGURE)
    assert _transition(wam, 'ik_controller', Transition.TRANSITION_ACTIVATE)
    wam.send_pose('tool', _goal(wam, [0.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]))
    wam.wait_goal('tool')
    log = wam.ctl.stderr
    for line in ('deactivated: the arm braked to rest', 'activated: commanding from the '
                 'measured state', 'cleaned up', 'refused: the controller is inactive'):
        assert line in log, log[-3000:]

"""
``style_adapter`` over real DDS on the simulated SIMON (Gielniak et al., the ROS part).

sim_robot + ik_controller (SIMON at 1 kHz) + style_adapter in one namespace; a point goal
on ``~/goal`` is adapted from the pick-and-place exemplar and run through the
controller's joint-trajectory input. The right hand is computed from the robot's own
joint_states by pinocchio on the URDF (not the project's RobotModel): it meets the goal
at the exemplar's constraint instant.
"""

from xml.etree import ElementTree

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PointStamped
from ik_control import robots
from ik_control.style.adapter import StyleAdapter
import numpy as np
import pinocchio as pin
import pytest
from ros_helpers import NodeProcess
from test_ik_controller_node import Bringup, STARTUP
from trajectory_msgs.msg import JointTrajectory

NS = '/simon_style'


@pytest.fixture(scope='module')
def simon():
    bringup = Bringup('simon', 1000.0, ns=NS, extra=['-p', 'joint_state_timeout:=0.5'])
    adapter = NodeProcess('ik_control.ros.style_adapter_node', ['-r', f'__ns:={NS}'])
    bringup.adapter = adapter
    bringup.goal_pub = bringup.ctx.node.create_publisher(
        PointStamped, f'{NS}/style_adapter/goal', 10)
    bringup.style_diag = bringup.ctx.collect(DiagnosticArray, '/diagnostics', 50)
    # when each adapted trajectory was published (DDS source timestamp, system clock [s]):
    # the motion starts when the controller takes it, within milliseconds of that
    bringup.plans = []
    bringup.ctx.node.create_subscription(
        JointTrajectory, f'{NS}/ik_controller/joint_trajectory',
        lambda msg, info: bringup.plans.append(1e-9 * info['source_timestamp']), 10)
    try:
        assert bringup.ctx.wait_for_subscribers(bringup.goal_pub, 1, timeout=STARTUP), \
            adapter.stderr[-2000:]
        yield bringup
    finally:
        adapter.stop()
        bringup.close()


def _style_status(simon, predicate):
    """Return the adapter's next status that satisfies ``predicate``, and its stamp [s]."""
    msg = simon.style_diag.wait(lambda m: any(
        s.name.startswith('style_adapter') and predicate(s) for s in m.status), timeout=20.0)
    stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
    return next(s for s in msg.status if s.name.startswith('style_adapter')), stamp


def _value(status, key):
    return next((v.value for v in status.values if v.key == key), '')


def _mimics(urdf):
    """``{joint: (master, multiplier, offset)}`` from the URDF's <mimic> tags."""
    root = ElementTree.parse(urdf).getroot()
    return {j.get('name'): (m.get('joint'), float(m.get('multiplier', 1.0)),
                            float(m.get('offset', 0.0)))
            for j in root.iter('joint') for m in j.iter('mimic')}


def test_the_hand_meets_a_point_goal_at_the_constraint_instant(simon):
    model = pin.buildModelFromUrdf(robots.urdf_path('simon'))
    data = model.createData()
    hand, base = model.getFrameId('right_hand'), model.getFrameId(simon.model.base_frame)
    mimics = _mimics(robots.urdf_path('simon'))  # torso_y_slave follows torso_y

    def hand_at(msg):
        """Return the right hand's position in the base frame (goals are given in it)."""
        q = pin.neutral(model)
        values = dict(zip(msg.name, msg.position))
        for name, (master, multiplier, offset) in mimics.items():
            values.setdefault(name, multiplier * values[master] + offset)
        for name, value in values.items():
            if model.existJointName(name):
                q[model.joints[model.getJointId(name)].idx_q] = value
        pin.framesForwardKinematics(model, data, q)
        return data.oMf[base].actInv(data.oMf[hand]).translation.copy()

    # a goal 5 cm beside where the exemplar itself picks
    exemplar = StyleAdapter('pick_and_place')
    q = exemplar.model.center.copy()
    cols = [exemplar.model.joint_names.index(j) for j in exemplar.exemplar.joint_names]
    q[cols] = exemplar.pose_at('pick')
    goal = exemplar.model.pin_frame_placement(q, 'right_hand')[:3, 3] + [0.0, -0.05, 0.05]
    simon.ctx.spin_for(1.0)  # joint_states reach the adapter
    msg = PointStamped()
    msg.header.frame_id = simon.model.base_frame
    msg.point.x, msg.point.y, msg.point.z = map(float, goal)
    n = len(simon.states.messages)
    simon.goal_pub.publish(msg)
    status, _ = _style_status(simon, lambda s: _value(s, 'adaptations') == '1')
    assert simon.ctx.spin_until(lambda: simon.plans, 5.0)
    sent = simon.plans[0]
    t_pc = float(_value(status, 'constraint_time_s'))
    search_error = float(_value(status, 'search_error_m'))
    print(f"adapted in {_value(status, 'adaptation_ms')} ms")
    # the pick-and-place asks up to 15 rad/s^2: slowed down to max_acceleration (5 rad/s^2)
    scale = float(_value(status, 'time_scale'))
    assert 1.5 < scale < 2.0 and t_pc == pytest.approx(1.5 * scale, abs=1e-3)
    simon.ctx.spin_for(t_pc + 1.0)
    states = simon.states.messages[n:]
    stamps = np.array([m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in states])
    hands = np.array([hand_at(m) for m in states])
    distance = np.linalg.norm(hands - goal, axis=1)
    closest = int(np.argmin(distance))
    print(f'closest {distance[closest] * 1e3:.1f} mm at {stamps[closest] - sent:.3f} s '
          f'(constraint instant {t_pc} s, search error {search_error * 1e3:.1f} mm)')
    # met where the search put it, when the exemplar says. The bound adds the controller's
    # tracking of the plan to the search's error: 3.1 mm in all on an otherwise idle
    # machine, 15.3 mm in one full-suite run on this 2-core machine (late ticks)
    assert distance[closest] < search_error + 0.02, simon.ctl.stderr[-3000:]
    # when: 3 ms after the constraint instant on an otherwise idle machine; in full-suite
    # runs on this 2-core machine the loaded 1 kHz pair ran the plan up to 0.38 s late
    assert t_pc - 0.15 < stamps[closest] - sent < t_pc + 0.5
    assert distance[0] > 0.1  # it did move to get there


def test_a_goal_in_an_unknown_frame_is_refused_with_a_reason(simon):
    msg = PointStamped()
    msg.header.frame_id = 'no_such_frame'
    simon.goal_pub.publish(msg)
    status, _ = _style_status(simon, lambda s: "unknown frame 'no_such_frame'" in s.message)
    assert status.level == DiagnosticStatus.ERROR
    assert simon.adapter.returncode is None  # still running

"""
``style_adapter`` over real DDS on the simulated SIMON (Gielniak et al., the ROS part).

sim_robot + ik_controller (SIMON at 250 Hz: the 1 kHz loop is measured by ``bench loop``;
here, with this process taking in every sample, it ran late for a quarter to a third of
the plan on a 2-core machine) + style_adapter in one namespace; a point goal
on ``~/goal`` is adapted from the pick-and-place exemplar and run through the
controller's joint-trajectory input. The right hand is computed from the robot's own
joint_states by pinocchio on the URDF (not the project's RobotModel): it meets the goal
at the exemplar's constraint instant (later, never early, when a starved control loop
made the plan wait).
"""

from xml.etree import ElementTree

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PointStamped
from ik_control import robots
from ik_control.style.adapter import StyleAdapter
import numpy as np
import pinocchio as pin
import pytest
from ros_helpers import DIAGNOSTICS_AFTER, NodeProcess, stamp_seconds
from test_ik_controller_node import Bringup, STARTUP
from trajectory_msgs.msg import JointTrajectory

NS = '/simon_style'
RATE_HZ = 250.0  # the controller's and the simulated robot's rate [Hz]


@pytest.fixture(scope='module')
def simon():
    bringup = Bringup('simon', RATE_HZ, ns=NS, extra=['-p', 'joint_state_timeout:=0.5'])
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
        # the plan topic: the adapter publishing, the controller and this process taking it
        # (a plan sent before the controller's subscription was discovered is lost)
        topic = f'{NS}/ik_controller/joint_trajectory'
        node = bringup.ctx.node
        assert bringup.ctx.spin_until(lambda: node.count_publishers(topic) >= 1
                                      and node.count_subscribers(topic) >= 2, STARTUP), \
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

    def placer(names):
        """Return ``f(positions)``: a pinocchio configuration for samples with ``names``."""
        names = list(names)
        slots, source = [], []
        for name in list(names) + [m for m in mimics if m not in names]:
            if model.existJointName(name):
                slots.append(model.joints[model.getJointId(name)].idx_q)
                source.append(name)
        q = pin.neutral(model)

        def configuration(positions):
            values = dict(zip(names, positions))
            for name, (master, multiplier, offset) in mimics.items():
                values.setdefault(name, multiplier * values[master] + offset)
            q[slots] = [values[name] for name in source]
            return q
        return configuration

    def hand_at(configuration):
        """Return the right hand's position in the base frame (goals are given in it)."""
        pin.framesForwardKinematics(model, data, configuration)
        return data.oMf[base].actInv(data.oMf[hand]).translation.copy()

    def closest(msgs, stamp, joints):
        """
        Return the distance of the hand to the goal over ``msgs``, and when closest [s].

        Every 10th sample first, then every sample around the closest of those (the hand
        moves less than 1 cm in 10 ms): the closest sample itself.
        """
        stamps = np.array([stamp(m).sec + 1e-9 * stamp(m).nanosec for m in msgs])
        configuration = placer(joints(msgs[0])[0])

        def distance_at(k):
            return np.linalg.norm(hand_at(configuration(joints(msgs[k])[1])) - goal)
        coarse = np.array([distance_at(k) for k in range(0, len(msgs), 10)])
        around = range(max(0, 10 * int(np.argmin(coarse)) - 20),
                       min(len(msgs), 10 * int(np.argmin(coarse)) + 21))
        k = min(around, key=distance_at)
        return coarse, distance_at(k), stamps[k] - sent

    # a goal 5 cm beside where the exemplar itself picks
    exemplar = StyleAdapter('pick_and_place')
    q = exemplar.model.center.copy()
    cols = [exemplar.model.joint_names.index(j) for j in exemplar.exemplar.joint_names]
    q[cols] = exemplar.pose_at('pick')
    goal = exemplar.model.pin_frame_placement(q, 'right_hand')[:3, 3] + [0.0, -0.05, 0.05]
    # the adapter has a joint state (a goal before it is refused: a fixed second's wait
    # was once too short for discovery on a loaded machine), and sees the controller's and
    # this process's plan subscriptions (this process seeing them is not enough: a plan the
    # adapter sent before it matched the controller's was lost, and the test waited 60 s)
    _style_status(simon, lambda s: _value(s, 'joint_state_received') == 'true'
                  and int(_value(s, 'plan_subscribers') or 0) >= 2)
    msg = PointStamped()
    msg.header.frame_id = simon.model.base_frame
    msg.point.x, msg.point.y, msg.point.z = map(float, goal)
    n, c0 = len(simon.states.messages), len(simon.commands.messages)
    late0 = float(simon.latest_diagnostic('late_seconds'))
    simon.goal_pub.publish(msg)
    status, _ = _style_status(simon, lambda s: _value(s, 'adaptations') == '1')
    assert simon.ctx.spin_until(lambda: simon.plans, 5.0)
    sent = simon.plans[0]
    t_pc = float(_value(status, 'constraint_time_s'))
    search_error = float(_value(status, 'search_error_m'))
    print(f"adapted in {_value(status, 'adaptation_ms')} ms")
    # the pick-and-place asks up to 15 rad/s^2: slowed down to max_acceleration (5 rad/s^2)
    scale = float(_value(status, 'time_scale'))
    # (both figures are rounded to 1e-3 in the status: 1.5 x the rounding of scale, plus t_pc's)
    assert 1.5 < scale < 2.0 and t_pc == pytest.approx(1.5 * scale, abs=1.3e-3)
    # the whole plan, and every message of it this process has yet to take in (it runs
    # late on a loaded machine, and so may this process's 2 kHz of subscriptions)
    # (a starved loop makes the plan wait for the command: it may end late)
    assert simon.ctx.spin_until(lambda: 'joint trajectory done' in simon.ctl.stderr, 60.0), (
        f"late ticks {simon.latest_diagnostic('late_ticks')}, "
        f"{float(simon.latest_diagnostic('late_seconds')) - late0:.3f} s lost\n"
        + simon.ctl.stderr[-3000:])
    simon.ctx.spin_for(DIAGNOSTICS_AFTER)  # and the controller's /diagnostics after it
    end = simon.commands.messages[-1].header.stamp
    lost = float(simon.latest_diagnostic('late_seconds')) - late0  # on braking tails [s]
    late = lost / (end.sec + 1e-9 * end.nanosec - sent)
    states = simon.states.messages[n:]
    coarse, nearest, t_robot = closest(states, lambda m: m.header.stamp,
                                       lambda m: (m.name, m.position))
    # the samples this process took in: a gap is a stretch of the motion it cannot judge
    stamps = np.array([stamp_seconds(m) for m in states])
    gap = float(np.max(np.diff(stamps))) if len(stamps) > 1 else np.inf
    print(f'{len(states)} robot samples taken, largest gap {gap * 1e3:.1f} ms')
    _, commanded, t_command = closest(simon.commands.messages[c0:],
                                      lambda m: m.header.stamp,
                                      lambda m: (m.joint_names, m.points[0].positions))
    print(f'closest {nearest * 1e3:.1f} mm at {t_robot:.3f} s, commanded '
          f'{commanded * 1e3:.1f} mm at {t_command:.3f} s (constraint instant {t_pc} s, '
          'search error '
          f'{search_error * 1e3:.1f} mm); late ticks lost {late:.1%} of the time')
    # the robot is where it is commanded, when (0.4 ms on an idle machine)
    assert abs(t_robot - t_command) < 0.05
    # met where the search put it, whatever the load: a tick later than the committed
    # knots makes the command brake on its tail, and the plan then waits for it instead
    # of being caught up joint by joint, which distorted it (docs/command_stream.md, "Late
    # ticks": before, 75 mm and 40 mm misses in CI runs). The bound adds the controller's
    # tracking of the plan to the search's error: 3.1 mm on an otherwise idle machine
    assert nearest < search_error + 0.02, (f'samples: largest gap {gap:.3f} s\n'
                                           + simon.ctl.stderr[-3000:]
                                           + simon.adapter.stderr[-2000:])
    # when the exemplar says, or later by what the plan waited for a starved loop (bounded
    # here by twice the time lost on tails over the whole plan); never early
    assert t_pc - 0.05 < t_command < t_pc + 0.5 + 2.0 * lost
    assert coarse[0] > 0.1  # it did move to get there


def test_a_goal_in_an_unknown_frame_is_refused_with_a_reason(simon):
    msg = PointStamped()
    msg.header.frame_id = 'no_such_frame'
    simon.goal_pub.publish(msg)
    status, _ = _style_status(simon, lambda s: "unknown frame 'no_such_frame'" in s.message)
    assert status.level == DiagnosticStatus.ERROR
    assert simon.adapter.returncode is None  # still running

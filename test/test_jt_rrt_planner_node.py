"""The jt_rrt_planner node over real DDS: plan around a box, and each refusal."""

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PointStamped, PoseStamped
from ik_control import robots
from ik_control.planning.collision import CollisionChecker
from ik_control.planning.jt_rrt import GoalKinematics
from ik_control.planning.obstacles import Obstacle, pose_from
from ik_control.ros.conversions import arrays_to_joint_state, joint_trajectory_to_arrays
from ik_control.ros.jt_rrt_planner_node import JtRrtPlannerNode
import numpy as np
import pinocchio as pin
import pytest
from rclpy.parameter import Parameter
from ros_helpers import RosTestContext
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import Marker, MarkerArray

WAM = robots.robot('wam')
START = robots.ready_pose('wam')
BOX = {'name': 'box', 'type': 'box', 'size': [0.3, 0.3, 0.3], 'position': [0.55, -0.35, 0.25]}


@pytest.fixture(scope='module')
def ros():
    with RosTestContext('jt_rrt_test') as ctx:
        node = JtRrtPlannerNode(context=ctx.context, parameter_overrides=[
            Parameter('obstacles', value=f'[{BOX}]'), Parameter('seed', value=3),
            Parameter('goal.threshold', value=0.02)])
        ctx.executor.add_node(node)
        ctx.planner = node
        ctx.traj = ctx.collect(JointTrajectory, '/jt_rrt_planner/planned_trajectory')
        ctx.diag = ctx.collect(DiagnosticArray, '/diagnostics')
        ctx.states = ctx.node.create_publisher(JointState, 'joint_states', 10)
        ctx.goal = ctx.node.create_publisher(PointStamped, '/jt_rrt_planner/goal_position', 10)
        ctx.point = ctx.node.create_publisher(PointStamped, '/jt_rrt_planner/goal_point', 10)
        ctx.pose = ctx.node.create_publisher(PoseStamped, '/jt_rrt_planner/goal', 10)
        ctx.obstacles = ctx.node.create_publisher(MarkerArray, '/jt_rrt_planner/obstacles', 10)
        for pub in (ctx.states, ctx.goal, ctx.point, ctx.pose, ctx.obstacles):
            assert ctx.wait_for_subscribers(pub)
        yield ctx
        ctx.executor.remove_node(node)
        node.destroy_node()


def _send_state(ros, q):
    ros.states.publish(arrays_to_joint_state(WAM.joint_names, q))
    assert ros.spin_until(lambda: ros.planner.q is not None and np.allclose(ros.planner.q, q))


def _point(xyz, frame='wam_base'):
    msg = PointStamped()
    msg.header.frame_id = frame
    msg.point.x, msg.point.y, msg.point.z = xyz
    return msg


def _diag(ros, level):
    def ok(msg):
        return any(s.name.startswith('jt_rrt_planner') and s.level == level for s in msg.status)
    msg = ros.diag.wait(ok, timeout=20.0)
    return next(s for s in msg.status if s.name.startswith('jt_rrt_planner'))


def test_plans_around_the_box_to_the_goal(ros):
    _send_state(ros, START)
    goal = [0.55, -0.35, 0.55]            # just above the box
    ros.goal.publish(_point(goal))
    msg = ros.traj.wait(timeout=20.0)
    traj = joint_trajectory_to_arrays(msg)
    assert list(traj.joint_names) == list(WAM.joint_names)
    assert np.allclose(traj.positions[0], START, atol=1e-9)
    fine = CollisionChecker(WAM, [Obstacle('box', 'box', (0.3, 0.3, 0.3),
                                           pose_from(BOX['position']))], resolution=0.004)
    assert fine.path_free(traj.positions)
    assert np.all(np.abs(traj.velocities) <= WAM.velocity_limit * (1 + 1e-6))
    tip = GoalKinematics(WAM, 'tool').placement(traj.positions[-1])[:3, 3]
    assert np.linalg.norm(tip - goal) <= 0.02
    assert _diag(ros, DiagnosticStatus.OK).message == 'trajectory published'


def _plan_end(ros):
    """Return the tool placement at the end of the next published trajectory."""
    traj = joint_trajectory_to_arrays(ros.traj.wait(timeout=20.0))
    assert np.allclose(traj.positions[0], START, atol=1e-9)
    return GoalKinematics(WAM, 'tool').placement(traj.positions[-1]).copy()


def test_point_goal_on_goal_point_and_pose_goal_on_goal_in_another_frame(ros):
    _send_state(ros, START)
    link1 = WAM.pin_frame_placement(START, 'wam_link_1')
    goal = np.array([0.55, -0.35, 0.55])
    local = np.linalg.solve(link1, np.append(goal, 1.0))[:3]
    ros.traj.clear()
    ros.point.publish(_point(local, frame='wam_link_1'))
    assert np.linalg.norm(_plan_end(ros)[:3, 3] - goal) <= 0.02
    # a pose that a free configuration reaches, given in wam_link_1
    T = GoalKinematics(WAM, 'tool').placement(np.array([-0.2, 0.9, 0.1, 1.6, 0.2, -0.3, 0.0]))
    T_local = np.linalg.solve(link1, T)
    msg = PoseStamped()
    msg.header.frame_id = 'wam_link_1'
    p, o = msg.pose.position, msg.pose.orientation
    p.x, p.y, p.z = T_local[:3, 3]
    o.x, o.y, o.z, o.w = pin.Quaternion(T_local[:3, :3]).coeffs()
    ros.traj.clear()
    ros.pose.publish(msg)
    end = _plan_end(ros)
    assert np.linalg.norm(end[:3, 3] - T[:3, 3]) <= 0.02
    assert np.linalg.norm(pin.log3(end[:3, :3] @ T[:3, :3].T)) <= 0.1


def test_refusals_carry_their_reason(ros):
    _send_state(ros, START)
    ros.goal.publish(_point([3.0, 0.0, 0.5]))
    assert 'goal out of reach' in _diag(ros, DiagnosticStatus.ERROR).message
    ros.goal.publish(_point([0.5, 0.0, 0.5], frame='nowhere'))
    assert 'unknown frame' in _diag(ros, DiagnosticStatus.ERROR).message
    tool = GoalKinematics(WAM, 'tool').placement(START)[:3, 3]
    ball = Marker(ns='ball', id=1, type=Marker.SPHERE, action=Marker.ADD)
    ball.header.frame_id = 'wam_base'
    ball.pose.position.x, ball.pose.position.y, ball.pose.position.z = tool
    ball.pose.orientation.w = 1.0
    ball.scale.x = ball.scale.y = ball.scale.z = 0.1
    ros.obstacles.publish(MarkerArray(markers=[ball]))
    assert ros.spin_until(lambda: len(ros.planner.checker.obstacles) == 2)
    ros.goal.publish(_point([0.55, -0.35, 0.55]))
    assert 'start in collision' in _diag(ros, DiagnosticStatus.ERROR).message
    ros.obstacles.publish(MarkerArray(markers=[Marker(action=Marker.DELETEALL)]))
    assert ros.spin_until(lambda: len(ros.planner.checker.obstacles) == 1)
    wall = Marker(ns='wall', id=0, type=Marker.CUBE, action=Marker.ADD)
    wall.header.frame_id = 'wam_base'
    wall.pose.position.x, wall.pose.position.z = 0.8, 0.4
    wall.pose.orientation.w = 1.0
    wall.scale.x, wall.scale.y, wall.scale.z = 0.02, 2.0, 2.0
    ros.obstacles.publish(MarkerArray(markers=[wall]))
    assert ros.spin_until(lambda: len(ros.planner.checker.obstacles) == 2)
    ros.planner.settings.time_limit = 0.5
    ros.goal.publish(_point([0.95, 0.0, 0.4]))       # behind the wall: cannot be reached
    assert 'timeout' in _diag(ros, DiagnosticStatus.ERROR).message
    ros.planner.settings.time_limit = 5.0
    ros.obstacles.publish(MarkerArray(markers=[Marker(ns='wall', id=0, action=Marker.DELETE)]))
    assert ros.spin_until(lambda: len(ros.planner.checker.obstacles) == 1)
    bad = Marker(ns='bad', id=0, type=Marker.ARROW, action=Marker.ADD)
    bad.pose.orientation.w = 1.0
    ros.obstacles.publish(MarkerArray(markers=[bad]))
    assert 'not an obstacle shape' in _diag(ros, DiagnosticStatus.WARN).message

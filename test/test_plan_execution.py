"""
A JT-RRT plan run by ik_controller on the simulated WAM, over real DDS.

jt_rrt_planner (``execute: true``) sends its plan to the controller's
``~/joint_trajectory`` input, and the controller -- the one node that commands the robot --
follows it within its limits. The robot's own joint_states must reach the goal, and every
configuration they report on the way must be free of the box.
"""

from geometry_msgs.msg import PointStamped
from ik_control import robots
from ik_control.planning.collision import CollisionChecker
from ik_control.planning.jt_rrt import GoalKinematics
from ik_control.planning.obstacles import Obstacle, pose_from
from ik_control.ros.harness import node_rig
from ik_control.ros.jt_rrt_planner_node import JtRrtPlannerNode
import numpy as np
from rclpy.parameter import Parameter
from ros_helpers import domain_id, RosTestContext
from sensor_msgs.msg import JointState

WAM = robots.robot('wam')
BOX = {'name': 'box', 'type': 'box', 'size': [0.3, 0.3, 0.3], 'position': [0.55, -0.35, 0.25]}
GOAL = [0.55, -0.35, 0.55]  # just above the box


def test_a_plan_around_a_box_is_run_by_the_controller_and_reaches_the_goal():
    domain_id()
    ns = '/plan_run'
    pair = node_rig.Pair('wam', ns).start()
    ctx = None
    try:
        ctx = RosTestContext('plan_run_test')
        planner = JtRrtPlannerNode(context=ctx.context, namespace=ns, parameter_overrides=[
            Parameter('obstacles', value=f'[{BOX}]'), Parameter('seed', value=3),
            Parameter('goal.threshold', value=0.02), Parameter('execute', value=True)])
        ctx.executor.add_node(planner)
        states = []
        ctx.node.create_subscription(JointState, f'{ns}/joint_states', states.append, 1000)
        goal_pub = ctx.node.create_publisher(PointStamped, f'{ns}/jt_rrt_planner/goal_position',
                                             10)
        assert ctx.spin_until(lambda: planner.q is not None and len(states) > 10,
                              node_rig.STARTUP_TIMEOUT)
        assert ctx.wait_for_subscribers(goal_pub, 1, 30.0)
        assert ctx.spin_until(lambda: pair.controller is not None and len(
            ctx.node.get_subscriptions_info_by_topic(
                f'{ns}/ik_controller/joint_trajectory')) > 0, 30.0)
        n = len(states)
        goal = PointStamped()
        goal.header.frame_id = 'wam_base'
        goal.point.x, goal.point.y, goal.point.z = GOAL

        def tool(msg):
            q = np.asarray(msg.position)[[list(msg.name).index(j) for j in WAM.joint_names]]
            return q, GoalKinematics(WAM, 'tool').placement(q)[:3, 3]

        goal_pub.publish(goal)
        assert ctx.spin_until(lambda: np.linalg.norm(tool(states[-1])[1] - GOAL) < 0.025 and
                              np.max(np.abs(np.asarray(states[-1].velocity))) < 1e-3, 30.0)
        fine = CollisionChecker(WAM, [Obstacle('box', 'box', (0.3, 0.3, 0.3),
                                               pose_from(BOX['position']))], resolution=0.004)
        path = np.array([tool(m)[0] for m in states[n:]])
        assert len(path) > 100  # it moved
        assert fine.path_free(path)
        ctx.executor.remove_node(planner)
        planner.destroy_node()
    finally:
        if ctx is not None:
            ctx.close()
        crashes = pair.stop()
    assert not crashes, crashes

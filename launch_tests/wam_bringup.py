"""
launch_testing test of launch/wam.launch.py, for CI machines with ROS 2 installed.

It includes wam.launch.py (``sim:=true backend:=kinematic``), waits for ``/joint_states``
from sim_robot and a trajectory_msgs/JointTrajectory from ik_controller, sends a
PoseStamped goal 5 cm away from the current tool pose, waits for
``/ik_controller/tool/goal_reached`` and checks where the arm went; after shutdown every
process must have exited cleanly.

Run it in a workspace where ik_control is built (Humble, Jazzy, Kilted)::

    colcon build --packages-select ik_control
    source install/setup.bash
    export ROS_DOMAIN_ID=42        # any free domain, away from other robots and tests
    launch_test src/ik_control/launch_tests/wam_bringup.py

(``python3 -m launch_testing.launch_test`` is the same command.) The file is not named
``test_*.py`` and setup.cfg keeps pytest out of ``launch_tests/``: the plain virtual
environment has no launch, launch_ros or launch_testing (test/test_launch_files.py
checks the launch files there instead).
"""

import os
import time
import unittest

from ament_index_python.packages import get_package_share_directory
from geometry_msgs.msg import PoseStamped
from ik_control import robots
from ik_control.validation import matrix_to_quaternion
from launch import LaunchDescription
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
import launch_testing.actions
import launch_testing.asserts
import numpy as np
import pytest
import rclpy
from rclpy.qos import DurabilityPolicy, QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool
from trajectory_msgs.msg import JointTrajectory

EE = 'tool'
BASE = 'wam_base'
COMMAND_TOPIC = '/joint_trajectory_controller/joint_trajectory'
GOAL_OFFSET = np.array([0.05, 0.0, -0.05])  # from the current tool position [m]
POSITION_TOLERANCE = 0.002  # where the simulated arm must end up [m]
START_TIMEOUT = 60.0  # first start may compile the numba kernels [s]
GOAL_TIMEOUT = 20.0  # [s]


@pytest.mark.launch_test
def generate_test_description():
    """Return wam.launch.py with the embedded kinematic simulation, then ReadyToTest."""
    bringup = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(
            get_package_share_directory('ik_control'), 'launch', 'wam.launch.py')),
        launch_arguments={'sim': 'true', 'backend': 'kinematic'}.items())
    return LaunchDescription([bringup, launch_testing.actions.ReadyToTest()])


class TestWamBringup(unittest.TestCase):
    """The bringup's nodes talk to each other and follow a pose goal."""

    @classmethod
    def setUpClass(cls):
        """Start rclpy and the test node."""
        rclpy.init()
        cls.node = rclpy.create_node('wam_bringup_test')

    @classmethod
    def tearDownClass(cls):
        """Destroy the test node and shut rclpy down."""
        cls.node.destroy_node()
        rclpy.shutdown()

    def spin_until(self, predicate, timeout):
        """Process callbacks until ``predicate()`` holds or ``timeout`` [s]; return it."""
        end = time.monotonic() + timeout
        while not predicate() and time.monotonic() < end:
            rclpy.spin_once(self.node, timeout_sec=0.05)
        return bool(predicate())

    def test_follows_a_pose_goal(self):
        """Receive states and commands, send a goal, wait for goal_reached, check FK."""
        states, commands, reached = [], [], []
        self.node.create_subscription(JointState, '/joint_states', states.append, 10)
        self.node.create_subscription(JointTrajectory, COMMAND_TOPIC, commands.append, 10)
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.node.create_subscription(Bool, f'/ik_controller/{EE}/goal_reached',
                                      reached.append, latched)
        goal_pub = self.node.create_publisher(PoseStamped, f'/ik_controller/{EE}/target_pose',
                                              10)

        self.assertTrue(self.spin_until(lambda: states, START_TIMEOUT),
                        'no /joint_states from sim_robot')
        self.assertTrue(self.spin_until(lambda: commands, START_TIMEOUT),
                        f'no JointTrajectory from ik_controller on {COMMAND_TOPIC}')
        model = robots.robot('wam')
        self.assertEqual(list(commands[-1].joint_names), list(model.joint_names))
        self.assertTrue(self.spin_until(lambda: goal_pub.get_subscription_count() > 0, 10.0))

        start = self.tool_pose(model, states[-1])
        target = start.copy()
        target[:3, 3] += GOAL_OFFSET
        goal = PoseStamped()
        goal.header.frame_id = BASE
        goal.pose.position.x, goal.pose.position.y, goal.pose.position.z = \
            (float(v) for v in target[:3, 3])
        x, y, z, w = (float(v) for v in matrix_to_quaternion(target[:3, :3]))
        goal.pose.orientation.x, goal.pose.orientation.y = x, y
        goal.pose.orientation.z, goal.pose.orientation.w = z, w
        reached.clear()
        goal_pub.publish(goal)

        self.assertTrue(self.spin_until(lambda: reached and reached[-1].data, GOAL_TIMEOUT),
                        f'goal_reached did not become true within {GOAL_TIMEOUT} s')
        self.spin_until(lambda: False, 0.2)  # a few more joint_states
        final = self.tool_pose(model, states[-1])
        error = np.linalg.norm(final[:3, 3] - target[:3, 3])
        self.assertLess(error, POSITION_TOLERANCE, f'tool is {error * 1e3:.2f} mm from the goal')

    @staticmethod
    def tool_pose(model, state):
        """Return the tool placement in wam_base for a JointState (any joint order)."""
        position = dict(zip(state.name, state.position))
        q = np.array([position[name] for name in model.joint_names])
        return model.frame_placements(q)[0]


@launch_testing.post_shutdown_test()
class TestWamBringupShutdown(unittest.TestCase):
    """Every process of the bringup exits cleanly on shutdown."""

    def test_exit_codes(self, proc_info):
        """robot_state_publisher, ik_controller and sim_robot exit with status 0."""
        launch_testing.asserts.assertExitCodes(proc_info)

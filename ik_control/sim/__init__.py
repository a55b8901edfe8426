"""
Embedded simulated robot obeying joint_trajectory_controller semantics.

ROS-free: numpy (and MuJoCo for the physics backend). The ROS node wrapping it
is :mod:`ik_control.ros.sim_robot_node`.

* :class:`JointTrajectorySampler`: the active trajectory and its setpoint.
* :class:`KinematicSim`: ideal or first-order-lag tracking within limits.
* :class:`MujocoSim`: MuJoCo rigid-body physics with position servos.
"""

from ik_control.sim.base import default_initial_positions, SimRobot
from ik_control.sim.kinematic import KinematicSim
from ik_control.sim.mujoco_sim import MujocoSim
from ik_control.sim.trajectory import JointTrajectorySampler
from ik_control.sim.urdf_joints import (
    movable_joint_names, parse_urdf_joints, select_joints, strip_geometry, UrdfJoint)

__all__ = [
    'JointTrajectorySampler', 'KinematicSim', 'MujocoSim', 'SimRobot', 'UrdfJoint',
    'default_initial_positions', 'movable_joint_names', 'parse_urdf_joints',
    'select_joints', 'strip_geometry',
]

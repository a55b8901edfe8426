"""
Embedded simulated robot obeying joint_trajectory_controller semantics.

ROS-free: numpy, the URDF read by :class:`ik_control.kinematics.RobotModel` (and
MuJoCo for the physics backend). The ROS node wrapping it is
:mod:`ik_control.ros.sim_robot_node`.

* :class:`JointTrajectorySampler`: the active trajectory and its setpoint.
* :class:`KinematicSim`: ideal or first-order-lag tracking within limits.
* :class:`MujocoSim`: MuJoCo rigid-body physics with position servos.
"""

from ik_control.sim.base import clip_initial_positions, SimRobot
from ik_control.sim.kinematic import KinematicSim
from ik_control.sim.mujoco_sim import MujocoSim
from ik_control.sim.trajectory import JointTrajectorySampler

__all__ = [
    'JointTrajectorySampler', 'KinematicSim', 'MujocoSim', 'SimRobot', 'clip_initial_positions',
]

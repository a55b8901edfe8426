"""Robot models on pinocchio: URDF or DH table, controlled joints, stacked task Jacobians."""

from ik_control.kinematics.robot_model import EndEffector, KinematicsWorkspace, RobotModel

__all__ = ['EndEffector', 'KinematicsWorkspace', 'RobotModel']

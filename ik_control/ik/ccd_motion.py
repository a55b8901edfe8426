"""
CCD as a motion generator: one bounded sweep of :class:`~ik_control.ik.ccd.Ccd` per tick.

Parent's CCD moves each joint by at most ``max_joint_step`` per call, so the end effector
approaches a fixed goal monotonically (:mod:`ik_control.ik.ccd`) and stops on it: the
baseline motion of Gielniak et al.'s comparison (``ik_control bench style``).
"""

from ik_control.ik.ccd import Ccd
import numpy as np


class CcdMotion:
    """
    CCD as a motion generator: each :meth:`step` is one sweep with bounded joint changes.

    ``max_joint_step`` [rad or m per tick], scalar or per joint, bounds every joint's
    change per call (e.g. ``model.velocity_limit * dt``); the end effector therefore
    approaches a fixed goal monotonically (module docstring) and stops on it.
    ``tolerance`` [m] and ``rotation_tolerance`` [rad]: within them :meth:`step` returns
    ``q`` unchanged (no chatter at the goal).
    """

    def __init__(self, model, max_joint_step, end_effector=0, orientation_weight=1.0,
                 position_weight=None, tolerance=1e-4, rotation_tolerance=1e-3):
        self.ccd = Ccd(model, end_effector, orientation_weight, position_weight)
        self.max_joint_step = self.ccd._steps(max_joint_step)
        self.tolerance = float(tolerance)
        self.rotation_tolerance = float(rotation_tolerance)
        self.last_errors = (np.nan, np.nan)

    def step(self, q, target_position, target_rotation=None):
        """Return the next joint values from ``q`` toward the goal (one bounded sweep)."""
        result = self.ccd.solve(q, target_position, target_rotation, max_iterations=1,
                                tolerance=self.tolerance,
                                rotation_tolerance=self.rotation_tolerance,
                                max_joint_step=self.max_joint_step)
        self.last_errors = (result.position_error, result.rotation_error)
        return result.q

    def reached(self, q, target_position, target_rotation=None):
        """Whether the end effector at ``q`` is within both tolerances of the goal."""
        ep, er = self.ccd.errors(q, target_position, target_rotation)
        return ep <= self.tolerance and er <= self.rotation_tolerance

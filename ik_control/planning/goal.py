"""
Workspace goals: an end-effector position, or a pose, to reach within a threshold.

The paper (Vande Weghe et al., sec. III) lets the goal ``x_g`` live in ``R^3`` (position)
or ``SE(3)`` (pose). Its error at an end-effector placement ``T`` is
``e = [p_g - p ; log3(R_g R^T)]`` (:func:`ik_control.ik.pose_error.pose_error`, base
axes), its distance ``d = |p_g - p| + w theta`` with ``theta = |log3(R_g R^T)|`` and
``w`` = ``rotation_weight`` [m/rad] (``d = |p_g - p|`` for a position goal), and it is
reached when ``|p_g - p| <= threshold`` [m] and, for a pose, ``theta <=
rotation_threshold`` [rad] (sec. V: 0.15 m, position only).
"""

from dataclasses import dataclass

from ik_control.ik.pose_error import ERROR_LOG3, pose_error
from ik_control.validation import finite_vector, InputError, rotation_matrix
from numba import njit
import numpy as np


@njit(cache=True, nogil=True)
def goal_distance(T, target, position_only, rotation_weight, e, work):
    """Return ``(d, |p_g - p|, theta)`` for placement ``T`` (module docstring); fills ``e``."""
    pose_error(T, target, ERROR_LOG3, position_only, e, work)
    dp = np.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2])
    if position_only:
        return dp, dp, 0.0
    theta = np.sqrt(e[3] * e[3] + e[4] * e[4] + e[5] * e[5])
    return dp + rotation_weight * theta, dp, theta


@dataclass(frozen=True)
class WorkspaceGoal:
    """
    A goal for frame ``frame``: ``position`` [m] and optional ``rotation`` (3x3) in the base frame.

    ``threshold`` [m] and ``rotation_threshold`` [rad] define "reached";
    ``rotation_weight`` [m/rad] mixes the two errors into one distance and weighs the
    angular rows of the Jacobian-transpose step.
    """

    position: np.ndarray
    rotation: np.ndarray = None
    threshold: float = 0.15
    rotation_threshold: float = 0.1
    rotation_weight: float = 0.2
    frame: str = 'tool'

    def __post_init__(self):
        """Check the numbers: finite position, a rotation matrix, thresholds > 0."""
        object.__setattr__(self, 'position', finite_vector(self.position, 3, 'goal position'))
        if self.rotation is not None:
            R = rotation_matrix(self.rotation, 'goal rotation')
            object.__setattr__(self, 'rotation', R.copy())
        for name in ('threshold', 'rotation_threshold', 'rotation_weight'):
            value = getattr(self, name)
            if not np.isfinite(value) or value <= 0.0:
                raise InputError(f'goal {name} must be a finite number > 0, got {value}')

    @property
    def position_only(self):
        """Return True for a position goal (no rotation given)."""
        return self.rotation is None

    def target(self):
        """Return the goal as a 4x4 placement (identity rotation for a position goal)."""
        T = np.eye(4)
        T[:3, 3] = self.position
        if self.rotation is not None:
            T[:3, :3] = self.rotation
        return T

    def errors(self, T):
        """Return ``(d, position error [m], rotation error [rad])`` at placement ``T``."""
        d, dp, theta = goal_distance(np.ascontiguousarray(T, dtype=float), self.target(),
                                     self.position_only, self.rotation_weight, np.zeros(6),
                                     np.zeros((3, 3)))
        return float(d), float(dp), float(theta)

    def reached(self, T):
        """Return True when placement ``T`` is within the thresholds."""
        _, dp, theta = self.errors(T)
        return dp <= self.threshold and (self.position_only or theta <= self.rotation_threshold)

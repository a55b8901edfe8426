"""
One planning request end to end: search, shortcut smoothing, time parameterisation.

``method`` names the search: ``jt`` (JT-RRT with the sec. V improvement when
``settings.min_progress > 0``), ``bertram`` (Bertram et al.'s baseline) or
``rrt_connect`` (RRT-Connect to an IK goal). The path found is shortcut
(:mod:`ik_control.planning.smoothing`) and timed within the model's joint velocity
limits and ``acceleration_limit`` [rad/s^2] (:mod:`ik_control.planning.timing`).
"""

from dataclasses import dataclass

from ik_control.planning.jt_rrt import RrtResult, WorkspaceRrt
from ik_control.planning.rrt_connect import RrtConnect
from ik_control.planning.smoothing import shortcut
from ik_control.planning.timing import JointTrajectory, time_parameterize
from ik_control.validation import InputError
import numpy as np

METHODS = ('jt', 'bertram', 'rrt_connect')


@dataclass
class Plan:
    """The search result, the smoothed path (m x nq) and its trajectory (None on failure)."""

    result: RrtResult
    path: np.ndarray
    trajectory: JointTrajectory = None

    @property
    def success(self):
        """Return True when a path to the goal was found."""
        return self.result.success


class Planner:
    """The three searches for one robot and :class:`CollisionChecker`, reused across requests."""

    def __init__(self, model, checker, settings=None, acceleration_limit=5.0,
                 smoothing_iterations=100, dt=0.02):
        self.model = model
        self.checker = checker
        self.workspace = WorkspaceRrt(model, checker, settings)
        self.connect = RrtConnect(model, checker, settings)
        self.acceleration_limit = acceleration_limit
        self.smoothing_iterations = smoothing_iterations
        self.dt = dt

    def search(self, q_start, goal, rng, method='jt'):
        """Run the search ``method`` only; returns an :class:`RrtResult`."""
        if method not in METHODS:
            raise InputError(f"planning method must be one of {list(METHODS)}, not '{method}'")
        if method == 'rrt_connect':
            return self.connect.plan(q_start, goal, rng)
        return self.workspace.plan(q_start, goal, rng, method)

    def plan(self, q_start, goal, rng, method='jt'):
        """Search, smooth and time-parameterise; returns a :class:`Plan`."""
        result = self.search(q_start, goal, rng, method)
        if not result.success:
            return Plan(result, result.path)
        path = shortcut(result.path, self.checker, rng, self.smoothing_iterations)
        trajectory = time_parameterize(path, self.model.velocity_limit, self.acceleration_limit,
                                       self.dt, self.model.joint_names)
        return Plan(result, path, trajectory)

"""
RRT-Connect (Kuffner & LaValle 2000) to a goal configuration found by position IK.

The reference the paper argues against (sec. II): solve IK for the workspace goal first,
then plan in configuration space. Goal configurations come from
:class:`ik_control.ik.position_ik.PositionIk` (seeded from the start, then from uniform
random configurations drawn from ``rng``; the first attempt aims at the goal itself, the
later ones at points drawn uniformly within half the goal's position threshold of it,
so that the IK goal can use the tolerance the workspace planners use); the first
solution inside the goal's thresholds whose configuration is collision-free is the goal
(at most ``ik_attempts`` attempts, and half the time limit). Then two trees, one from
the start and one from the goal, alternate: one is extended by a single step of
``step_size`` [rad] towards a uniform random configuration (a *random extension*),
the other is connected to the new node by repeated steps until it reaches it or
collides (a *goal extension* in Table I's columns); the trees swap roles each iteration.
"""

import time

from ik_control.ik.position_ik import PositionIk
from ik_control.planning.jt_rrt import GoalKinematics, RrtResult, RrtSettings, RrtStats
from ik_control.planning.tree import Tree
from ik_control.validation import InputError
import numpy as np

TRAPPED, ADVANCED, REACHED = 0, 1, 2


class RrtConnect:
    """RRT-Connect to an IK-solved goal for one robot and :class:`CollisionChecker`."""

    def __init__(self, model, checker, settings=None, ik_attempts=2000):
        self.model = model
        self.checker = checker
        self.settings = settings or RrtSettings()
        self.ik_attempts = int(ik_attempts)
        self._ik = {}
        self._kin = {}

    def goal_configuration(self, q_start, goal, rng, deadline):
        """Return a collision-free IK solution for ``goal`` or None, and the attempts made."""
        key = (goal.frame, goal.position_only)
        if key not in self._ik:
            self._kin[goal.frame] = GoalKinematics(self.model, goal.frame)
            kin_model = self._kin[goal.frame].model
            if goal.position_only:
                from ik_control.kinematics.robot_model import EndEffector
                kin_model = type(kin_model)(
                    kin_model.pin_model, joints=kin_model.joint_names,
                    end_effectors=[EndEffector(goal.frame, 'position')],
                    base_frame=kin_model.base_frame)
            # its 1 s safety budget on this thread's CPU time: restarts are bounded by
            # count, and a thread held up by a loaded machine gets the same goal
            self._ik[key] = PositionIk(kin_model, tolerance=1e-4, rotation_tolerance=1e-3,
                                       method='law', max_iterations=300,
                                       clock=time.thread_time)
        ik = self._ik[key]
        target = goal.target()[None]
        aim = target.copy()
        seed = np.asarray(q_start, dtype=float)
        for attempt in range(self.ik_attempts):
            if time.perf_counter() > deadline:
                break
            # restarts bounded by count, not time: the same seed gives the same goal
            result = ik.solve(aim, seed, time_budget=1.0, rng=rng, max_restarts=2)
            seed = self.model.random_configurations(1, rng)[0]
            u = rng.standard_normal(3)
            aim[0, :3, 3] = target[0, :3, 3] + (0.5 * goal.threshold * rng.random() ** (1 / 3)
                                                * u / np.linalg.norm(u))
            if not result.success:
                continue
            q = np.clip(result.q, self.model.lower, self.model.upper)
            if goal.reached(self._kin[goal.frame].placement(q)) and self.checker.config_free(q):
                return q, attempt + 1
        return None, self.ik_attempts

    def plan(self, q_start, goal, rng):
        """Plan from ``q_start`` to the goal; returns an :class:`RrtResult`."""
        s = self.settings
        q0 = np.asarray(q_start, dtype=float)
        if q0.shape != (self.model.nq,) or not np.all(np.isfinite(q0)):
            raise InputError(f'start configuration must hold {self.model.nq} finite values')
        stats = RrtStats()
        checks0 = self.checker.checks
        t0 = time.perf_counter()
        start = Tree(q0)

        def finish(reason, path=None):
            stats.seconds = time.perf_counter() - t0
            stats.collision_checks = self.checker.checks - checks0
            if path is None:
                return RrtResult(False, reason, np.zeros((0, q0.size)), start, stats)
            _, dp, theta = goal.errors(self._kin[goal.frame].placement(path[-1]))
            return RrtResult(True, '', path, start, stats, dp, theta)

        if not self.checker.config_free(q0):
            return finish('start in collision')
        q_goal, _ = self.goal_configuration(q0, goal, rng, t0 + 0.5 * s.time_limit)
        if q_goal is None:
            return finish('no collision-free IK solution')
        trees = [start, Tree(q_goal)]
        while True:
            stats.nodes = trees[0].size + trees[1].size - 2
            if stats.nodes >= s.max_nodes:
                return finish('node limit')
            if time.perf_counter() - t0 > s.time_limit:
                return finish('timeout')
            a, b = trees
            q_rand = self.model.random_configurations(1, rng)[0]
            stats.random_extensions += 1
            status, i_new = self._extend(a, a.nearest(q_rand), q_rand)
            if status != TRAPPED:
                stats.goal_extensions += 1
                q_new = a.q[i_new]
                status_b, j = TRAPPED, b.nearest(q_new)
                while True:
                    status_b, j_next = self._extend(b, j, q_new)
                    if status_b == TRAPPED:
                        break
                    j = j_next
                    if status_b == REACHED:
                        break
                if status_b == REACHED:
                    stats.nodes = trees[0].size + trees[1].size - 2
                    pa, pb = a.path_to(i_new), b.path_to(j)[::-1][1:]
                    path = np.vstack([pa, pb])
                    return finish('', path if a is start else path[::-1])
            trees.reverse()

    def _extend(self, tree, i, q_target):
        """One step of ``step_size`` from node ``i`` towards ``q_target``."""
        q = tree.q[i]
        delta = q_target - q
        dist = float(np.linalg.norm(delta))
        step = self.settings.step_size
        q_new = q_target.copy() if dist <= step else q + delta * (step / dist)
        if not self.checker.segment_free(q, q_new):
            return TRAPPED, i
        return (REACHED if dist <= step else ADVANCED), tree.add(q_new, i)

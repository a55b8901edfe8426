"""
The classical IK methods behind one interface: ``ccd``, ``hal`` and ``analytic``.

:class:`ClassicalIk` answers :class:`~ik_control.ik.position_ik.IkResult` like
:class:`~ik_control.ik.position_ik.PositionIk`, so that ``ik_control solve --method`` and
``ik_control bench ik`` treat every method alike:

* ``ccd``: :class:`~ik_control.ik.ccd.Ccd` sweeps (``ccd_sweeps`` per attempt) from the
  seed, then from uniform random configurations, until converged or the time budget is
  spent (the best attempt is returned);
* ``hal``: :class:`~ik_control.ik.hal.HalArm`'s closed form followed by ``refine_steps``
  damped least-squares steps (7-DoF arms), one attempt;
* ``analytic``: the closed form alone, no iteration: the law of cosines of
  :class:`~ik_control.ik.two_link.PlanarTwoLink` for a chain of two parallel revolute
  joints, HAL without refinement for a 7-DoF arm.

A position-only end effector gives CCD a position goal; HAL needs a hand orientation and
keeps the seed's.

Several end effectors (SIMON's two hands): ``ccd`` sweeps them together
(:class:`~ik_control.ik.tree_ccd.TreeCcd`: a joint that moves several effectors, like
SIMON's torso, takes the angle best for all of them); ``hal`` and ``analytic`` solve each
effector's 7-joint arm by its own closed form, the joints that are no arm's (the torso)
held at the seed, so they reach only goals that the seed's torso allows (the arms must
not share joints).
"""

import time

from ik_control.ik.ccd import Ccd
from ik_control.ik.hal import HalArm
from ik_control.ik.position_ik import IkResult
from ik_control.ik.tree_ccd import TreeCcd
from ik_control.ik.two_link import PlanarTwoLink
from ik_control.validation import InputError, ModelError
import numpy as np

CLASSICAL_METHODS = ('ccd', 'hal', 'analytic')


class ClassicalIk:
    """
    One of :data:`CLASSICAL_METHODS` on the end effectors of ``model`` (module docstring).

    ``tolerance`` [m] and ``rotation_tolerance`` [rad] decide success; ``clock`` [s] is the
    time source of the budget.
    """

    def __init__(self, model, method, tolerance=1e-5, rotation_tolerance=1e-5,
                 clock=time.perf_counter, ccd_sweeps=500, refine_steps=3):
        if method not in CLASSICAL_METHODS:
            raise InputError(f"classical IK method '{method}' is not one of "
                             f'{list(CLASSICAL_METHODS)}')
        ne = len(model.end_effectors)
        if ne < 1:
            raise ModelError(f'{method} needs an end effector')
        self.model = model
        self.method = method
        self.tolerance = float(tolerance)
        self.rotation_tolerance = float(rotation_tolerance)
        self.clock = clock
        self.ccd_sweeps = int(ccd_sweeps)
        self.refine_steps = int(refine_steps)
        self.poses = np.array([model.end_effectors[e].mode == 'pose' for e in range(ne)])
        self.pose = bool(self.poses[0])
        self.frames = model.end_effector_names
        self.frame = self.frames[0]
        self.two_link = None
        self.hal = None
        self.arms = []
        if method == 'ccd':
            self.ccd = Ccd(model) if ne == 1 else TreeCcd(model)
        elif method == 'analytic' and model.nq == 2 and ne == 1:
            self.two_link = PlanarTwoLink(model)
        elif model.nq >= 7:
            self.arms = [HalArm(model, e) for e in range(ne)]
            joints = np.concatenate([a.arm for a in self.arms])
            if np.unique(joints).size != joints.size:
                raise ModelError(f"'{method}' solves each end effector's 7-joint arm alone; "
                                 'these arms share joints')
            self.hal = self.arms[0]
        else:
            raise ModelError(f"'{method}' needs a 7-DoF arm"
                             + (' or a planar two-link chain' if method == 'analytic' else '')
                             + f'; the model has {model.nq} joints')
        self._rng = None

    def errors(self, q, target):
        """
        Return the position [m] and rotation [rad] errors at ``q`` (pinocchio FK).

        ``target`` is one 4x4 pose (the first effector's) or (ne, 4, 4): the largest
        errors over the effectors.
        """
        target = np.asarray(target, dtype=float).reshape(-1, 4, 4)
        worst_p, worst_r = 0.0, 0.0
        for e, goal in enumerate(target):
            T = self.model.pin_frame_placement(q, self.frames[e])
            if self.poses[e]:
                rel = goal[:3, :3] @ T[:3, :3].T
                worst_r = max(worst_r, float(np.arccos(np.clip(0.5 * (np.trace(rel) - 1.0),
                                                               -1.0, 1.0))))
            worst_p = max(worst_p, float(np.linalg.norm(goal[:3, 3] - T[:3, 3])))
        return worst_p, worst_r

    def solve(self, targets, q_seed=None, time_budget=0.005, rng=None):
        """Solve for ``targets`` (ne x 4 x 4) from ``q_seed`` (default: middle of the limits)."""
        m = self.model
        ne = len(self.frames)
        targets = np.asarray(targets, dtype=float)
        if targets.shape != (ne, 4, 4) or not np.all(np.isfinite(targets)):
            raise InputError(f'targets must be finite, shape ({ne}, 4, 4)')
        q = m.center.copy() if q_seed is None else np.clip(
            np.asarray(q_seed, dtype=float), m.lower, m.upper)
        if q.shape != (m.nq,) or not np.all(np.isfinite(q)):
            raise InputError(f'q_seed must hold {m.nq} finite joint values')
        start = self.clock()
        iterations, restarts = 0, 0
        if self.method == 'ccd':
            rng = rng or self._rng or np.random.default_rng()
            self._rng = rng
            best = None
            while True:
                if ne == 1:
                    rotation = targets[0, :3, :3] if self.pose else None
                    r = self.ccd.solve(q, targets[0, :3, 3], rotation,
                                       max_iterations=self.ccd_sweeps, tolerance=self.tolerance,
                                       rotation_tolerance=self.rotation_tolerance)
                else:
                    r = self.ccd.solve(q, targets, max_iterations=self.ccd_sweeps,
                                       tolerance=self.tolerance,
                                       rotation_tolerance=self.rotation_tolerance)
                iterations += r.iterations
                if best is None or (r.position_error + r.rotation_error
                                    < best.position_error + best.rotation_error):
                    best = r
                if r.converged or self.clock() - start >= time_budget:
                    break
                restarts += 1
                q = m.random_configurations(1, rng)[0]
            q = best.q
        elif self.two_link is not None:
            q, _, _ = self.two_link.solve(targets[0, :3, 3], q_current=q)
            q = np.clip(q, m.lower, m.upper)
        else:
            steps = self.refine_steps if self.method == 'hal' else 0
            for e, arm in enumerate(self.arms):
                rotation = (targets[e, :3, :3] if self.poses[e]
                            else m.pin_frame_placement(q, self.frames[e])[:3, :3])
                solved = arm.solve(q, targets[e, :3, 3], rotation, refine_steps=steps).q
                q[arm.arm] = solved[arm.arm]
            iterations = steps
        ep, er = self.errors(q, targets)
        ok = ep <= self.tolerance and er <= self.rotation_tolerance
        return IkResult(q, bool(ok), ep, er, iterations, restarts, self.clock() - start,
                        m.joint_names)

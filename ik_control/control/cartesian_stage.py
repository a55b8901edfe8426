"""
The Cartesian stage of the tick: the effectors' goals -> the desired joint velocity.

While the effectors track their goals (no hold, no re-seed join, no joint trajectory),
each tick:

1. **aim** (:meth:`GoalSet.aim <ik_control.control.goal_set.GoalSet.aim>`): twists move
   their virtual targets by the time that passed since the last tick (at most
   ``MAX_TWIST_STEP``, so a late tick does not slow the commanded twist), moving goals
   advance; a moving goal's weight of the secondary goals scales the obstacle avoidance
   (SAM sec. V);
2. **the law**: one damped-least-squares step with gain ``K dt``, ``dq = J^# (K dt e)``
   plus the nullspace term (:func:`~ik_control.ik.solver.solve_step`; Buss eq. 11,
   SAM eq. 8), re-solved without the joints it pushes against their bounds
   (:meth:`CartesianStage.solve_within_bounds`);
3. **the terms on dq**: the classical ``ik_method``'s joint step that replaces it (CCD,
   HAL, analytic; :mod:`~ik_control.control.classical_mode`), the fallback's posture pull
   ``dq + N K dt (q* - q)`` (:mod:`~ik_control.control.fallback`), SAM eq. 19's obstacle
   avoidance in the nullspace (:mod:`~ik_control.ik.obstacles`);
4. ``v_des = dq / dt``; the fallback's joint-space approach replaces it while it runs
   (:meth:`GoalReferee.approach_velocity
   <ik_control.control.goal_referee.GoalReferee.approach_velocity>`).

It writes the :class:`~ik_control.control.tick_state.TickState`'s ``v_des`` and returns
the status bits it raises; the limiter and the commit come after it.
"""

import math

from ik_control.control.status import Status
from ik_control.ik.solver import INFO_ERROR_CLAMPED, INFO_SIGMA_MIN
from numba import njit
import numpy as np

__all__ = ['BOUND_BAND', 'CartesianStage', 'MAX_TWIST_STEP']

MAX_TWIST_STEP = 0.1  # longest tick interval a twist is integrated over [s]
BOUND_BAND = 1e-3  # a joint this close to its bound (less the margin) is at it [rad or m]
BOUND_RESOLVES = 2  # re-solves without the joints pushing their bounds, at most

_NONE = int(Status.NONE)
_TWIST_TIMEOUT = int(Status.TWIST_TIMEOUT)
_OBSTACLE_NEAR = int(Status.OBSTACLE_NEAR)
_NEAR_SINGULARITY = int(Status.NEAR_SINGULARITY)
_ERROR_CLAMPED = int(Status.ERROR_CLAMPED)


@njit(cache=True, nogil=True)
def freeze_pushing(q, dq, lo, hi, active):
    """
    Freeze the joints that ``dq`` pushes against their bounds; return whether any.

    Joint ``j`` pushes when ``q_j >= hi_j`` and ``dq_j > 0``, or ``q_j <= lo_j`` and
    ``dq_j < 0`` (:meth:`CartesianStage.solve_within_bounds`); its ``active_j`` is set 0.
    """
    pushing = False
    for j in range(q.shape[0]):
        if (q[j] >= hi[j] and dq[j] > 0.0) or (q[j] <= lo[j] and dq[j] < 0.0):
            active[j] = 0.0
            pushing = True
    return pushing


class CartesianStage:
    """
    The desired velocity of Cartesian tracking (module docstring).

    Parameters
    ----------
    model, solver, goals, fallback, referee, obstacles:
        The controller's :class:`~ik_control.kinematics.robot_model.RobotModel`,
        :class:`~ik_control.ik.solver.VelocitySolver`,
        :class:`~ik_control.control.goal_set.GoalSet`,
        :class:`~ik_control.control.fallback.IkFallback`,
        :class:`~ik_control.control.goal_referee.GoalReferee` and
        :class:`~ik_control.ik.obstacles.ObstacleAvoidance`.

    """

    def __init__(self, model, solver, goals, fallback, referee, obstacles):
        self.model, self.solver, self.goals = model, solver, goals
        self.fallback, self.referee, self.obstacles = fallback, referee, obstacles
        self.targets = goals.targets.copy()  # the solver's targets of this tick (aim)
        self.last_tick = -math.inf  # when the goals were last aimed [s]
        self._bound_lo = self._bound_hi = None

    def configure(self, config):
        """Take the position margin: a joint beyond ``limit - margin - BOUND_BAND`` is at it."""
        band = config.limits.position_margin + BOUND_BAND
        self._bound_lo = self.model.lower + band
        self._bound_hi = self.model.upper - band

    def aim(self, now, tick, lead):
        """
        Aim the solver at ``now`` [s] (:meth:`GoalSet.aim`); return the status bits it sets.

        ``lead`` [s]: how far ahead of ``now`` the tick's knot is.
        """
        dt = min(max(now - self.last_tick, 0.0), MAX_TWIST_STEP)
        self.last_tick = now
        cfg = tick.config
        timed_out, secondary = self.goals.aim(
            now, dt, cfg.gain, cfg.twist_timeout, 2.0 * max(cfg.solver.clamp_error, 1e-3),
            self.solver.frame_T, lead, self.targets)
        self.obstacles.gain = cfg.obstacles.gain * secondary
        return _TWIST_TIMEOUT if timed_out else _NONE

    def solve_within_bounds(self, q):
        """
        Return the law's step from ``q``, re-solved without the joints pushing their bounds.

        A joint at its bound (within ``BOUND_BAND`` of ``limit - margin``) that the step
        moves outward is frozen (its Jacobian column removed) and the task is solved again
        with the other joints, at most ``BOUND_RESOLVES`` times (Baerlocher & Boulic's
        clamping loop). Otherwise the limiter would clip that joint every tick while the
        solution keeps relying on it, and the arm would drift along its self-motion.
        """
        solver = self.solver
        solver.active[:] = 1.0
        dq = solver.step(q, self.targets)
        lo, hi = self._bound_lo, self._bound_hi
        for _ in range(BOUND_RESOLVES):
            if not freeze_pushing(q, dq, lo, hi, solver.active):
                break
            dq = solver.step(q, self.targets)
        return dq

    def velocity(self, now, tick, lead, ik_mode):
        """
        Write the desired velocity of this tick into ``tick.v_des``; return its status bits.

        ``ik_mode``: the classical ``ik_method``'s
        :class:`~ik_control.control.classical_mode.ClassicalMode`, or None (the law).
        """
        cfg, solver, fallback = tick.config, self.solver, self.fallback
        status = self.aim(now, tick, lead)
        if fallback.pending:
            self.referee.poll(now, cfg.fallback.strategy)
        dq = self.solve_within_bounds(tick.q)
        if ik_mode is not None:  # ik_method ccd, hal or analytic: its joint step
            dq = ik_mode.joint_step(tick, dq)
        if fallback.posture is not None:  # posture strategy: dq + N K dt (q* - q)
            dq = dq + fallback.posture_step(solver.J, tick.q, cfg.gain * tick.dt,
                                            solver.active)
        if self.obstacles.radii.size:
            ws = solver.ws
            dq, clearance = self.obstacles.step(ws.J, dq, ws.joint_T, ws.frame_T, tick.dt,
                                                solver.active)
            if clearance < self.obstacles.influence:
                status |= _OBSTACLE_NEAR
        np.multiply(dq, cfg.rate_hz, out=tick.v_des)
        if fallback.approach is not None:
            self.referee.approach_velocity(now, tick.q, tick.v_max, tick.a_max, tick.v_des,
                                           cfg.goal.unreachable_time)
        info = solver.info
        if 0.0 <= info[INFO_SIGMA_MIN] < cfg.solver.singular_epsilon:
            status |= _NEAR_SINGULARITY
        if info[INFO_ERROR_CLAMPED] > 0:
            status |= _ERROR_CLAMPED
        return status

"""
Parent's control term on a position-IK solution: the spare joints toward desired angles.

Every effector stays on its target meanwhile.

Parent (the notes' Jacobian methods, "control term"): a redundant arm's update
``dtheta = J^+ dX + (I - J^+ J) z`` moves the joints in the nullspace of the task by any
``z``; with ``z = -alpha grad H`` and ``H = sum_i alpha_i (theta_i - theta_ci)^psi`` the
arm is biased toward the desired angles ``theta_c`` (SAM eq. 16-18 at psi = 2, theta_c
the middle of each range). Position IK (:mod:`ik_control.ik.position_ik`) finds *a*
solution; :class:`PostureRefinement` then iterates that update from it, with ``dX`` the
(tiny) remaining error, so the task error stays within the tolerance while ``H`` falls.
The step is :func:`ik_control.ik.solver.solve_step` with the posture term of
:func:`ik_control.ik.nullspace.posture_gradient`, clamped into the joint limits; the
iteration stops when no joint moves by more than ``step_tolerance`` [rad]; an update that
would raise ``H`` is undone and the gain halved (:func:`descend`).
"""

from dataclasses import replace

from ik_control.ik import nullspace
from ik_control.ik import solver as solver_mod
from ik_control.ik.solver import VelocitySolver
from ik_control.validation import InputError
from numba import njit
import numpy as np

CORRECTIONS = 3   # task-only updates after the descent (its second-order drift)


@njit(cache=True, nogil=True)
def descend(F, IX, B, q, targets, max_iterations, step_tolerance, work):
    """
    Iterate the law with its posture term from ``q`` (updated in place, kept in limits).

    A joint that an update would take past a limit stops where it is and leaves the task
    and the posture term (``active``), as a locked joint; an update that would raise
    ``H`` is undone and the gain (``P_CENTERING``) halved, so ``H`` never rises (with
    ``psi < 2`` a fixed gain chatters about the desired angle);
    the descent stops when no joint moved by more than ``step_tolerance`` [rad] or after
    ``max_iterations`` updates. Then ``CORRECTIONS`` updates without the posture term
    take the effectors back onto their targets (Gauss-Newton on the second-order drift).
    ``work`` is an nq work vector. Returns the number of updates made (-1: bad input).
    """
    views = solver_mod.buffer_views(IX, B)
    P, dq, active = views.P, views.dq, views.active
    model = solver_mod.kernels.model_views(F, IX)
    lower, upper = model[14], model[15]
    nq = q.shape[0]
    centre = P[solver_mod.P_SIZE:solver_mod.P_SIZE + nq]
    weight = P[solver_mod.P_SIZE + nq:solver_mod.P_SIZE + 2 * nq]
    psi = P[solver_mod.P_PSI]
    gain = P[solver_mod.P_CENTERING]
    cost = nullspace.posture_cost(q, lower, upper, centre, weight, psi)
    updates = 0
    for i in range(nq):
        active[i] = 1.0
    while updates < max_iterations:
        if solver_mod.solve_step(F, IX, B, q, targets) != solver_mod.STATUS_OK:
            updates = -1
            break
        updates += 1
        # a joint the update would take past a limit stops where it is and leaves the task
        # (its column and its share of z zeroed), then the update is made again
        clamped = False
        for i in range(nq):
            if active[i] != 0.0 and (q[i] + dq[i] > upper[i] or q[i] + dq[i] < lower[i]):
                active[i] = 0.0
                clamped = True
        if clamped:
            continue
        largest = 0.0
        for i in range(nq):
            work[i] = q[i]
            q[i] += dq[i]
            largest = max(largest, abs(dq[i]))
        after = nullspace.posture_cost(q, lower, upper, centre, weight, psi)
        if after > cost:
            for i in range(nq):
                q[i] = work[i]
            P[solver_mod.P_CENTERING] *= 0.5
        else:
            cost = after
        if largest <= step_tolerance:
            break
    P[solver_mod.P_CENTERING] = 0.0
    for _ in range(CORRECTIONS if updates >= 0 else 0):
        solver_mod.solve_step(F, IX, B, q, targets)
        for i in range(nq):
            q[i] = min(upper[i], max(lower[i], q[i] + dq[i]))
    P[solver_mod.P_CENTERING] = gain
    for i in range(nq):
        active[i] = 1.0
    return updates


class PostureRefinement:
    """
    Parent's control term applied to a solution (module docstring).

    ``posture_target`` [rad] (default: the middle of each range), ``posture_weights``
    (alpha_i [-], default 1) and ``posture_exponent`` (psi [-], >= 1) as in
    :class:`~ik_control.ik.solver.SolverConfig`; ``gain`` (alpha of SAM eq. 17 [-], > 0)
    scales the nullspace step; ``config`` is the law iterated (its other settings).
    """

    def __init__(self, model, config, posture_target=(), posture_weights=(),
                 posture_exponent=2.0, gain=0.1, max_iterations=2000, step_tolerance=1e-7):
        if not (np.isfinite(gain) and gain > 0.0):
            raise InputError(f'posture gain must be a finite number > 0, got {gain}')
        if int(max_iterations) < 1 or not step_tolerance > 0.0:
            raise InputError('posture max_iterations must be >= 1 and step_tolerance > 0')
        self.model = model
        self.solver = VelocitySolver(model, replace(
            config, centering_gain=float(gain), posture_target=tuple(posture_target),
            posture_weights=tuple(posture_weights), posture_exponent=float(posture_exponent),
            manipulability_gain=0.0))
        P, nq = self.solver.P, model.nq
        self.target = P[solver_mod.P_SIZE:solver_mod.P_SIZE + nq].copy()
        self.weights = P[solver_mod.P_SIZE + nq:].copy()
        self.exponent = float(posture_exponent)
        self.max_iterations = int(max_iterations)
        self.step_tolerance = float(step_tolerance)
        self._work = np.zeros(model.nq)

    def cost(self, q):
        """Parent's ``H`` at ``q`` (:func:`~ik_control.ik.nullspace.posture_cost`) [-]."""
        return nullspace.posture_cost(np.asarray(q, dtype=float), self.model.lower,
                                      self.model.upper, self.target, self.weights,
                                      self.exponent)

    def refine(self, q, targets):
        """
        Return ``(q', updates, position_error, rotation_error)``: ``q`` moved down ``H``.

        ``targets`` (ne x 4 x 4) are the solution's targets; the errors are the largest
        effector position [m] and rotation [rad] errors at ``q'`` (the law holds them at
        the solution's level; the caller decides whether they are within its tolerance).
        """
        q = np.array(q, dtype=float)
        targets = np.ascontiguousarray(targets, dtype=float)
        self.solver.reset_targets()
        updates = descend(self.model.packed_f, self.model.packed_i, self.solver.B, q, targets,
                          self.max_iterations, self.step_tolerance, self._work)
        if updates < 0:
            raise InputError('q and targets must be finite')
        self.solver.step(q, targets)
        return (q, int(updates), float(np.max(self.solver.err_pos)),
                float(np.max(self.solver.err_rot)))

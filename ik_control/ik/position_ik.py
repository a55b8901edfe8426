"""
Position IK: the velocity law iterated to tolerance inside joint limits, with restarts.

Buss sec. 2, mode (ii): "the joint angles are updated iteratively until a value of q is
obtained that is sufficiently close to a solution". Each iteration is one
:func:`ik_control.ik.solver.solve_step` followed by clamping ``q`` into the joint limits.
An attempt stops when every effector is within tolerance, when it stalls (the error has
not fallen by 1 % over ``stall_iterations``), or after ``max_iterations``; then it restarts
from a random configuration inside the limits, until the time budget is spent.
"""

from dataclasses import dataclass, field
import time

from ik_control.ik import solver as solver_mod
from ik_control.ik.solver import SolverConfig, VelocitySolver
from ik_control.validation import InputError
from numba import njit
import numpy as np


@dataclass
class IkResult:
    """Outcome of :func:`solve_position`: joint values and the errors reached."""

    q: np.ndarray
    success: bool
    position_error: float       # largest effector position error [m]
    rotation_error: float       # largest effector rotation error [rad]
    iterations: int
    restarts: int
    seconds: float
    joint_names: tuple = field(default_factory=tuple)


@njit(cache=True, nogil=True)
def iterate(F, IX, B, q, targets, max_iterations, stall_iterations, tol, tol_rot):
    """
    Iterate the step from ``q`` (updated in place, kept inside limits).

    Returns (iterations, converged, max position error, max rotation error).
    """
    views = solver_mod.buffer_views(IX, B)
    dq, err_pos, err_rot = views[2], views[13], views[14]
    fv = solver_mod.kernels.model_views(F, IX)
    lower, upper = fv[14], fv[15]
    best = np.inf
    best_at = 0
    worst_p = np.inf
    worst_r = np.inf
    for it in range(max_iterations):
        solver_mod.solve_step(F, IX, B, q, targets)
        worst_p = 0.0
        worst_r = 0.0
        for f in range(err_pos.shape[0]):
            worst_p = max(worst_p, err_pos[f])
            worst_r = max(worst_r, err_rot[f])
        if worst_p <= tol and worst_r <= tol_rot:
            return it, True, worst_p, worst_r
        total = worst_p + worst_r
        if total < 0.99 * best:
            best = total
            best_at = it
        elif it - best_at > stall_iterations:
            return it, False, worst_p, worst_r
        for i in range(q.shape[0]):
            v = q[i] + dq[i]
            q[i] = min(upper[i], max(lower[i], v))
    return max_iterations, False, worst_p, worst_r


class PositionIk:
    """Reusable position-IK solver for one robot model (buffers allocated once)."""

    def __init__(self, model, config=None, tolerance=1e-5, rotation_tolerance=1e-5,
                 max_iterations=100, stall_iterations=10):
        self.model = model
        # Near-Gauss-Newton steps: restarts handle the singular cases that damping would
        # only slow down (measured with `ik_control bench ik`).
        self.config = config or SolverConfig(damping=1e-4, adaptive_damping=False,
                                             clamp_error=0.5, clamp_error_rotation=1.0,
                                             max_joint_step=1.0, orientation_weight=0.5)
        self.solver = VelocitySolver(model, self.config)
        self.tolerance = tolerance
        self.rotation_tolerance = rotation_tolerance
        self.max_iterations = max_iterations
        self.stall_iterations = stall_iterations

    def solve(self, targets, q_seed=None, time_budget=0.005, rng=None, max_restarts=None):
        """
        Solve for ``targets`` (ne x 4 x 4) from ``q_seed`` (default: middle of the limits).

        Restarts from uniform random configurations until ``time_budget`` [s] is spent.
        """
        m = self.model
        targets = np.ascontiguousarray(targets, dtype=float)
        if targets.shape != (len(m.end_effectors), 4, 4) or not np.all(np.isfinite(targets)):
            raise InputError(f'targets must be finite, shape ({len(m.end_effectors)}, 4, 4)')
        rng = np.random.default_rng() if rng is None else rng
        q = m.center.copy() if q_seed is None else np.clip(
            np.asarray(q_seed, dtype=float), m.lower, m.upper)
        start = time.perf_counter()
        best = None
        iterations = 0
        restarts = 0
        while True:
            it, ok, ep, er = iterate(m.packed_f, m.packed_i, self.solver.B, q, targets,
                                     self.max_iterations, self.stall_iterations,
                                     self.tolerance, self.rotation_tolerance)
            iterations += it
            if best is None or ep + er < best[1] + best[2]:
                best = (q.copy(), ep, er)
            elapsed = time.perf_counter() - start
            if ok or elapsed >= time_budget or (max_restarts is not None
                                                and restarts >= max_restarts):
                break
            restarts += 1
            q = m.random_configurations(1, rng)[0]
        q_best = best[0]
        seconds = time.perf_counter() - start
        ep, er = self.errors(q_best, targets)
        ok = ep <= self.tolerance and er <= self.rotation_tolerance
        return IkResult(q_best, bool(ok), ep, er, iterations, restarts, seconds, m.joint_names)

    def errors(self, q, targets):
        """Largest effector position [m] and rotation [rad] errors at ``q``."""
        self.solver.step(q, targets)
        return float(np.max(self.solver.err_pos)), float(np.max(self.solver.err_rot))


def solve_position(model, targets, q_seed=None, time_budget=0.005, **kwargs):
    """One-shot convenience wrapper around :class:`PositionIk`."""
    return PositionIk(model, **kwargs).solve(targets, q_seed, time_budget)

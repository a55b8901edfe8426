"""
Position IK: joint values that put every end effector on its target, inside the joint limits.

Buss sec. 2, mode (ii): "the joint angles are updated iteratively until a value of q is
obtained that is sufficiently close to a solution". Two ways of iterating:

* ``method='lm'`` (default): Levenberg-Marquardt on the pose error with joint-limit-aware
  steps and Nielsen's damping updates (:mod:`ik_control.ik.bounded_lm`), all attempts
  of one solve in compiled code;
* ``method='law'``: the velocity law of :mod:`ik_control.ik.solver` iterated, each
  update :func:`ik_control.ik.solver.solve_step` followed by clamping ``q`` into the
  limits (:func:`iterate`; an attempt stalls when its error has not fallen by 1 % over
  ``stall_iterations``).

An attempt starts from the seed (default: the middle of the joint ranges); when it stops
without converging, the next starts from a uniform random configuration inside the
limits, until one converges or the time budget is spent. The result is the converged
configuration, or else the best one found. Success means every effector within
``tolerance`` [m] of its target position and, for pose effectors, within
``rotation_tolerance`` [rad] of its orientation (the angle of ``R_d R^T``).
"""

from dataclasses import dataclass, field
import time

from ik_control.ik import bounded_lm
from ik_control.ik import solver as solver_mod
from ik_control.ik.bounded_lm import LmSettings
from ik_control.ik.solver import SolverConfig, VelocitySolver
from ik_control.validation import InputError
from numba import njit
import numpy as np

METHODS = ('lm', 'law')
# Near-Gauss-Newton steps for the iterated law: restarts handle the singular cases that
# damping would only slow down.
LAW_CONFIG = SolverConfig(damping=1e-4, adaptive_damping=False, clamp_error=0.5,
                          clamp_error_rotation=1.0, max_joint_step=1.0, orientation_weight=0.5)
CHUNK_SECONDS = 2.5e-4   # longest compiled call between two looks at the clock [s]
MIN_CHUNK = 10           # fewest iterations per compiled call
SEEDS_PER_CALL = 16      # random restart configurations handed to one compiled call


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
    rejected: int = 0           # solutions a caller's check refused (IkFallback.accept)


@njit(cache=True, nogil=True)
def iterate(packed_f, packed_i, B, q, targets, max_iterations, stall_iterations, tol, tol_rot):
    """
    Iterate the velocity law from ``q`` (updated in place, kept inside limits).

    Returns (iterations, converged, max position error, max rotation error).
    """
    views = solver_mod.buffer_views(packed_i, B)
    dq, err_pos, err_rot = views.dq, views.err_pos, views.err_rot
    fv = solver_mod.kernels.model_views(packed_f, packed_i)
    lower, upper = fv[14], fv[15]
    best = np.inf
    best_at = 0
    worst_p = np.inf
    worst_r = np.inf
    for it in range(max_iterations):
        solver_mod.solve_step(packed_f, packed_i, B, q, targets)
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
    """
    Reusable position-IK solver for one robot model (buffers allocated once).

    ``method`` is ``'lm'`` or ``'law'`` (module docstring); ``config`` is the
    :class:`SolverConfig` of the iterated law (``'law'``; default :data:`LAW_CONFIG`),
    ``settings`` the :class:`LmSettings` of ``'lm'``. ``max_iterations`` and
    ``stall_iterations`` (default 5 for ``'lm'``, 10 for ``'law'``) bound one attempt.
    ``clock`` is the time source [s] of the time budget (e.g. ``time.process_time`` to
    count only this process's CPU time on a loaded machine).
    """

    def __init__(self, model, config=None, tolerance=1e-5, rotation_tolerance=1e-5,
                 max_iterations=100, stall_iterations=None, method='lm', settings=None,
                 clock=time.perf_counter, margin=0.0):
        if method not in METHODS:
            raise InputError(f"position IK method '{method}' is not one of {list(METHODS)}")
        for name, value in (('tolerance', tolerance), ('rotation_tolerance', rotation_tolerance)):
            if not np.isfinite(value) or value <= 0.0:
                raise InputError(f'position IK {name} must be a finite number > 0, got {value}')
        if not (np.isfinite(margin) and 0.0 <= margin
                and np.all(2.0 * margin < model.upper - model.lower)):
            raise InputError(f'position IK margin must be >= 0 and leave every joint a range, '
                             f'got {margin}')
        self.model = model
        self.method = method
        self.clock = clock
        # the search stays inside the limits less ``margin`` (a controller's position_margin)
        self.margin = float(margin)
        self._packed_f = (model.packed_f if margin == 0.0 else
                          model.packed_within(model.lower + margin, model.upper - margin)[0])
        self.config = config or LAW_CONFIG
        self.solver = VelocitySolver(model, self.config)
        self.settings = settings or LmSettings()
        self.tolerance = tolerance
        self.rotation_tolerance = rotation_tolerance
        self.max_iterations = int(max_iterations)
        self.stall_iterations = int(stall_iterations if stall_iterations is not None
                                    else (5 if method == 'lm' else 10))
        if self.max_iterations < 1 or self.stall_iterations < 1:
            raise InputError('position IK max_iterations and stall_iterations must be >= 1')
        packed_i = model.packed_i
        self._B = np.zeros(bounded_lm.buffer_size(packed_i))
        self._idx = np.zeros(model.nq, dtype=np.int64)
        views = bounded_lm.buffer_views(packed_i, self._B)
        self._P, self._S, self._q, self._q_best = views[0:4]
        self._P[:] = bounded_lm.pack_parameters(self.settings, tolerance, rotation_tolerance,
                                                self.max_iterations, self.stall_iterations)
        self._seconds_per_iteration = 3e-6   # refined by every solve
        self._center = model.center
        self._targets_shape = (len(model.end_effectors), 4, 4)
        self._rng = None

    def solve(self, targets, q_seed=None, time_budget=0.005, rng=None, max_restarts=None):
        """
        Solve for ``targets`` (ne x 4 x 4) from ``q_seed`` (default: middle of the limits).

        Restarts from uniform random configurations until ``time_budget`` [s] is spent
        (or after ``max_restarts`` restarts). Raises :class:`InputError` for a wrong shape
        or non-finite values.
        """
        m = self.model
        targets = np.ascontiguousarray(targets, dtype=float)
        if targets.shape != self._targets_shape:
            raise InputError(f'targets must be finite, shape {self._targets_shape}')
        if rng is None:
            rng = self._rng = self._rng or np.random.default_rng()
        q = self._center if q_seed is None else np.clip(
            np.asarray(q_seed, dtype=float), m.lower + self.margin, m.upper - self.margin)
        if q.shape != (m.nq,):
            raise InputError(f'q_seed must hold {m.nq} joint values')
        if self.method == 'law':
            if not (np.all(np.isfinite(targets)) and np.all(np.isfinite(q))):
                raise InputError('targets and q_seed must be finite')
            return self._solve_law(targets, q.copy(), time_budget, rng, max_restarts)
        return self._solve_lm(targets, q, time_budget, rng, max_restarts)

    def _solve_lm(self, targets, q, time_budget, rng, max_restarts):
        m = self.model
        clock = self.clock
        start = now = clock()
        deadline = start + time_budget
        S = self._S
        first = True
        while True:
            count = SEEDS_PER_CALL
            if max_restarts is not None:
                restarts = max(0, int(S[bounded_lm.S_ATTEMPTS]) - 1) if not first else 0
                count = max(0, min(count, max_restarts - restarts))
                if count == 0 and not first:
                    break
            # iterations that fit in the time left (at least MIN_CHUNK: the deadline is
            # checked between calls, so it may be passed by that much)
            budget = max(MIN_CHUNK, int(min(CHUNK_SECONDS, deadline - now)
                                        / self._seconds_per_iteration))
            before = 0.0 if first else S[bounded_lm.S_ITERATIONS]
            status = bounded_lm.search(self._packed_f, m.packed_i, self._B, self._idx, targets,
                                       rng.random((count, m.nq)), q, first, budget)
            if status < 0:
                raise InputError('targets and q_seed must be finite')
            first = False
            after = clock()
            done = S[bounded_lm.S_ITERATIONS] - before
            if done >= MIN_CHUNK:
                # running estimate, bounded so that one call stretched by preemption cannot
                # shrink the next budgets to nothing
                estimate = self._seconds_per_iteration + 0.5 * (
                    (after - now) / done - self._seconds_per_iteration)
                self._seconds_per_iteration = min(max(estimate, 1e-7), 2e-5)
            now = after
            if status or now >= deadline:
                break
        return IkResult(self._q_best.copy(), bool(status), float(S[bounded_lm.S_POSITION]),
                        float(S[bounded_lm.S_ROTATION]), int(S[bounded_lm.S_ITERATIONS]),
                        int(S[bounded_lm.S_ATTEMPTS]) - 1, clock() - start, m.joint_names)

    def _solve_law(self, targets, q, time_budget, rng, max_restarts):
        m = self.model
        start = self.clock()
        best = None
        iterations = 0
        restarts = 0
        while True:
            it, ok, ep, er = iterate(self._packed_f, m.packed_i, self.solver.B, q, targets,
                                     self.max_iterations, self.stall_iterations,
                                     self.tolerance, self.rotation_tolerance)
            iterations += it
            if best is None or ep + er < best[1] + best[2]:
                best = (q.copy(), ep, er)
            elapsed = self.clock() - start
            if ok or elapsed >= time_budget or (max_restarts is not None
                                                and restarts >= max_restarts):
                break
            restarts += 1
            q = m.random_configurations(1, rng)[0].clip(m.lower + self.margin,
                                                        m.upper - self.margin)
        q_best = best[0]
        seconds = self.clock() - start
        ep, er = self.errors(q_best, targets)
        ok = ep <= self.tolerance and er <= self.rotation_tolerance
        return IkResult(q_best, bool(ok), ep, er, iterations, restarts, seconds, m.joint_names)

    def errors(self, q, targets):
        """Return the largest effector position [m] and rotation [rad] errors at ``q``."""
        self.solver.step(np.ascontiguousarray(q, dtype=float),
                         np.ascontiguousarray(targets, dtype=float))
        return float(np.max(self.solver.err_pos)), float(np.max(self.solver.err_rot))


def solve_position(model, targets, q_seed=None, time_budget=0.005, **kwargs):
    """Solve once with a new :class:`PositionIk` (``kwargs`` go to its constructor)."""
    return PositionIk(model, **kwargs).solve(targets, q_seed, time_budget)

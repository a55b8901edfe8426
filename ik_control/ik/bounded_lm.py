"""
Levenberg-Marquardt pose IK inside joint limits, compiled: the core of the position IK.

For end-effector targets ``T_d`` (ne x 4 x 4, base frame) the stacked error is, per
effector, ``e_p = p_d - p(q)`` [m] and, for pose effectors, ``e_r = w log(R_d R(q)^T)``
(base axes, ``w`` = ``orientation_weight`` [m/rad]); ``J`` is the matching Jacobian
(angular rows times ``w``) and the cost is ``F(q) = |e|^2``. One iteration:

1. step: ``(J^T J + lambda I) d = J^T e`` (Levenberg's damped Gauss-Newton step). Joints
   whose ``q_i + d_i`` would leave ``[lower_i, upper_i]`` are fixed at the bound
   (``d_i = bound - q_i``) and the free joints are solved again against the remaining
   error ``e - J_c d_c``, until no free joint leaves its range; then ``d`` is scaled so
   that ``max |d_i| <= max_joint_step``. Every trial point is inside the limits, so
   an attempt slides along the limits instead of being clamped back onto them.
2. gain ratio ``rho = (F(q) - F(q + d)) / (|e|^2 - |e - J d|^2)``; accept the step when
   ``rho > 0`` and update the damping as Nielsen: ``lambda *= max(1/3, 1 - (2 rho - 1)^3)``,
   ``nu = 2``; otherwise ``lambda *= nu``, ``nu *= 2`` (Madsen, Nielsen & Tingleff,
   *Methods for non-linear least squares problems*, 2004, sec. 3.2), never below
   ``damping_min`` (``J^T J`` is singular for a redundant arm). The smooth update
   crawls along the narrow valleys near singular solutions where halving-or-tenfold
   updates keep rejecting steps.

An attempt ends converged (every effector within the position [m] and rotation [rad]
tolerances), or given up: ``lambda > damping_max``, or ``F`` has not fallen below
``stall_ratio`` times its value ``stall_iterations`` iterations earlier, or
``max_iterations``. :func:`search` runs attempts from a seed and then from uniform random
configurations inside the limits until one converges or an iteration budget is spent;
the caller turns its time budget into iteration budgets.
"""

from dataclasses import asdict, dataclass

from ik_control.ik import linalg
from ik_control.ik.pose_error import ERROR_LOG3, pose_error
from ik_control.kinematics import buffers, kernels
from ik_control.validation import InputError
from numba import njit
import numpy as np


@dataclass
class LmSettings:
    """Parameters of the Levenberg-Marquardt attempts; units in brackets."""

    orientation_weight: float = 0.5     # w, weight of rotation errors [m/rad]
    damping: float = 1e-2               # lambda at the start of an attempt [m^2]
    damping_min: float = 1e-9           # floor of lambda (J^T J is singular when nq > m) [m^2]
    damping_max: float = 1e3            # give up the attempt above this lambda [m^2]
    max_joint_step: float = 1.0         # largest joint change per iteration [rad or m]
    stall_ratio: float = 0.5            # required fall of F over stall_iterations

    def validate(self):
        """Raise :class:`InputError` naming the first bad field."""
        for name, value in asdict(self).items():
            if not np.isfinite(value) or value <= 0.0:
                raise InputError(f'position IK {name} must be a finite number > 0, got {value}')
        if self.stall_ratio >= 1.0:
            raise InputError(f'position IK stall_ratio must be < 1, got {self.stall_ratio}')
        return self


(P_TOL, P_TOL_ROT, P_WROT, P_LAM0, P_LAM_MIN, P_LAM_MAX, P_MAX_STEP, P_MAX_ITER,
 P_STALL_ITERS, P_STALL_RATIO, P_SIZE) = range(11)
# statistics written by search: iterations, attempts, converged (0/1), and the cost,
# largest position error [m] and largest rotation error [rad] at the best configuration
S_ITERATIONS, S_ATTEMPTS, S_CONVERGED, S_COST, S_POSITION, S_ROTATION, S_SIZE = range(7)


def pack_parameters(settings, tolerance, rotation_tolerance, max_iterations, stall_iterations):
    """Return the float array (layout ``P_*``) that :func:`search` reads."""
    settings.validate()
    p = np.zeros(P_SIZE)
    p[P_TOL] = tolerance
    p[P_TOL_ROT] = rotation_tolerance
    p[P_WROT] = settings.orientation_weight
    p[P_LAM0] = settings.damping
    p[P_LAM_MIN] = settings.damping_min
    p[P_LAM_MAX] = settings.damping_max
    p[P_MAX_STEP] = settings.max_joint_step
    p[P_MAX_ITER] = max_iterations
    p[P_STALL_ITERS] = stall_iterations
    p[P_STALL_RATIO] = settings.stall_ratio
    return p


@njit(cache=True, nogil=True)
def buffer_size(packed_i):
    """Return the length of the float buffer of :func:`search` (see :func:`buffer_views`)."""
    nq, m = packed_i[2], packed_i[3]
    return (P_SIZE + S_SIZE + 2 * kernels.work_size(packed_i) + 2 * m + 2 * nq * nq + 7 * nq + 2
            + 9)


@njit(cache=True, nogil=True)
def buffer_views(packed_i, B):
    """
    Return the views of the float buffer ``B``.

    P (parameters), S (statistics), q (current and seed configuration), q_best, Wa and Wb
    (two kinematics workspaces), e_a and e_b (errors), A, M (nq x nq), g, rhs, dq,
    q_trial, free (1.0 for a joint not fixed at a bound), errs (position, rotation) and R3.
    """
    nq, m = packed_i[2], packed_i[3]
    ws = kernels.work_size(packed_i)
    P, o = buffers.vector(B, 0, P_SIZE)
    S, o = buffers.vector(B, o, S_SIZE)
    Wa, o = buffers.vector(B, o, ws)
    Wb, o = buffers.vector(B, o, ws)
    A, o = buffers.matrix(B, o, nq, nq)
    M, o = buffers.matrix(B, o, nq, nq)
    R3, o = buffers.matrix(B, o, 3, 3)
    e_a, o = buffers.vector(B, o, m)
    e_b, o = buffers.vector(B, o, m)
    q, o = buffers.vector(B, o, nq)
    q_best, o = buffers.vector(B, o, nq)
    g, o = buffers.vector(B, o, nq)
    rhs, o = buffers.vector(B, o, nq)
    dq, o = buffers.vector(B, o, nq)
    q_trial, o = buffers.vector(B, o, nq)
    free, o = buffers.vector(B, o, nq)
    errs, o = buffers.vector(B, o, 2)
    return P, S, q, q_best, Wa, Wb, e_a, e_b, A, M, g, rhs, dq, q_trial, free, errs, R3


@njit(cache=True, nogil=True)
def evaluate(model, work, q, targets, w_rot, e, errs, R3):
    """
    Return ``F(q) = |e|^2`` after computing FK, ``e`` and the weighted ``J`` into ``work``.

    ``errs`` receives the largest effector position [m] and rotation [rad] errors.
    """
    kernels.kinematics_from_views(model, work, q, False, True)
    frame_T = work[2]
    J = work[4]
    row_frame = model[12]
    m = e.shape[0]
    cost = 0.0
    ep = 0.0
    er = 0.0
    r0 = 0
    for f in range(frame_T.shape[0]):
        position_only = not (r0 + 3 < m and row_frame[r0 + 3] == f)
        dim = 3 if position_only else 6
        seg = e[r0:r0 + dim]
        pose_error(frame_T[f], targets[f], ERROR_LOG3, position_only, seg, R3)
        d2 = seg[0] * seg[0] + seg[1] * seg[1] + seg[2] * seg[2]
        cost += d2
        ep = max(ep, np.sqrt(d2))
        if not position_only:
            r2 = seg[3] * seg[3] + seg[4] * seg[4] + seg[5] * seg[5]
            er = max(er, np.sqrt(r2))
            cost += w_rot * w_rot * r2
            for r in range(r0 + 3, r0 + 6):
                e[r] *= w_rot
                for c in range(J.shape[1]):
                    J[r, c] *= w_rot
        r0 += dim
    errs[0] = ep
    errs[1] = er
    return cost


@njit(cache=True, nogil=True)
def _solve_free(A, g, lam, dq, M, rhs, idx, free, n, nf):
    """Solve ``(A_ff + lam I) d_f = g_f - A_fc d_c`` for the ``nf`` free joints into ``dq``."""
    # contiguous nf x nf view of M's storage (a strided M[:nf, :nf] is slower)
    L = M.reshape(n * n)[:nf * nf].reshape((nf, nf))
    for a in range(nf):
        ia = idx[a]
        s = g[ia]
        if nf < n:
            for c in range(n):
                if free[c] < 0.5:
                    s -= A[ia, c] * dq[c]
        rhs[a] = s
        for b in range(a + 1):
            L[a, b] = A[ia, idx[b]]
        L[a, a] += lam
    if not linalg.cholesky_inplace(L):
        return False
    x = rhs[:nf]
    linalg.cholesky_solve(L, x, x)
    for a in range(nf):
        dq[idx[a]] = x[a]
    return True


@njit(cache=True, nogil=True)
def bounded_step(J, e, q, lower, upper, lam, max_step, A, M, g, rhs, idx, free, dq):
    """
    Write the damped step ``d`` with joints that would leave their range fixed at the bound.

    ``(J_f^T J_f + lam I) d_f = J_f^T (e - J_c d_c)`` over the free joints ``f``; the joints
    ``c`` fixed at a bound keep ``d_c = bound - q_c`` (module docstring, step 1). Returns
    False (and ``d = 0``) if the damped matrix is not positive definite (non-finite input).
    """
    m, n = J.shape
    for r in range(n):
        s = 0.0
        for k in range(m):
            s += J[k, r] * e[k]
        g[r] = s
        for c in range(r + 1):
            s = 0.0
            for k in range(m):
                s += J[k, r] * J[k, c]
            A[r, c] = s
            A[c, r] = s
    for i in range(n):
        free[i] = 1.0
        idx[i] = i
        dq[i] = 0.0
    nf = n
    while nf > 0:
        if not _solve_free(A, g, lam, dq, M, rhs, idx, free, n, nf):
            dq[:] = 0.0
            return False
        hit = False
        for a in range(nf):
            i = idx[a]
            v = q[i] + dq[i]
            if v > upper[i]:
                dq[i] = upper[i] - q[i]
                free[i] = 0.0
                hit = True
            elif v < lower[i]:
                dq[i] = lower[i] - q[i]
                free[i] = 0.0
                hit = True
        if not hit:
            break
        nf = 0
        for i in range(n):
            if free[i] > 0.5:
                idx[nf] = i
                nf += 1
    if max_step > 0.0:
        big = 0.0
        for i in range(n):
            big = max(big, abs(dq[i]))
        if big > max_step:
            s = max_step / big
            for i in range(n):
                dq[i] *= s
    return True


@njit(cache=True, nogil=True)
def attempt(model, views, idx, wa, wb, q, targets, max_iter):
    """
    Run one Levenberg-Marquardt descent from ``q`` (updated in place, inside the limits).

    Returns (iterations, converged, cost, position error [m], rotation error [rad]) at
    the final ``q`` (module docstring for the updates and the stopping rules).
    """
    P, S, _, _, _, _, e_a, e_b, A, M, g, rhs, dq, q_trial, free, errs, R3 = views
    lower, upper = model[14], model[15]
    tol, tol_rot, w_rot = P[P_TOL], P[P_TOL_ROT], P[P_WROT]
    lam = P[P_LAM0]
    lam_min, lam_max, max_step = P[P_LAM_MIN], P[P_LAM_MAX], P[P_MAX_STEP]
    stall_iters = int(P[P_STALL_ITERS])
    stall_ratio = P[P_STALL_RATIO]
    n = q.shape[0]
    nu = 2.0
    cur = wa
    alt = wb
    e = e_a
    e2 = e_b
    cost = evaluate(model, cur, q, targets, w_rot, e, errs, R3)
    ep = errs[0]
    er = errs[1]
    check_cost = cost
    check_at = 0
    for it in range(max_iter):
        if ep <= tol and er <= tol_rot:
            return it, True, cost, ep, er
        J = cur[4]
        if not bounded_step(J, e, q, lower, upper, lam, max_step, A, M, g, rhs, idx, free, dq):
            return it + 1, False, cost, ep, er
        # predicted cost |e - J d|^2 of the linear model
        predicted = 0.0
        for r in range(J.shape[0]):
            s = e[r]
            for c in range(n):
                s -= J[r, c] * dq[c]
            predicted += s * s
        for i in range(n):
            q_trial[i] = q[i] + dq[i]
        c2 = evaluate(model, alt, q_trial, targets, w_rot, e2, errs, R3)
        gain = cost - predicted
        rho = (cost - c2) / gain if gain > 0.0 else -1.0
        if rho > 0.0:
            q[:] = q_trial
            cost = c2
            ep = errs[0]
            er = errs[1]
            cur, alt = alt, cur
            e, e2 = e2, e
            t = 2.0 * rho - 1.0
            lam = max(lam * max(1.0 / 3.0, 1.0 - t * t * t), lam_min)
            nu = 2.0
        else:
            lam *= nu
            nu *= 2.0
            if lam > lam_max:
                return it + 1, False, cost, ep, er
        if it - check_at >= stall_iters:
            if cost > stall_ratio * check_cost:
                return it + 1, False, cost, ep, er
            check_cost = cost
            check_at = it
    return max_iter, ep <= tol and er <= tol_rot, cost, ep, er


@njit(cache=True, nogil=True)
def search(packed_f, packed_i, B, idx, targets, seeds, q0, first, budget):
    """
    Run attempts until one converges or ``budget`` iterations are spent.

    With ``first`` the statistics ``S`` are reset and the first attempt starts from
    ``q0``; the others start from ``lower + seeds[k] (upper - lower)`` (``seeds`` uniform
    in [0, 1), one row per restart). The best configuration so far is kept in ``q_best``
    with its errors in ``S``, across calls. Returns 1 when solved, 0 when not (yet), -1
    (nothing done) when ``targets`` or ``q0`` hold non-finite values.
    """
    model = kernels.model_views(packed_f, packed_i)
    views = buffer_views(packed_i, B)
    P, S, q, q_best, Wa, Wb = views[0:6]
    wa = kernels.work_views(packed_i, Wa)
    wb = kernels.work_views(packed_i, Wb)
    lower, upper = model[14], model[15]
    nq = q.shape[0]
    if first:
        if not (np.all(np.isfinite(targets)) and np.all(np.isfinite(q0))):
            return -1
        S[:] = 0.0
        S[S_COST] = np.inf
        q[:] = q0
        q_best[:] = q0
    max_iter = int(P[P_MAX_ITER])
    used = 0
    k = 0
    while used < budget:
        if not first:
            if k >= seeds.shape[0]:
                break
            for i in range(nq):
                q[i] = lower[i] + seeds[k, i] * (upper[i] - lower[i])
            k += 1
        first = False
        it, ok, cost, ep, er = attempt(model, views, idx, wa, wb, q, targets,
                                       min(max_iter, budget - used))
        used += it
        S[S_ATTEMPTS] += 1.0
        if ok or cost < S[S_COST]:
            S[S_COST] = cost
            S[S_POSITION] = ep
            S[S_ROTATION] = er
            q_best[:] = q
        if ok:
            S[S_CONVERGED] = 1.0
            break
    S[S_ITERATIONS] += used
    return 1 if S[S_CONVERGED] > 0.5 else 0

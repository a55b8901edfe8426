"""
One velocity-IK update for all end effectors: ``solve_step`` and its configuration.

One call does, in compiled code and without allocation (Buss sec. 2-6, SAM sec. IV-V):

1. forward kinematics and the stacked Jacobian (at the target positions instead of the
   effector positions for Buss's *alternate Jacobian*);
2. the error per end effector (:mod:`ik_control.ik.pose_error`), angular rows weighted by
   ``orientation_weight`` [m/rad] in both ``e`` and ``J``;
3. ClampMag of each effector's error (Buss sec. 2): ``e_i = e_i`` if ``|e_i| <= D_max``
   else ``D_max e_i / |e_i|``; with ``adaptive_clamp`` the per-effector bound
   ``D_max,i = beta_i + D_max`` where ``beta_i`` is how far the previous update moved
   effector ``i`` closer to its target, and ``D_max,i = inf`` right after a target jump;
4. the law: transpose, pseudoinverse, DLS (fixed or adaptive damping), DLS via SVD, SDLS
   (:mod:`ik_control.ik.laws`);
5. the nullspace term of SAM eq. (16) with joint centering (eq. 17-18) and/or the
   manipulability gradient, through the exact (undamped) nullspace projector
   (:mod:`ik_control.ik.nullspace`);
6. ClampMaxAbs of the joint change (Buss sec. 8: "clamp the maximum angle change in a
   single update").

Joint limits are the caller's: the controller and the position IK clamp differently.
"""

from typing import NamedTuple

from ik_control.ik import laws, linalg, nullspace
from ik_control.ik.pose_error import pose_error
from ik_control.ik.solver_config import (  # noqa: F401 (re-exported)
    METHODS, P_ADAPTIVE, P_ADAPTIVE_CLAMP, P_ALTERNATE, P_CENTERING, P_DMAX, P_DMAX_ROT,
    P_EPSILON, P_ERROR_MODE, P_GAIN, P_GAMMA_MAX, P_LAMBDA0, P_LAMBDA_MAX, P_MANIP, P_MAX_STEP,
    P_METHOD, P_ORIENT_W, P_PINV_THRESHOLD, P_PSI, P_SIZE, SolverConfig)
from ik_control.kinematics import buffers, kernels
from ik_control.validation import InputError
from numba import njit
import numpy as np

_T, _PINV, _DLS, _DLS_SVD, _SDLS = range(5)

# info slots written by solve_step
STATUS_OK, STATUS_BAD_INPUT = 0, 1
_F64 = np.dtype(np.float64)

# (sigma_min is -1 when the law did not need it: transpose, pseudoinverse, SDLS without
# adaptive damping or nullspace goals)
INFO_SIGMA_MIN, INFO_LAMBDA2, INFO_STEP_CLAMPED, INFO_ERROR_CLAMPED, INFO_SIZE = range(5)
#: Inverse-iteration steps for sigma_min (laws.smallest_singular_value) [-].
SIGMA_ITERATIONS = 5


class SolverViews(NamedTuple):
    """
    Named views of the solver buffer ``B`` (:func:`buffer_views`), in buffer order.

    ``P``: the configuration (``P_*``); ``W``, ``W2``: kinematics workspaces (the second
    for the manipulability gradient); ``L`` (m x m): the Cholesky factor of ``J J^T +
    lambda^2 I``; ``R3`` (3 x 3): scratch; ``e`` (m): the weighted, clamped error times the
    gain; ``wm``, ``wm2`` (m): scratch; ``dq`` (nq): the result; ``wn``, ``wn2``, ``z``,
    ``dq_ns`` (nq): the nullspace term's work; ``dmax``, ``prev_dist``, ``err_pos``,
    ``err_rot`` (ne): ClampMag's bound, the last error for the adaptive clamp, the
    position [m] and rotation [rad] errors; ``info`` (``INFO_*``); ``active`` (nq): 1 for
    a joint the step may move, 0 for one held where it is; ``H`` (nq x m), ``beta`` (m):
    the work of the exact nullspace projector
    (:func:`ik_control.ik.nullspace.project_nullspace`).
    """

    P: np.ndarray
    W: np.ndarray
    W2: np.ndarray
    L: np.ndarray
    R3: np.ndarray
    e: np.ndarray
    wm: np.ndarray
    wm2: np.ndarray
    dq: np.ndarray
    wn: np.ndarray
    wn2: np.ndarray
    z: np.ndarray
    dq_ns: np.ndarray
    dmax: np.ndarray
    prev_dist: np.ndarray
    err_pos: np.ndarray
    err_rot: np.ndarray
    info: np.ndarray
    active: np.ndarray
    H: np.ndarray
    beta: np.ndarray


@njit(cache=True, nogil=True)
def buffer_size(IX):
    """Length of the solver buffer ``B`` (see :func:`buffer_views`)."""
    ne, nq, m = IX[1], IX[2], IX[3]
    return (P_SIZE + 2 * nq + 2 * kernels.work_size(IX) + m * m + 3 * m + 6 * nq + 4 * ne
            + INFO_SIZE + 9 + nq * m + m)


@njit(cache=True, nogil=True, inline='always')
def buffer_views(IX, B):
    """Return the :class:`SolverViews` of the solver buffer ``B``."""
    ne, nq, m = IX[1], IX[2], IX[3]
    ws = kernels.work_size(IX)
    P, o = buffers.vector(B, 0, P_SIZE + 2 * nq)
    W, o = buffers.vector(B, o, ws)
    W2, o = buffers.vector(B, o, ws)
    L, o = buffers.matrix(B, o, m, m)
    R3, o = buffers.matrix(B, o, 3, 3)
    e, o = buffers.vector(B, o, m)
    wm, o = buffers.vector(B, o, m)
    wm2, o = buffers.vector(B, o, m)
    dq, o = buffers.vector(B, o, nq)
    wn, o = buffers.vector(B, o, nq)
    wn2, o = buffers.vector(B, o, nq)
    z, o = buffers.vector(B, o, nq)
    dq_ns, o = buffers.vector(B, o, nq)
    dmax, o = buffers.vector(B, o, ne)
    prev_dist, o = buffers.vector(B, o, ne)
    err_pos, o = buffers.vector(B, o, ne)
    err_rot, o = buffers.vector(B, o, ne)
    info, o = buffers.vector(B, o, INFO_SIZE)
    active, o = buffers.vector(B, o, nq)
    H, o = buffers.matrix(B, o, nq, m)
    beta, o = buffers.vector(B, o, m)
    return SolverViews(P, W, W2, L, R3, e, wm, wm2, dq, wn, wn2, z, dq_ns, dmax, prev_dist,
                       err_pos, err_rot, info, active, H, beta)


@njit(cache=True, nogil=True)
def _manipulability_gradient(F, IX, W2, q, J_rows_scale, out, L):
    """Central-difference gradient of ``sqrt(det(J J^T))`` (J with weighted angular rows)."""
    h = 1e-6
    nq = q.shape[0]
    J2 = kernels.work_views(IX, W2)[4]
    for k in range(nq):
        w_plus = 0.0
        w_minus = 0.0
        for sgn in (1.0, -1.0):
            qk = q[k]
            q[k] = qk + sgn * h
            kernels.update_kinematics(F, IX, W2, q, False, True)
            q[k] = qk
            for r in range(J2.shape[0]):
                for c in range(nq):
                    J2[r, c] *= J_rows_scale[r]
            linalg.gram_damped(J2, 0.0, L)
            det = 1.0
            if linalg.cholesky_inplace(L):
                for i in range(L.shape[0]):
                    det *= L[i, i]
            else:
                det = 0.0
            if sgn > 0:
                w_plus = det
            else:
                w_minus = det
        out[k] = (w_plus - w_minus) / (2.0 * h)


@njit(cache=True, nogil=True, inline='always')
def task_error(P, model, work, v, q, targets):
    """
    Run steps 1-3 (module docstring): kinematics, each error, ClampMag, weighting.

    Writes the Jacobian into ``work`` (the columns of inactive joints zeroed, angular rows
    times ``orientation_weight``), and into ``v`` (:class:`SolverViews`): ``e`` = the
    clamped, weighted error times the gain, ``err_pos`` [m], ``err_rot`` [rad], ClampMag's
    bound per effector ``dmax`` (Buss sec. 2's ``D_max``, or ``beta_i + D_max`` with the
    adaptive clamp, infinite after a target jump), ``prev_dist`` and
    ``info[INFO_ERROR_CLAMPED]``.
    """
    q_tree, joint_T, frame_T, points, J, tmp = work
    row_frame = model[12]
    e, R3, active = v.e, v.R3, v.active
    err_pos, err_rot, dmax, prev_dist = v.err_pos, v.err_rot, v.dmax, v.prev_dist
    ne, m = frame_T.shape[0], e.shape[0]
    alternate = P[P_ALTERNATE] > 0.5
    if alternate:
        for f in range(ne):
            points[f, 0] = targets[f, 0, 3]
            points[f, 1] = targets[f, 1, 3]
            points[f, 2] = targets[f, 2, 3]
    kernels.kinematics_from_views(model, work, q, alternate, True)
    for k in range(q.shape[0]):
        if active[k] == 0.0:
            for r in range(m):
                J[r, k] = 0.0
    mode = int(P[P_ERROR_MODE])
    w_rot = P[P_ORIENT_W]
    d_max = P[P_DMAX]
    d_rot = P[P_DMAX_ROT]
    adaptive_clamp = P[P_ADAPTIVE_CLAMP] > 0.5
    error_clamped = 0.0
    r0 = 0
    for f in range(ne):
        position_only = True
        if r0 + 3 < m and row_frame[r0 + 3] == f:
            position_only = False
        dim = 3 if position_only else 6
        seg = e[r0:r0 + dim]
        pose_error(frame_T[f], targets[f], mode, position_only, seg, R3)
        dist = np.sqrt(seg[0] * seg[0] + seg[1] * seg[1] + seg[2] * seg[2])
        err_pos[f] = dist
        # ClampMag (Buss sec. 2), adaptive per-effector bound after jumps
        bound = d_max
        if adaptive_clamp and d_max > 0.0:
            if prev_dist[f] < 0.0:
                bound = np.inf
            else:
                beta = prev_dist[f] - dist
                bound = (beta if beta > 0.0 else 0.0) + d_max
            prev_dist[f] = dist
        dmax[f] = bound
        if bound > 0.0 and dist > bound:
            s = bound / dist
            seg[0] *= s
            seg[1] *= s
            seg[2] *= s
            error_clamped = 1.0
        if not position_only:
            rot = np.sqrt(seg[3] * seg[3] + seg[4] * seg[4] + seg[5] * seg[5])
            err_rot[f] = rot
            s = w_rot
            if d_rot > 0.0 and rot > d_rot:
                s *= d_rot / rot
                error_clamped = 1.0
            seg[3] *= s
            seg[4] *= s
            seg[5] *= s
            for r in range(r0 + 3, r0 + 6):
                for c in range(J.shape[1]):
                    J[r, c] *= w_rot
        else:
            err_rot[f] = 0.0
        r0 += dim
    gain = P[P_GAIN]
    for r in range(m):
        e[r] *= gain
    v.info[INFO_ERROR_CLAMPED] = error_clamped


@njit(cache=True, nogil=True, inline='always')
def damping(P, J, v):
    """
    Step 4a: the damping ``lambda^2`` the law uses, and ``sigma_min`` (-1 when not needed).

    The laws that need it (DLS, DLS via SVD, adaptive damping, a nullspace term) get the
    factor ``L`` of ``J J^T + lambda_0^2 I`` and ``sigma_min`` from it by inverse iteration
    (its eigenvalues are ``sigma_i^2 + lambda_0^2``: :func:`laws.smallest_singular_value`);
    with adaptive damping (:func:`laws.adaptive_damping`) ``L`` is refactored only when it
    adds to ``lambda_0`` near a singularity. Writes ``info[INFO_SIGMA_MIN]`` and
    ``info[INFO_LAMBDA2]``.
    """
    method = int(P[P_METHOD])
    lam2 = P[P_LAMBDA0] * P[P_LAMBDA0]
    sigma_min = -1.0
    if (method == _DLS or method == _DLS_SVD or P[P_ADAPTIVE] > 0.5 or P[P_CENTERING] > 0.0
            or P[P_MANIP] > 0.0):
        lam2 = laws.dls_factor(J, max(lam2, 1e-12), v.L)
        sigma_min = laws.smallest_singular_value(v.L, lam2, SIGMA_ITERATIONS, v.wm, v.wm2)
    if P[P_ADAPTIVE] > 0.5:
        lam2_adaptive = laws.adaptive_damping(sigma_min, P[P_LAMBDA0], P[P_LAMBDA_MAX],
                                              P[P_EPSILON])
        if lam2_adaptive > lam2:
            lam2 = laws.dls_factor(J, lam2_adaptive, v.L)
    v.info[INFO_SIGMA_MIN] = sigma_min
    v.info[INFO_LAMBDA2] = lam2
    return lam2


@njit(cache=True, nogil=True, inline='always')
def apply_law(P, J, lam2, v):
    """Step 4b: ``dq`` from ``e`` by the configured law (:mod:`ik_control.ik.laws`)."""
    method = int(P[P_METHOD])
    if method == _T:
        laws.transpose_step(J, v.e, v.dq, v.wm)
    elif method == _PINV:
        laws.pseudoinverse_step(J, v.e, P[P_PINV_THRESHOLD], v.dq)
    elif method == _DLS_SVD:
        laws.dls_svd_step(J, v.e, lam2, v.dq)
    elif method == _SDLS:
        laws.sdls_step(J, v.e, P[P_GAMMA_MAX], v.dq)
    else:
        laws.dls_apply(J, v.L, v.e, v.dq, v.wm)


@njit(cache=True, nogil=True, inline='always')
def add_nullspace_term(F, IX, P, model, J, v, q):
    """
    Step 5: ``dq += (I - J^+ J) z``, SAM eq. (16), through the exact projector.

    ``z`` is ``-centering_gain`` times the posture gradient (SAM eq. 17-18 with Parent's
    desired angles, weights and exponent: :func:`~ik_control.ik.nullspace.posture_gradient`)
    plus ``manipulability_gain`` times the manipulability gradient, zero for inactive joints.
    """
    c_gain = P[P_CENTERING]
    m_gain = P[P_MANIP]
    if not (c_gain > 0.0 or m_gain > 0.0):
        return
    z, wn = v.z, v.wn
    nq = q.shape[0]
    for i in range(nq):
        z[i] = 0.0
    if c_gain > 0.0:
        nullspace.posture_gradient(q, model[14], model[15], P[P_SIZE:P_SIZE + nq],
                                   P[P_SIZE + nq:P_SIZE + 2 * nq], P[P_PSI], wn)
        for i in range(nq):
            z[i] -= c_gain * wn[i]
    if m_gain > 0.0:
        # row weights used for J: 1 for linear rows, w_rot for angular rows
        row_component, w_rot, wm2 = model[13], P[P_ORIENT_W], v.wm2
        for r in range(wm2.shape[0]):
            wm2[r] = w_rot if row_component[r] >= 3 else 1.0
        _manipulability_gradient(F, IX, v.W2, q, wm2, wn, v.L)
        for i in range(nq):
            z[i] += m_gain * wn[i]
    for i in range(nq):
        z[i] *= v.active[i]
    nullspace.project_nullspace(J, z, v.dq_ns, v.H, v.beta)
    for i in range(nq):
        v.dq[i] += v.dq_ns[i]


@njit(cache=True, nogil=True)
def solve_step(F, IX, B, q, targets):
    """
    One velocity-IK update (module docstring) into the ``dq`` view of ``B``.

    ``F``, ``IX``: the packed model; ``B``: the solver buffer (:func:`buffer_views`) holding
    the configuration, workspaces and result. ``targets`` is (end effectors, 4, 4) in the
    base frame; position-only effectors use its translation. ``prev_dist < 0`` marks a
    target jump for the adaptive clamp. Returns ``STATUS_OK``, or ``STATUS_BAD_INPUT``
    (with ``dq`` zeroed) when ``q`` or ``targets`` holds NaN or infinite values.
    """
    v = buffer_views(IX, B)
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(targets))):
        v.dq[:] = 0.0
        return STATUS_BAD_INPUT
    P = v.P
    model = kernels.model_views(F, IX)
    work = kernels.work_views(IX, v.W)
    J = work[4]
    task_error(P, model, work, v, q, targets)
    lam2 = damping(P, J, v)
    apply_law(P, J, lam2, v)
    add_nullspace_term(F, IX, P, model, J, v, q)
    # 6. ClampMaxAbs on the joint change (Buss sec. 8)
    v.info[INFO_STEP_CLAMPED] = 0.0
    if P[P_MAX_STEP] > 0.0 and laws.clamp_max_abs(v.dq, P[P_MAX_STEP]):
        v.info[INFO_STEP_CLAMPED] = 1.0
    return STATUS_OK


class VelocitySolver:
    """
    A model, a configuration and the buffers for :func:`solve_step` (pink's ``solve_ik`` role).

    ``step(q, targets)`` returns the joint change for one update; ``info`` holds the smallest
    singular value, the damping used and whether the error or step was clamped.
    """

    def __init__(self, model, config=None):
        self.model = model
        self.B = np.zeros(buffer_size(model.packed_i))
        v = buffer_views(model.packed_i, self.B)
        self.P, W, self.dq, self.active = v.P, v.W, v.dq, v.active
        self.dmax, self.prev_dist, self.err_pos, self.err_rot, self.info = (
            v.dmax, v.prev_dist, v.err_pos, v.err_rot, v.info)
        self.active[:] = 1.0
        self.ws = model.workspace(W)
        self._q_shape = (model.nq,)
        self._t_shape = (len(model.end_effectors), 4, 4)
        self.configure(config or SolverConfig())
        self.reset_targets()

    def configure(self, config):
        """
        Replace the configuration (validated first; the old one stays on error).

        The posture's desired angles (default the middle of each joint range) and weights
        (default 1) follow the scalars in ``P``.
        """
        packed = config.packed()
        model, nq = self.model, self.model.nq
        target = np.asarray(config.posture_target, dtype=float)
        weights = np.asarray(config.posture_weights, dtype=float)
        for name, values in (('posture_target', target), ('posture_weights', weights)):
            if values.size not in (0, nq):
                raise InputError(f'solver.{name} needs {nq} values (one per joint) or none, '
                                 f'got {values.size}')
        if target.size and np.any((target < model.lower) | (target > model.upper)):
            raise InputError('solver.posture_target must be inside the joint limits')
        self.P[:P_SIZE] = packed
        centre = 0.5 * (model.upper + model.lower)
        self.P[P_SIZE:P_SIZE + nq] = target if target.size else centre
        self.P[P_SIZE + nq:] = weights if weights.size else 1.0
        self.config = config

    def reset_targets(self, effectors=None):
        """
        Mark target jumps: the adaptive ClampMag bound becomes infinite for one update.

        ``effectors`` (indices) limits this to the effectors whose targets jumped (Buss
        sec. 2: ``D_max,i`` per end effector); default: all.
        """
        if effectors is None:
            self.prev_dist[:] = -1.0
        else:
            self.prev_dist[np.asarray(effectors, dtype=np.int64)] = -1.0

    @property
    def J(self):
        """Weighted task Jacobian of the last step (view, task_dim x nq)."""
        return self.ws.J

    @property
    def frame_T(self):
        """End-effector placements at the configuration of the last step (view)."""
        return self.ws.frame_T

    def step(self, q, targets):
        """
        Joint change for one update from ``q`` toward ``targets`` (ne x 4 x 4).

        Raises :class:`InputError` for a wrong shape or dtype, or non-finite values (then
        nothing is computed). Returns a view that the next call overwrites.
        """
        try:
            ok = (q.shape == self._q_shape and targets.shape == self._t_shape
                  and q.dtype == _F64 and targets.dtype == _F64)
        except AttributeError:
            ok = False
        if not ok:
            raise InputError(f'step needs q as float64 {self._q_shape} and targets as float64 '
                             f'{self._t_shape}, got {getattr(q, "shape", q)} and '
                             f'{getattr(targets, "shape", targets)}')
        if solve_step(self.model.packed_f, self.model.packed_i, self.B, q, targets):
            raise InputError('q or targets contain NaN or infinite values')
        return self.dq

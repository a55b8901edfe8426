"""
Cyclic coordinate descent (CCD): one joint at a time, distal first, each set optimally.

Parent's notes, slides "Cyclic-Coordinate Descent" (after Welman 1993, sec. 4.2): traverse
the chain from the end effector inwards; at each joint choose the value that best moves
the end effector toward the goal, update the end effector, go on to the next joint. A
sweep over every joint of the chain is one iteration.

Notation of the slides, all vectors in base axes: ``J_i`` the origin and ``a_i`` the unit
axis of joint ``i``; ``P_c``, ``P_d`` the current and desired end-effector positions;
``P_ic = P_c - J_i``, ``P_id = P_d - J_i``; ``u_jc``, ``u_jd`` (j = 1..3) the columns of the
current and desired end-effector rotations. Rotating joint ``i`` by ``phi`` turns ``P_ic``
and every ``u_jc`` by ``R(a_i, phi)``. The goal is the weighted gain (the slides' ``g``)::

    g(phi) = w_p P_id . P_ic(phi) + w_o sum_j u_jd . u_jc(phi)

Maximising ``g`` minimises ``|P_d - P_c|^2`` (``|P_ic|`` does not change under the
rotation) and the rotation angle between the two frames (``sum_j u_jd . u_jc =
trace(R_d^T R_c)``). By Rodrigues' formula ``g(phi) = k1 (1 - cos phi) + k2 cos phi +
k3 sin phi`` with (:func:`gain_coefficients`)::

    k1 = w_p (P_id . a)(P_ic . a) + w_o sum_j (u_jd . a)(u_jc . a)
    k2 = w_p P_id . P_ic + w_o sum_j u_jd . u_jc
    k3 = a . [w_p (P_ic x P_id) + w_o sum_j u_jc x u_jd]

and ``dg/dphi = 0`` gives ``tan phi = k3 / (k2 - k1)``; the maximum (not the minimum) is
``phi = atan2(k3, k2 - k1)`` (:func:`best_rotation`). The slides' position weight is
``w_p = alpha (1 + rho)`` with ``rho = min(|P_id|, |P_ic|) / max(|P_id|, |P_ic|)``
(:func:`position_weight`): position counts up to twice as much where the joint's two
lever arms are equal (``rho = 1``) as where they differ widely; ``alpha`` [1/m^2] makes
the position term unitless (default ``1 / (l / 4)^2``, :data:`POSITION_SCALE`, ``l`` the
largest joint-to-end-effector distance at the start) and ``w_o = orientation_weight``
(1 in the slides; 0 for a position-only goal).

A prismatic joint moves the end effector along ``a_i`` only; its best change is the
projection ``lambda = (P_d - P_c) . a_i`` (slides, "Translational joint",
:func:`best_translation`).

Joint limits: ``g`` is ``k1 + r cos(phi - phi*)`` on the circle, so the best value inside
``[lower, upper]`` (and inside ``+-max_joint_step``) is ``phi*`` or one of its ``2 pi``
turns if one lies inside, else the bound nearer ``phi*`` in angle
(:func:`feasible_change`); a prismatic change is clamped. Every joint change therefore
raises its ``g`` or keeps it: for a position-only goal the distance to the goal never
grows from one joint to the next (with orientation, ``w_p`` varies per joint, so the
weighted error is only a heuristic descent).

URDF mimic joints (SIMON's ``torso_y_slave`` follows ``torso_y``): a controlled joint
that turns several joints of the chain is set by the closed form about its most proximal
joint, with the kinematics recomputed around it; the change is halved (up to
``_HALVINGS`` times) until the weighted error does not grow.

:func:`ccd_sweep` is the one sweep, for one end effector or several at once (their gains
summed: :mod:`~ik_control.ik.tree_ccd`). :func:`ccd_solve` iterates sweeps to
convergence; :class:`CcdMotion` runs one sweep per control tick with every joint change
bounded, as a motion generator toward a goal.
"""

from dataclasses import dataclass
import time

from ik_control.ik.pose_error import log3
from ik_control.kinematics import kernels
from ik_control.validation import finite_vector, InputError, rotation_matrix
from numba import njit
import numpy as np

_HALVINGS = 8
# Default alpha = 1 / (POSITION_SCALE * l)^2: one radian of orientation error weighs as much
# as a quarter of the chain's reach of position error. From a sweep of the scale over
# 0.1..1 on pose goals of the bench-ik arms (solve rate within 1000 sweeps, 50 targets):
# 1 -> WAM 58 %, SIMON arm 70 %, Panda 48 %; 0.2 or 0.3 -> 74-78 %, 72-76 %, 50-60 %;
# 0.25 -> 78 %, 70 %, 52 % (0.1 is worse again: 76 %, 64 %, 44 %).
POSITION_SCALE = 0.25
_TWO_PI = 2.0 * np.pi


@njit(cache=True, nogil=True)
def position_weight(alpha, p_ic, p_id):
    """Slides' ``w_p = alpha (1 + rho)``, ``rho = min(|P_id|, |P_ic|) / max(...)``."""
    nc = np.sqrt(p_ic[0] ** 2 + p_ic[1] ** 2 + p_ic[2] ** 2)
    nd = np.sqrt(p_id[0] ** 2 + p_id[1] ** 2 + p_id[2] ** 2)
    big = max(nc, nd)
    rho = 0.0 if big <= 0.0 else min(nc, nd) / big
    return alpha * (1.0 + rho)


@njit(cache=True, nogil=True)
def gain_coefficients(p_ic, p_id, a, Rc, Rd, w_p, w_o):
    """
    Return ``(k1, k2, k3)`` of ``g(phi) = k1 (1 - cos phi) + k2 cos phi + k3 sin phi``.

    ``p_ic``, ``p_id`` [m]: end effector and goal relative to the joint origin; ``a`` the
    unit joint axis; ``Rc``, ``Rd`` current and desired rotations (columns ``u_j``);
    ``w_p``, ``w_o`` the position and orientation weights (module docstring).
    """
    pc_a = p_ic[0] * a[0] + p_ic[1] * a[1] + p_ic[2] * a[2]
    pd_a = p_id[0] * a[0] + p_id[1] * a[1] + p_id[2] * a[2]
    k1 = w_p * pd_a * pc_a
    k2 = w_p * (p_ic[0] * p_id[0] + p_ic[1] * p_id[1] + p_ic[2] * p_id[2])
    cx = p_ic[1] * p_id[2] - p_ic[2] * p_id[1]
    cy = p_ic[2] * p_id[0] - p_ic[0] * p_id[2]
    cz = p_ic[0] * p_id[1] - p_ic[1] * p_id[0]
    k3 = w_p * (a[0] * cx + a[1] * cy + a[2] * cz)
    if w_o != 0.0:
        for j in range(3):
            uc0, uc1, uc2 = Rc[0, j], Rc[1, j], Rc[2, j]
            ud0, ud1, ud2 = Rd[0, j], Rd[1, j], Rd[2, j]
            k1 += w_o * (ud0 * a[0] + ud1 * a[1] + ud2 * a[2]) * (
                uc0 * a[0] + uc1 * a[1] + uc2 * a[2])
            k2 += w_o * (uc0 * ud0 + uc1 * ud1 + uc2 * ud2)
            k3 += w_o * (a[0] * (uc1 * ud2 - uc2 * ud1) + a[1] * (uc2 * ud0 - uc0 * ud2)
                         + a[2] * (uc0 * ud1 - uc1 * ud0))
    return k1, k2, k3


@njit(cache=True, nogil=True)
def best_rotation(k1, k2, k3):
    """Angle [rad] maximising ``g``: ``atan2(k3, k2 - k1)`` (``dg/dphi = 0``, ``g'' < 0``)."""
    return np.arctan2(k3, k2 - k1)


@njit(cache=True, nogil=True)
def best_translation(p_c, p_d, a):
    """Slides' translational joint: ``lambda = (P_d - P_c) . a`` [m]."""
    return (p_d[0] - p_c[0]) * a[0] + (p_d[1] - p_c[1]) * a[1] + (p_d[2] - p_c[2]) * a[2]


@njit(cache=True, nogil=True)
def feasible_change(delta, value, lower, upper, max_step, revolute):
    """
    Best allowed change near the optimum ``delta`` for a joint at ``value``.

    Allowed: ``lower <= value + change <= upper`` and ``|change| <= max_step``. A revolute
    joint's gain is ``k1 + r cos(change - delta)``, so the best allowed change is a
    ``2 pi`` turn of ``delta`` inside the interval (the smallest such), else the end of
    the interval nearer ``delta`` in angle; a prismatic change is clamped.
    """
    lo = max(lower - value, -max_step)
    hi = min(upper - value, max_step)
    if hi < lo:            # outside its limits by more than a step: step toward the range
        return max_step if value < lower else -max_step
    if not revolute:
        return min(hi, max(lo, delta))
    best = 0.0
    found = False
    for k in range(-2, 3):
        c = delta + k * _TWO_PI
        if lo <= c <= hi and (not found or abs(c) < abs(best)):
            best = c
            found = True
    if found:
        return best
    d_lo = abs((lo - delta + np.pi) % _TWO_PI - np.pi)
    d_hi = abs((hi - delta + np.pi) % _TWO_PI - np.pi)
    return lo if d_lo < d_hi else hi


@njit(cache=True, nogil=True)
def rotate_about(point, a, phi, p, R):
    """Turn ``p`` and rotation ``R`` (in place) by ``phi`` [rad] about axis ``a`` at ``point``."""
    c = np.cos(phi)
    s = np.sin(phi)
    v = 1.0 - c
    x, y, z = a[0], a[1], a[2]
    m = np.empty((3, 3))
    m[0, 0] = c + x * x * v
    m[0, 1] = x * y * v - z * s
    m[0, 2] = x * z * v + y * s
    m[1, 0] = y * x * v + z * s
    m[1, 1] = c + y * y * v
    m[1, 2] = y * z * v - x * s
    m[2, 0] = z * x * v - y * s
    m[2, 1] = z * y * v + x * s
    m[2, 2] = c + z * z * v
    d0, d1, d2 = p[0] - point[0], p[1] - point[1], p[2] - point[2]
    for r in range(3):
        p[r] = point[r] + m[r, 0] * d0 + m[r, 1] * d1 + m[r, 2] * d2
    for c in range(3):
        r0, r1, r2 = R[0, c], R[1, c], R[2, c]
        for r in range(3):
            R[r, c] = m[r, 0] * r0 + m[r, 1] * r1 + m[r, 2] * r2


@njit(cache=True, nogil=True)
def pose_errors(p_c, R_c, p_d, R_d, use_rotation):
    """Return the position error [m] and, when ``use_rotation``, the rotation error [rad]."""
    ep = np.sqrt((p_d[0] - p_c[0]) ** 2 + (p_d[1] - p_c[1]) ** 2 + (p_d[2] - p_c[2]) ** 2)
    if not use_rotation:
        return ep, 0.0
    rel = np.empty((3, 3))
    for r in range(3):
        for c in range(3):
            rel[r, c] = R_d[r, 0] * R_c[c, 0] + R_d[r, 1] * R_c[c, 1] + R_d[r, 2] * R_c[c, 2]
    return ep, log3(rel, np.empty(3))


@njit(cache=True, nogil=True)
def weighted_cost(p_c, R_c, p_d, R_d, alpha, w_o):
    """``alpha |P_d - P_c|^2 + w_o (3 - trace(R_d^T R_c))``: what a CCD step must not raise."""
    d = p_d - p_c
    cost = alpha * (d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
    if w_o != 0.0:
        cost += w_o * (3.0 - np.sum(R_d * R_c))
    return cost


@njit(cache=True, nogil=True)
def _effectors(F, IX, W, q, frames, p, R):
    """Forward kinematics at ``q``; copy the placements of ``frames`` into ``p``, ``R``."""
    kernels.update_kinematics(F, IX, W, q, False, False)
    frame_T = kernels.work_views(IX, W)[2]
    for e in range(frames.shape[0]):
        f = frames[e]
        for r in range(3):
            p[e, r] = frame_T[f, r, 3]
            for c in range(3):
                R[e, r, c] = frame_T[f, r, c]


@njit(cache=True, nogil=True)
def _total_cost(p, R, p_d, R_d, alpha, w_o, mask):
    cost = 0.0
    for e in range(p.shape[0]):
        if mask[e]:
            cost += weighted_cost(p[e], R[e], p_d[e], R_d[e], alpha[e], w_o[e])
    return cost


@njit(cache=True, nogil=True)
def ccd_sweep(F, IX, W, order, moves, coupled, frames, q, p_d, R_d, alpha, w_o, max_step):
    """
    One CCD sweep over ``order`` ((tree joint, controlled joint) pairs, distal first), in place.

    The one sweep, for one end effector or several (:mod:`~ik_control.ik.tree_ccd`): a
    joint's gains over the effectors it moves are summed, which for one effector is the
    slides' step. ``moves[n, e]``: joint ``order[n]`` moves effector ``e``;
    ``coupled[k]``: controlled joint ``k`` turns several tree joints (mimic); ``frames``
    the effectors' frame indices; ``p_d`` (ne, 3), ``R_d`` (ne, 3, 3) the goals;
    ``alpha``, ``w_o`` (ne,) the weights; ``max_step`` (nq,) the bound on each change
    [rad or m]. A prismatic joint takes :func:`best_translation` weighted by ``alpha``
    over its effectors.
    """
    fv = kernels.model_views(F, IX)
    axis_local, multiplier, kind, lower, upper = fv[1], fv[2], fv[8], fv[14], fv[15]
    joint_T = kernels.work_views(IX, W)[1]
    ne = frames.shape[0]
    p_c = np.empty((ne, 3))
    R_c = np.empty((ne, 3, 3))
    p_t = np.empty((ne, 3))
    R_t = np.empty((ne, 3, 3))
    _effectors(F, IX, W, q, frames, p_c, R_c)
    a = np.empty(3)
    o = np.empty(3)
    refresh = False
    for n in range(order.shape[0]):
        j = order[n, 0]
        k = order[n, 1]
        if coupled[k] or refresh:
            _effectors(F, IX, W, q, frames, p_c, R_c)
            refresh = False
        T = joint_T[j]
        ax, ay, az = axis_local[j, 0], axis_local[j, 1], axis_local[j, 2]
        for r in range(3):
            o[r] = T[r, 3]
            a[r] = T[r, 0] * ax + T[r, 1] * ay + T[r, 2] * az
        mult = multiplier[j]
        revolute = kind[j] == kernels.JOINT_REVOLUTE
        s1, s2, s3, num, den = 0.0, 0.0, 0.0, 0.0, 0.0
        for e in range(ne):
            if not moves[n, e]:
                continue
            if revolute:
                p_ic = p_c[e] - o
                p_id = p_d[e] - o
                w_p = position_weight(alpha[e], p_ic, p_id)
                k1, k2, k3 = gain_coefficients(p_ic, p_id, a, R_c[e], R_d[e], w_p, w_o[e])
                s1 += k1
                s2 += k2
                s3 += k3
            else:
                num += alpha[e] * best_translation(p_c[e], p_d[e], a)
                den += alpha[e]
        if revolute:
            delta = best_rotation(s1, s2, s3) / mult
        else:
            delta = (num / den if den > 0.0 else 0.0) / mult
        change = feasible_change(delta, q[k], lower[k], upper[k], max_step[k], revolute)
        if change == 0.0:
            continue
        if coupled[k]:
            before = _total_cost(p_c, R_c, p_d, R_d, alpha, w_o, moves[n])
            q0 = q[k]
            for _ in range(_HALVINGS):
                q[k] = q0 + change
                _effectors(F, IX, W, q, frames, p_t, R_t)
                if _total_cost(p_t, R_t, p_d, R_d, alpha, w_o, moves[n]) <= before:
                    break
                change *= 0.5
            else:
                q[k] = q0
            refresh = True
            continue
        q[k] += change
        for e in range(ne):
            if not moves[n, e]:
                continue
            if revolute:
                rotate_about(o, a, mult * change, p_c[e], R_c[e])
            else:
                for r in range(3):
                    p_c[e, r] += mult * change * a[r]


@njit(cache=True, nogil=True)
def ccd_errors(F, IX, W, q, frames, p_d, R_d, use_rotation, out):
    """Write each effector's (position [m], rotation [rad]) error at ``q`` into ``out``."""
    ne = frames.shape[0]
    p = np.empty((ne, 3))
    R = np.empty((ne, 3, 3))
    _effectors(F, IX, W, q, frames, p, R)
    for e in range(ne):
        ep, er = pose_errors(p[e], R[e], p_d[e], R_d[e], use_rotation[e])
        out[e, 0] = ep
        out[e, 1] = er


@njit(cache=True, nogil=True)
def ccd_iterate(F, IX, W, order, moves, coupled, frames, q, p_d, R_d, use_rotation, alpha,
                w_o, max_step, max_sweeps, tolerance, rotation_tolerance, history):
    """
    Sweep until every effector is within both tolerances or ``max_sweeps`` are done.

    ``history[s]`` gets the largest (position [m], rotation [rad]) error over the
    effectors before sweep ``s`` (and after the last). Returns (sweeps, converged).
    """
    ne = frames.shape[0]
    err = np.empty((ne, 2))
    for s in range(max_sweeps + 1):
        ccd_errors(F, IX, W, q, frames, p_d, R_d, use_rotation, err)
        history[s, 0] = err[:, 0].max()
        history[s, 1] = err[:, 1].max()
        if history[s, 0] <= tolerance and history[s, 1] <= rotation_tolerance:
            return s, True
        if s == max_sweeps:
            break
        ccd_sweep(F, IX, W, order, moves, coupled, frames, q, p_d, R_d, alpha, w_o, max_step)
    return max_sweeps, False


@dataclass
class CcdResult:
    """Outcome of :func:`ccd_solve`."""

    q: np.ndarray               # joint values (all controlled joints) [rad or m]
    converged: bool             # both errors within tolerance
    iterations: int             # sweeps done
    position_error: float       # final end-effector position error [m]
    rotation_error: float       # final rotation error [rad] (0 for a position-only goal)
    errors: np.ndarray          # (iterations + 1, 2): position [m], rotation [rad] per sweep
    seconds: float


class Ccd:
    """
    CCD on one end effector of a :class:`~ik_control.kinematics.RobotModel`.

    ``end_effector``: index into ``model.end_effectors`` or a frame name. The chain is
    every controlled joint that moves that frame; other controlled joints keep their
    values. ``orientation_weight`` is ``w_o`` [unitless] of a pose goal;
    ``position_weight`` ``alpha`` [1/m^2] (default ``1 / (l / 4)^2``, module docstring).
    """

    def __init__(self, model, end_effector=0, orientation_weight=1.0, position_weight=None):
        self.model = model
        self.frame = model.end_effector_index(end_effector)
        if not np.isfinite(orientation_weight) or orientation_weight < 0.0:
            raise InputError('orientation_weight must be finite and >= 0, '
                             f'got {orientation_weight}')
        if position_weight is not None and not (np.isfinite(position_weight)
                                                and position_weight > 0.0):
            raise InputError(f'position_weight must be finite and > 0, got {position_weight}')
        self.orientation_weight = float(orientation_weight)
        self.position_weight = position_weight
        support = model.support[self.frame]
        tree = [j for j in range(len(model.tree_joint_names))
                if support[j] and model.ctrl_index[j] >= 0]
        counts = np.bincount(model.ctrl_index[tree], minlength=model.nq)
        self.coupled = counts > 1
        chain, seen = [], set()
        for j in tree:              # parents precede children: proximal member comes first
            k = int(model.ctrl_index[j])
            if k not in seen:
                seen.add(k)
                chain.append((j, k))
        self.chain = np.array(chain[::-1], dtype=np.int64).reshape(-1, 2)
        self._frames = np.array([self.frame], dtype=np.int64)   # ccd_sweep's one effector
        self._moves = np.ones((len(chain), 1), dtype=bool)
        self.chain_joints = tuple(model.joint_names[k] for _, k in chain[::-1])
        self._ws = model.workspace()

    # ----------------------------------------------------------------- inputs
    def _goal(self, target_position, target_rotation):
        p_d = np.array(finite_vector(target_position, 3, 'target_position'))  # contiguous
        if target_rotation is None:
            return p_d, np.eye(3), False
        R_d = rotation_matrix(target_rotation, 'target_rotation')
        return p_d, np.ascontiguousarray(R_d), True

    def _start(self, q):
        return finite_vector(q, self.model.nq, 'q').copy()

    def _alpha(self, q, use_rotation):
        if self.position_weight is not None:
            return float(self.position_weight)
        if not use_rotation:
            return 1.0      # w_o = 0: the scale of w_p does not change phi
        self._ws.update(q, jacobian=False)
        p = self._ws.frame_T[self.frame, :3, 3]
        lengths = [np.linalg.norm(p - self._ws.joint_T[j, :3, 3]) for j, _ in self.chain]
        return 1.0 / (POSITION_SCALE * max(max(lengths, default=1.0), 1e-3)) ** 2

    def _steps(self, max_joint_step):
        step = np.array(np.broadcast_to(np.asarray(max_joint_step, dtype=float),
                                        (self.model.nq,)))   # writable: one compiled type
        if np.any(np.isnan(step)) or np.any(step <= 0.0):
            raise InputError('max_joint_step must be > 0 [rad or m] for every joint')
        return step

    # ----------------------------------------------------------------- API
    def errors(self, q, target_position, target_rotation=None):
        """Return (position [m], rotation [rad]) errors of the end effector at ``q``."""
        p_d, R_d, use_rotation = self._goal(target_position, target_rotation)
        self._ws.update(self._start(q), jacobian=False)
        T = self._ws.frame_T[self.frame]
        return pose_errors(T[:3, 3].copy(), T[:3, :3].copy(), p_d, R_d, use_rotation)

    def solve(self, q0, target_position, target_rotation=None, max_iterations=200,
              tolerance=1e-4, rotation_tolerance=1e-3, max_joint_step=np.inf):
        """
        Sweep from ``q0`` until the goal is met or ``max_iterations`` sweeps are done.

        ``tolerance`` [m], ``rotation_tolerance`` [rad]; ``max_joint_step`` [rad or m],
        scalar or per joint, bounds each joint change within a sweep.
        """
        start = time.perf_counter()
        p_d, R_d, use_rotation = self._goal(target_position, target_rotation)
        q = self._start(q0)
        max_iterations = int(max_iterations)
        if max_iterations < 0:
            raise InputError(f'max_iterations must be >= 0, got {max_iterations}')
        if not (tolerance > 0.0 and rotation_tolerance > 0.0):
            raise InputError('tolerance and rotation_tolerance must be > 0')
        history = np.zeros((max_iterations + 1, 2))
        m = self.model
        w_o = self.orientation_weight if use_rotation else 0.0
        sweeps, ok = ccd_iterate(m.packed_f, m.packed_i, self._ws.W, self.chain, self._moves,
                                 self.coupled, self._frames, q, p_d[None], R_d[None],
                                 np.array([use_rotation]),
                                 np.array([self._alpha(q, use_rotation)]), np.array([w_o]),
                                 self._steps(max_joint_step), max_iterations,
                                 float(tolerance), float(rotation_tolerance), history)
        history = history[:sweeps + 1].copy()
        return CcdResult(q, bool(ok), int(sweeps), float(history[-1, 0]),
                         float(history[-1, 1]), history, time.perf_counter() - start)


def ccd_solve(model, q0, target_position, target_rotation=None, end_effector=0,
              orientation_weight=1.0, position_weight=None, **kwargs):
    """
    Solve IK by CCD once: returns a :class:`CcdResult` (``q``, ``converged``, ...).

    ``target_position`` [m] and optional ``target_rotation`` (3x3) are in the model's base
    frame; ``kwargs`` go to :meth:`Ccd.solve` (``max_iterations``, ``tolerance`` [m],
    ``rotation_tolerance`` [rad], ``max_joint_step`` [rad or m]).
    """
    return Ccd(model, end_effector, orientation_weight, position_weight).solve(
        q0, target_position, target_rotation, **kwargs)

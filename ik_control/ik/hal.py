"""
HAL, the heuristic human-like arm linkage: closed-form IK of a 7-DoF arm.

Parent's notes, slides "Hueristic Human-Like Linkage (HAL)" (after Korein and Badler):
the arm is split into a 3-DoF shoulder ``R_A(q1, q2, q3)``, a 1-DoF elbow ``R_B(q4)`` and
a 3-DoF wrist ``R_C(q5, q6, q7)``; "fix wrist position, use as goal", "set q4 based on
distance between shoulder and wrist ... use law of cosines", "determine elbow position
based on heuristics ... elbow lies on circle defined by w, s and q4", then "from e and s,
determine R_A" and "from e and w and hand orientation, determine R_B"/``R_C``.

Kinematics in product-of-exponentials form, all at the *home* configuration (arm joints
0, other controlled joints such as SIMON's torso held where they are): joint ``i`` turns
about the unit axis ``w_i`` through ``r_i``; the hand is at ``(p_h0, R_h0)``; ``S`` and
``W0`` are the points nearest (least squares) to the three shoulder and the three wrist
axes. If those axes meet (SIMON's and the WAM's arms do), every shoulder rotation
leaves ``S`` fixed and every wrist rotation ``W``, so::

    R(q) = e^[w1 q1] ... e^[w7 q7]                        hand rotation is R(q) R_h0
    W(q) = S + R_A (R(w4, q4) (W0 - r4) + r4 - S)          |W(q) - S| depends on q4 only
    p_h(q) = W(q) + R(q) (p_h0 - W0)

The steps (:meth:`HalArm.closed_form`):

1. wrist goal ``W_d = p_d - R_d R_h0^T (p_h0 - W0)`` (:func:`wrist_goal`);
2. elbow: ``|W_d - S| = |R(w4, q4) u - v|`` with ``u = W0 - r4``, ``v = S - r4``. The
   law of cosines in the plane normal to ``w4`` (:func:`elbow_angles`)::

       |W_d - S|^2 = |u|^2 + |v|^2 - 2 [(u.w4)(v.w4) + rho cos(q4 - phi0)]

   with ``rho = |u_perp| |v_perp|``; it reduces to the notes'
   ``L^2 = L1^2 + L2^2 - 2 L1 L2 cos(180 - q4)`` when the elbow axis is normal to the
   plane of s, e, w, and handles an elbow offset (the WAM's 45 mm) exactly. Two
   solutions ``phi0 +- acos``; out of reach: the nearest reachable distance, flagged;
3. swivel: ``R_A(psi) = R(n, psi) R_A0`` (``n`` the unit shoulder-to-wrist goal axis,
   ``R_A0`` the smallest rotation taking the elbow-bent wrist to ``W_d``) puts the
   elbow on its circle. The heuristic (:meth:`HalArm.preferred_swivel`) is the notes':
   the forearm continues straight from the hand, i.e. the preferred elbow is
   ``W_d - l_f R_d R_h0^T f0`` (``f0`` the home forearm direction, ``l_f`` its length),
   and ``psi`` is the swivel that brings the elbow nearest to it. "Clamp to inside of
   limits" and "if arm intersects torso": candidates ``psi* +- k 5 deg`` are tried in
   order of distance from ``psi*``, the first whose seven joint values fit the limits
   and whose elbow is ``torso_radius`` [m] or more from the torso axis is taken;
4. shoulder ``(q1, q2, q3)`` from ``R_A`` and wrist ``(q5, q6, q7)`` from
   ``R_C = (R_A R_B)^T R_d R_h0^T`` by Paden-Kahan subproblems 2 and 1
   (:func:`three_axis_angles`, two solutions each, the one inside the limits and nearest
   the current values kept).

Where the shoulder or wrist axes do not meet at a point (``axis_residual`` [m] > 0), the
same steps are used about the least-squares points ``S`` and ``W0`` (the adaptation); the
hand error this leaves is measured and ``refine_steps`` damped least-squares steps on
the 6-D pose error (pinocchio Jacobian of the arm joints) remove it
(:meth:`HalArm.solve`).
"""

from dataclasses import dataclass

from ik_control.ik.laws import dls_step
from ik_control.validation import finite_vector, InputError, ModelError, rotation_matrix
import numpy as np
import pinocchio as pin

SWIVEL_STEP = np.radians(5.0)     # spacing of the swivel candidates [rad]
# Torso the elbow keeps away from: frame whose z axis is the torso's, and the clearance
# [m]. SIMON: the upper torso box (0.22 x 0.24 m, half-width 0.12 m) plus the 4 cm
# radius of the upper arm.
TORSOS = {'torso_upper': 0.16}


def _unit(v):
    n = np.linalg.norm(v)
    return v / n if n > 1e-12 else v * 0.0


def axes_meeting_point(axes, points):
    """
    Least-squares point nearest to the lines ``points[i] + t axes[i]``; and its residual.

    Minimises ``sum_i |(I - w_i w_i^T)(x - r_i)|^2``; returns ``(x, largest distance [m]
    from x to a line)``. Parallel lines have no unique point: :class:`ModelError`.
    """
    A = np.zeros((3, 3))
    b = np.zeros(3)
    for w, r in zip(axes, points):
        P = np.eye(3) - np.outer(w, w)
        A += P
        b += P @ r
    if np.linalg.cond(A) > 1e8:
        raise ModelError('HAL: the shoulder or wrist axes are parallel, no joint centre')
    x = np.linalg.solve(A, b)
    dist = max(np.linalg.norm((np.eye(3) - np.outer(w, w)) @ (x - r))
               for w, r in zip(axes, points))
    return x, float(dist)


def _dot(a, b):
    return np.einsum('...i,...i->...', a, b)


def _cross(a, b):
    """Return ``a x b`` over the last axis (broadcast), cheaper than ``np.cross`` when small."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack(np.broadcast_arrays(a1 * b2 - a2 * b1, a2 * b0 - a0 * b2,
                                        a0 * b1 - a1 * b0), axis=-1)


def subproblem1(w, u, v):
    """
    Paden-Kahan 1: angle [rad] about unit ``w`` turning ``u`` onto ``v`` (their projections).

    ``u``, ``v``: (..., 3) arrays; returns (...) angles.
    """
    up = u - _dot(u, w)[..., None] * w
    vp = v - _dot(v, w)[..., None] * w
    return np.arctan2(_dot(_cross(up, vp), w), _dot(up, vp))


def rotate(w, t, v):
    """Rodrigues: ``R(w, t) v`` for angles ``t`` (...) and vectors ``v`` (..., 3)."""
    c, s = np.cos(t)[..., None], np.sin(t)[..., None]
    return v * c + _cross(w, v) * s + _dot(v, w)[..., None] * w * (1.0 - c)


def rodrigues(w, t):
    """Rotation matrices ``e^[w t]`` about unit axis ``w`` for angles ``t`` [rad], (..., 3, 3)."""
    t = np.asarray(t, dtype=float)
    c, s = np.cos(t)[..., None, None], np.sin(t)[..., None, None]
    K = np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])
    return np.eye(3) * c + K * s + np.outer(w, w) * (1.0 - c)


def subproblem2(w1, w2, p, q):
    """
    Paden-Kahan 2: ``(t1, t2)`` with ``R(w1, t1) R(w2, t2) p = q`` (axes through 0).

    ``z = R(w2, t2) p = R(w1, -t1) q`` satisfies ``w2.z = w2.p``, ``w1.z = w1.q`` and
    ``|z| = |p|``: ``z = a w1 + b w2 + c (w1 x w2)``, ``c = +-sqrt(c^2)``. ``q``: (N, 3);
    returns ``t1``, ``t2`` (N, 2) for the two signs of ``c`` (equal when ``c^2 <= 0``, the
    goal direction out of reach of the pair).
    """
    c12 = w1 @ w2
    denom = c12 * c12 - 1.0
    a = (c12 * (w2 @ p) - q @ w1) / denom
    b = (c12 * (q @ w1) - w2 @ p) / denom
    cross = _cross(w1, w2)
    gamma2 = (p @ p - a * a - b * b - 2.0 * a * b * c12) / (cross @ cross)
    gamma = np.sqrt(np.maximum(gamma2, 0.0))
    t1 = np.empty((q.shape[0], 2))
    t2 = np.empty((q.shape[0], 2))
    for k, g in enumerate((gamma, -gamma)):
        z = a[:, None] * w1 + b[:, None] * w2 + g[:, None] * cross
        t1[:, k] = subproblem1(w1, z, q)
        t2[:, k] = subproblem1(w2, p, z)
    return t1, t2


def three_axis_angles(axes, R):
    """
    Both ``(t1, t2, t3)`` with ``R(w1, t1) R(w2, t2) R(w3, t3) = R``, for rotations (N, 3, 3).

    Subproblem 2 on ``R w3 = R(w1, t1) R(w2, t2) w3``, then subproblem 1 for ``t3`` on a
    vector normal to ``w3``. Needs ``w1`` not parallel to ``w2`` and ``w3`` not parallel to
    ``w2``. Returns (N, 2, 3) angles [rad].
    """
    w1, w2, w3 = axes
    R = np.asarray(R, dtype=float).reshape(-1, 3, 3)
    t1, t2 = subproblem2(w1, w2, w3, R @ w3)
    probe = _cross(w3, w2)
    if np.linalg.norm(probe) < 0.5:
        probe = _cross(w3, np.eye(3)[0 if abs(w3[0]) < 0.9 else 1])
    probe = _unit(probe)
    out = np.empty((R.shape[0], 2, 3))
    target = R @ probe
    for k in range(2):
        # R(w3, t3) probe = R(w2, -t2) R(w1, -t1) R probe
        back = rotate(w2, -t2[:, k], rotate(w1, -t1[:, k], target))
        out[:, k, 0], out[:, k, 1] = t1[:, k], t2[:, k]
        out[:, k, 2] = subproblem1(w3, probe, back)
    return out


def wrist_goal(p_d, R_d, p_h0, R_h0, W0):
    """Step 1: ``W_d = p_d - R_d R_h0^T (p_h0 - W0)`` [m]."""
    return p_d - R_d @ R_h0.T @ (p_h0 - W0)


def elbow_angles(w4, r4, S, W0, distance):
    """
    Step 2: elbow angles [rad] giving ``|W - S| = distance`` (module docstring).

    Returns ``(two angles, reachable)``; out of reach, both are the angle of the nearest
    reachable distance.
    """
    u, v = W0 - r4, S - r4
    u_par, v_par = (u @ w4) * w4, (v @ w4) * w4
    u_perp, v_perp = u - u_par, v - v_par
    rho = np.linalg.norm(u_perp) * np.linalg.norm(v_perp)
    if rho < 1e-12:
        raise ModelError('HAL: the elbow axis passes through the shoulder or wrist centre')
    phi0 = np.arctan2(w4 @ np.cross(u_perp, v_perp), u_perp @ v_perp)
    target = 0.5 * (u @ u + v @ v - distance ** 2) - u_par @ v_par
    c = target / rho
    reachable = -1.0 - 1e-12 <= c <= 1.0 + 1e-12
    spread = np.arccos(np.clip(c, -1.0, 1.0))
    return np.array([phi0 + spread, phi0 - spread]), bool(reachable)


def _into_limits(value, lower, upper):
    """Shift angles by whole turns to the turn nearest the middle of [lower, upper]."""
    turns = np.round((0.5 * (lower + upper) - value) / (2.0 * np.pi))
    return value + 2.0 * np.pi * turns


def limit_violation(q, lower, upper):
    """Sum over the last axis of the distances [rad] by which ``q`` is outside the limits."""
    return np.sum(np.maximum(0.0, lower - q) + np.maximum(0.0, q - upper), axis=-1)


@dataclass
class HalResult:
    """Outcome of :meth:`HalArm.solve`; errors are of the hand pose [m, rad]."""

    q: np.ndarray                   # all controlled joints [rad]
    reachable: bool                 # False: the wrist goal is out of the arm's reach
    within_limits: bool             # the closed form found an answer inside the limits
    swivel: float                   # elbow angle on its circle from the preferred one [rad]
    closed_form_position_error: float
    closed_form_rotation_error: float
    position_error: float           # after refinement
    rotation_error: float
    refine_steps: int


class HalArm:
    """
    HAL for the 7-DoF arm that moves ``end_effector`` of a :class:`RobotModel`.

    ``arm_joints``: 7 controlled joint names, shoulder (3), elbow, wrist (3), proximal
    first; default the 7 controlled joints nearest the hand on its chain. ``torso_frame``
    and ``torso_radius`` [m]: the elbow keeps that far from the z axis of the frame
    (``'auto'``: a frame of :data:`TORSOS` if the model has one, else none).
    """

    def __init__(self, model, end_effector=0, arm_joints=None, torso_frame='auto',
                 torso_radius=None):
        self.model = model
        self.frame = model.end_effector_index(end_effector)
        self.frame_name = model.end_effector_names[self.frame]
        support = model.support[self.frame]
        chain = [int(model.ctrl_index[j]) for j in range(len(model.tree_joint_names))
                 if support[j] and model.ctrl_index[j] >= 0]
        chain = list(dict.fromkeys(chain))
        if arm_joints is None:
            idx = chain[-7:]
        else:
            arm_joints = list(arm_joints)
            unknown = [n for n in arm_joints if n not in model.joint_names]
            if unknown:
                raise ModelError(f'HAL: unknown arm joints {unknown}')
            idx = [model.joint_names.index(n) for n in arm_joints]
            if any(k not in chain for k in idx):
                raise ModelError(f"HAL: arm joints must all move '{self.frame_name}'")
        if len(idx) != 7:
            raise ModelError(f'HAL needs a 7-joint arm, the chain has {len(idx)} joints')
        self.arm = np.array(idx, dtype=np.int64)
        self.tree = np.array([int(np.flatnonzero(model.ctrl_index == k)[0]) for k in idx])
        if np.any(model.kind[self.tree] != 0) or np.any(model.multiplier[self.tree] != 1.0):
            raise ModelError('HAL needs seven revolute, uncoupled arm joints')
        self.lower, self.upper = model.lower[self.arm], model.upper[self.arm]
        if torso_frame == 'auto':
            torso_frame = next((f for f in TORSOS if model.pin_model.existFrame(f)), None)
        if torso_radius is None:
            torso_radius = TORSOS.get(torso_frame, 0.0)
        self.torso_fid = None if torso_frame is None else model._frame_id(torso_frame)
        self.torso_radius = float(torso_radius)
        self._ws = model.workspace()

    # ------------------------------------------------------------------ geometry
    def home(self, q):
        """
        Home geometry at ``q`` with the arm joints zeroed: axes, points, centres, hand pose.

        Returns a dict: ``axes`` (7, 3), ``points`` (7, 3), ``S``, ``W0`` [m], the hand
        ``p_h0``, ``R_h0``, ``axis_residual`` [m] (largest distance from S or W0 to its
        axes), ``elbow`` (the elbow point: on the elbow axis, nearest the S-W0 line).
        """
        q_home = np.array(q, dtype=float)
        q_home[self.arm] = 0.0
        ws = self._ws
        ws.update(q_home, jacobian=False)
        axes = np.array([ws.joint_T[j, :3, :3] @ self.model.axis[j] for j in self.tree])
        points = np.array([ws.joint_T[j, :3, 3] for j in self.tree])
        S, rs = axes_meeting_point(axes[:3], points[:3])
        W0, rw = axes_meeting_point(axes[4:], points[4:])
        T = ws.frame_T[self.frame]
        # elbow point: on the elbow axis, nearest the shoulder-wrist line
        d = _unit(W0 - S)
        w4, r4 = axes[3], points[3]
        n = np.cross(w4, d)
        if np.linalg.norm(n) > 1e-9:
            t = np.cross(S - r4, d) @ n / (n @ n)
            elbow = r4 + t * w4
        else:
            elbow = r4
        torso = None
        if self.torso_fid is not None:
            Tt = self.model.pin_frame_placement(q, self.model.pin_model.frames[
                self.torso_fid].name)
            torso = (Tt[:3, 3].copy(), Tt[:3, 2].copy())
        return {'axes': axes, 'points': points, 'S': S, 'W0': W0, 'p_h0': T[:3, 3].copy(),
                'R_h0': T[:3, :3].copy(), 'axis_residual': max(rs, rw), 'elbow': elbow,
                'torso': torso}

    # ------------------------------------------------------------------ closed form
    @staticmethod
    def _pick(candidates, current, lower, upper):
        """
        Choose per row among (N, 2, 3) angle triples: inside the limits, then nearest ``current``.

        Returns the (N, 3) choice and its limit violation (N,).
        """
        c = _into_limits(candidates, lower, upper)
        violation = limit_violation(c, lower, upper)
        distance = np.abs((c - current + np.pi) % (2.0 * np.pi) - np.pi).sum(axis=-1)
        second = (violation[:, 1] < violation[:, 0]) | (
            (violation[:, 1] == violation[:, 0]) & (distance[:, 1] < distance[:, 0]))
        rows = np.arange(c.shape[0])
        pick = second.astype(int)
        return c[rows, pick], violation[rows, pick]

    def preferred_swivel(self, geo, R_total, W_d, elbow_at_zero):
        """
        Step 3's heuristic: swivel [rad] of the elbow nearest "forearm straight from the hand".

        ``elbow_at_zero`` is the elbow point at swivel 0; the preferred elbow is
        ``W_d - l_f R_total f0`` with ``f0`` the home forearm direction.
        """
        f0 = geo['W0'] - geo['elbow']
        preferred = W_d - R_total @ f0
        n = _unit(W_d - geo['S'])
        e0 = elbow_at_zero - geo['S']
        e0 = e0 - n * (n @ e0)
        ep = preferred - geo['S']
        ep = ep - n * (n @ ep)
        if np.linalg.norm(e0) < 1e-9 or np.linalg.norm(ep) < 1e-9:
            return 0.0
        return float(subproblem1(n, e0, ep))

    def closed_form(self, q_current, p_d, R_d):
        """Run steps 1-4 (module docstring): returns ``(q, reachable, within_limits, psi)``."""
        geo = self.home(q_current)
        axes, points, S, W0 = geo['axes'], geo['points'], geo['S'], geo['W0']
        current = np.asarray(q_current, dtype=float)[self.arm]
        R_total = R_d @ geo['R_h0'].T
        W_d = wrist_goal(p_d, R_d, geo['p_h0'], geo['R_h0'], W0)
        angles, reachable = elbow_angles(axes[3], points[3], S, W0, np.linalg.norm(W_d - S))
        q4_options = _into_limits(angles, self.lower[3], self.upper[3])
        q4_options = sorted(q4_options, key=lambda a: (
            float(limit_violation(np.array([a]), self.lower[3:4], self.upper[3:4])),
            abs(a - current[3])))
        count = int(np.ceil(np.pi / SWIVEL_STEP))
        offsets = np.concatenate([[0.0], np.repeat(np.arange(1, count + 1), 2)
                                  * np.tile([1.0, -1.0], count) * SWIVEL_STEP])
        n = _unit(W_d - S)
        best = None
        for q4 in q4_options:
            R4 = rodrigues(axes[3], q4)
            w_e = R4 @ (W0 - points[3]) + points[3] - S
            R_A0 = pin.exp3(self._smallest_rotation(w_e, W_d - S))
            elbow0 = R_A0 @ (geo['elbow'] - S)
            psi0 = self.preferred_swivel(geo, R_total, W_d, S + elbow0)
            psi = psi0 + offsets
            R_A = rodrigues(n, psi) @ R_A0                  # (N, 3, 3): the elbow circle
            q_sh, v_sh = self._pick(three_axis_angles(axes[:3], R_A), current[:3],
                                    self.lower[:3], self.upper[:3])
            R_C = np.swapaxes(R_A @ R4, 1, 2) @ R_total
            q_wr, v_wr = self._pick(three_axis_angles(axes[4:], R_C), current[4:],
                                    self.lower[4:], self.upper[4:])
            violation = v_sh + v_wr + limit_violation(np.array([q4]), self.lower[3:4],
                                                      self.upper[3:4])
            torso = self._torso_violation(geo, S + rotate(n, psi, elbow0))
            k = np.lexsort((np.arange(psi.size), torso, violation))[0]
            if best is None or (violation[k], torso[k]) < best[0]:
                best = ((violation[k], torso[k]),
                        np.concatenate([q_sh[k], [q4], q_wr[k]]), float(offsets[k]))
            if best[0] == (0.0, 0.0):
                break
        q = np.array(q_current, dtype=float)
        # no swivel fits the limits: clamp (the refinement then takes the error down)
        q[self.arm] = np.clip(best[1], self.lower, self.upper)
        return q, reachable, bool(best[0][0] == 0.0), best[2]

    def _torso_violation(self, geo, elbow):
        """How far [m] elbow points (N, 3) come inside ``torso_radius`` of the torso axis."""
        if geo['torso'] is None or self.torso_radius <= 0.0:
            return np.zeros(elbow.shape[0])
        origin, axis = geo['torso']
        d = elbow - origin
        distance = np.linalg.norm(d - _dot(d, axis)[:, None] * axis, axis=1)
        return np.maximum(0.0, self.torso_radius - distance)

    @staticmethod
    def _smallest_rotation(a, b):
        """Rotation vector of the smallest rotation taking direction ``a`` to ``b``."""
        a, b = _unit(a), _unit(b)
        axis = np.cross(a, b)
        s, c = np.linalg.norm(axis), a @ b
        if s < 1e-12:
            if c > 0.0:
                return np.zeros(3)
            perp = np.cross(a, [1.0, 0.0, 0.0] if abs(a[0]) < 0.9 else [0.0, 1.0, 0.0])
            return np.pi * _unit(perp)
        return axis / s * np.arctan2(s, c)

    # ------------------------------------------------------------------ API
    def errors(self, q, p_d, R_d):
        """Hand position [m] and rotation [rad] errors at ``q`` (pinocchio FK)."""
        T = self.model.pin_frame_placement(q, self.frame_name)
        return (float(np.linalg.norm(p_d - T[:3, 3])),
                float(np.linalg.norm(pin.log3(R_d @ T[:3, :3].T))))

    def _pose_error(self, q, p_d, R_d):
        T = self.model.pin_frame_placement(q, self.frame_name)
        return np.concatenate([p_d - T[:3, 3], pin.log3(R_d @ T[:3, :3].T)])

    def refine(self, q, p_d, R_d, steps, damping=1e-3, max_step=0.5):
        """
        Take ``steps`` damped least-squares updates of the arm joints on the pose error.

        ``dq = J^T (J J^T + lambda^2 I)^-1 e``, ``e = [p_d - p; log3(R_d R^T)]`` (base
        axes), ``J`` pinocchio's 6 x 7 Jacobian of the hand, ``lambda = damping`` [m]
        (Buss eq. 11, :func:`ik_control.ik.laws.dls_step`, the law the controller runs);
        ``dq`` is scaled to ``max |dq_i| <= max_step`` [rad] and halved (up to 5 times)
        until ``|e|`` falls, as far from the answer the linear model can overshoot; ``q``
        stays in the limits.
        """
        q = np.array(q, dtype=float)
        e = self._pose_error(q, p_d, R_d)
        dq, L, work = np.empty(len(self.arm)), np.empty((6, 6)), np.empty(6)
        for _ in range(steps):
            J = np.ascontiguousarray(
                self.model.pin_frame_jacobian(q, self.frame_name)[:, self.arm])
            dls_step(J, e, damping ** 2, dq, L, work)
            dq *= min(1.0, max_step / max(np.abs(dq).max(), 1e-300))
            for _ in range(6):
                trial = q.copy()
                trial[self.arm] = np.clip(q[self.arm] + dq, self.lower, self.upper)
                e_trial = self._pose_error(trial, p_d, R_d)
                if e_trial @ e_trial < e @ e:
                    q, e = trial, e_trial
                    break
                dq *= 0.5
        return q

    def solve(self, q_current, target_position, target_rotation, refine_steps=3):
        """
        HAL from ``q_current`` for the hand pose ``(target_position [m], target_rotation)``.

        Returns a :class:`HalResult` with the closed form's error and the error after
        ``refine_steps`` refinement steps.
        """
        q_current = finite_vector(q_current, self.model.nq, 'q')
        p_d = finite_vector(target_position, 3, 'target_position')
        R_d = rotation_matrix(target_rotation, 'target_rotation')
        if int(refine_steps) < 0:
            raise InputError(f'refine_steps must be >= 0, got {refine_steps}')
        q, reachable, inside, psi = self.closed_form(q_current, p_d, R_d)
        e_pos, e_rot = self.errors(q, p_d, R_d)
        q_ref = self.refine(q, p_d, R_d, int(refine_steps))
        r_pos, r_rot = self.errors(q_ref, p_d, R_d)
        return HalResult(q_ref, reachable, inside, psi, e_pos, e_rot, r_pos, r_rot,
                         int(refine_steps))

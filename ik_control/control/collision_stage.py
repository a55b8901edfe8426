"""
The collision stage of the tick: a velocity damper that no commanded motion may break.

For every checked pair (:class:`~ik_control.collision.model.CollisionModel`: the robot's
own links, and its links against the scene) that this tick's motion could bring within
reach -- nearer than ``influence`` [m], or than ``security`` plus the most any point can
travel over the tick and its braking tail (``sum_j r_j (|v_j| h + (|v_j| + a_j h)^2 /
(2 a_j))``, ``r_j`` the largest lever arm of joint ``j`` over the shapes it moves) -- with
signed
distance ``d``, witness points ``p_a``, ``p_b`` and unit normal ``n`` from ``a`` to ``b``,
the rate of the distance is linear in the joint velocity ``v``::

    d_dot = n^T (Jp_b(p_b) - Jp_a(p_a)) v = c^T v      (Jp: position Jacobian of a point)

and the stage bounds it by two rows:

1. the velocity damper of Faverjon & Tournassoud (1987), for pairs within ``influence``:
   ``-c^T v <= xi (d - d_s)``, ``xi`` = ``gain`` [1/s], ``d_s`` = ``security`` [m]: the
   pair approaches at most at a speed proportional to the room left, so ``d`` decays
   towards ``d_s`` (a soft row: a pair that enters the influence distance faster than the
   acceleration limits can slow it to the damper's speed is slowed as fast as they allow);
2. the braking bound: the tick's segment (trapezoidal, ``(v_prev + v) h / 2``) and the
   braking tail that every command window ends with (joint ``j`` stops after
   ``v_j |v_j| / (2 a_j)``) may not bring the pair below ``d_s``::

       -sum_j c_j (v_prev_j h / 2 + v_j k_j) <= d - d_s,
       k_j = h / 2 + (|v_prev_j| + a_j h) / (2 a_j)

   (``|v_j| <= |v_prev_j| + a_j h`` under the acceleration limit: ``k_j`` bounds the
   tail's coefficient from above, so the row holds for the window *and* its tail even if
   the stream stops after this tick). A hard row: if the last tick's command met it,
   braking on (``v`` one step closer to rest) meets it again, so it stays feasible.

Both use ``max(d - d_s, 0)``: a pair found inside the security distance may not come
nearer, and is not pushed apart by a robot at rest.

The stage changes the desired velocity ``v_des`` only when it breaks a row: then

    min_v  |J (v - v_des)|^2 + mu |v - v_des|^2
    s.t.   rows 1 and 2 of every near pair,
           max(-v_max, v_prev - a h) <= v <= min(v_max, v_prev + a h),
           the position bounds' braking caps and clip (:func:`limits.velocity_box`)

(``J`` the task Jacobian where the tick solved one, so the hands keep their course and
the spare joints make the room; else ``J = 0``), a small QP solved by DAQP. The box holds
the velocity, acceleration and position-bound limits, so the limiter that follows leaves
the solution as it is. A QP with no solution (a pair entering the influence distance
faster than the damper and the acceleration limits allow) halts: every joint brakes
towards rest at its acceleration limit, ``HALTED``.
"""

import daqp
from ik_control.control import limits
from ik_control.kinematics import kernels
from numba import njit
import numpy as np

__all__ = ['CollisionStage', 'NEAR', 'LIMITED', 'HALTED']

NEAR = 1        # a pair within the influence distance
LIMITED = 2     # the stage changed the desired velocity
HALTED = 4      # the motion stopped for a pair: no solution, or the desired one zeroed
MAX_ROWS = 24   # pairs constrained at once (those with the least room)
MAX_CANDIDATES = 64  # pairs whose rows are built without allocating
TASK_REGULARIZATION = 1e-3  # mu of the objective (module docstring)
_INF = 1e30
_REVOLUTE = kernels.JOINT_REVOLUTE
SOFT = 8        # DAQP's sense of a soft constraint


def lever_arms(model, cm):
    """
    Return ``r_j`` [m per rad; 1 for a prismatic joint], per controlled joint.

    How far any shape point joint ``j`` moves can be from its axis: along the chain down
    to the shape, the joint-to-joint offsets plus the shape's bounding sphere (the
    planner's segment bound, planning/collision.py).
    """
    pm = model.pin_model
    reach = np.zeros(pm.njoints)
    for g in range(cm.robot_count):
        j = int(cm.shape_joints[g]) + 1
        local = cm._local[g]
        r = np.linalg.norm(local[:3, :3] @ cm._centre[g] + local[:3, 3]) + cm._radius[g]
        while j > 0:
            reach[j] = max(reach[j], r)
            r += np.linalg.norm(pm.jointPlacements[j].translation)
            j = pm.parents[j]
    lever = np.zeros(model.nq)
    for t in range(pm.njoints - 1):
        c = model.ctrl_index[t]
        if c >= 0:
            r = reach[t + 1] if model.kind[t] == _REVOLUTE else 1.0
            lever[c] += abs(model.multiplier[t]) * r
    return lever


@njit(cache=True, nogil=True)
def approach_rows(joint_T, axis, kind, multiplier, ctrl_index, ancestors, joint_a, joint_b,
                  point_a, point_b, normal, out):
    """
    Write ``c^T = n^T (Jp_b(p_b) - Jp_a(p_a))`` of each pair into the rows of ``out``.

    ``joint_a``/``joint_b``: the tree joint each shape is fixed to (-1: base or scene);
    a revolute ancestor ``t`` contributes ``m_t n . (w_t x (p - o_t))``, a prismatic one
    ``m_t n . w_t`` (``w_t`` its axis in the base frame, ``o_t`` its origin, ``m_t`` its
    mimic multiplier) to the column of its controlled joint.
    """
    nt = axis.shape[0]
    for r in range(out.shape[0]):
        for c in range(out.shape[1]):
            out[r, c] = 0.0
        for side in range(2):
            j = joint_b[r] if side == 0 else joint_a[r]
            if j < 0:
                continue
            sign = 1.0 if side == 0 else -1.0
            px = point_b[r, 0] if side == 0 else point_a[r, 0]
            py = point_b[r, 1] if side == 0 else point_a[r, 1]
            pz = point_b[r, 2] if side == 0 else point_a[r, 2]
            for t in range(nt):
                col = ctrl_index[t]
                if col < 0 or not ancestors[j + 1, t]:
                    continue
                wx = (joint_T[t, 0, 0] * axis[t, 0] + joint_T[t, 0, 1] * axis[t, 1]
                      + joint_T[t, 0, 2] * axis[t, 2])
                wy = (joint_T[t, 1, 0] * axis[t, 0] + joint_T[t, 1, 1] * axis[t, 1]
                      + joint_T[t, 1, 2] * axis[t, 2])
                wz = (joint_T[t, 2, 0] * axis[t, 0] + joint_T[t, 2, 1] * axis[t, 1]
                      + joint_T[t, 2, 2] * axis[t, 2])
                if kind[t] == _REVOLUTE:  # w x (p - o)
                    rx = px - joint_T[t, 0, 3]
                    ry = py - joint_T[t, 1, 3]
                    rz = pz - joint_T[t, 2, 3]
                    vx, vy, vz = wy * rz - wz * ry, wz * rx - wx * rz, wx * ry - wy * rx
                else:
                    vx, vy, vz = wx, wy, wz
                out[r, col] += sign * multiplier[t] * (
                    normal[r, 0] * vx + normal[r, 1] * vy + normal[r, 2] * vz)


class CollisionStage:
    """
    The velocity damper of one robot (module docstring).

    ``collision_model`` is its :class:`~ik_control.collision.model.CollisionModel`;
    ``security`` [m], ``influence`` [m] and ``gain`` [1/s] as in the module docstring.
    After :meth:`constrain`: :attr:`closest_distance` [m] and :attr:`closest_pair` (names)
    of the nearest measured pair (inf and '' when none is within the influence distance).
    """

    def __init__(self, model, collision_model, security=0.01, influence=0.05, gain=10.0):
        self.model, self.cm = model, collision_model
        self.security, self.influence, self.gain = security, influence, gain
        n = model.nq
        self._c = np.zeros((MAX_CANDIDATES, n))
        self._sense = np.zeros(n + 2 * MAX_ROWS, dtype=np.int32)
        self.closest_distance = np.inf
        self._closest_row = -1
        self.rows = 0
        self.travel = 0.0     # sum_j r_j |dq_j| along the knots so far [m] (near_pairs)
        self._q_last = None
        m = model
        self.lever = lever_arms(model, collision_model)
        self._tables = (m.axis, m.kind.astype(np.int64), m.multiplier.astype(float),
                        m.ctrl_index.astype(np.int64), m._joint_ancestors)
        self._compile()

    def _compile(self):
        """Run the compiled kernel once (loaded from numba's cache), not in the first tick."""
        ws = self.model.workspace()
        ws.update(self.model.center, jacobian=False)
        z = np.zeros((1, 3))
        approach_rows(ws.joint_T, *self._tables, np.zeros(1, dtype=np.int64),
                      np.zeros(1, dtype=np.int64), z, z, z, self._c[:1])
        self.cm.near_pairs(ws.joint_T, 0.0)

    @property
    def closest_pair(self):
        """Names of the nearest pair measured at the last :meth:`constrain` ('' if none)."""
        return '' if self._closest_row < 0 else self.cm.pair_name(self._closest_row)

    def constrain(self, joint_T, J, q, v_prev, v_des, v_max, a_max, lower, upper, margin, h):
        """
        Bound ``v_des`` (in place) by the near pairs at the placements ``joint_T``.

        ``q``, ``v_prev``: the committed knot the tick starts from; ``J``: the task
        Jacobian of this tick, or None; ``h`` [s] the tick's step. Returns the flag bits
        :data:`NEAR`, :data:`LIMITED`, :data:`HALTED`.
        """
        cm = self.cm
        speed = np.abs(v_prev) + a_max * h
        reach = self.security + float(self.lever @ (np.abs(v_prev) * h
                                                    + speed * speed / (2.0 * a_max)))
        within = max(self.influence, reach)
        if self._q_last is not None:  # the knots' path: how far any point may have moved
            self.travel += float(self.lever @ np.abs(q - self._q_last))
        self._q_last = q.copy()
        count = cm.near_pairs(joint_T, within, self.travel)
        self.rows = 0
        if count == 0:
            self.closest_distance, self._closest_row = np.inf, -1
            return 0
        d = cm.distance[:count]
        near = np.flatnonzero(d < within)
        if near.size == 0:
            self.closest_distance, self._closest_row = np.inf, -1
            return 0
        i = near[np.argmin(d[near])]
        self.closest_distance = float(d[i])
        self._closest_row = int(cm.pair_index[i])
        flag = NEAR if self.closest_distance < self.influence else 0
        m = near.size
        c = self._c[:m] if m <= MAX_CANDIDATES else np.zeros((m, q.size))
        pairs = cm.pairs[cm.pair_index[near]]
        joints = cm.shape_joints  # (the current scene's: set_scene replaces the table)
        approach_rows(joint_T, *self._tables, joints[pairs[:, 0]],
                      joints[pairs[:, 1]], cm.point_a[near], cm.point_b[near],
                      cm.normal[near], c)
        dist = d[near]
        room = np.maximum(dist - self.security, 0.0)
        k = 0.5 * h + speed / (2.0 * a_max)
        A = np.vstack([-c, -c * k])
        damped = dist < self.influence
        bound = np.concatenate([np.where(damped, self.gain * room, _INF),
                                room + (c @ v_prev) * (0.5 * h)])
        if np.all(A @ v_des <= bound):
            self.rows = 0
            return flag
        lo, hi = limits.velocity_box(q, v_prev, lower, upper, margin, v_max, a_max, h)
        hi = np.maximum(hi, lo)  # no room: the limiter decides that joint
        # rows no velocity of this tick's box can break are left out of the QP; of the
        # others, the MAX_ROWS pairs with the least room
        worst = np.maximum(A * lo, A * hi).sum(axis=1)
        live = np.flatnonzero((worst > bound).reshape(2, m).any(axis=0))
        if live.size > MAX_ROWS:
            live = live[np.argsort(dist[live])[:MAX_ROWS]]
        m = live.size
        self.rows = m
        A = np.vstack([-c[live], -(c[live] * k)])
        if m == 0:  # within the box every row holds: the limiter's box is enough
            return flag
        bound = np.concatenate([bound[live], bound[live + near.size]])
        n = q.size
        if J is None:
            H = np.eye(n)
        else:
            H = J.T @ J + TASK_REGULARIZATION * np.eye(n)
        f = -(H @ v_des)
        upper_b = np.concatenate([hi, bound])
        lower_b = np.concatenate([lo, np.full(2 * m, -_INF)])
        sense = self._sense[:n + 2 * m]
        sense[n:n + m] = SOFT
        x, _, exitflag, _ = daqp.solve(H, f, A, upper_b, lower_b, sense)
        if exitflag < 1:  # no velocity within the limits keeps every pair: brake
            np.clip(np.zeros(n), lo, hi, out=v_des)
            return flag | LIMITED | HALTED
        halted = np.linalg.norm(x) < 0.01 * np.linalg.norm(v_des)
        v_des[:] = x
        return flag | LIMITED | (HALTED if halted else 0)

"""
The collision stage of the tick: a velocity damper that no commanded motion may break.

For every checked pair (:class:`~ik_control.collision.model.CollisionModel`: the robot's
own links, and its links against the scene) that this tick's motion could bring within
reach -- nearer than ``influence`` [m], or than ``security`` plus the most its shapes
can come nearer over the tick and its braking tail (``sum_j R_kj (|v_j| h + (|v_j| + a_j
h)^2 / (2 a_j))``, ``R_kj`` the lever arm of joint ``j`` over the pair's shapes,
:attr:`CollisionModel.pair_lever <ik_control.collision.model.CollisionModel.pair_lever>`,
:func:`pair_reach`) -- with signed distance ``d``, witness points ``p_a``, ``p_b`` and
unit normal ``n`` from ``a`` to ``b``, the rate of the distance is linear in the joint
velocity ``v``::

    d_dot = n^T (Jp_b(p_b) - Jp_a(p_a)) v = c^T v      (Jp: position Jacobian of a point)

and the stage bounds it by two rows:

1. the velocity damper of Faverjon & Tournassoud (1987), for pairs within ``influence``:
   ``-c^T v <= xi (d - d_s)``, ``xi`` = ``gain`` [1/s], ``d_s`` = ``security`` [m]: the
   pair approaches at most at a speed proportional to the room left, so ``d`` decays
   towards ``d_s``; a pair found nearer than ``d_s`` is moved apart at ``xi (d_s - d)``
   (a soft row: where the acceleration limits cannot give the damper's speed, as near it
   as they allow);
2. the braking bound: the tick's segment (trapezoidal, ``(v_prev + v) h / 2``) and the
   braking tail that every command window ends with (joint ``j`` stops after
   ``v_j |v_j| / (2 a_j)``) may use at most :data:`BRAKING_SHARE` of the room, by the
   linear rate::

       -sum_j c_j (v_prev_j h / 2 + v_j k_j) <= BRAKING_SHARE (d - d_s),
       k_j = h / 2 + (|v_prev_j| + a_j h) / (2 a_j)

   The rate is exact to first order only: a link that turns over the tail brings another
   point of its shape nearer than the witness point's rate says (the WAM's hand pressed
   onto a table came to 3.9 mm of it, the security distance 10 mm, with the whole room
   given to the linear rate; 9.1 mm with half, in process, and 9.8 mm over DDS with a
   second process busy on this 2-core machine);

   (``|v_j| <= |v_prev_j| + a_j h`` under the acceleration limit: ``k_j`` bounds the
   tail's coefficient from above, so the row holds for the window *and* its tail even if
   the stream stops after this tick). A hard row: if the last tick's command met it,
   braking on (``v`` one step closer to rest) meets it again, so it stays feasible.

Row 2 uses ``max(d - d_s - e_k, 0)`` (a pair found inside the security distance may not
come nearer within the tick; pushing it apart is row 1's, which may not be feasible at
once), row 1 ``d - d_s - e_k``. ``e_k = sum_j R_kj e_j`` is
the robot's tracking error ``e`` (how far its latest joint_states sample lies off the
committed path, a lag along it left out: :func:`~ik_control.control.robot_link.off_path`)
carried to the pair by the lever arms: the robot's own shapes are at least ``d - e_k``
apart when the command's are ``d``, so the room is kept for the robot, not only for its
command (servos leave the path and overshoot: MuJoCo's position actuators came 1.9 mm
nearer than the command on this machine, 11 and 37 mm under CI's load, before this
term). A robot on its path (``e = 0``) is bounded as its command.

The stage changes the desired velocity ``v_des`` only when the velocity the limiter would
make of it (:func:`limits.limit_velocity`: what the robot does this tick) breaks a row:
then

    min_v  |J (v - v_des)|^2 + mu |v - v_des|^2
    s.t.   rows 1 and 2 of every near pair,
           max(-v_max, v_prev - a h) <= v <= min(v_max, v_prev + a h),
           the position bounds' braking caps and clip (:func:`limits.velocity_box`)

(``J`` the task Jacobian where the tick solved one, so the hands keep their course and
the spare joints make the room; else ``J = 0``), a small QP solved by DAQP, rows 1 soft
(DAQP relaxes them where they cannot all hold). A braking row that no velocity of the box
meets (``sum_j min(A_j lo_j, A_j hi_j)`` above its bound by more than DAQP's primal
tolerance) is told without DAQP: given
soft rows and such a problem, DAQP 0.11 corrupted memory. The box holds
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
TASK_REGULARIZATION = 1e-3  # mu of the objective (module docstring)
_INF = 1e30
_REVOLUTE = kernels.JOINT_REVOLUTE
SOFT = 8        # DAQP's sense of a soft constraint
BRAKING_SHARE = 0.5  # of the room a tick and its braking tail may use, by the linear rate
PRIMAL_TOLERANCE = 1e-6  # DAQP's default primal tolerance: a row met within it is met


@njit(cache=True, nogil=True)
def joint_axes(joint_T, axis, out):
    """Write each tree joint's axis in the base frame, ``w_t = R_t a_t``, into ``out[t]``."""
    for t in range(axis.shape[0]):
        for r in range(3):
            out[t, r] = (joint_T[t, r, 0] * axis[t, 0] + joint_T[t, r, 1] * axis[t, 1]
                         + joint_T[t, r, 2] * axis[t, 2])


@njit(cache=True, nogil=True)
def approach_row(joint_T, w, kind, multiplier, ctrl_index, ancestors, joint_a, joint_b,
                 point_a, point_b, normal, out):
    """
    Write ``c^T = n^T (Jp_b(p_b) - Jp_a(p_a))`` of one pair into ``out``.

    ``joint_a``/``joint_b``: the tree joint each shape is fixed to (-1: base or scene);
    a revolute ancestor ``t`` contributes ``m_t n . (w_t x (p - o_t))``, a prismatic one
    ``m_t n . w_t`` (``w_t`` its axis in the base frame, :func:`joint_axes`, ``o_t`` its
    origin, ``m_t`` its mimic multiplier) to the column of its controlled joint.
    """
    nt = w.shape[0]
    for c in range(out.shape[0]):
        out[c] = 0.0
    for side in range(2):
        j = joint_b if side == 0 else joint_a
        if j < 0:
            continue
        sign = 1.0 if side == 0 else -1.0
        p = point_b if side == 0 else point_a
        for t in range(nt):
            col = ctrl_index[t]
            if col < 0 or not ancestors[j + 1, t]:
                continue
            wx, wy, wz = w[t, 0], w[t, 1], w[t, 2]
            if kind[t] == _REVOLUTE:  # w x (p - o)
                rx = p[0] - joint_T[t, 0, 3]
                ry = p[1] - joint_T[t, 1, 3]
                rz = p[2] - joint_T[t, 2, 3]
                vx, vy, vz = wy * rz - wz * ry, wz * rx - wx * rz, wx * ry - wy * rx
            else:
                vx, vy, vz = wx, wy, wz
            out[col] += sign * multiplier[t] * (normal[0] * vx + normal[1] * vy
                                                + normal[2] * vz)


@njit(cache=True, nogil=True)
def damper_rows(joint_T, axis, kind, multiplier, ctrl_index, ancestors, shape_joint, pairs,
                pair_index, distance, point_a, point_b, normal, count, within, lag, influence,
                security, gain, h, v_prev, a_max, v, near, c, k, bound, w):
    """
    Build both rows (module docstring) of every measured pair nearer than ``within``.

    ``lag`` [m], per pair: ``e_k`` of the module docstring, taken from the room. Of the
    ``count`` measured rows, those nearer than ``within`` go to ``near[:m]``, their
    ``c`` to ``c[:m]``, the braking coefficients to ``k`` (per joint), the soft bounds to
    ``bound[:m]`` (``_INF`` beyond the influence distance) and the hard ones to
    ``bound[m:2m]``. Returns ``(m, nearest measured row or -1, whether ``v`` breaks a row)``.
    ``w``: room for the joints' axes (:func:`joint_axes`, once for all rows).
    """
    n = v_prev.shape[0]
    for j in range(n):
        k[j] = 0.5 * h + (abs(v_prev[j]) + a_max[j] * h) / (2.0 * a_max[j])
    m = 0
    nearest = -1
    for i in range(count):
        if distance[i] < within[pair_index[i]]:
            near[m] = i
            m += 1
            if nearest < 0 or distance[i] < distance[nearest]:
                nearest = i
    broken = False
    if m > 0:
        joint_axes(joint_T, axis, w)
    for r in range(m):
        i = near[r]
        pair = pairs[pair_index[i]]
        approach_row(joint_T, w, kind, multiplier, ctrl_index, ancestors,
                     shape_joint[pair[0]], shape_joint[pair[1]], point_a[i], point_b[i],
                     normal[i], c[r])
        margin = distance[i] - security - lag[pair_index[i]]
        room = max(margin, 0.0)
        rate = 0.0
        tail = 0.0
        held = 0.0
        for j in range(n):
            rate += c[r, j] * v[j]
            tail += c[r, j] * k[j] * v[j]
            held += c[r, j] * v_prev[j]
        soft = gain * margin if distance[i] < influence else _INF
        hard = BRAKING_SHARE * room + held * 0.5 * h
        bound[r] = soft
        bound[m + r] = hard
        if -rate > soft or -tail > hard:
            broken = True
    return m, nearest, broken


@njit(cache=True, nogil=True)
def live_pairs(c, k, bound, m, lo, hi, live):
    """
    Write to ``live`` the pairs (of ``m``) with a row some velocity in ``[lo, hi]`` breaks.

    The largest ``A v`` over the box is ``sum_j max(A_j lo_j, A_j hi_j)``; a row whose
    largest stays within its bound needs no place in the QP. Returns their count.
    """
    count = 0
    n = lo.shape[0]
    for r in range(m):
        soft = 0.0
        hard = 0.0
        for j in range(n):
            a = -c[r, j]
            soft += max(a * lo[j], a * hi[j])
            hard += max(a * k[j] * lo[j], a * k[j] * hi[j])
        if soft > bound[r] or hard > bound[m + r]:
            live[count] = r
            count += 1
    return count


@njit(cache=True, nogil=True)
def _row_sum(a, n):
    """
    Return ``a[:n].sum()``, added in numpy's order for ``n <= 128``.

    numpy adds pairwise: eight running sums from eight terms on. So the compiled QP set-up
    (:func:`qp_rows`) decides as numpy's did. Beyond 128 terms (numpy splits in halves
    there; a recursive kernel cannot be cached) one running sum.
    """
    if n < 8 or n > 128:
        total = 0.0
        for i in range(n):
            total += a[i]
        return total
    r0, r1, r2, r3, r4, r5, r6, r7 = a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]
    i = 8
    while i < n - n % 8:
        r0 += a[i]
        r1 += a[i + 1]
        r2 += a[i + 2]
        r3 += a[i + 3]
        r4 += a[i + 4]
        r5 += a[i + 5]
        r6 += a[i + 6]
        r7 += a[i + 7]
        i += 8
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        total += a[i]
        i += 1
    return total


@njit(cache=True, nogil=True)
def qp_rows(c, k, bound, m, live, lo, hi, A, upper, lower, scratch):
    """
    Write the QP of the module docstring for the pairs ``live`` (rows of the ``m`` near).

    ``A[:2 l]`` (``l = len(live)``): the soft rows ``-c``, then the braking rows ``-(c
    k)``; ``upper[:n + 2 l]``: the box's ``hi``, then the rows' bounds (``bound[r]``,
    ``bound[m + r]``); ``lower``: ``lo``, then ``-inf``. Returns whether some braking
    row is met by no velocity of the box: ``sum_j min(A_j lo_j, A_j hi_j)`` above its
    bound by more than :data:`PRIMAL_TOLERANCE` (no solution: DAQP is not asked).
    ``scratch``: room for ``n`` values.
    """
    n = lo.shape[0]
    count = live.shape[0]
    for j in range(n):
        upper[j] = hi[j]
        lower[j] = lo[j]
    for r in range(count):
        i = live[r]
        for j in range(n):
            A[r, j] = -c[i, j]
            A[count + r, j] = -(c[i, j] * k[j])
        upper[n + r] = bound[i]
        upper[n + count + r] = bound[i + m]
        lower[n + r] = -_INF
        lower[n + count + r] = -_INF
    infeasible = False
    for r in range(count):
        for j in range(n):
            a = A[count + r, j]
            scratch[j] = min(a * lo[j], a * hi[j])
        if _row_sum(scratch, n) > upper[n + count + r] + PRIMAL_TOLERANCE:
            infeasible = True
    return infeasible


@njit(cache=True, nogil=True)
def pair_reach(pair_lever, q, q_last, v_prev, a_max, h, security, influence, started,
               error, within, travel, lag, motion):
    """
    Write each pair's ``within`` and ``lag`` [m], add to its ``travel`` [m]; ``q`` to ``q_last``.

    ``lag_k = sum_j R_kj e_j`` (``e``: ``error``, the tracking error [rad or m], module
    docstring); ``within_k = max(influence, security + lag_k + sum_j R_kj m_j)``, ``m_j =
    |v_j| h + (|v_j| + a_j h)^2 / (2 a_j)``: how far the pair's shapes may come nearer
    over the tick and its braking tail (``R_kj``: :attr:`CollisionModel.pair_lever`);
    ``travel_k += sum_j R_kj |q_j - q_last_j|`` (when ``started``): how far they may have
    come nearer since the last tick (module docstring, :meth:`CollisionModel.near_pairs`).
    """
    n = q.shape[0]
    for j in range(n):
        speed = abs(v_prev[j]) + a_max[j] * h
        motion[j] = abs(v_prev[j]) * h + speed * speed / (2.0 * a_max[j])
    for k in range(pair_lever.shape[0]):
        reach = 0.0
        moved = 0.0
        off = 0.0
        for j in range(n):
            r = pair_lever[k, j]
            if r != 0.0:
                reach += r * motion[j]
                moved += r * abs(q[j] - q_last[j])
                off += r * error[j]
        lag[k] = off
        within[k] = max(influence, security + off + reach)
        if started:
            travel[k] += moved
    for j in range(n):
        q_last[j] = q[j]


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
        self._near = np.zeros(0, dtype=np.int64)   # damper_rows' outputs, sized by _rows
        self._c = np.zeros((0, n))
        self._bound = np.zeros(0)
        self._live = np.zeros(0, dtype=np.int64)
        self._k = np.zeros(n)
        self.closest_distance = np.inf
        self._closest_row = -1
        self.rows = 0
        self.travel = np.zeros(0)    # per pair: sum_j R_kj |dq_j| along the knots [m]
        self._within = np.zeros(0)   # per pair: the distance within which it counts [m]
        self._lag = np.zeros(0)      # per pair: the tracking error's reach, e_k [m]
        self._motion = np.zeros(n)
        self._on_path = np.zeros(n)  # no tracking error
        self._q_last = np.zeros(n)   # the last tick's knot (pair_reach)
        self._started = False
        self._lo, self._hi = np.zeros(n), np.zeros(n)
        self._sense = np.zeros(n + 2 * MAX_ROWS, dtype=np.int32)
        self._A = np.zeros((2 * MAX_ROWS, n))  # the QP's rows and bounds (qp_rows)
        self._upper, self._lower = np.zeros(n + 2 * MAX_ROWS), np.zeros(n + 2 * MAX_ROWS)
        self._scratch = np.zeros(n)
        self._axes = np.zeros((model.axis.shape[0], 3))  # damper_rows' joint axes
        self._regularization = TASK_REGULARIZATION * np.eye(n)
        self._v_limited = np.zeros(n)
        m = model
        self._tables = (m.axis, m.kind.astype(np.int64), m.multiplier.astype(float),
                        m.ctrl_index.astype(np.int64), m._joint_ancestors)
        self._compile()

    def _compile(self):
        """Run the compiled kernel once (loaded from numba's cache), not in the first tick."""
        ws = self.model.workspace()
        ws.update(self.model.center, jacobian=False)
        n = self.model.nq
        self.cm.near_pairs(ws.joint_T, 0.0)
        v = np.zeros(n)
        P = len(self.cm.pairs)
        self._rows(ws.joint_T, 0, np.zeros(P), np.zeros(P), 0.001, v, np.ones(n), v)
        pair_reach(self.cm.pair_lever, v, v.copy(), v, np.ones(n), 0.001, 0.0, 0.0, False, v,
                   np.zeros(P), np.zeros(P), np.zeros(P), self._motion)
        live_pairs(self._c, self._k, self._bound, 0, v, v, self._live)
        qp_rows(self._c, self._k, self._bound, 0, self._live[:0], v, v, self._A, self._upper,
                self._lower, self._scratch)
        limits.velocity_box(v, v, v - 1.0, v + 1.0, 0.0, np.ones(n), np.ones(n), 0.001,
                            self._lo, self._hi)

    def _rows(self, joint_T, count, within, lag, h, v_prev, a_max, v):
        """Run :func:`damper_rows` on the model's ``count`` measured pairs (sized to them)."""
        cm = self.cm
        P = len(cm.pairs)
        if self._near.shape[0] < P:  # a larger scene: room for all its pairs
            self._near = np.zeros(P, dtype=np.int64)
            self._c = np.zeros((P, self.model.nq))
            self._bound = np.zeros(2 * P)
            self._live = np.zeros(P, dtype=np.int64)
        return damper_rows(joint_T, *self._tables, cm.shape_joints, cm.pairs, cm.pair_index,
                           cm.distance, cm.point_a, cm.point_b, cm.normal, count, within, lag,
                           self.influence, self.security, self.gain, h, v_prev, a_max,
                           v, self._near, self._c, self._k, self._bound, self._axes)

    @property
    def closest_pair(self):
        """Names of the nearest pair measured at the last :meth:`constrain` ('' if none)."""
        return '' if self._closest_row < 0 else self.cm.pair_name(self._closest_row)

    def constrain(self, joint_T, J, q, v_prev, v_des, v_max, a_max, lower, upper, margin, h,
                  error=None):
        """
        Bound ``v_des`` (in place) by the near pairs at the placements ``joint_T``.

        ``q``, ``v_prev``: the committed knot the tick starts from; ``J``: the task
        Jacobian of this tick, or None; ``h`` [s] the tick's step; ``error`` [rad or m]
        the robot's tracking error per joint (module docstring; None: on the path). Returns
        the flag bits
        :data:`NEAR`, :data:`LIMITED`, :data:`HALTED`.
        """
        cm = self.cm
        P = len(cm.pairs)
        if self._within.shape[0] != P:  # a new scene: every pair measured afresh
            self._within, self.travel, self._lag = np.zeros(P), np.zeros(P), np.zeros(P)
        pair_reach(cm.pair_lever, q, self._q_last, v_prev, a_max, h, self.security,
                   self.influence, self._started, self._on_path if error is None else error,
                   self._within, self.travel, self._lag, self._motion)
        self._started = True
        count = cm.near_pairs(joint_T, self._within, self.travel)
        # the rows are tested on the velocity the limiter will command, not on v_des: a
        # v_des beyond the acceleration limit that turns away from a pair is not what the
        # robot does this tick
        limits.limit_velocity(q, v_prev, v_des, lower, upper, margin, v_max, a_max, h,
                              self._v_limited)
        m, nearest, broken = self._rows(joint_T, count, self._within, self._lag, h, v_prev,
                                        a_max, self._v_limited)
        self.rows = 0
        if nearest < 0:
            self.closest_distance, self._closest_row = np.inf, -1
            return 0
        self.closest_distance = float(cm.distance[nearest])
        self._closest_row = int(cm.pair_index[nearest])
        flag = NEAR if self.closest_distance < self.influence else 0
        if not broken:
            return flag
        lo, hi = self._lo, self._hi
        limits.velocity_box(q, v_prev, lower, upper, margin, v_max, a_max, h, lo, hi)
        np.maximum(hi, lo, out=hi)  # no room: the limiter decides that joint
        # rows no velocity of this tick's box can break are left out of the QP; of the
        # others, the MAX_ROWS pairs with the least room
        c, k, bound = self._c, self._k, self._bound
        live = self._live[:live_pairs(c, k, bound, m, lo, hi, self._live)]
        if live.size > MAX_ROWS:
            live = live[np.argsort(cm.distance[self._near[live]])[:MAX_ROWS]]
        self.rows = live.size
        if live.size == 0:  # within the box every row holds: the limiter's box is enough
            return flag
        near, m, n = m, live.size, q.size
        A, upper_b, lower_b = self._A[:2 * m], self._upper[:n + 2 * m], self._lower[:n + 2 * m]
        # a braking row that no velocity of the box meets: no solution, and DAQP 0.11 given
        # soft rows on a problem whose hard part has none corrupted memory (module docstring)
        if qp_rows(c, k, bound, near, live, lo, hi, A, upper_b, lower_b,
                   self._scratch):
            exitflag = -1
        else:
            if J is None:
                H = np.eye(n)
            else:
                H = J.T @ J + self._regularization
            f = -(H @ v_des)
            sense = self._sense[:n + 2 * m]
            sense[n:n + m] = SOFT
            x, _, exitflag, _ = daqp.solve(H, f, A, upper_b, lower_b, sense)
        if exitflag < 1:  # no velocity within the limits keeps every pair: brake
            np.clip(np.zeros(n), lo, hi, out=v_des)
            return flag | LIMITED | HALTED
        halted = np.linalg.norm(x) < 0.01 * np.linalg.norm(v_des)
        v_des[:] = x
        return flag | LIMITED | (HALTED if halted else 0)

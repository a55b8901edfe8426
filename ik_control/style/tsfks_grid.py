"""
The grids of TSFKS (Gielniak et al., sec. IV-A): eq. (1)'s samples and their compiled search.

The search is exhaustive over the grid (``prod_j (i_max_j - 1)`` FK evaluations per step),
so it is written as one compiled loop: an odometer over the grid whose fastest digit is the
most distal searched joint, and forward kinematics along the end effector's chain only,
recomputed from the first joint whose value changed (the placements of the joints above
it are kept). One evaluation then costs a few 4x4 products instead of a whole-tree FK.

The chain recursion is that of :mod:`ik_control.kinematics.kernels` (``T_j = T_parent @ M_j @
X_j(q_j)``), restricted to the joints that move the end effector; tests check it against
:meth:`RobotModel.frame_placements`.
"""

from ik_control.kinematics import kernels
from ik_control.validation import InputError
from numba import njit
import numpy as np


def eq1_samples(lo, hi, increment):
    """
    Eq. (1): interior samples ``lo + i / i_max (hi - lo)``, ``i = 1 .. i_max - 1`` [rad].

    ``i_max = round((hi - lo) / increment)``, at least 2 (one sample, the middle). A window of
    zero width gives its single value.
    """
    lo, hi, increment = float(lo), float(hi), float(increment)
    if not increment > 0.0:
        raise InputError(f'search increment must be > 0 [rad], got {increment}')
    if hi < lo:
        raise InputError(f'search window [{lo}, {hi}] is empty')
    i_max = max(2, int(round((hi - lo) / increment)))
    return lo + np.arange(1, i_max) / i_max * (hi - lo)


@njit(cache=True, nogil=True)
def _place_joint(T_parent, M, axis, kind, q, tmp, out):
    """``out = T_parent @ M @ X(q)``, X a rotation about / translation along the unit ``axis``."""
    for r in range(4):
        for c in range(4):
            tmp[r, c] = (T_parent[r, 0] * M[0, c] + T_parent[r, 1] * M[1, c]
                         + T_parent[r, 2] * M[2, c] + T_parent[r, 3] * M[3, c])
    x, y, z = axis[0], axis[1], axis[2]
    if kind == kernels.JOINT_PRISMATIC:
        for r in range(4):
            for c in range(4):
                out[r, c] = tmp[r, c]
        for r in range(3):
            out[r, 3] = tmp[r, 3] + q * (tmp[r, 0] * x + tmp[r, 1] * y + tmp[r, 2] * z)
        return
    c_, s_ = np.cos(q), np.sin(q)
    v = 1.0 - c_
    # Rodrigues: rotation about the unit axis (x, y, z) by q
    m00 = c_ + x * x * v
    m01 = x * y * v - z * s_
    m02 = x * z * v + y * s_
    m10 = y * x * v + z * s_
    m11 = c_ + y * y * v
    m12 = y * z * v - x * s_
    m20 = z * x * v - y * s_
    m21 = z * y * v + x * s_
    m22 = c_ + z * z * v
    for r in range(3):
        a0, a1, a2 = tmp[r, 0], tmp[r, 1], tmp[r, 2]
        out[r, 0] = a0 * m00 + a1 * m10 + a2 * m20
        out[r, 1] = a0 * m01 + a1 * m11 + a2 * m21
        out[r, 2] = a0 * m02 + a1 * m12 + a2 * m22
        out[r, 3] = tmp[r, 3]
    for c in range(4):
        out[3, c] = tmp[3, c]


@njit(cache=True, nogil=True)
def _segment_distance(T, A, B, target):
    """Distance [m] from ``target`` to the segment ``T @ [A, B]`` (a point if A = B)."""
    a0 = T[0, 0] * A[0] + T[0, 1] * A[1] + T[0, 2] * A[2] + T[0, 3]
    a1 = T[1, 0] * A[0] + T[1, 1] * A[1] + T[1, 2] * A[2] + T[1, 3]
    a2 = T[2, 0] * A[0] + T[2, 1] * A[1] + T[2, 2] * A[2] + T[2, 3]
    d0 = T[0, 0] * (B[0] - A[0]) + T[0, 1] * (B[1] - A[1]) + T[0, 2] * (B[2] - A[2])
    d1 = T[1, 0] * (B[0] - A[0]) + T[1, 1] * (B[1] - A[1]) + T[1, 2] * (B[2] - A[2])
    d2 = T[2, 0] * (B[0] - A[0]) + T[2, 1] * (B[1] - A[1]) + T[2, 2] * (B[2] - A[2])
    e0 = target[0] - a0
    e1 = target[1] - a1
    e2 = target[2] - a2
    dd = d0 * d0 + d1 * d1 + d2 * d2
    u = 0.0
    if dd > 0.0:
        u = min(1.0, max(0.0, (e0 * d0 + e1 * d1 + e2 * d2) / dd))
    r0 = e0 - u * d0
    r1 = e1 - u * d1
    r2 = e2 - u * d2
    return np.sqrt(r0 * r0 + r1 * r1 + r2 * r2)


@njit(cache=True, nogil=True)
def grid_search(base_inv, placement, axis, kind, slot, multiplier, q_fixed, frame_placement,
                seg_a, seg_b, target, values, counts, keep, preferred, weight, every):
    """
    Exhaustive search of the grid ``values[s, :counts[s]]`` (one row per searched joint ``s``).

    Chain arrays (one entry per joint of the chain, root first): ``placement`` (c, 4, 4),
    ``axis`` (c, 3), ``kind``, ``slot`` (searched joint driving it, or -1), ``multiplier``
    (URDF mimic factor of a searched joint), ``q_fixed`` (the joint value when not searched,
    the mimic offset when searched: ``q = multiplier * value + q_fixed``). Searched joints
    are numbered in chain order (slot ``s`` first appears before slot ``s + 1``). The joints
    below the last searched one do not change: their product with ``frame_placement`` is
    taken once. The cost of a grid point is its distance plus the posture term
    ``sum_s weight[s] * (value_s - preferred[s])^2`` [m] (zero weights: distance alone).
    Returns the ``keep`` best grid points, best first: (grid indices (keep, ns), their
    distances [m] (keep,), inf where the grid has fewer points), and the evaluations made.
    ``every``: empty, or (prod(counts),) to receive every grid point's distance [m] in the
    odometer's order (C order of the grid indices: the last joint fastest).
    """
    nc = placement.shape[0]
    ns = counts.shape[0]
    first = np.full(ns, nc, dtype=np.int64)
    last = 0
    for c in range(nc):
        s = slot[c]
        if s >= 0:
            last = c
            if first[s] == nc:
                first[s] = c
    tmp = np.empty((4, 4))
    tail = np.empty((2, 4, 4))
    tail[0] = np.eye(4)
    k = 0
    for c in range(last + 1, nc):
        _place_joint(tail[k], placement[c], axis[c], kind[c], q_fixed[c], tmp, tail[1 - k])
        k = 1 - k
    # segment endpoints in the frame of the last searched joint
    A = np.empty(3)
    B = np.empty(3)
    for r in range(3):
        A[r] = frame_placement[r, 3]
        B[r] = frame_placement[r, 3]
        for c in range(3):
            A[r] += frame_placement[r, c] * seg_a[c]
            B[r] += frame_placement[r, c] * seg_b[c]
    A2 = np.empty(3)
    B2 = np.empty(3)
    for r in range(3):
        A2[r] = tail[k, r, 3] + tail[k, r, 0] * A[0] + tail[k, r, 1] * A[1] + tail[k, r, 2] * A[2]
        B2[r] = tail[k, r, 3] + tail[k, r, 0] * B[0] + tail[k, r, 1] * B[1] + tail[k, r, 2] * B[2]
    prefix = np.empty((last + 2, 4, 4))
    prefix[0] = base_inv
    idx = np.zeros(ns, dtype=np.int64)
    best = np.zeros((keep, ns), dtype=np.int64)
    best_d = np.full(keep, np.inf)
    best_cost = np.full(keep, np.inf)
    start = 0
    evaluations = 0
    while True:
        for c in range(start, last + 1):
            s = slot[c]
            q = q_fixed[c] if s < 0 else multiplier[c] * values[s, idx[s]] + q_fixed[c]
            _place_joint(prefix[c], placement[c], axis[c], kind[c], q, tmp, prefix[c + 1])
        d = _segment_distance(prefix[last + 1], A2, B2, target)
        if every.shape[0] > 0:
            every[evaluations] = d
        cost = d
        for s in range(ns):
            dv = values[s, idx[s]] - preferred[s]
            cost += weight[s] * dv * dv
        evaluations += 1
        if cost < best_cost[keep - 1]:           # insert into the sorted list of the best
            r = keep - 1
            while r > 0 and best_cost[r - 1] > cost:
                best_cost[r] = best_cost[r - 1]
                best_d[r] = best_d[r - 1]
                best[r] = best[r - 1]
                r -= 1
            best_cost[r] = cost
            best_d[r] = d
            best[r] = idx
        # odometer: the last (most distal) searched joint turns fastest
        s = ns - 1
        while s >= 0:
            idx[s] += 1
            if idx[s] < counts[s]:
                break
            idx[s] = 0
            s -= 1
        if s < 0:
            break
        start = first[s]
    return best, best_d, evaluations

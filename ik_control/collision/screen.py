"""
The compiled broad phase of :class:`~ik_control.collision.model.CollisionModel`.

Each call places every shape (``place[g] = joint_T[geom_joint[g]] @ local[g]``), screens
the checked pairs by their bounding spheres (sound: the spheres hold the shapes) and, for
the controller, by temporal coherence (a pair measured at ``d`` is at least ``d`` less
the travel since apart), then measures the candidates that are primitives or hulls with
GJK (:mod:`~ik_control.collision.gjk`). Rows left to coal (meshes, contact) are the
model's to measure. One compiled call a tick: :func:`measure_near` for
:meth:`CollisionModel.near_pairs <ik_control.collision.model.CollisionModel.near_pairs>`,
:func:`any_within` for the planner's yes-or-no.
"""

from ik_control.collision import gjk
from numba import njit
import numpy as np

__all__ = ['any_within', 'measure_near', 'record', 'screen_pairs']


@njit(cache=True, nogil=True)
def screen_pairs(joint_T, geom_joint, local, centre, radius, pairs, limit, travel, last_d,
                 last_travel, place, out):
    """
    Place every shape and return the pairs whose bounding spheres are within ``limit[k]``.

    ``place[g] = joint_T[geom_joint[g]] @ local[g]`` (``local[g]`` alone for shapes fixed
    to the base, ``geom_joint[g] < 0``); the pair ``(a, b)`` is a candidate when
    ``|c_a - c_b| - r_a - r_b <= limit[k]`` with ``c = R centre + t``, and (temporal
    coherence, :meth:`CollisionModel.near_pairs`) ``last_d[k] - (travel[k] -
    last_travel[k]) <= limit[k]``. Writes the candidate rows of ``pairs`` into ``out``;
    returns their count.
    """
    G = geom_joint.shape[0]
    for g in range(G):
        j = geom_joint[g]
        if j < 0:
            for r in range(4):
                for c in range(4):
                    place[g, r, c] = local[g, r, c]
        else:
            for r in range(3):
                for c in range(4):
                    s = 0.0
                    for k in range(4):
                        s += joint_T[j, r, k] * local[g, k, c]
                    place[g, r, c] = s
            place[g, 3, 0] = 0.0
            place[g, 3, 1] = 0.0
            place[g, 3, 2] = 0.0
            place[g, 3, 3] = 1.0
    count = 0
    for k in range(pairs.shape[0]):
        if last_d[k] - (travel[k] - last_travel[k]) > limit[k]:
            continue  # measured far enough, and not moved enough since
        a, b = pairs[k, 0], pairs[k, 1]
        d2 = 0.0
        for r in range(3):
            ca = place[a, r, 3]
            cb = place[b, r, 3]
            for c in range(3):
                ca += place[a, r, c] * centre[a, c]
                cb += place[b, r, c] * centre[b, c]
            d2 += (ca - cb) * (ca - cb)
        if np.sqrt(d2) - radius[a] - radius[b] <= limit[k]:
            out[count] = k
            count += 1
    return count


@njit(cache=True, nogil=True)
def record(candidates, count, distance, travel, coherent, pair_index, last_d, last_travel):
    """
    Keep the ``count`` measured rows of :func:`measure_near`.

    ``pair_index[i] = candidates[i]``; when ``coherent``, each pair's distance and travel
    then (``last_d``, ``last_travel``, for :func:`screen_pairs`).
    """
    for i in range(count):
        k = candidates[i]
        pair_index[i] = k
        if coherent:
            last_d[k] = distance[i]
            last_travel[k] = travel[k]


@njit(cache=True, nogil=True)
def measure_near(joint_T, geom_joint, local, centre, radius, pairs, limit, travel, last_d,
                 last_travel, place, candidates, kind, dims, margin, points, span, adj_start,
                 adj, distance, point_a, point_b, normal, scratch, left, warm, pair_index,
                 coherent):
    """
    :meth:`CollisionModel.near_pairs` in one call: return ``(count, left to coal)``.

    :func:`screen_pairs`, then GJK (:func:`~ik_control.collision.gjk.measure_pairs`) on its
    ``count`` candidates; when GJK measured them all, :func:`record` keeps them. Rows
    left to coal (meshes, contact) are the caller's to measure, then to record.
    """
    count = screen_pairs(joint_T, geom_joint, local, centre, radius, pairs, limit, travel,
                         last_d, last_travel, place, candidates)
    if count == 0:
        return 0, 0
    n_left = gjk.measure_pairs(place, kind, dims, margin, points, span, adj_start, adj, pairs,
                               candidates, count, distance, point_a, point_b, normal, scratch,
                               left, warm)
    if n_left == 0:
        record(candidates, count, distance, travel, coherent, pair_index, last_d,
               last_travel)
    return count, n_left


@njit(cache=True, nogil=True)
def any_within(joint_T, geom_joint, local, centre, radius, pairs, within, never, zeros, place,
               candidates, kind, dims, margin, points, span, adj_start, adj, distance,
               point_a, point_b, normal, scratch, left):
    """
    Whether a pair is within ``within[k]`` [m]: 1 yes, 0 no, ``-m``: ask coal about ``m`` rows.

    :func:`screen_pairs` without temporal coherence, then GJK on the candidates
    (:func:`~ik_control.collision.gjk.measure_pairs`). A pair of primitives whose cores
    touch is within any ``within[k] > 1e-9`` (the depth coal would give is not needed); the
    rows of mesh pairs GJK cannot measure are left in ``left[:m]`` when no measured pair
    decides.
    """
    count = screen_pairs(joint_T, geom_joint, local, centre, radius, pairs, within, zeros,
                         never, zeros, place, candidates)
    if count == 0:
        return 0
    n_left = gjk.measure_pairs(place, kind, dims, margin, points, span, adj_start, adj, pairs,
                               candidates, count, distance, point_a, point_b, normal, scratch,
                               left, gjk.NO_WARM_START)
    meshes = 0
    for i in range(n_left):
        row = left[i]
        k = candidates[row]
        if kind[pairs[k, 0]] != gjk.OTHER and kind[pairs[k, 1]] != gjk.OTHER:
            return 1            # primitives in contact
        left[meshes] = row
        meshes += 1
        distance[row] = np.inf
    for i in range(count):
        if distance[i] <= within[candidates[i]]:
            return 1
    return -meshes

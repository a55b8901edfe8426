"""
A sound broad phase in front of the collision model's distances: spheres that prove pairs apart.

Measuring every checked pair (80 to 130 pairs for the WAM among the benchmark's
furniture) costs tens of microseconds a configuration, while at a typical configuration
almost every pair is far apart. Here each robot shape is
covered by spheres fixed to its joint:

* a sphere: itself; a cylinder of radius ``r`` and half-length ``h``: ``n = ceil(2 h /
  r)`` spheres centred on its axis at the middles of ``n`` equal slices, of radius
  ``sqrt(r^2 + (h / n)^2)`` (a slice's farthest point from its centre); a capsule: the
  same centres, radius ``r + h / n``; any other shape (sphere, box, cone, mesh): its
  bounding sphere (:func:`~ik_control.collision.shapes.bounding_sphere`),
* plus one sphere about each shape holding the whole shape, tested first.

Robot shapes that no joint moves (the WAM's base housing) and are boxes, spheres or
cylinders count as obstacles. A pair is *apart* when every sphere of the robot shape is
farther than ``limit = clearance + MARGIN`` from the obstacle (the exact distance from
the sphere's centre to a box, sphere or cylinder, minus the radius), or, for two moving
robot shapes, the whole spheres or every cover sphere of one from every one of the other.
The covers hold the shapes, so an apart pair is farther apart than ``limit``: a distance
would find it free too (``MARGIN`` = 10 um keeps the solvers' tolerance out of the
decision). Only the pairs not proved apart are measured
(:class:`~ik_control.collision.model.CollisionModel`, the authority); a configuration
whose pairs are all apart costs forward kinematics and about a hundred point distances
(3-4 us compiled, on a busy 2-core machine). At the nodes of the benchmark's trees 85 %
of the configurations leave no pair to coal, the others one or two (shoulder against
upper arm, wrist against hand). Along a segment, a pair's gap is carried from sample to
sample less the most any robot point can move in between (:func:`scan`), so that far
pairs are not computed again at every sample.
"""

import math

from ik_control.kinematics import kernels
from numba import njit
import numpy as np

MARGIN = 1e-5           # [m] added to the clearance before a pair counts as apart
OBSTACLE_CODES = {'box': 0, 'sphere': 1, 'cylinder': 2}


def shape_spheres(geometry, centre, radius):
    """
    Return the covering spheres of a coal shape in its own frame, (k x 4: centre, radius).

    Row 0 holds the whole shape: its bounding sphere, ``centre`` (3,) and ``radius`` [m]
    (:func:`~ik_control.collision.shapes.bounding_sphere`); the rows after it cover it
    (module docstring).
    """
    kind = type(geometry).__name__
    whole = [*np.asarray(centre, dtype=float), float(radius)]
    if kind in ('Cylinder', 'Capsule'):
        r, h = float(geometry.radius), float(geometry.halfLength)
        n = max(1, math.ceil(2.0 * h / r))
        rho = math.hypot(r, h / n) if kind == 'Cylinder' else r + h / n
        rows = [whole] + [[0.0, 0.0, -h + (2 * k + 1) * h / n, rho] for k in range(n)]
        return np.array(rows)
    return np.array([whole, whole])


def pack(limit, resolution, radii, local, joint, start, pairs, obs_inv, obs_code, obs_size):
    """
    Pack the screen's tables into ``(CF, CI)``, one float and one int array.

    (Each array argument of a compiled call costs about 0.1 us to unbox.) ``limit`` [m]: a
    pair is apart beyond it; ``resolution``/``radii``: the segment sampling
    (``CollisionChecker``); ``local``/``joint``/``start``: the covering spheres of every
    robot shape (shape ``g`` owns rows ``start[g]`` to ``start[g + 1]``, row
    ``start[g]`` holds the whole shape; ``joint`` the tree joint, -1 fixed in the base
    frame); ``pairs`` rows: (robot shape, robot shape or obstacle, 0 self / 1 obstacle,
    coal pair index); obstacles: inverse poses (4x4, base frame), codes
    (:data:`OBSTACLE_CODES`), half sizes (box: half sides; sphere: radius; cylinder:
    radius, half-length).
    """
    S, G, P, O, nq = len(local), len(start) - 1, len(pairs), len(obs_code), len(radii)
    CF = np.concatenate([[limit, resolution], radii, np.ravel(local), np.ravel(obs_inv),
                         np.ravel(obs_size)]).astype(np.float64)
    CI = np.concatenate([[S, G, P, O, nq], joint, start, np.ravel(pairs),
                         obs_code]).astype(np.int64)
    return CF, CI


def work_buffers(CI):
    """Return the float and int work arrays of :func:`scan` for packed tables ``CI``."""
    S, P, nq = CI[0], CI[2], CI[4]
    return np.zeros(S * 4 + nq + 2 * P), np.zeros(max(1, P), dtype=np.int64)


@njit(cache=True, nogil=True, inline='always')
def _views(CF, CI, SW):
    S, G, P, O, nq = CI[0], CI[1], CI[2], CI[3], CI[4]
    limit, resolution = CF[0], CF[1]
    o = 2
    radii = CF[o:o + nq]
    o += nq
    local = CF[o:o + S * 4].reshape((S, 4))
    o += S * 4
    obs_inv = CF[o:o + O * 16].reshape((O, 4, 4))
    o += O * 16
    obs_size = CF[o:o + O * 3].reshape((O, 3))
    k = 5
    joint = CI[k:k + S]
    k += S
    start = CI[k:k + G + 1]
    k += G + 1
    pairs = CI[k:k + P * 4].reshape((P, 4))
    k += P * 4
    obs_code = CI[k:k + O]
    spheres = SW[0:S * 4].reshape((S, 4))
    q = SW[S * 4:S * 4 + nq]
    o = S * 4 + nq
    bound = SW[o:o + P]
    at = SW[o + P:o + 2 * P]
    return (limit, resolution, radii, local, joint, start, pairs, obs_inv, obs_code, obs_size,
            spheres, q, bound, at)


@njit(cache=True, nogil=True, inline='always')
def _place(joint_T, local, joint, out):
    """Sphere centres in the base frame: ``local`` on tree joint ``joint`` (-1: fixed)."""
    for s in range(local.shape[0]):
        j = joint[s]
        x, y, z = local[s, 0], local[s, 1], local[s, 2]
        if j < 0:
            out[s, 0], out[s, 1], out[s, 2] = x, y, z
        else:
            out[s, 0] = joint_T[j, 0, 0] * x + joint_T[j, 0, 1] * y + joint_T[j, 0, 2] * z \
                + joint_T[j, 0, 3]
            out[s, 1] = joint_T[j, 1, 0] * x + joint_T[j, 1, 1] * y + joint_T[j, 1, 2] * z \
                + joint_T[j, 1, 3]
            out[s, 2] = joint_T[j, 2, 0] * x + joint_T[j, 2, 1] * y + joint_T[j, 2, 2] * z \
                + joint_T[j, 2, 3]
        out[s, 3] = local[s, 3]


@njit(cache=True, nogil=True, inline='always')
def _obstacle_apart(spheres, s, obs_inv, b, code, size, limit):
    """Whether sphere ``s`` is farther than ``limit`` from obstacle ``b`` (exact distances)."""
    cx, cy, cz = spheres[s, 0], spheres[s, 1], spheres[s, 2]
    x = obs_inv[b, 0, 0] * cx + obs_inv[b, 0, 1] * cy + obs_inv[b, 0, 2] * cz + obs_inv[b, 0, 3]
    y = obs_inv[b, 1, 0] * cx + obs_inv[b, 1, 1] * cy + obs_inv[b, 1, 2] * cz + obs_inv[b, 1, 3]
    z = obs_inv[b, 2, 0] * cx + obs_inv[b, 2, 1] * cy + obs_inv[b, 2, 2] * cz + obs_inv[b, 2, 3]
    reach = limit + spheres[s, 3]
    if code == 0:       # box of half sides size: the distance to it, squared
        dx = max(abs(x) - size[b, 0], 0.0)
        dy = max(abs(y) - size[b, 1], 0.0)
        dz = max(abs(z) - size[b, 2], 0.0)
        return dx * dx + dy * dy + dz * dz > reach * reach
    if code == 1:       # sphere of radius size[0]: the distance to its centre, squared
        reach += size[b, 0]
        return x * x + y * y + z * z > reach * reach
    dr = max(math.sqrt(x * x + y * y) - size[b, 0], 0.0)     # cylinder: radius, half-length
    dz = max(abs(z) - size[b, 1], 0.0)
    return dr * dr + dz * dz > reach * reach


@njit(cache=True, nogil=True, inline='always')
def _spheres_apart(spheres, i, k, limit):
    dx = spheres[i, 0] - spheres[k, 0]
    dy = spheres[i, 1] - spheres[k, 1]
    dz = spheres[i, 2] - spheres[k, 2]
    reach = limit + spheres[i, 3] + spheres[k, 3]
    return dx * dx + dy * dy + dz * dz > reach * reach


@njit(cache=True, nogil=True, inline='always')
def _pair_apart(kind, a, b, spheres, start, obs_inv, obs_code, obs_size, limit):
    """Whether pair ``(a, b)`` is proved apart (module docstring)."""
    sa = start[a]
    if kind == 1:       # robot shape a, obstacle b
        code = obs_code[b]
        if _obstacle_apart(spheres, sa, obs_inv, b, code, obs_size, limit):
            return True
        for s in range(sa + 1, start[a + 1]):
            if not _obstacle_apart(spheres, s, obs_inv, b, code, obs_size, limit):
                return False
        return True
    sb = start[b]
    if _spheres_apart(spheres, sa, sb, limit):
        return True
    for i in range(sa + 1, start[a + 1]):
        for k in range(sb + 1, start[b + 1]):
            if not _spheres_apart(spheres, i, k, limit):
                return False
    return True


@njit(cache=True, nogil=True, inline='always')
def _obstacle_gap(spheres, s, obs_inv, b, code, size):
    """Distance [m] from sphere ``s`` to obstacle ``b``, exact (negative: overlap)."""
    cx, cy, cz = spheres[s, 0], spheres[s, 1], spheres[s, 2]
    x = obs_inv[b, 0, 0] * cx + obs_inv[b, 0, 1] * cy + obs_inv[b, 0, 2] * cz + obs_inv[b, 0, 3]
    y = obs_inv[b, 1, 0] * cx + obs_inv[b, 1, 1] * cy + obs_inv[b, 1, 2] * cz + obs_inv[b, 1, 3]
    z = obs_inv[b, 2, 0] * cx + obs_inv[b, 2, 1] * cy + obs_inv[b, 2, 2] * cz + obs_inv[b, 2, 3]
    if code == 0:
        dx = max(abs(x) - size[b, 0], 0.0)
        dy = max(abs(y) - size[b, 1], 0.0)
        dz = max(abs(z) - size[b, 2], 0.0)
        d = math.sqrt(dx * dx + dy * dy + dz * dz)
    elif code == 1:
        d = max(math.sqrt(x * x + y * y + z * z) - size[b, 0], 0.0)
    else:
        dr = max(math.sqrt(x * x + y * y) - size[b, 0], 0.0)
        dz = max(abs(z) - size[b, 1], 0.0)
        d = math.sqrt(dr * dr + dz * dz)
    return d - spheres[s, 3]


@njit(cache=True, nogil=True, inline='always')
def _spheres_gap(spheres, i, k):
    dx = spheres[i, 0] - spheres[k, 0]
    dy = spheres[i, 1] - spheres[k, 1]
    dz = spheres[i, 2] - spheres[k, 2]
    return math.sqrt(dx * dx + dy * dy + dz * dz) - spheres[i, 3] - spheres[k, 3]


@njit(cache=True, nogil=True, inline='always')
def _pair_gap(kind, a, b, spheres, start, obs_inv, obs_code, obs_size, limit):
    """Return a lower bound [m] on the gap of pair ``(a, b)``; at most ``limit`` when not apart."""
    sa = start[a]
    if kind == 1:
        code = obs_code[b]
        whole = _obstacle_gap(spheres, sa, obs_inv, b, code, obs_size)
        if whole > limit:
            return whole
        cover = np.inf
        for s in range(sa + 1, start[a + 1]):
            cover = min(cover, _obstacle_gap(spheres, s, obs_inv, b, code, obs_size))
            if cover <= limit:
                return cover
        return max(whole, cover)
    sb = start[b]
    whole = _spheres_gap(spheres, sa, sb)
    if whole > limit:
        return whole
    cover = np.inf
    for i in range(sa + 1, start[a + 1]):
        for k in range(sb + 1, start[b + 1]):
            cover = min(cover, _spheres_gap(spheres, i, k))
            if cover <= limit:
                return cover
    return max(whole, cover)


@njit(cache=True, nogil=True)
def _uncertain(F, IX, W, CF, CI, SW, q, out):
    """Kinematics at ``q``; the pairs not proved apart go to ``out``, their count returned."""
    (limit, resolution, radii, local, joint, start, pairs, obs_inv, obs_code, obs_size, spheres,
     _, _, _) = _views(CF, CI, SW)
    kernels.update_kinematics(F, IX, W, q, False, False)
    _place(kernels.work_views(IX, W)[1], local, joint, spheres)
    n = 0
    for p in range(pairs.shape[0]):
        if not _pair_apart(pairs[p, 2], pairs[p, 0], pairs[p, 1], spheres, start, obs_inv,
                           obs_code, obs_size, limit):
            out[n] = pairs[p, 3]
            n += 1
    return n


@njit(cache=True, nogil=True)
def uncertain_pairs(F, IX, W, CF, CI, SW, q, out):
    """
    Return how many checked pairs at ``q`` are not proved apart, their coal indices in ``out``.

    ``F, IX, W``: the robot's packed model and its work buffer (the tree configuration is
    left there, for coal); ``CF, CI``: the tables (:func:`pack`); ``SW`` and ``out``:
    :func:`work_buffers`.
    """
    return _uncertain(F, IX, W, CF, CI, SW, q, out)


@njit(cache=True, nogil=True)
def scan(F, IX, W, CF, CI, SW, q0, q1, check_start, position, out):
    """
    Screen the samples of the segment ``q0 -> q1`` in ``CollisionChecker.segment_free``'s order.

    The segment has ``n = max(1, ceil(L / resolution))`` steps, ``L = sum_i r_i |q1_i -
    q0_i|``; its samples are checked in the order ``q0`` (when ``check_start``), ``q1``,
    then ``q0 + k (q1 - q0) / n`` for ``k = 1..n-1``. From place ``position`` of that order
    (0: a new segment), returns ``(places, place, m)``: the number of places, and the first
    place whose sample has ``m > 0`` pairs not proved apart (the pairs in ``out``, the
    tree configuration in ``W``), or ``place = -1``.

    No point of the robot moves more than ``L / n`` between two consecutive samples, so a
    pair whose gap was ``g`` at sample ``j`` has at least ``g - |k - j| L / n`` at sample
    ``k`` (twice that for two moving shapes): it is computed again only when that bound is
    no longer beyond the limit, and a sample where no pair needs it costs no kinematics.
    """
    (limit, resolution, radii, local, joint, start, pairs, obs_inv, obs_code, obs_size, spheres,
     q, bound, at) = _views(CF, CI, SW)
    nq = q0.shape[0]
    travel = 0.0
    for i in range(nq):
        travel += radii[i] * abs(q1[i] - q0[i])
    n = max(1, int(math.ceil(travel / resolution)))
    step = travel / n
    first = 1 if check_start else 0
    places = n + first
    if position == 0:
        bound[:] = -np.inf
    for place in range(position, places):
        if check_start and place == 0:
            k = 0
        elif place == first:
            k = n
        else:
            k = place - first
        stale = False
        for p in range(pairs.shape[0]):
            moved = abs(k - at[p]) * step * (1.0 if pairs[p, 2] == 1 else 2.0)
            if bound[p] - moved <= limit:
                stale = True
                break
        if not stale:
            continue
        for i in range(nq):
            if k == n:
                q[i] = q1[i]
            elif k == 0:
                q[i] = q0[i]
            else:
                q[i] = q0[i] + k * ((q1[i] - q0[i]) / n)
        kernels.update_kinematics(F, IX, W, q, False, False)
        _place(kernels.work_views(IX, W)[1], local, joint, spheres)
        m = 0
        for p in range(pairs.shape[0]):
            kind = pairs[p, 2]
            moved = abs(k - at[p]) * step * (1.0 if kind == 1 else 2.0)
            if bound[p] - moved > limit:
                continue
            gap = _pair_gap(kind, pairs[p, 0], pairs[p, 1], spheres, start, obs_inv, obs_code,
                            obs_size, limit)
            bound[p] = gap
            at[p] = k
            if gap <= limit:
                out[m] = pairs[p, 3]
                m += 1
        if m > 0:
            return places, place, m
    return places, -1, 0

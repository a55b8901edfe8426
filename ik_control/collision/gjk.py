"""
Compiled distances between convex primitives: GJK on their cores, in one call per tick.

Each primitive is a *core* grown by a *margin* ``m`` [m]: a sphere is a point grown by its
radius, a capsule a segment grown by its radius, a box and a cylinder themselves
(``m = 0``). The distance of two shapes is that of their cores less both margins; the
witness points move out along the normal by the margins::

    d = |p_A - p_B| - m_A - m_B,   n = (p_B - p_A) / |p_A - p_B|   (from A to B)

The cores' distance is GJK's (Gilbert, Johnson & Keerthi 1988): the point ``v`` of the
Minkowski difference ``A - B`` nearest the origin, found on a simplex of support points
``w = s_A(-v) - s_B(v)``, reduced each step to the face nearest the origin (Ericson,
*Real-Time Collision Detection*, sec. 5.1.5, 9.5), until the support point brings ``v``
no nearer than a tolerance ``eps`` [m]: ``|v|^2 - v . w <= eps |v|`` (then ``|v|`` exceeds the
cores' distance by at most ``eps``). The witness points are the same barycentric
combination of the simplex's support points on ``A`` and on ``B``.

Support points in the shape's frame, for a direction ``u``: box ``sign(u) * half``;
cylinder (axis z) ``(r u_xy / |u_xy|, sign(u_z) h)``; segment ``(0, 0, sign(u_z) h)``;
point 0; a convex hull (a mesh measured as its hull) its vertex ``argmax_k u . p_k``,
found by hill climbing over the hull's edges from the vertex found last (for a linear
function on a convex polytope a vertex no neighbour improves on is the maximum; a hull of
at most :data:`SCAN_VERTICES` vertices, or one qhull cannot mesh, is scanned).
Pairs whose cores touch or overlap (a penetration depth, which GJK does not give) and
shapes of other kinds (triangle meshes) are left to coal: their rows are returned.
"""

from numba import njit
import numpy as np
from scipy.spatial import ConvexHull, QhullError

__all__ = ['POINT', 'SEGMENT', 'BOX', 'CYLINDER', 'HULL', 'OTHER', 'NO_WARM_START', 'primitive',
           'primitives', 'measure_pairs']

POINT, SEGMENT, BOX, CYLINDER, HULL, OTHER = 0, 1, 2, 3, 4, -1
MAX_ITERATIONS = 64
TOLERANCE = 1e-8             # [m] GJK stops when |v| is within this of the distance
TOUCHING = 1e-9              # [m] cores nearer than this are measured by coal
SCAN_VERTICES = 32           # a hull with at most this many vertices is scanned, not climbed


_NO_POINTS = np.zeros((0, 3))
#: :func:`measure_pairs`' ``warm`` for a caller that keeps no start per pair
NO_WARM_START = np.zeros((0, 3))


def primitive(geometry):
    """
    Return ``(kind, dims, margin, points)`` of a coal geometry for :func:`measure_pairs`.

    ``dims`` [m]: a box's half sides; a cylinder's radius and half length; a capsule's
    half length (in ``dims[0]``). ``points`` (k, 3) [m]: a convex hull's (``coal.Convex``)
    vertices in its frame, else none. Other geometries are :data:`OTHER` (measured by
    coal).
    """
    name = type(geometry).__name__
    dims = np.zeros(3)
    if name == 'Sphere':
        return POINT, dims, float(geometry.radius), _NO_POINTS
    if name == 'Capsule':
        dims[0] = geometry.halfLength
        return SEGMENT, dims, float(geometry.radius), _NO_POINTS
    if name == 'Box':
        dims[:] = geometry.halfSide
        return BOX, dims, 0.0, _NO_POINTS
    if name == 'Cylinder':
        dims[0], dims[1] = geometry.radius, geometry.halfLength
        return CYLINDER, dims, 0.0, _NO_POINTS
    if name.startswith('Convex'):
        return HULL, dims, 0.0, np.asarray(geometry.points(), dtype=float).reshape(-1, 3)
    return OTHER, dims, 0.0, _NO_POINTS


def _hull_edges(points):
    """Return the vertex pairs (k, 2) of the edges of the hull of ``points``, or None."""
    if len(points) <= SCAN_VERTICES:
        return None
    try:
        simplices = ConvexHull(points).simplices
    except (QhullError, ValueError):  # flat or degenerate: scanned
        return None
    edges = np.concatenate([simplices[:, [0, 1]], simplices[:, [1, 2]], simplices[:, [2, 0]]])
    return np.unique(np.sort(edges, axis=1), axis=0)


def primitives(geometries):
    """
    Return the arrays :func:`measure_pairs` takes for ``geometries``, in their order.

    ``(kind (G,), dims (G, 3), margin (G,), points (V, 3), span (G, 3), adj_start (V + 1,),
    adj)``: the :func:`primitive` of each; the hulls' vertices stacked in ``points``;
    ``span[g]``: the first row and the count of shape ``g``'s vertices, and the vertex its
    last support point was (where the next climb starts; -1: scan its vertices); the
    neighbours of vertex ``v`` are ``adj[adj_start[v]:adj_start[v + 1]]``.
    """
    shapes = [primitive(g) for g in geometries]
    counts = np.array([len(s[3]) for s in shapes], dtype=np.int64)
    first = np.cumsum(counts) - counts
    span = np.column_stack([first, counts, np.full(len(shapes), -1)]).reshape(-1, 3)
    edges = [np.zeros((0, 2), dtype=np.int64)]
    for g, shape in enumerate(shapes):
        local = _hull_edges(shape[3]) if shape[0] == HULL else None
        if local is not None:
            edges.append(local + first[g])
            span[g, 2] = first[g] + local[0, 0]
    edges = np.concatenate(edges)
    edges = np.concatenate([edges, edges[:, ::-1]])   # both directions
    edges = edges[np.argsort(edges[:, 0], kind='stable')]
    total = int(counts.sum())
    adj_start = np.searchsorted(edges[:, 0], np.arange(total + 1)).astype(np.int64)
    return (np.array([s[0] for s in shapes], dtype=np.int64),
            np.array([s[1] for s in shapes]).reshape(-1, 3),
            np.array([s[2] for s in shapes], dtype=float),
            np.concatenate([_NO_POINTS] + [s[3] for s in shapes]), span, adj_start,
            np.ascontiguousarray(edges[:, 1], dtype=np.int64))


@njit(cache=True, nogil=True, inline='always')
def _support(place, g, kind, dims, points, span, adj_start, adj, ux, uy, uz, out, i):
    """Write the support point of core ``g`` (placed by ``place[g]``) along ``u`` to out[i]."""
    # direction in the shape's frame: R^T u
    lx = place[g, 0, 0] * ux + place[g, 1, 0] * uy + place[g, 2, 0] * uz
    ly = place[g, 0, 1] * ux + place[g, 1, 1] * uy + place[g, 2, 1] * uz
    lz = place[g, 0, 2] * ux + place[g, 1, 2] * uy + place[g, 2, 2] * uz
    k = kind[g]
    sx = sy = sz = 0.0
    if k == BOX:
        sx = dims[g, 0] if lx >= 0.0 else -dims[g, 0]
        sy = dims[g, 1] if ly >= 0.0 else -dims[g, 1]
        sz = dims[g, 2] if lz >= 0.0 else -dims[g, 2]
    elif k == CYLINDER:
        rho = np.sqrt(lx * lx + ly * ly)
        if rho > 1e-12:
            sx = dims[g, 0] * lx / rho
            sy = dims[g, 0] * ly / rho
        sz = dims[g, 1] if lz >= 0.0 else -dims[g, 1]
    elif k == SEGMENT:
        sz = dims[g, 0] if lz >= 0.0 else -dims[g, 0]
    elif k == HULL:
        top = span[g, 2]
        if top < 0:  # scan
            best = -np.inf
            for v in range(span[g, 0], span[g, 0] + span[g, 1]):
                along = points[v, 0] * lx + points[v, 1] * ly + points[v, 2] * lz
                if along > best:
                    best, top = along, v
        else:  # climb from the last support vertex
            best = points[top, 0] * lx + points[top, 1] * ly + points[top, 2] * lz
            moved = True
            while moved:
                moved = False
                for e in range(adj_start[top], adj_start[top + 1]):
                    v = adj[e]
                    along = points[v, 0] * lx + points[v, 1] * ly + points[v, 2] * lz
                    if along > best:
                        best, top, moved = along, v, True
            span[g, 2] = top
        sx, sy, sz = points[top, 0], points[top, 1], points[top, 2]
    for r in range(3):
        out[i, r] = (place[g, r, 0] * sx + place[g, r, 1] * sy + place[g, r, 2] * sz
                     + place[g, r, 3])


@njit(cache=True, nogil=True)
def _closest_on_triangle(w, i0, i1, i2, lam):
    """
    Write the weights of the triangle's point nearest the origin to ``lam[i0, i1, i2]``.

    Barycentric weights, by the Voronoi regions of Ericson sec. 5.1.5 (with p = 0).
    """
    ax, ay, az = w[i0, 0], w[i0, 1], w[i0, 2]
    abx, aby, abz = w[i1, 0] - ax, w[i1, 1] - ay, w[i1, 2] - az
    acx, acy, acz = w[i2, 0] - ax, w[i2, 1] - ay, w[i2, 2] - az
    lam[i0] = lam[i1] = lam[i2] = 0.0
    d1 = -(abx * ax + aby * ay + abz * az)
    d2 = -(acx * ax + acy * ay + acz * az)
    if d1 <= 0.0 and d2 <= 0.0:
        lam[i0] = 1.0
        return
    bx, by, bz = w[i1, 0], w[i1, 1], w[i1, 2]
    d3 = -(abx * bx + aby * by + abz * bz)
    d4 = -(acx * bx + acy * by + acz * bz)
    if d3 >= 0.0 and d4 <= d3:
        lam[i1] = 1.0
        return
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        t = d1 / (d1 - d3) if d1 - d3 > 0.0 else 0.0
        lam[i0], lam[i1] = 1.0 - t, t
        return
    cx, cy, cz = w[i2, 0], w[i2, 1], w[i2, 2]
    d5 = -(abx * cx + aby * cy + abz * cz)
    d6 = -(acx * cx + acy * cy + acz * cz)
    if d6 >= 0.0 and d5 <= d6:
        lam[i2] = 1.0
        return
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        t = d2 / (d2 - d6) if d2 - d6 > 0.0 else 0.0
        lam[i0], lam[i2] = 1.0 - t, t
        return
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and d4 - d3 >= 0.0 and d5 - d6 >= 0.0:
        s = (d4 - d3) + (d5 - d6)
        t = (d4 - d3) / s if s > 0.0 else 0.0
        lam[i1], lam[i2] = 1.0 - t, t
        return
    s = va + vb + vc
    if s <= 0.0:  # a degenerate (flat) triangle: its best edge
        lam[i0] = 1.0
        return
    lam[i1] = vb / s
    lam[i2] = vc / s
    lam[i0] = 1.0 - lam[i1] - lam[i2]


@njit(cache=True, nogil=True)
def _outside(w, i0, i1, i2, i3):
    """Whether the origin and vertex ``i3`` lie on opposite sides of face ``i0 i1 i2``."""
    abx, aby, abz = w[i1, 0] - w[i0, 0], w[i1, 1] - w[i0, 1], w[i1, 2] - w[i0, 2]
    acx, acy, acz = w[i2, 0] - w[i0, 0], w[i2, 1] - w[i0, 1], w[i2, 2] - w[i0, 2]
    nx, ny, nz = aby * acz - abz * acy, abz * acx - abx * acz, abx * acy - aby * acx
    side_p = -(nx * w[i0, 0] + ny * w[i0, 1] + nz * w[i0, 2])
    side_d = (nx * (w[i3, 0] - w[i0, 0]) + ny * (w[i3, 1] - w[i0, 1])
              + nz * (w[i3, 2] - w[i0, 2]))
    return side_p * side_d < 0.0 or side_d == 0.0


@njit(cache=True, nogil=True)
def _weights(w, size, lam, trial):
    """
    Write the weights ``lam[:size]`` of the simplex ``w[:size]``'s point nearest the origin.

    Returns False when the origin is inside the tetrahedron (the cores overlap).
    """
    if size == 1:
        lam[0] = 1.0
        return True
    if size == 2:
        dx, dy, dz = w[1, 0] - w[0, 0], w[1, 1] - w[0, 1], w[1, 2] - w[0, 2]
        dd = dx * dx + dy * dy + dz * dz
        t = 0.0
        if dd > 0.0:
            t = -(w[0, 0] * dx + w[0, 1] * dy + w[0, 2] * dz) / dd
            t = min(max(t, 0.0), 1.0)
        lam[0], lam[1] = 1.0 - t, t
        return True
    if size == 3:
        _closest_on_triangle(w, 0, 1, 2, lam)
        return True
    best = np.inf
    inside = True
    faces = ((0, 1, 2, 3), (0, 2, 3, 1), (0, 3, 1, 2), (1, 3, 2, 0))
    for f in faces:
        i0, i1, i2, i3 = f
        if not _outside(w, i0, i1, i2, i3):
            continue
        inside = False
        _closest_on_triangle(w, i0, i1, i2, trial)
        trial[i3] = 0.0
        px = trial[i0] * w[i0, 0] + trial[i1] * w[i1, 0] + trial[i2] * w[i2, 0]
        py = trial[i0] * w[i0, 1] + trial[i1] * w[i1, 1] + trial[i2] * w[i2, 1]
        pz = trial[i0] * w[i0, 2] + trial[i1] * w[i1, 2] + trial[i2] * w[i2, 2]
        dd = px * px + py * py + pz * pz
        if dd < best:
            best = dd
            for i in range(4):
                lam[i] = trial[i]
    return not inside


@njit(cache=True, nogil=True)
def _core_distance(place, kind, dims, points, span, adj_start, adj, a, b, s, out_a, out_b,
                   vx, vy, vz):
    """
    Return the GJK distance [m] of the cores of shapes ``a`` and ``b``, or -1 if they touch.

    The witness points go to ``out_a``/``out_b``; ``s`` is scratch, (5, 4, 3). ``vx, vy,
    vz``: the first search direction ``v`` (the pair's last ``p_A - p_B``), or zeros: the
    centres' difference. Any direction gives the same distance (within ``TOLERANCE``);
    one near the answer saves iterations.
    """
    wa, wb, w = s[0], s[1], s[2]
    lam, trial = s[3, :, 0], s[4, :, 0]
    if vx * vx + vy * vy + vz * vz == 0.0:  # start along the centres' difference
        vx = place[a, 0, 3] - place[b, 0, 3]
        vy = place[a, 1, 3] - place[b, 1, 3]
        vz = place[a, 2, 3] - place[b, 2, 3]
    if vx * vx + vy * vy + vz * vz == 0.0:
        vx = 1.0
    size = 0
    vv = np.inf
    for _ in range(MAX_ITERATIONS):
        _support(place, a, kind, dims, points, span, adj_start, adj, -vx, -vy, -vz, wa, size)
        _support(place, b, kind, dims, points, span, adj_start, adj, vx, vy, vz, wb, size)
        for r in range(3):
            w[size, r] = wa[size, r] - wb[size, r]
        vw = vx * w[size, 0] + vy * w[size, 1] + vz * w[size, 2]
        if size > 0 and vv - vw <= TOLERANCE * np.sqrt(vv):
            break  # no progress: v is the nearest point
        size += 1
        if not _weights(w, size, lam, trial):
            return -1.0
        # keep the vertices that carry weight, in order
        k = 0
        for i in range(size):
            if lam[i] > 0.0:
                for r in range(3):
                    wa[k, r], wb[k, r], w[k, r] = wa[i, r], wb[i, r], w[i, r]
                lam[k] = lam[i]
                k += 1
        size = k
        vx = vy = vz = 0.0
        for i in range(size):
            vx += lam[i] * w[i, 0]
            vy += lam[i] * w[i, 1]
            vz += lam[i] * w[i, 2]
        new_vv = vx * vx + vy * vy + vz * vz
        if new_vv <= TOUCHING * TOUCHING or size == 4:
            return -1.0
        if new_vv >= vv:  # rounding (a flat simplex): no nearer; the last points stand
            break
        vv = new_vv
        for r in range(3):
            pa = 0.0
            pb = 0.0
            for i in range(size):
                pa += lam[i] * wa[i, r]
                pb += lam[i] * wb[i, r]
            out_a[r] = pa
            out_b[r] = pb
    return np.sqrt(vv)


@njit(cache=True, nogil=True)
def measure_pairs(place, kind, dims, margin, points, span, adj_start, adj, pairs, rows, count,
                  distance, point_a, point_b, normal, scratch, left, warm):
    """
    Measure the pairs ``pairs[rows[i]]``, ``i < count``, into row ``i`` of the outputs.

    Row ``i`` of ``distance`` [m], ``point_a``, ``point_b`` and ``normal`` (module
    docstring); ``kind`` to ``span``: :func:`primitives`. Returns how many of them are
    left to coal (a kind it does not know, or shapes in contact); their ``i`` go to
    ``left``.

    ``warm`` (one row per pair, 3), or (0, 3) for none: each pair's GJK starts from its
    row, the cores' ``p_A - p_B`` of the last time it was measured (zeros: never, or in
    contact then), and the row is updated. A caller that measures the same pairs tick
    after tick (the controller's) so starts next to the answer: temporal coherence, as in
    Gilbert & Foo 1990.
    """
    n_left = 0
    keep = warm.shape[0] > 0
    for i in range(count):
        a, b = pairs[rows[i], 0], pairs[rows[i], 1]
        if kind[a] < 0 or kind[b] < 0:
            left[n_left] = i
            n_left += 1
            continue
        p = rows[i]
        vx, vy, vz = (warm[p, 0], warm[p, 1], warm[p, 2]) if keep else (0.0, 0.0, 0.0)
        core = _core_distance(place, kind, dims, points, span, adj_start, adj, a, b, scratch,
                              point_a[i], point_b[i], vx, vy, vz)
        if keep:
            for r in range(3):
                warm[p, r] = point_a[i, r] - point_b[i, r] if core > TOUCHING else 0.0
        if core <= TOUCHING:
            left[n_left] = i
            n_left += 1
            continue
        for r in range(3):
            normal[i, r] = (point_b[i, r] - point_a[i, r]) / core
        ma, mb = margin[a], margin[b]
        for r in range(3):
            point_a[i, r] += ma * normal[i, r]
            point_b[i, r] -= mb * normal[i, r]
        distance[i] = core - ma - mb
        if distance[i] <= 0.0:  # the margins overlap: coal gives the depth and its normal
            left[n_left] = i
            n_left += 1
    return n_left

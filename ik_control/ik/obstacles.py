"""
Obstacle avoidance as the secondary task of task-priority control (SAM eq. 19).

Maciejewski & Klein (SAM, eq. 19; their 1985 obstacle-avoidance paper) give the joint
step that meets a primary task and, as well as it can without disturbing it, a second::

    dq = J1^+ dx1 + (J2 (I - J1^+ J1))^+ (dx2 - J2 J1^+ dx1)                 (19)

Here the primary task is the end-effector step ``dq1 = J1^+ dx1`` the controller already
solved (damped least squares) and the secondary task keeps the arm off obstacles:

* the arm is a set of capsules of radius ``link_radius``: a segment from the origin of
  each tree joint to the origin of each of its child joints and end-effector frames,
  fixed to the link of the parent joint (segments no controlled joint moves are left
  out); obstacles are spheres (centre ``c``, radius ``r``), boxes and cylinders (a pose
  and half-sizes, :meth:`ObstacleAvoidance.set_shapes`) in the base frame;
* for a segment and a sphere, the closest point ``p`` of the segment to ``c`` gives the
  clearance ``d = |p - c| - r - link_radius`` and the escape direction
  ``n = (p - c) / |p - c|``;
* for a box or a cylinder, the exact shape (not a bounding sphere): the signed distance
  ``s(x)`` of a point to a convex body is convex in ``x``, so along the segment
  ``x(u) = a + u (b - a)`` it is convex in ``u`` and a golden-section search
  (``GOLDEN_ITERATIONS``, 1e-13 of the segment) finds the arm point ``p`` deepest towards
  the shape; ``d = s(p) - link_radius`` (negative inside) and ``n = grad s(p)``, the
  outward normal of the shape there (:func:`signed_distance`, :func:`closest_on_segments`,
  compiled with numba);
* the ``rows`` closest pairs with ``d < influence`` each add a row to the secondary task:
  ``J2_i = n_i^T Jp(p_i)`` (``Jp``: position Jacobian of the point ``p_i`` fixed to its
  link), ``dx2_i = gain * (influence - d_i) * dt`` (move away faster the closer it is);
* the homogeneous term is scaled by ``alpha_h``, 0 at the influence distance and 1 at
  half of it (smoothstep), as Maciejewski & Klein blend it in, so the step is continuous
  as an obstacle comes into range; ``(.)^+`` of the secondary task is damped by
  ``damping`` [m] against its own singularities (a row of ``J2 N1`` near zero: the
  primary task needs every joint that could move the point away).

All arrays are in the base frame, lengths in metres.
"""

import math

from ik_control.ik.nullspace import task_priority_term
from ik_control.kinematics import kernels
from ik_control.validation import rigid_transform
from numba import njit
import numpy as np

MAX_OBSTACLES = 64      # obstacles kept at once; more are refused
MAX_RADIUS = 10.0       # [m] a larger (bounding) sphere is a configuration error, refused
SPHERE, BOX, CYLINDER = 0, 1, 2
SHAPES = {'sphere': SPHERE, 'box': BOX, 'cylinder': CYLINDER}
GOLDEN_ITERATIONS = 64
_INV_PHI = (np.sqrt(5.0) - 1.0) / 2.0


def bounding_radius(shape, scale):
    """
    Radius [m] of the sphere about a shape's centre that holds it (the avoided volume).

    ``shape`` is 'sphere', 'box' or 'cylinder' (axis z) and ``scale`` its size along x, y,
    z [m] (diameters, edge lengths), as visualization_msgs/Marker gives them. Raises
    ValueError for sizes that are not finite and > 0, or a radius over ``MAX_RADIUS``.
    """
    sx, sy, sz = (float(v) for v in scale)
    if not all(np.isfinite(v) and v > 0.0 for v in (sx, sy, sz)):
        raise ValueError(f'{shape} scale must be finite and > 0, got {[sx, sy, sz]}')
    if shape == 'sphere':
        radius = 0.5 * max(sx, sy, sz)
    elif shape == 'box':
        radius = 0.5 * float(np.sqrt(sx * sx + sy * sy + sz * sz))
    elif shape == 'cylinder':
        radius = float(np.hypot(0.5 * max(sx, sy), 0.5 * sz))
    else:
        raise ValueError(f"shape must be 'sphere', 'box' or 'cylinder', not {shape!r}")
    if radius > MAX_RADIUS:
        raise ValueError(f'{shape} of radius {radius:g} m exceeds {MAX_RADIUS:g} m')
    return radius


@njit(cache=True, nogil=True)
def signed_distance(kind, hx, hy, hz, x, y, z):
    """
    Signed distance [m] of point ``(x, y, z)`` (shape frame) to a box or a cylinder.

    Box (``kind == BOX``, half-sizes ``hx, hy, hz``): with ``q = |x| - h`` per axis, outside
    ``|max(q, 0)|``, inside ``max_i q_i`` (negative). Cylinder about z (radius ``hx``,
    half-height ``hz``): the same with ``q = (rho - r, |z| - h)``, ``rho = |(x, y)|``.
    Returns the distance and its gradient, the outward unit normal ``(gx, gy, gz)``.
    """
    sx = 1.0 if x >= 0.0 else -1.0
    sy = 1.0 if y >= 0.0 else -1.0
    sz = 1.0 if z >= 0.0 else -1.0
    qz = abs(z) - hz
    ez = max(qz, 0.0)
    if kind == BOX:
        qx, qy = abs(x) - hx, abs(y) - hy
        ex, ey = max(qx, 0.0), max(qy, 0.0)
        out = math.sqrt(ex * ex + ey * ey + ez * ez)
        if out > 0.0:
            return out, sx * ex / out, sy * ey / out, sz * ez / out
        if qx >= qy and qx >= qz:
            return qx, sx, 0.0, 0.0
        if qy >= qz:
            return qy, 0.0, sy, 0.0
        return qz, 0.0, 0.0, sz
    rho = math.sqrt(x * x + y * y)
    ux, uy = (x / rho, y / rho) if rho > 1e-12 else (1.0, 0.0)
    qr = rho - hx
    er = max(qr, 0.0)
    out = math.sqrt(er * er + ez * ez)
    if out > 0.0:
        return out, ux * er / out, uy * er / out, sz * ez / out
    if qr > qz:
        return qr, ux, uy, 0.0
    return qz, 0.0, 0.0, sz


@njit(cache=True, nogil=True)
def closest_on_segments(kind, half, a, b, u, d, grad):
    """
    For each segment ``a + u (b - a)`` the point ``u`` in [0, 1] deepest towards its shape.

    The signed distance is convex along the segment, so a golden-section search
    (``GOLDEN_ITERATIONS``) finds its minimum; the ends are compared too. Inputs in the
    shapes' frames: ``kind`` (k,), ``half`` (k, 3), ``a``, ``b`` (k, 3); writes ``u`` (k,),
    the distance ``d`` (k,) and the outward normal ``grad`` (k, 3) there.
    """
    for k in range(kind.size):
        hx, hy, hz = half[k, 0], half[k, 1], half[k, 2]
        ax, ay, az = a[k, 0], a[k, 1], a[k, 2]
        dx, dy, dz = b[k, 0] - ax, b[k, 1] - ay, b[k, 2] - az
        lo, hi = 0.0, 1.0
        u1, u2 = hi - _INV_PHI, _INV_PHI
        f1 = signed_distance(kind[k], hx, hy, hz, ax + u1 * dx, ay + u1 * dy, az + u1 * dz)[0]
        f2 = signed_distance(kind[k], hx, hy, hz, ax + u2 * dx, ay + u2 * dy, az + u2 * dz)[0]
        for _ in range(GOLDEN_ITERATIONS):
            if f1 <= f2:
                hi, u2, f2 = u2, u1, f1
                u1 = hi - _INV_PHI * (hi - lo)
                f1 = signed_distance(kind[k], hx, hy, hz, ax + u1 * dx, ay + u1 * dy,
                                     az + u1 * dz)[0]
            else:
                lo, u1, f1 = u1, u2, f2
                u2 = lo + _INV_PHI * (hi - lo)
                f2 = signed_distance(kind[k], hx, hy, hz, ax + u2 * dx, ay + u2 * dy,
                                     az + u2 * dz)[0]
        best = 0.5 * (lo + hi)
        best_d = signed_distance(kind[k], hx, hy, hz, ax + best * dx, ay + best * dy,
                                 az + best * dz)[0]
        for end in (0.0, 1.0):
            f = signed_distance(kind[k], hx, hy, hz, ax + end * dx, ay + end * dy, az + end * dz)
            if f[0] < best_d:
                best, best_d = end, f[0]
        f = signed_distance(kind[k], hx, hy, hz, ax + best * dx, ay + best * dy, az + best * dz)
        u[k], d[k] = best, f[0]
        grad[k, 0], grad[k, 1], grad[k, 2] = f[1], f[2], f[3]


def _warm_up():
    """Compile (or load from numba's cache) the shape kernels now, not in the first tick."""
    kind = np.array([BOX, CYLINDER], dtype=np.int64)
    ones = np.ones((2, 3))
    closest_on_segments(kind, ones, -2.0 * ones, 2.0 * ones, np.empty(2), np.empty(2),
                        np.empty((2, 3)))


def arm_segments(model):
    """
    Segments of ``model`` as (start joint, end joint or -1, end frame index or -1, link joint).

    Start and end are tree joints (origins taken from the kinematics workspace's
    ``joint_T``) or, for an end-effector frame, its index into ``frame_T``; the segment
    moves with tree joint ``link joint`` (the start joint).
    """
    parent = model.parent
    moved = np.array([_moved_by_controlled(model, j) for j in range(parent.size)])
    segments = []
    for j in range(parent.size):
        p = parent[j]
        if p >= 0 and moved[p]:
            segments.append((p, j, -1, p))
    for i, ee in enumerate(model.end_effectors):
        fid = model._frame_id(ee.frame)
        j = model.pin_model.frames[fid].parentJoint - 1
        if j >= 0 and moved[j]:
            segments.append((j, -1, i, j))
    return np.array(segments, dtype=np.int64).reshape(-1, 4)


def _moved_by_controlled(model, j):
    """Return True if a controlled joint is tree joint ``j`` or one of its ancestors."""
    return bool(np.any(model.ctrl_index[model._joint_ancestors[j + 1]] >= 0))


class ObstacleAvoidance:
    """
    Secondary task of SAM eq. (19) for one robot (module docstring).

    ``set_obstacles`` replaces the obstacles by spheres, ``set_shapes`` by spheres, boxes
    and cylinders; ``step`` adds the avoidance to a solved step.
    """

    def __init__(self, model, influence=0.1, gain=5.0, link_radius=0.05, damping=0.05,
                 rows=3, shapes=None):
        """
        Precompute the segments and the ancestor tables of ``model``.

        ``shapes``: a :class:`~ik_control.collision.model.CollisionModel` of ``model``
        (its robot shapes; its scene is this object's obstacles) to measure the links by
        the URDF's collision shapes instead of the capsules (``link_radius`` unused).
        """
        self.model = model
        self.influence = influence      # [m] clearance below which avoidance acts
        self.gain = gain                # [1/s] escape speed per metre inside influence
        self.link_radius = link_radius  # [m]
        self.damping = damping          # [m] of the secondary inverse
        self.rows = rows
        self.segments = arm_segments(model)
        self.centers = np.zeros((0, 3))
        self.radii = np.zeros(0)          # sphere radius, or the shape's bounding radius
        self.kinds = np.zeros(0, dtype=np.int64)
        self.frames_inv = np.zeros((0, 4, 4))   # base -> shape frame
        self.half_sizes = np.zeros((0, 3))
        self.min_clearance = np.inf  # [m] at the last call of :meth:`clearances`
        self.shapes = shapes
        _warm_up()

    def ignore_effector_segments(self):
        """
        Leave out the segments that end at an end-effector frame (a tool meant to be near).

        E.g. a spray nozzle held at a stand-off from the surface it paints: its link's
        clearance is the primary task's business, and its rows in the secondary task
        would only take the place of links that can move away.
        """
        self.segments = self.segments[self.segments[:, 2] < 0]

    def set_obstacles(self, centers, radii):
        """Replace the obstacle spheres (finite centres [m], radii in [0, MAX_RADIUS])."""
        centers = np.asarray(centers, dtype=float).reshape(-1, 3)
        radii = np.asarray(radii, dtype=float).reshape(-1)
        if centers.shape[0] != radii.size:
            raise ValueError(f'{centers.shape[0]} centres but {radii.size} radii')
        if radii.size > MAX_OBSTACLES:
            raise ValueError(f'at most {MAX_OBSTACLES} obstacles, got {radii.size}')
        if not (np.all(np.isfinite(centers)) and np.all((radii >= 0.0) & (radii <= MAX_RADIUS))):
            raise ValueError('obstacle centres must be finite and radii within '
                             f'[0, {MAX_RADIUS:g}] m')
        self.centers, self.radii = centers.copy(), radii.copy()
        self.kinds = np.full(radii.size, SPHERE, dtype=np.int64)
        self.frames_inv = np.tile(np.eye(4), (radii.size, 1, 1))
        self.frames_inv[:, :3, 3] = -centers
        self.half_sizes = np.repeat(radii[:, None], 3, axis=1)
        self.min_clearance = np.inf  # until the next step measures it
        if self.shapes is not None:
            poses = np.tile(np.eye(4), (radii.size, 1, 1))
            poses[:, :3, 3] = centers
            self.shapes.set_scene([('sphere', T, (2.0 * r,) * 3) for T, r in zip(poses, radii)])

    def set_shapes(self, shapes):
        """
        Replace the obstacles by spheres, boxes and cylinders, avoided as exact shapes.

        ``shapes`` is a sequence of ``(shape, pose, scale)``: ``shape`` 'sphere', 'box' or
        'cylinder' (axis z), ``pose`` the 4x4 placement of its centre in the base frame and
        ``scale`` its size along x, y, z [m] as visualization_msgs/Marker gives it
        (diameters, edge lengths; a cylinder's radius is half the larger of x and y).
        Raises ValueError as :func:`bounding_radius` and for a pose that is not rigid.
        """
        shapes = list(shapes)
        if len(shapes) > MAX_OBSTACLES:
            raise ValueError(f'at most {MAX_OBSTACLES} obstacles, got {len(shapes)}')
        n = len(shapes)
        kinds, frames_inv = np.zeros(n, dtype=np.int64), np.zeros((n, 4, 4))
        half, centers, radii = np.zeros((n, 3)), np.zeros((n, 3)), np.zeros(n)
        for i, (shape, pose, scale) in enumerate(shapes):
            radii[i] = bounding_radius(shape, scale)
            T = rigid_transform(pose, f'{shape} {i}: pose')  # an InputError is a ValueError
            kinds[i] = SHAPES[shape]
            sx, sy, sz = (0.5 * float(v) for v in scale)
            half[i] = ((radii[i],) * 3 if shape == 'sphere' else
                       (sx, sy, sz) if shape == 'box' else (max(sx, sy), max(sx, sy), sz))
            frames_inv[i, :3, :3] = T[:3, :3].T
            frames_inv[i, :3, 3] = -T[:3, :3].T @ T[:3, 3]
            frames_inv[i, 3, 3] = 1.0
            centers[i] = T[:3, 3]
        self.centers, self.radii, self.kinds = centers, radii, kinds
        self.frames_inv, self.half_sizes = frames_inv, half
        self.min_clearance = np.inf
        if self.shapes is not None:
            self.shapes.set_scene(shapes)

    def endpoints(self, joint_T, frame_T):
        """Return where the arm's segments start and end (two arrays, segments x 3)."""
        s = self.segments
        a = joint_T[s[:, 0], :3, 3]
        b = np.where((s[:, 1] >= 0)[:, None], joint_T[np.maximum(s[:, 1], 0), :3, 3],
                     frame_T[np.maximum(s[:, 2], 0), :3, 3])
        return a, b

    def clearances(self, joint_T, frame_T):
        """
        Clearance [m], closest arm point and escape direction for every segment and obstacle.

        Returns ``d`` (segments x obstacles), ``p`` and ``n`` (segments x obstacles x 3).
        """
        a, b = self.endpoints(joint_T, frame_T)
        ab = b - a
        length2 = np.maximum(np.einsum('ij,ij->i', ab, ab), 1e-18)
        ac = self.centers[None, :, :] - a[:, None, :]
        t = np.clip(np.einsum('sok,sk->so', ac, ab) / length2[:, None], 0.0, 1.0)
        p = a[:, None, :] + t[..., None] * ab[:, None, :]
        v = p - self.centers[None, :, :]
        dist = np.linalg.norm(v, axis=2)
        n = v / np.maximum(dist, 1e-12)[..., None]
        # a centre on the segment itself: escape sideways from the segment
        inside = dist < 1e-12
        if np.any(inside):
            side = np.cross(ab, [0.0, 0.0, 1.0])
            side[np.linalg.norm(side, axis=1) < 1e-9] = [1.0, 0.0, 0.0]
            side /= np.linalg.norm(side, axis=1)[:, None]
            n[inside] = np.broadcast_to(side[:, None, :], n.shape)[inside]
        d = dist - self.radii[None, :] - self.link_radius
        exact = np.flatnonzero(self.kinds != SPHERE)
        if exact.size:
            self._exact_shapes(exact, a, b, d, p, n)
        self.min_clearance = float(d.min()) if d.size else np.inf
        return d, p, n

    def _exact_shapes(self, exact, a, b, d, p, n):
        """Overwrite the columns ``exact`` (boxes, cylinders) of ``d, p, n`` with exact ones."""
        ns = a.shape[0]
        R = self.frames_inv[exact, :3, :3]
        t = self.frames_inv[exact, :3, 3]
        # every (segment, shape) pair, segment-major, endpoints in the shape's frame
        a_l = (np.einsum('oij,sj->soi', R, a) + t[None]).reshape(-1, 3)
        b_l = (np.einsum('oij,sj->soi', R, b) + t[None]).reshape(-1, 3)
        kind = np.tile(self.kinds[exact], ns)
        half = np.tile(self.half_sizes[exact], (ns, 1))
        u, dist, grad = np.empty(kind.size), np.empty(kind.size), np.empty((kind.size, 3))
        closest_on_segments(kind, half, a_l, b_l, u, dist, grad)
        ab = b - a
        p[:, exact] = a[:, None, :] + u.reshape(ns, -1)[..., None] * ab[:, None, :]
        n[:, exact] = np.einsum('oji,soj->soi', R, grad.reshape(ns, -1, 3))
        d[:, exact] = dist.reshape(ns, -1) - self.link_radius

    def shape_clearances(self, joint_T):
        """
        Clearance [m], link point and escape direction of each URDF shape near an obstacle.

        The :attr:`shapes` model's scene pairs within ``influence``: ``d``, ``p`` (the
        witness point on the link, base frame), ``n`` (unit, from the obstacle towards
        the link) and the tree joint the shape is fixed to, one entry per pair.
        """
        cm = self.shapes
        count = cm.near_pairs(joint_T, self.influence)
        pairs = cm.pairs[cm.pair_index[:count]]
        return (cm.distance[:count].copy(), cm.point_a[:count].copy(),
                -cm.normal[:count], cm.shape_joints[pairs[:, 0]])

    def nearest(self, joint_T, frame_T):
        """
        Return the smallest clearance [m] of any link to any obstacle (inf without any).

        Every pair measured, beyond the influence distance too (for diagnostics: the
        tick's :meth:`step` measures the URDF shapes only within it).
        """
        if self.radii.size == 0:
            return np.inf
        if self.shapes is not None:
            count = self.shapes.near_pairs(joint_T, np.inf)
            return float(self.shapes.distance[:count].min()) if count else np.inf
        if self.segments.shape[0] == 0:
            return np.inf
        return float(self.clearances(joint_T, frame_T)[0].min())

    def point_jacobian(self, joint_T, link_joint, p):
        """Position Jacobian (3 x nq, base axes) of point ``p`` fixed to ``link_joint``'s link."""
        m = self.model
        J = np.zeros((3, m.nq))
        for a in np.flatnonzero(m._joint_ancestors[link_joint + 1]):
            c = m.ctrl_index[a]
            if c < 0:
                continue
            axis = joint_T[a, :3, :3] @ m.axis[a]
            if m.kind[a] == kernels.JOINT_REVOLUTE:
                J[:, c] += m.multiplier[a] * np.cross(axis, p - joint_T[a, :3, 3])
            else:
                J[:, c] += m.multiplier[a] * axis
        return J

    def step(self, J1, dq1, joint_T, frame_T, dt, active=None):
        """
        Return ``dq1`` plus the obstacle term of SAM eq. (19), and the smallest clearance.

        ``J1`` is the primary task Jacobian (its exact nullspace projector keeps the term
        out of the task), ``dq1`` its solved step over ``dt`` [s]; ``active`` (0/1 per
        joint) keeps frozen joints still. With no sphere within ``influence`` the step is
        returned unchanged.
        """
        if self.radii.size == 0 or (self.shapes is None and self.segments.shape[0] == 0):
            self.min_clearance = np.inf
            return dq1, np.inf
        if self.shapes is not None:
            d, p, n, link_joint = self.shape_clearances(joint_T)
        else:
            d, p, n = self.clearances(joint_T, frame_T)
            n_obs = d.shape[1]
            link_joint = np.repeat(self.segments[:, 3], n_obs)
            d, p, n = d.reshape(-1), p.reshape(-1, 3), n.reshape(-1, 3)
        if d.size == 0:
            self.min_clearance = np.inf
            return dq1, np.inf
        order = np.argsort(d)[:self.rows]
        close = order[d[order] < self.influence]
        d_min = self.min_clearance = float(d[order[0]])
        if close.size == 0:
            return dq1, d_min
        J2 = np.empty((close.size, self.model.nq))
        dx2 = np.empty(close.size)
        for row, k in enumerate(close):
            Jp = self.point_jacobian(joint_T, link_joint[k], p[k])
            J2[row] = n[k] @ Jp
            dx2[row] = self.gain * (self.influence - d[k]) * dt
        if active is not None:
            J2 = J2 * active
            J1 = J1 * active
        homogeneous = task_priority_term(J1, dq1, J2, dx2, self.damping)
        x = min(max((self.influence - d_min) / (0.5 * self.influence), 0.0), 1.0)
        alpha_h = x * x * (3.0 - 2.0 * x)
        return dq1 + alpha_h * homogeneous, d_min

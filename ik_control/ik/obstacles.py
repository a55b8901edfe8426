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
  out); obstacles are spheres (centre ``c``, radius ``r``) in the base frame;
* for a segment and a sphere, the closest point ``p`` of the segment to ``c`` gives the
  clearance ``d = |p - c| - r - link_radius`` and the escape direction
  ``n = (p - c) / |p - c|``;
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

from ik_control.kinematics import kernels
import numpy as np

MAX_OBSTACLES = 64      # spheres kept at once; more are refused
MAX_RADIUS = 10.0       # [m] a larger sphere is a configuration error, refused


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
        fid = model.pin_model.getFrameId(ee.frame)
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

    ``set_obstacles`` replaces the spheres; ``step`` adds the avoidance to a solved step.
    """

    def __init__(self, model, influence=0.1, gain=5.0, link_radius=0.05, damping=0.05,
                 rows=3):
        """Precompute the segments and the ancestor tables of ``model``."""
        self.model = model
        self.influence = influence      # [m] clearance below which avoidance acts
        self.gain = gain                # [1/s] escape speed per metre inside influence
        self.link_radius = link_radius  # [m]
        self.damping = damping          # [m] of the secondary inverse
        self.rows = rows
        self.segments = arm_segments(model)
        self.centers = np.zeros((0, 3))
        self.radii = np.zeros(0)
        self.min_clearance = np.inf  # [m] at the last call of :meth:`clearances`

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
        self.min_clearance = np.inf  # until the next step measures it

    def endpoints(self, joint_T, frame_T):
        """Return where the arm's segments start and end (two arrays, segments x 3)."""
        s = self.segments
        a = joint_T[s[:, 0], :3, 3]
        b = np.where((s[:, 1] >= 0)[:, None], joint_T[np.maximum(s[:, 1], 0), :3, 3],
                     frame_T[np.maximum(s[:, 2], 0), :3, 3])
        return a, b

    def clearances(self, joint_T, frame_T):
        """
        Clearance [m], closest arm point and escape direction for every segment and sphere.

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
        self.min_clearance = float(d.min()) if d.size else np.inf
        return d, p, n

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

    def step(self, J1, dq1, joint_T, frame_T, dt, active=None, damping1=0.0):
        """
        Return ``dq1`` plus the obstacle term of SAM eq. (19), and the smallest clearance.

        ``J1`` is the primary task Jacobian (its damped inverse, with ``damping1``, gives the
        nullspace projector), ``dq1`` its solved step over ``dt`` [s]; ``active`` (0/1 per
        joint) keeps frozen joints still. With no sphere within ``influence`` the step is
        returned unchanged.
        """
        if self.radii.size == 0 or self.segments.shape[0] == 0:
            self.min_clearance = np.inf
            return dq1, np.inf
        d, p, n = self.clearances(joint_T, frame_T)
        flat = np.argsort(d, axis=None)[:self.rows]
        close = flat[d.flat[flat] < self.influence]
        d_min = float(d.flat[flat[0]])
        if close.size == 0:
            return dq1, d_min
        n_obs = d.shape[1]
        J2 = np.empty((close.size, self.model.nq))
        dx2 = np.empty(close.size)
        for row, k in enumerate(close):
            s, o = divmod(int(k), n_obs)
            Jp = self.point_jacobian(joint_T, self.segments[s, 3], p[s, o])
            J2[row] = n[s, o] @ Jp
            dx2[row] = self.gain * (self.influence - d[s, o]) * dt
        if active is not None:
            J2 = J2 * active
            J1 = J1 * active
        nq = self.model.nq
        A = J1 @ J1.T + (damping1 * damping1 + 1e-12) * np.eye(J1.shape[0])
        N1 = np.eye(nq) - J1.T @ np.linalg.solve(A, J1)
        J2N = J2 @ N1
        B = J2N @ J2N.T + self.damping * self.damping * np.eye(J2N.shape[0])
        homogeneous = J2N.T @ np.linalg.solve(B, dx2 - J2 @ dq1)
        x = min(max((self.influence - d_min) / (0.5 * self.influence), 0.0), 1.0)
        alpha_h = x * x * (3.0 - 2.0 * x)
        return dq1 + alpha_h * homogeneous, d_min

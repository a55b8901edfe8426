"""
Geometric constraints after Welman, held with Lagrange multipliers.

Parent's notes, slides "IK w/ constraints" to "Constraints on handles" (C. Welman,
*Inverse Kinematics and Geometric Constraints for Articulated Figure Manipulation*, M.Sc.
thesis, Simon Fraser University, 1993, ch. 5): constraints are geometric functions of the
pose, ``C(q) = 0``; "assume starting out in a satisfied configuration", forces are applied
to the figure, and the components of them that would violate a constraint are cancelled.

A *handle* is a point fixed on a link (``frame`` plus ``point`` [m] in that frame), the
link's orientation, or the robot's centre of mass (:class:`CentreOfMass`, frame name
:data:`COM`: the mass-weighted mean of the links' centres of mass, pinocchio's
``centerOfMass``, with its Jacobian ``jacobianCenterOfMass``), which the point
constraints take as they take a link's point (Welman's centre-of-mass handle: a figure
kept balanced over its support). The constraints (:class:`PointToPoint`, :class:`PointOnPlane`,
:class:`PointOnLine`, :class:`Orientation`) each know their value ``C_i(q)`` and their
Jacobian ``J_i = dC_i/dq``; stacked they give ``C`` and the constraint Jacobian ``J_c``.

With an applied generalized force ``g_a`` (e.g. ``J_h^T f`` for a drag ``f`` [N-like] on a
handle, or any joint-space motion such as a task velocity's ``J^+ v``) the motion is
``q_dot = K (g_a + g_c)`` with ``K`` a diagonal joint weight (slides: "Generalized force",
"q_dot = K g"). The constraint force is ``g_c = J_c^T lambda`` (it can only push where a
constraint looks), and ``C_dot = J_c q_dot = 0`` gives the Lagrange multipliers from::

    J_c K J_c^T lambda = -J_c K g_a - k_s C                                    (1)

where ``-k_s C`` is the slides' feedback term, a spring pulling drift back onto the
constraints. (1) is solved by truncated SVD with back-substitution (slides: "Use truncated
SVD"): singular values below ``rcond * sigma_max`` are dropped, so redundant constraints
(e.g. two that say the same thing) do no harm. :meth:`ConstraintSet.velocity` returns
``q_dot`` and ``lambda``.

A time step of length ``dt`` [s] moves ``q + dt q_dot`` (first order: curved constraints
drift by ``O(dt^2)``), then Newton corrections ``dq = -K J_c^T (J_c K J_c^T)^+ C`` (the
feedback term with ``k_s dt = 1``) until ``|C|`` is below ``tolerance``
(:meth:`ConstraintSet.step`). Joint limits act as extra constraints: a joint that would
leave its range is put on that limit and held there (its ``K`` entry set to 0), and the
step is recomputed from there.
"""

from dataclasses import dataclass

from ik_control.validation import finite_vector, InputError, rotation_matrix
import numpy as np
import pinocchio as pin


def _skew(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def _normal_basis(d):
    """Two unit vectors spanning the plane normal to unit ``d``."""
    e1 = np.cross(d, [1.0, 0.0, 0.0] if abs(d[0]) < 0.9 else [0.0, 1.0, 0.0])
    e1 /= np.linalg.norm(e1)
    return np.vstack([e1, np.cross(d, e1)])


def _unit(vector, what):
    v = finite_vector(vector, 3, what)
    n = np.linalg.norm(v)
    if n < 1e-12:
        raise InputError(f'{what} must not be zero')
    return v / n


COM = 'com'  #: the handle frame name that means the robot's centre of mass


@dataclass
class CentreOfMass:
    """The robot's centre of mass as a handle (module docstring); ``point`` is unused."""

    frame: str = COM
    point: tuple = (0.0, 0.0, 0.0)

    def placement(self, model, q):
        """Return (the centre of mass [m], identity) in the base frame at ``q``."""
        return model.centre_of_mass(q)[0], np.eye(3)

    def jacobians(self, model, q):
        """Return (position, its Jacobian J_c (3 x nq), zero angular Jacobian)."""
        c, J = model.centre_of_mass(q)
        return c, J, np.zeros_like(J)


@dataclass
class Handle:
    """A point ``point`` [m] fixed in link frame ``frame`` (Welman's point handle)."""

    frame: str
    point: tuple = (0.0, 0.0, 0.0)

    def placement(self, model, q):
        """Return (position [m], rotation of the frame) in the base frame at ``q``."""
        T = model.pin_frame_placement(q, self.frame)
        return T[:3, :3] @ np.asarray(self.point, dtype=float) + T[:3, 3], T[:3, :3]

    def jacobians(self, model, q):
        """Return (position, position Jacobian J_p (3 x nq), angular Jacobian J_w (3 x nq))."""
        p, R = self.placement(model, q)
        J = model.pin_frame_jacobian(q, self.frame)           # at the frame origin
        lever = R @ np.asarray(self.point, dtype=float)
        return p, J[:3] - _skew(lever) @ J[3:], J[3:]


class PointToPoint:
    """``C = p(q) - target`` (3 rows, [m]): the handle stays on a point."""

    def __init__(self, handle, target):
        self.handle = handle
        self.target = finite_vector(target, 3, 'point-to-point target')
        self.dim = 3

    def evaluate(self, model, q):
        """Return ``(C, J_c)``."""
        p, Jp, _ = self.handle.jacobians(model, q)
        return p - self.target, Jp


class PointOnPlane:
    """``C = n . (p(q) - p0)`` (1 row, [m]): the handle stays on the plane (p0, n)."""

    def __init__(self, handle, plane_point, normal):
        self.handle = handle
        self.plane_point = finite_vector(plane_point, 3, 'plane point')
        self.normal = _unit(normal, 'plane normal')
        self.dim = 1

    def evaluate(self, model, q):
        """Return ``(C, J_c)``."""
        p, Jp, _ = self.handle.jacobians(model, q)
        return np.array([self.normal @ (p - self.plane_point)]), (self.normal @ Jp)[None]


class PointOnLine:
    """``C = E (p(q) - p0)`` (2 rows, [m]), ``E`` two unit normals of the line (p0, d)."""

    def __init__(self, handle, line_point, direction):
        self.handle = handle
        self.line_point = finite_vector(line_point, 3, 'line point')
        self.direction = _unit(direction, 'line direction')
        self.basis = _normal_basis(self.direction)
        self.dim = 2

    def evaluate(self, model, q):
        """Return ``(C, J_c)``."""
        p, Jp, _ = self.handle.jacobians(model, q)
        return self.basis @ (p - self.line_point), self.basis @ Jp


class Orientation:
    """
    ``C = log3(R(q) R_d^T)`` (3 rows, [rad]): the link keeps orientation ``R_d``.

    Its Jacobian is the angular Jacobian ``J_w``, exact where ``C = 0`` (to first order in
    ``|C|`` elsewhere, which the Newton corrections tolerate).
    """

    def __init__(self, frame, rotation):
        R = rotation_matrix(rotation, 'orientation constraint rotation')
        self.handle = Handle(frame)
        self.rotation = R
        self.dim = 3

    def evaluate(self, model, q):
        """Return ``(C, J_c)``."""
        _, R = self.handle.placement(model, q)
        J = model.pin_frame_jacobian(q, self.handle.frame)
        return pin.log3(R @ self.rotation.T), J[3:]


def lagrange_multipliers(Jc, K, g_a, C, k_s, rcond):
    """
    Solve (1) ``J_c K J_c^T lambda = -J_c K g_a - k_s C`` by truncated SVD.

    ``K`` is the diagonal weight as a vector; singular values below ``rcond * sigma_max``
    are dropped (back-substitution on the rest).
    """
    A = (Jc * K) @ Jc.T
    b = -(Jc * K) @ g_a - k_s * C
    U, s, Vt = np.linalg.svd(A)
    keep = s > rcond * (s[0] if s.size else 0.0)
    return Vt[keep].T @ ((U[:, keep].T @ b) / s[keep])


def constraint_projector(Jc, K, rcond):
    """
    ``N = I - K J_c^T (J_c K J_c^T)^+ J_c``: the motions the constraints allow (``J_c N = 0``).

    ``N g`` is eq. (1)'s velocity for the applied force ``g`` without feedback; the
    pseudoinverse drops singular values below ``rcond * sigma_max`` as
    :func:`lagrange_multipliers` does.
    """
    A = (Jc * K) @ Jc.T
    U, s, Vt = np.linalg.svd(A)
    keep = s > rcond * (s[0] if s.size else 0.0)
    A_pinv = Vt[keep].T @ (U[:, keep].T / s[keep, None])
    return np.eye(Jc.shape[1]) - (K[:, None] * Jc.T) @ A_pinv @ Jc


def task_motion(J, N, v, damping):
    """
    Least squares for the task ``J q_dot = v`` inside the motions ``N`` allows.

    Task priority with the constraints first (as SAM eq. 19):
    ``q_dot = N (J N)^T ((J N)(J N)^T + lambda^2 I)^-1 v``, ``lambda = damping``.
    """
    JN = J @ N
    return N @ JN.T @ np.linalg.solve(JN @ JN.T + damping ** 2 * np.eye(JN.shape[0]), v)


@dataclass
class ConstrainedStep:
    """Outcome of :meth:`ConstraintSet.step`."""

    q: np.ndarray           # joint values after the step [rad or m]
    q_dot: np.ndarray       # constrained joint velocity of the step [rad/s or m/s]
    multipliers: np.ndarray
    residual: float         # largest |C_i| after the corrections [m or rad]
    corrections: int        # Newton corrections taken
    held: tuple             # joints held at a limit during the step
    feasible: bool = True   # False: refused, the constraints cannot be kept (q unchanged)


class ConstraintSet:
    """
    Constraints on a :class:`RobotModel`, and the constrained motion (module docstring).

    ``weights``: the diagonal ``K`` (per controlled joint, > 0; default 1);
    ``feedback_gain`` ``k_s`` [1/s] of (1); ``tolerance`` [m or rad] of the corrections;
    ``rcond`` the relative SVD truncation; ``feasibility_tolerance`` [m or rad]: a step
    whose corrected residual is above it (and above the residual it started from) is
    refused (:meth:`step`).
    """

    def __init__(self, model, constraints, weights=None, feedback_gain=10.0, tolerance=1e-12,
                 max_corrections=20, rcond=1e-9, feasibility_tolerance=1e-9):
        self.model = model
        self.constraints = list(constraints)
        if not self.constraints:
            raise InputError('a constraint set needs at least one constraint')
        K = np.ones(model.nq) if weights is None else finite_vector(weights, model.nq,
                                                                    'constraint weights')
        if np.any(K <= 0.0):
            raise InputError('constraint weights K must be > 0')
        self.K = K
        self.feedback_gain = float(feedback_gain)
        self.tolerance = float(tolerance)
        self.max_corrections = int(max_corrections)
        self.rcond = float(rcond)
        self.feasibility_tolerance = float(feasibility_tolerance)
        self.dim = sum(c.dim for c in self.constraints)

    def evaluate(self, q):
        """Return the stacked ``(C (dim,), J_c (dim x nq))`` at ``q``."""
        parts = [c.evaluate(self.model, q) for c in self.constraints]
        return np.concatenate([p[0] for p in parts]), np.vstack([p[1] for p in parts])

    def residual(self, q):
        """Largest ``|C_i(q)|`` [m or rad]."""
        return float(np.abs(self.evaluate(q)[0]).max())

    def velocity(self, q, g_a, K=None, feedback=True):
        """
        Constrained joint velocity ``q_dot = K (g_a + J_c^T lambda)`` and ``lambda``, eq. (1).

        ``g_a`` (nq): applied generalized force; ``K`` overrides the weights (0 = held).
        """
        q = finite_vector(q, self.model.nq, 'q')
        g_a = finite_vector(g_a, self.model.nq, 'applied force g_a')
        K = self.K if K is None else K
        C, Jc = self.evaluate(q)
        k_s = self.feedback_gain if feedback else 0.0
        lam = lagrange_multipliers(Jc, K, g_a, C, k_s, self.rcond)
        return K * (g_a + Jc.T @ lam), lam

    def null_space(self, q, K=None):
        """
        Projector ``N = I - K J_c^T (J_c K J_c^T)^+ J_c`` onto the motions the constraints allow.

        ``J_c N = 0``; ``N g`` is :meth:`velocity` of ``g`` without feedback, as a matrix.
        """
        K = self.K if K is None else K
        _, Jc = self.evaluate(finite_vector(q, self.model.nq, 'q'))
        return constraint_projector(Jc, K, self.rcond)

    def task_velocity(self, q, J, v, damping=1e-3):
        """
        Return the applied motion for a task ``J q_dot = v`` inside the allowed motions.

        :func:`task_motion` in :meth:`null_space`'s motions, ``lambda = damping``. Fed to
        :meth:`step` as ``g_a`` it is kept whole, while a law that ignores the constraints
        loses the part that the projection removes.
        """
        return task_motion(np.asarray(J, dtype=float), self.null_space(q),
                           np.asarray(v, dtype=float), damping)

    def correct(self, q, K=None):
        """Newton corrections ``dq = -K J_c^T (J_c K J_c^T)^+ C`` until within tolerance."""
        K = self.K if K is None else K
        q = np.array(q, dtype=float)
        zero = np.zeros(self.model.nq)
        for n in range(self.max_corrections + 1):
            C, Jc = self.evaluate(q)
            if np.abs(C).max() <= self.tolerance:
                return q, n
            if n == self.max_corrections:
                break
            lam = lagrange_multipliers(Jc, K, zero, C, 1.0, self.rcond)
            q = q + K * (Jc.T @ lam)
        return q, self.max_corrections

    def step(self, q, g_a, dt):
        """
        Move for ``dt`` [s] under applied force ``g_a`` keeping every constraint.

        Joints that would leave their limits are held there and the step is recomputed.
        When the joints left free cannot keep every constraint (the corrected residual is
        above ``feasibility_tolerance`` and above the residual at ``q``: more constraints
        than free motions, a loss of feasibility), the step is refused: ``q`` is returned
        unchanged with ``q_dot = 0`` and ``feasible`` False, rather than a configuration
        that breaks the constraints.
        """
        if not (np.isfinite(dt) and dt > 0.0):
            raise InputError(f'dt must be a finite time > 0 [s], got {dt}')
        m = self.model
        q = finite_vector(q, m.nq, 'q')
        K = self.K.copy()
        held = set()
        start = q.copy()
        for _ in range(m.nq + 1):
            q_dot, lam = self.velocity(start, g_a, K, feedback=False)
            q_new, n = self.correct(start + dt * q_dot, K)
            out = [int(i) for i in np.flatnonzero((q_new < m.lower) | (q_new > m.upper))
                   if int(i) not in held]
            if not out:
                break
            for i in out:       # put the joint on the limit it would cross, and hold it
                held.add(i)
                K[i] = 0.0
                start[i] = m.lower[i] if q_new[i] < m.lower[i] else m.upper[i]
        q_new = np.clip(q_new, m.lower, m.upper)
        held_names = tuple(m.joint_names[i] for i in sorted(held))
        residual = self.residual(q_new)
        if residual > self.feasibility_tolerance:
            before = self.residual(q)
            if residual > before:
                return ConstrainedStep(q, np.zeros(m.nq), lam, before, n, held_names, False)
        return ConstrainedStep(q_new, q_dot, lam, residual, n, held_names)


def drag_force(model, handle, q, force):
    """Generalized force ``g_a = J_p^T f`` of a drag ``f`` on ``handle`` (the slides' Fa)."""
    _, Jp, _ = handle.jacobians(model, q)
    return Jp.T @ finite_vector(force, 3, 'drag force')

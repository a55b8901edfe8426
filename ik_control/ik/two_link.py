"""
Analytic inverse kinematics of a planar two-link arm by the law of cosines.

Parent's notes, slides "Analytic Inverse Kinematics": links ``L1``, ``L2`` [m], goal
``(X, Y)`` in the plane of the arm, joint angles ``q1`` (first link from the x axis) and
``q2`` (second link from the first, 0 = straight). With ``D^2 = X^2 + Y^2`` the law of
cosines ``C^2 = A^2 + B^2 - 2 A B cos(c)`` applied to the triangle (shoulder, elbow,
goal) gives::

    cos(180 - q2) = (L1^2 + L2^2 - D^2) / (2 L1 L2)           elbow
    cos(q1 - qT)  = (L1^2 + D^2 - L2^2) / (2 L1 D)            shoulder, from the goal line
    qT = atan2(Y, X)                                          (the slides' cos qT = X / D)

Two solutions ("Multiple solutions"): elbow one way (``q2 > 0``, ``q1 = qT - b``) or the
other (``q2 < 0``, ``q1 = qT + b``), ``b = acos(...)`` of the shoulder line. The one
nearer the current angles (wrapped angle distance) is chosen. A goal farther than
``L1 + L2`` or nearer than ``|L1 - L2|`` is out of reach: the answer is the reachable
point nearest the goal (on the same ray from the shoulder, arm straight or folded) with
``reachable`` False.

:class:`PlanarTwoLink` applies this to two parallel revolute joints of a
:class:`~ik_control.kinematics.RobotModel` (geometry read from the model at q = 0).
"""

from dataclasses import dataclass

from ik_control.validation import finite_vector, InputError, ModelError
import numpy as np


@dataclass
class TwoLinkSolution:
    """Result of :func:`two_link_ik`: angles [rad], both solutions, reachability."""

    q: np.ndarray               # chosen (q1, q2) [rad]
    solutions: np.ndarray       # (2, 2): elbow q2 >= 0, then q2 <= 0 [rad]
    reachable: bool             # False: q reaches ``point``, the nearest reachable point
    point: np.ndarray           # (x, y) the chosen angles reach [m]


def two_link_fk(l1, l2, q):
    """Forward kinematics: ``(L1 cos q1 + L2 cos(q1 + q2), L1 sin q1 + L2 sin(q1 + q2))``."""
    q1, q2 = q
    return np.array([l1 * np.cos(q1) + l2 * np.cos(q1 + q2),
                     l1 * np.sin(q1) + l2 * np.sin(q1 + q2)])


def law_of_cosines_angle(a, b, c):
    """Angle [rad] opposite side ``c`` in a triangle of sides ``a``, ``b``, ``c`` (clipped)."""
    return float(np.arccos(np.clip((a * a + b * b - c * c) / (2.0 * a * b), -1.0, 1.0)))


def _wrap(angle):
    return (np.asarray(angle) + np.pi) % (2.0 * np.pi) - np.pi


def two_link_ik(l1, l2, target, q_current=None):
    """
    Both law-of-cosines solutions for goal ``target`` = (X, Y) [m] (module docstring).

    ``q_current`` (q1, q2) [rad] picks the nearer solution (default: elbow ``q2 >= 0``).
    Raises :class:`InputError` for link lengths that are not finite and > 0.
    """
    for name, value in (('l1', l1), ('l2', l2)):
        if not (np.isfinite(value) and value > 0.0):
            raise InputError(f'two-link {name} must be a finite length > 0 [m], got {value}')
    x, y = finite_vector(target, 2, 'two-link target')
    current = None if q_current is None else finite_vector(q_current, 2, 'q_current')
    d = float(np.hypot(x, y))
    reach_max, reach_min = l1 + l2, abs(l1 - l2)
    slack = 1e-12 * reach_max                 # rounding of a goal made by two_link_fk
    reachable = reach_min - slack <= d <= reach_max + slack
    if d > 0.0:
        theta_t = float(np.arctan2(y, x))
    else:   # goal on the shoulder: any direction; keep the current one
        theta_t = 0.0 if current is None else float(current[0])
    d = min(max(d, reach_min), reach_max)
    elbow = np.pi - law_of_cosines_angle(l1, l2, d)           # q2 = 180 - (inner angle)
    shoulder = law_of_cosines_angle(l1, d, l2) if d > 0.0 else 0.0
    solutions = np.array([[theta_t - shoulder, elbow], [theta_t + shoulder, -elbow]])
    solutions[:, 0] = _wrap(solutions[:, 0])          # q2 is already in [-pi, pi]
    pick = 0
    if current is not None:
        dist = np.abs(_wrap(solutions - current)).sum(axis=1)
        pick = int(np.argmin(dist))
    q = solutions[pick].copy()
    return TwoLinkSolution(q, solutions, bool(reachable), two_link_fk(l1, l2, q))


class PlanarTwoLink:
    """
    Two-link IK for a :class:`RobotModel` whose two controlled joints turn about parallel axes.

    At q = 0: ``a`` the common axis, ``o1``, ``o2`` the joint origins, ``p`` the end
    effector; in the plane normal to ``a`` through ``o1``, ``x`` points along the first
    link (``o2 - o1``) and ``y = a x x``. ``L1 = |o2 - o1|`` and ``L2 = |p - o2|`` in that
    plane, and ``beta`` the angle of ``p - o2`` from ``x``: model angles are
    ``(q1, q2 - beta)``. The goal's component along ``a`` cannot be changed by the arm;
    it is left as an error (``out_of_plane`` [m]).
    """

    def __init__(self, model, end_effector=0):
        if model.nq != 2 or np.any(model.kind[model.ctrl_index >= 0] != 0):
            raise ModelError('the analytic two-link solver needs exactly two controlled '
                             'revolute joints')
        self.model = model
        self.frame = model.end_effector_names[end_effector] if isinstance(
            end_effector, int) else end_effector
        ws = model.workspace()
        ws.update(np.zeros(2), jacobian=False)
        tree = [int(np.flatnonzero(model.ctrl_index == k)[0]) for k in range(2)]
        T1, T2 = ws.joint_T[tree[0]], ws.joint_T[tree[1]]
        a1 = T1[:3, :3] @ model.axis[tree[0]]
        a2 = T2[:3, :3] @ model.axis[tree[1]]
        if abs(abs(a1 @ a2) - 1.0) > 1e-9:
            raise ModelError('the analytic two-link solver needs parallel joint axes')
        p = model.pin_frame_placement(np.zeros(2), self.frame)[:3, 3]
        self.axis, self.origin = a1, T1[:3, 3]
        self.sign2 = float(np.sign(a1 @ a2))      # second axis may point the other way
        link1 = self._in_plane(T2[:3, 3])
        link2 = self._in_plane(p) - link1
        self.l1, self.l2 = float(np.linalg.norm(link1)), float(np.linalg.norm(link2))
        if self.l1 < 1e-9 or self.l2 < 1e-9:
            raise ModelError('the analytic two-link solver needs links of nonzero length')
        self.x = link1 / self.l1
        self.y = np.cross(self.axis, self.x)
        self.beta = float(np.arctan2(link2 @ self.y, link2 @ self.x))
        self.height = float((p - self.origin) @ self.axis)   # the arm's plane along a [m]

    def _in_plane(self, point):
        d = np.asarray(point, dtype=float) - self.origin
        return d - (d @ self.axis) * self.axis

    def solve(self, target_position, q_current=None):
        """Return (model joint values [rad], reachable, out-of-plane error [m]) for a goal."""
        p = finite_vector(target_position, 3, 'target_position')
        d = self._in_plane(p)
        current = None
        if q_current is not None:
            qc = finite_vector(q_current, 2, 'q_current')
            current = np.array([qc[0], self.sign2 * qc[1] + self.beta])
        sol = two_link_ik(self.l1, self.l2, (d @ self.x, d @ self.y), current)
        q = np.array([sol.q[0], self.sign2 * (sol.q[1] - self.beta)])
        q = _wrap(q)
        return q, sol.reachable, float(abs((p - self.origin) @ self.axis - self.height))

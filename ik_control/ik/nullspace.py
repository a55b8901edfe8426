"""
Redundancy: secondary goals in the nullspace of the task, and two-level task priority.

SAM eq. (16): ``dq = J^+ dx + (I - J^+ J) z`` -- any ``z`` projected through
``I - J^+ J`` leaves the task untouched. Here ``J^+`` is the damped inverse of the primary
law (Buss eq. 11), reusing its Cholesky factor.

Secondary goals as ``z = -alpha grad H`` (SAM eq. 17):

* joint centering, SAM eq. (18): ``H = sum ((q_i - q_ci) / dq_i)^2`` so
  ``grad H = 2 (q - q_c) / dq^2`` with ``q_c`` the range centre and ``dq`` the half range;
* manipulability (Yoshikawa) ``w = sqrt(det(J J^T))``, maximised: ``z = +alpha grad w``,
  the gradient by central differences of the compiled kinematics.

Task priority, SAM eq. (19), for a secondary Cartesian goal such as obstacle avoidance::

    dq = J1^+ dx1 + (J2 (I - J1^+ J1))^+ (dx2 - J2 J1^+ dx1)

with a damped inverse at the second level, since ``J2 (I - J1^+ J1)`` loses rank whenever
the two tasks conflict.
"""

from ik_control.ik import linalg
from numba import njit
import numpy as np


@njit(cache=True, nogil=True)
def joint_centering_gradient(q, lower, upper, out):
    """Write ``grad H`` of SAM eq. (18), ``2 (q - q_c) / dq^2``, from the joint limits."""
    for i in range(q.shape[0]):
        half = 0.5 * (upper[i] - lower[i])
        out[i] = 2.0 * (q[i] - 0.5 * (upper[i] + lower[i])) / (half * half)


@njit(cache=True, nogil=True)
def project_nullspace(J, L, z, out, work_m, work_n):
    """``out = (I - J^+ J) z`` with ``J^+ = J^T (J J^T + lambda^2 I)^-1`` from factor ``L``."""
    linalg.mat_vec(J, z, work_m)
    linalg.cholesky_solve(L, work_m, work_m)
    linalg.mat_t_vec(J, work_m, work_n)
    for i in range(z.shape[0]):
        out[i] = z[i] - work_n[i]


def manipulability(J):
    """Yoshikawa's measure ``sqrt(det(J J^T))`` (0 at a singularity)."""
    return float(np.sqrt(max(np.linalg.det(J @ J.T), 0.0)))


def task_priority_step(J1, dx1, J2, dx2, damping1=0.0, damping2=0.05):
    """SAM eq. (19) with damped inverses (``damping`` = lambda) at each level; returns dq."""
    J1 = np.asarray(J1, dtype=float)
    J2 = np.asarray(J2, dtype=float)
    n = J1.shape[1]
    J1p = _damped_pinv(J1, damping1)
    dq1 = J1p @ dx1
    N1 = np.eye(n) - J1p @ J1
    J2N = J2 @ N1
    dq2 = _damped_pinv(J2N, damping2) @ (dx2 - J2 @ dq1)
    return dq1 + dq2


def _damped_pinv(J, damping):
    """``J^T (J J^T + lambda^2 I)^-1`` by SVD (Buss eq. 14); lambda 0 gives J^+ (eq. 13)."""
    U, s, Vt = np.linalg.svd(J, full_matrices=False)
    lam2 = damping * damping
    tol = 1e-10 * max(J.shape) * (s[0] if s.size else 0.0)
    if lam2 > 0:
        g = s / (s * s + lam2)
    else:
        g = np.where(s > tol, 1.0 / np.where(s > tol, s, 1.0), 0.0)
    return (Vt.T * g) @ U.T

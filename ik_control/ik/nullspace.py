"""
Redundancy: secondary goals in the nullspace of the task, and two-level task priority.

SAM eq. (16): ``dq = J^+ dx + (I - J^+ J) z`` -- any ``z`` projected through
``I - J^+ J`` leaves the task untouched. The projector is the *undamped* one, whatever
damping the primary law uses, as eq. (16) intends: ``I - J^+ J`` is the orthogonal
projector onto the nullspace of ``J``, computed exactly as ``Q_perp Q_perp^T`` from the
Householder QR of ``J^T`` (:func:`project_nullspace`). A projector built from the damped
inverse ``J^T (J J^T + lambda^2 I)^-1`` is not one: near a singularity, where the damping
is active, the secondary motion then leaks into the task (measured: the hand settled off
its goal with ``centering_gain`` 0.1-0.5).

Secondary goals as ``z = -alpha grad H`` (SAM eq. 17):

* joint centering, SAM eq. (18): ``H = sum ((q_i - q_ci) / dq_i)^2`` so
  ``grad H = 2 (q - q_c) / dq^2`` with ``q_c`` the range centre and ``dq`` the half range;
  Parent's control term generalises it (:func:`posture_gradient`): desired angles
  ``q_c``, per-joint weights and an exponent ``psi``;
* manipulability (Yoshikawa) ``w = sqrt(det(J J^T))``, maximised: ``z = +alpha grad w``,
  the gradient by central differences of the compiled kinematics.

Task priority, SAM eq. (19), for a secondary Cartesian goal such as obstacle avoidance::

    dq = J1^+ dx1 + (J2 (I - J1^+ J1))^+ (dx2 - J2 J1^+ dx1)

with a damped inverse at the second level, since ``J2 (I - J1^+ J1)`` loses rank whenever
the two tasks conflict.
"""

from numba import njit
import numpy as np


@njit(cache=True, nogil=True)
def posture_gradient(q, lower, upper, centre, weight, psi, out):
    """
    Write ``grad H`` of the posture term into ``out``.

    Parent's control term ``H = sum_i alpha_i ((q_i - q_ci) / dq_i)^psi`` (the notes'
    "bias to desired angles", with ``H = sum alpha_i (theta_i - theta_ci)^psi``), each
    joint's offset measured in its half range ``dq_i`` so that the weights ``alpha_i``
    ([-], ``weight``) compare joints of different ranges; desired angles ``q_ci``
    (``centre``) [rad]. Its gradient is ``alpha_i psi |d_i|^(psi-1) sgn(d_i) / dq_i^psi``
    with ``d_i = q_i - q_ci``. With ``q_c`` the middle of each range, ``alpha = 1`` and
    ``psi = 2`` it is SAM eq. (18), ``2 (q - q_c) / dq^2``.
    """
    for i in range(q.shape[0]):
        half = 0.5 * (upper[i] - lower[i])
        d = q[i] - centre[i]
        if psi == 2.0:
            out[i] = weight[i] * 2.0 * d / (half * half)
        else:
            out[i] = weight[i] * psi * np.sign(d) * np.abs(d) ** (psi - 1.0) / half ** psi


@njit(cache=True, nogil=True)
def posture_cost(q, lower, upper, centre, weight, psi):
    """
    Parent's control term ``H = sum_i alpha_i |(q_i - q_ci) / dq_i|^psi`` [-].

    The function whose gradient :func:`posture_gradient` writes (same arguments, ``dq_i``
    the half range).
    """
    total = 0.0
    for i in range(q.shape[0]):
        total += weight[i] * np.abs((q[i] - centre[i]) / (0.5 * (upper[i] - lower[i]))) ** psi
    return total


@njit(cache=True, nogil=True)
def project_nullspace(J, z, out, H, beta):
    """
    ``out = (I - J^+ J) z``: ``z`` projected onto the nullspace of ``J`` (SAM eq. 16), exactly.

    ``J`` is m x n; ``H`` an n x m work matrix, ``beta`` an m work vector. The Householder
    QR of ``J^T = Q R`` (k = min(m, n) reflectors ``P_i = I - beta_i u_i u_i^T``, the
    ``u_i`` kept in ``H``) gives ``Q^T z`` as the first k components of
    ``P_k ... P_1 z``; zeroing them and applying ``P_1 ... P_k`` leaves
    ``(I - Q Q^T) z``. Then ``J out = R^T Q^T out = 0`` up to rounding (relative 1e-15)
    whatever the rank of ``J``: where ``J`` is rank deficient the result is still in its
    nullspace (``Q`` spans at least its row space). Orthogonal operations only, so it is
    as accurate next to a singularity as away from it. No allocation.
    """
    m, n = J.shape
    k = min(m, n)
    for i in range(n):
        for j in range(m):
            H[i, j] = J[j, i]
    for j in range(k):
        norm2 = 0.0
        for i in range(j, n):
            norm2 += H[i, j] * H[i, j]
        beta[j] = 0.0
        if norm2 == 0.0:
            continue
        alpha = np.sqrt(norm2)
        if H[j, j] > 0.0:
            alpha = -alpha
        # u = x - alpha e_1 (stored in place); beta = 1 / (alpha (alpha - x_1))
        H[j, j] -= alpha
        beta[j] = 1.0 / (alpha * (alpha - (H[j, j] + alpha)))
        for c in range(j + 1, m):
            s = 0.0
            for i in range(j, n):
                s += H[i, j] * H[i, c]
            s *= beta[j]
            for i in range(j, n):
                H[i, c] -= s * H[i, j]
    for i in range(n):
        out[i] = z[i]
    for j in range(k):  # out = P_k ... P_1 z
        _reflect(H, beta, j, out)
    for j in range(k):
        out[j] = 0.0
    for j in range(k - 1, -1, -1):  # out = P_1 ... P_k out
        _reflect(H, beta, j, out)


@njit(cache=True, nogil=True)
def _reflect(H, beta, j, x):
    """Apply the reflector ``I - beta_j u_j u_j^T`` (``u_j`` in ``H[j:, j]``) to ``x``."""
    if beta[j] == 0.0:
        return
    s = 0.0
    for i in range(j, x.shape[0]):
        s += H[i, j] * x[i]
    s *= beta[j]
    for i in range(j, x.shape[0]):
        x[i] -= s * H[i, j]


def manipulability(J):
    """Yoshikawa's measure ``sqrt(det(J J^T))`` (0 at a singularity)."""
    return float(np.sqrt(max(np.linalg.det(J @ J.T), 0.0)))


def task_priority_term(J1, dq1, J2, dx2, damping2=0.05):
    """
    Return the secondary task's term of SAM eq. (19): ``(J2 N1)^+ (dx2 - J2 dq1)``.

    ``N1 = I - J1^+ J1`` is the primary task's nullspace projector, exact at any rank:
    each row of ``J2`` is projected by :func:`project_nullspace` (``J2 N1 = (N1 J2^T)^T``,
    ``N1`` symmetric), so ``J1`` times the term is zero to rounding and switching the term
    on leaves the primary task's velocity as it was (a damped ``J1^+`` would leak into
    it, most near a singularity). ``(J2 N1)^+`` is damped by ``damping2`` = lambda_2
    (Buss eq. 11), which bounds the step where the two tasks conflict. ``dq1`` is the
    primary task's step; ``dq1`` plus this term is eq. (19)'s joint step.
    """
    m, n = J1.shape
    J1 = np.ascontiguousarray(J1, dtype=np.float64)
    J2N = np.empty((J2.shape[0], n))
    H, beta = np.empty((n, m)), np.empty(m)
    for r in range(J2.shape[0]):
        project_nullspace(J1, np.ascontiguousarray(J2[r], dtype=np.float64), J2N[r], H, beta)
    B = J2N @ J2N.T + damping2 * damping2 * np.eye(J2N.shape[0])
    return J2N.T @ np.linalg.solve(B, dx2 - J2 @ dq1)

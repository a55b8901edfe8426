"""
Velocity IK laws: joint change ``dq`` from task Jacobian ``J`` (m x n) and error ``e`` (m).

Each law solves (approximately) Buss eq. (5), ``e = J dq``:

* :func:`transpose_step` -- Jacobian transpose, ``dq = alpha J^T e`` with Buss's optimal
  ``alpha = <e, J J^T e> / <J J^T e, J J^T e>`` (Buss sec. 3).
* :func:`pseudoinverse_step` -- ``dq = J^+ e`` (Buss eq. 6; SAM eq. 12) computed from the SVD,
  Buss eq. (13), ``J^+ = sum_i sigma_i^-1 v_i u_i^T`` over ``sigma_i > threshold``.
* :func:`dls_step` -- damped least squares, Buss eq. (11),
  ``dq = J^T (J J^T + lambda^2 I)^-1 e``, solved by Cholesky; also returns the factor so
  the nullspace projector can reuse it. Its SVD form is Buss eq. (14).
* :func:`adaptive_damping` -- ``lambda^2`` that grows as the smallest singular value falls
  below ``epsilon`` (Nakamura & Hanafusa 1986; Chiaverini 1994; Maciejewski & Klein 1988):
  ``lambda^2 = lambda_0^2 + (1 - (sigma_min / epsilon)^2) lambda_max^2`` for
  ``sigma_min < epsilon``, ``lambda_0^2`` otherwise.
* :func:`sdls_step` -- selectively damped least squares (Buss & Kim 2005): each singular
  direction gets its own bound on joint change from how far its joints can move the
  effectors.

All are compiled; buffers are passed in so the control tick allocates nothing.
"""

from ik_control.ik import linalg
from numba import njit
import numpy as np


@njit(cache=True, nogil=True)
def transpose_step(J, e, dq, work_m):
    """Jacobian transpose with Buss's optimal alpha (sec. 3); ``dq`` is overwritten."""
    linalg.mat_t_vec(J, e, dq)
    linalg.mat_vec(J, dq, work_m)
    num = 0.0
    den = 0.0
    for i in range(e.shape[0]):
        num += e[i] * work_m[i]
        den += work_m[i] * work_m[i]
    alpha = num / den if den > 1e-300 else 0.0
    for i in range(dq.shape[0]):
        dq[i] *= alpha


@njit(cache=True, nogil=True)
def pseudoinverse_step(J, e, threshold, dq):
    """``dq = J^+ e`` (Buss eq. 13); singular values below ``threshold`` count as zero."""
    U, s, V = linalg.jacobi_svd(J)
    dq[:] = 0.0
    for i in range(s.shape[0]):
        if s[i] <= threshold:
            continue
        a = 0.0
        for r in range(U.shape[0]):
            a += U[r, i] * e[r]
        a /= s[i]
        for c in range(dq.shape[0]):
            dq[c] += a * V[c, i]


@njit(cache=True, nogil=True)
def dls_svd_step(J, e, lam2, dq):
    """Damped least squares in SVD form, Buss eq. (14): ``sum s/(s^2+lambda^2) v u^T e``."""
    U, s, V = linalg.jacobi_svd(J)
    dq[:] = 0.0
    for i in range(s.shape[0]):
        g = s[i] / (s[i] * s[i] + lam2) if s[i] > 0.0 else 0.0
        a = 0.0
        for r in range(U.shape[0]):
            a += U[r, i] * e[r]
        for c in range(dq.shape[0]):
            dq[c] += g * a * V[c, i]


@njit(cache=True, nogil=True)
def dls_factor(J, lam2, L):
    """
    Cholesky factor of ``J J^T + lambda^2 I`` into ``L``; raises damping until it factors.

    Returns the damping actually used (``lam2``, or more if J J^T was numerically singular
    and ``lam2`` zero).
    """
    while True:
        linalg.gram_damped(J, lam2, L)
        if linalg.cholesky_inplace(L):
            return lam2
        lam2 = 1e-12 if lam2 <= 0.0 else lam2 * 100.0


@njit(cache=True, nogil=True)
def dls_apply(J, L, e, dq, work_m):
    """``dq = J^T (J J^T + lambda^2 I)^-1 e`` with the factor ``L`` (Buss eq. 11)."""
    linalg.cholesky_solve(L, e, work_m)
    linalg.mat_t_vec(J, work_m, dq)


@njit(cache=True, nogil=True)
def dls_step(J, e, lam2, dq, L, work_m):
    """Damped least squares, Buss eq. (11); returns the damping used."""
    lam2 = dls_factor(J, lam2, L)
    dls_apply(J, L, e, dq, work_m)
    return lam2


@njit(cache=True, nogil=True)
def smallest_singular_value(L, lam2, iterations, work_x, work_y):
    """
    Smallest singular value of ``J`` from ``L``, :func:`dls_factor`'s factor of ``J J^T + lam2 I``.

    ``iterations`` steps of inverse iteration give the factored matrix's smallest
    eigenvalue ``sigma_min^2 + lam2`` from above: an upper bound on ``sigma_min``, exact
    where it matters (``sigma_min`` small, for the adaptive damping of Buss sec. 6).
    """
    mu = linalg.smallest_eigenvalue_spd(L, iterations, work_x, work_y) - lam2
    return np.sqrt(mu) if mu > 0.0 else 0.0


@njit(cache=True, nogil=True)
def adaptive_damping(sigma_min, lambda0, lambda_max, epsilon):
    """``lambda^2`` from the smallest singular value (module docstring)."""
    lam2 = lambda0 * lambda0
    if sigma_min < epsilon:
        r = sigma_min / epsilon
        lam2 += (1.0 - r * r) * lambda_max * lambda_max
    return lam2


@njit(cache=True, nogil=True)
def clamp_max_abs(v, limit):
    """Buss & Kim ClampMaxAbs: scale ``v`` so that ``max |v_i| <= limit`` (direction kept)."""
    big = 0.0
    for i in range(v.shape[0]):
        a = abs(v[i])
        if a > big:
            big = a
    if big > limit:
        s = limit / big
        for i in range(v.shape[0]):
            v[i] *= s
        return True
    return False


@njit(cache=True, nogil=True)
def sdls_step(J, e, gamma_max, dq):
    """
    Compute selectively damped least squares (Buss & Kim 2005) for 3-row blocks.

    With ``J = sum sigma_i u_i v_i^T`` and ``rho_lj`` the norm of the 3-row block of
    effector ``l`` in column ``j``: ``N_i = sum_l ||u_{l,i}||``,
    ``M_i = sigma_i^-1 sum_j |v_ji| sum_l rho_lj``, ``gamma_i = min(1, N_i / M_i) gamma_max``,
    ``phi_i = ClampMaxAbs(sigma_i^-1 (u_i . e) v_i, gamma_i)``,
    ``dq = ClampMaxAbs(sum_i phi_i, gamma_max)``. A 6-row pose task counts as two blocks.
    """
    m, n = J.shape
    blocks = m // 3
    U, s, V = linalg.jacobi_svd(J)
    rho = np.zeros(n)
    for j in range(n):
        for b in range(blocks):
            t = 0.0
            for r in range(3 * b, 3 * b + 3):
                t += J[r, j] * J[r, j]
            rho[j] += np.sqrt(t)
    dq[:] = 0.0
    phi = np.empty(n)
    for i in range(s.shape[0]):
        if s[i] <= 1e-10:
            continue
        alpha = 0.0
        for r in range(m):
            alpha += U[r, i] * e[r]
        big_n = 0.0
        for b in range(blocks):
            t = 0.0
            for r in range(3 * b, 3 * b + 3):
                t += U[r, i] * U[r, i]
            big_n += np.sqrt(t)
        big_m = 0.0
        for j in range(n):
            big_m += abs(V[j, i]) * rho[j]
        big_m /= s[i]
        gamma = gamma_max * min(1.0, big_n / big_m) if big_m > 0.0 else gamma_max
        for j in range(n):
            phi[j] = alpha / s[i] * V[j, i]
        clamp_max_abs(phi, gamma)
        for j in range(n):
            dq[j] += phi[j]
    clamp_max_abs(dq, gamma_max)

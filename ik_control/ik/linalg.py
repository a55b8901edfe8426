"""
Small dense linear algebra in compiled code, sized for Jacobians (m <= ~24 rows).

LAPACK through numba costs 1-12 us per call on 6x7 matrices (call overhead and
workspace allocation); these hand-written routines cost a fraction of that and
allocate nothing when given output buffers. Tested against numpy.linalg.
"""

from numba import njit
import numpy as np


@njit(cache=True, nogil=True)
def gram_damped(J, lam2, out):
    """``out = J J^T + lam2 I`` (m x m), the matrix inverted in DLS (Buss eq. 11)."""
    m, n = J.shape
    for r in range(m):
        for c in range(r + 1):
            s = 0.0
            for k in range(n):
                s += J[r, k] * J[c, k]
            out[r, c] = s
            out[c, r] = s
        out[r, r] += lam2


@njit(cache=True, nogil=True)
def cholesky_inplace(A):
    """Lower Cholesky factor of SPD ``A`` written into its lower triangle; False if not SPD."""
    m = A.shape[0]
    for j in range(m):
        s = A[j, j]
        for k in range(j):
            s -= A[j, k] * A[j, k]
        if s <= 0.0 or not np.isfinite(s):
            return False
        d = np.sqrt(s)
        A[j, j] = d
        for i in range(j + 1, m):
            t = A[i, j]
            for k in range(j):
                t -= A[i, k] * A[j, k]
            A[i, j] = t / d
    return True


@njit(cache=True, nogil=True)
def cholesky_solve(L, b, out):
    """Solve ``L L^T x = b``, ``L`` from :func:`cholesky_inplace` (``out`` may be ``b``)."""
    m = L.shape[0]
    for i in range(m):
        t = b[i]
        for k in range(i):
            t -= L[i, k] * out[k]
        out[i] = t / L[i, i]
    for i in range(m - 1, -1, -1):
        t = out[i]
        for k in range(i + 1, m):
            t -= L[k, i] * out[k]
        out[i] = t / L[i, i]


@njit(cache=True, nogil=True)
def mat_vec(A, x, out):
    """``out = A x``."""
    for r in range(A.shape[0]):
        s = 0.0
        for c in range(A.shape[1]):
            s += A[r, c] * x[c]
        out[r] = s


@njit(cache=True, nogil=True)
def mat_t_vec(A, y, out):
    """``out = A^T y``."""
    for c in range(A.shape[1]):
        out[c] = 0.0
    for r in range(A.shape[0]):
        yr = y[r]
        for c in range(A.shape[1]):
            out[c] += A[r, c] * yr


@njit(cache=True, nogil=True)
def smallest_eigenvalue_spd(L, iterations, work_x, work_y):
    """
    Smallest eigenvalue of ``A = L L^T`` by inverse iteration from a fixed start vector.

    Converges at rate lambda_min / lambda_2: fastest exactly when the smallest singular
    value of J is small compared with the others, the case damping is for. Returns the
    Rayleigh quotient ``1 / (x^T A^-1 x)`` (an upper bound of the true value).
    """
    m = L.shape[0]
    for i in range(m):
        work_x[i] = 1.0 / np.sqrt(m) * (1.0 + 0.1 * i)
    lam = 0.0
    for _ in range(iterations):
        norm = 0.0
        for i in range(m):
            norm += work_x[i] * work_x[i]
        norm = np.sqrt(norm)
        for i in range(m):
            work_x[i] /= norm
        cholesky_solve(L, work_x, work_y)
        dot = 0.0
        for i in range(m):
            dot += work_x[i] * work_y[i]
        lam = 1.0 / dot if dot > 0.0 else 0.0
        for i in range(m):
            work_x[i] = work_y[i]
    return lam


@njit(cache=True, nogil=True)
def jacobi_svd(J):
    """
    Thin SVD ``J = U diag(s) V^T`` by one-sided (Hestenes) Jacobi rotations.

    Returns ``U`` (m x r), ``s`` (r,), ``V`` (n x r), r = min(m, n), singular values in
    descending order. Accurate to machine precision for the small matrices used here.
    """
    m, n = J.shape
    transpose = n > m
    A = J.T.copy() if transpose else J.copy()
    rows, cols = A.shape
    W = np.eye(cols)
    for _ in range(60):
        rotated = False
        for p in range(cols - 1):
            for q in range(p + 1, cols):
                alpha = 0.0
                beta = 0.0
                gamma = 0.0
                for k in range(rows):
                    alpha += A[k, p] * A[k, p]
                    beta += A[k, q] * A[k, q]
                    gamma += A[k, p] * A[k, q]
                if gamma == 0.0 or abs(gamma) <= 1e-15 * np.sqrt(alpha * beta):
                    continue
                rotated = True
                zeta = (beta - alpha) / (2.0 * gamma)
                t = (1.0 if zeta >= 0 else -1.0) / (abs(zeta) + np.sqrt(1.0 + zeta * zeta))
                c = 1.0 / np.sqrt(1.0 + t * t)
                s = c * t
                for k in range(rows):
                    ap = A[k, p]
                    aq = A[k, q]
                    A[k, p] = c * ap - s * aq
                    A[k, q] = s * ap + c * aq
                for k in range(cols):
                    wp = W[k, p]
                    wq = W[k, q]
                    W[k, p] = c * wp - s * wq
                    W[k, q] = s * wp + c * wq
        if not rotated:
            break
    sv = np.zeros(cols)
    for k in range(cols):
        t = 0.0
        for i in range(rows):
            t += A[i, k] * A[i, k]
        sv[k] = np.sqrt(t)
    order = np.argsort(-sv)
    r = cols
    s = sv[order]
    left = np.zeros((rows, r))
    for idx in range(r):
        k = order[idx]
        if sv[k] > 0.0:
            for i in range(rows):
                left[i, idx] = A[i, k] / sv[k]
    right = W[:, order]
    if transpose:
        # J^T = left diag(s) right^T  =>  J = right diag(s) left^T
        return right, s, left
    return left, s, right

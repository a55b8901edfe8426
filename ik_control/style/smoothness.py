"""The smoothness metric ``sn`` of Gielniak et al., eq. (3)."""

from ik_control.validation import InputError
import numpy as np


def smoothness(x, dt):
    """
    Eq. (3): ``sn = sum_{i=2}^{N-1} |x(i+1) + x(i-1) - 2 x(i)| / ((N - 2) dt)``.

    ``x``: samples of one joint [rad], shape (N,), or one column per joint, shape (N, n),
    taken every ``dt`` [s]; N >= 3. The sum runs over the N - 2 interior samples (the
    paper's indices are 1-based): each term compares the tangent into a sample with the
    tangent out of it, so a piecewise-linear function with equal tangents scores 0. Returns
    a float [rad/s] (or one per column). The paper's Table I prints ``sn * 10000``.
    """
    arr = np.asarray(x, dtype=float)
    if arr.ndim not in (1, 2) or arr.shape[0] < 3:
        raise InputError(f'sn needs at least 3 samples along axis 0, got shape {arr.shape}')
    if not np.all(np.isfinite(arr)):
        raise InputError('sn: samples contain NaN or infinite values')
    if not (np.isfinite(dt) and dt > 0.0):
        raise InputError(f'sn: dt must be finite and > 0 [s], got {dt}')
    second = arr[2:] + arr[:-2] - 2.0 * arr[1:-1]
    return np.abs(second).sum(axis=0) / ((arr.shape[0] - 2) * dt)

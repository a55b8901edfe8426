"""
Velocity modulation of an exemplar trajectory (Gielniak et al., sec. IV-B, eq. 2).

The exemplar ``theta_j(t)`` of joint ``j`` is kept as its velocity profile; the adapted
trajectory starts from the robot's actual value ``psi_j(t0)`` and integrates the exemplar's
velocity multiplied by the eq. (2) scalar::

    s_j = (psi_j(t_pc) - psi_j(t0)) / (theta_j(t_pc) - theta_j(t0))            (2)
    psi_j(t) = psi_j(t0) + s_j * (theta_j(t) - theta_j(t0))

so ``psi_j(t_pc)`` is the value the kinematic search found, and the shape (the timing of
every acceleration, pause, anticipation and follow-through) is the exemplar's.

**Cyclic profiles** (the paper's name for a net change ``theta_j(t_pc) - theta_j(t0)`` of
zero, or near it, which makes eq. 2 blow up). We use the first strategy the paper lists:
scale the increments where the joint increases by one scalar ``a_j`` and those where it
decreases by another, ``b_j``. With ``P`` and ``N`` the joint's total increase and total
decrease from ``t0`` to ``t_pc`` the constraint is ``a P - b N = psi(t_pc) - psi(t0)``; we
take the pair nearest to the unmodified profile ``(1, 1)``::

    lambda = (dpsi - (P - N)) / (P^2 + N^2),   a = 1 + lambda P,   b = 1 - lambda N

and, if that makes one scalar negative (the segment would reverse), set it to 0 and solve
the other from the constraint: the joint then pauses where the exemplar moved the other
way, and never moves against the exemplar's direction. Velocities stay continuous (they
pass through zero where the scalar changes). The split is used when
``|theta(t_pc) - theta(t0)| < min_net_fraction * (P + N)``; eq. 2 otherwise.

A joint that does not move at all before ``t_pc`` has no profile to scale: if it must
move, the paper's answer is to choose another exemplar, and :func:`modulate` says so
(:class:`~ik_control.validation.InputError`). Joints outside ``modulated`` keep the
exemplar's velocity unscaled (``a = b = 1``), started from their actual value.
"""

from ik_control.validation import InputError
import numpy as np

#: Net changes below this [rad] count as no motion at all.
STILL = 1e-9


def modulation_scalar(theta_t0, theta_tpc, psi_t0, psi_tpc):
    """
    Eq. (2): ``(psi(t_pc) - psi(t0)) / (theta(t_pc) - theta(t0))`` (scalars or arrays).

    ``theta``: exemplar values [rad] at the start and at the constraint instant; ``psi``:
    the robot's actual value at the start and the searched value. Raises InputError where
    the denominator is zero (a cyclic profile: see the module docstring).
    """
    den = np.asarray(theta_tpc, dtype=float) - np.asarray(theta_t0, dtype=float)
    if np.any(den == 0.0):
        raise InputError('eq. 2 denominator is zero: the exemplar has no net motion before '
                         'the constraint instant (cyclic profile)')
    return (np.asarray(psi_tpc, dtype=float) - np.asarray(psi_t0, dtype=float)) / den


def split_scalars(increase, decrease, change):
    """
    Scalars ``(a, b)`` for rising and falling increments with ``a P - b N = change``.

    ``increase`` P >= 0 and ``decrease`` N >= 0 [rad] are the exemplar's total rise and fall
    up to the constraint instant, ``change`` [rad] the required net change (scalars, or
    arrays of one shape: one pair per element). The pair nearest to (1, 1), with negative
    scalars set to 0 (module docstring).
    """
    P, N, change = (np.asarray(x, dtype=float) for x in (increase, decrease, change))
    if np.any(P + N <= STILL):
        raise InputError('split scaling needs a profile that moves')
    lam = (change - (P - N)) / (P * P + N * N)
    a, b = 1.0 + lam * P, 1.0 - lam * N
    # b < 0 needs N > 0 and a < 0 needs P > 0 (lambda N > 1, lambda P < -1)
    a_split = np.where(b < 0.0, change / np.where(P > 0.0, P, 1.0), np.where(a < 0.0, 0.0, a))
    b_split = np.where(b < 0.0, 0.0, np.where(a < 0.0, -change / np.where(N > 0.0, N, 1.0), b))
    return a_split, b_split


def profile_kinds(theta, i_pc, min_net_fraction):
    """
    Return the exemplar's motion up to sample ``i_pc`` and how :func:`modulate` scales each joint.

    Returns ``(P, N, net, still, eq2)`` per joint: total rise and fall [rad], net change
    ``theta[i_pc] - theta[0]`` [rad], no motion at all (``P + N <= STILL``), and eq. 2
    (``|net| >= min_net_fraction (P + N)``); the other joints get :func:`split_scalars`.
    """
    step = np.diff(theta[:int(i_pc) + 1], axis=0)
    P = np.clip(step, 0.0, None).sum(axis=0)
    N = np.clip(-step, 0.0, None).sum(axis=0)
    net = theta[int(i_pc)] - theta[0]
    still = P + N <= STILL
    eq2 = ~still & (np.abs(net) >= min_net_fraction * (P + N))
    return P, N, net, still, eq2


def scalar_deviation(theta, i_pc, change, modulated=None, min_net_fraction=0.25):
    """
    How far from 1 the scalars :func:`modulate` would use are: ``(a - 1)^2 + (b - 1)^2``.

    Not in the paper: the cost by which the kinematic search breaks ties between near-equal
    answers (:class:`~ik_control.style.tsfks.Tsfks`, ``tie_fraction``), so that the answer
    needs the least modulation and the exemplar's motion is kept as it is. ``theta`` (N, n)
    [rad] the exemplar from the start, ``i_pc`` the constraint sample, ``change`` (m, n) or
    (n,) the net changes [rad] to rate (the searched value less the actual start value).
    Eq. 2 joints give ``2 (s - 1)^2``, split (cyclic) joints the pair of
    :func:`split_scalars`, unmodulated joints 0, and a joint that does not move in the
    exemplar 0 if it need not move, else infinity (:func:`modulate` would refuse it).
    """
    theta = np.asarray(theta, dtype=float)
    n = theta.shape[1]
    change = np.asarray(change, dtype=float)
    modulated = np.ones(n, dtype=bool) if modulated is None else np.asarray(modulated, bool)
    P, N, net, still, eq2 = profile_kinds(theta, i_pc, min_net_fraction)
    s = change / np.where(eq2, net, 1.0)
    cost_eq2 = 2.0 * (s - 1.0) ** 2
    # still joints get a stand-in profile here: their cost is cost_still
    a, b = split_scalars(np.where(still, 1.0, P), np.where(still, 1.0, N), change)
    cost_split = (a - 1.0) ** 2 + (b - 1.0) ** 2
    cost_still = np.where(np.abs(change) > STILL, np.inf, 0.0)
    cost = np.where(eq2, cost_eq2, np.where(still, cost_still, cost_split))
    return np.where(modulated, cost, 0.0)


def modulate(theta, i_pc, psi_t0, psi_tpc, modulated=None, min_net_fraction=0.25,
             joint_names=None):
    """
    Adapt the exemplar ``theta`` (N, n) [rad] so that row ``i_pc`` equals ``psi_tpc``.

    ``theta`` is sampled at equal time steps, row 0 at the start ``t0``; ``psi_t0`` (n,)
    the robot's actual joint values at ``t0`` [rad]; ``psi_tpc`` (n,) the values wanted at
    the constraint instant (from the kinematic search). ``modulated`` (n,) bool selects
    the joints scaled (default: all). Returns ``(psi, a, b, method)``: positions (N, n)
    [rad], the scalars of rising and falling increments (n,) (``a = b = s_j`` of eq. 2),
    and per joint ``'eq2'``, ``'split'``, ``'still'`` (no motion, none needed) or
    ``'unscaled'`` (not modulated). Use :func:`scale_velocities` for the velocities.
    """
    theta = np.asarray(theta, dtype=float)
    if theta.ndim != 2 or theta.shape[0] < 2:
        raise InputError(f'exemplar must be (samples, joints) with >= 2 samples, got '
                         f'{theta.shape}')
    n = theta.shape[1]
    if not 0 < int(i_pc) < theta.shape[0]:
        raise InputError(f'constraint sample {i_pc} is not inside 1..{theta.shape[0] - 1}')
    i_pc = int(i_pc)
    psi_t0 = np.broadcast_to(np.asarray(psi_t0, dtype=float), (n,))
    psi_tpc = np.broadcast_to(np.asarray(psi_tpc, dtype=float), (n,))
    if not (np.all(np.isfinite(theta)) and np.all(np.isfinite(psi_t0))
            and np.all(np.isfinite(psi_tpc))):
        raise InputError('modulation inputs contain NaN or infinite values')
    modulated = np.ones(n, dtype=bool) if modulated is None else np.asarray(modulated, bool)
    names = joint_names or [f'joint {j}' for j in range(n)]
    step = np.diff(theta, axis=0)
    rise = np.clip(step, 0.0, None)
    fall = np.clip(-step, 0.0, None)
    P, N, _, still, eq2 = profile_kinds(theta, i_pc, min_net_fraction)
    a = np.ones(n)
    b = np.ones(n)
    method = []
    for j in range(n):
        change = psi_tpc[j] - psi_t0[j]
        if not modulated[j]:
            method.append('unscaled')
        elif still[j]:
            if abs(change) > STILL:
                raise InputError(f'{names[j]} does not move in the exemplar before the '
                                 f'constraint instant but must move {change:.4g} rad: there '
                                 'is no velocity profile to scale; choose another exemplar or '
                                 'leave the joint out of the modulated joints')
            method.append('still')
        elif eq2[j]:
            a[j] = b[j] = modulation_scalar(theta[0, j], theta[i_pc, j], psi_t0[j],
                                            psi_tpc[j])
            method.append('eq2')
        else:
            a[j], b[j] = split_scalars(P[j], N[j], change)
            method.append('split')
    psi = np.empty_like(theta)
    psi[0] = psi_t0
    psi[1:] = psi_t0 + np.cumsum(a * rise - b * fall, axis=0)
    psi[i_pc, modulated] = psi_tpc[modulated]      # exact, not a rounded cumulative sum
    return psi, a, b, tuple(method)


def scale_velocities(velocity, a, b):
    """Scaled velocity profile ``a v`` where ``v > 0``, ``b v`` where ``v < 0`` [rad/s]."""
    v = np.asarray(velocity, dtype=float)
    return np.where(v > 0.0, a * v, b * v)


def time_scale(velocities, dt, v_max, a_max):
    """
    Return the least uniform slow-down ``s >= 1`` that keeps a motion within its limits.

    ``velocities``: (N, n) [rad/s] every ``dt`` [s]; ``v_max``, ``a_max``: one value or one
    per column [rad/s, rad/s^2]. Played ``s`` times slower (times ``x s``), the velocities
    scale by ``1/s`` and the accelerations (the sample-to-sample differences over ``dt``)
    by ``1/s^2``: the path and its shape, the style, are the same. This is how the
    ``style_adapter`` node plays an exemplar animated for its character, not for the robot.
    """
    v = np.asarray(velocities, dtype=float)
    if v.ndim != 2 or v.shape[0] < 2 or not np.all(np.isfinite(v)):
        raise InputError(f'time_scale needs finite velocities of shape (N >= 2, n), got '
                         f'{v.shape}')
    if not (np.isfinite(dt) and dt > 0.0):
        raise InputError(f'time_scale: dt must be finite and > 0 [s], got {dt}')
    speed = np.max(np.abs(v), axis=0) / v_max
    accel = np.max(np.abs(np.diff(v, axis=0)), axis=0) / dt / a_max
    return max(1.0, float(np.max(speed)), float(np.sqrt(np.max(accel))))

"""
Joint limits on every command: position (with margin), velocity and acceleration.

Given the last command ``(q, v_prev)`` and a desired velocity ``v_des`` for one tick of
``dt`` seconds, :func:`limit_velocity` returns the commanded velocity ``v`` such that

1. ``|v_i| <= v_max_i`` -- by scaling the whole vector (the Cartesian direction is kept);
2. ``|v_i - v_prev_i| <= a_max_i dt`` -- by scaling the change ``v - v_prev`` uniformly;
3. the joint can still stop inside its bound after this tick: with ``d`` the distance from
   ``q_i`` to the bound it moves toward, the tick's step plus the braking distance at
   ``a``, ``(v_prev + v) dt / 2 + v^2 / (2 a) <= d``, i.e.
   ``|v| <= -a dt / 2 + sqrt(a^2 dt^2 / 4 + 2 a (d - v_prev dt / 2))``.
   If the previous command met this bound, the cap is at least ``|v_prev| - a dt``, so
   applying it after (2) keeps the acceleration bound;
4. the next position :func:`integrate` ``q + (v_prev + v) dt / 2`` stays inside
   ``[lower + margin, upper - margin]`` -- a last clip that the braking bound (3) makes
   inactive in normal operation;
5. where the velocity changes sign within the tick, the joint turns at
   ``q - v_prev^2 / (2 alpha)`` with ``alpha = (v - v_prev) / dt``: a joint that braked
   for its bound (3) stops between two ticks, and ``alpha`` is raised to
   ``v_prev^2 / (2 d)`` so that it turns at the bound, not past it (at most ``a``: (3)
   left it room to brake at ``a``).

Positions advance by the trapezoidal rule (:func:`integrate`): between two commands the
velocity changes linearly, so the cubic Hermite segment that a joint_trajectory_controller
fits through two consecutive commands (positions and velocities) is exactly the
constant-acceleration motion, whose acceleration ``(v - v_prev) / dt`` the limit (2)
bounds. (With ``q + v dt`` the Hermite segment would accelerate at up to 4 times that.)

A joint already inside the margin band (a robot started there) is never pushed further
out: its bound becomes its current position.
"""

from ik_control.validation import InputError
from numba import njit
import numpy as np

# returned flags
VELOCITY_SCALED = 1
BRAKING_FOR_BOUND = 2
ACCELERATION_LIMITED = 4
POSITION_CLIPPED = 8


def joint_limits(model, config):
    """
    Return ``(v_max [rad/s or m/s], a_max [rad/s^2 or m/s^2])`` per joint for ``config``.

    ``v_max``: ``limits.max_velocity`` (one value or one per joint), else the URDF's limits
    times ``limits.velocity_scale``; never above the URDF's. ``a_max``:
    ``limits.max_acceleration``, one value or one per joint. Raises :class:`InputError`
    naming the joint where a limit is missing or exceeded.
    """
    nq = model.nq
    lim = config.limits
    v_max = (np.array(lim.max_velocity, dtype=float) if lim.max_velocity
             else model.velocity_limit * lim.velocity_scale)
    if v_max.size == 1:
        v_max = np.full(nq, float(v_max[0]))
    if not np.all(np.isfinite(v_max) & (v_max > 0)):
        raise InputError('URDF velocity limits missing: set limits.max_velocity')
    urdf = model.velocity_limit
    faster = np.isfinite(urdf) & (urdf > 0) & (v_max > urdf * (1.0 + 1e-12))
    if faster.any():
        j = int(np.argmax(faster))
        raise InputError(f'limits.max_velocity {v_max[j]:g} exceeds the URDF velocity limit '
                         f"{urdf[j]:g} of joint '{model.joint_names[j]}'")
    a = np.array(lim.max_acceleration, dtype=float)
    return v_max, (np.full(nq, a[0]) if a.size == 1 else a)


@njit(cache=True, nogil=True)
def velocity_box(q, v_prev, lower, upper, margin, v_max, a_max, dt, lo, hi):
    """
    Write per-joint bounds ``lo``, ``hi`` [rad/s] of the velocities rules 1 to 4 let pass.

    The velocity limit, the acceleration step from ``v_prev``, the braking cap of rule 3
    and the position clip of rule 4, with a joint already inside the margin band bounded
    at its position (module docstring). Where they leave no room, ``lo > hi``: the caller
    decides (the limiter's own choice). Used by the stages that shape the velocity before
    the limiter (the collision stage, Welman's constraints), so it leaves theirs as is.
    """
    for i in range(q.shape[0]):
        lo_q = min(lower[i] + margin, q[i])
        hi_q = max(upper[i] - margin, q[i])
        acc = a_max[i]
        half = 0.5 * acc * dt
        d_hi = max(hi_q - q[i] - 0.5 * v_prev[i] * dt, 0.0)
        d_lo = max(q[i] - lo_q + 0.5 * v_prev[i] * dt, 0.0)
        cap_hi = -half + np.sqrt(half * half + 2.0 * acc * d_hi)
        cap_lo = -half + np.sqrt(half * half + 2.0 * acc * d_lo)
        hi[i] = min(v_max[i], v_prev[i] + acc * dt, cap_hi,
                    2.0 * (hi_q - q[i]) / dt - v_prev[i])
        lo[i] = max(-v_max[i], v_prev[i] - acc * dt, -cap_lo,
                    2.0 * (lo_q - q[i]) / dt - v_prev[i])


@njit(cache=True, nogil=True)
def integrate(q, v_prev, v, dt, out):
    """Trapezoidal position step ``out = q + (v_prev + v) dt / 2`` (module docstring)."""
    for i in range(q.shape[0]):
        out[i] = q[i] + 0.5 * (v_prev[i] + v[i]) * dt


@njit(cache=True, nogil=True)
def limit_velocity(q, v_prev, v_des, lower, upper, margin, v_max, a_max, dt, v_out):
    """Write the limited velocity into ``v_out`` (module docstring); returns the flag bits."""
    n = q.shape[0]
    flags = 0
    # 1. velocity: uniform scaling
    scale = 1.0
    for i in range(n):
        a = abs(v_des[i])
        if a * scale > v_max[i]:
            scale = v_max[i] / a
    if scale < 1.0:
        flags |= VELOCITY_SCALED
    for i in range(n):
        v_out[i] = v_des[i] * scale
    # 2. acceleration: uniform scaling of the change
    scale = 1.0
    for i in range(n):
        dv = abs(v_out[i] - v_prev[i])
        lim = a_max[i] * dt
        if dv * scale > lim:
            scale = lim / dv
    if scale < 1.0:
        flags |= ACCELERATION_LIMITED
        for i in range(n):
            v_out[i] = v_prev[i] + (v_out[i] - v_prev[i]) * scale
    # 3. braking distance to the bound the joint moves toward (after 2: the cap is at
    #    least v_prev - a dt when the last command met it, so braking stays feasible)
    for i in range(n):
        lo = min(lower[i] + margin, q[i])
        hi = max(upper[i] - margin, q[i])
        acc = a_max[i]
        half = 0.5 * acc * dt
        if v_out[i] > 0.0:
            d = max(hi - q[i] - 0.5 * v_prev[i] * dt, 0.0)
            cap = -half + np.sqrt(half * half + 2.0 * acc * d)
            if v_out[i] > cap:
                v_out[i] = cap
                flags |= BRAKING_FOR_BOUND
        elif v_out[i] < 0.0:
            d = max(q[i] - lo + 0.5 * v_prev[i] * dt, 0.0)
            cap = -half + np.sqrt(half * half + 2.0 * acc * d)
            if -v_out[i] > cap:
                v_out[i] = -cap
                flags |= BRAKING_FOR_BOUND
    # 4. hard position clip (inactive unless the braking bound could not be met)
    for i in range(n):
        lo = min(lower[i] + margin, q[i])
        hi = max(upper[i] - margin, q[i])
        nxt = q[i] + 0.5 * (v_prev[i] + v_out[i]) * dt
        if nxt > hi:
            v_out[i] = 2.0 * (hi - q[i]) / dt - v_prev[i]
            flags |= POSITION_CLIPPED
        elif nxt < lo:
            v_out[i] = 2.0 * (lo - q[i]) / dt - v_prev[i]
            flags |= POSITION_CLIPPED
    # 5. the turning point inside the tick
    for i in range(n):
        vp = v_prev[i]
        if vp < 0.0 < v_out[i]:
            d = q[i] - min(lower[i] + margin, q[i])
        elif vp > 0.0 > v_out[i]:
            d = max(upper[i] - margin, q[i]) - q[i]
        else:
            continue
        alpha = abs(v_out[i] - vp) / dt
        if vp * vp > 2.0 * alpha * d:
            need = vp * vp / (2.0 * d) if d > 0.0 else a_max[i]
            v_out[i] = vp - np.sign(vp) * min(need, a_max[i]) * dt
            flags |= BRAKING_FOR_BOUND
    return flags

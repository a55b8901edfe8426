"""
Joint limits on every command: position (with margin), velocity and acceleration.

Given the last command ``(q, v_prev)`` and a desired velocity ``v_des`` for one tick of
``dt`` seconds, :func:`limit_velocity` returns the commanded velocity ``v`` such that

1. ``|v_i| <= v_max_i`` -- by scaling the whole vector (the Cartesian direction is kept);
2. ``|v_i - v_prev_i| <= a_max_i dt`` -- by scaling the change ``v - v_prev`` uniformly;
3. the joint can still stop inside its bound after this tick: with ``d`` the distance from
   ``q_i`` to the bound it moves toward, ``v dt + v^2 / (2 a) <= d``, i.e.
   ``|v| <= -a dt + sqrt(a^2 dt^2 + 2 a d)``; the discrete stop takes ``v^2/(2a) + v dt/2``.
   If the previous command met this bound, the cap is at least ``|v_prev| - a dt``, so
   applying it after (2) keeps the acceleration bound;
4. ``q + v dt`` stays inside ``[lower + margin, upper - margin]`` -- a last clip that the
   braking bound (3) makes inactive in normal operation.

A joint already inside the margin band (a robot started there) is never pushed further
out: its bound becomes its current position.
"""

from numba import njit
import numpy as np

# returned flags
VELOCITY_SCALED = 1
BRAKING_FOR_BOUND = 2
ACCELERATION_LIMITED = 4
POSITION_CLIPPED = 8


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
        if v_out[i] > 0.0:
            d = hi - q[i]
            cap = -acc * dt + np.sqrt(acc * acc * dt * dt + 2.0 * acc * d)
            if v_out[i] > cap:
                v_out[i] = cap
                flags |= BRAKING_FOR_BOUND
        elif v_out[i] < 0.0:
            d = q[i] - lo
            cap = -acc * dt + np.sqrt(acc * acc * dt * dt + 2.0 * acc * d)
            if -v_out[i] > cap:
                v_out[i] = -cap
                flags |= BRAKING_FOR_BOUND
    # 4. hard position clip (inactive unless the braking bound could not be met)
    for i in range(n):
        lo = min(lower[i] + margin, q[i])
        hi = max(upper[i] - margin, q[i])
        nxt = q[i] + v_out[i] * dt
        if nxt > hi:
            v_out[i] = (hi - q[i]) / dt
            flags |= POSITION_CLIPPED
        elif nxt < lo:
            v_out[i] = (lo - q[i]) / dt
            flags |= POSITION_CLIPPED
    return flags

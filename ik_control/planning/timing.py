"""
Time parameterisation of a joint-space polyline within velocity and acceleration limits.

Each segment ``q_k -> q_(k+1)`` (``dq = q_(k+1) - q_k``) is followed along the straight
line as ``q(t) = q_k + s(t) dq`` with a trapezoidal (or, when short, triangular) profile
of ``s`` from rest to rest: ``s'`` at most ``v_s = min_i vmax_i / |dq_i|`` and ``|s''|``
at most ``a_s = min_i amax_i / |dq_i|``, so every joint stays within its velocity limit
``vmax_i`` [rad/s] and acceleration limit ``amax_i`` [rad/s^2], the slowest joint
saturating. Profile: accelerate for ``t_a = v_s / a_s`` when ``a_s t_a^2 <= 1`` (cruise
for ``(1 - a_s t_a^2) / v_s``), else triangular with ``t_a = 1 / sqrt(a_s)``. Stopping at
every waypoint keeps the motion on the collision-checked segments exactly.
"""

from dataclasses import dataclass

from ik_control.validation import InputError
import numpy as np


@dataclass
class JointTrajectory:
    """Samples ``times`` [s], ``positions`` [rad], ``velocities`` [rad/s], ``accelerations``."""

    joint_names: tuple
    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray

    @property
    def duration(self):
        """Time of the last sample [s]."""
        return float(self.times[-1])


def segment_profile(length_scale_v, length_scale_a):
    """Return ``(t_accel, t_cruise, peak s')`` for a rest-to-rest move of ``s`` over [0, 1]."""
    v, a = length_scale_v, length_scale_a
    ta = v / a
    if a * ta * ta <= 1.0:
        return ta, (1.0 - a * ta * ta) / v, v
    ta = 1.0 / np.sqrt(a)
    return ta, 0.0, a * ta


def sample_profile(t, ta, tc, peak, a):
    """Return ``(s, s', s'')`` at times ``t`` [s] of the profile of :func:`segment_profile`."""
    t = np.asarray(t, dtype=float)
    s = np.empty_like(t)
    v = np.empty_like(t)
    acc = np.empty_like(t)
    t1, t2 = ta, ta + tc
    tf = t2 + ta
    up, cruise = t <= t1, (t > t1) & (t <= t2)
    down = t > t2
    s[up] = 0.5 * a * t[up] ** 2
    v[up] = a * t[up]
    acc[up] = a
    s[cruise] = 0.5 * a * ta ** 2 + peak * (t[cruise] - t1)
    v[cruise] = peak
    acc[cruise] = 0.0
    r = np.clip(tf - t[down], 0.0, None)
    s[down] = 1.0 - 0.5 * a * r ** 2
    v[down] = a * r
    acc[down] = -a
    return s, v, acc


def time_parameterize(path, velocity_limit, acceleration_limit, dt=0.02, joint_names=()):
    """
    Return the :class:`JointTrajectory` of ``path`` (m x nq) sampled every ``dt`` [s].

    Limits are per joint (or one value for all) and must be > 0. Every segment's end is a
    sample (at rest), so the trajectory passes through every waypoint (waypoints repeated
    within 1e-9 rad count once).
    """
    path = np.asarray(path, dtype=float)
    if path.ndim != 2 or len(path) < 1 or not np.all(np.isfinite(path)):
        raise InputError('path must be a finite (waypoints x joints) array')
    nq = path.shape[1]
    vmax = np.broadcast_to(np.asarray(velocity_limit, dtype=float), (nq,))
    amax = np.broadcast_to(np.asarray(acceleration_limit, dtype=float), (nq,))
    if not (np.all(np.isfinite(vmax)) and np.all(vmax > 0) and np.all(np.isfinite(amax))
            and np.all(amax > 0)):
        raise InputError('velocity and acceleration limits must be finite and > 0')
    if not np.isfinite(dt) or dt <= 0.0:
        raise InputError(f'dt must be > 0 s, got {dt}')
    times, pos, vel, acc = [np.zeros(1)], [path[:1]], [np.zeros((1, nq))], [np.zeros((1, nq))]
    t0 = 0.0
    for q0, q1 in zip(path[:-1], path[1:]):
        dq = q1 - q0
        span = np.abs(dq)
        if span.max() <= 1e-9:
            continue            # a repeated waypoint (within 1e-9 rad)
        # min over the moving joints of limit / span, without dividing by a subnormal span
        v_s = 1.0 / float(np.max(span / vmax))
        a_s = 1.0 / float(np.max(span / amax))
        ta, tc, peak = segment_profile(v_s, a_s)
        tf = 2.0 * ta + tc
        t = np.arange(dt, tf, dt)
        t = np.append(t[t < tf - 1e-9], tf)
        s, sd, sdd = sample_profile(t, ta, tc, peak, a_s)
        times.append(t0 + t)
        pos.append(q0 + s[:, None] * dq)
        vel.append(sd[:, None] * dq)
        acc.append(sdd[:, None] * dq)
        vel[-1][-1] = 0.0
        t0 += tf
    return JointTrajectory(tuple(joint_names), np.concatenate(times), np.vstack(pos),
                           np.vstack(vel), np.vstack(acc))

"""
A joint trajectory as the controller's goal: what a planner or the style adapter sends.

One node owns the robot's command topic: ``ik_controller``. A joint-space plan (JT-RRT's
``~/planned_trajectory``, the style adapter's motion) is handed to it instead of to the
robot, and followed by the same committed path and limits as a Cartesian goal:

    q_dot_des = v_ref(tau) + K (q_ref(tau) - q_c)

with ``(q_ref, v_ref)`` the plan at the time ``tau`` of the knot being committed (cubic
Hermite between points given with velocities, linear between points without, as a
joint_trajectory_controller interpolates), ``q_c`` the controller's commanded state and
``K`` its convergence rate [1/s]; the limiter (:func:`ik_control.control.limits.
limit_velocity`) then keeps every limit, so a plan faster than the limits is followed as
fast as they allow. The plan is done when its last point is past, the command is within
:data:`DONE_TOLERANCE` of it and at rest; the controller then holds that pose.

**The plan's clock.** ``tau`` above is the plan's own time ``s``, not the controller's
clock ``t``. They agree (``s = t``) while the loop keeps its rate. A late tick makes the
command follow its braking tail for a while (:mod:`ik_control.control.command_window`):
the command falls behind the plan in position and in speed. Catching up at the
acceleration limit of each joint would distort the plan's path, since the joints catch
up at different paces (SIMON's adapted pick-and-place, a starved loop: the hand missed
its goal point by 20-190 mm). Instead the plan waits for the command
(:meth:`JointGoal.slow_down`): the clock steps back by the command's deficit along the
plan, ``delta = (q_ref(s) - q_c) . v_ref / |v_ref|^2`` (at most the time lost), and runs
at the command's speed ratio ``r = v_c . v_ref / |v_ref|^2`` in [0, 1], so that

    q_dot_des = r v_ref(s) + K (q_ref(s) - q_c),    ds/dt = r,

and ``r`` returns to 1 at ``dr/dt = min_j a_j / |v_ref,j|``: the joint that moves
fastest for its limit ``a_j`` gains speed as fast as the braking tail took it away (the
time scaling's ``r_dot v_ref``; the limiter keeps the sum with the plan's own
``r^2 a_ref`` within the limits). The path is the plan's; the plan ends late by the
time lost. On a loop starved half the time, the tail and the ramp nearly cancel and the
plan crawls (SIMON's pick-and-place, ticks 2-22 ms late one in ten: the goal point met
within 3 mm, 11-14 s after the start instead of 2.6 s; without the clock, missed by up
to 140 mm in 2.7-3.3 s).
"""

from ik_control.control.command_window import sample_points
from ik_control.validation import InputError
import numpy as np

__all__ = ['JointGoal', 'DONE_TOLERANCE']

#: The plan is done when every joint is this close to its last point [rad or m].
DONE_TOLERANCE = 1e-3

#: Fastest return of the plan's clock rate to 1 [1/s] (where the plan barely moves).
RATE_RAMP_LIMIT = 20.0

#: The rate counts as 1 again this close to it.
RATE_DONE = 1e-3


class JointGoal:
    """
    A validated joint trajectory in the controller's joint order (module docstring).

    Parameters
    ----------
    model:
        The controller's :class:`~ik_control.kinematics.RobotModel`.
    joint_names:
        The plan's joints: every controlled joint, in any order (others are refused).
    times:
        ``time_from_start`` of each point [s], strictly increasing, first >= 0.
    positions, velocities:
        (k, m) arrays [rad or m, rad/s or m/s]; velocities may be None.
    start:
        When the plan starts on the controller's clock [s].

    Raises :class:`InputError` with the reason for a plan that cannot be followed.

    """

    def __init__(self, model, joint_names, times, positions, velocities, start):
        names = list(joint_names)
        missing = [n for n in model.joint_names if n not in names]
        extra = [n for n in names if n not in model.joint_names]
        if missing or extra or len(set(names)) != len(names):
            raise InputError(f'joint trajectory must name each controlled joint once: missing '
                             f'{missing}, unknown {extra}')
        order = np.array([names.index(n) for n in model.joint_names])
        times = np.asarray(times, dtype=float).reshape(-1)
        q = np.asarray(positions, dtype=float)
        if times.size == 0 or q.shape != (times.size, len(names)):
            raise InputError('joint trajectory needs one position per joint at each point')
        if not (np.all(np.isfinite(times)) and np.all(np.isfinite(q)) and times[0] >= 0.0
                and np.all(np.diff(times) > 0.0)):
            raise InputError('joint trajectory times must increase from >= 0 and every value '
                             'be finite')
        q = q[:, order]
        outside = (q < model.lower) | (q > model.upper)
        if outside.any():
            k, j = np.argwhere(outside)[0]
            raise InputError(f"joint trajectory point {k} puts '{model.joint_names[j]}' at "
                             f'{q[k, j]:.6g}, outside its limits')
        if velocities is None:  # linear interpolation: the slope of each segment
            slopes = np.diff(q, axis=0) / np.diff(times)[:, None] if times.size > 1 else None
            self._linear = slopes
            v = np.zeros_like(q)
        else:
            v = np.asarray(velocities, dtype=float)
            if v.shape != (times.size, len(names)) or not np.all(np.isfinite(v)):
                raise InputError('joint trajectory velocities must be finite, one per joint '
                                 'at each point')
            v = v[:, order]
            self._linear = None
        self.times = times + float(start)
        self.positions = q
        self.velocities = v
        # the plan's clock (module docstring): s = t - delay at the last knot time
        # clock_time, then running at rate r (ramping up to 1 at most ramp_limit [1/s])
        self.delay = 0.0
        self.rate = 1.0
        self.clock_time = None
        self._a_max = None

    @property
    def end_time(self):
        """When the last point is reached [s]."""
        return float(self.times[-1])

    def reference(self, t):
        """Return the plan ``(q_ref, v_ref)`` at time ``t`` [s] (held after its end)."""
        times = self.times
        if self._linear is not None and times[0] < t < times[-1]:
            k = int(np.searchsorted(times, t, side='right')) - 1
            v = self._linear[k]
            return self.positions[k] + v * (t - times[k]), v.copy()
        return sample_points(times, self.positions, self.velocities, t)

    def plan_time(self, t):
        """Return the plan's time ``s`` [s] at the controller's time ``t`` [s] (its clock)."""
        if self.rate == 1.0 or self.clock_time is None:
            return t - self.delay
        return t - self.delay - (1.0 - self.rate) * (t - self.clock_time)

    def slow_down(self, t, q_cmd, v_cmd, lost, a_max):
        """
        Let the plan wait for a command that fell behind it on a late tick (module docstring).

        ``q_cmd``, ``v_cmd``: where the command is at ``t`` [s], after ``lost`` [s] on its
        braking tail; ``a_max``: the joints' acceleration limits [rad/s^2], for the rate's
        return to 1. The clock steps back by the command's deficit along the plan (in
        [0, ``lost``]) and runs at its speed ratio from then on.
        """
        s = self.plan_time(t)
        q_ref, v_ref = self.reference(s)
        speed2 = float(v_ref @ v_ref)
        if speed2 < 1e-12:  # the plan rests here: nothing to wait for
            return
        behind = min(max(float((q_ref - q_cmd) @ v_ref) / speed2, 0.0), float(lost))
        self.delay = t - s + behind
        self.clock_time = t
        self.rate = min(max(float(v_cmd @ v_ref) / speed2, 0.0), 1.0)
        self._a_max = a_max

    def _advance(self, t, v_ref):
        """Move the clock to ``t`` [s]; ramp the rate toward 1 (module docstring)."""
        if self.rate < 1.0 and self.clock_time is not None:
            dt = t - self.clock_time
            self.delay = t - self.plan_time(t)
            moving = np.abs(v_ref) > 1e-9
            ramp = (float(np.min(self._a_max[moving] / np.abs(v_ref[moving])))
                    if moving.any() else RATE_RAMP_LIMIT)
            ramp = min(ramp, RATE_RAMP_LIMIT)
            self.rate = min(self.rate + ramp * max(dt, 0.0), 1.0)
            if self.rate > 1.0 - RATE_DONE:
                self.rate = 1.0
        self.clock_time = t

    def desired_velocity(self, t, q_cmd, gain, out):
        """
        Write ``r v_ref(s) + gain (q_ref(s) - q_cmd)`` into ``out`` (module docstring).

        ``s`` is the plan's time at the controller's time ``t`` [s]; the clock moves to ``t``.
        """
        s = self.plan_time(t)
        q_ref, v_ref = self.reference(s)
        np.multiply(q_ref - q_cmd, gain, out=out)
        if self.rate == 1.0:
            out += v_ref
        else:
            out += self.rate * v_ref
        self._advance(t, v_ref)
        return out

    def done(self, t, q_cmd, v_cmd):
        """Return True when the plan is over and the command is at its end, at rest."""
        return (self.plan_time(t) >= self.times[-1]
                and np.max(np.abs(q_cmd - self.positions[-1])) < DONE_TOLERANCE
                and not np.any(np.abs(v_cmd) > 1e-3))

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
"""

from ik_control.control.command_window import sample_points
from ik_control.validation import InputError
import numpy as np

__all__ = ['JointGoal', 'DONE_TOLERANCE']

#: The plan is done when every joint is this close to its last point [rad or m].
DONE_TOLERANCE = 1e-3


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

    def desired_velocity(self, t, q_cmd, gain, out):
        """Write ``v_ref(t) + gain (q_ref(t) - q_cmd)`` into ``out`` (module docstring)."""
        q_ref, v_ref = self.reference(t)
        np.multiply(q_ref - q_cmd, gain, out=out)
        out += v_ref
        return out

    def done(self, t, q_cmd, v_cmd):
        """Return True when the plan is over and the command is at its end, at rest."""
        return (t >= self.times[-1]
                and np.max(np.abs(q_cmd - self.positions[-1])) < DONE_TOLERANCE
                and not np.any(np.abs(v_cmd) > 1e-3))

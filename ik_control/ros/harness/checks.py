"""
The limit checks of the node benches: every command, and the robot's own motion.

:class:`CommandChecker` checks each JointTrajectory the controller publishes against the
limits; :class:`MotionMonitor` measures what the robot did from its joint_states.
"""

from ik_control.control.command_window import sample_points
from ik_control.control.motion_meter import MotionMeter
import numpy as np

LIMIT_TOLERANCE = 1e-9      # slack of the limit checks (float rounding) [rad, rad/s]


# ---------------------------------------------------------------------- limit checks
class CommandChecker:
    """
    Check every JointTrajectory command against the limits; count and describe violations.

    Positions within ``[lower + margin, upper - margin]``, ``|v| <= v_max``, and between
    consecutive points ``|v_k - v_(k-1)| <= a_max dt``. A stamped window
    (:mod:`ik_control.control.command_window`) must start at ``time_from_start`` 0,
    increase strictly and end at rest; consecutive windows are checked to continue one
    path: the new point 0 equals the previous window sampled at the new stamp (counted in
    ``acceleration_checked``; a re-seed from the measured state or a stop that starts a
    new path is counted in ``acceleration_skipped``). A one-point, stamp-zero command is
    checked against the previous one when they are consecutive ticks
    (``q_k = q_(k-1) + (v_(k-1) + v_k) dt / 2``, how the controller integrates).
    """

    def __init__(self, joint_names, lower, upper, margin, v_max, a_max,
                 tolerance=LIMIT_TOLERANCE):
        """Set the limits (arrays over ``joint_names``)."""
        self.joint_names = tuple(joint_names)
        self.lo = np.asarray(lower, dtype=float) + margin - tolerance
        self.hi = np.asarray(upper, dtype=float) - margin + tolerance
        self.v_max = np.asarray(v_max, dtype=float) * (1 + tolerance) + tolerance
        self.a_max = np.asarray(a_max, dtype=float)
        self.tolerance = tolerance
        self.commands = self.points = 0
        self.acceleration_checked = self.acceleration_skipped = 0
        self.violations = 0
        self.examples = []
        self._order = (None, None)
        self._previous = None  # (stamp [s], times, q, v) of the last command

    def _violation(self, what):
        self.violations += 1
        if len(self.examples) < 10:
            self.examples.append(what)

    def arrays(self, msg):
        """Return (times, positions, velocities) of ``msg`` in checker joint order, or None."""
        names = tuple(msg.joint_names)
        if names != self._order[0]:
            try:
                self._order = (names, np.array([names.index(n) for n in self.joint_names]))
            except ValueError:
                self._violation(f'command names joints {list(names)}')
                return None
        index = self._order[1]
        times = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec
                          for p in msg.points])
        try:
            q = np.array([np.asarray(p.positions)[index] for p in msg.points])
            v = np.array([np.asarray(p.velocities)[index] for p in msg.points])
        except IndexError:
            self._violation('command point without positions or velocities for every joint')
            return None
        return times, q, v

    def check(self, msg):
        """Check one command; return the number of violations it had."""
        before = self.violations
        self.commands += 1
        arrays = self.arrays(msg)
        if arrays is None or not len(arrays[0]):
            if arrays is not None:
                self._violation('command without points')
            return self.violations - before
        times, q, v = arrays
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec  # [ns]
        self.points += len(times)
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v)) and times[0] >= 0.0
                and np.all(np.diff(times) > 0.0) and (stamp > 0 or times[0] > 0.0)):
            self._violation('non-finite command, or time_from_start not increasing from 0 '
                            '(stamped) or from a positive time (stamp zero): stamp '
                            f'{stamp} ns, times {list(times)}')
            return self.violations - before
        low, high = q < self.lo, q > self.hi
        if low.any() or high.any():
            k, j = np.argwhere(low | high)[0]
            self._violation(f'{self.joint_names[j]} commanded to {q[k, j]:.6g}, outside '
                            f'[{self.lo[j]:.6g}, {self.hi[j]:.6g}] (limits less margin)')
        fast = np.abs(v) > self.v_max
        if fast.any():
            k, j = np.argwhere(fast)[0]
            self._violation(f'{self.joint_names[j]} velocity {v[k, j]:.6g} beyond '
                            f'{self.v_max[j]:.6g}')
        if stamp > 0 and np.any(v[-1]):
            self._violation('stamped command window does not end at rest')
        dt = np.diff(times)
        for k in range(1, len(times)):
            self._check_acceleration(v[k] - v[k - 1], dt[k - 1])
        self._check_continuity(stamp, times, q, v)
        self._previous = (stamp, times, q, v)
        return self.violations - before

    def _check_acceleration(self, dv, dt):
        self.acceleration_checked += 1
        dv = np.abs(dv)
        # times travel in whole nanoseconds: a spacing may read 1 ns short
        over = dv > self.a_max * (dt + 1e-9) * (1 + 1e-6) + self.tolerance
        if over.any():
            j = int(np.argmax(over))
            self._violation(f'{self.joint_names[j]} velocity change {dv[j]:.6g} in '
                            f'{dt:.6g} s beyond acceleration {self.a_max[j]:.6g}')

    def _check_continuity(self, stamp, times, q, v):
        """Check the step from the previous command (class docstring)."""
        if self._previous is None:
            return
        p_stamp, p_times, p_q, p_v = self._previous
        if stamp > 0 and p_stamp > 0 and stamp >= p_stamp:
            q_prev, v_prev = sample_points(p_times, p_q, p_v, 1e-9 * (stamp - p_stamp))
            tol = 1e-6
            if (np.max(np.abs(q[0] - q_prev)) <= tol and np.max(np.abs(v[0] - v_prev))
                    <= tol + self.tolerance):
                self.acceleration_checked += 1
            else:
                self.acceleration_skipped += 1
            return
        if stamp == 0 and p_stamp == 0 and len(times) == 1 and len(p_times) == 1:
            step = 0.5 * (p_v[0] + v[0]) * times[0]
            if np.all(np.abs(q[0] - p_q[0] - step) <= 1e-12 + 1e-12 * np.abs(q[0])):
                self._check_acceleration(v[0] - p_v[0], times[0])
                return
        self.acceleration_skipped += 1

    def summary(self):
        """Return the counts and the first violations, as a dict."""
        return {'commands': self.commands, 'points': self.points,
                'acceleration_checked': self.acceleration_checked,
                'acceleration_skipped': self.acceleration_skipped,
                'violations': self.violations, 'violation_examples': list(self.examples)}


class MotionMonitor:
    """
    The robot's measured motion (its joint_states) against its limits.

    The velocities the robot reports, and its positions over its own stamps through a
    :class:`~ik_control.control.motion_meter.MotionMeter` (speed between consecutive
    samples and over 10 ms spans, acceleration over 10 ms spans): figures of what the
    robot did, whatever was commanded.
    """

    def __init__(self, probe, v_max, a_max):
        """Watch the states ``probe`` reads."""
        self.probe = probe
        self.v_max = np.asarray(v_max, dtype=float)
        self.meter = MotionMeter(v_max, a_max)
        self.reported_ratio = 0.0
        self.states = 0
        self._epoch = None

    def on_state(self, msg, t):
        """Update the figures with one joint_states message."""
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        self.states += 1
        if self._epoch is None:
            self._epoch = stamp  # counted from here, to the nanosecond
        if len(msg.velocity) == len(msg.name):
            v = np.asarray(msg.velocity)[self.probe._state_order[1]]
            self.reported_ratio = max(self.reported_ratio, float(np.max(np.abs(v) / self.v_max)))
        self.meter.add(1e-9 * (stamp - self._epoch), self.probe.last_state_q)

    def summary(self):
        """Return the measured ratios to the limits (a dict)."""
        return {'reported_speed': self.reported_ratio, **self.meter.summary()}


def checker_for(model, parameters):
    """Return a :class:`CommandChecker` for ``model`` and the controller's ``parameters``."""
    n = model.nq
    margin = parameters['limits.position_margin']
    v_max = np.asarray(parameters['limits.max_velocity'] or [], dtype=float)
    if v_max.size == 0:
        v_max = model.velocity_limit * parameters['limits.velocity_scale']
    a_max = np.asarray(parameters['limits.max_acceleration'], dtype=float)
    return CommandChecker(model.joint_names, model.lower, model.upper, margin,
                          np.broadcast_to(v_max, (n,)), np.broadcast_to(a_max, (n,)))

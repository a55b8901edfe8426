"""
Common interface of the embedded simulated robots.

A simulated robot owns a :class:`~ik_control.sim.trajectory.JointTrajectorySampler`
(the joint_trajectory_controller it obeys) and a joint state. ``step(t)``
advances the state to time ``t`` [s] while tracking the sampler's setpoint;
``set_trajectory(...)`` hands a new trajectory to the sampler with the robot's
current state as the implicit point 0 (JTC semantics, see
:mod:`ik_control.sim.trajectory`).
"""

from typing import Optional, Sequence, Tuple

from ik_control.sim.saturation import SetpointSaturation
from ik_control.sim.trajectory import JointTrajectorySampler
import numpy as np

#: Command interfaces of a simulated robot (ros2_controllers that receive them):
#: joint_trajectory_controller, forward position and forward velocity controllers.
COMMAND_INTERFACES = ('trajectory', 'position', 'velocity')

__all__ = ['SimRobot', 'clip_initial_positions']


def clip_initial_positions(joint_names: Sequence[str], lower, upper,
                           positions=None) -> np.ndarray:
    """
    Return ``positions`` (default: zeros) clipped into ``[lower, upper]`` [rad or m].

    Raises :class:`ValueError` when ``positions`` does not have one value per joint.
    """
    lower = np.asarray(lower, dtype=float)
    upper = np.asarray(upper, dtype=float)
    if positions is None:
        return np.clip(np.zeros(lower.shape), lower, upper)
    q0 = np.array(positions, dtype=float).reshape(-1)
    if q0.shape != lower.shape:
        raise ValueError('initial_positions has %d values for %d joints %s'
                         % (q0.size, lower.size, list(joint_names)))
    return np.clip(q0, lower, upper)


class SimRobot:
    """
    Base class: a robot whose joints track a JTC-style trajectory.

    Subclasses set, in their constructor, ``self._names`` (tuple of joint
    names), ``self._position`` and ``self._velocity`` (float arrays of shape
    (n,)), ``self._time`` (time of the state [s]) and ``self.sampler`` (a
    :class:`JointTrajectorySampler` over the same joints), call
    :meth:`_init_setpoint`, and implement :meth:`step` on :meth:`setpoint`.

    The setpoint comes from the active trajectory (``trajectory`` interface), from the
    last position command (``position``: held, as a forward position controller does) or
    from the last velocity command (``velocity``: integrated; zero after
    :attr:`command_timeout`, as a hardware watchdog does), and goes through the robot's
    :class:`~ik_control.sim.saturation.SetpointSaturation` (ros2_control's joint_limits)
    when limits are enforced.
    """

    #: A velocity command older than this [s] is replaced by zero (a watchdog).
    command_timeout = 0.1

    sampler: JointTrajectorySampler

    #: A ``step(t)`` with ``t`` this much [s] before :attr:`time` is taken as a
    #: clock reset (simulated time restarting, a bag looping): the robot then
    #: holds its current position from ``t`` on, the active trajectory being
    #: stamped on the old clock. Smaller backward steps are ignored.
    clock_reset_threshold = 1.0

    @property
    def joint_names(self) -> Tuple[str, ...]:
        """Names of the simulated (commanded) joints, the order of every array."""
        return self._names

    @property
    def position(self) -> np.ndarray:
        """Joint positions at :attr:`time` [rad or m], shape (n,); do not modify."""
        return self._position

    @property
    def velocity(self) -> np.ndarray:
        """Joint velocities at :attr:`time` [rad/s or m/s], shape (n,); do not modify."""
        return self._velocity

    @property
    def time(self) -> float:
        """Time of the current state [s]."""
        return self._time

    def set_trajectory(self, joint_names: Sequence[str], times_from_start,
                       positions, velocities=None, start_time: float = 0.0,
                       now: Optional[float] = None) -> None:
        """
        Replace the active trajectory (see :meth:`JointTrajectorySampler.set_trajectory`).

        ``now`` [s] defaults to :attr:`time`; the robot's current position and
        velocity are the implicit point 0. Raises :class:`ValueError` for an
        invalid trajectory, leaving the active one unchanged.
        """
        self.sampler.set_trajectory(
            joint_names, times_from_start, positions, velocities,
            start_time=start_time, now=self._time if now is None else now,
            current_position=self._position, current_velocity=self._velocity)

    def _init_setpoint(self, lower, upper, v_max=None, a_max=None):
        """Set up the setpoint source and the saturation (limits [rad, rad/s, rad/s^2])."""
        n = len(self._names)
        inf = np.full(n, np.inf)
        self.interface = 'trajectory'
        self.saturation = SetpointSaturation(lower, upper, inf if v_max is None else v_max,
                                             inf if a_max is None else a_max, self._position)
        self._setpoint_time = self._time
        self._command_velocity = np.zeros(n)
        self._command_time = -np.inf

    @property
    def clamps(self) -> int:
        """Setpoints the robot-side saturation had to change (an unsafe command stream)."""
        return self.saturation.clamps

    def command_positions(self, positions, now: Optional[float] = None) -> None:
        """Take a forward position command [rad or m], held until the next one."""
        q = np.asarray(positions, dtype=float).reshape(-1)
        if q.shape != (len(self._names),) or not np.all(np.isfinite(q)):
            raise ValueError('position command must be %d finite values' % len(self._names))
        self.sampler.hold(self._time if now is None else now, q)

    def command_velocities(self, velocities, now: Optional[float] = None) -> None:
        """Take a forward velocity command [rad/s or m/s], valid for command_timeout."""
        v = np.asarray(velocities, dtype=float).reshape(-1)
        if v.shape != (len(self._names),) or not np.all(np.isfinite(v)):
            raise ValueError('velocity command must be %d finite values' % len(self._names))
        self._command_velocity[:] = v
        self._command_time = self._time if now is None else now

    def setpoint(self, t: float):
        """Return the (saturated) setpoint ``(q, qd)`` at time ``t`` [s] (class docstring)."""
        dt = t - self._setpoint_time
        self._setpoint_time = t
        sat = self.saturation
        if self.interface == 'velocity':
            if t - self._command_time > self.command_timeout:
                self._command_velocity[:] = 0.0
            return sat.apply(sat.q + self._command_velocity * dt, dt)
        q_des, _ = self.sampler.sample(t)
        return sat.apply(q_des, dt)

    def _clock_reset(self, t: float) -> bool:
        """Handle a backward clock jump to ``t`` [s]; return True if there was one."""
        if t >= self._time - self.clock_reset_threshold:
            return False
        self.sampler.hold(t, self._position)
        self.saturation.reset(self._position)
        self._command_velocity[:] = 0.0
        self._setpoint_time = t
        self._velocity[:] = 0.0
        self._time = t
        return True

    def step(self, t: float) -> None:  # pragma: no cover - interface
        """Advance the simulation to time ``t`` [s]."""
        raise NotImplementedError

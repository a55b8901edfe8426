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

from ik_control.sim.trajectory import JointTrajectorySampler
import numpy as np

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
    :class:`JointTrajectorySampler` over the same joints), and implement
    :meth:`step`.
    """

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

    def _clock_reset(self, t: float) -> bool:
        """Handle a backward clock jump to ``t`` [s]; return True if there was one."""
        if t >= self._time - self.clock_reset_threshold:
            return False
        self.sampler.hold(t, self._position)
        self._velocity[:] = 0.0
        self._time = t
        return True

    def step(self, t: float) -> None:  # pragma: no cover - interface
        """Advance the simulation to time ``t`` [s]."""
        raise NotImplementedError

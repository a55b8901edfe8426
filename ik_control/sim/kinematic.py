"""Kinematic simulated robot: ideal or first-order-lag tracking of the setpoint."""

from typing import Optional, Sequence

from ik_control.sim.base import clip_initial_positions, SimRobot
from ik_control.sim.trajectory import JointTrajectorySampler
import numpy as np

__all__ = ['KinematicSim']


class KinematicSim(SimRobot):
    r"""
    Joints that follow the trajectory setpoint kinematically, inside their limits.

    With :math:`q_d(t)` the sampled setpoint clipped into the joint limits
    :math:`[q_{lo}, q_{hi}]`:

    * ``tau == 0`` (ideal tracking): :math:`q = q_d(t)`; :math:`\dot q` is the
      setpoint velocity over the step, so that position, velocity and time agree.
    * ``tau > 0`` (first-order lag, exact discretisation over the step
      :math:`\Delta t = t - t_{prev}`):
      :math:`q \leftarrow q + (q_d(t) - q)(1 - e^{-\Delta t/\tau})`,
      :math:`\dot q = \Delta q / \Delta t`.

    The new position is a convex combination of in-limit positions, so the
    joints never leave their limits.

    Parameters
    ----------
    joint_names:
        Simulated joints, the order of every array.
    lower, upper:
        Joint limits [rad or m] (use +-inf for continuous joints), shape (n,).
    initial_positions:
        Initial positions [rad or m]; default ``clip(0, lower, upper)``.
        Clipped into the limits.
    tau:
        Lag time constant [s], >= 0; 0 = ideal tracking.
    t0:
        Time of the initial state [s].

    """

    def __init__(self, joint_names: Sequence[str], lower, upper,
                 initial_positions: Optional[Sequence[float]] = None,
                 tau: float = 0.0, t0: float = 0.0, v_max=None, a_max=None):
        self._names = tuple(joint_names)
        n = len(self._names)
        self.lower = np.array(lower, dtype=float).reshape(-1)
        self.upper = np.array(upper, dtype=float).reshape(-1)
        if self.lower.shape != (n,) or self.upper.shape != (n,):
            raise ValueError('lower/upper must have %d values' % n)
        if np.any(self.lower > self.upper):
            raise ValueError('lower limit above upper limit')
        tau = float(tau)
        if not np.isfinite(tau) or tau < 0.0:
            raise ValueError('lag time constant tau must be finite and >= 0, got %r' % tau)
        self.tau = tau
        q0 = clip_initial_positions(self._names, self.lower, self.upper, initial_positions)
        self._time = float(t0)
        self._position = q0.copy()
        self._velocity = np.zeros(n)
        self.sampler = JointTrajectorySampler(self._names, q0, t0=self._time)
        self._init_setpoint(self.lower, self.upper, v_max, a_max)

    def step(self, t: float) -> None:
        """
        Advance to time ``t`` [s].

        A ``t`` not after :attr:`time` does nothing, except for a backward jump
        larger than :attr:`clock_reset_threshold` (a clock reset).
        """
        t = float(t)
        dt = t - self._time
        if dt <= 0.0:
            self._clock_reset(t)
            return
        target, qd_des = self.setpoint(t)  # inside the limits
        if self.tau <= 0.0:
            self._position[:] = target
            self._velocity[:] = qd_des
        else:
            alpha = -np.expm1(-dt / self.tau)
            # velocity holds the increment first, then is divided by dt.
            np.subtract(target, self._position, out=self._velocity)
            self._velocity *= alpha
            self._position += self._velocity
            np.clip(self._position, self.lower, self.upper, out=self._position)
            self._velocity /= dt
        self._time = t

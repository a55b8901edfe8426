"""
What the terms of a tick's desired velocity read: one object per controller, not the controller.

The terms (the Cartesian stage, :mod:`~ik_control.control.cartesian_stage`; the classical
``ik_method``'s joint step, :mod:`~ik_control.control.classical_mode`; Welman's
constraints, :mod:`~ik_control.control.constrained_motion`) read the committed knot the
tick starts from, the limits and the goals, and write one thing: the desired velocity
:attr:`TickState.v_des`. The arrays are the controller's own, updated in place each tick
(no copy, no allocation); the limits and the configuration are rebound when the controller
is configured.
"""

__all__ = ['TickState']


class TickState:
    """
    The state of one tick, as the velocity terms read it (module docstring).

    Attributes
    ----------
    q, v_prev:
        The committed knot the tick starts from: positions [rad or m] and velocities
        [rad/s or m/s] (read only).
    v_des:
        The desired velocity [rad/s or m/s] the terms write, before the limiter.
    dt:
        The control period [s].
    v_max, a_max:
        The joints' velocity [rad/s] and acceleration [rad/s^2] limits.
    config:
        The controller's :class:`~ik_control.control.config.ControllerConfig`.
    goals:
        The :class:`~ik_control.control.goal_set.GoalSet` (read only: targets, modes).
    J, frame_T:
        The weighted task Jacobian and the effectors' placements (base frame) of the
        solver's last kinematics: at ``q`` once the Cartesian stage has solved the tick.

    """

    __slots__ = ('q', 'v_prev', 'v_des', 'dt', 'v_max', 'a_max', 'config', 'goals',
                 '_solver')

    def __init__(self, q, v_prev, v_des, goals, solver):
        self.q, self.v_prev, self.v_des = q, v_prev, v_des
        self.goals, self._solver = goals, solver
        self.dt = self.v_max = self.a_max = self.config = None

    def configure(self, config, v_max, a_max):
        """Rebind the configuration and the joint limits (the controller's configure)."""
        self.config, self.v_max, self.a_max = config, v_max, a_max
        self.dt = 1.0 / config.rate_hz

    @property
    def J(self):
        """Weighted task Jacobian of the solver's last step (view, task_dim x nq)."""
        return self._solver.J

    @property
    def frame_T(self):
        """End-effector placements (base frame) of the solver's last kinematics (view)."""
        return self._solver.frame_T

"""
The last stage of the tick that moves the command: limit the desired velocity, commit a knot.

From the committed knot ``(q, v_prev)`` and the tick's desired velocity ``v_des``:

1. :func:`~ik_control.control.limits.limit_velocity` gives the commanded velocity ``v``
   within the velocity, acceleration and position limits (rules 1-5 of
   :mod:`~ik_control.control.limits`), with the flags of what it changed;
2. the knot ``q + (v_prev + v) h / 2`` (:func:`~ik_control.control.limits.integrate`,
   trapezoidal: the constant acceleration a trajectory controller's cubic fits) at
   velocity ``v`` is committed: the tick's ``q`` and ``v_prev`` become it, and it is
   appended to the command window (:mod:`~ik_control.control.command_window`).

A position bound engaged (braking for it, or the clip) is an event once, when it starts,
naming the joint with the least room; the status bits say it every tick it holds.
"""

from ik_control.control import limits as limits_mod
from ik_control.control.status import Status
import numpy as np

__all__ = ['CommitStage']

_NONE = int(Status.NONE)
_JOINT_BOUND = int(Status.JOINT_BOUND)
_VELOCITY_LIMITED = int(Status.VELOCITY_LIMITED)
_ACCELERATION_LIMITED = int(Status.ACCELERATION_LIMITED)
_AT_BOUND = limits_mod.BRAKING_FOR_BOUND | limits_mod.POSITION_CLIPPED


class CommitStage:
    """
    Limit and commit (module docstring) for one robot.

    ``model``: its :class:`~ik_control.kinematics.robot_model.RobotModel`; ``events``: the
    controller's :class:`~ik_control.control.goal_state.EventQueue`.
    """

    def __init__(self, model, events):
        self.model, self.events = model, events
        self.v = np.zeros(model.nq)       # the limited velocity of the last commit
        self._q_next = np.zeros(model.nq)
        self.at_bound = False             # a position bound engaged at the last commit

    def commit(self, tick, h, knot_time, path):
        """
        Limit ``tick.v_des``, commit the knot ``h`` [s] on at ``knot_time`` [s] to ``path``.

        ``tick`` is the :class:`~ik_control.control.tick_state.TickState` (its ``q`` and
        ``v_prev`` become the new knot); returns the status bits of the limits engaged.
        """
        cfg, model = tick.config, self.model
        flags = limits_mod.limit_velocity(tick.q, tick.v_prev, tick.v_des, model.lower,
                                          model.upper, cfg.limits.position_margin, tick.v_max,
                                          tick.a_max, h, self.v)
        status = _NONE
        at_bound = bool(flags & _AT_BOUND)
        if at_bound:
            status |= _JOINT_BOUND
            if not self.at_bound:
                self._note_bound(tick.q, cfg.limits.position_margin)
        self.at_bound = at_bound
        if flags & limits_mod.VELOCITY_SCALED:
            status |= _VELOCITY_LIMITED
        if flags & limits_mod.ACCELERATION_LIMITED:
            status |= _ACCELERATION_LIMITED
        limits_mod.integrate(tick.q, tick.v_prev, self.v, h, self._q_next)
        tick.q[:] = self._q_next
        tick.v_prev[:] = self.v
        path.append(knot_time, tick.q, tick.v_prev, tick.a_max, cfg.limits.position_margin)
        return status

    def _note_bound(self, q, margin):
        """Event: the limiter engaged a position bound (the joint with least room named)."""
        room = np.minimum(q - (self.model.lower + margin), (self.model.upper - margin) - q)
        j = int(np.argmin(room))
        self.events.post('joint_bound', 'info', 'position limits engaged: braking for or at a '
                         f"bound (closest: '{self.model.joint_names[j]}', {room[j]:.3g} from its "
                         'bound less the margin)')

"""
Handing the robot back and taking it again: what the node's lifecycle asks of the controller.

* :meth:`Handover.release` (``deactivate``): every goal ends (a joint plan too); at the
  next tick the committed path is cut at that tick's time and brakes from the state
  there, each joint decelerating at its acceleration limit (the path's braking tail,
  :mod:`~ik_control.control.command_window`: ``q(t) = q + v t - a sign(v) t^2 / 2``
  until ``t = |v| / a``), as on lost joint_states. The windows of that braking are
  commanded until it is at rest, then nothing (status ``INACTIVE``); goals are refused
  (:meth:`Handover.check_engaged`).
* :meth:`Handover.engage` (``activate``): the next tick starts from the measured state,
  at rest, every effector holding the pose it has then.

A mixin of :class:`~ik_control.control.controller.ResolvedRateController`, whose path,
goals, clock and commanded state it uses; :meth:`Handover.released_command` is the
tick's while released.
"""

from ik_control.control.command_window import Command
from ik_control.control.goal_outcomes import Outcome
from ik_control.validation import InputError
import numpy as np

__all__ = ['Handover']


class Handover:
    """The controller's release and engage (module docstring)."""

    released = False  # handed back: braking, then commanding nothing
    _brake = False  # the first tick after release cuts the path and brakes

    def release(self, now):
        """Hand the robot back at ``now`` [s] (module docstring)."""
        self._observe_clock(now)
        if self.released:
            return
        self.released = True
        self.outcomes.close_all(Outcome.INACTIVE, 'the controller was deactivated: the arm '
                                'braked to rest')
        if self._braking:  # a cancel's braking: the release brakes and stops every goal
            self.resume()
        if self.initialized:
            self._cancel_joint_goal('deactivation')
            self.stop_goals(self.model.end_effector_names)
            self._brake = True

    def check_engaged(self):
        """Raise :class:`InputError` after :meth:`release`: goals are taken only while engaged."""
        if self.released:
            raise InputError('the controller is inactive (node not active): goals are taken '
                             'only while it is active')

    def engage(self):
        """Take the robot again after :meth:`release` (module docstring)."""
        if self.released:
            self.released = False
            self._brake = False
            self.initialized = False

    def released_command(self, now):
        """
        Return the command of a tick at ``now`` [s] after :meth:`release`; None once at rest.

        The first cuts the path at ``now`` (the knots after it dropped) and brakes from
        the state there; later ones are the rest of that braking.
        """
        if self._brake:
            self._brake = False
            self.cut_path(now)
        elif not self.braking(now):
            return None
        return Command(*self.path.window(now))

    def cut_path(self, now):
        """
        Cut the committed path at ``now`` [s] (the knots after it dropped): it brakes there.

        Each joint decelerates within its acceleration limit (the path's braking tail); the
        commanded state becomes the pose it comes to rest at, at rest.
        """
        path = self.path
        path.truncate(now)
        tail_t, tail_q, _ = path.tail()
        self.q_cmd[:] = tail_q[-1] if tail_t.size else path.sample(now)[0]
        self.v_cmd[:] = 0.0

    def braking(self, now):
        """After :meth:`release`: whether the arm is still commanded to move at ``now`` [s]."""
        return self._brake or (self.initialized and bool(np.any(self.path.sample(now)[1])))

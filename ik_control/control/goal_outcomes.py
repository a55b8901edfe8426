"""
Goals with an outcome: one request for several end effectors, judged by the controller.

A request that names several end effectors, each with its pose goal and tolerances, and a
time limit (a MoveToPose action goal) is a :class:`TrackedGoal`: the controller accepts
its pose goals (:meth:`~ik_control.control.goal_inputs.GoalInputs.track_pose_goal`) and,
at the end of every tick, the :class:`OutcomeBook` decides its outcome from the goals'
own lifecycle (:class:`~ik_control.control.goal_state.GoalState`), in this order:

* ``REPLACED``: a newer goal came for one of its effectors (a pose, a twist, a moving goal,
  a joint trajectory): the effector has a newer goal, or its goal left the states of a
  pursued goal (``REPLACED``, ``TWIST``);
* ``STALE``: joint_states are stale (the arm is stopped), or none came within
  ``joint_state_timeout`` of the acceptance;
* ``REACHED``: every one of its goals is ``REACHED`` at the same tick (the referee's rule:
  the commanded and the measured pose within the goal's tolerances, the command window at
  rest);
* ``UNREACHABLE``: one of its goals is parked (the closest pose is held), with the
  referee's reason;
* ``TIMED_OUT``: ``time_limit`` [s] passed (0: none); the arm then stops where it comes
  to rest, as on a cancel.

``CANCELLED`` is decided by the caller (:meth:`~ik_control.control.goal_inputs.GoalInputs.
cancel_goal`), ``REPLACED`` too when the caller's own rule preempts a goal
(:meth:`OutcomeBook.close`), and ``INACTIVE`` at the release
(:meth:`~ik_control.control.handover.Handover.release`: the arm brakes to rest; no request
is taken until the controller is engaged again). The book costs nothing on a tick without
a pending goal.
"""

import enum

from ik_control.control.goal_set import MODE_MOTION, MODE_POSE, MODE_TWIST
from ik_control.control.goal_state import GoalState
from ik_control.control.status import Status
import numpy as np

__all__ = ['Outcome', 'OutcomeBook', 'TrackedGoal']

_STALE_STATE = int(Status.STALE_STATE)
_NO_STATE = int(Status.NO_STATE)
_REACHED = int(GoalState.REACHED)
#: the states of an effector's goal while it is still the tracked one's
_LIVE = np.array([GoalState.ACCEPTED, GoalState.ACTIVE, GoalState.HELD, GoalState.REACHED,
                  GoalState.UNREACHABLE])
#: what an effector follows, by GoalSet mode, as a REPLACED reason names it
_FOLLOWS = {MODE_POSE: 'a newer pose goal', MODE_TWIST: 'a twist (velocity mode)',
            MODE_MOTION: 'a moving goal'}


class Outcome(enum.IntEnum):
    """How a :class:`TrackedGoal` ended (``PENDING`` while it is followed)."""

    PENDING = 0
    REACHED = 1
    UNREACHABLE = 2
    REPLACED = 3
    CANCELLED = 4
    TIMED_OUT = 5
    STALE = 6
    INACTIVE = 7


class TrackedGoal:
    """
    One request for several end effectors, and its outcome (module docstring).

    Attributes
    ----------
    id:
        The controller's number of the request (1, 2, ...).
    effectors:
        Indices of its end effectors, in the request's order.
    goal_ids:
        The :attr:`GoalSet.ids <ik_control.control.goal_set.GoalSet.ids>` its pose goals
        got: a different id there is a newer goal.
    start:
        When it was accepted [s] (the controller's clock).
    time_limit:
        How long it may take [s]; 0: no limit.
    outcome, reason:
        :class:`Outcome` and, once decided, why (one sentence for the user).

    """

    __slots__ = ('id', 'effectors', 'goal_ids', 'start', 'time_limit', 'outcome', 'reason')

    def __init__(self, id_, effectors, goal_ids, start, time_limit):
        self.id = id_
        self.effectors = effectors
        self.goal_ids = goal_ids
        self.start = start
        self.time_limit = time_limit
        self.outcome = Outcome.PENDING
        self.reason = ''

    @property
    def pending(self):
        """Whether its outcome is still to be decided."""
        return self.outcome == Outcome.PENDING


class OutcomeBook:
    """The pending :class:`TrackedGoal` s of one controller, judged after each tick."""

    def __init__(self, goals):
        """``goals``: the controller's :class:`~ik_control.control.goal_set.GoalSet`."""
        self.goals = goals
        self.pending = []
        self._count = 0

    def track(self, effectors, now, time_limit):
        """Track the goals the effectors ``effectors`` (indices) were just given."""
        self._count += 1
        effectors = np.asarray(effectors, dtype=np.int64)
        goal = TrackedGoal(self._count, effectors, self.goals.ids[effectors].copy(),
                           float(now), float(time_limit))
        self.pending.append(goal)
        return goal

    def close(self, goal, outcome, reason):
        """Decide ``goal``'s outcome (if still pending); return whether this call did."""
        if not goal.pending:
            return False
        goal.outcome, goal.reason = Outcome(outcome), reason
        self.pending.remove(goal)
        return True

    def close_all(self, outcome, reason):
        """Decide every pending goal's outcome."""
        for goal in list(self.pending):
            self.close(goal, outcome, reason)

    def judge(self, now, status, state_timeout, planning):
        """
        Decide the outcome of each pending goal after a tick (module docstring).

        ``status``: the tick's :class:`Status` bits; ``state_timeout``: joint_state_timeout
        [s]; ``planning``: a joint trajectory is followed (what replaced a goal).
        Returns the goals that timed out: the caller stops their arm.
        """
        goals, timed_out = self.goals, []
        for goal in list(self.pending):
            which = goal.effectors
            elapsed = now - goal.start
            newer = (goals.ids[which] != goal.goal_ids) | ~np.isin(goals.state[which], _LIVE)
            if newer.any():
                i = int(which[np.argmax(newer)])
                what = ('a joint trajectory' if planning else
                        _FOLLOWS.get(int(goals.mode[i]), 'no goal (stopped)'))
                self.close(goal, Outcome.REPLACED, f"'{goals.names[i]}' was given {what}")
            elif status & _STALE_STATE or (status & _NO_STATE and elapsed > state_timeout):
                self.close(goal, Outcome.STALE, f'joint_states stale (none for '
                           f'{state_timeout:g} s): the arm stopped')
            elif (goals.state[which] == _REACHED).all():
                names = [goals.names[i] for i in which]
                self.close(goal, Outcome.REACHED, f'{names} within tolerance, at rest')
            elif goals.parked[which].any():
                parked = [goals.names[i] for i in which if goals.parked[i]]
                reasons = '; '.join(goals.unreachable_reason[i] for i in which
                                    if goals.parked[i])
                self.close(goal, Outcome.UNREACHABLE, f'{parked} cannot reach the target '
                           f'({reasons}): holding the closest pose found')
            elif 0.0 < goal.time_limit < elapsed:
                self.close(goal, Outcome.TIMED_OUT, f'time_limit {goal.time_limit:g} s '
                           'passed: holding the arm where it stopped')
                timed_out.append(goal)
        return timed_out

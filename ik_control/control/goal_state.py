"""
Lifecycle of each end effector's goal, and the controller's transition events.

A pose goal is ``ACCEPTED`` when it arrives, ``ACTIVE`` from the first tick that
follows it, ``HELD`` while ``~/hold`` pauses it (``resume`` continues it), and ends
``REACHED`` (within tolerance and settled), ``UNREACHABLE`` (no progress: see
``GoalReferee.judge``) or ``REPLACED`` (a new goal for the same
effector). ``NONE``: no goal (the effector holds its pose); ``TWIST``: velocity mode.

Every transition the user should hear of is an :class:`Event`, queued on the controller
for the node to log (once each, throttled).
"""

from collections import deque
import enum
from typing import NamedTuple

__all__ = ['Event', 'EventQueue', 'GoalState']

EVENT_CAPACITY = 256  # transitions kept between two drains; the oldest go first [-]


class GoalState(enum.IntEnum):
    """Where an effector's goal is in its lifecycle (module docstring)."""

    NONE = 0
    ACCEPTED = 1
    ACTIVE = 2
    HELD = 3
    REACHED = 4
    UNREACHABLE = 5
    REPLACED = 6
    TWIST = 7


class Event(NamedTuple):
    """One transition: ``kind`` (a short key), ``level`` ('info' or 'warn'), the message."""

    kind: str
    level: str
    message: str


class EventQueue(deque):
    """
    The controller's transitions, oldest first, for the node to log once each.

    One queue per controller, shared by the parts that change its state (the goals, the
    link to the robot, the goal referee): each :meth:`post` s what it changed; the node
    :meth:`drain` s the queue once per tick. Bounded to ``EVENT_CAPACITY``: a node that
    stops draining loses the oldest, never memory.
    """

    def __init__(self, events=(), maxlen=EVENT_CAPACITY):
        super().__init__(events, maxlen)

    def post(self, kind, level, message):
        """Queue one :class:`Event`."""
        self.append(Event(kind, level, message))

    def drain(self):
        """Return the queued events (a list, oldest first) and empty the queue."""
        events = list(self)
        self.clear()
        return events

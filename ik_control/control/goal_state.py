"""
Lifecycle of each end effector's goal, and the controller's transition events.

A pose goal is ``ACCEPTED`` when it arrives, ``ACTIVE`` from the first tick that
follows it, ``HELD`` while ``~/hold`` pauses it (``resume`` continues it), and ends
``REACHED`` (within tolerance and settled), ``UNREACHABLE`` (no progress: see
``ResolvedRateController._goal_bookkeeping``) or ``REPLACED`` (a new goal for the same
effector). ``NONE``: no goal (the effector holds its pose); ``TWIST``: velocity mode.

Every transition the user should hear of is an :class:`Event`, queued on the controller
for the node to log (once each, throttled).
"""

import enum
from typing import NamedTuple

__all__ = ['Event', 'GoalState']


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

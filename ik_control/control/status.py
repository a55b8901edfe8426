"""
Status codes: one for every reason the controller slows or stops (as MoveIt Servo does).

A tick sets a bit field of :class:`Status` flags; :func:`level_of` maps it to the
diagnostic level (0 OK, 1 WARN, 2 ERROR) and :func:`describe` to a message.
"""

import enum

OK, WARN, ERROR = 0, 1, 2


class Status(enum.IntFlag):
    """Why the controller is slowing, stopping or refusing something."""

    NONE = 0
    NEAR_SINGULARITY = 1 << 0       # sigma_min below singular_epsilon: damping raised
    JOINT_BOUND = 1 << 1            # braking for, or clipped at, a position limit
    VELOCITY_LIMITED = 1 << 2       # joint velocity scaled down to its limit
    ACCELERATION_LIMITED = 1 << 3   # joint acceleration limited
    TARGET_UNREACHABLE = 1 << 4     # an effector is still far from its target and not moving
    ERROR_CLAMPED = 1 << 5          # ClampMag bounded an effector's error (large target step)
    STALE_STATE = 1 << 6            # no joint_states for joint_state_timeout: stopping
    NO_STATE = 1 << 7               # no joint_states received yet: not commanding
    BAD_INPUT = 1 << 8              # a message was refused (within the last second)
    HOLDING = 1 << 9                # ~/hold called: holding position
    RESEEDED = 1 << 10              # measured and commanded state diverged: restarted from
    #                                 the measured state (within the last second)
    TWIST_TIMEOUT = 1 << 11         # a velocity command timed out: decelerating to rest
    OBSTACLE_NEAR = 1 << 12         # an obstacle within obstacles.influence: moving away
    COLLISION_NEAR = 1 << 13        # a checked pair within collision.influence_distance:
    #                                 its approach is bounded
    COLLISION_HALT = 1 << 14        # the collision bounds stopped the commanded motion
    INACTIVE = 1 << 15              # released (the node deactivated): braking to rest, then
    #                                 commanding nothing until engaged again


_LEVELS = {
    Status.NEAR_SINGULARITY: WARN, Status.JOINT_BOUND: WARN, Status.VELOCITY_LIMITED: OK,
    Status.ACCELERATION_LIMITED: OK, Status.TARGET_UNREACHABLE: WARN,
    Status.ERROR_CLAMPED: OK, Status.STALE_STATE: ERROR, Status.NO_STATE: WARN,
    Status.BAD_INPUT: WARN, Status.HOLDING: OK, Status.RESEEDED: WARN,
    Status.TWIST_TIMEOUT: OK, Status.OBSTACLE_NEAR: WARN, Status.COLLISION_NEAR: WARN,
    Status.COLLISION_HALT: ERROR, Status.INACTIVE: OK,
}

_MESSAGES = {
    Status.NEAR_SINGULARITY: 'near singularity: damping raised',
    Status.JOINT_BOUND: 'at a joint position bound',
    Status.VELOCITY_LIMITED: 'joint velocity limited',
    Status.ACCELERATION_LIMITED: 'joint acceleration limited',
    Status.TARGET_UNREACHABLE: 'target unreachable: holding the closest pose',
    Status.ERROR_CLAMPED: 'target far: Cartesian step clamped',
    Status.STALE_STATE: 'joint_states stale: stopped',
    Status.NO_STATE: 'waiting for joint_states',
    Status.BAD_INPUT: 'input refused',
    Status.HOLDING: 'holding (~/hold)',
    Status.RESEEDED: 'commanded and measured state diverged: re-seeded from measurement',
    Status.TWIST_TIMEOUT: 'velocity command timed out: stopping',
    Status.OBSTACLE_NEAR: 'obstacle within the influence distance: moving the arm away',
    Status.COLLISION_NEAR: 'collision pair within the influence distance: approach bounded',
    Status.COLLISION_HALT: 'halted for collision: the motion would bring a pair too near',
    Status.INACTIVE: 'inactive (node deactivated): commanding nothing',
}


def level_of(status):
    """Diagnostic level (OK 0, WARN 1, ERROR 2) of a status bit field."""
    level = OK
    for flag, flag_level in _LEVELS.items():
        if status & flag:
            level = max(level, flag_level)
    return level


def describe(status):
    """Human-readable summary of a status bit field ('ok' when none is set)."""
    parts = [msg for flag, msg in _MESSAGES.items() if status & flag]
    return '; '.join(parts) if parts else 'ok'


def names(status):
    """Names of the set flags (for the diagnostic key/values)."""
    return [flag.name for flag in Status if flag and status & flag]

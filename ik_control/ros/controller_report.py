"""
What ``ik_controller`` tells people and programs: events, status topics, /diagnostics.

:class:`StatusTopics` publishes the machine-readable state on change (latched), as MoveIt
Servo's status topic: ``~/status`` (std_msgs/UInt32, the bit field of
:class:`~ik_control.control.status.Status`), per end effector ``~/E/goal_reached``
(std_msgs/Bool) and ``~/E/goal_state`` (std_msgs/UInt8, the
:class:`~ik_control.control.goal_state.GoalState` code).

:class:`EventLog` logs the controller's transitions (goal accepted, reached, unreachable,
state lost and regained, hold, re-seed, limits engaged), each kind at most once per
period, with a count of those left out. :func:`controller_values` takes the controller's
picture for one ``diagnostic_msgs/DiagnosticStatus`` (call it under the tick's lock);
:func:`diagnostic_array` wraps it as the message.
"""

import math

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from ik_control.control import status as status_mod
from ik_control.control.goal_state import GoalState
from ik_control.ik.nullspace import manipulability
import numpy as np
from rclpy.qos import DurabilityPolicy, QoSProfile
from std_msgs.msg import Bool, UInt32, UInt8

LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)


class StatusTopics:
    """The status topics of the module docstring on ``node``, one per effector name."""

    def __init__(self, node, effectors):
        n = len(effectors)
        self._status_pub = node.create_publisher(UInt32, '~/status', LATCHED)
        self._reached_pubs = [node.create_publisher(Bool, f'~/{ee}/goal_reached', LATCHED)
                              for ee in effectors]
        self._state_pubs = [node.create_publisher(UInt8, f'~/{ee}/goal_state', LATCHED)
                            for ee in effectors]
        self._status = -1
        self._reached = np.zeros(n, dtype=bool)
        self._state = np.full(n, -1, dtype=np.int64)
        # what was last published, as bytes: comparing them is the tick's whole cost when
        # nothing changed (0.2 us against 2 us for a numpy comparison)
        self._seen = (b'', b'')

    def publish(self, c, force=False):
        """Publish what changed in controller ``c`` since the last call (all: ``force``)."""
        if force or c.status != self._status:
            self._status = int(c.status)
            self._status_pub.publish(UInt32(data=self._status))
        reached, state = c.goals.reached, c.goals.state
        seen = (reached.tobytes(), state.tobytes())
        if not force and seen == self._seen:
            return
        self._seen = seen
        for i in np.flatnonzero((reached != self._reached) | force):
            self._reached_pubs[i].publish(Bool(data=bool(reached[i])))
        self._reached[:] = reached
        for i in np.flatnonzero((state != self._state) | force):
            self._state_pubs[i].publish(UInt8(data=int(state[i])))
        self._state[:] = state


class EventLog:
    """Log events through ``logger``, each kind at most once per ``period`` [s]."""

    def __init__(self, logger, period):
        self.logger = logger
        self.period = float(period)
        self._logged = {}  # event kind -> (last log time [s], left out since)

    def log(self, events, now):
        """Log ``events`` (the controller's drained queue) at monotonic time ``now`` [s]."""
        for event in events:
            last, left_out = self._logged.get(event.kind, (-math.inf, 0))
            if now - last < self.period:
                self._logged[event.kind] = (last, left_out + 1)
                continue
            self._logged[event.kind] = (now, 0)
            text = event.message + (f' ({left_out} more like it not logged)' if left_out
                                    else '')
            # one call site per severity: rclpy keys its log filters on the caller
            if event.level == 'warn':
                self.logger.warning(text)
            else:
                self.logger.info(text)


def controller_values(c, refusals, bad_stamps):
    """
    Return the diagnostics' ``(key, value)`` strings of controller ``c``.

    Status flags, link state and counters; the obstacles' and the collision stage's
    nearest distances [m]; per end effector its errors [m, rad], goal state and why it is
    unreachable; the manipulability of the last tick's Jacobian. ``refusals`` and
    ``bad_stamps`` are the node's own counts. Call under the tick's lock.
    """
    values = [('status_codes', ','.join(status_mod.names(c.status)) or 'NONE'),
              ('sigma_min', f'{c.sigma_min():.4g}'),
              ('refused_messages', str(refusals)),
              ('last_refusal', c.last_refusal),
              ('reseeds', str(c.robot.reseeds)),
              ('late_ticks', str(c.late_ticks)),
              ('late_seconds', f'{c.late_time:.6g}'),
              ('link', c.robot.state.name),
              ('implausible_states', str(c.robot.implausible)),
              ('clock_jumps_back', str(c.clock_jumps_back)),
              ('stamps_out_of_range', str(bad_stamps)),
              ('position_ik_requests', str(c.fallback.requests)),
              ('position_ik_solutions', str(c.fallback.uses)),
              ('obstacles', str(c.obstacles.radii.size))]
    ws = c.solver.ws  # the last tick's placements
    clearance = c.obstacles.nearest(ws.joint_T, ws.frame_T) if c.initialized else np.inf
    values.append(('obstacle_clearance_m', f'{clearance:.4g}'))
    if c.collision is not None:  # the nearest pair within the influence distance
        values.append(('collision_closest_pair', c.collision.closest_pair or 'none'))
        values.append(('collision_distance_m', f'{c.collision.closest_distance:.4g}'))
    err_p, err_r = c.tracking_errors()
    for i, ee in enumerate(c.model.end_effector_names):
        values.append((f'{ee}.position_error_m', f'{err_p[i]:.6g}'))
        values.append((f'{ee}.orientation_error_rad', f'{err_r[i]:.6g}'))
        values.append((f'{ee}.goal_reached', str(bool(c.goals.reached[i]))))
        values.append((f'{ee}.goal', GoalState(int(c.goals.state[i])).name))
        if c.goals.unreachable_reason[i]:
            values.append((f'{ee}.unreachable_because', c.goals.unreachable_reason[i]))
    if c.initialized:
        values.append(('manipulability', f'{manipulability(c.solver.J):.4g}'))
    return values


def diagnostic_array(name, hardware_id, status, values, stamp):
    """Return a DiagnosticArray of one status: ``status`` flags' level and words, ``values``."""
    msg = DiagnosticArray()
    msg.header.stamp = stamp
    msg.status = [DiagnosticStatus(
        level=bytes([status_mod.level_of(status)]), name=name, hardware_id=hardware_id,
        message=status_mod.describe(status),
        values=[KeyValue(key=k, value=v) for k, v in values])]
    return msg

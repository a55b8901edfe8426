"""
The controller core ticked against a simulated robot: the rig of the in-process goal tests.

A simulated robot follows the command windows as a joint_trajectory_controller would (it
samples the latest window it got at the time since its stamp, through ros2_control's
setpoint saturation); :class:`Run` ticks the controller on the robot's joint_states and
checks that every window keeps the position, velocity and acceleration limits and
continues the previous one while the states flow.
"""

from command_checks import assert_window_within_limits
from ik_control import robots
from ik_control.control.config import ControllerConfig
from ik_control.control.controller import ResolvedRateController
from ik_control.control.robot_link import LinkState
from ik_control.control.status import Status
from ik_control.sim.saturation import SetpointSaturation
from ik_control.validation import InputError
import numpy as np

WAM = robots.robot('wam')
SIMON = robots.robot('simon')
RATE = 500.0
DT = 1.0 / RATE


class Follower:
    """
    A robot that follows the latest command window (as a trajectory controller).

    Its setpoints go through ros2_control's saturation (as sim_robot's): a setpoint it
    could not follow within its limits is clipped and counted (``sat.clamps``).
    """

    def __init__(self, model, q, v_max, a_max):
        self.sat = SetpointSaturation(model.lower, model.upper, v_max, a_max, q)
        self.window, self.since = None, 0.0
        self.blocked = False  # brakes on: it stays where it is, whatever it is sent

    @property
    def q(self):
        return self.sat.q

    def restart(self, q):
        """Put the robot at ``q``, at rest, without a trajectory (a restarted driver)."""
        self.sat.reset(q)
        self.window = None

    def command(self, window, now):
        if window is not None:
            self.window, self.since = window, now

    def move(self, now):
        """Step to ``now`` (one period on)."""
        if self.window is not None and not self.blocked:
            self.sat.apply(self.window.at(now - self.since)[0], DT)


def rig(model=WAM, **config):
    c = ResolvedRateController(model, ControllerConfig(rate_hz=RATE, **config))
    q = robots.ready_pose('wam' if model is WAM else 'simon')
    c.set_joint_state(model.joint_names, q, 0.0)
    robot = Follower(model, q, c.v_max, c.a_max)
    return c, robot


def checks(c, model, command, previous, previous_stale, robot=None):
    """
    Check the window keeps the limits and continues the previous one while states flow.

    At a re-seed onto the robot's own motion (``robot``: its position and its velocity
    over the last period) it starts there instead: continuous for the robot, not for
    the command.
    """
    margin = c.config.limits.position_margin
    assert_window_within_limits(model.lower + margin, model.upper - margin, c.v_max, c.a_max,
                                command)
    if robot is not None:
        q, v = robot[0], np.clip(robot[1], -c.v_max, c.v_max)
    elif previous is not None and not previous_stale:
        q, v = previous.at(DT)
    else:
        return
    np.testing.assert_allclose(command.positions[0], q, rtol=0, atol=1e-9)
    np.testing.assert_allclose(command.velocities[0], v, rtol=0, atol=1e-9)


class Run:
    """
    Tick loop with the checks; counts the robot's clamped setpoints.

    ``clamps``: setpoints the robot had to clip, except while it recovers from a restart
    elsewhere or from being blocked (until a tick it follows unclamped within
    reseed_tolerance of the path: it may have to catch up with it).
    """

    def __init__(self, c, robot, model=WAM):
        self.c, self.robot, self.model = c, robot, model
        self.now, self.previous, self.previous_stale = 0.0, None, False
        self.clamps = 0
        self.recovering = False
        self.max_step = 0.0  # largest command step between windows / (v_max * period)
        self.reseeds_onto_robot = 0  # re-seeds that restarted the path on the robot

    def restart(self, q):
        self.robot.restart(q)
        self.recovering = True

    def tick(self, send=True, names=None, positions=None):
        self.now += DT
        before = self.robot.sat.clamps
        q_before = self.robot.q.copy()
        self.robot.move(self.now)
        motion = (self.robot.q.copy(), (self.robot.q - q_before) / DT)
        if self.recovering:  # until a tick it follows unclamped, near the path
            self.recovering = (self.robot.blocked or self.robot.sat.clamps > before
                               or self.c.robot.state != LinkState.TRACKING
                               or np.max(np.abs(self.c.path.sample(self.now)[0] - self.robot.q))
                               >= self.c.config.reseed_tolerance)
        else:
            self.clamps += self.robot.sat.clamps - before
        result = None
        if send:
            try:
                result = self.c.set_joint_state(
                    names or self.model.joint_names,
                    self.robot.q if positions is None else positions, self.now)
            except InputError:  # malformed or outside the limits: refused
                result = 'error'

        reseeds, link = self.c.robot.reseeds, self.c.robot.state
        command = self.c.update(self.now)
        onto_robot = (self.c.robot.reseeds > reseeds and link == LinkState.TRACKING
                      and self.c.robot.state == LinkState.TRACKING)
        if onto_robot:
            self.reseeds_onto_robot += 1
        if command is not None:
            checks(self.c, self.model, command, self.previous, self.previous_stale,
                   motion if onto_robot else None)
            if self.previous is not None and not self.previous_stale and not onto_robot:
                self.max_step = max(self.max_step, float(np.max(np.abs(
                    command.positions[0] - self.previous.positions[0]) / (self.c.v_max * DT))))
        self.previous = command
        self.previous_stale = bool(self.c.status & Status.STALE_STATE)
        self.robot.command(command, self.now)
        return result, command

    def ticks(self, n, **kw):
        for _ in range(n):
            self.tick(**kw)


def goal_pose(model, q, offset, i=0):
    T = model.frame_placements(q)[i]
    T[:3, 3] += offset
    return T

"""
``sim_robot``: an embedded simulated robot behind a joint_trajectory_controller interface.

Subscribes ``trajectory_msgs/JointTrajectory`` on ``command_topic`` with
ros2_control joint_trajectory_controller semantics (a new message replaces the
active trajectory, header stamp zero means now, linear or cubic interpolation,
partial joint sets allowed; see :mod:`ik_control.sim.trajectory`), steps a
kinematic or MuJoCo simulation at ``rate_hz`` and publishes
``sensor_msgs/JointState`` on ``joint_states``.

``joint_states`` lists the simulated joints in the order of parameter ``joints``;
by default every non-fixed, non-mimic joint in
:attr:`ik_control.kinematics.RobotModel.joint_names` order, the ik_controller's:
pinocchio's depth-first walk of the kinematic tree, which may differ from the
URDF's document order (SIMON: left arm before right arm). Consumers match
joints by name.

Run: ``ros2 run ik_control sim_robot --ros-args -p urdf_path:=wam.urdf``.
"""

import sys
from typing import List

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from ik_control.kinematics import RobotModel
from ik_control.kinematics.dh_file import robot_description
from ik_control.ros.cdr import SerializedTemplate, TrajectoryReader
from ik_control.ros.ik_controller_parameters import read_srdf
from ik_control.ros.parameters import declare_all, Param, run_node, StartupError
from ik_control.ros.realtime_loop import PolledGroup, RealtimeLoop, take_all
from ik_control.sim.contact import ContactReport
from ik_control.sim.kinematic import KinematicSim
import numpy as np
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

__all__ = ['SimRobotNode', 'main', 'BACKENDS', 'PARAMETERS']

NODE_NAME = 'sim_robot'
#: A command received more than this many periods before the update that takes it is
#: applied at its reception time (:meth:`SimRobotNode.realtime_tick`).
REPLAY_AFTER = 1.5
#: Commands received longer ago than this [s] are not replayed (a reception time that
#: cannot be right).
MAX_REPLAY = 0.5
BACKENDS = ('kinematic', 'mujoco')
LOOP_MODES = ('fixed_rate', 'timer')

PARAMETERS = {
    'robot_description': Param(
        '', 'URDF XML of the robot. If empty, the file urdf_path is read.'),
    'urdf_path': Param(
        '', 'Path of a URDF file, or of a DH table file (.yaml, see config/robots), used '
        'when robot_description is empty.'),
    'joints': Param(
        Parameter.Type.STRING_ARRAY,
        'Simulated (commanded) joints, in the order of joint_states. Unset or '
        'empty: all non-fixed, non-mimic joints of the URDF in kinematic-tree '
        '(depth-first) order, as ik_controller.'),
    'initial_positions': Param(
        Parameter.Type.DOUBLE_ARRAY,
        'Initial joint positions [rad or m], one per joint of `joints`, clipped '
        'into the joint limits. Unset: 0 clipped into the limits.'),
    'backend': Param(
        'kinematic', 'Simulation backend: "kinematic" (ideal or lagged tracking '
        'within joint limits) or "mujoco" (MuJoCo physics with position servos).'),
    'loop': Param(
        'fixed_rate', "Scheduling: 'fixed_rate' (absolute deadlines in the main thread, "
        "trajectories polled each step) or 'timer' (an rclpy timer at rate_hz)."),
    'realtime_priority': Param(
        0, 'SCHED_FIFO priority of the loop (1-98; needs CAP_SYS_NICE or an rtprio limit); '
        '0 = normal scheduling.', 0, 98),
    'busy_wait': Param(
        0.0002, 'Time before each step spent polling the clock instead of sleeping, as '
        "ik_controller's busy_wait (fixed_rate loop) [s].", 0.0, 1.0),
    'rate_hz': Param(
        500.0, 'Rate of simulation steps and joint_states messages [Hz].', 1.0, 2000.0),
    'command_interface': Param(
        'trajectory', "Commands taken: 'trajectory' (trajectory_msgs/JointTrajectory with "
        "joint_trajectory_controller semantics), 'position' or 'velocity' "
        '(std_msgs/Float64MultiArray, one value per joint of `joints`, as the forward '
        'command controllers take).'),
    'command_topic': Param(
        '', 'Topic of the commands; empty = joint_trajectory_controller/joint_trajectory, '
        'forward_position_controller/commands or forward_velocity_controller/commands, by '
        'command_interface.'),
    'enforce_limits': Param(
        True, 'Saturate setpoints at the URDF velocity limits and max_acceleration, as '
        "ros2_control's joint_limits does; every clamp is counted and logged."),
    'max_velocity': Param(
        [0.0], 'Joint velocity limits of the saturation, one or one per joint; 0 = the '
        "URDF's; never above the URDF's; needed where the URDF gives none (a continuous "
        'joint without <limit>) [rad/s or m/s].'),
    'max_acceleration': Param(
        [10.0], 'Joint acceleration limits of the saturation, one or one per joint '
        '[rad/s^2 or m/s^2].'),
    'velocity_command_timeout': Param(
        0.1, "command_interface 'velocity': a velocity command older than this is "
        'replaced by zero (a hardware watchdog) [s].', 0.001, 10.0),
    'lag_time_constant': Param(
        0.0, 'Kinematic backend: first-order lag time constant [s]; 0 = ideal '
        'tracking.', 0.0, 10.0),
    'kp': Param(
        2000.0, 'MuJoCo backend: position servo gain [N m/rad or N/m].', 1.0, 1.0e6),
    'kv': Param(
        0.0, 'MuJoCo backend: velocity servo gain [N m s/rad or N s/m]; 0 = '
        'critical damping computed from the joint-space inertia.', 0.0, 1.0e5),
    'gravity_compensation': Param(
        True, 'MuJoCo backend: cancel gravity on every link, as a gravity '
        'compensated arm does.'),
    'contact_check_rate': Param(
        50.0, "How often the simulated state is checked for contact between the URDF's "
        'collision shapes (non-adjacent links, less the SRDF pairs), reported on '
        '/diagnostics and logged as it starts and ends [Hz]; 0 = off.', 0.0, 2000.0),
    'collision_srdf_path': Param(
        '', 'SRDF whose <disable_collisions> pairs the contact check leaves out; empty = '
        'the pairs in contact at the initial state.'),
}


COMMAND_TOPICS = {'trajectory': 'joint_trajectory_controller/joint_trajectory',
                  'position': 'forward_position_controller/commands',
                  'velocity': 'forward_velocity_controller/commands'}


def make_sim(values, t0):
    """
    Build the simulated robot from the parameter values, at time ``t0`` [s].

    The URDF (``robot_description``, else the file ``urdf_path``) and the joint
    selection are read by :meth:`RobotModel.from_urdf`; raises :class:`StartupError`
    with its message. The robot model is kept as the simulation's ``robot_model``.
    """
    backend = values['backend']
    if backend not in BACKENDS:
        raise StartupError('unknown backend %r; choose one of %s'
                           % (backend, ', '.join(BACKENDS)))
    if values['command_interface'] not in COMMAND_TOPICS:
        raise StartupError('command_interface must be one of %s, not %r'
                           % (list(COMMAND_TOPICS), values['command_interface']))
    q0 = values['initial_positions'] or None
    try:
        urdf = robot_description(values['robot_description'] or values['urdf_path'])
        robot = RobotModel.from_urdf(urdf, joints=values['joints'])
        v_max = a_max = None
        if values['enforce_limits']:
            v_max = robot.velocity_limit.copy()
            given = np.array(values['max_velocity'], dtype=float)
            if given.size not in (1, robot.nq) or not np.all(given >= 0):
                raise StartupError('max_velocity needs 1 or %d values >= 0, got %s'
                                   % (robot.nq, list(given)))
            given = np.broadcast_to(given, (robot.nq,))
            urdf_known = (v_max > 0.0) & np.isfinite(v_max)
            if np.any(urdf_known & (given > v_max)):
                j = int(np.argmax(urdf_known & (given > v_max)))
                raise StartupError(f'max_velocity {given[j]:g} exceeds the URDF velocity '
                                   f"limit {v_max[j]:g} of joint '{robot.joint_names[j]}'")
            v_max = np.where(given > 0.0, given, v_max)
            missing = [n for n, v in zip(robot.joint_names, v_max) if not 0.0 < v < np.inf]
            if missing:  # (a continuous joint without <limit>: pinocchio says 0)
                raise StartupError(f'joints {missing} have no velocity limit in the URDF '
                                   '(<limit velocity=...>): give one, set max_velocity, or '
                                   'set enforce_limits:=false')
            a_max = np.array(values['max_acceleration'], dtype=float)
            if a_max.size not in (1, robot.nq) or not np.all(a_max > 0):
                raise StartupError('max_acceleration needs 1 or %d values > 0, got %s'
                                   % (robot.nq, list(a_max)))
            a_max = np.broadcast_to(a_max, (robot.nq,)).copy()
        if backend == 'kinematic':
            sim = KinematicSim(robot.joint_names, robot.lower, robot.upper, q0,
                               tau=values['lag_time_constant'], t0=t0, v_max=v_max,
                               a_max=a_max)
        else:
            from ik_control.sim.mujoco_sim import MujocoSim
            sim = MujocoSim(urdf, values['joints'], q0, kp=values['kp'], kv=values['kv'],
                            gravity_compensation=values['gravity_compensation'], t0=t0,
                            v_max=v_max, a_max=a_max)
    except ValueError as exc:  # ModelError is one
        raise StartupError(str(exc)) from None
    sim.interface = values['command_interface']
    sim.command_timeout = values['velocity_command_timeout']
    sim.robot_model = robot
    return sim


class SimRobotNode(Node):
    """ROS wrapper of a :class:`ik_control.sim.SimRobot`; raises StartupError on bad parameters."""

    def __init__(self, **kwargs):
        """Declare and validate the parameters, build the simulation, start the timer."""
        super().__init__(NODE_NAME, **kwargs)
        p = declare_all(self, PARAMETERS)
        # the simulation counts time from here: epoch seconds as floats resolve 0.24 us
        self.epoch_ns = self.get_clock().now().nanoseconds
        self.sim = make_sim(p, self._now())
        # joint_states are published serialized from a template (ik_control.ros.cdr)
        names = list(self.sim.joint_names)
        self._js = SerializedTemplate(JointState(name=names), {
            'position': lambda msg, v: setattr(msg, 'position', v),
            'velocity': lambda msg, v: setattr(msg, 'velocity', v)}, len(names))
        self._js_position = self._js.view('position')
        self._js_velocity = self._js.view('velocity')
        self._js_pub = self.create_publisher(JointState, 'joint_states', 10)
        self._last_ns = None  # time of the last step [ns]
        self._last_stamp_ns = None  # stamp of the last joint_states published [ns]
        # commands received this long before an update are applied at their reception [s]
        self._replay_after = (None if self.get_parameter('use_sim_time').value
                              else REPLAY_AFTER / p['rate_hz'])
        if p['loop'] not in LOOP_MODES:
            raise StartupError(f"loop must be one of {LOOP_MODES}, not '{p['loop']}'")
        self.values = p
        polled = PolledGroup() if p['loop'] == 'fixed_rate' else None
        interface = p['command_interface']
        msg_type = JointTrajectory if interface == 'trajectory' else Float64MultiArray
        # trajectories are read from their bytes (rclpy takes milliseconds for a window
        # of 30 points of 16 joints; ik_control.ros.cdr)
        self._trajectory_reader = TrajectoryReader(epoch_ns=self.epoch_ns)
        self._traj_sub = self.create_subscription(
            msg_type, p['command_topic'] or COMMAND_TOPICS[interface], self._on_command, 10,
            callback_group=polled, raw=interface == 'trajectory')
        self._diag = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._reported_clamps = 0
        self._rejected = 0
        self.contacts, self._contact_every, self._published = None, 0, 0
        urdf_xml = getattr(self.sim.robot_model, 'urdf_xml', None)
        if p['contact_check_rate'] > 0.0 and urdf_xml:
            try:
                srdf = read_srdf(p['collision_srdf_path'], 'collision_srdf_path')
                self.contacts = ContactReport(self.sim.robot_model, srdf,
                                              np.array(self.sim.position))
            except ValueError as exc:  # a bad SRDF: ModelError / InputError
                raise StartupError(f'collision_srdf_path: {exc}') from None
            self._contact_every = max(1, round(p['rate_hz'] / p['contact_check_rate']))
            if self.contacts.allowed:
                self.get_logger().info(
                    f'contact check: {len(self.contacts.allowed)} pairs in contact at the '
                    f'start are left out ({", ".join(self.contacts.allowed[:3])}...)')
        self.create_timer(1.0, self._publish_diagnostics)
        if polled is None:
            self._timer = self.create_timer(1.0 / p['rate_hz'], self._on_tick)
        self.get_logger().info(
            '%s backend, %d joints %s, %.0f Hz, %s commands on %s, limits %s'
            % (p['backend'], len(self.joint_names), self.joint_names, p['rate_hz'],
               interface, self._traj_sub.topic_name,
               'enforced' if p['enforce_limits'] else 'not enforced'))

    def _now(self) -> float:
        """Node clock [s] after :attr:`epoch_ns` (to the nanosecond: see cdr.stamp_seconds)."""
        return (self.get_clock().now().nanoseconds - self.epoch_ns) * 1e-9

    @property
    def joint_names(self) -> List[str]:
        """Return the simulated joints, the order of ``joint_states``."""
        return list(self.sim.joint_names)

    def _on_tick(self, now_ns=None) -> None:
        now_ns = self.get_clock().now().nanoseconds if now_ns is None else now_ns
        if now_ns == self._last_ns:
            # simulated time stands still (use_sim_time, /clock paused or late): like a
            # simulator, no step and no new joint_states until it moves
            return
        self._last_ns = now_ns
        self.sim.step((now_ns - self.epoch_ns) * 1e-9)
        # the state's own time (MuJoCo steps in whole timesteps: up to one before now)
        stamp_ns = self.epoch_ns + round(self.sim.time * 1e9)
        if stamp_ns == self._last_stamp_ns:
            return  # no new state
        self._last_stamp_ns = stamp_ns
        self._js.set_stamp(stamp_ns)
        self._js_position[:] = self.sim.position
        self._js_velocity[:] = self.sim.velocity
        self._js_pub.publish(self._js.payload())
        self._published += 1
        if self.contacts is not None and self._published % self._contact_every == 0:
            line = self.contacts.check(self._js_position)
            # a contact starts or ends: once each; one call site per severity (rclpy keys
            # its log filters on the caller, and a second severity there raises)
            if line is not None and line.startswith('contact:'):
                self.get_logger().warning(line)
            elif line is not None:
                self.get_logger().info(line)

    def realtime_tick(self, _message):
        """
        Run one step of the fixed-rate loop: the newest valid command, step, publish.

        As a ros2_control controller reads its realtime buffer once per update: the
        commands that came since the last step are checked in arrival order at this
        update's state (one clock reading per update: a second step microseconds later
        would make the saturation read position rounding as speed), each valid one
        replacing the one before, so the newest valid one is followed from the next
        update on.

        A simulated robot whose process was held up (the scheduler, on a loaded machine)
        must not move as if its commands had come late: a real robot's controller runs
        on time. A command received (``received_timestamp``, the DDS reader's) more than
        :data:`REPLAY_AFTER` periods before this update is applied at its reception
        time, the simulation stepped there first; on simulated time (``use_sim_time``)
        there is no such replay (reception times are wall-clock).
        """
        now_ns = self.get_clock().now().nanoseconds
        commands = take_all(self._traj_sub, with_info=True)
        if commands:
            now = (now_ns - self.epoch_ns) * 1e-9
            for command, info in commands:
                t = now
                if self._replay_after is not None:
                    received = (info['received_timestamp'] - self.epoch_ns) * 1e-9
                    # (a zero or far-off reception time is no reason to replay)
                    if self._replay_after < now - received < MAX_REPLAY:
                        t = max(received, self.sim.time)
                self.sim.step(t)
                self._apply(command, t)
        self._on_tick(now_ns)

    def spin(self, executor):
        """Run the node: the fixed-rate loop, or the executor alone (``loop: timer``)."""
        if self.values['loop'] == 'timer':
            executor.spin()
            return
        RealtimeLoop(self, executor, 1.0 / self.values['rate_hz'], self.realtime_tick,
                     priority=self.values['realtime_priority'],
                     spin_margin=self.values['busy_wait']).run()

    def _on_command(self, msg) -> None:
        """Apply one command on arrival (``loop: timer``: the executor's callback)."""
        now = self._now()
        self.sim.step(now)
        self._apply(msg, now)

    def _apply(self, msg, now) -> bool:
        """
        Apply a command at ``now`` [s], the update's time, as a trajectory controller does.

        Not at the simulation's own time: MuJoCo's state is up to one timestep older, and
        a window stamped in between would look as if it started in the future, from the
        robot's measured position (its servo lag, several mrad at speed, became a jump
        the saturation clamped for seconds: the arm left its path).
        """
        try:
            if self.sim.interface == 'trajectory':
                stamp, names, times, positions, velocities = self._trajectory_reader.read(msg)
                self.sim.set_trajectory(names, times, positions, velocities, start_time=stamp,
                                        now=now)
            elif self.sim.interface == 'position':
                self.sim.command_positions(msg.data)
            else:
                self.sim.command_velocities(msg.data)
            return True
        except ValueError as exc:
            interface = self.sim.interface
            self._reject('trajectory' if interface == 'trajectory' else f'{interface} command',
                         exc)
            return False

    def _reject(self, what, exc):
        self._rejected += 1
        self.get_logger().warning(f'rejected {what}: {exc}', throttle_duration_sec=1.0)

    def _describe_clamp(self):
        j, wanted, lo, hi, before, dt = self.sim.saturation.last_clamp
        return (f"'{self.joint_names[j]}' asked {wanted:.4g} rad/s, allowed [{lo:.4g}, "
                f'{hi:.4g}] (from {before:.4g} over {dt * 1e3:.3g} ms)')

    def _publish_diagnostics(self) -> None:
        """Publish the clamp and rejection counts on /diagnostics; warn when clamps grow."""
        clamps = self.sim.clamps
        if clamps > self._reported_clamps:
            self.get_logger().warning(
                f'{clamps - self._reported_clamps} setpoints clamped at the joint limits in '
                f'the last second ({clamps} in all): the command stream was unsafe; the '
                f'last: {self._describe_clamp()}')
            self._reported_clamps = clamps
        contacts = self.contacts
        touched = contacts is not None and contacts.samples > 0
        level = DiagnosticStatus.WARN if clamps or touched else DiagnosticStatus.OK
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.status = [DiagnosticStatus(
            level=level, name=f'{self.get_name()}: simulated robot',
            hardware_id=self.values['backend'],
            message=('setpoints clamped: unsafe command stream' if clamps else
                     'contact between its collision shapes' if touched else 'OK'),
            values=[KeyValue(key='clamps', value=str(clamps)),
                    KeyValue(key='last_clamp',
                             value=self._describe_clamp() if clamps else ''),
                    KeyValue(key='rejected_commands', value=str(self._rejected)),
                    KeyValue(key='command_interface', value=self.sim.interface)]
            + ([] if contacts is None else
               [KeyValue(key='contact_checks', value=str(contacts.checks)),
                KeyValue(key='contact_samples', value=str(contacts.samples)),
                KeyValue(key='deepest_contact_m', value=f'{-contacts.deepest:.4g}'),
                KeyValue(key='deepest_contact_pair', value=contacts.deepest_pair)]))]
        self._diag.publish(msg)


def main(args=None) -> None:
    """Entry point of ``ros2 run ik_control sim_robot``; exits 2 on invalid parameters."""
    sys.exit(run_node(NODE_NAME, SimRobotNode, args=args))


if __name__ == '__main__':
    main()

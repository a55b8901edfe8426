"""
``sim_robot``: an embedded simulated robot behind a joint_trajectory_controller interface.

Subscribes ``trajectory_msgs/JointTrajectory`` on ``trajectory_topic`` with
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

from ik_control.kinematics import RobotModel
from ik_control.ros.cdr import SerializedTemplate
from ik_control.ros.conversions import joint_trajectory_to_arrays
from ik_control.ros.parameters import declare_all, Param, run_node, StartupError
from ik_control.ros.realtime_loop import PolledGroup, RealtimeLoop, take_all
from ik_control.sim.kinematic import KinematicSim
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

__all__ = ['SimRobotNode', 'main', 'BACKENDS', 'PARAMETERS']

NODE_NAME = 'sim_robot'
BACKENDS = ('kinematic', 'mujoco')
LOOP_MODES = ('fixed_rate', 'timer')

PARAMETERS = {
    'robot_description': Param(
        '', 'URDF XML of the robot. If empty, the file urdf_path is read.'),
    'urdf_path': Param(
        '', 'Path of a URDF file, used when robot_description is empty.'),
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
    'rate_hz': Param(
        500.0, 'Rate of simulation steps and joint_states messages [Hz].', 1.0, 2000.0),
    'trajectory_topic': Param(
        'joint_trajectory_controller/joint_trajectory',
        'Topic of trajectory_msgs/JointTrajectory commands.'),
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
}


def make_sim(values, t0):
    """
    Build the simulated robot from the parameter values, at time ``t0`` [s].

    The URDF (``robot_description``, else the file ``urdf_path``) and the joint
    selection are read by :meth:`RobotModel.from_urdf`; raises :class:`StartupError`
    with its message.
    """
    backend = values['backend']
    if backend not in BACKENDS:
        raise StartupError('unknown backend %r; choose one of %s'
                           % (backend, ', '.join(BACKENDS)))
    urdf = values['robot_description'] or values['urdf_path']
    q0 = values['initial_positions'] or None
    try:
        if backend == 'kinematic':
            robot = RobotModel.from_urdf(urdf, joints=values['joints'])
            return KinematicSim(robot.joint_names, robot.lower, robot.upper, q0,
                                tau=values['lag_time_constant'], t0=t0)
        from ik_control.sim.mujoco_sim import MujocoSim
        return MujocoSim(urdf, values['joints'], q0, kp=values['kp'], kv=values['kv'],
                         gravity_compensation=values['gravity_compensation'], t0=t0)
    except ValueError as exc:  # ModelError is one
        raise StartupError(str(exc)) from None


class SimRobotNode(Node):
    """ROS wrapper of a :class:`ik_control.sim.SimRobot`; raises StartupError on bad parameters."""

    def __init__(self, **kwargs):
        """Declare and validate the parameters, build the simulation, start the timer."""
        super().__init__(NODE_NAME, **kwargs)
        p = declare_all(self, PARAMETERS)
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
        if p['loop'] not in LOOP_MODES:
            raise StartupError(f"loop must be one of {LOOP_MODES}, not '{p['loop']}'")
        self.values = p
        polled = PolledGroup() if p['loop'] == 'fixed_rate' else None
        self._traj_sub = self.create_subscription(
            JointTrajectory, p['trajectory_topic'], self._on_trajectory, 10,
            callback_group=polled)
        if polled is None:
            self._timer = self.create_timer(1.0 / p['rate_hz'], self._on_tick)
        self.get_logger().info(
            '%s backend, %d joints %s, %.0f Hz, trajectories on %s'
            % (p['backend'], len(self.joint_names), self.joint_names, p['rate_hz'],
               self._traj_sub.topic_name))

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    @property
    def joint_names(self) -> List[str]:
        """Return the simulated joints, the order of ``joint_states``."""
        return list(self.sim.joint_names)

    def _on_tick(self) -> None:
        now_ns = self.get_clock().now().nanoseconds
        if now_ns == self._last_ns:
            # simulated time stands still (use_sim_time, /clock paused or late): like a
            # simulator, no step and no new joint_states until it moves
            return
        self._last_ns = now_ns
        self.sim.step(now_ns * 1e-9)
        self._js.set_stamp(now_ns)
        self._js_position[:] = self.sim.position
        self._js_velocity[:] = self.sim.velocity
        self._js_pub.publish(self._js.payload())

    def realtime_tick(self, _message):
        """Run one step of the fixed-rate loop: trajectories in arrival order, step, publish."""
        for trajectory in take_all(self._traj_sub):
            self._on_trajectory(trajectory)  # each valid one replaces the active one
        self._on_tick()

    def spin(self, executor):
        """Run the node: the fixed-rate loop, or the executor alone (``loop: timer``)."""
        if self.values['loop'] == 'timer':
            executor.spin()
            return
        RealtimeLoop(self, executor, 1.0 / self.values['rate_hz'], self.realtime_tick,
                     priority=self.values['realtime_priority']).run()

    def _on_trajectory(self, msg: JointTrajectory) -> None:
        try:
            arrays = joint_trajectory_to_arrays(msg)
            self.sim.step(self._now())
            self.sim.set_trajectory(arrays.joint_names, arrays.times, arrays.positions,
                                    arrays.velocities, start_time=arrays.start_time)
        except ValueError as exc:
            self.get_logger().warning('rejected trajectory: %s' % exc,
                                      throttle_duration_sec=1.0)


def main(args=None) -> None:
    """Entry point of ``ros2 run ik_control sim_robot``; exits 2 on invalid parameters."""
    sys.exit(run_node(NODE_NAME, SimRobotNode, args=args))


if __name__ == '__main__':
    main()

"""
``sim_robot``: an embedded simulated robot behind a joint_trajectory_controller interface.

Subscribes ``trajectory_msgs/JointTrajectory`` on ``trajectory_topic`` with
ros2_control joint_trajectory_controller semantics (a new message replaces the
active trajectory, header stamp zero means now, linear or cubic interpolation,
partial joint sets allowed; see :mod:`ik_control.sim.trajectory`), steps a
kinematic or MuJoCo simulation at ``rate_hz`` and publishes
``sensor_msgs/JointState`` on ``joint_states``.

Run: ``ros2 run ik_control sim_robot --ros-args -p urdf_path:=wam.urdf``.
"""

import os
import sys
from typing import List

from ik_control.ros.conversions import arrays_to_joint_state, joint_trajectory_to_arrays
from ik_control.sim.kinematic import KinematicSim
from ik_control.sim.urdf_joints import parse_urdf_joints, select_joints
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor
import rclpy
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

__all__ = ['SimRobotNode', 'StartupError', 'main', 'BACKENDS']

NODE_NAME = 'sim_robot'
BACKENDS = ('kinematic', 'mujoco')


class StartupError(Exception):
    """A user error in the node's parameters (reported without a traceback)."""


def _descriptor(description: str, lo=None, hi=None) -> ParameterDescriptor:
    d = ParameterDescriptor(description=description, read_only=True)
    if lo is not None:
        d.floating_point_range = [FloatingPointRange(from_value=float(lo), to_value=float(hi))]
    return d


# name -> (default value or Parameter.Type for "unset", description, range)
PARAMETERS = {
    'robot_description': (
        '', 'URDF XML of the robot. If empty, the file urdf_path is read.', None),
    'urdf_path': (
        '', 'Path of a URDF file, used when robot_description is empty.', None),
    'joints': (
        Parameter.Type.STRING_ARRAY,
        'Simulated (commanded) joints, in the order of joint_states. Unset or '
        'empty: all non-fixed, non-mimic joints of the URDF in URDF order.', None),
    'initial_positions': (
        Parameter.Type.DOUBLE_ARRAY,
        'Initial joint positions [rad or m], one per joint of `joints`, clipped '
        'into the joint limits. Unset: 0 clipped into the limits.', None),
    'backend': (
        'kinematic', 'Simulation backend: "kinematic" (ideal or lagged tracking '
        'within joint limits) or "mujoco" (MuJoCo physics with position servos).', None),
    'rate_hz': (
        500.0, 'Rate of simulation steps and joint_states messages [Hz].', (1.0, 2000.0)),
    'trajectory_topic': (
        'joint_trajectory_controller/joint_trajectory',
        'Topic of trajectory_msgs/JointTrajectory commands.', None),
    'lag_time_constant': (
        0.0, 'Kinematic backend: first-order lag time constant [s]; 0 = ideal '
        'tracking.', (0.0, 10.0)),
    'kp': (
        2000.0, 'MuJoCo backend: position servo gain [N m/rad or N/m].', (1.0, 1.0e6)),
    'kv': (
        0.0, 'MuJoCo backend: velocity servo gain [N m s/rad or N s/m]; 0 = '
        'critical damping computed from the joint-space inertia.', (0.0, 1.0e5)),
    'gravity_compensation': (
        True, 'MuJoCo backend: cancel gravity on every link, as a gravity '
        'compensated arm does.', None),
}


class SimRobotNode(Node):
    """
    ROS wrapper of a :class:`ik_control.sim.SimRobot`.

    Raises :class:`StartupError` for invalid parameters (the node is destroyed
    before the exception propagates).
    """

    def __init__(self, **kwargs):
        """Declare and validate the parameters, build the simulation, start the timer."""
        super().__init__(NODE_NAME, **kwargs)
        try:
            self._setup()
        except StartupError:
            self.destroy_node()
            raise

    # ---------------------------------------------------------------- set-up

    def _declare(self) -> dict:
        values = {}
        for name, (default, description, rng) in PARAMETERS.items():
            lo, hi = rng if rng else (None, None)
            try:
                param = self.declare_parameter(name, default, _descriptor(description, lo, hi))
            except (InvalidParameterTypeException, InvalidParameterValueException) as exc:
                raise StartupError('parameter %r: %s' % (name, exc)) from None
            values[name] = param.value
        for name in ('joints', 'initial_positions'):
            values[name] = list(values[name] or [])
        return values

    def _read_urdf(self, p: dict) -> str:
        if p['robot_description'].strip():
            return p['robot_description']
        path = p['urdf_path']
        if not path:
            raise StartupError('no robot: set robot_description (URDF XML) or urdf_path')
        try:
            with open(os.path.expanduser(path), encoding='utf-8') as f:
                return f.read()
        except OSError as exc:
            raise StartupError('cannot read urdf_path %r: %s' % (path, exc.strerror)) from None

    def _setup(self) -> None:
        p = self._declare()
        backend = p['backend']
        if backend not in BACKENDS:
            raise StartupError('unknown backend %r; choose one of %s'
                               % (backend, ', '.join(BACKENDS)))
        urdf = self._read_urdf(p)
        try:
            names, lower, upper = select_joints(parse_urdf_joints(urdf), p['joints'])
        except ValueError as exc:
            raise StartupError(str(exc)) from None
        q0 = p['initial_positions'] or None
        if q0 is not None and len(q0) != len(names):
            raise StartupError(
                'initial_positions has %d values but there are %d joints %s'
                % (len(q0), len(names), names))
        now = self._now()
        try:
            if backend == 'kinematic':
                self.sim = KinematicSim(names, lower, upper, q0,
                                        tau=p['lag_time_constant'], t0=now)
            else:
                from ik_control.sim.mujoco_sim import MujocoSim
                self.sim = MujocoSim(urdf, names, q0, kp=p['kp'], kv=p['kv'],
                                     gravity_compensation=p['gravity_compensation'],
                                     t0=now)
        except ValueError as exc:
            raise StartupError(str(exc)) from None

        self._js_msg = JointState()
        self._js_pub = self.create_publisher(JointState, 'joint_states', 10)
        self._traj_sub = self.create_subscription(
            JointTrajectory, p['trajectory_topic'], self._on_trajectory, 10)
        self._timer = self.create_timer(1.0 / p['rate_hz'], self._on_tick)
        self.get_logger().info(
            '%s backend, %d joints %s, %.0f Hz, trajectories on %s'
            % (backend, len(names), list(names), p['rate_hz'],
               self._traj_sub.topic_name))

    # -------------------------------------------------------------- run time

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    @property
    def joint_names(self) -> List[str]:
        """Return the simulated joints, the order of ``joint_states``."""
        return list(self.sim.joint_names)

    def _on_tick(self) -> None:
        clock_now = self.get_clock().now()
        self.sim.step(clock_now.nanoseconds * 1e-9)
        msg = arrays_to_joint_state(self.sim.joint_names, self.sim.position,
                                    self.sim.velocity, None, clock_now.to_msg(),
                                    self._js_msg)
        self._js_pub.publish(msg)

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
    rclpy.init(args=args)
    node = None
    code = 0
    try:
        node = SimRobotNode()
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        executor.spin()
    except StartupError as exc:
        rclpy.logging.get_logger(NODE_NAME).fatal('invalid configuration: %s' % exc)
        code = 2
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    if code:
        sys.exit(code)


if __name__ == '__main__':
    main()

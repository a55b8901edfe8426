"""
``jt_rrt_planner`` node: plans a collision-free joint trajectory to a workspace goal.

* subscribes ``joint_states`` (the start: the latest state of every planned joint) and
  the goal, in ``base_frame`` or any frame of the robot model (placed by forward
  kinematics at the current state): ``~/goal`` (geometry_msgs/PoseStamped: position and
  orientation within ``goal.rotation_threshold``) or ``~/goal_point``
  (geometry_msgs/PointStamped: position only; ``~/goal_position`` is the same input under
  its earlier name). A ROS topic has one message type, so the two goal types have a topic
  each rather than sharing ``~/goal``;
* obstacles: parameter ``obstacles`` (a YAML list in the form of
  ``config/jtrrt_scenarios.yaml``, base frame) plus ``~/obstacles``
  (visualization_msgs/MarkerArray: CUBE -> box of the marker's scale, SPHERE -> sphere of
  the largest scale as diameter, CYLINDER -> cylinder of diameter max(x, y) and length z;
  ADD/MODIFY by namespace and id, DELETE and DELETEALL honoured);
* each goal is planned with ``method`` (:mod:`ik_control.planning.pipeline`), shortcut
  and timed; the trajectory goes out on ``~/planned_trajectory``
  (trajectory_msgs/JointTrajectory, header stamp zero = start now), the tree and the
  path as RViz markers on ``~/markers`` (tool positions: LINE_LIST tree, LINE_STRIP
  path), and ``/diagnostics`` carries the outcome: OK with the figures, or ERROR with
  the reason (``start in collision``, ``goal out of reach``, ``timeout``, ``no joint
  state``, a refused message).
"""

from dataclasses import replace
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Point, PointStamped, PoseStamped
from ik_control import robots
from ik_control.planning.collision import CollisionChecker
from ik_control.planning.goal import WorkspaceGoal
from ik_control.planning.jt_rrt import GoalKinematics, RrtSettings
from ik_control.planning.obstacles import Obstacle, obstacles_from_yaml
from ik_control.planning.pipeline import METHODS, Planner
from ik_control.ros.conversions import arrays_to_joint_trajectory, joint_state_positions
from ik_control.ros.frame_resolver import FrameResolver
from ik_control.ros.ik_controller_parameters import read_srdf
from ik_control.ros.obstacle_markers import marker_shape
from ik_control.ros.parameters import declare_all, Param, run_node, StartupError
from ik_control.validation import (finite_vector, IkControlError, InputError,
                                   quaternion_to_matrix, unit_quaternion)
import numpy as np
import pinocchio as pin
from rclpy.node import Node
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import Marker, MarkerArray

NAME = 'jt_rrt_planner'
PARAMETERS = {
    'robot': Param('wam', 'bundled robot whose URDF and joints are planned (wam)'),
    'end_effector': Param('tool', 'frame that must reach the goal'),
    'method': Param('jt', 'search: jt (JT-RRT), bertram or rrt_connect'),
    'goal.threshold': Param(0.01, 'goal position threshold [m]', 1e-4, 1.0),
    'goal.rotation_threshold': Param(0.1, 'goal orientation threshold [rad]', 1e-3, 3.2),
    'time_limit': Param(5.0, 'planning time limit [s]', 0.01, 600.0),
    'min_progress': Param(0.002, 'JT-RRT sec. V: end a goal extension gaining less [m/step] '
                          "(the paper's Table I: 0)", 0.0, 0.1),
    'p_goal': Param(0.7, "JT-RRT's goal bias p_g, the chance of a goal extension [-] (the "
                    "paper's: 0.5)", 0.0, 1.0),
    'jt_step': Param(0.5, 'JT-RRT: largest joint change of one Jacobian-transpose step [rad] '
                     "(the paper's small step, read as 0.1)", 1e-3, 3.2),
    'escape_steps': Param(6, 'JT-RRT: random steps per goal extension after a colliding JT '
                          "step, not in the paper [-] (the paper's extension: 0)", 0, 100),
    'resolution': Param(0.02, 'largest robot-point travel between collision checks [m]',
                        1e-4, 0.2),
    'security_distance': Param(0.01, 'every checked pair stays this far apart along a plan, '
                               "as ik_controller's collision.security_distance, which then "
                               'never refuses it [m]', 0.0, 0.5),
    'collision_srdf_path': Param('config/wam.srdf', 'SRDF whose <disable_collisions> pairs '
                                 "are not checked, as ik_controller's collision.srdf_path "
                                 '(one collision model for both); empty = every pair'),
    'acceleration_limit': Param(5.0, 'joint acceleration limit of the trajectory [rad/s^2]',
                                1e-3, 1e3),
    'seed': Param(-1, 'random seed of the planner (-1: a new one per goal)', -1, 2 ** 31 - 1),
    'execute': Param(False, 'also send each plan to the controller (execute_topic) to run it'),
    'execute_topic': Param('ik_controller/joint_trajectory', "topic of ik_controller's "
                           'joint-trajectory input (one node commands the robot)'),
    'obstacles': Param('[]', 'YAML list of {name, type, size, position, rpy} in the base '
                       'frame [m, rad]'),
}
#: the start-up plan that compiles the planner's kernels may take this long [s]
WARM_UP_TIME_LIMIT = 120.0
#: ... and grow a tree of at most this many nodes
WARM_UP_NODES = 500
MAX_OBSTACLES = 256      # markers kept at most (each adds a collision pair per robot shape)


class JtRrtPlannerNode(Node):
    """The planner node (module docstring)."""

    def __init__(self, **kwargs):
        super().__init__(NAME, **kwargs)
        self.values = declare_all(self, PARAMETERS)
        v = self.values
        try:
            if v['method'] not in METHODS:
                raise InputError(f"method must be one of {list(METHODS)}, not '{v['method']}'")
            self.model = robots.robot(v['robot'])
            try:
                self.fixed = obstacles_from_yaml(v['obstacles'], 'param')
            except InputError as exc:
                raise InputError(f'obstacles: {exc}') from None
            self.settings = RrtSettings(time_limit=v['time_limit'],
                                        min_progress=v['min_progress'], p_goal=v['p_goal'],
                                        jt_step=v['jt_step'],
                                        escape_steps=v['escape_steps'])
            self.checker = CollisionChecker(
                self.model, self.fixed, v['resolution'],
                security_distance=v['security_distance'],
                srdf=read_srdf(v['collision_srdf_path'], 'collision_srdf_path') or None)
        except IkControlError as exc:
            raise StartupError(str(exc)) from None
        self.markers = {}
        self.q = None
        # goal and marker frames: other model frames at the measured state, tf2 beyond
        self.frames = FrameResolver(self.model, self, lambda: self.q)
        self.plans = 0
        self.pub_traj = self.create_publisher(JointTrajectory, '~/planned_trajectory', 10)
        self.pub_execute = (self.create_publisher(JointTrajectory, self.values['execute_topic'],
                                                  10) if self.values['execute'] else None)
        self.pub_markers = self.create_publisher(MarkerArray, '~/markers', 10)
        self.pub_diag = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self.create_subscription(JointState, 'joint_states', self._on_state, 10)
        self.create_subscription(PoseStamped, '~/goal', self._on_pose, 10)
        for topic in ('~/goal_point', '~/goal_position'):
            self.create_subscription(PointStamped, topic, self._on_point, 10)
        self.create_subscription(MarkerArray, '~/obstacles', self._on_obstacles, 10)
        try:
            self._compile_kernels()
        except IkControlError as exc:  # e.g. an end_effector the model lacks
            raise StartupError(str(exc)) from None

    def _compile_kernels(self):
        """
        Plan once, off the record, so the first goal's plan compiles nothing.

        The planner's kernels are compiled on their first call and cached by numba. On the
        first start after an install or a change of the package (the cache is keyed by the
        package's content) that took 13.5 s on this project's 2-core machine, inside the
        first goal's ``time_limit``: the first goal ended ``timeout``. Here it is spent at
        start, said in the log when it is long; from the cache it takes milliseconds. The
        plan: from the middle of the joint ranges to the tool's position 0.3 rad away in
        every joint, among the fixed obstacles, with a time limit of its own and at most
        ``WARM_UP_NODES`` nodes (a goal the obstacles block ends there, not after minutes).
        """
        t0 = time.perf_counter()
        q0 = self.model.center
        q1 = np.clip(q0 + 0.3, self.model.lower, self.model.upper)
        frame = self.values['end_effector']
        goal = WorkspaceGoal(GoalKinematics(self.model, frame).placement(q1)[:3, 3], None,
                             threshold=self.values['goal.threshold'], frame=frame)
        planner = Planner(self.model, self.checker,
                          replace(self.settings, time_limit=WARM_UP_TIME_LIMIT,
                                  max_nodes=WARM_UP_NODES),
                          acceleration_limit=self.values['acceleration_limit'])
        planner.plan(q0, goal, np.random.default_rng(0), self.values['method'])
        spent = time.perf_counter() - t0
        if spent > 1.0:
            self.get_logger().info(f'planning kernels compiled in {spent:.1f} s (once after '
                                   'an install or update; then taken from the cache)')

    # ------------------------------------------------------------------ inputs
    def _on_state(self, msg):
        q = joint_state_positions(msg, self.model.joint_names)
        if q is not None:
            self.q = q

    def _on_pose(self, msg):
        try:
            p, o = msg.pose.position, msg.pose.orientation
            T = np.eye(4)
            T[:3, 3] = finite_vector([p.x, p.y, p.z], 3, 'goal position')
            T[:3, :3] = quaternion_to_matrix(unit_quaternion([o.x, o.y, o.z, o.w],
                                                             'goal orientation'))
            T = self.frames.to_base(msg.header.frame_id, T, msg.header.stamp)
            self._plan(T[:3, 3], T[:3, :3])
        except IkControlError as exc:
            self._report(DiagnosticStatus.ERROR, f'goal refused: {exc}')

    def _on_point(self, msg):
        try:
            T = np.eye(4)
            p = msg.point
            T[:3, 3] = finite_vector([p.x, p.y, p.z], 3, 'goal position')
            self._plan(self.frames.to_base(msg.header.frame_id, T, msg.header.stamp)[:3, 3], None)
        except IkControlError as exc:
            self._report(DiagnosticStatus.ERROR, f'goal refused: {exc}')

    def _on_obstacles(self, msg):
        for marker in msg.markers:
            key = (marker.ns, marker.id)
            try:
                if marker.action == Marker.DELETEALL:
                    self.markers.clear()
                elif marker.action == Marker.DELETE:
                    self.markers.pop(key, None)
                elif marker.action == Marker.ADD:
                    if key not in self.markers and len(self.markers) >= MAX_OBSTACLES:
                        raise InputError(f'already {MAX_OBSTACLES} obstacles')
                    self.markers[key] = self._marker_obstacle(marker)
                else:
                    raise InputError(f'unknown marker action {marker.action}')
            except IkControlError as exc:
                self._report(DiagnosticStatus.WARN, f"obstacle '{marker.ns}' {marker.id} "
                             f'refused: {exc}')
        try:
            self.checker.set_obstacles(self.fixed + list(self.markers.values()))
        except IkControlError as exc:
            self._report(DiagnosticStatus.ERROR, f'obstacles refused: {exc}')

    def _marker_obstacle(self, marker):
        shape, T, scale = marker_shape(marker)
        T = self.frames.to_base(marker.header.frame_id, T, marker.header.stamp)
        scale = finite_vector(scale, 3, 'scale')
        size = {'box': tuple(scale), 'sphere': (0.5 * scale.max(),),
                'cylinder': (0.5 * max(scale[0], scale[1]), scale[2])}[shape]
        return Obstacle(f'{marker.ns}/{marker.id}', shape, size, T)

    # ------------------------------------------------------------------ planning
    def _plan(self, position, rotation):
        v = self.values
        if self.q is None:
            self._report(DiagnosticStatus.ERROR, 'no joint state received: cannot plan')
            return
        goal = WorkspaceGoal(position, rotation, threshold=v['goal.threshold'],
                             rotation_threshold=v['goal.rotation_threshold'],
                             frame=v['end_effector'])
        reach, shoulder = self._reach()
        if np.linalg.norm(position - shoulder) > reach + goal.threshold:
            self._report(DiagnosticStatus.ERROR, 'goal out of reach: '
                         f'{np.linalg.norm(position - shoulder):.3f} m from the first joint, '
                         f'reach {reach:.3f} m')
            return
        seed = v['seed'] if v['seed'] >= 0 else None
        planner = Planner(self.model, self.checker, self.settings,
                          acceleration_limit=v['acceleration_limit'])
        q0 = np.clip(self.q, self.model.lower, self.model.upper)
        plan = planner.plan(q0, goal, np.random.default_rng(seed), v['method'])
        r = plan.result
        self.plans += 1
        self._publish_markers(planner, r.tree, plan.path, goal)
        stats = {k: str(getattr(r.stats, k)) for k in ('nodes', 'random_extensions',
                                                       'goal_extensions', 'collision_checks',
                                                       'joint_limit_hits')}
        stats['seconds'] = f'{r.stats.seconds:.3f}'
        if not plan.success:
            reason = r.reason
            if reason == 'start in collision':
                pair = self.checker.colliding_pair(q0)
                reason += f' ({pair[0]} / {pair[1]})' if pair else ''
            self._report(DiagnosticStatus.ERROR, f'planning failed: {reason}', stats)
            return
        traj = plan.trajectory
        msg = arrays_to_joint_trajectory(traj.joint_names, traj.times, traj.positions,
                                         traj.velocities, 0.0, self.model.base_frame)
        self.pub_traj.publish(msg)
        if self.pub_execute is not None:
            self.pub_execute.publish(msg)
        stats.update(duration=f'{traj.duration:.3f}', waypoints=str(len(plan.path)),
                     position_error_m=f'{r.position_error:.4f}')
        self._report(DiagnosticStatus.OK, 'trajectory published', stats)

    def _reach(self):
        """Return the reach bound [m] and the first joint's origin (base frame) it holds from."""
        pm, data = self.model.pin_model, self.model.pin_data
        pin.forwardKinematics(pm, data, self.model.tree_configuration(self.model.center))
        origin = (self.model.base_inv @ np.append(data.oMi[1].translation, 1.0))[:3]
        fid = self.model._frame_id(self.values['end_effector'])
        j = pm.frames[fid].parentJoint
        reach = float(np.linalg.norm(pm.frames[fid].placement.translation))
        while j > 1:
            reach += float(np.linalg.norm(pm.jointPlacements[j].translation))
            j = pm.parents[j]
        return reach, origin

    def _publish_markers(self, planner, tree, path, goal):
        kin = planner.workspace.kinematics(goal.frame)
        stamp = self.get_clock().now().to_msg()
        out = MarkerArray()
        edges = Marker(ns='tree', id=0, type=Marker.LINE_LIST, action=Marker.ADD)
        line = Marker(ns='path', id=0, type=Marker.LINE_STRIP, action=Marker.ADD)
        for m, width, rgb in ((edges, 0.003, (0.5, 0.5, 0.5)), (line, 0.01, (0.1, 0.3, 1.0))):
            m.header.frame_id = self.model.base_frame
            m.header.stamp = stamp
            m.pose.orientation.w = 1.0
            m.scale.x = width
            m.color.r, m.color.g, m.color.b, m.color.a = (*rgb, 1.0)
        tip = [kin.placement(q)[:3, 3].copy() for q in tree.q[:min(tree.size, 20000)]]
        for i in range(1, len(tip)):
            a, b = tip[tree.parent[i]], tip[i]
            edges.points.extend([Point(x=a[0], y=a[1], z=a[2]), Point(x=b[0], y=b[1], z=b[2])])
        for q in path:
            p = kin.placement(q)[:3, 3]
            line.points.append(Point(x=p[0], y=p[1], z=p[2]))
        out.markers = [edges, line]
        self.pub_markers.publish(out)

    def _report(self, level, message, values=None):
        if level != DiagnosticStatus.OK:
            self.get_logger().warning(message)
        status = DiagnosticStatus(level=level, name=f'{NAME}: planner', message=message)
        status.values = [KeyValue(key=k, value=str(x)) for k, x in (values or {}).items()]
        status.values.append(KeyValue(key='plans', value=str(self.plans)))
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self.get_clock().now().to_msg()
        self.pub_diag.publish(msg)


def main(args=None):
    """Entry point of the ``jt_rrt_planner`` executable."""
    return run_node(NAME, JtRrtPlannerNode, args)


if __name__ == '__main__':
    raise SystemExit(main() or 0)

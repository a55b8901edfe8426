"""
``ik_viewer``: the robot live in a browser, and its goals dragged there.

Serves :class:`~ik_control.view.scene.RobotScene` (viser) on ``http://host:port/``
(default ``http://127.0.0.1:8080/``) and connects it to one ``ik_controller`` (parameter
``controller``, in this node's namespace). ``E`` is each frame in ``end_effectors``:

* subscribes ``joint_states`` (the robot, drawn at ``rate_hz``: only the newest message
  is read), ``<controller>/markers`` (each effector's goal and target, the obstacles the
  controller knows, the closest collision pair: the controller publishes them at its
  ``diagnostics_rate``), ``<controller>/status`` and ``<controller>/E/goal_state``
  (latched: the status flags and goal states, as text);
* publishes ``<controller>/E/target_pose`` when a goal gizmo is dropped (the
  interactive-marker workflow), ``<controller>/E/velocity_profile`` and
  ``<controller>/E/target_path`` when a motion is played (:mod:`ik_control.view.motions`);
* calls ``<controller>/hold`` and ``<controller>/resume`` from its buttons.

The robot's parameters (``robot_description`` or ``urdf_path``, ``base_frame``,
``end_effectors``, ``joints``) are the controller's. The page binds to 127.0.0.1 unless
``host`` says otherwise; a port already taken stops the node at start with one line.
It commands nothing itself: every action goes through the controller's own topics and
services, checked there as any other client's.
"""

import socket
import threading

from geometry_msgs.msg import PoseStamped
from ik_control.control.goal_state import EventQueue, GoalState
from ik_control.control.robot_link import RobotLink
from ik_control.control.status import names as status_names
from ik_control.launch_util import node_parameters, VIEWER_ROBOT
from ik_control.ros.cdr import JointStateReader
from ik_control.ros.conversions import pose_stamped, pose_to_matrix
from ik_control.ros.ik_controller_parameters import load_model, PARAMETERS as CONTROLLER
from ik_control.ros.parameters import declare_all, Param, run_node, StartupError
from ik_control.validation import IkControlError
from ik_control.view.motions import motion_catalogue
from nav_msgs.msg import Path
import numpy as np
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import String, UInt32, UInt8
from std_srvs.srv import Trigger
from visualization_msgs.msg import Marker, MarkerArray

NODE_NAME = 'ik_viewer'
LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
PARAMETERS = {
    **{name: CONTROLLER[name] for name in VIEWER_ROBOT},
    'controller': Param(
        'ik_controller', 'Name of the ik_controller node shown and driven (in this '
                         "node's namespace)."),
    'host': Param('127.0.0.1', 'Address the page is served on (127.0.0.1: this machine '
                               'only; 0.0.0.0: every interface).'),
    'port': Param(8080, 'TCP port of the page.', lo=1, hi=65535),
    'rate_hz': Param(30.0, 'How often the robot is redrawn [Hz].', lo=1.0, hi=120.0),
}
_SHAPES = {Marker.SPHERE: 'sphere', Marker.CUBE: 'box', Marker.CYLINDER: 'cylinder'}


def check_port(host, port):
    """Raise :class:`StartupError` if ``host:port`` cannot be bound (taken, or no address)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # as a server binds: a closed connection's TIME_WAIT does not count, a listener does
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise StartupError(f'cannot serve the page on {host}:{port}: {exc.strerror} '
                               '(another viewer? choose another port: -p port:=8081)') from None


class ViewerNode(Node):
    """The ``ik_viewer`` node (module docstring)."""

    def __init__(self, **kwargs):
        """Declare and check parameters, load the model, serve the page, subscribe."""
        super().__init__(NODE_NAME, **kwargs)
        values = declare_all(self, PARAMETERS)
        self.model = load_model(values)
        check_port(values['host'], values['port'])
        from ik_control.view.scene import RobotScene  # the optional extra

        ctl = values['controller']
        self.effectors = list(self.model.end_effector_names)
        self.motions = motion_catalogue(self.effectors)
        try:
            self.scene = RobotScene(self.model, values['host'], values['port'],
                                    handlers={'goal': self.send_goal, 'hold': self._hold,
                                              'resume': self._resume,
                                              'motion': self.play_motion},
                                    motions=list(self.motions))
        except (IkControlError, OSError) as exc:
            raise StartupError(f'cannot serve the page: {exc}') from None
        self.lock = threading.Lock()  # the page's callbacks come from viser's thread
        self._link = RobotLink(self.model, EventQueue())
        self._reader = JointStateReader()
        self._raw_state = None
        self.q = None  # the robot's latest positions, in the model's joint order
        self._goals = [None] * len(self.effectors)
        self._targets = [None] * len(self.effectors)
        self._status = 'waiting for joint_states'
        self._goal_states = ['NONE'] * len(self.effectors)
        self._closest = ''
        self.create_subscription(JointState, 'joint_states', self._on_state, 1, raw=True)
        self.create_subscription(MarkerArray, f'{ctl}/markers', self._on_markers, 10)
        self.create_subscription(UInt32, f'{ctl}/status', self._on_status, LATCHED)
        self.pose_pub, self.profile_pub, self.path_pub = {}, {}, {}
        for i, ee in enumerate(self.effectors):
            self.create_subscription(UInt8, f'{ctl}/{ee}/goal_state',
                                     lambda msg, i=i: self._on_goal_state(i, msg), LATCHED)
            self.pose_pub[ee] = self.create_publisher(PoseStamped, f'{ctl}/{ee}/target_pose', 10)
            self.profile_pub[ee] = self.create_publisher(String,
                                                         f'{ctl}/{ee}/velocity_profile', 10)
            self.path_pub[ee] = self.create_publisher(Path, f'{ctl}/{ee}/target_path', 10)
        self._hold_client = self.create_client(Trigger, f'{ctl}/hold')
        self._resume_client = self.create_client(Trigger, f'{ctl}/resume')
        self.create_timer(1.0 / values['rate_hz'], self._draw)
        self.get_logger().info(f"serving '{self.model.name}' on {self.scene.url} "
                               f"(controller '{ctl}')")

    # ------------------------------------------------------------------ topics in
    def _on_state(self, raw):
        self._raw_state = raw  # read when drawn: only the newest counts

    def _on_markers(self, msg):
        goals, targets = [None] * len(self.effectors), [None] * len(self.effectors)
        obstacles, closest = [], ''
        for m in msg.markers:
            if m.action != Marker.ADD:
                continue
            if m.ns in ('goal', 'target') and 0 <= m.id < len(self.effectors):
                (goals if m.ns == 'goal' else targets)[m.id] = pose_to_matrix(m.pose, m.ns)
            elif m.ns == 'obstacles' and m.type in _SHAPES:
                obstacles.append((_SHAPES[m.type], pose_to_matrix(m.pose, 'obstacle'),
                                  (m.scale.x, m.scale.y, m.scale.z)))
            elif m.ns == 'collision':
                closest = m.text.replace('closest pair: ', '')
        with self.lock:
            self._goals, self._targets, self._closest = goals, targets, closest
        self.scene.show_goals(goals, targets)
        self.scene.show_obstacles(obstacles)

    def _on_status(self, msg):
        flags = status_names(msg.data)
        self._status = ', '.join(flags) if flags else 'ok'

    def _on_goal_state(self, i, msg):
        try:
            self._goal_states[i] = GoalState(msg.data).name
        except ValueError:
            self._goal_states[i] = str(msg.data)

    def _draw(self):
        """Draw the newest joint_states and the panel's text (the timer, ``rate_hz``)."""
        raw, self._raw_state = self._raw_state, None
        if raw is not None:
            try:
                _, names, positions = self._reader.read(raw)
                q = self._link.positions(names, positions)
            except (IkControlError, ValueError):
                q = None  # not this robot's, or malformed: the controller says why
            if q is not None:
                with self.lock:
                    self.q = q.copy()
                self.scene.show_state(q)
                self.scene.place_gizmos(self.model.frame_placements(q))
        goals = ', '.join(f'{ee} {state}'
                          for ee, state in zip(self.effectors, self._goal_states))
        self.scene.show_text(self._status, goals, self._closest)

    # ------------------------------------------------------------------ the page's actions
    def send_goal(self, ee, T):
        """Send ``ee`` a pose goal ``T`` (4x4, base frame) on the controller's topic."""
        self.pose_pub[ee].publish(pose_stamped(T, self.model.base_frame))
        where = np.array2string(T[:3, 3], precision=3)
        self.get_logger().info(f"goal for '{ee}' from the page: {where} m")

    def play_motion(self, name, ee):
        """Play the motion ``name`` of the catalogue with ``ee``."""
        kind, data = self.motions[name]
        if kind == 'profile':
            self.profile_pub[ee].publish(String(data=name))
        else:
            msg = Path()
            msg.header.frame_id = self.model.base_frame  # stamp zero: times from now
            for t, T in zip(data.times, data.poses):
                pose = pose_stamped(T, self.model.base_frame)
                pose.header.stamp.sec = int(t)
                pose.header.stamp.nanosec = int(round((t - int(t)) * 1e9))
                msg.poses.append(pose)
            self.path_pub[ee].publish(msg)
        self.get_logger().info(f"motion '{name}' for '{ee}' from the page")

    def _hold(self):
        self._hold_client.call_async(Trigger.Request())

    def _resume(self):
        self._resume_client.call_async(Trigger.Request())

    def destroy_node(self):
        """Stop serving the page, then destroy the node."""
        scene = getattr(self, 'scene', None)
        if scene is not None:
            scene.close()
        return super().destroy_node()


def robot_arguments(robot=None, params_file=None, urdf=None, base=None, tips=()):
    """
    Return the ``--ros-args`` that give the viewer a robot (parameters ``-p name:=value``).

    ``robot``: a bundled robot (its URDF and set-up); ``params_file``: a parameter file
    whose ``ik_controller`` section names the robot (what ``ik_control setup`` writes;
    ``urdf`` then if the file names none); else ``urdf``, ``base`` and ``tips`` (the
    end effectors).
    """
    from ik_control import robots

    if robot is not None:
        setup = robots.SETUPS[robot]
        values = {'urdf_path': robots.urdf_path(robot), 'base_frame': setup.base_frame,
                  'end_effectors': list(setup.end_effectors), 'joints': list(setup.joints)}
    elif params_file is not None:
        section = node_parameters(params_file, 'ik_controller')
        values = {k: section[k] for k in VIEWER_ROBOT
                  if section.get(k) not in (None, '', [])}
        if urdf is not None and not values.get('robot_description'):
            values['urdf_path'] = urdf
    else:
        values = {'urdf_path': urdf, 'base_frame': base or '', 'end_effectors': list(tips)}
    out = []
    for name, value in values.items():
        if value in (None, ''):
            continue
        text = f"[{', '.join(map(str, value))}]" if isinstance(value, list) else str(value)
        out += ['-p', f'{name}:={text}']
    return out


def main(args=None):
    """Entry point of ``ros2 run ik_control ik_viewer``."""
    import sys

    sys.exit(run_node(NODE_NAME, ViewerNode, args=args))


if __name__ == '__main__':
    main()

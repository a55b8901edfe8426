"""
The browser scene of ``ik_control view``: the robot, its goals and its scene, in viser.

Without rclpy: :class:`RobotScene` is given joint positions, goals, targets, obstacles
and status text, and calls its ``handlers`` when the person at the page drags a goal
gizmo, presses hold or resume, or plays a motion (:mod:`ik_control.ros.viewer_node`
connects both to the topics). Everything is drawn in the controller's base frame
(REP 105, m):

* the robot: the URDF's ``<visual>`` shapes (its ``<collision>`` shapes where it has no
  visuals), boxes, spheres, cylinders, capsules and meshes as pinocchio and coal load
  them (the package's own model: the frames the controller uses, meshes through
  ``package://`` as for the collision model), placed by forward kinematics: one scene
  node per joint, the shapes under it at their fixed placements, so a state costs one
  transform per moving joint;
* each end effector's goal (axes, 0.1 m) and current target (a blue sphere), a gizmo
  at the effector that sends a pose goal where it is dropped;
* the obstacles the controller knows (translucent red, their exact shapes);
* a panel: status flags and goal states as text, the closest collision pair, hold and
  resume buttons, a motion selector, and each joint's position against its limits as a
  bar (a read-only slider).

viser serves the page (a three.js client shipped in its wheel, no network needed) on
``http://host:port/``; :func:`default_camera` is the view a page opens with.
"""

import math
import time

from ik_control.collision.model import default_package_dirs
from ik_control.collision.shapes import scene_geometry
import numpy as np
import pinocchio as pin

__all__ = ['default_camera', 'RobotScene', 'visual_geometry']

ROBOT_COLOUR = (175, 180, 195)  # shapes without a URDF colour (RGB 0-255)
TARGET_COLOUR = (25, 75, 255)
OBSTACLE_COLOUR = (230, 30, 30)
OBSTACLE_OPACITY = 0.5
GOAL_AXES = 0.1    # goal axes length [m]
TARGET_RADIUS = 0.015  # [m]
GIZMO_SCALE = 0.15  # [m]
FOV = math.radians(50.0)  # the page's vertical field of view [rad]
BAR_PERIOD = 0.1  # the joint bars move at most this often [s]


def visual_geometry(model, package_dirs=()):
    """
    Return the visual shapes of ``model`` (a RobotModel from a URDF) as a GeometryModel.

    The URDF's ``<visual>`` shapes; its ``<collision>`` shapes where it has no visuals.
    """
    dirs = default_package_dirs(package_dirs)
    gm = pin.buildGeomFromUrdfString(model.pin_model, model.urdf_xml, pin.GeometryType.VISUAL,
                                     package_dirs=dirs)
    if len(gm.geometryObjects) == 0:
        gm = pin.buildGeomFromUrdfString(model.pin_model, model.urdf_xml,
                                         pin.GeometryType.COLLISION, package_dirs=dirs)
    return gm


def default_camera(points):
    """
    Return ``(position, look_at)`` [m] of a view of ``points`` (N x 3, base frame).

    From the front right and above (+x, -y, +z), far enough that a sphere around the
    points fits the vertical field of view :data:`FOV`.
    """
    points = np.asarray(points, dtype=float).reshape(-1, 3)
    centre = 0.5 * (points.min(axis=0) + points.max(axis=0))
    radius = max(float(np.max(np.linalg.norm(points - centre, axis=1))), 0.3)
    direction = np.array([1.0, -0.8, 0.5])
    distance = 1.6 * radius / math.sin(0.5 * FOV)
    return centre + distance * direction / np.linalg.norm(direction), centre


def _wxyz(T):
    q = pin.Quaternion(np.asarray(T)[:3, :3])
    return np.array([q.w, q.x, q.y, q.z])


def _colour(geometry_object):
    rgba = np.asarray(geometry_object.meshColor, dtype=float)
    if rgba.shape != (4,) or np.allclose(rgba[:3], rgba[0]):  # none given (pinocchio's grey)
        return ROBOT_COLOUR
    return tuple(int(round(255 * c)) for c in np.clip(rgba[:3], 0.0, 1.0))


def add_shape(scene, name, geometry, colour, opacity=None, T=None):
    """
    Add one coal ``geometry`` to the viser ``scene`` as node ``name`` (at ``T``, 4x4).

    Boxes, spheres, cylinders and capsules (along their z axis) as such; meshes as
    their triangles. Returns the node's handle, or None for a kind it cannot draw.
    """
    place = {} if T is None else {'wxyz': _wxyz(T), 'position': np.asarray(T)[:3, 3]}
    style = {'color': colour, 'opacity': opacity}
    kind = type(geometry).__name__
    if kind == 'Box':
        return scene.add_box(name, dimensions=2.0 * np.asarray(geometry.halfSide), **style,
                             **place)
    if kind == 'Sphere':
        return scene.add_icosphere(name, radius=float(geometry.radius), **style, **place)
    if kind in ('Cylinder', 'Capsule'):
        handle = scene.add_cylinder(name, radius=float(geometry.radius),
                                    height=2.0 * float(geometry.halfLength), **style, **place)
        if kind == 'Capsule':
            for end, z in (('a', 1.0), ('b', -1.0)):
                scene.add_icosphere(f'{name}/{end}', radius=float(geometry.radius),
                                    position=(0.0, 0.0, z * float(geometry.halfLength)),
                                    **style)
        return handle
    if kind.startswith('BVHModel') or kind.startswith('Convex'):
        vertices = np.array(geometry.vertices(), dtype=float).reshape(-1, 3)
        triangles = geometry.tri_indices() if hasattr(geometry, 'tri_indices') else []
        faces = np.array([[t[0], t[1], t[2]] for t in triangles], dtype=np.int32).reshape(-1, 3)
        if not len(faces):
            return None
        return scene.add_mesh_simple(name, vertices, faces, **style, **place)
    return None


class RobotScene:
    """
    The live scene of one robot (module docstring).

    ``model``: the controller's RobotModel (from a URDF); ``handlers``: callables
    ``goal(ee, T)`` (a dropped gizmo: 4x4 pose in the base frame), ``hold()``,
    ``resume()``, ``motion(name, ee)``, each optional; ``motions``: the names the motion
    selector offers.
    """

    def __init__(self, model, host='127.0.0.1', port=8080, handlers=None, motions=(),
                 package_dirs=()):
        import viser  # the optional extra: only the viewer needs it

        self.model = model
        self.handlers = dict(handlers or {})
        self.server = viser.ViserServer(host=host, port=port, verbose=False)
        self.url = f'http://{host}:{self.server.get_port()}/'
        scene = self.server.scene
        scene.set_up_direction('+z')
        self._data = model.pin_model.createData()
        self._build_robot(visual_geometry(model, package_dirs))
        q0 = model.center.copy()
        self._place(q0)
        self.points = self.initial_points = self._link_points()
        position, look_at = default_camera(self.initial_points)
        camera = self.server.initial_camera
        camera.position, camera.look_at, camera.up, camera.fov = (position, look_at,
                                                                  (0.0, 0.0, 1.0), FOV)
        self._ee = list(model.end_effector_names)
        self.goals = {ee: scene.add_frame(f'/goal/{ee}', axes_length=GOAL_AXES,
                                          axes_radius=0.006, visible=False)
                      for ee in self._ee}
        self.targets = {ee: scene.add_icosphere(f'/target/{ee}', radius=TARGET_RADIUS,
                                                color=TARGET_COLOUR, visible=False)
                        for ee in self._ee}
        self.gizmos = {}
        self._dragging = set()  # effectors whose gizmo the page is dragging
        self._goal_keys = {}  # the goal each gizmo was last put at
        self._obstacles = []
        self._obstacle_key = None
        self._build_panel(motions)

    # ------------------------------------------------------------------ the robot
    def _build_robot(self, gm):
        scene = self.server.scene
        scene.add_frame('/robot', show_axes=False, wxyz=_wxyz(self.model.base_inv),
                        position=self.model.base_inv[:3, 3])
        self._joints = sorted({int(g.parentJoint) for g in gm.geometryObjects} - {0})
        self._joint_nodes = {j: scene.add_frame(f'/robot/j{j}', show_axes=False)
                             for j in self._joints}
        for k, g in enumerate(gm.geometryObjects):
            parent = f'/robot/j{g.parentJoint}' if g.parentJoint else '/robot'
            add_shape(scene, f'{parent}/g{k}', g.geometry, _colour(g), T=g.placement.homogeneous)

    def _place(self, q):
        """Forward kinematics of controlled positions ``q``: the joints' placements (root)."""
        pin.forwardKinematics(self.model.pin_model, self._data, self.model.tree_configuration(q))

    def _link_points(self):
        """Return the moving joints' origins [m] in the base frame (N x 3)."""
        o = np.array([self._data.oMi[j].translation for j in range(self.model.pin_model.njoints)])
        return (o @ self.model.base_inv[:3, :3].T) + self.model.base_inv[:3, 3]

    def show_state(self, q):
        """Draw the robot at controlled joint positions ``q`` [rad or m]; move the bars."""
        self._place(q)
        with self.server.atomic():
            for j, node in self._joint_nodes.items():
                M = self._data.oMi[j]
                node.position = M.translation
                node.wxyz = _wxyz(M.rotation)
            now = time.monotonic()
            if now - self._bars_time >= BAR_PERIOD:
                self._bars_time = now
                for bar, value in zip(self._bars, q):
                    bar.value = float(value)
        self.points = self._link_points()

    def place_gizmos(self, poses):
        """Put a goal gizmo at each end effector's pose (4x4, base frame), once each."""
        for ee, T in zip(self._ee, poses):
            if ee in self.gizmos:
                continue
            gizmo = self.server.scene.add_transform_controls(
                f'/gizmo/{ee}', scale=GIZMO_SCALE, wxyz=_wxyz(T), position=T[:3, 3],
                depth_test=False)
            gizmo.on_drag_start(lambda event, ee=ee: self._dragging.add(ee))
            gizmo.on_drag_end(lambda event, ee=ee: self._dropped(ee))
            self.gizmos[ee] = gizmo

    def _dropped(self, ee):
        self._dragging.discard(ee)
        self.gizmo_dropped(ee)

    def gizmo_dropped(self, ee):
        """Send the pose of ``ee``'s gizmo as a goal: its callback when the page drops it."""
        gizmo = self.gizmos[ee]
        w, x, y, z = gizmo.wxyz
        T = np.eye(4)
        T[:3, :3] = pin.Quaternion(w, x, y, z).normalized().toRotationMatrix()
        T[:3, 3] = gizmo.position
        handler = self.handlers.get('goal')
        if handler is not None:
            handler(ee, T)
        return T

    # ------------------------------------------------------------------ goals and scene
    def show_goals(self, goals, targets):
        """
        Draw each effector's goal and target (4x4 each, base frame; None hides it).

        A goal that changed (sent by anyone) takes the effector's gizmo with it, unless
        the person at the page is dragging it.
        """
        with self.server.atomic():
            for ee, goal, target in zip(self._ee, goals, targets):
                for node, T in ((self.goals[ee], goal), (self.targets[ee], target)):
                    node.visible = T is not None
                    if T is not None:
                        node.position, node.wxyz = T[:3, 3], _wxyz(T)
                gizmo = self.gizmos.get(ee)
                key = None if goal is None else np.round(goal, 6).tobytes()
                if gizmo is not None and key != self._goal_keys.get(ee) and goal is not None \
                        and ee not in self._dragging:
                    gizmo.position, gizmo.wxyz = goal[:3, 3], _wxyz(goal)
                self._goal_keys[ee] = key

    def show_obstacles(self, obstacles):
        """
        Draw the obstacles: ``(kind, T, size)``, kind sphere, box or cylinder, size [m].

        Each as the controller measures it (``collision.shapes.scene_geometry`` of its
        marker), at its pose ``T`` (4x4, base frame).
        """
        key = [(kind, np.round(T, 6).tobytes(), tuple(np.round(size, 6)))
               for kind, T, size in obstacles]
        if key == self._obstacle_key:
            return
        self._obstacle_key = key
        for handle in self._obstacles:
            handle.remove()
        self._obstacles = []
        for k, (kind, T, size) in enumerate(obstacles):  # the shape the controller checks
            self._obstacles.append(add_shape(self.server.scene, f'/obstacles/o{k}',
                                             scene_geometry(kind, size), OBSTACLE_COLOUR,
                                             OBSTACLE_OPACITY, T))

    @property
    def text(self):
        """Return the panel's text as the page shows it (markdown)."""
        return self._text.content

    def show_text(self, status, goals, closest):
        """Show the status flags, the goal states and the closest pair (strings)."""
        text = f'**status:** {status}\n\n**goals:** {goals}'
        if closest:
            text += f'\n\n**closest pair:** {closest}'
        if text != self._text.content:
            self._text.content = text

    # ------------------------------------------------------------------ the panel
    def _build_panel(self, motions):
        gui = self.server.gui
        gui.configure_theme(control_width='large')
        self._text = gui.add_markdown('**status:** waiting for joint_states')
        hold = gui.add_button('Hold')
        resume = gui.add_button('Resume')
        hold.on_click(lambda _: self.press('hold'))
        resume.on_click(lambda _: self.press('resume'))
        self._motion = self._motion_ee = None
        if motions:
            with gui.add_folder('Motions'):
                self._motion = gui.add_dropdown('motion', tuple(motions))
                self._motion_ee = gui.add_dropdown('end effector', tuple(self._ee))
                play = gui.add_button('Play')
                play.on_click(lambda _: self.press('motion', self._motion.value,
                                                   self._motion_ee.value))
        model = self.model
        self._bars, self._bars_time = [], -math.inf
        with gui.add_folder('Joints'):
            for name, lo, hi, value in zip(model.joint_names, model.lower, model.upper,
                                           model.center):
                self._bars.append(gui.add_slider(name, min=float(lo), max=float(hi),
                                                 step=1e-3, initial_value=float(value),
                                                 disabled=True))

    def press(self, name, *args):
        """Run the handler ``name`` as the panel's button does (hold, resume, motion)."""
        handler = self.handlers.get(name)
        if handler is not None:
            handler(*args)

    def close(self):
        """Stop serving the page."""
        self.server.stop()

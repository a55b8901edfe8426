"""
Collision checking of configurations and motion segments with pinocchio + coal.

The robot's shapes are the ``<collision>`` elements of its URDF (for the bundled WAM:
boxes, cylinders and spheres on every link), read into a pinocchio ``GeometryModel``;
obstacles (:mod:`ik_control.planning.obstacles`) are added to it on the universe joint.
Pairs checked:

* self collision: every two robot shapes on different links that are not adjacent in
  the kinematic tree (a joint's own link and its parent's link touch by construction) and
  not both fixed;
* environment: every shape moved by a controlled joint against every obstacle. Shapes no
  controlled joint moves (the base housing) are checked against the obstacles once, when
  the obstacles are set: an overlap there is an error, no configuration could avoid it.

**Clearance and segment resolution.** A configuration is free when every checked pair is
more than ``clearance = resolution / 2`` apart (coal's ``security_margin``). A straight
segment ``q0 -> q1`` in joint space is sampled at ``n`` configurations such that no
point of the robot moves more than ``resolution`` [m] between two consecutive samples:
a point carried by the subtree of revolute joint ``i`` moves at most ``r_i |dq_i|`` when
joint ``i`` turns by ``dq_i``, where ``r_i`` bounds its distance from the joint's origin
(the lengths of the joint-to-joint offsets down the chain plus the offset and bounding
radius of the shape), so along the segment every point travels at most
``L = sum_i r_i |q1_i - q0_i|`` (prismatic joints: ``r_i = 1``), and
``n = ceil(L / resolution)`` steps bound each step's travel by ``resolution``. Every
point of the swept motion then lies within ``resolution / 2`` of the same point at a
checked sample, where the clearance is larger than that: nothing tunnels through,
however thin the obstacle.
"""

import math

from ik_control.planning.obstacles import Obstacle
from ik_control.validation import InputError, ModelError
import numpy as np
import pinocchio as pin

DEFAULT_RESOLUTION = 0.02   # largest link-point travel between checked samples [m]


def _bounding_radius(geometry):
    """Radius [m] of a sphere about the shape's origin that holds the coal shape."""
    kind = type(geometry).__name__
    if kind == 'Sphere':
        return float(geometry.radius)
    if kind in ('Cylinder', 'Capsule', 'Cone'):
        extra = geometry.radius if kind == 'Capsule' else 0.0
        return math.hypot(geometry.radius, geometry.halfLength) + extra
    if kind == 'Box':
        return float(np.linalg.norm(geometry.halfSide))
    geometry.computeLocalAABB()
    box = geometry.aabb_local
    return float(max(np.linalg.norm(box.min_), np.linalg.norm(box.max_)))


class CollisionChecker:
    """
    Configuration and segment collision checks for one robot among obstacles.

    ``model`` is a :class:`~ik_control.kinematics.robot_model.RobotModel` built from a
    URDF; ``resolution`` [m] the largest travel of any robot point between two checked
    samples of a segment (module docstring); ``obstacles`` :class:`Obstacle` objects in
    the base frame. ``checks`` counts configuration checks (the planners' statistic).
    """

    def __init__(self, model, obstacles=(), resolution=DEFAULT_RESOLUTION):
        if not np.isfinite(resolution) or resolution <= 0.0:
            raise InputError(f'collision resolution must be > 0 m, got {resolution}')
        xml = getattr(model, 'urdf_xml', None)
        if xml is None:
            raise ModelError('collision checking needs a robot model built from a URDF')
        self.model = model
        self.resolution = float(resolution)
        self.clearance = 0.5 * self.resolution
        pm = model.pin_model
        robot = pin.buildGeomFromUrdfString(pm, xml, pin.GeometryType.COLLISION)
        if robot.ngeoms == 0:
            raise ModelError(f"robot '{model.name}' has no <collision> shapes in its URDF")
        self._robot_geoms = robot
        self._moving = self._moved_joints(model)
        self.radii = self._travel_radii(model, robot)
        self.checks = 0
        self.obstacles = ()
        self.set_obstacles(obstacles)

    # ------------------------------------------------------------------ set-up
    @staticmethod
    def _moved_joints(model):
        """Bool per pinocchio joint index: is it moved by some controlled joint."""
        pm = model.pin_model
        moved = np.zeros(pm.njoints, dtype=bool)
        for j in range(1, pm.njoints):
            moved[j] = moved[pm.parents[j]] or model.ctrl_index[j - 1] >= 0
        return moved

    def _travel_radii(self, model, robot):
        """``r_i`` [m per rad] of the module docstring, per controlled joint."""
        pm = model.pin_model
        reach = np.zeros(pm.njoints)   # longest offset chain + shape radius below a joint
        for g in robot.geometryObjects:
            j = g.parentJoint
            r = np.linalg.norm(g.placement.translation) + _bounding_radius(g.geometry)
            while j > 0:
                reach[j] = max(reach[j], r)
                r += np.linalg.norm(pm.jointPlacements[j].translation)
                j = pm.parents[j]
        for fid in model.frame_ids:   # the end effectors count as points too
            j = pm.frames[fid].parentJoint
            r = np.linalg.norm(pm.frames[fid].placement.translation)
            while j > 0:
                reach[j] = max(reach[j], r)
                r += np.linalg.norm(pm.jointPlacements[j].translation)
                j = pm.parents[j]
        radii = np.zeros(model.nq)
        for j in range(1, pm.njoints):
            k = model.ctrl_index[j - 1]
            if k >= 0:
                r = reach[j] if model.kind[j - 1] == 0 else 1.0
                radii[k] += abs(model.multiplier[j - 1]) * r
        return radii

    def set_obstacles(self, obstacles):
        """Replace the obstacles; raises :class:`InputError` if one overlaps a fixed shape."""
        obstacles = tuple(obstacles)
        for o in obstacles:
            if not isinstance(o, Obstacle):
                raise InputError(f'obstacles must be Obstacle objects, got {type(o).__name__}')
        names = [o.name for o in obstacles]
        if len(set(names)) != len(names):
            raise InputError(f'obstacle names must be unique, got {names}')
        gm = self._robot_geoms.copy()
        pm = self.model.pin_model
        n_robot = gm.ngeoms
        base = pin.SE3(self.model.base_placement)
        for o in obstacles:
            gm.addGeometryObject(pin.GeometryObject(
                f'obstacle:{o.name}', 0, 0, base * pin.SE3(o.pose), o.coal_geometry()))
        fixed, pairs = [], []
        geoms = gm.geometryObjects
        for a in range(n_robot):
            ja = geoms[a].parentJoint
            for b in range(a + 1, n_robot):
                jb = geoms[b].parentJoint
                if ja == jb or pm.parents[ja] == jb or pm.parents[jb] == ja:
                    continue
                if self._moving[ja] or self._moving[jb]:
                    pairs.append((a, b))
            for b in range(n_robot, gm.ngeoms):
                (pairs if self._moving[ja] else fixed).append((a, b))
        for a, b in pairs + fixed:
            gm.addCollisionPair(pin.CollisionPair(a, b))
        data = pin.GeometryData(gm)
        for request in data.collisionRequests:
            request.security_margin = self.clearance
            request.num_max_contacts = 1
        if fixed:
            pin.updateGeometryPlacements(pm, self.model.pin_data, gm, data,
                                         self.model.tree_configuration(self.model.center))
            for a, b in fixed:
                k = gm.findCollisionPair(pin.CollisionPair(a, b))
                if pin.computeCollision(gm, data, k):
                    raise InputError(f"obstacle '{geoms[b].name[9:]}' overlaps the robot's "
                                     f"fixed part '{geoms[a].name}'")
                data.deactivateCollisionPair(k)
        self.geometry_model, self.geometry_data = gm, data
        self.obstacles = obstacles
        self.pair_count = len(pairs)

    # ------------------------------------------------------------------ checks
    def config_free(self, q):
        """Return True when configuration ``q`` [rad] has every pair apart by the clearance."""
        self.checks += 1
        return not pin.computeCollisions(self.model.pin_model, self.model.pin_data,
                                         self.geometry_model, self.geometry_data,
                                         self.model.tree_configuration(q), True)

    def colliding_pair(self, q):
        """Names of the first pair in collision at ``q`` (or None): for diagnostics."""
        pin.computeCollisions(self.model.pin_model, self.model.pin_data, self.geometry_model,
                              self.geometry_data, self.model.tree_configuration(q), True)
        for k, result in enumerate(self.geometry_data.collisionResults):
            if result.isCollision():
                pair = self.geometry_model.collisionPairs[k]
                g = self.geometry_model.geometryObjects
                return g[pair.first].name, g[pair.second].name
        return None

    def segment_steps(self, q0, q1):
        """Return the steps ``n = ceil(sum_i r_i |q1_i - q0_i| / resolution)`` (module doc)."""
        travel = float(np.dot(self.radii, np.abs(np.asarray(q1) - np.asarray(q0))))
        return max(1, math.ceil(travel / self.resolution))

    def segment_free(self, q0, q1, check_start=False):
        """
        Return True when the straight joint-space motion ``q0 -> q1`` is free.

        Samples ``q0 + (k / n)(q1 - q0)``, ``k = 1..n`` (and ``k = 0`` when
        ``check_start``), with ``n`` from :meth:`segment_steps`; the end first, then the
        samples in between from the start on.
        """
        q0 = np.asarray(q0, dtype=float)
        q1 = np.asarray(q1, dtype=float)
        if check_start and not self.config_free(q0):
            return False
        if not self.config_free(q1):
            return False
        n = self.segment_steps(q0, q1)
        dq = (q1 - q0) / n
        for k in range(1, n):
            if not self.config_free(q0 + k * dq):
                return False
        return True

    def path_free(self, path):
        """Return True when every configuration and segment of ``path`` (m x nq) is free."""
        path = np.asarray(path, dtype=float)
        if not self.config_free(path[0]):
            return False
        return all(self.segment_free(a, b) for a, b in zip(path[:-1], path[1:]))

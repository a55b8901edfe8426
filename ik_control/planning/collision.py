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
more than ``clearance = security_distance + resolution / 2`` apart (coal's
``security_margin``; ``security_distance`` [m], default 0, is the controller's
``collision.security_distance`` when the plan is to run on it). A straight
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
however thin the obstacle, and every pair stays ``security_distance`` apart all along, so
the controller's own check of a plan (:mod:`~ik_control.control.goal_inputs`) never
refuses one.

**Broad phase.** Before coal, bounding spheres (:mod:`ik_control.planning.broad_phase`)
prove most pairs farther apart than the clearance; only the others go to coal's narrow
phase, so a decision is the one coal alone would take (``broad_phase=False`` checks
every pair with coal, as the tests compare). A segment's samples are screened in one
compiled call.
"""

import math

from ik_control.kinematics import kernels
from ik_control.planning import broad_phase
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
    ``broad_phase``: prove pairs apart with bounding spheres before coal (module docstring);
    ``security_distance`` [m] added to the clearance (module docstring).
    """

    def __init__(self, model, obstacles=(), resolution=DEFAULT_RESOLUTION, broad_phase=True,
                 security_distance=0.0):
        if not np.isfinite(resolution) or resolution <= 0.0:
            raise InputError(f'collision resolution must be > 0 m, got {resolution}')
        if not np.isfinite(security_distance) or security_distance < 0.0:
            raise InputError(f'security distance must be >= 0 m, got {security_distance}')
        xml = getattr(model, 'urdf_xml', None)
        if xml is None:
            raise ModelError('collision checking needs a robot model built from a URDF')
        self.model = model
        self.resolution = float(resolution)
        self.security_distance = float(security_distance)
        self.clearance = self.security_distance + 0.5 * self.resolution
        pm = model.pin_model
        robot = pin.buildGeomFromUrdfString(pm, xml, pin.GeometryType.COLLISION)
        if robot.ngeoms == 0:
            raise ModelError(f"robot '{model.name}' has no <collision> shapes in its URDF")
        self._robot_geoms = robot
        self._moving = self._moved_joints(model)
        self.radii = self._travel_radii(model, robot)
        self.broad_phase = bool(broad_phase)
        self._F, self._I = model.packed_f, model.packed_i
        self._W = np.zeros(kernels.work_size(self._I))
        self._q_tree = kernels.work_views(self._I, self._W)[0]
        self._local, self._joint, self._start = self._robot_spheres(model, robot)
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

    @staticmethod
    def _robot_spheres(model, robot):
        """Covering spheres of the robot shapes on their tree joints (broad_phase)."""
        local, joint, start = [], [], [0]
        for g in robot.geometryObjects:
            spheres = broad_phase.shape_spheres(g.geometry, _bounding_radius(g.geometry))
            T = g.placement.homogeneous
            if g.parentJoint == 0:
                T = model.base_inv @ T
            local.append(np.column_stack([spheres[:, :3] @ T[:3, :3].T + T[:3, 3],
                                          spheres[:, 3]]))
            joint.extend([g.parentJoint - 1] * len(spheres))
            start.append(start[-1] + len(spheres))
        return (np.ascontiguousarray(np.vstack(local)), np.array(joint, dtype=np.int64),
                np.array(start, dtype=np.int64))

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
        self._screen = self._screen_tables(gm, n_robot, pairs, obstacles)

    def _screen_tables(self, gm, n_robot, pairs, obstacles):
        """Arguments of the broad phase: pairs, obstacle shapes (module broad_phase)."""
        inv, code, size = [], [], []
        for o in obstacles:
            inv.append(np.linalg.inv(o.pose))
            code.append(broad_phase.OBSTACLE_CODES[o.shape])
            half = {'box': (0.5, 0.5, 0.5), 'sphere': (1.0,), 'cylinder': (1.0, 0.5)}[o.shape]
            size.append(np.pad(np.multiply(o.size, half), (0, 3 - len(o.size))))
        fixed = {}      # robot shapes on the universe that are primitives: exact distances
        for g, obj in enumerate(gm.geometryObjects[:n_robot]):
            kind = type(obj.geometry).__name__
            if obj.parentJoint != 0 or kind not in ('Box', 'Sphere', 'Cylinder'):
                continue
            fixed[g] = len(code)
            inv.append(np.linalg.inv(self.model.base_inv @ obj.placement.homogeneous))
            G = obj.geometry
            code.append({'Box': 0, 'Sphere': 1, 'Cylinder': 2}[kind])
            size.append({'Box': lambda: G.halfSide, 'Sphere': lambda: (G.radius, 0.0, 0.0),
                         'Cylinder': lambda: (G.radius, G.halfLength, 0.0)}[kind]())
        rows = []
        for k, (a, b) in enumerate(pairs):
            if b >= n_robot:
                rows.append((a, b - n_robot, 1, k))
            elif b in fixed:
                rows.append((a, fixed[b], 1, k))
            elif a in fixed:
                rows.append((b, fixed[a], 1, k))
            else:
                rows.append((a, b, 0, k))
        CF, CI = broad_phase.pack(self.clearance + broad_phase.MARGIN, self.resolution,
                                  self.radii, self._local, self._joint, self._start,
                                  np.array(rows, dtype=np.int64).reshape(-1, 4),
                                  np.array(inv, dtype=float).reshape(-1, 4, 4),
                                  np.array(code, dtype=np.int64),
                                  np.array(size, dtype=float).reshape(-1, 3))
        return (CF, CI) + broad_phase.work_buffers(CI)

    # ------------------------------------------------------------------ checks
    def config_free(self, q):
        """Return True when configuration ``q`` [rad] has every pair apart by the clearance."""
        self.checks += 1
        return self._free(np.ascontiguousarray(q, dtype=float))

    def _free(self, q):
        """:meth:`config_free` without the count (``q`` a contiguous float array)."""
        if not self.broad_phase:
            return not pin.computeCollisions(self.model.pin_model, self.model.pin_data,
                                             self.geometry_model, self.geometry_data,
                                             self.model.tree_configuration(q), True)
        CF, CI, SW, out = self._screen
        n = broad_phase.uncertain_pairs(self._F, self._I, self._W, CF, CI, SW, q, out)
        return n == 0 or self._coal_free(n)

    def _coal_free(self, n):
        """Coal on the first ``n`` candidate pairs, at the tree configuration in the buffer."""
        pm, pd, gm, gd = (self.model.pin_model, self.model.pin_data, self.geometry_model,
                          self.geometry_data)
        pin.updateGeometryPlacements(pm, pd, gm, gd, self._q_tree)
        candidates = self._screen[-1]
        for k in range(n):
            if pin.computeCollision(gm, gd, int(candidates[k])):
                return False
        return True

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
        q0 = np.ascontiguousarray(q0, dtype=float)
        q1 = np.ascontiguousarray(q1, dtype=float)
        if not self.broad_phase:
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
        # the order of the checks above: start (if asked), end, then 1..n-1, each counted
        # as it comes, so that the statistic does not change
        CF, CI, SW, out = self._screen
        place = 0
        while True:
            places, place, m = broad_phase.scan(self._F, self._I, self._W, CF, CI, SW, q0, q1,
                                                check_start, place, out)
            if place < 0:
                self.checks += places
                return True
            if not self._coal_free(m):
                self.checks += place + 1
                return False
            place += 1

    def path_free(self, path):
        """Return True when every configuration and segment of ``path`` (m x nq) is free."""
        path = np.asarray(path, dtype=float)
        if not self.config_free(path[0]):
            return False
        return all(self.segment_free(a, b) for a, b in zip(path[:-1], path[1:]))

"""
Collision checking of configurations and motion segments for the planners.

The shapes and the checked pairs are the robot's one collision model,
:class:`~ik_control.collision.model.CollisionModel`, the same as the controller's
collision stage and ``sim_robot``'s contact report use: the URDF's ``<collision>``
shapes, every pair of shapes that a controlled joint moves relative to each other on
links that are not adjacent, less the pairs the SRDF disables (``srdf``: the shipped
``config/wam.srdf`` for the planner node), and every moving shape against every
obstacle (:mod:`ik_control.planning.obstacles`, the model's scene). Shapes no controlled
joint moves (the base housing) are checked against the obstacles once, when the
obstacles are set: an overlap there is an error, no configuration could avoid it.

**Clearance and segment resolution.** A configuration is free when every checked pair is
more than ``clearance = security_distance + resolution / 2`` apart (``security_distance``
[m], default 0, is the controller's ``collision.security_distance`` when the plan is to
run on it). A straight segment ``q0 -> q1`` in joint space is sampled at ``n``
configurations such that no point of the robot moves more than ``resolution`` [m]
between two consecutive samples: a point carried by the subtree of revolute joint ``i``
moves at most ``r_i |dq_i|`` when joint ``i`` turns by ``dq_i``, where ``r_i`` bounds its
distance from the joint's axis (the lengths of the joint-to-joint offsets down the chain
plus the offset and radius of the shape's bounding sphere; the end effectors count as
points too), so along the segment every point travels at most ``L = sum_i r_i |q1_i -
q0_i|`` (prismatic joints: ``r_i = 1``), and ``n = ceil(L / resolution)`` steps bound
each step's travel by ``resolution``. Every point of the swept motion then lies within
``resolution / 2`` of the same point at a checked sample, where the clearance is larger
than that: nothing tunnels through, however thin the obstacle, and every pair stays
``security_distance`` apart all along, so the controller's own check of a plan
(:mod:`~ik_control.control.goal_inputs`, on the same model) never refuses one.

**Broad phase.** Before the model's distances, covering spheres
(:mod:`ik_control.planning.broad_phase`) prove most pairs farther apart than the
clearance; only the others are measured (:meth:`CollisionModel.near_pairs
<ik_control.collision.model.CollisionModel.near_pairs>`: compiled GJK for primitives,
coal for meshes and contact), so a decision is the one the model alone would take
(``broad_phase=False`` measures every pair, as the tests compare). A segment's samples
are screened in one compiled call.
"""

import math

import coal
from ik_control.collision.model import CollisionModel
from ik_control.kinematics import kernels
from ik_control.planning import broad_phase
from ik_control.planning.obstacles import Obstacle
from ik_control.validation import InputError, ModelError
import numpy as np

DEFAULT_RESOLUTION = 0.02   # largest link-point travel between checked samples [m]
_HALF = {'box': (0.5, 0.5, 0.5), 'sphere': (1.0,), 'cylinder': (1.0, 0.5)}


class CollisionChecker:
    """
    Configuration and segment collision checks for one robot among obstacles.

    ``model`` is a :class:`~ik_control.kinematics.robot_model.RobotModel` built from a
    URDF; ``resolution`` [m] the largest travel of any robot point between two checked
    samples of a segment (module docstring); ``obstacles`` :class:`Obstacle` objects in
    the base frame. ``checks`` counts configuration checks (the planners' statistic).
    ``broad_phase``: prove pairs apart with covering spheres first (module docstring);
    ``security_distance`` [m] added to the clearance (module docstring); ``srdf``: SRDF
    text whose ``<disable_collisions>`` pairs are not checked (None: every pair).
    :attr:`collision` is the :class:`~ik_control.collision.model.CollisionModel`.
    """

    def __init__(self, model, obstacles=(), resolution=DEFAULT_RESOLUTION, broad_phase=True,
                 security_distance=0.0, srdf=None):
        if not np.isfinite(resolution) or resolution <= 0.0:
            raise InputError(f'collision resolution must be > 0 m, got {resolution}')
        if not np.isfinite(security_distance) or security_distance < 0.0:
            raise InputError(f'security distance must be >= 0 m, got {security_distance}')
        if getattr(model, 'urdf_xml', None) is None:
            raise ModelError('collision checking needs a robot model built from a URDF')
        self.collision = CollisionModel(model, srdf=srdf)
        if self.collision.robot_count == 0:
            raise ModelError(f"robot '{model.name}' has no <collision> shapes in its URDF")
        self.model = model
        self.resolution = float(resolution)
        self.security_distance = float(security_distance)
        self.clearance = self.security_distance + 0.5 * self.resolution
        self.radii = self._travel_radii()
        self.broad_phase = bool(broad_phase)
        self._F, self._I = model.packed_f, model.packed_i
        self._W = np.zeros(kernels.work_size(self._I))
        self._joint_T = kernels.work_views(self._I, self._W)[1]
        self._local, self._joint, self._start = self._robot_spheres()
        self.checks = 0
        self.obstacles = ()
        self.set_obstacles(obstacles)

    # ------------------------------------------------------------------ set-up
    def _travel_radii(self):
        """``r_i`` [m per rad] of the module docstring, per controlled joint."""
        model = self.model
        pm = model.pin_model
        radii = self.collision.shape_lever.max(axis=0)   # the shapes' points
        for fid in model.frame_ids:                      # the end effectors' origins
            t = pm.frames[fid].parentJoint - 1
            r = np.linalg.norm(pm.frames[fid].placement.translation)
            while t >= 0:
                c = model.ctrl_index[t]
                if c >= 0:
                    arm = r if model.kind[t] == kernels.JOINT_REVOLUTE else 1.0
                    radii[c] = max(radii[c], abs(model.multiplier[t]) * arm)
                r += np.linalg.norm(pm.jointPlacements[t + 1].translation)
                t = pm.parents[t + 1] - 1
        return radii

    def _robot_spheres(self):
        """Covering spheres of the robot shapes on their tree joints (broad_phase)."""
        joints, places, centres, radii = self.collision.robot_shapes
        local, joint, start = [], [], [0]
        for g, geometry in enumerate(self.collision.geometries):
            spheres = broad_phase.shape_spheres(geometry, centres[g], radii[g])
            T = places[g]
            local.append(np.column_stack([spheres[:, :3] @ T[:3, :3].T + T[:3, 3],
                                          spheres[:, 3]]))
            joint.extend([joints[g]] * len(spheres))
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
        cm = self.collision
        joints, places = cm.robot_shapes[:2]
        request, result = coal.DistanceRequest(), coal.DistanceResult()
        for g in np.flatnonzero(~cm.moving):
            at = coal.Transform3s(places[g][:3, :3], places[g][:3, 3])
            for o in obstacles:
                result.clear()
                d = coal.distance(cm.geometries[g], at, o.coal_geometry(),
                                  coal.Transform3s(o.pose[:3, :3], o.pose[:3, 3]), request,
                                  result)
                if d <= self.clearance:
                    raise InputError(f"obstacle '{o.name}' overlaps the robot's fixed part "
                                     f"'{cm.names[g]}'")
        cm.set_scene([(o.shape, o.pose, o.marker_scale()) for o in obstacles])
        self.obstacles = obstacles
        self.pair_count = len(cm.pairs)
        self._narrow = np.full(self.pair_count, -np.inf)   # any_within's limit per pair
        self._every = np.full(self.pair_count, self.clearance)
        self._screen = self._screen_tables()

    def _screen_tables(self):
        """Arguments of the broad phase: pairs, obstacle shapes (module broad_phase)."""
        cm = self.collision
        n_robot = cm.robot_count
        inv, code, size = [], [], []
        for o in self.obstacles:
            inv.append(np.linalg.inv(o.pose))
            code.append(broad_phase.OBSTACLE_CODES[o.shape])
            size.append(np.pad(np.multiply(o.size, _HALF[o.shape]), (0, 3 - len(o.size))))
        fixed = {}      # robot shapes on the base that are primitives: exact distances
        joints, places = cm.robot_shapes[:2]
        for g, G in enumerate(cm.geometries):
            kind = type(G).__name__
            if joints[g] >= 0 or kind not in ('Box', 'Sphere', 'Cylinder'):
                continue
            fixed[g] = len(code)
            inv.append(np.linalg.inv(places[g]))
            code.append({'Box': 0, 'Sphere': 1, 'Cylinder': 2}[kind])
            size.append({'Box': lambda: G.halfSide, 'Sphere': lambda: (G.radius, 0.0, 0.0),
                         'Cylinder': lambda: (G.radius, G.halfLength, 0.0)}[kind]())
        rows = []
        for k, (a, b) in enumerate(cm.pairs.tolist()):
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
            kernels.update_kinematics(self._F, self._I, self._W, q, False, False)
            return not self.collision.any_within(self._joint_T, self._every)
        CF, CI, SW, out = self._screen
        n = broad_phase.uncertain_pairs(self._F, self._I, self._W, CF, CI, SW, q, out)
        return n == 0 or self._candidates_free(n)

    def _candidates_free(self, n):
        """Return the model's decision on the first ``n`` candidates (kinematics in ``W``)."""
        rows = self._screen[-1][:n]
        self._narrow[rows] = self.clearance
        try:
            return not self.collision.any_within(self._joint_T, self._narrow)
        finally:
            self._narrow[rows] = -np.inf

    def colliding_pair(self, q):
        """Names of the first pair in collision at ``q`` (or None): for diagnostics."""
        cm = self.collision
        kernels.update_kinematics(self._F, self._I, self._W,
                                  np.ascontiguousarray(q, dtype=float), False, False)
        n = cm.near_pairs(self._joint_T, self.clearance)
        for row in range(n):
            if cm.distance[row] <= self.clearance:
                a, b = cm.pairs[cm.pair_index[row]]
                other = (f'obstacle:{self.obstacles[b - cm.robot_count].name}'
                         if b >= cm.robot_count else cm.names[b])
                return cm.names[a], other
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
            if not self._candidates_free(m):
                self.checks += place + 1
                return False
            place += 1

    def path_free(self, path):
        """Return True when every configuration and segment of ``path`` (m x nq) is free."""
        path = np.asarray(path, dtype=float)
        if not self.config_free(path[0]):
            return False
        return all(self.segment_free(a, b) for a, b in zip(path[:-1], path[1:]))

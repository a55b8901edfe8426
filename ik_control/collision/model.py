"""
The robot's collision model: the URDF's ``<collision>`` shapes, the checked pairs, distances.

**Shapes.** pinocchio reads the URDF's ``<collision>`` elements into a ``GeometryModel``
(boxes, cylinders, spheres, capsules, and meshes by ``package://`` or file path, looked up
in ``package_dirs``); meshes are measured as triangle meshes (coal's BVH: exact for
concave links), or, with ``convex=True``, as their convex hulls (GJK, faster, but a
concave link's hull fills its hollows; :func:`~ik_control.collision.shapes.convex_hull`).
Each shape is fixed to a tree joint of the
:class:`~ik_control.kinematics.robot_model.RobotModel` (or to the base).

**Pairs.** Two robot shapes are checked when

* some controlled joint moves one relative to the other (shapes on one rigid body, or on
  bodies joined only by locked joints, never change their distance),
* their links are not adjacent in the URDF (a joint's parent and child link touch by
  construction), and
* the SRDF does not disable the pair (``<disable_collisions link1 link2>``: a MoveIt
  user's file, or the one :mod:`~ik_control.collision.acm` computes).

Every shape that a controlled joint moves is checked against every scene obstacle
(:meth:`CollisionModel.set_scene`).

**Distances.** :meth:`CollisionModel.near_pairs` takes the tree joints' placements of a
:class:`~ik_control.kinematics.robot_model.KinematicsWorkspace` (the controller's, already
computed in its tick) and, in one compiled call (:mod:`~ik_control.collision.screen`),
places every shape and every shape's bounding sphere, drops the pairs whose spheres are
farther apart than the asked distance (the broad phase: sound, the spheres hold the
shapes), and measures the others that are primitives or hulls and apart with GJK
(:mod:`~ik_control.collision.gjk`); meshes and pairs in contact are measured with coal.
Each gives the signed distance ``d`` (negative inside), the witness points ``p_a``,
``p_b`` and the unit normal ``n`` from ``a`` to ``b`` (``d`` grows when ``b`` moves along
``n``).
"""

import os
import xml.etree.ElementTree as ET

import coal
from ik_control.collision import gjk, screen
from ik_control.collision.shapes import bounding_sphere, convex_hull, scene_geometry
from ik_control.kinematics import kernels
from ik_control.validation import InputError, ModelError
import numpy as np
import pinocchio as pin

__all__ = ['CollisionModel', 'default_package_dirs', 'disabled_pairs_from_srdf']


def default_package_dirs(extra=()):
    """
    Folders under which ``package://NAME/...`` meshes are looked up.

    ``extra`` first, then every ``share`` folder of ``AMENT_PREFIX_PATH`` and of the
    installed ``example-robot-data`` (its ``package://example-robot-data`` root).
    """
    dirs = [str(d) for d in extra]
    for prefix in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep):
        if prefix:
            dirs.append(os.path.join(prefix, 'share'))
    try:
        from example_robot_data.robots_loader import getModelPath
        robots_dir = getModelPath('/panda_description/urdf/panda.urdf')
        dirs.append(os.path.normpath(os.path.join(robots_dir, '..', '..')))
    except Exception:  # noqa: B902 - example-robot-data absent or laid out otherwise
        pass
    return [d for d in dict.fromkeys(dirs) if os.path.isdir(d)]


def disabled_pairs_from_srdf(text):
    """
    Return the link pairs an SRDF disables, as a set of ``frozenset({link1, link2})``.

    ``text`` is the SRDF's XML (``<robot>`` with ``<disable_collisions link1= link2=>``
    elements); raises :class:`InputError` for XML that does not parse or an element
    without both links.
    """
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise InputError(f'SRDF does not parse: {exc}') from None
    pairs = set()
    for element in root.iter('disable_collisions'):
        a, b = element.get('link1'), element.get('link2')
        if not a or not b:
            raise InputError('SRDF: <disable_collisions> needs link1 and link2')
        pairs.add(frozenset((a, b)))
    return pairs


def adjacent_links(urdf_xml):
    """Link pairs joined by a URDF joint (any type), as a set of frozensets."""
    root = ET.fromstring(urdf_xml)
    pairs = set()
    for joint in root.findall('joint'):
        parent, child = joint.find('parent'), joint.find('child')
        if parent is not None and child is not None:
            pairs.add(frozenset((parent.get('link'), child.get('link'))))
    return pairs


class CollisionModel:
    """
    Collision shapes and checked pairs of one robot, and a scene (module docstring).

    Parameters
    ----------
    model:
        A :class:`~ik_control.kinematics.robot_model.RobotModel` built from a URDF.
    srdf:
        SRDF XML text whose ``<disable_collisions>`` pairs are not checked, or None.
    package_dirs:
        Extra folders for ``package://`` meshes (before :func:`default_package_dirs`).
    convex:
        Measure meshes as their convex hulls instead of the triangle meshes (default:
        the meshes, exact for concave links such as the PR2's base; coal gives a mesh
        pair in contact distance 0, not a depth).
    self_pairs:
        Check the robot's shapes against each other (False: against the scene only).

    """

    def __init__(self, model, srdf=None, package_dirs=(), convex=False, self_pairs=True):
        xml = getattr(model, 'urdf_xml', None)
        if xml is None:
            raise ModelError('a collision model needs a robot model built from a URDF')
        self.model = model
        pm = model.pin_model
        try:
            gm = pin.buildGeomFromUrdfString(pm, xml, pin.GeometryType.COLLISION,
                                             package_dirs=default_package_dirs(package_dirs))
        except (RuntimeError, ValueError, OSError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ModelError(f"the URDF's collision shapes cannot be loaded: {first}") from None
        self.geometry_model = gm
        objects = list(gm.geometryObjects)
        self.robot_count = len(objects)
        self.names = [g.name for g in objects]
        self.links = [pm.frames[g.parentFrame].name for g in objects]
        self.meshes = sum(type(g.geometry).__name__.startswith('BVHModel') for g in objects)
        self.geometries = [convex_hull(g.geometry) if convex else g.geometry for g in objects]
        joint = np.array([g.parentJoint - 1 for g in objects], dtype=np.int64)
        local = np.array([g.placement.homogeneous for g in objects]).reshape(-1, 4, 4)
        for g in np.flatnonzero(joint < 0):
            local[g] = model.base_inv @ local[g]
        spheres = [bounding_sphere(g) for g in self.geometries]
        self._robot = (joint, local, np.array([s[0] for s in spheres]).reshape(-1, 3),
                       np.array([s[1] for s in spheres]))
        ancestors = model._joint_ancestors
        controlled = model.ctrl_index >= 0
        self._dofs = [ancestors[j + 1] & controlled for j in joint]  # controlled joints above
        self.moving = np.array([d.any() for d in self._dofs], dtype=bool)
        self.adjacent = adjacent_links(xml)
        self.shape_lever = self._lever_arms()
        self.scene = []
        self._check_self = self_pairs
        self.set_disabled(disabled_pairs_from_srdf(srdf) if srdf is not None else set())
        self._request = coal.DistanceRequest()
        self._result = coal.DistanceResult()

    # ------------------------------------------------------------------ pairs
    def _lever_arms(self):
        """
        Return ``R`` [m per rad; 1 for a prismatic joint], robot shapes x controlled joints.

        ``R[g, j]``: how far any point of shape ``g`` can be from the axis of joint ``j``
        (0 where ``j`` does not move it): along the chain up from the shape, the joint-to-
        joint offsets plus the shape's bounding sphere (the planner's segment bound,
        planning/collision.py). A point of ``g`` moves at most ``sum_j R[g, j] |dq_j|``
        when the joints turn by ``dq``.
        """
        model = self.model
        pm = model.pin_model
        joint, local, centre, radius = self._robot
        R = np.zeros((self.robot_count, model.nq))
        for g in range(self.robot_count):
            t = int(joint[g])
            r = np.linalg.norm(local[g, :3, :3] @ centre[g] + local[g, :3, 3]) + radius[g]
            while t >= 0:
                c = model.ctrl_index[t]
                if c >= 0:
                    arm = r if model.kind[t] == kernels.JOINT_REVOLUTE else 1.0
                    R[g, c] += abs(model.multiplier[t]) * arm
                r += np.linalg.norm(pm.jointPlacements[t + 1].translation)
                t = pm.parents[t + 1] - 1
        return R

    def relevant_self_pairs(self):
        """Return the robot shape pairs some controlled joint moves apart, links not adjacent."""
        pairs = []
        for a in range(self.robot_count):
            for b in range(a + 1, self.robot_count):
                if not (self._dofs[a] ^ self._dofs[b]).any():
                    continue  # one rigid body: the distance never changes
                if frozenset((self.links[a], self.links[b])) in self.adjacent:
                    continue
                pairs.append((a, b))
        return pairs

    def set_disabled(self, disabled):
        """Check every relevant self pair except those whose links ``disabled`` holds."""
        names = set(self.links)
        unknown = sorted({link for pair in disabled for link in pair} - names)
        if unknown:
            raise InputError(f'SRDF disables pairs of links the URDF has no collision shapes '
                             f'on: {unknown[:5]}')
        self.disabled = set(disabled)
        self.self_pairs = np.array(
            [p for p in (self.relevant_self_pairs() if self._check_self else [])
             if frozenset((self.links[p[0]], self.links[p[1]])) not in self.disabled],
            dtype=np.int64).reshape(-1, 2)
        self.set_scene(self.scene)

    def set_scene(self, shapes):
        """
        Replace the scene obstacles: ``(shape, pose, scale)`` each, as markers give them.

        ``shape`` 'sphere', 'box' or 'cylinder', ``pose`` 4x4 in the base frame, ``scale``
        the Marker's sizes [m] (:func:`~ik_control.collision.shapes.scene_geometry`).
        """
        self.scene = [(s, np.array(p, dtype=float), tuple(float(v) for v in c))
                      for s, p, c in shapes]
        geoms = [scene_geometry(s, c) for s, _, c in self.scene]
        joint, local, centre, radius = self._robot
        n = self.robot_count
        self._geoms = self.geometries + geoms
        self._pair_names = self.links + [f'obstacle {i}' for i in range(len(geoms))]
        self._joint = np.concatenate([joint, np.full(len(geoms), -1, dtype=np.int64)])
        self._local = np.concatenate([local] + [p[None] for _, p, _ in self.scene])
        spheres = [bounding_sphere(g) for g in geoms]
        self._centre = np.concatenate([centre] + [s[0][None] for s in spheres])
        self._radius = np.concatenate([radius, [s[1] for s in spheres]])
        scene_pairs = [(a, n + o) for a in np.flatnonzero(self.moving) for o in range(len(geoms))]
        self.pairs = np.concatenate([self.self_pairs,
                                     np.array(scene_pairs, dtype=np.int64).reshape(-1, 2)])
        P, G = len(self.pairs), len(self._geoms)
        self._place = np.zeros((G, 4, 4))
        self._candidates = np.zeros(P, dtype=np.int64)
        self._transforms = [coal.Transform3s() for _ in range(G)]
        self._primitives = gjk.primitives(self._geoms)
        self._scratch = np.zeros((5, 4, 3))
        self._left = np.zeros(P, dtype=np.int64)
        self.distance = np.zeros(P)          # per candidate row, see near_pairs
        self.point_a = np.zeros((P, 3))
        self.point_b = np.zeros((P, 3))
        self.normal = np.zeros((P, 3))
        self.pair_index = np.zeros(P, dtype=np.int64)
        self._last_d = np.full(P, -np.inf)      # near_pairs' temporal coherence: each pair's
        self._last_travel = np.zeros(P)         # last distance and the travel then
        self._never = np.full(P, -np.inf)       # (no coherence: every pair screened)
        self._start = np.zeros((P, 3))          # and GJK's start, each pair's last p_A - p_B
        self._zeros = np.zeros(P)
        self._limit = np.zeros(P)
        self._pair_list = [tuple(p) for p in self.pairs.tolist()]
        # per pair, R of the shapes over the joints that move one relative to the other
        none = np.zeros_like(self._dofs[0]) if self._dofs else np.zeros(0, dtype=bool)
        dofs = self._dofs + [none] * len(geoms)
        ctrl = self.model.ctrl_index
        R = np.concatenate([self.shape_lever, np.zeros((len(geoms), self.model.nq))])
        #: ``R_kj`` [m per rad]: how far joint ``j`` can move the shapes of pair ``k``
        #: relative to each other per unit of its motion (0 where it moves both or none)
        self.pair_lever = np.zeros((P, self.model.nq))
        for k, (a, b) in enumerate(self._pair_list):
            for g, other in ((a, b), (b, a)):
                only = ctrl[np.flatnonzero(dofs[g] & ~dofs[other])]
                only = only[only >= 0]
                self.pair_lever[k, only] += R[g, only]

    def pair_name(self, k):
        """Readable name of pair ``k`` (a row of :attr:`pairs`): the two links or obstacle."""
        a, b = self.pairs[k]
        return f"'{self._pair_names[a]}' and '{self._pair_names[b]}'"

    @property
    def robot_shapes(self):
        """
        Return the robot shapes' joints, placements and bounding spheres.

        Per shape: its tree joint (-1: the base), its placement on that joint (4x4; in the
        base frame for the base's shapes), its bounding sphere's centre (shape frame) and
        radius [m].
        """
        return self._robot

    @property
    def shape_joints(self):
        """Per shape (robot, then scene), the tree joint it is fixed to (-1: base, scene)."""
        return self._joint

    # ------------------------------------------------------------------ distances
    def near_pairs(self, joint_T, within, travel=None):
        """
        Measure every checked pair whose shapes may be within ``within`` [m]; return the count.

        ``joint_T`` are the tree joints' placements in the base frame (a
        ``KinematicsWorkspace``'s). ``within``: one distance, or one per pair (a row of
        :attr:`pairs` each). Rows ``0..count-1`` of :attr:`pair_index`, :attr:`distance`,
        :attr:`point_a`, :attr:`point_b`, :attr:`normal` hold the measured pairs (module
        docstring), some of them maybe farther than ``within``.

        ``travel`` [m], per pair: for a caller that moves the robot along one path (the
        controller's knots), how far the pair's shapes may have moved relative to each
        other since the path began (``sum_j R_kj |dq_j|`` summed tick by tick,
        :attr:`pair_lever`). A pair measured at ``d`` when its travel was ``t0`` is at
        least ``d - (travel - t0)`` apart now: while that exceeds its ``within`` it is not
        measured again (temporal coherence, sound).
        """
        limit = self._limit
        if np.ndim(within) == 0:
            limit[:] = within
        else:
            limit = within
        coherent = travel is not None
        if not coherent:
            travel = self._zeros
        count, left = screen.measure_near(
            joint_T, self._joint, self._local, self._centre, self._radius, self.pairs, limit,
            travel, self._last_d if coherent else self._never,
            self._last_travel if coherent else self._zeros, self._place,
            self._candidates, *self._primitives, self.distance, self.point_a, self.point_b,
            self.normal, self._scratch, self._left,
            self._start if coherent else gjk.NO_WARM_START, self.pair_index, coherent)
        if left:
            self._measure_with_coal(self._left[:left].tolist())
            screen.record(self._candidates, count, self.distance, travel, coherent,
                          self.pair_index, self._last_d, self._last_travel)
        return count

    def any_within(self, joint_T, within):
        """
        Return whether some checked pair is within ``within[k]`` [m] (per pair, each > 1e-9).

        The yes-or-no of :meth:`near_pairs` (a pair with ``within[k] = -inf`` is left out),
        for the planner's checks, in one compiled call
        (:func:`~ik_control.collision.screen.any_within`); only meshes go to coal.
        """
        found = screen.any_within(joint_T, self._joint, self._local, self._centre,
                                  self._radius, self.pairs, within, self._never, self._zeros,
                                  self._place, self._candidates, *self._primitives,
                                  self.distance, self.point_a, self.point_b, self.normal,
                                  self._scratch, self._left)
        if found >= 0:
            return found == 1
        rows = self._left[:-found].tolist()
        self._measure_with_coal(rows)
        return any(self.distance[r] <= within[self._candidates[r]] for r in rows)

    def _measure_with_coal(self, rows):
        """
        Measure candidate ``rows`` with coal: meshes, and shapes in contact (a depth).

        Apart, the normal is the witness points' direction (coal's for a mesh pair is not
        always set); in contact, coal's.
        """
        place, tf, geoms, pair_list = self._place, self._transforms, self._geoms, self._pair_list
        req, res = self._request, self._result
        out_d, point_a, point_b, normal = self.distance, self.point_a, self.point_b, self.normal
        for row in rows:
            a, b = pair_list[self._candidates[row]]
            for g in (a, b):
                tf[g].setRotation(place[g, :3, :3])
                tf[g].setTranslation(place[g, :3, 3])
            res.clear()
            out_d[row] = coal.distance(geoms[a], tf[a], geoms[b], tf[b], req, res)
            # copied now: the result's arrays are views of its own storage, reused next pair
            point_a[row] = res.getNearestPoint1()
            point_b[row] = res.getNearestPoint2()
            normal[row] = res.normal
            if out_d[row] > 1e-9:
                normal[row] = (point_b[row] - point_a[row]) / out_d[row]

    def distances(self, q, within=np.inf):
        """
        Return ``(pair rows, distances)`` [m] of the checked pairs within ``within`` at ``q``.

        A convenience for checks off the tick (trajectories, tests): forward kinematics of
        its own workspace.
        """
        ws = getattr(self, '_ws', None)
        if ws is None:
            ws = self._ws = self.model.workspace()
        ws.update(np.asarray(q, dtype=float), jacobian=False)
        n = self.near_pairs(ws.joint_T, within)
        keep = self.distance[:n] <= within
        return self.pair_index[:n][keep].copy(), self.distance[:n][keep].copy()

    def closest(self, q):
        """Return ``(distance [m], pair name)`` of the closest checked pair at ``q``."""
        rows, d = self.distances(q)
        if d.size == 0:
            return np.inf, ''
        i = int(np.argmin(d))
        return float(d[i]), self.pair_name(rows[i])

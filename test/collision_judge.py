"""
An independent judge of contact: pinocchio + coal on the URDF's collision shapes.

Written for the tests apart from :mod:`ik_control.collision` (no broad phase, no SRDF, no
convex hulls): every pair of shapes on two links that no URDF joint joins, whose relative
pose some controlled joint changes, is measured by ``pinocchio.computeDistances``; pairs already in
contact at the start configuration are left out (the robot's own overlapping shells,
such as SIMON's wrist and palm).
"""

import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin


class ContactJudge:
    """Smallest distance between the checked shape pairs of ``model`` at a configuration."""

    def __init__(self, model, q_start, obstacles=()):
        """``obstacles``: ``(coal shape, 4x4 pose in the base frame)`` added on the base."""
        pm = model.pin_model
        gm = pin.buildGeomFromUrdfString(pm, model.urdf_xml, pin.GeometryType.COLLISION)
        root = ET.fromstring(model.urdf_xml)
        adjacent = {frozenset((j.find('parent').get('link'), j.find('child').get('link')))
                    for j in root.findall('joint')}
        robot = gm.ngeoms
        base = pin.SE3(model.base_placement)
        for k, (shape, pose) in enumerate(obstacles):
            gm.addGeometryObject(pin.GeometryObject(f'obstacle_{k}', 0, 0, base * pin.SE3(pose),
                                                    shape))
        link = [pm.frames[g.parentFrame].name for g in gm.geometryObjects]
        joint = [g.parentJoint for g in gm.geometryObjects]
        controlled = set(model.joint_names)

        def moved_by(j):  # the controlled joints from the base down to joint j
            return {pm.names[i] for i in pm.supports[j]} & controlled

        for a in range(gm.ngeoms):
            for b in range(a + 1, gm.ngeoms):
                if b >= robot:
                    if a < robot and joint[a] != 0:
                        gm.addCollisionPair(pin.CollisionPair(a, b))
                    continue
                rigid = moved_by(joint[a]) == moved_by(joint[b])  # no joint moves one or other
                if (rigid or frozenset((link[a], link[b])) in adjacent):
                    continue
                gm.addCollisionPair(pin.CollisionPair(a, b))
        self.model, self.gm = model, gm
        self.gd = pin.GeometryData(gm)
        for request in self.gd.distanceRequests:  # coal's GJK to 1e-9 m, not its 1e-6
            request.gjk_tolerance = 1e-9
        self.names = [(gm.geometryObjects[p.first].name, gm.geometryObjects[p.second].name)
                      for p in gm.collisionPairs]
        d = self.distances(q_start)
        self._keep = d > 0.0
        self.start_contacts = [self.names[k] for k in np.flatnonzero(~self._keep)]

    def distances(self, q):
        """Distance [m] of every pair at controlled joint values ``q``."""
        qt = self.model.tree_configuration(np.asarray(q, dtype=float))
        pin.computeDistances(self.model.pin_model, self.model.pin_data, self.gm, self.gd, qt)
        return np.array([r.min_distance for r in self.gd.distanceResults])

    def closest(self, q):
        """``(distance [m], pair names)`` of the closest pair not in contact at the start."""
        d = self.distances(q)
        d = np.where(self._keep, d, np.inf)
        k = int(np.argmin(d))
        return float(d[k]), self.names[k]

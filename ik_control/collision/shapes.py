"""
Shapes of the collision model: coal geometries, their bounding spheres, scene primitives.

A bounding sphere (centre ``c`` in the shape's frame, radius ``r``) holds the whole shape:
two shapes whose spheres are farther apart than ``D`` (``|c_a - c_b| - r_a - r_b > D``)
are farther apart than ``D``, so the broad phase of
:meth:`~ik_control.collision.model.CollisionModel.near_pairs` drops them without coal.
"""

import math

import coal
import numpy as np

#: Marker scale -> coal shape of a scene obstacle (Marker sizes are diameters and edges)
SCENE_SHAPES = ('sphere', 'box', 'cylinder')


def bounding_sphere(geometry):
    """Return ``(centre (3,), radius)`` [m] of a sphere in the shape's frame that holds it."""
    kind = type(geometry).__name__
    if kind == 'Sphere':
        return np.zeros(3), float(geometry.radius)
    if kind in ('Cylinder', 'Capsule', 'Cone'):
        extra = geometry.radius if kind == 'Capsule' else 0.0
        return np.zeros(3), math.hypot(geometry.radius, geometry.halfLength) + extra
    if kind == 'Box':
        return np.zeros(3), float(np.linalg.norm(geometry.halfSide))
    geometry.computeLocalAABB()
    box = geometry.aabb_local
    lo, hi = np.array(box.min_), np.array(box.max_)
    return 0.5 * (lo + hi), float(0.5 * np.linalg.norm(hi - lo))


def scene_geometry(shape, scale):
    """
    Return the coal shape of a scene obstacle given as a Marker gives it.

    ``shape`` 'sphere', 'box' or 'cylinder' (axis z); ``scale`` its size along x, y, z [m]:
    a sphere's radius is half the largest, a box's sides are the scale, a cylinder's radius
    is half the larger of x and y and its length z (as :mod:`ik_control.ik.obstacles`
    reads markers). The caller has checked the sizes (finite, > 0).
    """
    sx, sy, sz = (float(v) for v in scale)
    if shape == 'sphere':
        return coal.Sphere(0.5 * max(sx, sy, sz))
    if shape == 'box':
        return coal.Box(sx, sy, sz)
    if shape == 'cylinder':
        return coal.Cylinder(0.5 * max(sx, sy), sz)
    raise ValueError(f'shape must be one of {SCENE_SHAPES}, not {shape!r}')


def convex_hull(geometry):
    """
    Return a mesh (coal BVH) as its convex hull, other shapes as they are.

    The hull of the mesh's vertices (``coal.Convex.convexHull``, qhull) keeps only the
    vertices on it (1,498 of the Kinova's 8,374 on one link), which the compiled GJK's
    support point (:mod:`~ik_control.collision.gjk`) scans; it holds the mesh, so a
    distance to it never exceeds the distance to the mesh.
    """
    if not type(geometry).__name__.startswith('BVHModel'):
        return geometry
    vertices = coal.StdVec_Vec3s()
    for vertex in np.asarray(geometry.vertices(), dtype=float).reshape(-1, 3):
        vertices.append(vertex)
    return coal.Convex.convexHull(vertices, False, '')

"""
Obstacles given as ``visualization_msgs/Marker`` on ``~/obstacles``, kept by namespace and id.

Each marker adds or replaces one obstacle (ADD: SPHERE, CUBE or CYLINDER, its pose in
any frame the node can express in the base frame, ``scale`` its size [m]), DELETE removes
one, DELETEALL removes every marker obstacle; the fixed ones (``obstacles.fixed``) stay.
The controller avoids the shapes (:mod:`ik_control.ik.obstacles`).
"""

from ik_control.ik.obstacles import bounding_radius, MAX_OBSTACLES
from ik_control.validation import (finite_vector, InputError, quaternion_to_matrix,
                                   unit_quaternion)
import numpy as np
from visualization_msgs.msg import Marker

MARKER_SHAPES = {Marker.SPHERE: 'sphere', Marker.CUBE: 'box', Marker.CYLINDER: 'cylinder'}
MAX_MARKERS = 2 * MAX_OBSTACLES  # per MarkerArray message


def marker_shape(marker):
    """
    Return ``(shape, T, scale)`` of an ADD marker: obstacle shape, pose, ``scale`` [m].

    ``T`` (4x4) is the marker's pose in its header's frame. Raises :class:`InputError`
    for a marker type that is not SPHERE, CUBE or CYLINDER, a non-finite position or an
    orientation that is not a unit quaternion.
    """
    shape = MARKER_SHAPES.get(marker.type)
    if shape is None:
        raise InputError(f'marker type {marker.type} is not an obstacle shape (SPHERE '
                         f'{Marker.SPHERE}, CUBE {Marker.CUBE}, CYLINDER {Marker.CYLINDER})')
    p, o, sc = marker.pose.position, marker.pose.orientation, marker.scale
    T = np.eye(4)
    T[:3, 3] = finite_vector([p.x, p.y, p.z], 3, 'position')
    T[:3, :3] = quaternion_to_matrix(unit_quaternion([o.x, o.y, o.z, o.w], 'orientation'))
    return shape, T, [sc.x, sc.y, sc.z]


class ObstacleMarkers:
    """The fixed obstacles and those the markers gave (module docstring)."""

    def __init__(self, fixed=()):
        """Keep ``fixed`` obstacles, ``(shape, pose, size)`` in the base frame, always."""
        self.fixed = list(fixed)
        # (marker namespace, id) -> (shape, pose in the base frame, Marker scale)
        self.markers = {}

    def shapes(self):
        """Return every obstacle, fixed ones first: ``(shape, pose, size)`` each."""
        return self.fixed + list(self.markers.values())

    def apply(self, marker, to_base):
        """
        Add, replace or delete the obstacle of one marker; return True if the set changed.

        ``to_base(frame_id, T, stamp)`` expresses the pose ``T`` (4x4) in the base frame
        (or raises :class:`InputError`); a bad marker raises :class:`InputError` and
        changes nothing.
        """
        key = (marker.ns, marker.id)
        if marker.action == Marker.DELETEALL:
            self.markers.clear()
            return True
        if marker.action == Marker.DELETE:
            return self.markers.pop(key, None) is not None
        if marker.action != Marker.ADD:
            raise InputError(f'unknown marker action {marker.action}')
        shape, T, scale = marker_shape(marker)
        try:
            bounding_radius(shape, scale)  # refuses sizes that are not finite and positive
        except ValueError as exc:
            raise InputError(str(exc)) from None
        pose = to_base(marker.header.frame_id, T, marker.header.stamp)
        if not np.all(np.isfinite(pose)):
            raise InputError('pose is not finite in the base frame')
        if key not in self.markers and len(self.markers) >= MAX_OBSTACLES:
            raise InputError(f'already {MAX_OBSTACLES} obstacles')
        self.markers[key] = (shape, pose.copy(), scale)
        return True

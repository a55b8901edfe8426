"""
``ik_controller``'s ``~/markers`` (visualization_msgs/MarkerArray) for RViz and the viewer.

Published at ``markers_rate`` while anything subscribes to the topic.

What the controller is doing, in the base frame, each array starting with DELETEALL (so
a goal or obstacle gone is gone from the view):

* ``goal`` (one ARROW per end effector, along the goal's x axis, 0.1 m): the pose the
  user asked for (a parked goal's too);
* ``target`` (one SPHERE per end effector, 3 cm): where the tick drives it now (a spline
  sample, a twist's integration, the held pose);
* ``obstacles``: every obstacle the controller knows (``obstacles.fixed`` and
  ``~/obstacles``), its exact shape, translucent red;
* ``collision`` (a TEXT_VIEW_FACING above the base): the closest checked pair and its
  distance, while the collision stage has one within its influence distance.
"""

from geometry_msgs.msg import Point
from ik_control.ros.conversions import matrix_to_pose
from visualization_msgs.msg import Marker, MarkerArray

SHAPE_TYPES = {'sphere': Marker.SPHERE, 'box': Marker.CUBE, 'cylinder': Marker.CYLINDER}
COLOURS = {'goal': (0.1, 0.8, 0.1, 1.0), 'target': (0.1, 0.3, 1.0, 0.9),
           'obstacles': (0.9, 0.1, 0.1, 0.5), 'collision': (1.0, 0.6, 0.0, 1.0)}


def _marker(ns, k, kind, frame, stamp, T=None, scale=(1.0, 1.0, 1.0)):
    m = Marker(ns=ns, id=k, type=kind, action=Marker.ADD)
    m.header.frame_id, m.header.stamp = frame, stamp
    if T is not None:
        matrix_to_pose(T, m.pose)
    else:
        m.pose.orientation.w = 1.0
    m.scale.x, m.scale.y, m.scale.z = (float(v) for v in scale)
    m.color.r, m.color.g, m.color.b, m.color.a = COLOURS[ns]
    return m


def controller_markers(goals, targets, obstacles, closest, frame, stamp):
    """
    Return the MarkerArray of the module docstring.

    ``goals``, ``targets``: per end effector, 4x4 in the base frame ``frame``;
    ``obstacles``: ``(shape, pose, Marker scale)``; ``closest``: ``(pair name, distance
    [m])`` or None; ``stamp``: the header stamp.
    """
    clear = Marker(action=Marker.DELETEALL)
    clear.header.frame_id, clear.header.stamp = frame, stamp
    out = [clear]
    for i, (goal, target) in enumerate(zip(goals, targets)):
        out.append(_marker('goal', i, Marker.ARROW, frame, stamp, goal, (0.1, 0.01, 0.01)))
        out.append(_marker('target', i, Marker.SPHERE, frame, stamp, target,
                           (0.03, 0.03, 0.03)))
    for k, (shape, pose, scale) in enumerate(obstacles):
        out.append(_marker('obstacles', k, SHAPE_TYPES[shape], frame, stamp, pose, scale))
    if closest is not None:
        text = _marker('collision', 0, Marker.TEXT_VIEW_FACING, frame, stamp,
                       scale=(0.04, 0.04, 0.04))
        text.pose.position = Point(x=0.0, y=0.0, z=1.0)
        text.text = f'closest pair: {closest[0]}, {closest[1] * 1e3:.1f} mm'
        out.append(text)
    return MarkerArray(markers=out)

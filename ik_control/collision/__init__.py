"""
The robot's collision model, shared by the controller, the planner and the tests.

* :mod:`~ik_control.collision.shapes`: coal shapes, their bounding spheres, the scene's
  primitives (markers and ``obstacles.fixed``);
* :mod:`~ik_control.collision.model`: the URDF's ``<collision>`` shapes (pinocchio
  ``GeometryModel``, meshes included) and the pairs checked: every two links that are
  not adjacent, less the pairs an SRDF disables, and every moving link against the scene;
  distances with a broad phase;
* :mod:`~ik_control.collision.acm`: the allowed-collision matrix computed by sampling,
  as MoveIt's setup assistant does, and the SRDF that holds it.
"""

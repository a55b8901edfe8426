"""
SAM eq. 19's clearance measured two ways on the same cases: capsules and URDF shapes.

The obstacle term of :class:`~ik_control.ik.obstacles.ObstacleAvoidance` measures how
far each link is from each obstacle. For a robot from a DH table it has only capsules of
one radius around the joint origins (golden-section search for boxes and cylinders); a
URDF's ``<collision>`` shapes give the links as they are (GJK and coal,
:class:`~ik_control.collision.model.CollisionModel`), and the controller uses them where
the URDF has them. On random configurations with a sphere, a box and a cylinder placed
near the arm (within ``NEAR`` of a random link point), this reports the smallest
clearance each way against the exact one (coal on the URDF shapes, no broad phase), and
the time of one :meth:`ObstacleAvoidance.step` each way.
"""

import time

from ik_control.collision.model import CollisionModel
from ik_control.ik.obstacles import ObstacleAvoidance
import numpy as np

NEAR = 0.15   # obstacles are placed within this of a link [m]


def _scene(model, q, rng):
    """Three obstacles near random shape points of the arm at ``q`` (base frame)."""
    frames = model.frame_placements(q)[:, :3, 3]
    ws = model.workspace()
    ws.update(q, jacobian=False)
    joints = ws.joint_T[:, :3, 3]
    points = np.concatenate([frames, joints[model.ctrl_index >= 0]])
    shapes = []
    for kind, scale in (('sphere', (0.1, 0.1, 0.1)), ('box', (0.12, 0.08, 0.1)),
                        ('cylinder', (0.08, 0.08, 0.2))):
        pose = np.eye(4)
        pose[:3, :3] = np.linalg.qr(rng.normal(size=(3, 3)))[0] * [1.0, 1.0, 1.0]
        if np.linalg.det(pose[:3, :3]) < 0:
            pose[:3, 0] *= -1.0
        pose[:3, 3] = points[rng.integers(len(points))] + rng.uniform(-NEAR, NEAR, 3)
        shapes.append((kind, pose, scale))
    return shapes


def compare(model, cases=200, seed=0, link_radius=0.05):
    """
    Return the clearance errors [m] and step times [us] of both geometries on ``model``.

    Error: the smallest clearance each way minus the exact one (coal on the URDF's shapes
    against the same obstacles); positive means the way overestimates the room.
    """
    rng = np.random.default_rng(seed)
    capsules = ObstacleAvoidance(model, link_radius=link_radius, influence=10.0)
    shapes = ObstacleAvoidance(model, influence=10.0,
                               shapes=CollisionModel(model, self_pairs=False))
    exact = CollisionModel(model, self_pairs=False)
    err_c, err_s, t_c, t_s = [], [], [], []
    J = np.zeros((6 * len(model.end_effectors), model.nq))
    dq = np.zeros(model.nq)
    for q in model.random_configurations(cases, rng):
        scene = _scene(model, q, rng)
        for way in (capsules, shapes):
            way.set_shapes(scene)
        exact.set_scene(scene)
        truth = exact.closest(q)[0]
        ws = model.workspace()
        ws.update(q, jacobian=False)
        for way, errors, times in ((capsules, err_c, t_c), (shapes, err_s, t_s)):
            start = time.perf_counter()
            way.step(J, dq, ws.joint_T, ws.frame_T, 0.001)
            times.append(time.perf_counter() - start)
            errors.append(way.min_clearance - truth)
    err_c, err_s = np.abs(err_c), np.abs(err_s)
    return {'cases': cases, 'link_radius_m': link_radius,
            'capsule_error_median_m': float(np.median(err_c)),
            'capsule_error_max_m': float(err_c.max()),
            'shapes_error_max_m': float(err_s.max()),
            'capsule_step_us': 1e6 * float(np.median(t_c)),
            'shapes_step_us': 1e6 * float(np.median(t_s))}


def lines(name, r):
    """Text lines of :func:`compare`'s result ``r`` for robot ``name``."""
    return [f"{name}: SAM eq. 19 clearance on {r['cases']} cases, |error| against coal on "
            f"the URDF shapes: capsules (r {r['link_radius_m']:g} m) median "
            f"{1e3 * r['capsule_error_median_m']:.1f} mm, max "
            f"{1e3 * r['capsule_error_max_m']:.1f} mm; URDF shapes max "
            f"{1e3 * r['shapes_error_max_m']:.4f} mm; step {r['capsule_step_us']:.0f} us "
            f"(capsules) vs {r['shapes_step_us']:.0f} us (shapes)"]

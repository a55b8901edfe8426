"""Obstacle avoidance, the secondary task of SAM eq. (19), without ROS."""

from hypothesis import given, settings, strategies as st
from ik_control import robots
from ik_control.ik.obstacles import ObstacleAvoidance
import numpy as np
import pytest

WAM = robots.robot('wam')


def _kinematics(model, q):
    ws = model.workspace()
    ws.update(q)
    return ws


@pytest.mark.parametrize('name', ['wam', 'simon'])
def test_point_jacobian_matches_finite_differences(name):
    model = robots.robot(name)
    avoid = ObstacleAvoidance(model)
    rng = np.random.default_rng(3)
    q = model.random_configurations(1, rng, margin=0.1)[0]
    ws = _kinematics(model, q)
    for link in np.unique(avoid.segments[:, 3]):
        offset = rng.normal(size=3) * 0.1  # a point fixed to the link, in its frame
        T = ws.joint_T[link]
        p = T[:3, :3] @ offset + T[:3, 3]
        J = avoid.point_jacobian(ws.joint_T, link, p)
        eps = 1e-6
        for c in range(model.nq):
            dq = np.zeros(model.nq)
            dq[c] = eps
            Tp = _kinematics(model, q + dq).joint_T[link]
            Tm = _kinematics(model, q - dq).joint_T[link]
            numeric = ((Tp[:3, :3] @ offset + Tp[:3, 3]) - (Tm[:3, :3] @ offset + Tm[:3, 3]))
            np.testing.assert_allclose(J[:, c], numeric / (2 * eps), atol=1e-6)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.floats(-1.5, 1.5), st.floats(-1.5, 1.5), st.floats(-0.5, 2.0),
                          st.floats(0.0, 0.3)), min_size=1, max_size=5),
       st.integers(0, 1000))
def test_clearance_is_the_distance_from_sphere_to_capsule(spheres, seed):
    avoid = ObstacleAvoidance(WAM, link_radius=0.04)
    q = WAM.random_configurations(1, np.random.default_rng(seed))[0]
    ws = _kinematics(WAM, q)
    centers = np.array([s[:3] for s in spheres])
    radii = np.array([s[3] for s in spheres])
    avoid.set_obstacles(centers, radii)
    d, p, n = avoid.clearances(ws.joint_T, ws.frame_T)
    a, b = avoid.endpoints(ws.joint_T, ws.frame_T)
    t = np.linspace(0.0, 1.0, 2001)
    for s in range(a.shape[0]):
        samples = a[s] + t[:, None] * (b[s] - a[s])
        for o in range(len(spheres)):
            brute = np.min(np.linalg.norm(samples - centers[o], axis=1)) - radii[o] - 0.04
            assert d[s, o] <= brute + 1e-9
            assert d[s, o] >= brute - 1e-3 * np.linalg.norm(b[s] - a[s]) - 1e-9
            # the escape direction points from the sphere to the arm
            if np.linalg.norm(p[s, o] - centers[o]) > 1e-6:
                assert n[s, o] @ (p[s, o] - centers[o]) > 0


def test_wam_keeps_its_tool_pose_and_moves_its_elbow_off_a_sphere():
    """A sphere 3 cm from the elbow: within 2 s the elbow is out of reach, the tool still."""
    from ik_control.ik.solver import SolverConfig, VelocitySolver
    model, dt = WAM, 1.0 / 500.0
    q = robots.ready_pose('wam').copy()
    solver = VelocitySolver(model, SolverConfig(damping=0.01))
    avoid = ObstacleAvoidance(model, influence=0.1, gain=5.0, link_radius=0.05)
    ws = _kinematics(model, q)
    target = ws.frame_T.copy()
    elbow_link = avoid.segments[len(avoid.segments) // 2, 3]
    a, b = avoid.endpoints(ws.joint_T, ws.frame_T)
    s = int(np.flatnonzero(avoid.segments[:, 3] == elbow_link)[0])
    mid = 0.5 * (a[s] + b[s])
    side = np.cross(b[s] - a[s], [0.0, 0.0, 1.0])
    side /= np.linalg.norm(side)
    avoid.set_obstacles([mid + side * (0.05 + 0.05 + 0.03)], [0.05])  # 3 cm clearance
    clearance0 = None
    for _ in range(1000):
        dq = solver.step(q, target).copy()
        ws = _kinematics(model, q)
        dq, clearance = avoid.step(solver.J, dq, ws.joint_T, ws.frame_T, dt)
        clearance0 = clearance if clearance0 is None else clearance0
        q = np.clip(q + dq, model.lower, model.upper)
    ws = _kinematics(model, q)
    d, _, _ = avoid.clearances(ws.joint_T, ws.frame_T)
    assert clearance0 < 0.035
    assert d.min() > 0.06  # well out of the sphere's way
    assert np.linalg.norm(ws.frame_T[0, :3, 3] - target[0, :3, 3]) < 2e-3
    rotation = ws.frame_T[0, :3, :3].T @ target[0, :3, :3]
    assert np.arccos(np.clip((np.trace(rotation) - 1) / 2, -1, 1)) < 1e-2


def test_with_the_urdf_shapes_the_elbow_leaves_a_sphere_as_coal_measures_it():
    """SAM eq. 19 on the WAM's URDF shapes: the elbow's clearance (coal's) grows, tool still."""
    from ik_control.collision.model import CollisionModel
    from ik_control.ik.solver import SolverConfig, VelocitySolver
    model, dt = WAM, 1.0 / 500.0
    q = robots.ready_pose('wam').copy()
    solver = VelocitySolver(model, SolverConfig(damping=0.01))
    avoid = ObstacleAvoidance(model, influence=0.1, gain=5.0,
                              shapes=CollisionModel(model, self_pairs=False))
    judge = CollisionModel(model, self_pairs=False)  # coal and GJK, no eq. 19 in it
    ws = _kinematics(model, q)
    target = ws.frame_T.copy()
    elbow = ws.joint_T[3, :3, 3]  # the fourth joint's origin
    side = np.cross(elbow - ws.joint_T[2, :3, 3], [0.0, 0.0, 1.0])
    sphere = elbow + 0.14 * side / np.linalg.norm(side)
    avoid.set_obstacles([sphere], [0.05])
    pose = np.eye(4)
    pose[:3, 3] = sphere
    judge.set_scene([('sphere', pose, (0.1, 0.1, 0.1))])
    start = judge.closest(q)[0]

    def run(q, term):
        for _ in range(1000):
            dq = solver.step(q, target).copy()
            ws = _kinematics(model, q)
            if term:
                dq, _ = avoid.step(solver.J, dq, ws.joint_T, ws.frame_T, dt)
            q = np.clip(q + dq, model.lower, model.upper)
        return q

    q_with, q_without = run(q, True), run(q, False)
    assert start < 0.06
    assert judge.closest(q_with)[0] > start + 0.03  # the links moved off the sphere
    assert judge.closest(q_without)[0] < start + 0.01  # (not without the term)
    hand = _kinematics(model, q_with).frame_T[0, :3, 3]
    assert np.linalg.norm(hand - target[0, :3, 3]) < 2e-3


def test_bad_obstacles_are_refused():
    avoid = ObstacleAvoidance(WAM)
    for centers, radii in (([[np.nan, 0, 0]], [0.1]), ([[0, 0, 0]], [-0.1]),
                           ([[0, 0, 0]], [np.inf]), ([[0, 0, 0]] * 2, [0.1]),
                           (np.zeros((65, 3)), np.full(65, 0.1))):
        with pytest.raises(ValueError):
            avoid.set_obstacles(centers, radii)
    assert avoid.radii.size == 0

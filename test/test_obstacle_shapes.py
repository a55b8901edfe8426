"""Boxes and cylinders as exact shapes for obstacle avoidance (SAM eq. 19), without ROS."""

from hypothesis import given, settings, strategies as st
from ik_control import robots
from ik_control.ik.obstacles import ObstacleAvoidance
from ik_control.ik.solver import SolverConfig, VelocitySolver
import numpy as np
import pinocchio as pin
import pytest

WAM = robots.robot('wam')
LINK_RADIUS = 0.04


def _kinematics(q):
    ws = WAM.workspace()
    ws.update(q)
    return ws


def _signed_distance(shape, pose, scale, x):
    """Independent point-to-solid distance: project onto the solid by clamping (k points)."""
    local = (x - pose[:3, 3]) @ pose[:3, :3]
    half = 0.5 * np.asarray(scale)
    if shape == 'box':
        inside_depth = np.min(half - np.abs(local), axis=1)
        closest = np.clip(local, -half, half)
    else:
        r, h = max(half[0], half[1]), half[2]
        rho = np.linalg.norm(local[:, :2], axis=1)
        inside_depth = np.minimum(r - rho, h - np.abs(local[:, 2]))
        factor = np.minimum(1.0, r / np.maximum(rho, 1e-300))
        closest = np.column_stack([local[:, :2] * factor[:, None],
                                   np.clip(local[:, 2], -h, h)])
    outside = np.linalg.norm(local - closest, axis=1)
    return np.where(inside_depth > 0.0, -inside_depth, outside)


def _shape(draw_center, draw_rpy, draw_scale, kind):
    pose = np.eye(4)
    pose[:3, :3] = pin.rpy.rpyToMatrix(*draw_rpy)
    pose[:3, 3] = draw_center
    return kind, pose, draw_scale


SHAPE = st.tuples(st.sampled_from(['box', 'cylinder']),
                  st.tuples(st.floats(-0.8, 0.8), st.floats(-0.8, 0.8), st.floats(0.0, 1.4)),
                  st.tuples(*[st.floats(-3.0, 3.0)] * 3),
                  st.tuples(*[st.floats(0.02, 0.6)] * 3))


@settings(max_examples=50, deadline=None)
@given(st.lists(SHAPE, min_size=1, max_size=3), st.integers(0, 10**6))
def test_box_and_cylinder_clearance_is_the_exact_distance_to_the_capsule(shapes, seed):
    """Against brute force: the minimum over 2001 points of each segment."""
    avoid = ObstacleAvoidance(WAM, link_radius=LINK_RADIUS)
    specs = [_shape(c, rpy, scale, kind) for kind, c, rpy, scale in shapes]
    avoid.set_shapes(specs)
    ws = _kinematics(WAM.random_configurations(1, np.random.default_rng(seed))[0])
    d, p, n = avoid.clearances(ws.joint_T, ws.frame_T)
    a, b = avoid.endpoints(ws.joint_T, ws.frame_T)
    u = np.linspace(0.0, 1.0, 2001)
    for s in range(a.shape[0]):
        samples = a[s] + u[:, None] * (b[s] - a[s])
        length = np.linalg.norm(b[s] - a[s])
        for o, (kind, pose, scale) in enumerate(specs):
            brute = _signed_distance(kind, pose, scale, samples).min() - LINK_RADIUS
            assert d[s, o] <= brute + 1e-9
            assert d[s, o] >= brute - length / 2000.0 - 1e-9
            # p lies on the segment, and n is the outward normal of the shape there
            np.testing.assert_allclose(_signed_distance(kind, pose, scale, p[s, o][None])[0]
                                       - LINK_RADIUS, d[s, o], atol=1e-9)
            assert abs(np.linalg.norm(n[s, o]) - 1.0) < 1e-9
            step = _signed_distance(kind, pose, scale, (p[s, o] + 1e-5 * n[s, o])[None])[0]
            assert step - (d[s, o] + LINK_RADIUS) == pytest.approx(1e-5, rel=1e-3)


def test_a_box_is_avoided_closer_than_its_bounding_sphere():
    """A thin door-like box facing the upright WAM: the clearance is the gap to its face."""
    avoid = ObstacleAvoidance(WAM, link_radius=0.0)
    q = np.zeros(WAM.nq)                                  # the WAM straight up
    ws = _kinematics(q)
    pose = np.eye(4)
    pose[:3, 3] = [0.1 + 0.01, 0.0, 0.8]                  # face at x = 0.1, z 0.3 to 1.3
    avoid.set_shapes([('box', pose, (0.02, 1.0, 1.0))])
    d, _, n = avoid.clearances(ws.joint_T, ws.frame_T)
    a, b = avoid.endpoints(ws.joint_T, ws.frame_T)
    nearest_x = max(a[:, 0].max(), b[:, 0].max())         # the elbow's 4.5 cm offset
    assert d.min() == pytest.approx(0.1 - nearest_x, abs=1e-9)
    assert avoid.radii[0] > 0.7                           # its bounding sphere holds the arm
    np.testing.assert_allclose(n[np.unravel_index(np.argmin(d), d.shape)], [-1.0, 0.0, 0.0],
                               atol=1e-9)


def test_clearance_gradient_is_the_row_of_the_secondary_task():
    """
    d(clearance)/dq = n^T Jp(p): the secondary task row of eq. 19, by finite differences.

    Outside the shape, where the distance is differentiable (inside a box the deepest
    point lies on a ridge of the signed distance).
    """
    avoid = ObstacleAvoidance(WAM, link_radius=LINK_RADIUS)
    rng = np.random.default_rng(11)
    q = robots.ready_pose('wam')
    ws = _kinematics(q)
    a, b = avoid.endpoints(ws.joint_T, ws.frame_T)
    forearm = int(np.argmax(np.linalg.norm(b - a, axis=1)))
    side = np.cross(b[forearm] - a[forearm], [0.0, 0.0, 1.0])
    pose = np.eye(4)
    pose[:3, :3] = pin.rpy.rpyToMatrix(0.3, -0.2, 0.5)
    pose[:3, 3] = 0.5 * (a[forearm] + b[forearm]) + 0.25 * side / np.linalg.norm(side)
    for kind in ('box', 'cylinder'):
        avoid.set_shapes([(kind, pose, (0.2, 0.2, 0.3))])
        d, p, n = avoid.clearances(ws.joint_T, ws.frame_T)
        s = int(np.argmin(d[:, 0]))
        assert 0.0 < d[s, 0] < 0.1
        row = n[s, 0] @ avoid.point_jacobian(ws.joint_T, avoid.segments[s, 3], p[s, 0])
        h = 1e-6
        for _ in range(3):
            dq = rng.normal(size=WAM.nq)
            plus = avoid.clearances(*_pair(q + h * dq))[0][s, 0]
            minus = avoid.clearances(*_pair(q - h * dq))[0][s, 0]
            assert (plus - minus) / (2 * h) == pytest.approx(row @ dq, abs=1e-5)


def _pair(q):
    ws = _kinematics(q)
    return ws.joint_T, ws.frame_T


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from(['box', 'cylinder']))
def test_the_secondary_goal_leaves_the_primary_task_unchanged(seed, kind):
    """J1 dq = J1 dq1: the obstacle term of eq. 19 lies in the null space of the task."""
    rng = np.random.default_rng(seed)
    q = WAM.random_configurations(1, rng, margin=0.1)[0]
    solver = VelocitySolver(WAM, SolverConfig(damping=0.0, adaptive_damping=False,
                                              method='pseudoinverse', max_joint_step=0.0))
    ws = _kinematics(q)
    target = ws.frame_T.copy()
    target[0, :3, 3] += rng.normal(size=3) * 0.01
    dq1 = solver.step(q, target).copy()
    J1 = solver.J.copy()
    avoid = ObstacleAvoidance(WAM, influence=0.3, gain=5.0, link_radius=LINK_RADIUS)
    pose = np.eye(4)
    pose[:3, 3] = ws.joint_T[3, :3, 3] + rng.normal(size=3) * 0.1 + [0.2, 0.0, 0.0]
    avoid.set_shapes([(kind, pose, (0.15, 0.15, 0.3))])
    dq, clearance = avoid.step(J1, dq1, ws.joint_T, ws.frame_T, 0.002)
    if clearance < avoid.influence:
        assert np.linalg.norm(dq - dq1) > 0.0
    np.testing.assert_allclose(J1 @ dq, J1 @ dq1, atol=1e-7 * max(1.0, np.abs(dq).max()))


@pytest.mark.parametrize('shapes, message', [
    ([('cone', np.eye(4), (0.1, 0.1, 0.1))], 'sphere'),
    ([('box', np.eye(4), (0.1, 0.0, 0.1))], 'finite and > 0'),
    ([('box', 2 * np.eye(4), (0.1, 0.1, 0.1))], 'rigid'),
    ([('box', np.full((4, 4), np.nan), (0.1, 0.1, 0.1))], 'rigid'),
    ([('box', np.eye(4), (0.1, 0.1, 0.1))] * 65, 'at most'),
])
def test_bad_shapes_are_refused(shapes, message):
    avoid = ObstacleAvoidance(WAM)
    with pytest.raises(ValueError, match=message):
        avoid.set_shapes(shapes)
    assert avoid.radii.size == 0

"""Collision checking for the planners (pinocchio GeometryModel + coal), without ROS."""

import coal
from hypothesis import given, settings, strategies as st
from ik_control import robots
from ik_control.planning.collision import CollisionChecker
from ik_control.planning.obstacles import Obstacle, obstacle_from_dict, pose_from
from ik_control.validation import InputError
import numpy as np
import pinocchio as pin
import pytest

WAM = robots.robot('wam')
FREE = CollisionChecker(WAM)          # self collision only


def _tool(q):
    return WAM.frame_placements(q)[0][:3, 3]


def test_robot_shapes_come_from_the_urdf_and_adjacent_links_are_not_paired():
    gm = FREE.geometry_model
    names = {g.name for g in gm.geometryObjects}
    assert {'wam_link_3_0', 'wam_link_5_0', 'wam_link_7_0'} <= names
    parents = WAM.pin_model.parents
    for pair in gm.collisionPairs:
        ja = gm.geometryObjects[pair.first].parentJoint
        jb = gm.geometryObjects[pair.second].parentJoint
        assert ja != jb and parents[ja] != jb and parents[jb] != ja
    assert FREE.pair_count > 10
    assert FREE.config_free(robots.ready_pose('wam'))


def test_sphere_at_the_tool_collides_and_far_away_does_not():
    q = robots.ready_pose('wam')
    near = CollisionChecker(WAM, [Obstacle('ball', 'sphere', (0.03,), pose_from(_tool(q)))])
    far = CollisionChecker(WAM, [Obstacle('ball', 'sphere', (0.03,),
                                          pose_from(_tool(q) + [0.0, 0.0, 1.0]))])
    assert not near.config_free(q)
    assert near.colliding_pair(q)[1] == 'obstacle:ball'
    assert far.config_free(q) and far.colliding_pair(q) is None


def test_obstacle_on_the_fixed_base_is_refused_and_bad_obstacles_too():
    with pytest.raises(InputError, match='fixed part'):
        CollisionChecker(WAM, [Obstacle('crate', 'box', (0.2, 0.2, 0.2), pose_from((0, 0, 0.05)))])
    with pytest.raises(InputError, match='> 0'):
        Obstacle('bad', 'box', (0.2, -0.1, 0.2))
    with pytest.raises(InputError, match='type'):
        obstacle_from_dict({'name': 'x', 'type': 'cone', 'size': 1.0, 'position': [0, 0, 0]})
    with pytest.raises(InputError, match='missing'):
        obstacle_from_dict({'name': 'x', 'type': 'sphere', 'size': 1.0})
    with pytest.raises(InputError, match='resolution'):
        CollisionChecker(WAM, resolution=0.0)


def test_environment_checks_match_brute_force_distances():
    """A sphere obstacle collides exactly when some moving shape is within the clearance."""
    rng = np.random.default_rng(5)
    gm = FREE.geometry_model
    data = pin.GeometryData(gm)
    checked = 0
    for _ in range(150):
        q = WAM.random_configurations(1, rng)[0]
        if not FREE.config_free(q):
            continue
        centre = _tool(q) + rng.uniform(-0.4, 0.4, 3)
        radius = float(rng.uniform(0.02, 0.15))
        checker = CollisionChecker(WAM, [Obstacle('s', 'sphere', (radius,), pose_from(centre))])
        pin.updateGeometryPlacements(WAM.pin_model, WAM.pin_data, gm, data,
                                     WAM.tree_configuration(q))
        ball, at = coal.Sphere(radius), coal.Transform3s(np.eye(3), centre)
        closest = np.inf
        for k, g in enumerate(gm.geometryObjects):
            if g.parentJoint == 0:
                continue
            placement = data.oMg[k]
            res = coal.DistanceResult()
            coal.distance(g.geometry, coal.Transform3s(placement.rotation, placement.translation),
                          ball, at, coal.DistanceRequest(), res)
            closest = min(closest, res.min_distance)
        if abs(closest - checker.clearance) < 1e-4:
            continue
        assert checker.config_free(q) == (closest > checker.clearance)
        checked += 1
    assert checked > 60


def test_every_link_point_moves_at_most_the_resolution_between_samples():
    rng = np.random.default_rng(2)
    ws = WAM.workspace()
    for _ in range(20):
        q0, q1 = WAM.random_configurations(2, rng)
        n = FREE.segment_steps(q0, q1)
        fine = np.linspace(0.0, 1.0, 20 * n + 1)
        points = []
        for s in fine:
            ws.update(q0 + s * (q1 - q0), jacobian=False)
            # the far end of every joint's frame and the tool, as link points
            points.append(np.vstack([ws.joint_T[:, :3, 3] + ws.joint_T[:, :3, 2] * 0.3,
                                     ws.frame_T[:, :3, 3]]))
        points = np.array(points)
        travel = np.linalg.norm(np.diff(points, axis=0), axis=2).sum(axis=0)
        assert travel.max() / n <= FREE.resolution * (1.0 + 1e-9)


@settings(max_examples=25, deadline=None)
@given(st.floats(0.2, 0.8), st.floats(0.0005, 0.003), st.floats(-0.05, 0.05))
def test_thin_plates_are_not_tunnelled_through(s, thickness, shift):
    """A 0.5-3 mm plate across the tool's path mid-segment is found at 5 cm resolution."""
    q0 = np.array([-1.3, 0.9, 0.0, 1.2, 0.0, 0.4, 0.0])
    q1 = q0.copy()
    q1[0] = 1.3
    p = _tool(q0 + s * (q1 - q0))
    heading = np.arctan2(p[1], p[0])           # the tool moves along the circle about z
    plate = Obstacle('plate', 'box', (0.3, thickness, 0.3),
                     pose_from(p + [0.0, 0.0, shift], (0.0, 0.0, heading)))
    checker = CollisionChecker(WAM, [plate], resolution=0.05)
    assert checker.config_free(q0) and checker.config_free(q1)
    assert checker.segment_steps(q0, q1) < 100    # far fewer samples than the plate needs
    brute = CollisionChecker(WAM, [plate], resolution=1e-9)   # clearance 0: touching only
    # 2.6 mm tool steps: the 8 cm wide links stay across the plate for many of them
    assert any(not brute.config_free(q0 + t * (q1 - q0)) for t in np.linspace(0, 1, 601))
    assert not checker.segment_free(q0, q1)

"""Collision checking for the planners (the robot's CollisionModel), without ROS."""

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
    cm = FREE.collision          # the controller's and sim_robot's model
    assert {'wam_link_3_0', 'wam_link_5_0', 'wam_link_7_0'} <= set(cm.names)
    for a, b in cm.pairs:
        assert frozenset((cm.links[a], cm.links[b])) not in cm.adjacent
        assert cm.links[a] != cm.links[b]
    assert FREE.pair_count == len(cm.pairs) > 10
    assert FREE.config_free(robots.ready_pose('wam'))


def test_pairs_the_srdf_disables_are_not_checked():
    """The wrist against the forearm, disabled by an SRDF: the same pose becomes free."""
    cm = FREE.collision
    rng = np.random.default_rng(7)
    for q in WAM.random_configurations(400, rng):
        pair = FREE.colliding_pair(q)
        if pair is not None:
            break
    assert pair is not None
    links = [cm.links[cm.names.index(name)] for name in pair]
    srdf = (f'<robot name="wam"><disable_collisions link1="{links[0]}" link2="{links[1]}" '
            'reason="Never"/></robot>')
    relaxed = CollisionChecker(WAM, srdf=srdf)
    assert relaxed.pair_count < FREE.pair_count
    assert relaxed.colliding_pair(q) != pair


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
    gm = FREE.collision.geometry_model       # pinocchio + coal: the independent judge
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


# ---------------------------------------------------------------------- broad phase
ROTATED = [Obstacle('slab', 'box', (0.5, 0.04, 0.6), pose_from((0.5, 0.1, 0.4), (0.3, 0.2, 0.8))),
           Obstacle('pipe', 'cylinder', (0.05, 0.8), pose_from((0.3, -0.4, 0.5), (1.2, 0.4, 0.0))),
           Obstacle('ball', 'sphere', (0.12,), pose_from((0.45, 0.35, 0.7))),
           Obstacle('floor', 'box', (3.0, 3.0, 0.1), pose_from((0.0, 0.0, -0.3)))]


@pytest.mark.parametrize('obstacles', [(), ROTATED])
def test_broad_phase_decides_as_coal_alone_and_counts_the_same(obstacles):
    """Configurations and segments (with their check counts) as coal on every pair decides."""
    rng = np.random.default_rng(11)
    fast = CollisionChecker(WAM, obstacles)
    coal_only = CollisionChecker(WAM, obstacles, broad_phase=False)
    outcomes = set()
    for _ in range(300):
        q = WAM.random_configurations(1, rng)[0]
        free = fast.config_free(q)
        assert free == coal_only.config_free(q)
        u = rng.standard_normal(WAM.nq)
        q1 = np.clip(q + rng.uniform(0.05, 1.0) * u / np.linalg.norm(u), WAM.lower, WAM.upper)
        start = bool(rng.random() < 0.3)
        seg = fast.segment_free(q, q1, check_start=start)
        assert seg == coal_only.segment_free(q, q1, check_start=start)
        assert fast.checks == coal_only.checks
        outcomes.add((free, seg))
    assert outcomes == {(True, True), (True, False), (False, False)}


def test_broad_phase_leaves_coal_out_when_everything_is_far():
    """Far obstacles and a relaxed arm: no pair reaches coal; an obstacle at the tool does."""
    from ik_control.planning import broad_phase
    q = robots.ready_pose('wam')
    far = CollisionChecker(WAM, [Obstacle('ball', 'sphere', (0.1,), pose_from((2.0, 2.0, 2.0)))])
    near = CollisionChecker(WAM, [Obstacle('ball', 'sphere', (0.03,),
                                           pose_from(_tool(q) + [0.0, 0.0, 0.05]))])
    counts = []
    for checker in (far, near):
        CF, CI, SW, out = checker._screen
        counts.append(broad_phase.uncertain_pairs(checker._F, checker._I, checker._W, CF, CI,
                                                  SW, np.ascontiguousarray(q), out))
    assert counts[0] == 0 and 1 <= counts[1] <= 3      # the hand's three shapes at most
    cm = near.collision
    for k in out[:counts[1]]:
        assert cm.pairs[int(k)][1] == cm.robot_count   # the ball, the scene's only shape
    assert not near.config_free(q)


def test_covering_spheres_hold_every_robot_shape():
    """Points on each shape's surface lie inside its whole sphere and inside a cover sphere."""
    from ik_control.planning import broad_phase
    rng = np.random.default_rng(4)
    gm = FREE.collision.geometry_model
    data = pin.GeometryData(gm)
    CF, CI, SW, out = FREE._screen
    spheres = SW[:CI[0] * 4].reshape(-1, 4)
    start = FREE._start
    for _ in range(20):
        q = WAM.random_configurations(1, rng)[0]
        broad_phase.uncertain_pairs(FREE._F, FREE._I, FREE._W, CF, CI, SW, q, out)
        pin.updateGeometryPlacements(WAM.pin_model, WAM.pin_data, gm, data,
                                     WAM.tree_configuration(q))
        for g in range(len(start) - 1):
            shape = gm.geometryObjects[g].geometry
            kind = type(shape).__name__
            u = rng.standard_normal((200, 3))
            if kind == 'Sphere':
                local = shape.radius * u / np.linalg.norm(u, axis=1)[:, None]
            elif kind == 'Cylinder':      # rim, caps and side
                a = rng.uniform(0, 2 * np.pi, 200)
                rad = shape.radius * np.where(rng.random(200) < 0.5, 1.0, rng.random(200))
                local = np.column_stack([rad * np.cos(a), rad * np.sin(a),
                                         rng.uniform(-1, 1, 200) * shape.halfLength])
                local[:50, 2] = np.sign(local[:50, 2]) * shape.halfLength
            else:                         # box: corners and faces
                local = np.sign(u) * shape.halfSide
                local[100:] *= np.where(rng.random((100, 3)) < 0.3, rng.random((100, 3)), 1.0)
            M = WAM.base_inv @ data.oMg[g].homogeneous
            points = local @ M[:3, :3].T + M[:3, 3]
            rows = spheres[start[g]:start[g + 1]]
            dist = np.linalg.norm(points[:, None, :] - rows[None, :, :3], axis=2) - rows[:, 3]
            assert np.all(dist[:, 0] <= 1e-9), gm.geometryObjects[g].name
            assert np.all(dist[:, 1:].min(axis=1) <= 1e-9), gm.geometryObjects[g].name


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(['box', 'sphere', 'cylinder']), st.floats(-1.0, 1.0),
       st.floats(-1.0, 1.0), st.floats(-1.0, 1.0), st.floats(-3.0, 3.0), st.floats(-1.5, 1.5),
       st.floats(-3.0, 3.0), st.floats(0.01, 0.2))
def test_obstacle_distances_are_exact(shape, x, y, z, roll, pitch, yaw, radius):
    """A sphere is 'apart' from a rotated obstacle exactly when coal's distance says so."""
    from ik_control.planning import broad_phase
    size = {'box': (0.4, 0.2, 0.6), 'sphere': (0.25,), 'cylinder': (0.15, 0.5)}[shape]
    obstacle = Obstacle('o', shape, size, pose_from((0.1, -0.2, 0.3), (roll, pitch, yaw)))
    centre = np.array([x, y, z])
    res = coal.DistanceResult()
    coal.distance(obstacle.coal_geometry(), coal.Transform3s(obstacle.pose[:3, :3],
                                                             obstacle.pose[:3, 3]),
                  coal.Sphere(radius), coal.Transform3s(np.eye(3), centre),
                  coal.DistanceRequest(), res)
    spheres = np.array([[*centre, radius]])
    inv = np.linalg.inv(obstacle.pose)[None]
    half = np.zeros((1, 3))
    half[0, :len(size)] = np.multiply(size, {'box': 0.5, 'sphere': 1.0,
                                             'cylinder': (1.0, 0.5)}[shape])
    code = broad_phase.OBSTACLE_CODES[shape]
    for limit in (0.005, 0.05):
        if abs(res.min_distance - limit) < 1e-6:
            continue
        apart = broad_phase._obstacle_apart(spheres, 0, inv, 0, code, half, limit)
        assert apart == (res.min_distance > limit)


def test_broad_phase_decides_half_a_millimetre_either_side_of_the_clearance():
    """Balls whose gap to the arm is the clearance +- 0.5 mm: free exactly when it is +."""
    rng = np.random.default_rng(8)
    gm = FREE.collision.geometry_model
    data = pin.GeometryData(gm)
    decided = {True: 0, False: 0}
    for _ in range(60):
        q = WAM.random_configurations(1, rng)[0]
        if not FREE.config_free(q):
            continue
        centre = _tool(q) + rng.uniform(-0.3, 0.3, 3)
        pin.updateGeometryPlacements(WAM.pin_model, WAM.pin_data, gm, data,
                                     WAM.tree_configuration(q))
        closest = {True: np.inf, False: np.inf}      # moving, fixed shapes
        for k, g in enumerate(gm.geometryObjects):
            res = coal.DistanceResult()
            coal.distance(g.geometry, coal.Transform3s(data.oMg[k].rotation,
                                                       data.oMg[k].translation),
                          coal.Sphere(1e-6), coal.Transform3s(np.eye(3), centre),
                          coal.DistanceRequest(), res)
            moving = g.parentJoint != 0
            closest[moving] = min(closest[moving], res.min_distance + 1e-6)
        closest, base = closest[True], closest[False]
        if closest < FREE.clearance + 0.01 or base < closest + 0.01:
            continue
        for gap in (-5e-4, 5e-4):
            radius = closest - FREE.clearance - gap
            checker = CollisionChecker(WAM, [Obstacle('b', 'sphere', (radius,),
                                                      pose_from(centre))])
            assert checker.config_free(q) == (gap > 0)
            decided[gap > 0] += 1
    assert min(decided.values()) > 20


def test_sphere_centres_move_at_most_the_step_bound_between_samples():
    """The premise of carrying a pair's gap along a segment: every centre moves <= L / n."""
    from ik_control.planning import broad_phase
    rng = np.random.default_rng(3)
    CF, CI, SW, out = FREE._screen
    spheres = SW[:CI[0] * 4].reshape(-1, 4)
    for _ in range(20):
        q0, q1 = WAM.random_configurations(2, rng)
        travel = float(np.dot(FREE.radii, np.abs(q1 - q0)))
        n = FREE.segment_steps(q0, q1)
        centres = []
        for s in np.linspace(0.0, 1.0, 8 * n + 1):     # 8 sub-steps per sample step
            broad_phase.uncertain_pairs(FREE._F, FREE._I, FREE._W, CF, CI, SW,
                                        q0 + s * (q1 - q0), out)
            centres.append(spheres[:, :3].copy())
        path = np.linalg.norm(np.diff(np.array(centres), axis=0), axis=2)
        per_step = path.reshape(n, 8, -1).sum(axis=1)
        assert per_step.max() <= travel / n * (1.0 + 1e-9)

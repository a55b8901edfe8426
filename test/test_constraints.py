"""Welman's geometric constraints (ik_control.ik.constraints): held through random motions."""

import json

from hypothesis import given, settings, strategies as st
from ik_control import robots
from ik_control.ik.constraints import (CentreOfMass, ConstraintSet, drag_force, Handle,
                                       lagrange_multipliers, Orientation, PointOnLine,
                                       PointOnPlane, PointToPoint)
from ik_control.validation import InputError
import numpy as np
import pytest

SIMON = robots.robot('simon')
WAM = robots.robot('wam')
KINDS = ('point', 'plane', 'line', 'orientation', 'all')


def _constraints(kind, model, q, rng):
    """Constraints of ``kind`` satisfied at ``q``, on random handle points and directions."""
    hand = model.end_effector_names[0]
    handle = Handle(hand, tuple(0.05 * rng.standard_normal(3)))
    p, R = handle.placement(model, q)
    made = {
        'point': [PointToPoint(handle, p)],
        'plane': [PointOnPlane(handle, p, rng.standard_normal(3))],
        'line': [PointOnLine(handle, p - 0.3 * np.array([1.0, 0.0, 0.0]), [1.0, 0.0, 0.0])],
        'orientation': [Orientation(hand, R)],
    }
    if kind == 'all':   # palm on a plane, the other hand's orientation and a point on a line
        other = Handle(model.end_effector_names[-1])
        p2, R2 = other.placement(model, q)
        return [made['plane'][0], Orientation(other.frame, R2),
                PointOnLine(other, p2, rng.standard_normal(3))]
    return made[kind]


@pytest.mark.parametrize('kind', KINDS)
@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_constraint_is_held_to_1e9_after_many_random_applied_motions(kind, seed):
    rng = np.random.default_rng(seed)
    model = SIMON if kind == 'all' else WAM
    q = model.random_configurations(1, rng, margin=0.2)[0]
    cs = ConstraintSet(model, _constraints(kind, model, q, rng))
    scale = 1.0 + np.linalg.norm(model.pin_frame_placement(q, model.end_effector_names[0])[:3, 3])
    q_start = q.copy()
    for _ in range(25):
        step = cs.step(q, rng.standard_normal(model.nq), dt=0.04)
        q = step.q
        assert step.residual <= 1e-9 * scale
        assert np.all(q >= model.lower) and np.all(q <= model.upper)
    assert cs.residual(q) <= 1e-9 * scale
    assert np.abs(q - q_start).max() > 0.01       # the applied motions did move the arm


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_constraint_force_cancels_exactly_the_violating_part(seed):
    # at a satisfied pose with K = I: q_dot is the orthogonal projection of g_a onto the
    # null space of J_c (J_c q_dot = 0 and g_a - q_dot = J_c^T lambda is orthogonal to q_dot)
    rng = np.random.default_rng(seed)
    q = SIMON.random_configurations(1, rng, margin=0.2)[0]
    cs = ConstraintSet(SIMON, _constraints('all', SIMON, q, rng))
    g_a = rng.standard_normal(SIMON.nq)
    q_dot, lam = cs.velocity(q, g_a)
    _, Jc = cs.evaluate(q)
    assert np.linalg.norm(Jc @ q_dot) <= 1e-9 * np.linalg.norm(Jc) * np.linalg.norm(g_a)
    assert abs((g_a - q_dot) @ q_dot) <= 1e-9 * (g_a @ g_a)
    np.testing.assert_allclose(g_a - q_dot, -Jc.T @ lam, atol=1e-9)
    # the projection keeps every motion the constraints allow: projecting twice changes nothing
    q_dot2, _ = cs.velocity(q, q_dot)
    np.testing.assert_allclose(q_dot2, q_dot, atol=1e-9 * np.linalg.norm(g_a))


def test_redundant_constraints_are_harmless_with_truncated_svd():
    q = robots.ready_pose('wam')
    handle = Handle('tool')
    p, _ = handle.placement(WAM, q)
    plane = PointOnPlane(handle, p, (0.0, 0.0, 1.0))
    cs = ConstraintSet(WAM, [plane, plane, PointOnLine(handle, p, (1.0, 0.0, 0.0))])
    step = cs.step(q, np.ones(7), 0.05)
    assert step.residual < 1e-12 and np.all(np.isfinite(step.q))


def test_drag_moves_the_palm_along_the_table_plane_and_not_through_it():
    q = robots.ready_pose('simon')
    palm = Handle('right_hand')
    p0, _ = palm.placement(SIMON, q)
    cs = ConstraintSet(SIMON, [PointOnPlane(palm, p0, (0.0, 0.0, 1.0))])
    for _ in range(40):   # drag forward and down: the down part is cancelled
        q = cs.step(q, drag_force(SIMON, palm, q, (1.0, 0.0, -1.0)), 0.02).q
    p, _ = palm.placement(SIMON, q)
    assert p[0] - p0[0] > 0.05 and abs(p[2] - p0[2]) < 1e-9


def test_joint_limits_hold_while_pushing_into_them():
    q = robots.ready_pose('wam')
    handle = Handle('tool')
    cs = ConstraintSet(WAM, [PointOnPlane(handle, handle.placement(WAM, q)[0], (0, 0, 1))])
    push = np.full(7, 5.0)
    held = set()
    for _ in range(60):
        step = cs.step(q, push, 0.05)
        q = step.q
        held |= set(step.held)
        assert step.residual < 1e-9
        assert np.all(q >= WAM.lower) and np.all(q <= WAM.upper)
        for name in step.held:      # a held joint sits on its limit
            i = WAM.joint_names.index(name)
            assert min(abs(q[i] - WAM.lower[i]), abs(q[i] - WAM.upper[i])) < 1e-12
    assert held


def test_truncated_svd_multipliers_match_the_normal_equations_when_full_rank():
    rng = np.random.default_rng(0)
    Jc, K, g = rng.standard_normal((3, 7)), rng.uniform(0.5, 2.0, 7), rng.standard_normal(7)
    C = rng.standard_normal(3)
    lam = lagrange_multipliers(Jc, K, g, C, 2.0, 1e-9)
    np.testing.assert_allclose((Jc * K) @ Jc.T @ lam, -(Jc * K) @ g - 2.0 * C, atol=1e-10)


def test_bad_input_is_refused():
    handle = Handle('tool')
    with pytest.raises(InputError, match='zero'):
        PointOnPlane(handle, (0, 0, 0), (0, 0, 0))
    with pytest.raises(InputError, match='rotation'):
        Orientation('tool', np.ones((3, 3)))
    with pytest.raises(InputError, match='at least one'):
        ConstraintSet(WAM, [])
    cs = ConstraintSet(WAM, [PointToPoint(handle, (0.5, 0.0, 0.5))])
    with pytest.raises(InputError, match='dt'):
        cs.step(robots.ready_pose('wam'), np.zeros(7), 0.0)
    with pytest.raises(InputError, match='NaN'):
        cs.step(robots.ready_pose('wam'), np.full(7, np.nan), 0.1)


def test_task_velocity_is_allowed_motion_that_does_the_task_where_it_can():
    q = robots.ready_pose('simon')
    palm = Handle('right_hand')
    p0, _ = palm.placement(SIMON, q)
    cs = ConstraintSet(SIMON, [PointOnPlane(palm, p0, (0.0, 0.0, 1.0))])
    N = cs.null_space(q)
    _, Jc = cs.evaluate(q)
    assert np.abs(Jc @ N).max() < 1e-12 and np.allclose(N @ N, N, atol=1e-12)
    _, Jp, _ = palm.jacobians(SIMON, q)
    v = np.array([0.1, -0.05, 0.2])          # the upward part cannot be done
    q_dot = cs.task_velocity(q, Jp, v, damping=1e-6)
    assert abs(Jc @ q_dot).max() < 1e-12
    np.testing.assert_allclose(Jp @ q_dot, [0.1, -0.05, 0.0], atol=1e-6)


def test_constraint_demo_command_keeps_the_palm_on_the_plane(tmp_path, capsys):
    from ik_control import cli

    png = tmp_path / 'constraint.png'
    code = cli.main(['constraint-demo', '--seconds', '1', '--rate', '50', '--plot', str(png),
                     '--json'])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and png.stat().st_size > 10000
    assert summary['plane_error_max_m'] < 1e-9 and summary['held_error_max_m'] < 1e-9
    assert summary['tracking_error_max_m'] < 1e-4
    assert summary['free_palm_off_plane_max_m'] > 0.03      # without them it leaves the plane


def test_constraint_demo_with_the_centre_of_mass_keeps_all_five(tmp_path, capsys):
    """`constraint-demo --centre-of-mass`: the palm tracks with the CoM on its line."""
    from ik_control import cli

    png = tmp_path / 'constraint.png'
    code = cli.main(['constraint-demo', '--seconds', '4', '--rate', '50', '--radius', '0.06',
                     '--height', '0.04', '--centre-of-mass', '--plot', str(png), '--json'])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and summary['centre_of_mass'] and summary['refused_steps'] == 0
    assert summary['com_error_max_m'] < 1e-9 and summary['plane_error_max_m'] < 1e-9
    assert summary['held_error_max_m'] < 1e-9 and summary['tracking_error_max_m'] < 1e-4


@pytest.mark.parametrize('refuse', [True, False])
def test_a_step_the_free_joints_cannot_keep_is_refused_not_taken(refuse):
    """
    The demo's circle with the CoM line: at about 1 s the right elbow and wrist reach limits.

    Held there, the five constraints cannot be kept: the step is refused and the robot
    stays where every constraint holds. Negative control: with the refusal off
    (``feasibility_tolerance`` infinite) the steps break the constraints by centimetres.
    """
    from ik_control import constraint_demo as demo

    q = robots.ready_pose('simon')
    palm, held = Handle(demo.PALM), Handle(demo.HELD)
    p0, R0 = palm.placement(SIMON, q)
    cs = ConstraintSet(SIMON, [
        PointOnPlane(palm, p0, (0.0, 0.0, 1.0)), Orientation(demo.PALM, R0),
        PointToPoint(held, held.placement(SIMON, q)[0]),
        Orientation(demo.HELD, held.placement(SIMON, q)[1]),
        PointOnLine(CentreOfMass(), CentreOfMass().placement(SIMON, q)[0], (0.0, 0.0, 1.0))],
        feasibility_tolerance=1e-9 if refuse else np.inf)
    dt, worst, refused = 0.01, 0.0, 0
    for i in range(160):
        goal = demo._goal(p0, (i + 1) * dt, 4.0, 0.1, 0.06)
        p, Jp, _ = palm.jacobians(SIMON, q)
        step = cs.step(q, cs.task_velocity(q, Jp, (goal - p) / dt), dt)
        refused += not step.feasible
        assert step.feasible or np.array_equal(step.q, q)
        q = step.q
        worst = max(worst, cs.residual(q))
    if refuse:
        assert refused > 0 and worst < 1e-9
    else:
        assert refused == 0 and worst > 1e-2


def _urdf_centre_of_mass(q):
    """
    Return the centre of mass [m] of SIMON in simon_base at ``q``: pinocchio on the URDF.

    Its ``<mimic>`` joints (the torso's parallel link) follow their leaders, read here
    from the URDF itself.
    """
    from xml.etree import ElementTree

    import pinocchio as pin

    path = robots.urdf_path('simon')
    model = pin.buildModelFromUrdf(path)
    data = model.createData()
    qt = pin.neutral(model)
    values = dict(zip(SIMON.joint_names, q))
    for joint in ElementTree.parse(path).getroot().iter('joint'):
        mimic = joint.find('mimic')
        if mimic is not None:
            values[joint.get('name')] = (float(mimic.get('multiplier', 1.0))
                                         * values[mimic.get('joint')]
                                         + float(mimic.get('offset', 0.0)))
    for name, value in values.items():
        qt[model.joints[model.getJointId(name)].idx_q] = value
    c = pin.centerOfMass(model, data, qt)
    pin.framesForwardKinematics(model, data, qt)
    base = data.oMf[model.getFrameId('simon_base')]
    return base.rotation.T @ (c - base.translation)


def test_the_centre_of_mass_reaches_its_target_while_the_palm_stays_on_the_table():
    """Welman's centre-of-mass handle moved as a task, the palm held on its plane."""
    from ik_control.ik.constraints import CentreOfMass

    q = np.array(robots.ready_pose('simon'), dtype=float)
    palm = Handle('right_hand')
    p0, _ = palm.placement(SIMON, q)
    cs = ConstraintSet(SIMON, [PointOnPlane(palm, p0, (0.0, 0.0, 1.0))])
    com = CentreOfMass()
    c0 = com.placement(SIMON, q)[0]
    np.testing.assert_allclose(c0, _urdf_centre_of_mass(q), atol=1e-12)
    target = c0 + np.array([0.03, 0.0, -0.005])   # lean forward: the torso pitches
    dt, gain = 0.01, 5.0
    for _ in range(600):
        c, J, _ = com.jacobians(SIMON, q)
        q = cs.step(q, cs.task_velocity(q, J, gain * (target - c)), dt).q
        assert cs.residual(q) < 1e-9
    assert np.linalg.norm(_urdf_centre_of_mass(q) - target) < 1e-3
    assert abs(palm.placement(SIMON, q)[0][2] - p0[2]) < 1e-9
    assert np.all(q >= SIMON.lower) and np.all(q <= SIMON.upper)


@pytest.mark.parametrize('held', [True, False])
def test_a_com_constraint_keeps_the_centre_of_mass_on_its_line_while_the_hand_moves(held):
    """
    ``frame: com`` in the controller's constraints: the robot's mass stays over its base.

    Negative control (``held`` False, no constraint): the same goal moves it off the line.
    """
    from ik_control.control.config import ControllerConfig
    from ik_control.control.controller import ResolvedRateController

    rate = 200.0
    line = '[{type: line, frame: com, direction: [0, 0, 1]}]' if held else ''
    config = ControllerConfig(rate_hz=rate, constraints=line).updated(
        {'fallback.strategy': 'off', 'collision.enabled': False})
    c = ResolvedRateController(SIMON, config)
    q = np.array(robots.ready_pose('simon'), dtype=float)
    c.set_joint_state(SIMON.joint_names, q, 0.0)
    c.update(0.0)
    c0 = _urdf_centre_of_mass(q)
    goal = SIMON.frame_placements(q)[0]
    goal[:3, 3] += (0.1, -0.05, 0.05)
    c.set_target_matrix('right_hand', goal)
    worst = 0.0
    for k in range(1, 401):   # an ideal robot at each committed knot
        q = c.update(k / rate).at(1.0 / rate)[0]
        c.set_joint_state(SIMON.joint_names, q, k / rate)
        worst = max(worst, float(np.linalg.norm((_urdf_centre_of_mass(q) - c0)[:2])))
    assert worst < 1e-9 if held else worst > 1e-3, worst
    hand = SIMON.frame_placements(q)[0][:3, 3]
    assert np.linalg.norm(hand - goal[:3, 3]) < 0.05  # the hand still went most of the way


def test_the_centre_of_mass_frame_takes_no_orientation_or_point():
    from ik_control.control.constrained_motion import constraints_from_yaml

    with pytest.raises(InputError, match='centre of mass'):
        constraints_from_yaml('[{type: orientation, frame: com}]')
    with pytest.raises(InputError, match='centre of mass'):
        constraints_from_yaml('[{type: point, frame: com, point: [0, 0, 0.1]}]')

"""Cyclic coordinate descent (ik_control.ik.ccd) against brute force and pinocchio FK."""

from hypothesis import given, settings, strategies as st
from ik_control import robots
from ik_control.ik import ccd
from ik_control.ik.ccd import Ccd, ccd_solve
from ik_control.ik.ccd_motion import CcdMotion
from ik_control.kinematics import RobotModel
from ik_control.kinematics.dh import JointSpec, tree_urdf
from ik_control.validation import InputError
import numpy as np
import pinocchio as pin
import pytest

# Planar chain in the xy plane: revolute, prismatic (extends the first link), revolute.
PLANAR_URDF = tree_urdf('planar_rpr', 'base_link', [
    JointSpec('shoulder', 'base_link', 'l1', axis=(0.0, 0.0, 1.0), lower=-2.5, upper=2.5),
    JointSpec('slide', 'l1', 'l2', xyz=(0.5, 0.0, 0.0), axis=(1.0, 0.0, 0.0),
              kind='prismatic', lower=0.0, upper=0.3),
    JointSpec('elbow', 'l2', 'l3', axis=(0.0, 0.0, 1.0), lower=-2.5, upper=2.5),
    JointSpec('tool_joint', 'l3', 'tool', xyz=(0.4, 0.0, 0.0), kind='fixed'),
])
PLANAR = RobotModel.from_urdf(PLANAR_URDF, end_effectors=[('tool', 'position')])
WAM = robots.robot('wam')
SIMON = robots.robot('simon')


def _rotation(rng):
    return pin.exp3(rng.uniform(-np.pi, np.pi, 3) / np.sqrt(3.0))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(0.0, 2.0), st.floats(0.0, 2.0))
def test_closed_form_angle_is_the_best_rotation_on_a_fine_grid(seed, w_p, w_o):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(3)
    a /= np.linalg.norm(a)
    p_ic, p_id = rng.standard_normal(3), rng.standard_normal(3)
    Rc, Rd = _rotation(rng), _rotation(rng)
    k1, k2, k3 = ccd.gain_coefficients(p_ic, p_id, a, Rc, Rd, w_p, w_o)
    phis = np.linspace(-np.pi, np.pi, 721)

    def gain(phi):
        R = pin.exp3(a * phi)
        return w_p * p_id @ (R @ p_ic) + w_o * np.trace(Rd.T @ R @ Rc)

    direct = np.array([gain(phi) for phi in phis])
    closed = k1 * (1 - np.cos(phis)) + k2 * np.cos(phis) + k3 * np.sin(phis)
    np.testing.assert_allclose(closed, direct, atol=1e-9 * (1 + np.abs(direct).max()))
    best = gain(ccd.best_rotation(k1, k2, k3))
    assert best >= direct.max() - 1e-9 * (1 + abs(best))


@settings(max_examples=80, deadline=None)
@given(st.floats(-4.0, 4.0), st.floats(-3.0, 3.0), st.floats(0.01, 3.0))
def test_limited_change_is_the_best_allowed_angle(delta, value, max_step):
    lower, upper = -1.0, 2.0
    value = float(np.clip(value, lower, upper))
    change = ccd.feasible_change(delta, value, lower, upper, max_step, True)
    assert lower - 1e-12 <= value + change <= upper + 1e-12 and abs(change) <= max_step + 1e-12
    allowed = np.linspace(max(lower - value, -max_step), min(upper - value, max_step), 2001)
    assert np.cos(change - delta) >= np.cos(allowed - delta).max() - 1e-9


def test_prismatic_joint_moves_by_the_projection_of_the_error():
    # only the slide free: one sweep puts the tool at the projection of the goal on x
    model = RobotModel.from_urdf(PLANAR_URDF, joints=['slide'],
                                 end_effectors=[('tool', 'position')])
    result = ccd_solve(model, [0.0], [0.95, 0.4, 0.0], max_iterations=1)
    assert result.q[0] == pytest.approx(0.05, abs=1e-12)
    result = ccd_solve(model, [0.0], [5.0, 0.0, 0.0], max_iterations=1)
    assert result.q[0] == pytest.approx(0.3)   # clamped at the upper limit


@settings(max_examples=40, deadline=None)
@given(st.floats(-2.4, 2.4), st.floats(0.0, 0.3), st.floats(-2.4, 2.4), st.integers(0, 999))
def test_planar_revolute_prismatic_chain_reaches_reachable_targets(q1, d, q3, seed):
    target = PLANAR.pin_frame_placement([q1, d, q3], 'tool')[:3, 3]
    q0 = PLANAR.random_configurations(1, np.random.default_rng(seed))[0]
    result = ccd_solve(PLANAR, q0, target, max_iterations=3000, tolerance=1e-6)
    reached = PLANAR.pin_frame_placement(result.q, 'tool')[:3, 3]
    assert np.all(result.q >= PLANAR.lower) and np.all(result.q <= PLANAR.upper)
    assert np.all(np.diff(result.errors[:, 0]) <= 1e-12)     # never moves away
    assert np.linalg.norm(reached - target) == pytest.approx(result.position_error, abs=1e-12)
    # CCD stops short only where a joint limit blocks the way round (a local minimum) or
    # holds the chain at the edge of its workspace (the slide fully out, the chain
    # straight: each sweep then gains less and less)
    at_limit = np.isclose(result.q, PLANAR.lower) | np.isclose(result.q, PLANAR.upper)
    assert (result.converged and result.position_error <= 1e-6) or at_limit.any()


def test_planar_chain_from_the_middle_of_its_ranges_solves_nearly_every_target():
    rng = np.random.default_rng(7)
    q_targets = PLANAR.random_configurations(50, rng, margin=0.05)
    solved = [ccd_solve(PLANAR, PLANAR.center, PLANAR.pin_frame_placement(q, 'tool')[:3, 3],
                        max_iterations=3000, tolerance=1e-6).converged for q in q_targets]
    assert np.mean(solved) >= 0.9


def test_out_of_reach_target_ends_at_the_nearest_reachable_point():
    target = np.array([1.0, 2.0, 0.0])        # reach is 0.5 + 0.3 + 0.4 = 1.2 m
    result = ccd_solve(PLANAR, [0.3, 0.0, 1.0], target, max_iterations=500)
    assert not result.converged
    assert result.position_error == pytest.approx(np.linalg.norm(target) - 1.2, abs=1e-6)


def test_wam_position_and_pose_goals_checked_with_pinocchio():
    rng = np.random.default_rng(3)
    q0 = robots.ready_pose('wam')
    for _ in range(3):
        T = WAM.pin_frame_placement(WAM.random_configurations(1, rng, 0.1)[0], 'tool')
        result = ccd_solve(WAM, q0, T[:3, 3], tolerance=1e-6, max_iterations=2000)
        assert result.converged
        assert np.linalg.norm(WAM.pin_frame_placement(result.q, 'tool')[:3, 3] - T[:3, 3]) < 1e-6
        pose = ccd_solve(WAM, q0, T[:3, 3], T[:3, :3], max_iterations=5000)
        reached = WAM.pin_frame_placement(pose.q, 'tool')
        assert pose.converged and np.linalg.norm(reached[:3, 3] - T[:3, 3]) < 1e-4
        assert np.linalg.norm(pin.log3(T[:3, :3] @ reached[:3, :3].T)) < 1e-3


def test_simon_right_hand_with_the_mimic_torso_joint():
    q0 = robots.ready_pose('simon')
    solver = Ccd(SIMON, 'right_hand')
    assert solver.chain_joints[-2:] == ('torso_x', 'torso_y')
    assert not any(n.startswith('left') for n in solver.chain_joints)
    q_goal = q0.copy()
    q_goal[:9] += np.array([0.2, -0.1, -0.3, 0.2, 0.1, 0.3, 0.2, 0.1, -0.2])
    T = SIMON.pin_frame_placement(q_goal, 'right_hand')
    result = solver.solve(q0, T[:3, 3], T[:3, :3], max_iterations=3000)
    reached = SIMON.pin_frame_placement(result.q, 'right_hand')
    assert result.converged and np.linalg.norm(reached[:3, 3] - T[:3, 3]) < 1e-4
    np.testing.assert_array_equal(result.q[9:], q0[9:])      # left arm untouched


def test_motion_steps_are_bounded_and_approach_the_goal_monotonically():
    q = robots.ready_pose('wam')
    T = WAM.pin_frame_placement(q + 0.4, 'tool')
    step = 0.01 * np.arange(1, 8)
    motion = CcdMotion(WAM, step)
    errors = []
    for _ in range(600):
        q_next = motion.step(q, T[:3, 3])
        assert np.all(np.abs(q_next - q) <= step + 1e-12)
        q = q_next
        errors.append(motion.ccd.errors(q, T[:3, 3])[0])
    assert np.all(np.diff(errors) <= 1e-12)
    assert motion.reached(q, T[:3, 3])
    np.testing.assert_array_equal(motion.step(q, T[:3, 3]), q)   # at the goal: no chatter


@pytest.mark.parametrize('target, rotation, message', [
    ([np.nan, 0.0, 0.0], None, 'NaN'),
    ([0.0, 0.0], None, '3 values'),
    ([0.5, 0.0, 0.5], 2.0 * np.eye(3), 'not a rotation'),
    ([0.5, 0.0, 0.5], np.eye(2), '3x3'),
])
def test_bad_goals_are_refused(target, rotation, message):
    with pytest.raises(InputError, match=message):
        ccd_solve(WAM, robots.ready_pose('wam'), target, rotation)


def test_bad_settings_are_refused():
    with pytest.raises(InputError, match='end effector'):
        Ccd(SIMON, 'nose')
    with pytest.raises(InputError, match='max_joint_step'):
        CcdMotion(WAM, 0.0)
    with pytest.raises(InputError, match='q must have 7'):
        ccd_solve(WAM, [0.0] * 3, [0.5, 0.0, 0.5])

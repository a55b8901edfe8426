"""HAL (ik_control.ik.hal): hand pose error by pinocchio FK on the WAM, SIMON and an offset arm."""

from hypothesis import given, settings, strategies as st
from ik_control import robots
from ik_control.ik import hal
from ik_control.ik.hal import HalArm
from ik_control.kinematics import RobotModel
from ik_control.kinematics.dh import dh_urdf, DHRow
from ik_control.validation import InputError, ModelError
import numpy as np
import pinocchio as pin
import pytest

WAM = robots.robot('wam')
SIMON = robots.robot('simon')


def offset_arm(offset):
    """WAM-like DH arm whose shoulder and wrist axes miss each other by ``offset`` [m]."""
    rows = [(-np.pi / 2, 0.0, 0.0), (np.pi / 2, offset, 0.0), (-np.pi / 2, 0.045, 0.55),
            (np.pi / 2, -0.045, 0.0), (-np.pi / 2, offset, 0.3), (np.pi / 2, 0.0, 0.0),
            (0.0, 0.0, 0.06)]
    return RobotModel.from_urdf(dh_urdf([DHRow(*r, lower=-2.6, upper=2.6) for r in rows]),
                                end_effectors=['tool'])


@pytest.mark.parametrize('name, hand', [('wam', 'tool'), ('simon', 'right_hand'),
                                        ('simon', 'left_hand')])
def test_closed_form_puts_the_hand_on_reachable_goals_inside_the_limits(name, hand):
    model = WAM if name == 'wam' else SIMON
    arm = HalArm(model, hand)
    rng = np.random.default_rng(11)
    q_current = robots.ready_pose(name)
    q_current[:2] = (0.2, -0.1) if name == 'simon' else q_current[:2]   # torso leaning
    for _ in range(15):
        q_goal = q_current.copy()
        q_goal[arm.arm] = model.random_configurations(1, rng, 0.02)[0][arm.arm]
        T = model.pin_frame_placement(q_goal, hand)
        result = arm.solve(q_current, T[:3, 3], T[:3, :3], refine_steps=0)
        reached = model.pin_frame_placement(result.q, hand)
        assert result.reachable and result.within_limits
        assert np.linalg.norm(reached[:3, 3] - T[:3, 3]) < 1e-9
        assert np.linalg.norm(pin.log3(T[:3, :3] @ reached[:3, :3].T)) < 1e-9
        assert np.all(result.q >= model.lower) and np.all(result.q <= model.upper)
        others = np.setdiff1d(np.arange(model.nq), arm.arm)
        np.testing.assert_array_equal(result.q[others], q_current[others])


def test_simon_and_wam_arms_are_spherical_shoulder_and_wrist():
    assert HalArm(SIMON, 'right_hand').home(robots.ready_pose('simon'))['axis_residual'] < 1e-12
    assert HalArm(WAM).home(robots.ready_pose('wam'))['axis_residual'] < 1e-12


def test_elbow_follows_the_forearm_when_the_wrist_is_straight():
    # goal made with the wrist at zero: the forearm continues the hand, so the preferred
    # elbow is the one that made the goal and HAL returns that configuration
    arm = HalArm(SIMON, 'right_hand')
    q_goal = robots.ready_pose('simon')
    q_goal[2:9] = (-0.8, 0.6, 0.3, 1.2, 0.0, 0.0, 0.0)
    T = SIMON.pin_frame_placement(q_goal, 'right_hand')
    result = arm.solve(robots.ready_pose('simon'), T[:3, 3], T[:3, :3], refine_steps=0)
    assert result.swivel == pytest.approx(0.0, abs=1e-9)
    np.testing.assert_allclose(result.q, q_goal, atol=1e-9)


def test_elbow_keeps_away_from_simon_torso():
    arm = HalArm(SIMON, 'right_hand')
    rng = np.random.default_rng(5)
    q = robots.ready_pose('simon')
    for _ in range(10):
        q_goal = q.copy()
        q_goal[arm.arm] = SIMON.random_configurations(1, rng, 0.05)[0][arm.arm]
        T = SIMON.pin_frame_placement(q_goal, 'right_hand')
        result = arm.solve(q, T[:3, 3], T[:3, :3], refine_steps=0)
        torso = SIMON.pin_frame_placement(result.q, 'torso_upper')
        elbow = SIMON.pin_frame_placement(result.q, 'right_forearm')[:3, 3]   # elbow centre
        d = elbow - torso[:3, 3]
        distance = np.linalg.norm(d - torso[:3, 2] * (torso[:3, 2] @ d))
        assert result.within_limits and result.closed_form_position_error < 1e-9
        assert distance >= hal.TORSOS['torso_upper'] - 1e-9


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_three_axis_decomposition_rebuilds_the_rotation(seed):
    rng = np.random.default_rng(seed)
    axes = [v / np.linalg.norm(v) for v in rng.standard_normal((3, 3))]
    angles = rng.uniform(-np.pi, np.pi, 3)
    R = hal.rodrigues(axes[0], angles[0]) @ hal.rodrigues(axes[1], angles[1]) @ hal.rodrigues(
        axes[2], angles[2])
    solutions = hal.three_axis_angles(axes, R)[0]
    assert solutions.shape == (2, 3)
    for t in solutions:
        rebuilt = hal.rodrigues(axes[0], t[0]) @ hal.rodrigues(axes[1], t[1]) @ hal.rodrigues(
            axes[2], t[2])
        np.testing.assert_allclose(rebuilt, R, atol=1e-7)


@settings(max_examples=60, deadline=None)
@given(st.floats(0.1, 1.0), st.floats(0.1, 1.0), st.floats(0.0, 1.0))
def test_elbow_angle_is_the_notes_law_of_cosines(l1, l2, fraction):
    # shoulder at 0, elbow at (l1, 0, 0) turning about z, wrist at (l1 + l2, 0, 0) at q4 = 0
    distance = abs(l1 - l2) + fraction * (l1 + l2 - abs(l1 - l2))
    angles, reachable = hal.elbow_angles(np.array([0.0, 0.0, 1.0]), np.array([l1, 0.0, 0.0]),
                                         np.zeros(3), np.array([l1 + l2, 0.0, 0.0]), distance)
    notes = np.pi - np.arccos(np.clip((l1 ** 2 + l2 ** 2 - distance ** 2) / (2 * l1 * l2), -1, 1))
    assert reachable
    wrapped = np.abs((angles + np.pi) % (2 * np.pi) - np.pi)
    np.testing.assert_allclose(wrapped, [notes, notes], atol=1e-6)


@pytest.mark.parametrize('offset', [0.005, 0.02])
def test_offset_axes_leave_an_error_that_refinement_removes(offset):
    model = offset_arm(offset)
    arm = HalArm(model)
    q_current = np.full(7, 0.3)
    assert arm.home(q_current)['axis_residual'] == pytest.approx(offset * 2 / 3, rel=1e-6)
    rng = np.random.default_rng(2)
    before, after = [], []
    for _ in range(10):
        T = model.pin_frame_placement(model.random_configurations(1, rng, 0.1)[0], 'tool')
        result = arm.solve(q_current, T[:3, 3], T[:3, :3], refine_steps=3)
        before.append(result.closed_form_position_error)
        after.append(result.position_error)
    assert 0.1 * offset < np.median(before) < 5 * offset    # the adaptation's error
    assert np.median(after) < 1e-8                           # three DLS steps remove it


def test_out_of_reach_goal_is_flagged_and_answered_with_the_arm_stretched_toward_it():
    arm = HalArm(WAM)
    q = robots.ready_pose('wam')
    T = WAM.pin_frame_placement(q, 'tool')
    geo = arm.home(q)
    far = geo['S'] + 5.0 * (T[:3, 3] - geo['S'])
    result = arm.solve(q, far, T[:3, :3], refine_steps=0)
    # longest shoulder-wrist distance over the elbow's range, and the wrist-hand offset
    u, v = geo['W0'] - geo['points'][3], geo['S'] - geo['points'][3]
    angles = np.linspace(WAM.lower[3], WAM.upper[3], 2001)
    stretch = np.linalg.norm(hal.rotate(geo['axes'][3], angles, np.tile(u, (angles.size, 1)))
                             - v, axis=1).max()
    hand = np.linalg.norm(geo['p_h0'] - geo['W0'])
    beyond = np.linalg.norm(far - geo['S']) - stretch
    assert not result.reachable
    assert beyond - hand - 1e-6 <= result.closed_form_position_error <= beyond + hand + 1e-6
    assert np.all(result.q >= WAM.lower) and np.all(result.q <= WAM.upper)


def test_bad_input_is_refused():
    arm = HalArm(WAM)
    q = robots.ready_pose('wam')
    with pytest.raises(InputError, match='rotation'):
        arm.solve(q, [0.5, 0.0, 0.5], np.ones((3, 3)))
    with pytest.raises(InputError, match='NaN'):
        arm.solve(q, [np.nan, 0.0, 0.5], np.eye(3))
    with pytest.raises(ModelError, match='7-joint'):
        HalArm(robots.robot('wam', joints=robots.WAM_JOINTS[:6]))

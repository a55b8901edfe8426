"""
The position-IK fallback (ik_control/control/fallback.py) and the goal rules it serves.

The controller core with the WAM's shipped configuration, driving a perfect kinematic
robot (``bench reach``'s loop). The goals are ones the Cartesian law stalls on: with
``fallback.strategy: off`` the controller parks each as unreachable, although each is
the forward kinematics of a configuration inside the limits.
"""

from ik_control import robots
from ik_control.bench import reach
from ik_control.control.controller import ResolvedRateController
import numpy as np
import pytest

WAM = robots.robot('wam')
SIMON = robots.robot('simon')
# (start, goal) configurations the default law stalls on: goals 8, 10, 11 and 12 of
# `ik_control bench reach --robot wam --seed 1` (found with fallback off)
STALLING = (8, 10, 11, 12)


def _pairs(seed, count, margin):
    rng = np.random.default_rng(seed)
    lo, hi = WAM.lower + margin, WAM.upper - margin
    return [(rng.uniform(lo, hi), rng.uniform(lo, hi)) for _ in range(count)]


def _pinocchio_error(q, T_goal):
    T = WAM.pin_frame_placement(q, 'tool')
    cos = (np.trace(T[:3, :3].T @ T_goal[:3, :3]) - 1.0) / 2.0
    return np.linalg.norm(T[:3, 3] - T_goal[:3, 3]), np.arccos(np.clip(cos, -1.0, 1.0))


@pytest.fixture(scope='module')
def stalling_goals():
    config = reach.controller_config('wam')
    pairs = _pairs(1, max(STALLING) + 1, config.limits.position_margin)
    return [pairs[k] for k in STALLING]


def _drive(strategy, q0, q_goal, **overrides):
    config = reach.controller_config('wam', {'fallback.strategy': strategy, **overrides})
    controller = ResolvedRateController(WAM, config)
    T = WAM.frame_placements(q_goal)
    reached, seconds, speed, accel = reach.run_goal(controller, q0, T)
    return controller, reached, speed, accel, T


def test_without_the_fallback_these_goals_are_parked_unreachable(stalling_goals):
    for q0, q_goal in stalling_goals:
        controller, reached, *_ = _drive('off', q0, q_goal)
        assert not reached and controller.goals.parked[0]
        assert 'fallback off' in controller.goals.unreachable_reason[0]


@pytest.mark.parametrize('strategy', ['joint'])
def test_stalled_goals_are_reached_through_the_position_ik_within_the_limits(
        stalling_goals, strategy):
    for q0, q_goal in stalling_goals:
        controller, reached, speed, accel, T = _drive(strategy, q0, q_goal)
        assert reached, controller.goals.unreachable_reason
        assert controller.fallback.requests >= 1 and controller.fallback.uses >= 1
        # the robot (where the last command put it), by pinocchio: within the tolerances
        err_p, err_r = _pinocchio_error(controller.robot.q, T[0])
        assert err_p <= controller.config.goal.position_tolerance
        assert err_r <= controller.config.goal.orientation_tolerance
        assert speed <= 1.0 + 1e-9 and accel <= 1.0 + 1e-6


def _bench_goal(k, seed=0):
    """Return ``(start, goal)`` configurations of goal ``k`` of ``bench reach --robot wam``."""
    config = reach.controller_config('wam')
    draw = reach._contact_free(WAM, config)
    rng = np.random.default_rng(seed)
    lo, hi = WAM.lower + config.limits.position_margin, WAM.upper - config.limits.position_margin
    for _ in range(k + 1):
        q0, q_goal = draw(rng, lo, hi), draw(rng, lo, hi)
    return q0, q_goal


def test_the_posture_strategy_pulls_a_stalled_goal_to_reached():
    # goal 217 of `bench reach --robot wam --seed 0 --strategy off --strategy posture`:
    # the law alone stalls on it, the IK solution's nullspace pull (SAM eq. 16) frees it
    # (goal 72 was such a goal until the collision stage's braking row kept half the room:
    # the law alone reaches it now)
    q0, q_goal = _bench_goal(217)
    controller, reached, *_ = _drive('off', q0, q_goal)
    assert not reached and controller.goals.parked[0]
    controller, reached, speed, accel, T = _drive('posture', q0, q_goal)
    assert reached, controller.goals.unreachable_reason
    assert controller.fallback.uses >= 1 and controller.fallback.approach is None
    err_p, err_r = _pinocchio_error(controller.robot.q, T[0])
    assert err_p <= controller.config.goal.position_tolerance
    assert err_r <= controller.config.goal.orientation_tolerance
    assert speed <= 1.0 + 1e-9 and accel <= 1.0 + 1e-6


def test_goal_reached_needs_the_measured_pose_within_tolerance():
    q0, q_goal = _pairs(2, 1, 0.1)[0]
    q_goal = q0 + 0.1 * (q_goal - q0)  # a short move the law makes directly
    controller, reached, *_ = _drive('joint', q0, q_goal)
    assert reached
    # the robot reports itself 0.01 rad off on the shoulder (inside reseed_tolerance):
    # the command still sits on the goal, but the arm does not
    now = 100.0
    q = controller.robot.q.copy()
    q[1] += 0.01
    for k in range(10):
        controller.set_joint_state(WAM.joint_names, q, now + k * controller.dt)
        controller.update(now + k * controller.dt)
    assert not controller.goals.reached[0]


def test_an_unreachable_goal_reports_its_error_to_the_users_goal():
    q0 = robots.ready_pose('wam')
    T = WAM.frame_placements(q0)
    T[0, :3, 3] = [1.5, 0.5, 1.0]  # 1.5 m out: no solution
    controller = ResolvedRateController(WAM, reach.controller_config('wam'))
    reached, *_ = reach.run_goal(controller, q0, T, timeout=5.0)
    assert not reached and controller.goals.parked[0]
    assert 'position IK found no solution' in controller.goals.unreachable_reason[0]
    err_p, _ = controller.tracking_errors()
    held = WAM.frame_placements(controller.q_cmd)[0, :3, 3]
    # the error to the goal the user sent (about 0.6 m), not to the pose it holds
    assert abs(err_p[0] - np.linalg.norm(held - T[0, :3, 3])) < 1e-3 and err_p[0] > 0.3


def test_a_goal_is_reached_while_joint_centering_still_moves_the_joints():
    # centering_gain 0.5 rad^2/s moves the WAM's joints toward mid-range long after the
    # hand is on the goal; the hand is still, so the goal is reached (it was not: every
    # joint had to rest first, and 16 of 30 such goals timed out)
    config = reach.controller_config('wam', {'nullspace.centering_gain': 0.5})
    q0, q_goal = _pairs(0, 2, config.limits.position_margin)[1]
    controller = ResolvedRateController(WAM, config)
    T = WAM.frame_placements(q_goal)
    reached, seconds, _, _ = reach.run_goal(controller, q0, T)
    assert reached
    assert np.max(np.abs(controller.v_cmd)) > 0.01  # the nullspace motion goes on
    err_p, err_r = _pinocchio_error(controller.robot.q, T[0])
    assert err_p <= config.goal.position_tolerance
    assert err_r <= config.goal.orientation_tolerance


@pytest.mark.parametrize('seed', [1, 9])
def test_a_joint_space_approach_for_one_hand_is_not_replaced_by_the_other_hands_lag(seed):
    """
    SIMON, one goal per hand, velocity_scale 0.2: approaches of seconds, as under load.

    The approach's q* reaches both targets (the position IK solves them together), so it
    is progress for both hands. Counted for the stalled hand alone, the other hand's error
    (which the approach need not shrink) made it ask the IK itself, and its solve replaced
    the running approach; with the first hand's tries spent, a reachable goal was parked
    unreachable (the node on SIMON beside a CPU hog).
    """
    config = reach.controller_config('simon', {'limits.velocity_scale': 0.2})
    controller = ResolvedRateController(SIMON, config)
    rng = np.random.default_rng(seed)
    T = SIMON.frame_placements(rng.uniform(SIMON.lower + 0.05, SIMON.upper - 0.05))
    for f, ee in enumerate(SIMON.end_effector_names):
        controller.set_target_matrix(ee, T[f])
    q, dt, fallback = robots.ready_pose('simon').copy(), controller.dt, controller.fallback
    approaches = replaced = 0
    for k in range(int(40.0 / dt)):
        running = fallback.approach
        controller.set_joint_state(SIMON.joint_names, q, k * dt)
        command = controller.update(k * dt)
        if fallback.approach is not None and fallback.approach is not running:
            approaches += 1
            replaced += running is not None  # a new solution while one was approached
        if controller.goals.reached.all() or controller.goals.parked.any():
            break
        if command is not None:
            q = command.at(dt)[0]
    assert controller.goals.reached.all(), controller.goals.unreachable_reason
    assert approaches >= 1 and replaced == 0

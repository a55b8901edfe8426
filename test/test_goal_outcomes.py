"""
One judge: a request for several end effectors ends with the outcome the controller decides.

The controller core runs against a simulated robot that follows its command windows
(:mod:`control_rig`: every window keeps the limits); the robot's own pose, by the model's
forward kinematics of its joints, is what is judged. A MoveToPose action maps these
outcomes to its results (test_move_to_pose_action.py shows that over DDS).
"""

from control_rig import goal_pose, rig, Run, SIMON, WAM
from hypothesis import given, settings, strategies as st
from ik_control.control.goal_outcomes import Outcome
from ik_control.control.goal_state import GoalState
from ik_control.ik.pose_error import pose_distance
from ik_control.validation import InputError
import numpy as np
import pytest

LIMIT = 10000  # ticks (20 s at 500 Hz) for any outcome


def _until_decided(run, goal, limit=LIMIT):
    """Tick until ``goal``'s outcome is decided; return the ticks taken."""
    for n in range(limit):
        if not goal.pending:
            return n
        run.tick()
    raise AssertionError(f'no outcome in {limit} ticks')


def _tool_error(robot, T, i=0, model=WAM):
    return pose_distance(model.frame_placements(robot.q)[i], T)


def _defaults(c):
    return (c.config.goal.position_tolerance, c.config.goal.orientation_tolerance)


def _started(model=WAM):
    c, robot = rig(model)
    run = Run(c, robot, model)
    run.ticks(5)
    return c, robot, run


@settings(max_examples=8, deadline=None)
@given(st.tuples(*[st.floats(-0.08, 0.08)] * 3), st.floats(1e-4, 3e-3))
def test_a_tracked_goal_is_reached_with_the_robot_within_the_goals_own_tolerance(offset, tol):
    c, robot, run = _started()
    T = goal_pose(WAM, robot.q, offset)
    goal = c.track_pose_goal(['tool'], [T], [(tol, 10 * tol)], 0.0, run.now)
    _until_decided(run, goal)
    assert goal.outcome == Outcome.REACHED, goal.reason
    for _ in range(100):  # and it stays there (the hand at rest; the elbow may still turn)
        err_p, err_r = _tool_error(robot, T)
        assert err_p <= tol and err_r <= 10 * tol
        run.tick()
    assert c.goals.state[0] == GoalState.REACHED


def test_a_goal_beyond_reach_is_reached_in_a_loose_tolerance_and_unreachable_in_the_default():
    """A centimetre above the stretched arm: 3 cm of tolerance take it, 1 mm does not."""
    T = WAM.frame_placements(np.zeros(7))[0]
    T[:3, 3] += [0.0, 0.0, 0.015]
    outcomes = {}
    for name in ('loose', 'default'):
        c, robot, run = _started()
        tol = (0.03, 0.05) if name == 'loose' else _defaults(c)
        goal = c.track_pose_goal(['tool'], [T], [tol], 0.0, run.now)
        _until_decided(run, goal)
        outcomes[name] = goal.outcome, goal.reason, _tool_error(robot, T)[0]
    assert outcomes['loose'][0] == Outcome.REACHED, outcomes
    assert 0.005 < outcomes['loose'][2] <= 0.03
    assert outcomes['default'][0] == Outcome.UNREACHABLE, outcomes
    assert "['tool'] cannot reach the target" in outcomes['default'][1]
    assert outcomes['default'][2] > 0.005


@pytest.mark.parametrize('newer', ['pose', 'twist', 'trajectory'])
def test_a_newer_goal_for_an_effector_replaces_the_tracked_goal_and_is_followed(newer):
    c, robot, run = _started()
    goal = c.track_pose_goal(['tool'], [goal_pose(WAM, robot.q, [0.1, 0.0, 0.0])],
                             [_defaults(c)], 0.0, run.now)
    run.ticks(50)
    assert goal.pending
    if newer == 'pose':
        T = goal_pose(WAM, robot.q, [0.0, 0.05, 0.0])
        c.set_target_matrix('tool', T)
    elif newer == 'twist':
        c.set_twist_target('tool', [0.0, 0.0, 0.02], [0.0, 0.0, 0.0], run.now)
    else:
        c.set_joint_trajectory(WAM.joint_names, [0.0, 2.0], [c.q_cmd, c.q_cmd + 0.1], None,
                               run.now)
    run.tick()
    assert goal.outcome == Outcome.REPLACED
    what = {'pose': 'a newer pose goal', 'twist': 'a twist', 'trajectory': 'a joint trajectory'}
    assert what[newer] in goal.reason
    if newer == 'pose':  # the newer goal is the one the robot goes to
        run.ticks(1500)
        assert _tool_error(robot, T)[0] <= c.config.goal.position_tolerance


def test_a_preempted_goal_is_replaced_and_the_arm_goes_on_to_its_target():
    c, robot, run = _started()
    T = goal_pose(WAM, robot.q, [0.05, 0.0, 0.0])
    goal = c.track_pose_goal(['tool'], [T], [_defaults(c)], 0.0, run.now)
    c.preempt_goal(goal, 'a newer request')
    assert goal.outcome == Outcome.REPLACED and goal.reason == 'a newer request'
    run.ticks(1500)
    assert _tool_error(robot, T)[0] <= c.config.goal.position_tolerance


def _joint_spread(run, ticks):
    """Largest joint travel of the robot over ``ticks`` more ticks [rad]."""
    q0 = run.robot.q.copy()
    spread = 0.0
    for _ in range(ticks):
        run.tick()
        spread = max(spread, float(np.max(np.abs(run.robot.q - q0))))
    return spread


@pytest.mark.parametrize('end', ['cancel', 'time_limit'])
def test_cancel_and_time_limit_stop_the_arm_where_it_comes_to_rest_and_it_stays(end):
    """Braking keeps every limit (the rig's checks); at rest the effector keeps that pose."""
    c, robot, run = _started()
    start = WAM.frame_placements(robot.q)[0, :3, 3]
    T = goal_pose(WAM, robot.q, [0.15, 0.0, -0.1])
    goal = c.track_pose_goal(['tool'], [T], [_defaults(c)],
                             0.1 if end == 'time_limit' else 0.0, run.now)
    run.ticks(45)  # 0.09 s: mid-motion
    assert goal.pending and np.max(np.abs(c.v_cmd)) > 0.05
    if end == 'cancel':
        c.cancel_goal(goal)
        assert goal.outcome == Outcome.CANCELLED
    else:
        assert _until_decided(run, goal) <= 6
        assert goal.outcome == Outcome.TIMED_OUT and 'time_limit 0.1 s' in goal.reason
    run.ticks(500)  # the braking, at the acceleration limits
    assert not c.goals.holding
    assert c.goals.state[0] == GoalState.REPLACED  # its goal ended: the tool holds a pose
    assert _joint_spread(run, 1000) < 1e-6
    tool = WAM.frame_placements(robot.q)[0, :3, 3]
    assert np.linalg.norm(tool - start) > 0.01  # it stopped on the way
    assert np.linalg.norm(tool - T[:3, 3]) > 0.01  # short of the goal
    T2 = goal_pose(WAM, robot.q, [0.0, 0.05, 0.0])  # and a later goal is followed
    c.set_target_matrix('tool', T2)
    run.ticks(1500)
    assert _tool_error(robot, T2)[0] <= c.config.goal.position_tolerance


def test_a_cancel_stops_only_its_own_hand_and_the_others_goal_is_reached():
    c, robot, run = _started(SIMON)
    right = goal_pose(SIMON, robot.q, [0.0, 0.0, 0.1], 0)
    left = goal_pose(SIMON, robot.q, [0.0, 0.0, 0.1], 1)
    goal = c.track_pose_goal(['right_hand'], [right], [_defaults(c)], 0.0, run.now)
    c.set_target_matrix('left_hand', left)
    run.ticks(100)
    c.cancel_goal(goal)
    run.ticks(2500)
    assert _tool_error(robot, left, 1, SIMON)[0] <= c.config.goal.position_tolerance
    assert _tool_error(robot, right, 0, SIMON)[0] > 0.01
    assert c.goals.state[1] == GoalState.REACHED


def test_a_cancel_during_hold_stops_the_goal_and_resume_does_not_bring_it_back():
    c, robot, run = _started()
    T = goal_pose(WAM, robot.q, [0.1, 0.0, 0.0])
    goal = c.track_pose_goal(['tool'], [T], [_defaults(c)], 0.0, run.now)
    run.ticks(40)
    c.hold()
    run.ticks(300)
    c.cancel_goal(goal)
    c.resume()
    run.ticks(300)
    assert goal.outcome == Outcome.CANCELLED
    assert _joint_spread(run, 500) < 1e-6
    assert _tool_error(robot, T)[0] > 0.01


def test_stale_states_and_a_release_end_the_goal():
    c, robot, run = _started()
    goal = c.track_pose_goal(['tool'], [goal_pose(WAM, robot.q, [0.1, 0.0, 0.0])],
                             [_defaults(c)], 0.0, run.now)
    run.ticks(100)
    run.ticks(60, send=False)  # 0.12 s without joint_states
    assert goal.outcome == Outcome.STALE, goal.reason
    goal = c.track_pose_goal(['tool'], [goal_pose(WAM, robot.q, [0.1, 0.0, 0.0])],
                             [_defaults(c)], 0.0, run.now)
    run.ticks(100)
    c.release(run.now)
    assert goal.outcome == Outcome.INACTIVE
    with pytest.raises(InputError, match='inactive'):
        c.track_pose_goal(['tool'], [np.eye(4)], [_defaults(c)], 0.0, run.now)


@pytest.mark.parametrize('frames, targets, tolerances, limit, match', [
    (['tool', 'tool'], [np.eye(4)] * 2, [(1e-3, 1e-2)] * 2, 0.0, 'once'),
    (['wrist'], [np.eye(4)], [(1e-3, 1e-2)], 0.0, 'not an end effector'),
    (['tool'], [np.full((4, 4), np.nan)], [(1e-3, 1e-2)], 0.0, 'target'),
    (['tool'], [np.eye(4)], [(0.0, 1e-2)], 0.0, '> 0'),
    (['tool'], [np.eye(4)], [(1e-3, np.nan)], 0.0, 'tolerances'),
    (['tool'], [np.eye(4)], [(1e-3, 1e-2)], -1.0, 'time_limit'),
])
def test_a_bad_request_is_refused_and_changes_nothing(frames, targets, tolerances, limit, match):
    c, robot, run = _started()
    before = c.goals.targets.copy(), c.goals.ids.copy(), c.goals.tol_p.copy()
    with pytest.raises(InputError, match=match):
        c.track_pose_goal(frames, targets, tolerances, limit, run.now)
    assert not c.outcomes.pending
    np.testing.assert_array_equal(c.goals.targets, before[0])
    np.testing.assert_array_equal(c.goals.ids, before[1])
    np.testing.assert_array_equal(c.goals.tol_p, before[2])

"""
Every reachable goal is reached, over real DDS: an outside client's view.

sim_robot + ik_controller with the bundled robots, as in test_ik_controller_node.py. The
client sends seeded goals, each the forward kinematics of a random configuration inside
the joint limits (so a solution exists), one after the other, and checks the robot's own
joint_states with pinocchio (not the package's kinematics) once goal_reached says so.
Without the position-IK fallback the WAM reached 6 of 10 such goals with one seed, 1 of
6 with another (the Cartesian law stalls at joint limits and singularities).
"""

from ik_control import robots
from ik_control.collision.model import CollisionModel
import numpy as np
import pytest
from ros_helpers import stamp_seconds
from test_ik_controller_node import _settled_command, _value, Bringup

GOALS = 4  # a sample over DDS: `bench reach` runs 1000 per robot in-process
POSITION_TOLERANCE = 1e-3   # the shipped goal.position_tolerance [m]
ORIENTATION_TOLERANCE = 1e-2  # the shipped goal.orientation_tolerance [rad]
GOAL_TIME = 30.0  # each goal is given this long, as a user would [s] (15 s ran out once)


def _pinocchio_errors(model, q, targets):
    """Position [m] and rotation [rad] errors of each effector, by pinocchio's own FK."""
    errors = []
    for frame, T_goal in zip(model.end_effector_names, targets):
        T = model.pin_frame_placement(q, frame)  # base frame, pinocchio FK
        cos = (np.trace(T[:3, :3].T @ T_goal[:3, :3]) - 1.0) / 2.0
        errors.append((np.linalg.norm(T[:3, 3] - T_goal[:3, 3]),
                       float(np.arccos(np.clip(cos, -1.0, 1.0)))))
    return np.array(errors)


def _random_goals(model, seed, count):
    """
    Targets (per goal, per effector) of random configurations inside the limits.

    Each configuration free of contact (every pair of the shipped SRDF 12 mm apart): a
    goal the robot can take without touching itself or its other hand.
    """
    rng = np.random.default_rng(seed)
    with open(robots.data_path('config', f'{model.name}.srdf'), encoding='utf-8') as f:
        collision = CollisionModel(model, srdf=f.read())
    goals = []
    while len(goals) < count:
        q = rng.uniform(model.lower + 0.05, model.upper - 0.05)
        if collision.closest(q)[0] > 0.012:
            goals.append(model.frame_placements(q))
    return goals


def _wait_reached_at_once(bringup, since, timeout=GOAL_TIME):
    """
    Wait for /diagnostics stamped after ``since`` [s] saying every goal is reached.

    One snapshot of all effectors: each goal_reached topic is its own stream, so the last
    message of one may still say True from before the other's position-IK approach moved
    all joints (SIMON's left hand 20 mrad off its goal 0.2 s after both topics said True).
    """
    names = bringup.model.end_effector_names

    def all_reached(msg):
        return stamp_seconds(msg) > since and any(
            s.hardware_id == bringup.model.name
            and all(_value(s, f'{ee}.goal_reached') == 'True' for ee in names)
            for s in msg.status)
    bringup.diagnostics.wait(all_reached, timeout)


# SIMON (two hands, 1 kHz, self collision); over DDS the WAM's goals are reached in
# test_ik_controller_node and three unseen arms' in test_arm_setup, and `bench reach`
# reaches 1000 goals per robot in-process
@pytest.mark.parametrize('name, rate_hz, seed', [('simon', 1000.0, 4)])
def test_seeded_reachable_goals_are_all_reached_measured_by_pinocchio(name, rate_hz, seed):
    bringup = Bringup(name, rate_hz, ns=f'/{name}_reach',
                      extra=['-p', f'collision.srdf_path:=config/{name}.srdf'])
    try:
        model = bringup.model
        missed = []
        for k, targets in enumerate(_random_goals(model, seed, GOALS)):
            sent = 1e-9 * bringup.ctx.node.get_clock().now().nanoseconds
            for ee, T in zip(model.end_effector_names, targets):
                bringup.send_pose(ee, T)
            try:
                bringup.wait_goals(model.end_effector_names, timeout=GOAL_TIME)
                _wait_reached_at_once(bringup, sent)
            except TimeoutError:
                missed.append((k, 'goal_reached never came'))
                continue
            bringup.ctx.spin_for(0.2)  # the robot follows the command ~L behind
            errors = _pinocchio_errors(model, bringup.q(), targets)
            if np.any(errors[:, 0] > POSITION_TOLERANCE) or np.any(
                    errors[:, 1] > ORIENTATION_TOLERANCE):
                missed.append((k, errors.tolist()))
        assert not missed, f'{name}: goals missed (index, why): {missed}'
    finally:
        bringup.close()


def test_a_goal_outside_the_workspace_is_unreachable_with_the_error_to_the_users_goal():
    bringup = Bringup('wam', 500.0, ns='/wam_unreachable')
    try:
        T = bringup.model.frame_placements(robots.ready_pose('wam'))[0]
        T[:3, 3] = [1.5, 0.5, 1.0]  # 1.5 m out: the WAM reaches ~1 m
        bringup.send_pose('tool', T)
        # the law stalls (0.5 s), the position IK fails within its budget (0.05 s CPU)
        status = bringup.diagnostic(
            lambda s: 'TARGET_UNREACHABLE' in _value(s, 'status_codes'), timeout=10.0)
        assert 'position IK found no solution' in _value(status, 'tool.unreachable_because')
        _settled_command(bringup)
        bringup.ctx.spin_for(0.5)
        measured = _pinocchio_errors(bringup.model, bringup.q(), [T])[0, 0]
        status = bringup.diagnostic(lambda s: _value(s, 'tool.goal') == 'UNREACHABLE')
        reported = float(_value(status, 'tool.position_error_m'))
        # the error to the user's goal (about 0.6 m), not to the pose it holds (~0)
        assert measured > 0.3 and abs(reported - measured) < 0.01
    finally:
        bringup.close()

"""A joint trajectory as the controller's goal (ik_control/control/joint_goal.py)."""

from ik_control import robots
from ik_control.control.command_window import hermite
from ik_control.control.joint_goal import JointGoal
from ik_control.validation import InputError
import numpy as np
import pytest

WAM = robots.robot('wam')


def _plan(count=4, velocities=True):
    rng = np.random.default_rng(0)
    q = WAM.random_configurations(count, rng, margin=0.2)
    times = np.arange(count) * 0.5
    v = rng.normal(0, 0.1, q.shape) if velocities else None
    return times, q, v


def test_the_reference_is_the_trajectory_controllers_interpolation():
    times, q, v = _plan()
    reversed_names = list(WAM.joint_names)[::-1]  # any joint order
    goal = JointGoal(WAM, reversed_names, times, q[:, ::-1], v[:, ::-1], start=10.0)
    t = 10.0 + 0.7
    expected = hermite(0.5, q[1], v[1], 1.0, q[2], v[2], 0.7)
    for got, want in zip(goal.reference(t), expected):
        np.testing.assert_allclose(got, want, atol=1e-12)
    linear = JointGoal(WAM, WAM.joint_names, times, q, None, start=0.0)
    q_ref, v_ref = linear.reference(0.7)
    np.testing.assert_allclose(v_ref, (q[2] - q[1]) / 0.5, atol=1e-12)
    np.testing.assert_allclose(q_ref, q[1] + 0.2 * (q[2] - q[1]) / 0.5, atol=1e-12)
    np.testing.assert_allclose(linear.reference(99.0)[0], q[-1])  # held after the end


def test_desired_velocity_feeds_forward_and_corrects_the_offset():
    times, q, v = _plan()
    goal = JointGoal(WAM, WAM.joint_names, times, q, v, start=0.0)
    q_ref, v_ref = goal.reference(0.3)
    out = np.empty(WAM.nq)
    goal.desired_velocity(0.3, q_ref - 0.01, 10.0, out)
    np.testing.assert_allclose(out, v_ref + 0.1, atol=1e-12)


def test_done_only_past_the_end_at_the_last_point_and_at_rest():
    times, q, v = _plan()
    goal = JointGoal(WAM, WAM.joint_names, times, q, v, start=0.0)
    rest = np.zeros(WAM.nq)
    assert not goal.done(1.0, q[-1], rest)            # before the end
    assert goal.done(2.0, q[-1] + 5e-4, rest)
    assert not goal.done(2.0, q[-1] + 5e-3, rest)     # not there
    assert not goal.done(2.0, q[-1], rest + 0.01)     # still moving


@pytest.mark.parametrize('change, reason', [
    (lambda n, t, q, v: (n[:-1], t, q[:, :-1], v[:, :-1]), 'name each controlled joint'),
    (lambda n, t, q, v: (n, t[::-1], q, v), 'times must increase'),
    (lambda n, t, q, v: (n, t, q + np.where(np.arange(7) == 2, 10.0, 0.0), v), 'outside its'),
    (lambda n, t, q, v: (n, t, q * np.nan, v), 'finite'),
    (lambda n, t, q, v: (n, t, q, v[:, :3]), 'velocities'),
])
def test_a_plan_that_cannot_be_followed_is_refused_with_the_reason(change, reason):
    times, q, v = _plan()
    names, times, q, v = change(list(WAM.joint_names), times, q, v)
    with pytest.raises(InputError, match=reason):
        JointGoal(WAM, names, times, q, v, start=0.0)


def _closed_loop(controller, q, ticks, dt, start=0.0, each=None):
    """Run an ideal robot (where the last window says); yield (time, command)."""
    from ik_control.control.controller import ResolvedRateController  # noqa: F401
    for k in range(1, ticks + 1):
        now = start + k * dt
        if each is not None:
            each(k, now)
        controller.set_joint_state(WAM.joint_names, q, now)
        command = controller.update(now)
        yield now, command
        q = command.at(dt)[0]


def test_the_controller_follows_a_plan_within_its_limits_and_holds_its_end():
    from command_checks import assert_window_within_limits
    from ik_control.control.controller import ControllerConfig, ResolvedRateController

    config = ControllerConfig(rate_hz=500.0, max_acceleration=(5.0,))
    c = ResolvedRateController(WAM, config)
    q0 = robots.ready_pose('wam')
    c.set_joint_state(WAM.joint_names, q0, 0.0)
    c.update(0.0)
    target = np.clip(q0 + [0.4, -0.2, 0.3, -0.3, 0.5, 0.2, -0.6], WAM.lower + 0.1,
                     WAM.upper - 0.1)
    times = np.array([0.5, 1.5])
    c.set_joint_trajectory(WAM.joint_names, times, np.vstack([q0, target]), None, start=0.0)
    lo, hi = WAM.lower + config.position_margin, WAM.upper - config.position_margin
    for now, command in _closed_loop(c, q0, 1500, 0.002):
        assert_window_within_limits(lo, hi, c.v_max, c.a_max, command)
        if c.joint_goal is None:
            break
    assert c.joint_goal is None and now < 3.0  # done soon after the plan's end (1.5 s)
    np.testing.assert_allclose(command.positions[-1], target, atol=1e-3)
    assert any(kind == 'trajectory_done' for kind, _, _ in c.drain_events())


def test_a_pose_goal_ends_a_plan():
    from ik_control.control.controller import ControllerConfig, ResolvedRateController

    c = ResolvedRateController(WAM, ControllerConfig(rate_hz=500.0))
    q0 = robots.ready_pose('wam')
    c.set_joint_state(WAM.joint_names, q0, 0.0)
    c.update(0.0)
    c.set_joint_trajectory(WAM.joint_names, [0.0, 5.0], [q0, q0 + 0.3], None, start=0.0)
    c.set_target_matrix('tool', WAM.frame_placements(q0)[0])
    assert c.joint_goal is None

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
    from ik_control.control.config import ControllerConfig, LimitsConfig
    from ik_control.control.controller import ResolvedRateController

    config = ControllerConfig(rate_hz=500.0, limits=LimitsConfig(max_acceleration=(5.0,)))
    c = ResolvedRateController(WAM, config)
    q0 = robots.ready_pose('wam')
    c.set_joint_state(WAM.joint_names, q0, 0.0)
    c.update(0.0)
    target = np.clip(q0 + [0.4, -0.2, 0.3, -0.3, 0.5, 0.2, -0.6], WAM.lower + 0.1,
                     WAM.upper - 0.1)
    times = np.array([0.5, 1.5])
    c.set_joint_trajectory(WAM.joint_names, times, np.vstack([q0, target]), None, start=0.0)
    lo, hi = WAM.lower + config.limits.position_margin, WAM.upper - config.limits.position_margin
    for now, command in _closed_loop(c, q0, 1500, 0.002):
        assert_window_within_limits(lo, hi, c.v_max, c.a_max, command)
        if c.joint_goal is None:
            break
    assert c.joint_goal is None and now < 3.0  # done soon after the plan's end (1.5 s)
    np.testing.assert_allclose(command.positions[-1], target, atol=1e-3)
    assert any(kind == 'trajectory_done' for kind, _, _ in c.drain_events())


def _wam_following_a_plan():
    """Return a WAM controller following a 5 s joint plan from the ready pose, and that pose."""
    from ik_control.control.config import ControllerConfig
    from ik_control.control.controller import ResolvedRateController

    c = ResolvedRateController(WAM, ControllerConfig(rate_hz=500.0))
    q0 = robots.ready_pose('wam')
    c.set_joint_state(WAM.joint_names, q0, 0.0)
    c.update(0.0)
    c.set_joint_trajectory(WAM.joint_names, [0.0, 5.0], [q0, q0 + 0.3], None, start=0.0)
    return c, q0


def test_a_pose_goal_ends_a_plan():
    c, q0 = _wam_following_a_plan()
    c.set_target_matrix('tool', WAM.frame_placements(q0)[0])
    assert c.joint_goal is None


def test_a_refused_twist_leaves_a_plan_running():
    # a NaN twist is refused before it can end the plan (it used to cancel it first)
    c, _ = _wam_following_a_plan()
    with pytest.raises(InputError):
        c.set_twist_target('tool', [float('nan'), 0.0, 0.0], [0.0, 0.0, 0.0], 0.01)
    assert c.joint_goal is not None
    c.set_twist_target('tool', [0.01, 0.0, 0.0], [0.0, 0.0, 0.0], 0.02)
    assert c.joint_goal is None


def test_a_late_command_makes_the_plans_clock_wait_then_run_on():
    # a straight plan at 0.2 rad/s per joint from q0: the command is found 20 ms behind it
    # at half its speed after a late tick
    q0 = robots.ready_pose('wam')
    v = np.full(WAM.nq, 0.2)
    goal = JointGoal(WAM, WAM.joint_names, [0.0, 2.0], [q0, q0 + 2.0 * v], None, start=0.0)
    out = np.empty(WAM.nq)
    goal.desired_velocity(0.5, goal.reference(0.5)[0], 10.0, out)
    np.testing.assert_allclose(out, v, atol=1e-12)  # on time: the plan as it is
    a_max = np.full(WAM.nq, 5.0)
    goal.slow_down(0.6, goal.reference(0.58)[0], 0.5 * v, 0.05, a_max)
    assert goal.plan_time(0.6) == pytest.approx(0.58) and goal.rate == pytest.approx(0.5)
    goal.desired_velocity(0.602, goal.reference(0.58)[0], 10.0, out)
    # half the plan's speed, and the offset to where the plan is at s = 0.58 + 0.5 * 2 ms
    np.testing.assert_allclose(out, 0.5 * v + 10.0 * v * 0.001, atol=1e-9)
    # the rate returns to 1 as fast as a_max allows the fastest joint: 5 / 0.2 = 25 1/s,
    # at most RATE_RAMP_LIMIT (20 1/s): from 0.5 within 25 ms
    assert goal.rate == pytest.approx(0.5 + 20.0 * 0.002)
    for k in range(2, 15):
        goal.desired_velocity(0.6 + 0.002 * k, q0, 10.0, out)
    assert goal.rate == 1.0
    lag = 0.6 + 0.002 * 14 - goal.plan_time(0.6 + 0.002 * 14)
    assert 0.02 < lag < 0.05  # behind by the 20 ms it waited and the slower ramp
    end = q0 + 2.0 * v
    assert not goal.done(2.0 + lag / 2, end, np.zeros(WAM.nq))  # the plan's end is later
    assert goal.done(2.0 + lag, end, np.zeros(WAM.nq))
    # a command ahead of the plan or at rest where the plan rests: nothing to wait for
    goal.slow_down(3.0, end, np.zeros(WAM.nq), 0.05, a_max)
    assert goal.rate == 1.0


def _curved_plan(q0, seconds=3.0, step=0.01):
    """
    Return a curved joint path from ``q0``, ``(times, q, v)``.

    Each joint swings with its own period, at rest at both ends, asking up to 4 rad/s^2
    (the limit is 5): catching up has little room.
    """
    t = np.arange(0.0, seconds + step / 2, step)
    w = 2.0 * np.pi / seconds * np.array([1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0])
    amp = 4.0 / w ** 2 * np.array([0.2, 0.25, 0.3, 0.2, 0.5, 0.3, 0.4])
    q = q0 + amp * (1.0 - np.cos(np.outer(t, w)))
    v = amp * w * np.sin(np.outer(t, w))
    return t, q, v


def _distance_to_path(q, path):
    """Joint-space distance [rad] (the largest joint's) from ``q`` to the densely sampled path."""
    return float(np.min(np.max(np.abs(path - q), axis=1)))


def test_a_starved_loop_follows_the_plans_path_and_ends_late():
    """
    Every 10th tick comes 16 ms late: the command brakes on its tail each time.

    The plan waits for it instead of catching up joint by joint, so the command stays on
    the plan's path (0.4 mrad off it; without the clock, catching up, 71 mrad: measured
    with ``slow_down`` not called) and the plan ends late, within every limit.
    """
    from command_checks import assert_window_within_limits
    from ik_control.control.config import ControllerConfig, LimitsConfig
    from ik_control.control.controller import ResolvedRateController

    config = ControllerConfig(rate_hz=500.0, limits=LimitsConfig(max_acceleration=(5.0,)))
    c = ResolvedRateController(WAM, config)
    q0 = robots.ready_pose('wam') + np.array([0.0, -0.3, 0.0, -0.4, 0.0, -0.5, 0.0])
    times, q, v = _curved_plan(q0)
    fine = np.arange(0.0, times[-1], 0.0005)
    path = np.array([JointGoal(WAM, WAM.joint_names, times, q, v, 0.0).reference(t)[0]
                     for t in fine])
    c.set_joint_state(WAM.joint_names, q0, 0.0)
    command = c.update(0.0)
    c.set_joint_trajectory(WAM.joint_names, times, q, v, start=0.0)
    lo, hi = WAM.lower + config.limits.position_margin, WAM.upper - config.limits.position_margin
    now, worst = 0.0, 0.0
    for k in range(1, 20000):
        gap = c.dt + (0.016 if k % 10 == 0 else 0.0)
        robot = command.at(gap)[0]  # the robot follows the last window it got
        now += gap
        c.set_joint_state(WAM.joint_names, robot, now)
        command = c.update(now)
        assert_window_within_limits(lo, hi, c.v_max, c.a_max, command)
        worst = max(worst, _distance_to_path(command.positions[0], path))
        if c.joint_goal is None:
            break
    assert c.late_ticks > 50
    assert worst < 0.003, f'{worst * 1e3:.1f} mrad off the plan'
    assert now > times[-1] + c.late_time / 2  # it ends late
    np.testing.assert_allclose(command.positions[-1], q[-1], atol=1e-3)

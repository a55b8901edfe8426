"""Commanded positions, velocities and accelerations stay within limits: properties."""

from command_checks import assert_window_within_limits
from hypothesis import given, HealthCheck, settings, strategies as st
from ik_control import robots
from ik_control.control import limits
from ik_control.control.config import ControllerConfig, FallbackConfig, LimitsConfig
from ik_control.control.controller import ResolvedRateController
from ik_control.ik.solver import METHODS, SolverConfig
import numpy as np
import pinocchio as pin

WAM = robots.robot('wam')
SIMON = robots.robot('simon')
SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.floats(1e-4, 0.02), st.floats(0.0, 0.1),
       st.floats(-1e6, 1e6))
def test_one_limited_step_respects_every_limit(seed, dt, margin, scale):
    """From any state the limiter itself produced, the next command is within limits."""
    rng = np.random.default_rng(seed)
    n = 7
    lower, upper = -rng.uniform(0.5, 3, n), rng.uniform(0.5, 3, n)
    v_max, a_max = rng.uniform(0.1, 5, n), rng.uniform(0.5, 50, n)
    q = rng.uniform(lower + margin, upper - margin)
    v_prev = np.zeros(n)
    out = np.zeros(n)
    # reach a random feasible state by running the limiter from rest
    for _ in range(int(rng.integers(0, 50))):
        limits.limit_velocity(q, v_prev, rng.normal(0, 3, n), lower, upper, margin, v_max,
                              a_max, dt, out)
        limits.integrate(q.copy(), v_prev, out, dt, q)
        v_prev = out.copy()
    v_des = rng.normal(0, 1, n) * scale
    limits.limit_velocity(q, v_prev, v_des, lower, upper, margin, v_max, a_max, dt, out)
    q_next = np.empty(n)
    limits.integrate(q, v_prev, out, dt, q_next)
    assert np.all(np.isfinite(out))
    assert np.all(np.abs(out) <= v_max * (1 + 1e-9))
    assert np.all(np.abs(out - v_prev) <= a_max * dt * (1 + 1e-9) + 1e-12)
    assert np.all(q_next >= lower + margin - 1e-9) and np.all(q_next <= upper - margin + 1e-9)


def _run(model, config, q0, targets, seconds, rng, stale_at=None):
    """Run a closed loop on an ideal robot; yield every command the controller issues."""
    controller = ResolvedRateController(model, config)
    q = q0.copy()
    t = 0.0
    dt = 1.0 / config.rate_hz
    controller.set_joint_state(model.joint_names, q, t)
    steps = int(seconds * config.rate_hz)
    switch = max(1, steps // max(1, len(targets)))
    for k in range(steps):
        t += dt
        if k % switch == 0 and targets:
            frame, T = targets.pop(0)
            controller.set_target_matrix(frame, T)
        if stale_at is None or k < stale_at:
            controller.set_joint_state(model.joint_names, q, t)
        command = controller.update(t)
        if command is None:
            continue
        yield controller, command
        q = command.at(dt)[0]


def _random_targets(model, rng, count):
    """Goals: reachable poses, far unreachable ones and some at a singular configuration."""
    out = []
    for _ in range(count):
        frame = model.end_effector_names[int(rng.integers(len(model.end_effector_names)))]
        i = model.end_effector_names.index(frame)
        T = model.frame_placements(model.random_configurations(1, rng)[0])[i]
        kind = rng.integers(3)
        if kind == 1:
            T[:3, 3] += rng.normal(0, 3.0, 3)  # most likely out of reach
        elif kind == 2:
            T = model.frame_placements(np.zeros(model.nq))[i]  # straight: singular
        out.append((frame, T))
    return out


def _check_commands(model, config, commands):
    v_max = model.velocity_limit * config.limits.velocity_scale
    lo = model.lower + config.limits.position_margin
    hi = model.upper - config.limits.position_margin
    count = 0
    for controller, command in commands:
        assert_window_within_limits(lo, hi, v_max, controller.a_max, command)
        count += 1
    return count


@SETTINGS
@given(st.integers(0, 2 ** 32 - 1), st.sampled_from(sorted(METHODS)),
       st.sampled_from([250.0, 500.0, 1000.0]), st.floats(0.0, 0.1), st.floats(0.2, 1.0),
       st.floats(1.0, 40.0), st.floats(0.5, 30.0))
def test_closed_loop_commands_stay_within_limits(seed, method, rate, margin, v_scale, accel,
                                                 gain):
    rng = np.random.default_rng(seed)
    config = ControllerConfig(rate_hz=rate, gain=min(gain, rate), limits=LimitsConfig(
                                  position_margin=margin, velocity_scale=v_scale,
                                  max_acceleration=(accel,)),
                              solver=SolverConfig(method=method, max_joint_step=0.0,
                                                  centering_gain=float(rng.uniform(0, 5.0))))
    q0 = WAM.random_configurations(1, rng, margin=0.1)[0]
    stale_at = int(rng.integers(50, 250)) if rng.random() < 0.3 else None
    commands = _run(WAM, config, q0, _random_targets(WAM, rng, 3), 0.6, rng, stale_at)
    assert _check_commands(WAM, config, commands) > 0


@SETTINGS
@given(st.integers(0, 2 ** 32 - 1))
def test_simon_two_hands_commands_stay_within_limits(seed):
    rng = np.random.default_rng(seed)
    config = ControllerConfig(rate_hz=1000.0)
    q0 = robots.ready_pose('simon')
    commands = _run(SIMON, config, q0, _random_targets(SIMON, rng, 3), 0.5, rng)
    assert _check_commands(SIMON, config, commands) > 0


@SETTINGS
@given(st.integers(0, 2 ** 32 - 1))
def test_a_reachable_goal_is_approached(seed):
    """
    The law brings the pose error down at the rate its gain sets, within the limits.

    The error is the one the law weighs (position, and rotation times orientation_weight
    [m/rad]). With gain K (solver.gain, 10/s) it falls as exp(-K t) where the Jacobian is
    well conditioned, at the speed K * clamp_error (1 m/s) while ClampMag bounds a large
    one (at most 0.7 s here), after the acceleration limit's ramp (~0.2 s); near a
    singularity the damping slows the last millimetres (seeds 0-999: at most 4.4 % of the
    start left after 3 s, 3.1 % the next worst). Bound: what the law leaves after 0.2 s of
    the 3 at its gain, exp(-K 0.2 s) = 13.5 %. A law 20x too slow (gain 0.5/s) leaves
    23-63 %, 50x (0.2/s) 55-84 % (seeds 0-7).

    The position-IK fallback is off: it finishes on a worker thread in wall-clock time, and
    its joint-space approach reaches the goal whatever the gain (at 0.2/s the error left
    was 0.3-1.3 %, which is how the old bound, 20 % of the start distance, passed a law
    50x too slow). test_fallback.py tests it.
    """
    rng = np.random.default_rng(seed)
    config = ControllerConfig(rate_hz=500.0, fallback=FallbackConfig(strategy='off'))
    w = config.solver.orientation_weight
    q0 = WAM.random_configurations(1, rng, margin=0.15)[0]
    goal_q = np.clip(q0 + rng.normal(0, 0.3, WAM.nq), WAM.lower + 0.15, WAM.upper - 0.15)
    goal = WAM.frame_placements(goal_q)[0]
    T0 = WAM.frame_placements(q0)[0]
    start = np.hypot(np.linalg.norm(T0[:3, 3] - goal[:3, 3]),
                     w * np.linalg.norm(pin.log3(T0[:3, :3].T @ goal[:3, :3])))
    last = None
    for controller, _ in _run(WAM, config, q0, [('tool', goal)], 3.0, rng):
        last = controller
    error = np.hypot(last.solver.err_pos[0], w * last.solver.err_rot[0])
    assert error <= start * np.exp(-config.gain * 0.2), (error, start)

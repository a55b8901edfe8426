"""Robot-side setpoint saturation (ik_control/sim/saturation.py), as in ros2_control."""

from hypothesis import given, settings, strategies as st
from ik_control.sim.saturation import CLAMP_TOLERANCE, POSITION_TOLERANCE, SetpointSaturation
import numpy as np
import pytest


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2 ** 32 - 1))
def test_any_setpoint_stream_leaves_the_robot_within_its_limits(seed):
    """Random (wild) setpoints at jittered periods: positions, speeds, accelerations hold."""
    rng = np.random.default_rng(seed)
    n = 3
    lower, upper = -rng.uniform(0.5, 2, n), rng.uniform(0.5, 2, n)
    v_max, a_max = rng.uniform(0.5, 3, n), rng.uniform(2, 30, n)
    sat = SetpointSaturation(lower, upper, v_max, a_max, np.zeros(n))
    v_prev, dt_prev = np.zeros(n), 0.0
    for _ in range(150):
        dt = float(rng.uniform(0.0005, 0.004))
        q_des = rng.uniform(lower - 1, upper + 1) if rng.random() < 0.3 else sat.q + rng.normal(
            0, 0.01, n)
        q_before = sat.q.copy()
        q, v = sat.apply(q_des, dt)
        assert np.all(q >= lower - 1e-12) and np.all(q <= upper + 1e-12)
        np.testing.assert_allclose((q - q_before) / dt, v, rtol=0, atol=1e-9)
        # within the bounds, up to the rounding that passes unclamped
        tol = CLAMP_TOLERANCE * (np.abs(v) + 1.0) + POSITION_TOLERANCE / dt
        assert np.all(np.abs(v) <= v_max + tol)
        limit = a_max * (0.5 * (dt + dt_prev) if dt_prev else dt)
        assert np.all(np.abs(v - v_prev) <= limit + tol)
        v_prev, dt_prev = v.copy(), dt
    assert sat.clamps > 0


def test_a_feasible_stream_is_passed_unchanged_and_never_counted():
    """A path within every limit (constant acceleration, then constant speed) is not clamped."""
    sat = SetpointSaturation([-5.0], [5.0], [1.0], [2.0], [0.0])
    t = 0.0
    for _ in range(2000):
        t += 0.001
        q_des = t * t if t < 0.45 else 0.2025 + 0.9 * (t - 0.45)  # 2 rad/s^2, then 0.9 rad/s
        q, _ = sat.apply(np.array([q_des]), 0.001)
        assert abs(q[0] - q_des) < 1e-12
    assert sat.clamps == 0


def test_a_window_switch_that_differs_by_knot_time_rounding_is_no_clamp():
    """Two windows agreeing to 1 ns of knot time, switched over a 0.1 ms step: not clamped."""
    sat = SetpointSaturation([-5.0], [5.0], [1.0], [2.0], [0.0])
    for k in range(1, 800):  # up to the velocity limit at 2 rad/s^2, then along it
        t = k * 1e-3
        sat.apply(np.array([t * t if t < 0.5 else 0.25 + (t - 0.5)]), 1e-3)
    assert sat.clamps == 0 and sat.v[0] == pytest.approx(1.0)
    q_next = sat.q + 1.0 * 1e-4 + 1.0 * 1e-9  # the new window, 1 ns ahead of the old
    sat.apply(q_next, 1e-4)
    assert sat.clamps == 0
    sat.apply(sat.q + 1.0 * 1e-4 + 1e-6, 1e-4)  # 1 um in 0.1 ms: 1 % too fast
    assert sat.clamps == 1


def test_the_joint_brakes_before_a_position_limit_within_its_acceleration():
    sat = SetpointSaturation([-1.0], [1.0], [2.0], [5.0], [0.0])
    speeds = []
    for _ in range(1000):
        q, v = sat.apply(np.array([3.0]), 0.002)  # beyond the limit
        speeds.append(v[0])
    assert q[0] <= 1.0 and q[0] > 0.99
    assert np.max(np.abs(np.diff(speeds))) <= 5.0 * 0.002 * (1 + 1e-9)

"""
The committed path and its command windows (ik_control/control/command_window.py).

Properties over random limits, states and tick timings (late ticks, stops included):
every window is inside the position limits, within the velocity and acceleration limits
between consecutive points *and* everywhere between them (the cubic Hermite curve that a
joint_trajectory_controller samples), ends at rest, and a window sent later continues
the path of every earlier one up to that one's committed horizon: a late message never
makes the robot jump.
"""

from command_checks import assert_window_within_limits
from hypothesis import given, settings, strategies as st
from ik_control.control import limits
from ik_control.control.command_window import CommandWindow, sample_points
import numpy as np


def _fine(window, steps=10):
    """Return the curve a trajectory controller samples: times [s], positions, velocities."""
    times, q, v = window
    t = np.linspace(0.0, times[-1], steps * len(times))
    out = [sample_points(times, q, v, x) for x in t]
    return t, np.array([o[0] for o in out]), np.array([o[1] for o in out])


def _run(seed, n=4, ticks=80):
    """Drive a CommandWindow as the controller does; yield (now, window, path)."""
    rng = np.random.default_rng(seed)
    lower, upper = -rng.uniform(0.2, 2, n), rng.uniform(0.2, 2, n)
    v_max, a_max = rng.uniform(0.2, 3, n), rng.uniform(1, 20, n)
    margin = float(rng.uniform(0, 0.05))
    period = float(rng.choice([0.001, 0.002, 0.004]))
    lead = period * int(rng.integers(1, 15))
    path = CommandWindow(lower, upper, capacity=64)
    now = 0.0
    path.reset(now, rng.uniform(lower + margin, upper - margin), np.zeros(n), a_max, margin)
    v_out, q_next = np.zeros(n), np.zeros(n)
    for _ in range(ticks):
        now += period * (rng.choice([1.0, 0.3, 1.7, 6.0], p=[0.7, 0.1, 0.1, 0.1]))
        if rng.random() < 0.03:
            path.truncate(now)  # a stop: a new path from here
            yield now, path.window(now), (lower + margin, upper - margin, v_max, a_max), None
            continue
        start = path.start(now + lead, period)
        if start is None:
            continue
        q, v, h = start
        v_des = rng.normal(0, 2, n) * rng.choice([0.1, 1.0, 10.0])
        limits.limit_velocity(q, v, v_des, lower, upper, margin, v_max, a_max, h, v_out)
        limits.integrate(q, v, v_out, h, q_next)
        path.append(now + lead, q_next, v_out, a_max, margin)
        yield (now, path.window(now), (lower + margin, upper - margin, v_max, a_max),
               path.last_time)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2 ** 32 - 1))
def test_every_window_keeps_every_limit_at_its_points_and_between_them(seed):
    for _, window, (lo, hi, v_max, a_max), _ in _run(seed):
        assert_window_within_limits(lo, hi, v_max, a_max, window)
        if len(window[0]) < 2:
            continue
        t, q, v = _fine(window)
        assert np.all(q >= lo - 1e-9) and np.all(q <= hi + 1e-9)
        # the Hermite segments are the constant-acceleration motion: no overshoot
        assert np.all(np.abs(v) <= v_max * (1 + 1e-6) + 1e-9)
        dv = np.abs(np.diff(v, axis=0)) / np.diff(t)[:, None]
        assert np.all(dv <= a_max * (1 + 1e-4) + 1e-6)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2 ** 32 - 1))
def test_a_later_window_continues_every_earlier_one_up_to_its_horizon(seed):
    sent = []
    for now, window, _, committed in _run(seed):
        if committed is None:  # a stop starts a new path
            sent.clear()
            continue
        for then, earlier, until in sent:
            # the robot may still follow the earlier window at ``now`` (delivered late):
            # up to its last committed knot, the new one says the same there
            if now <= until:
                q_old, v_old = sample_points(*earlier, now - then)
                np.testing.assert_allclose(window[1][0], q_old, rtol=0, atol=1e-9)
                np.testing.assert_allclose(window[2][0], v_old, rtol=0, atol=1e-7)
        sent = [s for s in sent if s[2] >= now] + [(now, window, committed)]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2 ** 32 - 1))
def test_joints_braking_to_their_bounds_with_stops_microseconds_apart_stay_inside(seed):
    # Every joint brakes at its own limit exactly onto its bound, the stops clustered
    # within a few TIME_RESOLUTIONs: their knots are spread out, but no joint may travel
    # further for it. (Moving each stop to its knot with a gentler deceleration commanded
    # up to 3e-7 rad past the bound; the 10-minute SIMON soak counted 5 such points.)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 8))
    lower, upper = -np.ones(n), np.ones(n)
    margin = 0.02
    a_max = rng.uniform(1, 20, n)
    stop = rng.uniform(0.01, 0.3)
    t_stop = stop + rng.uniform(0, 3e-6, n)  # [s], distinct stops closer than 1 us
    v = a_max * t_stop * rng.choice([-1.0, 1.0], n)
    bound = np.where(v > 0, upper - margin, lower + margin)
    q = bound - v * t_stop / 2  # braking at a_max ends exactly on the bound
    path = CommandWindow(lower, upper)
    path.reset(0.0, q, v, a_max, margin)
    times, tail_q, tail_v = path.tail()
    assert np.all(np.diff(times) > 0.0) and times[0] > 0.0
    np.testing.assert_array_equal(tail_v[-1], 0.0)
    assert np.all(tail_q >= lower + margin - 1e-12) and np.all(tail_q <= upper - margin + 1e-12)
    window = path.window(0.0)
    dv = np.abs(np.diff(window[2], axis=0)) / np.diff(window[0])[:, None]
    assert np.all(dv <= a_max * (1 + 1e-9))
    fine_t = np.concatenate([np.linspace(a, b, 50) for a, b in zip(window[0], window[0][1:])])
    fine_q = np.array([sample_points(*window, x)[0] for x in fine_t])
    assert np.all(fine_q >= lower + margin - 1e-12) and np.all(fine_q <= upper - margin + 1e-12)


def test_a_window_never_has_more_points_than_max_points_whatever_the_tick_timing():
    """
    A window's length follows the tick timing, not ``max_expected_latency`` alone.

    Every knot ahead of now is in it, and each late tick also adds the tail's knots (a stop
    per joint). On SIMON at 1 kHz under load a window reached 121 points where the node
    had room for 4 lead rate_hz + n + 16 = 112, and the controller died mid-goal; the node
    now sizes its message by ``max_points``. Here: ticks 0.1 period apart for a while (every
    knot within the lead), then late ones.
    """
    n, period, lead = 16, 0.001, 0.02
    rng = np.random.default_rng(7)
    lower, upper = -np.full(n, 2.0), np.full(n, 2.0)
    a_max, v_max = rng.uniform(1.0, 20.0, n), np.full(n, 2.0)
    path = CommandWindow(lower, upper, capacity=int(2 * (lead + 0.25) / period) + 64)
    path.reset(0.0, np.zeros(n), np.zeros(n), a_max, 0.0)
    v_out, q_next = np.zeros(n), np.zeros(n)
    now, longest = 0.0, 0
    for k in range(600):
        now += (0.1 if k < 300 else rng.choice([1.0, 2.5, 6.0])) * period
        q, v, h = path.start(now + lead, period)
        v_des = rng.normal(0.0, 1.0, n)
        limits.limit_velocity(q, v, v_des, lower, upper, 0.0, v_max, a_max, h, v_out)
        limits.integrate(q, v, v_out, h, q_next)
        path.append(now + lead, q_next, v_out, a_max, 0.0)
        window = path.window(now)
        longest = max(longest, len(window[0]))
        assert_window_within_limits(lower, upper, v_max, a_max, window)
    assert longest > int(4 * lead / period) + n + 16  # the node's old room
    assert longest <= path.max_points

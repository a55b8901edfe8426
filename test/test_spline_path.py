"""Key-pose splines (SAM sec. VI, eq. 20): continuity, key poses met, paths replaced smoothly."""

from hypothesis import given, settings, strategies as st
from ik_control.control.spline_path import KeyPosePath, PathFollower
from ik_control.validation import InputError
import numpy as np
import pinocchio as pin
import pytest
from scipy.interpolate import CubicSpline as ScipyCubic

EPS = 1e-7


def _pose(rng, spread=1.0):
    T = np.eye(4)
    T[:3, :3] = pin.exp3(rng.normal(size=3) * spread)
    T[:3, 3] = rng.uniform(-1.0, 1.0, 3)
    return T


def _random_path(seed, keys):
    rng = np.random.default_rng(seed)
    times = 0.5 + np.cumsum(rng.uniform(0.3, 1.5, keys))
    poses = np.array([_pose(rng) for _ in range(keys)])
    twist = rng.normal(size=6) * 0.3
    start = _pose(rng)
    return KeyPosePath(0.5, start, times, poses, twist), start, times, poses, twist


def _rotation_rate(path, t, h=1e-6):
    Rp, Rm = path.sample(t + h)[:3, :3], path.sample(t - h)[:3, :3]
    return pin.log3(Rp @ Rm.T) / (2 * h)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 6))
def test_path_meets_start_and_key_poses_and_is_c2_at_the_knots(seed, keys):
    path, start, times, poses, twist = _random_path(seed, keys)
    np.testing.assert_allclose(path.sample(0.5), start, atol=1e-12)
    np.testing.assert_allclose(path.twist(0.5), twist, atol=1e-12)
    for t, T in zip(times, poses):
        np.testing.assert_allclose(path.sample(t), T, atol=1e-9)
    np.testing.assert_allclose(path.twist(times[-1]), np.zeros(6), atol=1e-12)
    for t in times[:-1]:
        p_l, v_l, a_l = path.position.evaluate(t - EPS)
        p_r, v_r, a_r = path.position.evaluate(t + EPS)
        scale = 1.0 + np.abs(a_l).max()
        assert np.abs(p_r - p_l).max() < 1e-5 * scale
        assert np.abs(v_r - v_l).max() < 1e-5 * scale
        assert np.abs(a_r - a_l).max() < 1e-4 * scale   # a C1-only spline jumps here
        w_l, w_r = path.twist(t - EPS)[3:], path.twist(t + EPS)[3:]
        assert np.abs(w_r - w_l).max() < 1e-4 * (1.0 + np.abs(w_l).max())
        R_l, R_r = path.sample(t - EPS)[:3, :3], path.sample(t + EPS)[:3, :3]
        assert np.linalg.norm(pin.log3(R_r @ R_l.T)) < 1e-5


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 5), st.floats(0.0, 1.0))
def test_position_is_the_clamped_cubic_spline_and_twist_is_the_pose_derivative(seed, keys, u):
    path, start, times, poses, twist = _random_path(seed, keys)
    knots = np.concatenate([[0.5], times])
    reference = ScipyCubic(knots, np.vstack([start[:3, 3], poses[:, :3, 3]]),
                           bc_type=((1, twist[:3]), (1, np.zeros(3))))
    t = 0.5 + u * (times[-1] - 0.5)
    t = min(max(t, 0.5 + 1e-5), times[-1] - 1e-5)
    p, v, a = path.position.evaluate(t)
    np.testing.assert_allclose(p, reference(t), atol=1e-9)
    np.testing.assert_allclose(v, reference(t, 1), atol=1e-8)
    np.testing.assert_allclose(a, reference(t, 2), atol=1e-6)
    np.testing.assert_allclose(path.twist(t)[3:], _rotation_rate(path, t), atol=1e-5)


def test_orientation_turns_the_short_way_through_nearby_keys():
    """Key orientations 1 rad apart about z: the path passes no angle beyond them."""
    keys = [pin.SE3(pin.utils.rotate('z', a), np.zeros(3)).homogeneous for a in (1.0, 2.0, 3.0)]
    path = KeyPosePath(0.0, np.eye(4), [1.0, 2.0, 3.0], keys)
    angles = []
    for t in np.linspace(0.0, 3.0, 301):
        R = path.sample(t)[:3, :3]
        angles.append(np.arctan2(R[1, 0], R[0, 0]) % (2 * np.pi))
    assert np.all(np.diff(angles) > -1e-9)   # monotone through 3 rad (never the long way)
    assert max(angles) <= 3.0 + 1e-6


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.floats(0.05, 0.95))
def test_replacing_a_path_keeps_pose_and_velocity(seed, u):
    rng = np.random.default_rng(seed)
    follower = PathFollower()
    current = _pose(rng)
    follower.replace(0.0, current, [1.0, 2.0], np.array([_pose(rng), _pose(rng)]))
    now = u * 2.0
    before_pose, before_twist = follower.path.sample(now), follower.path.twist(now)
    follower.replace(now, _pose(rng), [0.7, 1.9], np.array([_pose(rng), _pose(rng)]))
    np.testing.assert_allclose(follower.path.sample(now), before_pose, atol=1e-12)
    np.testing.assert_allclose(follower.path.twist(now), before_twist, atol=1e-9)
    np.testing.assert_allclose(follower.target(now, 0.0), before_pose, atol=1e-12)
    assert not follower.done(now) and follower.done(now + 1.9)


def test_a_path_after_the_old_one_ended_starts_from_the_current_pose_at_rest():
    follower = PathFollower()
    T = np.eye(4)
    follower.replace(0.0, T, [1.0], T[None])
    current = pin.SE3(pin.utils.rotate('x', 0.2), np.array([0.1, 0.2, 0.3])).homogeneous
    path = follower.replace(5.0, current, [1.0], T[None])
    np.testing.assert_allclose(path.sample(5.0), current, atol=1e-12)
    np.testing.assert_allclose(path.twist(5.0), np.zeros(6), atol=1e-12)


@pytest.mark.parametrize('times, poses, message', [
    ([], np.zeros((0, 4, 4)), '1 to'),
    ([1.0, 0.5], np.tile(np.eye(4), (2, 1, 1)), 'increase'),
    ([-1.0], np.eye(4)[None], 'after the path start'),
    ([1.0], np.full((1, 4, 4), np.nan), 'finite'),
    ([1.0], 2 * np.eye(4)[None], 'rigid'),
    ([1.0, 2.0], np.eye(4)[None], '4x4'),
])
def test_bad_key_poses_are_refused(times, poses, message):
    with pytest.raises(InputError, match=message):
        KeyPosePath(0.0, np.eye(4), times, poses)


def test_the_longest_path_allowed_is_the_clamped_cubic_spline_through_its_keys():
    """MAX_KEYS key poses (a dense solve took 15 s there; the banded one a third of one)."""
    from ik_control.control.spline_path import MAX_KEYS

    rng = np.random.default_rng(7)
    times = 0.5 + np.cumsum(rng.uniform(0.01, 0.05, MAX_KEYS))
    poses = np.tile(np.eye(4), (MAX_KEYS, 1, 1))
    poses[:, :3, 3] = np.cumsum(rng.normal(scale=0.01, size=(MAX_KEYS, 3)), axis=0)
    start, twist = np.eye(4), np.r_[0.1, 0.0, -0.1, 0.0, 0.0, 0.0]
    path = KeyPosePath(0.5, start, times, poses, twist)
    knots = np.concatenate([[0.5], times])
    reference = ScipyCubic(knots, np.vstack([start[:3, 3], poses[:, :3, 3]]),
                           bc_type=((1, twist[:3]), (1, np.zeros(3))))
    for t in rng.uniform(0.5, times[-1], 50):
        p, v, _ = path.position.evaluate(t)
        np.testing.assert_allclose(p, reference(t), atol=1e-9)
        np.testing.assert_allclose(v, reference(t, 1), atol=1e-7)

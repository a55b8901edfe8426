"""Velocity profiles (SAM sec. VI) and varying priorities (sec. V), played without ROS."""

import os

from hypothesis import given, settings, strategies as st
from ik_control import robots
from ik_control.control.closed_loop import run_closed_loop, tracking_config
from ik_control.control.controller import ResolvedRateController
from ik_control.control.priorities import WeightSchedule
from ik_control.control.velocity_profile import (load_profile, parse_profile, ProfilePlayer,
                                                 VelocityProfile)
from ik_control.validation import InputError
import numpy as np
import pinocchio as pin
import pytest

MOTIONS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       'config', 'motions')
SHIPPED = ['wave', 'step']


def _profile(name):
    return load_profile(os.path.join(MOTIONS, f'{name}.yaml'))


def _play(player, duration, dt=1e-3):
    for k in range(1, int(round(duration / dt)) + 1):
        pose = player.advance(player.start_time + k * dt)
    return pose


@pytest.mark.parametrize('name', SHIPPED)
def test_shipped_profiles_pass_their_samples_and_return_to_the_start(name):
    profile = _profile(name)
    assert profile.cycles == 3
    import yaml
    with open(os.path.join(MOTIONS, f'{name}.yaml'), encoding='utf-8') as stream:
        samples = yaml.safe_load(stream)['samples']
    for cycle in range(profile.cycles):
        for s in samples:
            t = cycle * profile.period + s['t']
            expected = np.concatenate([s.get('linear', [0.0] * 3), s.get('angular', [0.0] * 3)])
            np.testing.assert_allclose(profile.nominal(t), expected, atol=1e-12)
    start = pin.SE3(pin.utils.rotate('y', 0.4), np.array([0.4, 0.1, 0.5])).homogeneous
    end = _play(ProfilePlayer(profile, 2.0, start), profile.duration)
    np.testing.assert_allclose(end, start, atol=1e-6)   # a cycle does not drift


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6))
def test_a_profile_plays_the_same_motion_from_any_start_pose(seed):
    """Base-frame profiles translate the start pose; effector-frame ones move with it."""
    rng = np.random.default_rng(seed)
    times = np.array([0.0, 0.3, 0.7, 1.0])
    twists = np.vstack([np.zeros(6), rng.normal(size=(2, 6)) * 0.3, np.zeros(6)])
    starts = [pin.SE3(pin.exp3(rng.normal(size=3)), rng.normal(size=3)).homogeneous
              for _ in range(2)]
    for frame in ('base', 'effector'):
        profile = VelocityProfile('x', times, twists, frame=frame)
        ends = [_play(ProfilePlayer(profile, 0.0, T), 1.0, dt=1e-2) for T in starts]
        if frame == 'base':   # same displacement and same rotation applied on the left
            np.testing.assert_allclose(ends[0][:3, 3] - starts[0][:3, 3],
                                       ends[1][:3, 3] - starts[1][:3, 3], atol=1e-9)
            np.testing.assert_allclose(ends[0][:3, :3] @ starts[0][:3, :3].T,
                                       ends[1][:3, :3] @ starts[1][:3, :3].T, atol=1e-9)
        else:                 # same motion seen from the effector: T0^-1 T_end equal
            np.testing.assert_allclose(np.linalg.inv(starts[0]) @ ends[0],
                                       np.linalg.inv(starts[1]) @ ends[1], atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6), st.floats(0.0, 0.2), st.floats(0.0, 0.5))
def test_perturbations_are_small_seeded_and_vanish_at_the_ends(seed, linear, angular):
    profile = _profile('wave')
    player = ProfilePlayer(profile, 1.0, np.eye(4), perturbation=(linear, angular), seed=seed)
    again = ProfilePlayer(profile, 1.0, np.eye(4), perturbation=(linear, angular), seed=seed)
    bound = np.repeat([linear, angular], 3) + 1e-12
    for t in np.linspace(1.0, 1.0 + profile.duration, 97):
        delta = player.twist(t) - profile.nominal(t - 1.0)
        assert np.all(np.abs(delta) <= bound)
        np.testing.assert_array_equal(player.twist(t), again.twist(t))
    for t in (1.0, 1.0 + profile.duration):
        np.testing.assert_allclose(player.twist(t), profile.nominal(t - 1.0), atol=1e-12)
    if linear > 1e-3:
        mid = 1.0 + np.linspace(0.2, 0.8, 7) * profile.duration
        assert max(np.abs(player.twist(t) - profile.nominal(t - 1.0))[:3].max()
                   for t in mid) > 1e-3 * linear


def test_wave_played_on_the_wam_through_the_controller():
    """The tool follows the integrated profile (eq. 20 each tick) within 1 mm, back home."""
    model = robots.robot('wam')
    controller = ResolvedRateController(model, tracking_config(500.0))
    q0 = robots.ready_pose('wam')
    start = model.frame_placements(q0)[0]
    player = ProfilePlayer(_profile('wave'), 0.0, start)
    wanted = []

    def tick(ctrl, now):
        target = player.advance(now + ctrl.dt)
        wanted.append(target)
        ctrl.set_target_matrix('tool', target)

    record = run_closed_loop(controller, q0, player.profile.duration, tick)
    wanted = np.array(wanted)
    error = np.linalg.norm(record.poses[:, 0, :3, 3] - wanted[:, :3, 3], axis=1)
    assert error.max() < 1e-3
    swing = np.ptp(record.poses[:, 0, 1, 3])
    assert swing > 0.1                   # it did wave: ~13 cm from side to side
    np.testing.assert_allclose(record.poses[-1, 0], start, atol=1e-3)


def test_weight_schedule_blends_smoothly_within_its_knots_and_repeats():
    schedule = WeightSchedule([{'t': 0.0, 'primary': 1.0, 'secondary': 0.0},
                               {'t': 1.0, 'primary': 0.5, 'secondary': 1.0},
                               {'t': 2.0, 'primary': 1.0, 'secondary': 0.0}], period=2.0)
    ts = np.linspace(-0.5, 6.0, 1301)
    w = np.array([[schedule.weights(t)['primary'], schedule.weight('secondary', t)]
                  for t in ts])
    assert np.all(w[:, 0] >= 0.5 - 1e-12) and np.all(w[:, 0] <= 1.0 + 1e-12)
    assert np.all(w[:, 1] >= -1e-12) and np.all(w[:, 1] <= 1.0 + 1e-12)
    assert np.abs(np.diff(w, axis=0)).max() < 0.02          # continuous (C1 smoothstep)
    assert schedule.weights(0.5)['secondary'] == pytest.approx(0.5)
    assert schedule.weights(1.25)['secondary'] == pytest.approx(schedule.weights(3.25)
                                                                ['secondary'])
    assert schedule.weight('centering', 0.3, default=0.7) == 0.7
    assert _profile('step').priorities.weights(0.24)['secondary'] == pytest.approx(0.2)


@pytest.mark.parametrize('data, message', [
    ({'samples': [{'t': 0.0}]}, 'at least 2'),
    ({'samples': [{'t': 0.0}, {'t': 0.0}]}, 'increase'),
    ({'samples': [{'t': 0.0}, {'t': 1.0, 'linear': [1, 2]}]}, '3 values'),
    ({'samples': [{'t': 0.0}, {'t': 1.0, 'linear': [99, 0, 0]}]}, 'speeds'),
    ({'samples': [{'t': 0.0}, {'t': 1.0, 'linear': [1, 0, 0]}], 'cycles': 2}, 'start twist'),
    ({'samples': [{'t': 0.0}, {'t': 1.0}], 'frame': 'world'}, "'base' or 'effector'"),
    ({'samples': [{'t': 0.0}, {'t': 1.0}], 'speed': 2}, 'unknown keys'),
    ({'samples': [{'t': 0.0}, {'t': 1.0}], 'priorities': [{'t': 0, 'a': -1}]}, '>= 0'),
    ({'samples': [{'t': 0.0}, {'t': 1.0}], 'priorities': [{'t': 0, 'a': 1}, {'t': 1, 'b': 1}]},
     'names'),
])
def test_bad_profiles_are_refused_with_the_reason(data, message):
    with pytest.raises(InputError, match=message):
        parse_profile(data)
    with pytest.raises(InputError, match='cannot read'):
        load_profile(os.path.join(MOTIONS, 'no_such_profile.yaml'))

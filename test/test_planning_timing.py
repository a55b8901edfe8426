"""Time parameterisation and shortcut smoothing of planned paths."""

from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays
from ik_control import robots
from ik_control.planning.collision import CollisionChecker
from ik_control.planning.obstacles import Obstacle, pose_from
from ik_control.planning.smoothing import path_length, shortcut
from ik_control.planning.timing import time_parameterize
from ik_control.validation import InputError
import numpy as np
import pytest

WAM = robots.robot('wam')
values = st.floats(-3.0, 3.0, allow_nan=False)


@settings(max_examples=80, deadline=None)
@given(arrays(float, st.tuples(st.integers(2, 6), st.just(3)), elements=values),
       arrays(float, 3, elements=st.floats(0.2, 3.0)),
       arrays(float, 3, elements=st.floats(0.5, 10.0)))
def test_trajectory_respects_limits_and_passes_every_waypoint(path, vmax, amax):
    traj = time_parameterize(path, vmax, amax, dt=0.01)
    assert np.all(np.diff(traj.times) > 0.0)
    assert np.all(np.abs(traj.velocities) <= vmax * (1 + 1e-9))
    assert np.all(np.abs(traj.accelerations) <= amax * (1 + 1e-9))
    np.testing.assert_allclose(traj.positions[0], path[0])
    np.testing.assert_allclose(traj.positions[-1], path[-1], atol=1e-8)
    assert np.allclose(traj.velocities[[0, -1]], 0.0)
    for q in path:      # the trajectory stops on every waypoint
        assert np.min(np.abs(traj.positions - q).max(axis=1)) < 1e-8
    # velocities are the time derivative of the positions (trapezoid rule, one dt)
    dt = np.diff(traj.times)[:, None]
    mean_v = 0.5 * (traj.velocities[1:] + traj.velocities[:-1])
    assert np.allclose(np.diff(traj.positions, axis=0), mean_v * dt,
                       atol=float(amax.max()) * 0.01 ** 2)
    # the slowest joint saturates: no segment is slower than it needs to be
    seg = np.abs(np.diff(path, axis=0))
    shortest = np.max(seg / vmax, axis=1).sum()
    assert traj.duration >= shortest - 1e-9


def test_bad_limits_are_refused():
    with pytest.raises(InputError, match='limits'):
        time_parameterize(np.zeros((2, 3)), [1.0, 0.0, 1.0], 1.0)
    with pytest.raises(InputError, match='finite'):
        time_parameterize([[0.0, np.nan]], 1.0, 1.0)


def test_shortcut_keeps_the_ends_stays_free_and_gets_shorter():
    wall = [Obstacle('wall', 'box', (0.05, 0.6, 1.0), pose_from((0.0, 0.7, 0.5)))]
    checker = CollisionChecker(WAM, wall)
    rng = np.random.default_rng(0)
    q = robots.ready_pose('wam')
    assert checker.config_free(q)
    path = [q]
    for _ in range(400):       # a free random walk
        if len(path) == 40:
            break
        step = path[-1] + rng.normal(scale=0.08, size=WAM.nq)
        step = np.clip(step, WAM.lower, WAM.upper)
        if checker.segment_free(path[-1], step):
            path.append(step)
    path = np.array(path)
    assert len(path) == 40
    short = shortcut(path, checker, np.random.default_rng(1), iterations=60)
    np.testing.assert_array_equal(short[[0, -1]], path[[0, -1]])
    assert checker.path_free(short)
    assert path_length(short) < 0.7 * path_length(path)

"""Key-pose path files (SAM sec. VI) followed by the controller core on the WAM."""

import os

from ik_control import robots
from ik_control.control.closed_loop import run_closed_loop, tracking_config
from ik_control.control.controller import ResolvedRateController
from ik_control.control.path_file import load_key_pose_file, parse_key_pose_file
from ik_control.control.spline_path import PathFollower
from ik_control.validation import InputError
import numpy as np
import pinocchio as pin
import pytest

PATH = robots.data_path('config', 'motions', 'glass_to_faucet.yaml')


def test_glass_to_faucet_is_followed_within_1mm_through_every_key_pose():
    path = load_key_pose_file(PATH)
    assert path.effector == 'tool' and path.times.size == 3
    assert path.priorities.weight('secondary', 2.0) == pytest.approx(0.3)
    model = robots.robot('wam')
    controller = ResolvedRateController(model, tracking_config(250.0))
    q0 = robots.ready_pose('wam')
    follower = PathFollower()
    follower.replace(0.0, model.frame_placements(q0)[0], path.times, path.poses)
    wanted = []

    def tick(ctrl, now):
        wanted.append(follower.target(now, ctrl.dt))
        ctrl.set_target_matrix('tool', wanted[-1])

    record = run_closed_loop(controller, q0, path.times[-1] + 0.2, tick)
    wanted = np.array(wanted)
    error = np.linalg.norm(record.poses[:, 0, :3, 3] - wanted[:, :3, 3], axis=1)
    assert error.max() < 1e-3
    for t, key in zip(path.times, path.poses):       # reached at its time
        k = int(np.argmin(np.abs(record.times - t)))
        np.testing.assert_allclose(record.poses[k, 0, :3, 3], key[:3, 3], atol=1e-3)
        rotation = pin.log3(record.poses[k, 0, :3, :3].T @ key[:3, :3])
        assert np.linalg.norm(rotation) < 1e-2
    assert follower.done(path.times[-1])


@pytest.mark.parametrize('data, message', [
    ({'key_poses': [{'t': 1.0, 'xyz': [0, 0, 0]}]}, 'exactly one'),
    ({'key_poses': [{'t': 1.0, 'xyz': [0, 0, 0], 'rpy': [0, 0, 0], 'quat': [0, 0, 0, 1]}]},
     'exactly one'),
    ({'key_poses': [{'t': 1.0, 'xyz': [0, 0, 0], 'quat': [0, 0, 0, 2]}]}, 'normalised'),
    ({'key_poses': [{'t': 1.0, 'xyz': [0, 0], 'rpy': [0, 0, 0]}]}, '3 values'),
    ({'key_poses': [{'t': 1.0, 'xyz': [0, 0, 0], 'rpy': [0, 'x', 0]}]}, 'pi'),
    ({'key_poses': [{'t': 2.0, 'xyz': [0, 0, 0], 'rpy': [0, 0, 0]},
                    {'t': 1.0, 'xyz': [0, 0, 0], 'rpy': [0, 0, 0]}]}, 'increase'),
    ({'key_poses': []}, '1 to'),
    ({'poses': []}, 'key_poses list'),
])
def test_bad_path_files_are_refused(data, message):
    with pytest.raises(InputError, match=message):
        parse_key_pose_file(data)


def test_missing_path_file():
    with pytest.raises(InputError, match='cannot read'):
        load_key_pose_file(os.path.join(os.path.dirname(PATH), 'none.yaml'))

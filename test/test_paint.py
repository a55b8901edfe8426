"""SAM's spray-painting example (sec. VII) without ROS: ``ik_control paint``."""

import json
import os

from ik_control import cli, robots
from ik_control.examples import paint
from ik_control.validation import InputError
import numpy as np
import pinocchio as pin
import pytest

TASK = robots.data_path('config', 'motions', 'paint_door.yaml')


def test_key_poses_hold_the_nozzle_normal_to_the_door_at_the_standoff():
    task = paint.load_task(TASK)
    door_inv = np.linalg.inv(task.door_pose)
    for T in task.poses:
        local = door_inv @ T
        # the nozzle's x axis is the door's x: into the -x face, along its normal
        np.testing.assert_allclose(local[:3, 0], [1.0, 0.0, 0.0], atol=1e-12)
        assert local[0, 3] == pytest.approx(-(0.5 * task.door_size[0] + task.standoff))
        assert abs(local[1, 3]) <= 0.5 * task.door_size[1]
        assert abs(local[2, 3]) <= 0.5 * task.door_size[2]
    rotated = pin.SE3(pin.utils.rotate('z', 0.3), np.array([1.0, 2.0, 0.5])).homogeneous
    T = paint.nozzle_pose(rotated, (0.1, 1.0, 1.0), 0.25, 0.2, -0.1)
    np.testing.assert_allclose(np.linalg.inv(rotated) @ T[:, 3], [-0.3, 0.2, -0.1, 1.0],
                               atol=1e-12)


def test_paint_example_tracks_within_1mm_and_avoidance_raises_the_clearance(tmp_path, capsys):
    png = tmp_path / 'paint.png'
    assert cli.main(['paint', '--plot', str(png), '--json']) == 0
    report = json.loads(capsys.readouterr().out)
    plain, avoid = (report['runs'][name] for name in paint.RUNS)
    # SAM's law in both runs, as the labels say (not the controller's default DLS)
    assert plain['solver_method'] == avoid['solver_method'] == 'pseudoinverse'
    for run in (plain, avoid):
        assert run['max_position_error_mm'] < 1.0
        assert run['max_rotation_error_mrad'] < 1.0
    assert avoid['min_clearance_m'] > plain['min_clearance_m'] + 0.05
    assert all(c['holds'] for c in report['checks'])
    assert os.path.getsize(png) > 10000


def test_demo_sam9_paint_is_the_painting_example_and_other_pairings_are_usage_errors(
        tmp_path, capsys):
    for args in (['--robot', 'sam9'], ['--task', 'paint'],
                 ['--robot', 'simon', '--task', 'paint']):
        assert cli.main(['demo', *args]) == 2
        assert '--task paint is SAM' in capsys.readouterr().err
    png = tmp_path / 'demo.png'
    assert cli.main(['demo', '--robot', 'sam9', '--task', 'paint', '--plot', str(png)]) == 0
    out = capsys.readouterr().out
    assert out.count('[ok]') == 2 and 'FAILS' not in out
    assert os.path.getsize(png) > 10000


@pytest.mark.parametrize('edit, message', [
    (lambda d: d.pop('key_poses'), 'key_poses'),
    (lambda d: d.update(standoff=-0.1), 'standoff'),
    (lambda d: d.update(start_q=[0.0] * 3), 'start_q'),
    (lambda d: d['door'].update(size=[0.1, 0.0, 1.0]), 'door.size'),
    (lambda d: d['key_poses'][1].update(t=1.0), 'increase'),
])
def test_bad_task_files_are_refused(tmp_path, edit, message):
    import yaml
    with open(TASK, encoding='utf-8') as stream:
        data = yaml.safe_load(stream)
    data['robot'] = os.path.join(os.path.dirname(TASK), data['robot'])
    edit(data)
    path = tmp_path / 'task.yaml'
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(InputError, match=message):
        paint.load_task(str(path))


def test_a_task_file_that_is_not_yaml_is_refused_by_the_command(tmp_path, capsys):
    """``ik_control paint --task`` on a file that is not YAML: one line naming it, exit 2."""
    path = tmp_path / 'task.yaml'
    path.write_text('key_poses: [unclosed\n')
    assert cli.main(['paint', '--task', str(path), '--plot', str(tmp_path / 'p.png')]) == 2
    err = capsys.readouterr().err
    assert f"task '{path}' is not valid YAML" in err and 'Traceback' not in err

"""``ik_control play``: motion files on robots through the controller core, without ROS."""

import json

from ik_control import cli, robots
from ik_control.examples import play
from ik_control.validation import InputError
import pytest


@pytest.mark.parametrize('motion, robot, moved', [
    ('step.yaml', 'wam', False),                  # a cycle ends where it began
    ('glass_to_faucet.yaml', 'wam', True),
])
def test_play_tracks_within_1mm(motion, robot, moved, capsys, tmp_path):
    path = robots.data_path('config', 'motions', motion)
    png = tmp_path / 'play.png'
    assert cli.main(['play', path, '--robot', robot, '--json', '--plot', str(png)]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures['max_position_error_mm'] < 1.0
    assert figures['max_rotation_error_mrad'] < 10.0
    assert (figures['end_displacement_m'] > 0.1) == moved
    assert png.stat().st_size > 10000


def test_play_on_a_dh_robot_with_a_perturbed_profile(capsys):
    motion = robots.data_path('config', 'motions', 'wave.yaml')
    sam9 = robots.data_path('config', 'robots', 'sam9.yaml')
    start = ['0.0', '0.6', '-1.2', '0.3', '0.5', '1.0', '0.3', '0.5', '0.5']
    assert cli.main(['play', motion, '--robot', sam9, '--start-q', *start, '--perturbation',
                     '0.02', '0.1', '--seed', '1', '--json']) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures['max_position_error_mm'] < 1.0
    assert 0.0 < figures['end_displacement_m'] < 0.05     # perturbed: near, not at, home


def test_bad_motion_or_robot_is_refused(tmp_path):
    with pytest.raises(InputError, match='neither samples'):
        other = tmp_path / 'other.yaml'
        other.write_text('name: x\n')
        play.load_motion(str(other))
    with pytest.raises(InputError, match='bundled robot'):
        play.load_robot('r2d2')
    with pytest.raises(InputError, match='start-q'):
        play.load_robot('wam', [0.0, 1.0])
    motion = robots.data_path('config', 'motions', 'wave.yaml')
    assert cli.main(['play', motion, '--robot', 'r2d2']) == cli.EXIT_USAGE

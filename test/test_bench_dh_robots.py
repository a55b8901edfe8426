"""``ik_control bench ik`` and ``bench step`` on robots written as DH files (issue #17)."""

import json
import os
import subprocess
import sys

from ik_control import cli, robots
from ik_control.bench import arms
from ik_control.bench import ik as bench_ik
from ik_control.bench import step
from ik_control.kinematics.dh_file import load_dh_file
from ik_control.validation import InputError, ModelError
import numpy as np
import pinocchio as pin
import pytest

SAM9 = robots.data_path('config', 'robots', 'sam9.yaml')
WAM_DH = robots.data_path('config', 'robots', 'wam_dh.yaml')
SAM9_JOINTS = [f'joint{i}' for i in range(1, 10)]


def _dh_pose_error(dh, q, target):
    """Position [m] and rotation [rad] error of the DH table's tool at ``q`` (SAM eq. 2)."""
    T = dh.forward(q)
    return (float(np.linalg.norm(T[:3, 3] - target[:3, 3])),
            float(np.linalg.norm(pin.log3(target[:3, :3] @ T[:3, :3].T))))


@pytest.fixture(scope='module')
def sam9_results():
    # A generous timeout: the assertions are about solving, not about speed. TRAC-IK and
    # ikpy read the URDF file written from the DH file.
    return bench_ik.run(robot_names=(SAM9,), samples=60, timeout_ms=20.0,
                        solvers=('ik_control', 'trac_ik-speed', 'ikpy'),
                        peer_samples={'trac_ik-speed': 20, 'ikpy': 3}, progress=False,
                        keep_solutions=True)


def test_bench_ik_solves_on_a_dh_file_robot(sam9_results):
    entry = sam9_results['robots']['sam9']
    assert entry['joints'] == SAM9_JOINTS
    assert entry['base'] == 'base_link' and entry['tip'] == 'tool'
    assert entry['urdf'] == 'sam9.yaml'
    ours = entry['solvers']['ik_control']
    assert ours['available'] and ours['samples'] == 60
    assert ours['rate'] >= 95.0, ours['rate']
    for peer in ('trac_ik-speed', 'ikpy'):
        assert entry['solvers'][peer]['available'], entry['solvers'][peer]
        assert entry['solvers'][peer]['samples'] == {'trac_ik-speed': 20, 'ikpy': 3}[peer]


def test_bench_ik_solutions_reach_the_dh_tables_pose(sam9_results):
    """Every solution, put through the DH table itself, reaches the sample's pose."""
    dh = load_dh_file(SAM9)
    model = arms.load_model(arms.bench_robot(SAM9))
    qs, _ = arms.make_targets(model, sam9_results['samples'], sam9_results['seed'])
    solved = {}
    for solver, r in sam9_results['robots']['sam9']['solvers'].items():
        assert len(r['solutions']) == r['samples']
        for s in r['solutions']:
            if s['success']:
                q = np.array(s['q'])
                assert np.all(q >= model.lower - 1e-9) and np.all(q <= model.upper + 1e-9)
                position, rotation = _dh_pose_error(dh, q, dh.forward(qs[s['index']]))
                assert position <= 1e-5 and rotation <= 1e-5, (solver, s['index'])
                solved[solver] = solved.get(solver, 0) + 1
    assert solved.get('ik_control', 0) >= 57   # 95 % of 60


def test_bench_robots_from_dh_files():
    robot = arms.bench_robot(SAM9)
    assert (robot.name, robot.base, robot.tip, robot.source) == ('sam9', 'base_link', 'tool',
                                                                 SAM9)
    assert robot.urdf.endswith('sam9.urdf') and os.path.isfile(robot.urdf)
    with open(robot.urdf, encoding='utf-8') as stream:
        assert stream.read() == load_dh_file(SAM9).urdf()
    # the WAM's DH table: the same chain as urdf/wam.urdf
    wam_dh = arms.load_model(arms.bench_robot(WAM_DH))
    wam = arms.load_model(arms.bench_robot('wam'))
    assert wam_dh.joint_names == wam.joint_names
    q = np.random.default_rng(3).uniform(wam.lower, wam.upper)
    assert np.allclose(wam_dh.frame_placements(q), wam.frame_placements(q), atol=1e-9)
    with pytest.raises(ModelError, match='does not exist'):
        arms.bench_robot('no_such_robot.yaml')
    with pytest.raises(InputError, match='DH file'):
        arms.bench_robot('r2d2')


def test_robots_file_takes_a_dh_file(tmp_path):
    listing = tmp_path / 'robots.yaml'
    listing.write_text(f"- {{urdf: '{SAM9}'}}\n"
                       f"- {{name: sam9_arm, urdf: '{SAM9}', tip: link_5, "
                       f'joints: [joint1, joint2, joint3, joint4, joint5]}}\n')
    whole, arm = arms.read_robots_file(str(listing))
    assert (whole.name, whole.base, whole.tip) == ('sam9', 'base_link', 'tool')
    assert (arm.name, arm.base, arm.tip) == ('sam9_arm', 'base_link', 'link_5')
    model = arms.load_model(arm)
    assert list(model.joint_names) == SAM9_JOINTS[:5]


def test_bench_ik_command_takes_a_dh_file(tmp_path):
    out = subprocess.run([sys.executable, '-m', 'ik_control.cli', 'bench', 'ik', '--robot', 'wam',
                          '--robot', SAM9, '--samples', '20', '--timeout-ms', '20',
                          '--solvers', 'ik_control', '--json', '--output-dir', str(tmp_path)],
                         capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert list(data['robots']) == ['wam', 'sam9']
    ours = data['robots']['sam9']['solvers']['ik_control']
    assert ours['samples'] == 20 and ours['rate'] >= 95.0
    assert 'sam9' in data['table']
    assert cli.main(['bench', 'ik', '--robot', 'r2d2', '--samples', '1', '--no-save']) \
        == cli.EXIT_USAGE


def test_bench_step_on_a_dh_file():
    results = step.run(samples=200, robot_names=(SAM9, 'wam'))
    assert list(results['robots']) == ['sam9', 'wam']
    sam9, wam = results['robots']['sam9'], results['robots']['wam']
    assert (sam9['joints'], sam9['task_rows']) == (9, 6)
    assert (wam['joints'], wam['task_rows']) == (7, 6)
    for entry in (sam9, wam):
        assert set(entry['implementations']) == {'ik_control', 'numpy+pinocchio', 'pink',
                                                 'ik_control+collision'}
        for stats in entry['implementations'].values():
            assert 0.0 < stats['median_us'] <= stats['p99_us']
    assert 'sam9' in step.table(results)
    with pytest.raises(InputError, match='given twice'):
        step.run(samples=10, robot_names=(SAM9, SAM9))
    with pytest.raises(InputError, match='neither a bundled robot'):
        step.run(samples=10, robot_names=('r2d2',))


def test_robots_load_a_dh_file_as_every_command_does():
    model, q0 = robots.load(SAM9)
    dh = load_dh_file(SAM9)
    assert list(model.joint_names) == SAM9_JOINTS
    assert model.base_frame == 'base_link' and model.end_effector_names == ('tool',)
    assert np.allclose(q0, model.center)
    q = np.random.default_rng(5).uniform(model.lower, model.upper)
    assert np.allclose(model.frame_placements(q)[0], dh.forward(q), atol=1e-9)
    wam, ready = robots.load('wam')
    assert np.allclose(ready, robots.ready_pose('wam'))
    assert wam.end_effector_names == ('tool',)

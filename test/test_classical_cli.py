"""`ik_control solve --method` and the classical rows of `ik_control bench ik`."""

import json

from ik_control import cli, robots
from ik_control.bench import ik as bench_ik
from ik_control.ik.classical import ClassicalIk
from ik_control.kinematics import RobotModel
from ik_control.kinematics.dh import dh_urdf, DHRow
from ik_control.validation import ModelError
import numpy as np
import pinocchio as pin
import pytest

WAM_URDF = robots.urdf_path('wam')
# The time budget of a solve whose success a test asserts [ms] (it returns at its solution):
# make test runs these tests at nice 19 beside the node tests, where a wall-clock budget of
# 200 ms can pass while the solve waits for a core.
SOLVE_MS = '30000'


@pytest.mark.parametrize('method', ['ccd', 'hal', 'analytic'])
def test_solve_command_with_a_classical_method_reaches_the_pose(method, capsys):
    model = robots.robot('wam')
    q_goal = robots.ready_pose('wam') + 0.3
    T = model.pin_frame_placement(q_goal, 'tool')
    quat = pin.Quaternion(T[:3, :3]).coeffs()      # x y z w
    code = cli.main(['solve', '--urdf', WAM_URDF, '--base', 'wam_base', '--tip', 'tool',
                     '--xyz', *map(str, T[:3, 3]), '--quat', *map(str, quat),
                     '--method', method, '--tolerance', '1e-4', '--timeout-ms', SOLVE_MS,
                     '--random-seed', '1', '--json'])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report['success']
    q = np.array(report['positions'])
    reached = model.pin_frame_placement(q, 'tool')
    assert np.linalg.norm(reached[:3, 3] - T[:3, 3]) < 1e-4


def test_analytic_method_on_a_planar_two_link_chain_and_its_refusals(capsys):
    model = RobotModel.from_urdf(dh_urdf([DHRow(0.0, 0.6, 0.0), DHRow(0.0, 0.4, 0.0)]),
                                 end_effectors=[('tool', 'position')])
    goal = model.pin_frame_placement([0.5, -1.2], 'tool')
    result = ClassicalIk(model, 'analytic').solve(goal[None], q_seed=[0.4, -1.0])
    assert result.success and result.position_error < 1e-12
    np.testing.assert_allclose(result.q, [0.5, -1.2], atol=1e-9)
    with pytest.raises(ModelError, match='7-DoF arm'):
        ClassicalIk(model, 'hal')
    with pytest.raises(ModelError, match='share joints'):   # one 7-joint arm for two tips
        ClassicalIk(RobotModel.from_urdf(WAM_URDF, base_frame='wam_base',
                                         end_effectors=['tool', 'wam_link_7']), 'hal')


def _simon_goal_args(model, q):
    args = []
    for frame in ('right_hand', 'left_hand'):
        T = model.pin_frame_placement(q, frame)
        args += ['--tip', frame, '--xyz', *map(str, T[:3, 3]),
                 '--quat', *map(str, pin.Quaternion(T[:3, :3]).coeffs())]
    return args


@pytest.mark.parametrize('method', ['lm', 'ccd', 'hal'])
def test_solve_command_on_both_of_simons_hands(method, capsys):
    simon = robots.robot('simon')
    rng = np.random.default_rng(3)
    q_goal = robots.ready_pose('simon') + rng.uniform(-0.3, 0.3, simon.nq)
    if method == 'hal':
        q_goal[:2] = simon.center[:2]          # hal holds the torso at the seed (mid-range)
    code = cli.main(['solve', '--urdf', robots.urdf_path('simon'), '--base', 'simon_base',
                     *_simon_goal_args(simon, q_goal), '--method', method,
                     '--tolerance', '1e-4', '--timeout-ms', SOLVE_MS, '--random-seed', '1',
                     '--json'])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report['success']
    q = np.array(report['positions'])
    names = report['joint_names']
    q_model = q[[names.index(n) for n in simon.joint_names]]   # the CLI's joint order
    for frame in ('right_hand', 'left_hand'):
        T = simon.pin_frame_placement(q_goal, frame)
        reached = simon.pin_frame_placement(q_model, frame)
        assert np.linalg.norm(reached[:3, 3] - T[:3, 3]) < 1e-4
        assert np.linalg.norm(pin.log3(reached[:3, :3].T @ T[:3, :3])) < 1e-4


def test_solve_command_refuses_mismatched_tips_and_goals(capsys):
    code = cli.main(['solve', '--urdf', robots.urdf_path('simon'), '--base', 'simon_base',
                     '--tip', 'right_hand', '--tip', 'left_hand', '--xyz', '0.3', '0', '1'])
    assert code == 2 and 'one --xyz for each' in capsys.readouterr().err


def test_bench_rows_for_the_classical_methods():
    results = bench_ik.run(robot_names=('wam',), samples=15, timeout_ms=50.0,
                           solvers=('ccd', 'hal', 'analytic'), progress=False)
    rows = results['robots']['wam']['solvers']
    assert set(rows) == {'ccd', 'hal', 'analytic'}
    assert all(r['available'] and r['samples'] == 15 for r in rows.values())
    assert rows['analytic']['rate'] == 100.0 and rows['hal']['rate'] == 100.0
    assert rows['ccd']['rate'] >= 50.0
    assert set(bench_ik.SOLVERS) >= {'ccd', 'hal', 'analytic', 'ik_control'}


def test_bench_hal_reports_exact_closed_form_on_wam_and_the_refined_offset_error(capsys):
    code = cli.main(['bench', 'hal', '--robot', 'wam', '--robot', 'panda', '--samples', '8',
                     '--json', '--no-save'])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    wam, panda = data['robots']['wam'], data['robots']['panda']
    assert wam['axis_residual_m'] < 1e-12 and wam['refine_0']['position_max_m'] < 1e-9
    assert panda['axis_residual_m'] > 0.01                       # the Panda's wrist offset
    assert panda['refine_0']['position_median_m'] > 0.01         # left by the closed form
    assert panda['refine_3']['position_median_m'] < 0.1 * panda['refine_0']['position_median_m']

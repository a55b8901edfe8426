"""Parent's control term on a position-IK solution: `PostureRefinement` and `solve --posture-*`."""

import json
import time

from hypothesis import given, settings, strategies as st
from ik_control import cli, robots
from ik_control.ik.position_ik import LAW_CONFIG, PositionIk
from ik_control.ik.posture import PostureRefinement
from ik_control.kinematics import RobotModel
import numpy as np
import pytest

WAM_URDF = robots.urdf_path('wam')


@pytest.fixture(scope='module')
def wam_tip():
    """Return the WAM with its tool as a position task: four spare joints."""
    return RobotModel.from_urdf(WAM_URDF, base_frame='wam_base',
                                end_effectors=[('tool', 'position')])


def _tip(model, q):
    return model.pin_frame_placement(q, 'tool')


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2 ** 16), psi=st.sampled_from([1.5, 2.0, 4.0]))
def test_refinement_lowers_the_control_term_and_keeps_the_tip(wam_tip, seed, psi):
    """H falls, the tip stays on its target (pinocchio FK) and the joints in their limits."""
    m = wam_tip
    rng = np.random.default_rng(seed)
    q_goal, q_desired = m.random_configurations(2, rng)
    goal = _tip(m, q_goal)
    start = PositionIk(m, clock=time.process_time).solve(goal[None], time_budget=0.05, rng=rng)
    assert start.success
    refinement = PostureRefinement(m, LAW_CONFIG, posture_target=q_desired,
                                   posture_weights=rng.uniform(0.2, 2.0, m.nq),
                                   posture_exponent=psi)
    q, updates, ep, _ = refinement.refine(start.q, goal[None])
    assert refinement.cost(q) <= refinement.cost(start.q) + 1e-12
    assert np.linalg.norm(_tip(m, q)[:3, 3] - goal[:3, 3]) < 1e-8
    assert ep < 1e-8 and updates >= 1
    assert np.all(q >= m.lower) and np.all(q <= m.upper)


def test_refinement_reaches_desired_angles_that_solve_the_task(wam_tip):
    """Desired angles on the solution set are reached; the plain solution is elsewhere."""
    m = wam_tip
    q_desired = 0.5 * m.center + 0.5 * m.random_configurations(1, np.random.default_rng(4))[0]
    goal = _tip(m, q_desired)
    seed = np.clip(q_desired + 0.4, m.lower, m.upper)
    start = PositionIk(m, clock=time.process_time).solve(goal[None], seed, time_budget=0.05)
    assert start.success
    assert np.abs(start.q - q_desired).max() > 0.05     # position IK alone lands elsewhere
    q, _, ep, _ = PostureRefinement(m, LAW_CONFIG, posture_target=q_desired).refine(
        start.q, goal[None])
    np.testing.assert_allclose(q, q_desired, atol=1e-4)
    assert ep < 1e-9


def test_solve_command_with_posture_options(wam_tip, capsys):
    """`solve --posture-target --posture-weights --posture-exponent`: H lower, tip held."""
    m = wam_tip
    q_desired = m.center + 0.3
    goal = _tip(m, robots.ready_pose('wam'))
    args = ['solve', '--urdf', WAM_URDF, '--base', 'wam_base', '--tip', 'tool',
            '--xyz', *(f'{v:.9f}' for v in goal[:3, 3]), '--random-seed', '2', '--json',
            '--timeout-ms', '30000']   # it returns at its solution; make test runs this niced
    assert cli.main(args) == 0
    plain = json.loads(capsys.readouterr().out)
    assert 'posture' not in plain
    desired = [f'{v:.9f}' for v in q_desired]
    assert cli.main(args + ['--posture-target', *desired, '--posture-weights', *['1'] * m.nq,
                            '--posture-exponent', '2']) == 0
    report = json.loads(capsys.readouterr().out)
    posture = report['posture']
    assert posture['applied'] and posture['cost'] < 0.9 * posture['cost_before']
    q = np.array(report['positions'])
    assert np.linalg.norm(_tip(m, q)[:3, 3] - goal[:3, 3]) < 1e-5
    plain_q = np.array(plain['positions'])
    assert np.linalg.norm(q - q_desired) < np.linalg.norm(plain_q - q_desired)


@pytest.mark.parametrize('extra, message', [
    (['--posture-target', '0.1'], 'posture_target needs 7 values'),
    (['--posture-exponent', '0.5'], 'posture_exponent must be a number in [1, 8]'),
    (['--posture-gain', '-1', '--posture-exponent', '2'], 'posture gain must be'),
    (['--posture-gain', '0'], 'posture gain must be'),   # the gain alone asks for it too
])
def test_solve_command_refuses_bad_posture_options_in_one_line(extra, message, capsys):
    goal = _tip(RobotModel.from_urdf(WAM_URDF, base_frame='wam_base',
                                     end_effectors=[('tool', 'position')]),
                robots.ready_pose('wam'))
    code = cli.main(['solve', '--urdf', WAM_URDF, '--base', 'wam_base', '--tip', 'tool',
                     '--xyz', *(f'{v:.9f}' for v in goal[:3, 3]), *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == cli.EXIT_USAGE and len(err) == 1 and message in err[0]

"""The one-update solver (solve_step), position IK and the `ik_control solve` command."""

from dataclasses import fields
import json
from numbers import Real
import os
import subprocess
import sys
import time

from hypothesis import given, settings, strategies as st
from ik_control import robots
from ik_control.bench import buss
from ik_control.control.config import CollisionConfig, ControllerConfig, FallbackConfig
from ik_control.control.controller import ResolvedRateController
from ik_control.ik.position_ik import PositionIk
from ik_control.ik.solver import METHODS, SolverConfig, VelocitySolver
from ik_control.validation import field_range, InputError
import numpy as np
import pytest

WAM = robots.robot('wam')
SIMON = robots.robot('simon')


@pytest.mark.parametrize('method', sorted(METHODS))
def test_every_law_converges_on_a_reachable_wam_target(method):
    rng = np.random.default_rng(0)
    q = robots.ready_pose('wam')
    target = WAM.frame_placements(q + 0.2 * rng.standard_normal(7))
    solver = VelocitySolver(WAM, SolverConfig(method=method, orientation_weight=1.0))
    for _ in range(400 if method == 'transpose' else 60):
        q = np.clip(q + solver.step(q, target), WAM.lower, WAM.upper)
    solver.step(q, target)
    tol = 1e-3 if method == 'transpose' else 1e-6
    assert solver.err_pos[0] < tol and solver.err_rot[0] < tol


def test_clamp_mag_bounds_the_error_each_effector_sees():
    q = robots.ready_pose('simon')
    T = SIMON.frame_placements(q)
    T[0, 0, 3] += 2.0   # right hand 2 m away: clamped to D_max
    T[1, 1, 3] += 0.01  # left hand 1 cm away: untouched
    solver = VelocitySolver(SIMON, SolverConfig(clamp_error=0.05, max_joint_step=0.0,
                                                centering_gain=0.0, adaptive_damping=False,
                                                damping=1e-4))
    dq = solver.step(q, T).copy()
    moved = SIMON.jacobian(q) @ dq
    assert np.linalg.norm(moved[:3]) == pytest.approx(0.05, rel=0.05)
    assert np.linalg.norm(moved[6:9]) == pytest.approx(0.01, rel=0.05)
    assert solver.info[3] == 1.0


def test_adaptive_clamp_is_unbounded_right_after_a_jump_then_tightens():
    q = robots.ready_pose('wam')
    T = WAM.frame_placements(q)
    T[0, 0, 3] += 0.3
    solver = VelocitySolver(WAM, SolverConfig(clamp_error=0.02, adaptive_clamp=True,
                                              max_joint_step=0.0))
    solver.step(q, T)
    assert np.isinf(solver.dmax[0])
    q = q + solver.dq
    solver.step(q, T)
    assert 0.02 < solver.dmax[0] < 0.5  # beta_i (progress of the last update) + D_max
    solver.reset_targets()
    solver.step(q, T)
    assert np.isinf(solver.dmax[0])


def test_adaptive_clamp_resets_only_the_effector_whose_target_jumped():
    q = robots.ready_pose('simon')
    T = SIMON.frame_placements(q)
    T[:, 0, 3] += 0.3
    solver = VelocitySolver(SIMON, SolverConfig(clamp_error=0.02, adaptive_clamp=True,
                                                max_joint_step=0.0))
    for _ in range(2):
        q = q + solver.step(q, T)
    solver.reset_targets([1])   # the left hand's target jumped, the right hand's did not
    solver.step(q, T)
    assert np.isfinite(solver.dmax[0]) and 0.02 <= solver.dmax[0] < 0.5
    assert np.isinf(solver.dmax[1])


def test_a_new_goal_for_one_hand_leaves_the_other_hands_adaptive_bound_alone():
    # the controller's side of Buss's per-effector D_max,i: a pose goal resets only its own
    config = ControllerConfig(rate_hz=1000.0, solver=SolverConfig(
        clamp_error=0.02, adaptive_clamp=True)).updated(
            {'fallback.strategy': 'off', 'collision.enabled': False})
    c = ResolvedRateController(SIMON, config)
    q = np.array(robots.ready_pose('simon'))
    T = SIMON.frame_placements(q)
    T[:, 0, 3] += 0.3
    for k, ee in enumerate(SIMON.end_effector_names):
        c.set_target_matrix(ee, T[k])
    for tick in range(20):
        c.set_joint_state(SIMON.joint_names, q, tick * 1e-3)
        command = c.update(tick * 1e-3)
        if command is not None:
            q = command.at(1e-3)[0]
    assert np.all(np.isfinite(c.solver.dmax))  # both bounds tightened after the jumps
    left = c.solver.dmax[1]
    T[0, 1, 3] += 0.2
    c.set_target_matrix('right_hand', T[0])   # the right hand's target jumps, the left's not
    c.set_joint_state(SIMON.joint_names, q, 0.02)
    c.update(0.02)
    assert np.isinf(c.solver.dmax[0])
    assert np.isfinite(c.solver.dmax[1]) and 0.02 <= c.solver.dmax[1] < 0.5
    assert c.solver.dmax[1] == pytest.approx(left, abs=0.05)


def test_max_joint_step_clamps_the_largest_joint_change():
    q = robots.ready_pose('wam')
    T = WAM.frame_placements(q)
    T[0, :3, 3] += [0.5, -0.5, 0.3]
    solver = VelocitySolver(WAM, SolverConfig(max_joint_step=0.01, clamp_error=0.0))
    assert np.max(np.abs(solver.step(q, T))) == pytest.approx(0.01)
    assert solver.info[2] == 1.0


def test_joint_centering_moves_joints_toward_the_middle_without_moving_the_tool():
    q = robots.ready_pose('wam')
    q[0] = 2.0  # J1 near its +2.6 limit
    T = WAM.frame_placements(q)
    solver = VelocitySolver(WAM, SolverConfig(centering_gain=0.05, damping=1e-4,
                                              adaptive_damping=False))
    dq = solver.step(q, T)
    assert dq[0] < 0
    assert np.linalg.norm(WAM.jacobian(q) @ dq) < 1e-3 * np.linalg.norm(dq)


def test_manipulability_objective_increases_manipulability():
    from ik_control.ik.nullspace import manipulability
    wam = robots.robot('wam', end_effectors=[('tool', 'position')])  # 4-D nullspace
    q = robots.ready_pose('wam')
    q[3] = 0.15  # elbow nearly straight: low manipulability
    T = wam.frame_placements(q)
    solver = VelocitySolver(wam, SolverConfig(manipulability_gain=0.5, max_joint_step=0.02))
    before = manipulability(wam.jacobian(q))
    for _ in range(50):
        q = q + solver.step(q, T)
    assert manipulability(wam.jacobian(q)) > 1.2 * before
    solver.step(q, T)
    assert solver.err_pos[0] < 1e-3


def _near_singular(name, q, rng):
    """``q`` with the elbow(s) straight, exactly or within 1e-6 rad (a singular arm)."""
    elbows = [3] if name == 'wam' else [SIMON.joint_names.index(j) for j in SIMON.joint_names
                                        if 'elbow' in j]
    q = q.copy()
    q[elbows] = np.clip(rng.choice([0.0, 1e-6, -1e-6]), ROBOTS[name].lower[elbows],
                        ROBOTS[name].upper[elbows])
    return q


ROBOTS = {'wam': WAM, 'simon': SIMON}


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.sampled_from(sorted(ROBOTS)), st.floats(0.05, 2.0),
       st.booleans())
def test_the_nullspace_motion_moves_no_effector(seed, name, gain, singular):
    # the step toward a target the arm is already on is all nullspace motion (SAM eq. 16):
    # its task-space velocity J dq is zero to rounding, whatever the damping in use
    rng = np.random.default_rng(seed)
    model = ROBOTS[name]
    q = model.random_configurations(1, rng)[0]
    if singular:
        q = _near_singular(name, q, rng)
    solver = VelocitySolver(model, SolverConfig(centering_gain=gain, manipulability_gain=0.0,
                                                max_joint_step=0.0))
    dq = solver.step(q, model.frame_placements(q))
    J = solver.J
    assert np.linalg.norm(dq) > 0.0
    assert np.linalg.norm(J @ dq) <= 1e-9 * np.linalg.norm(J, 2) * np.linalg.norm(dq)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.sampled_from(sorted(ROBOTS)), st.floats(0.1, 0.5))
def test_the_task_converges_with_joint_centering_active(seed, name, gain):
    # the controller's centering_gain [1/s] at 1 kHz is gain / 1000 per update. With a
    # damped projector the secondary motion leaked into the task and the hand settled off
    # the goal (centering_gain 0.1-0.5); exact, the error goes to 0
    rng = np.random.default_rng(seed)
    model = ROBOTS[name]
    while True:  # away from singularities, where damped least squares alone is slow
        q = model.random_configurations(1, rng, margin=0.2)[0]
        q_goal = q + 0.05 * rng.standard_normal(model.nq)
        if min(np.linalg.svd(model.jacobian(x), compute_uv=False)[-1] for x in (q, q_goal)) > 0.05:
            break
    target = model.frame_placements(q_goal)
    solver = VelocitySolver(model, SolverConfig(centering_gain=gain / 1000.0))
    for _ in range(300):
        q = q + solver.step(q, target)
    solver.step(q, target)
    assert np.all(q >= model.lower) and np.all(q <= model.upper)
    assert np.max(solver.err_pos) < 1e-7 and np.max(solver.err_rot) < 1e-6


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.sampled_from(sorted(METHODS)),
       st.floats(1e-3, 1e4), st.booleans())
def test_any_target_gives_a_finite_bounded_step(seed, method, distance, singular):
    rng = np.random.default_rng(seed)
    q = WAM.random_configurations(1, rng)[0]
    if singular:
        q[1] = q[3] = q[5] = 0.0  # WAM stretched straight up: singular
    T = WAM.frame_placements(q)
    T[0, :3, 3] += distance * rng.standard_normal(3)
    solver = VelocitySolver(WAM, SolverConfig(method=method, max_joint_step=0.1))
    dq = solver.step(q, T)
    assert np.all(np.isfinite(dq)) and np.max(np.abs(dq)) <= 0.1 + 1e-12


@pytest.mark.parametrize('bad', ['nan_q', 'inf_target', 'short_q', 'int_q', 'target_shape'])
def test_bad_numbers_are_refused_at_the_boundary(bad):
    solver = VelocitySolver(WAM)
    q = robots.ready_pose('wam')
    T = WAM.frame_placements(q)
    if bad == 'nan_q':
        q[2] = np.nan
    elif bad == 'inf_target':
        T[0, 0, 3] = np.inf
    elif bad == 'short_q':
        q = q[:6]
    elif bad == 'int_q':
        q = np.zeros(7, dtype=int)
    else:
        T = T[0]
    with pytest.raises(InputError):
        solver.step(q, T)


def test_bad_solver_parameters_are_refused():
    for bad in ({'method': 'magic'}, {'damping': -1.0}, {'gain': 0.0},
                {'clamp_error': float('nan')}, {'error_mode': 'euler'}):
        with pytest.raises(InputError):
            VelocitySolver(WAM, SolverConfig(**bad))


def test_every_number_of_the_law_is_refused_just_outside_its_range():
    numbers = [f for f in fields(SolverConfig) if isinstance(f.default, Real)
               and not isinstance(f.default, bool)]
    assert len(numbers) == 13
    for f in numbers:
        lo, hi = field_range(SolverConfig, f.name)  # None (no range) fails here
        assert lo <= f.default <= hi
        for outside in (lo - 1e-3 * (1 + abs(lo)), hi + 1e-3 * (1 + abs(hi)), float('nan')):
            with pytest.raises(InputError, match=f'solver.{f.name} must be a number'):
                SolverConfig(**{f.name: outside}).validate()


def test_position_ik_solves_random_reachable_poses_inside_limits():
    rng = np.random.default_rng(3)
    ik = PositionIk(WAM, clock=time.process_time)   # a CPU budget: make test runs this niced
    results = [ik.solve(WAM.frame_placements(q), rng=rng, time_budget=0.05)
               for q in WAM.random_configurations(100, rng)]
    assert sum(r.success for r in results) >= 99
    for r in results:
        assert np.all(r.q >= WAM.lower) and np.all(r.q <= WAM.upper)
        if r.success:
            assert r.position_error <= 1e-5 and r.rotation_error <= 1e-5


def test_position_ik_reports_failure_for_an_unreachable_pose():
    T = WAM.frame_placements(robots.ready_pose('wam'))
    T[0, :3, 3] = [3.0, 0.0, 0.5]
    r = PositionIk(WAM).solve(T, time_budget=0.02, rng=np.random.default_rng(0))
    assert not r.success and r.position_error > 1.5


def _cli(*args):
    return subprocess.run([sys.executable, '-m', 'ik_control.cli', *args], capture_output=True,
                          text=True, timeout=120, env=dict(os.environ))


def test_solve_command_prints_a_solution_that_reaches_the_pose():
    q = robots.ready_pose('wam') + 0.1
    T = WAM.frame_placements(q)[0]
    from ik_control.validation import matrix_to_quaternion
    quat = matrix_to_quaternion(T[:3, :3])
    out = _cli('solve', '--urdf', robots.urdf_path('wam'), '--base', 'wam_base', '--tip', 'tool',
               '--xyz', *map(str, T[:3, 3]), '--quat', *map(str, quat), '--json',
               '--timeout-ms', '30000')   # it returns at its solution; make test runs this niced
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report['success'] and report['joint_names'] == list(WAM.joint_names)
    reached = WAM.frame_placements(np.array(report['positions']))[0]
    np.testing.assert_allclose(reached, T, atol=1e-4)


def test_solve_command_fails_clearly():
    urdf = robots.urdf_path('wam')
    out = _cli('solve', '--urdf', urdf, '--tip', 'nowhere', '--xyz', '0', '0', '1')
    assert out.returncode == 2 and "unknown frame 'nowhere'" in out.stderr
    out = _cli('solve', '--urdf', '/no/such.urdf', '--tip', 'tool', '--xyz', '0', '0', '1')
    assert out.returncode == 2 and 'does not exist' in out.stderr
    out = _cli('solve', '--urdf', urdf, '--tip', 'tool', '--xyz', '3', '0', '0.5',
               '--timeout-ms', '20')
    assert out.returncode == 3 and 'no solution' in out.stderr
    out = _cli('solve', '--urdf', urdf, '--tip', 'tool', '--xyz', '0.5', '0', '1',
               '--quat', '0', '0', '0', '0')
    assert out.returncode == 2 and 'not normalised' in out.stderr


def test_buss_experiment_reproduces_the_papers_robust_findings():
    """
    The findings that hold here (see docs/performance.md for those that do not).

    Pseudoinverse oscillation, DLS + ClampMag tracking at least as well as tuned DLS with
    less damping at a fifth of a link, the transpose poor on the double-Y; per-effector
    adaptive D_max,i after jumps on the double-Y.
    """
    results = buss.run(steps=1200)
    for name, entry in results['shapes'].items():
        laws = entry['laws']
        clamp, dls = laws['dls+clampmag'], laws['dls']
        tight = next(r for law, r in laws.items() if law.startswith('dls+clampmag@'))
        assert (laws['pseudoinverse']['oscillation_out_of_reach']
                > 10 * clamp['oscillation_out_of_reach'])
        assert clamp['mean_error'] <= dls['mean_error']
        assert tight['damping'] < dls['damping']
        assert clamp['jumps'] <= dls['jumps']
        assert laws['pseudoinverse']['jumps'] > 10 * dls['jumps']
        for r in laws.values():
            assert r['mean_error'] <= r['rms_error'] <= r['worst_error']
    dy = results['shapes']['double_y']
    assert dy['laws']['transpose']['mean_error'] > 1.5 * dy['laws']['dls+clampmag']['mean_error']
    jumping = dy['jumping']['laws']
    assert (jumping['adaptive, own reset']['oscillation_out_of_reach']
            < jumping['adaptive, reset all']['oscillation_out_of_reach'])
    claims = [claim for claim, _ in buss.checks(results)]
    assert any('half a link' in c for c in claims) and any('fifth' in c for c in claims)


def test_the_alternate_jacobian_is_jerkier_folded_and_both_reach_the_close_targets():
    """Buss's alternate-Jacobian claims as measured (docs/performance.md): the folded one holds."""
    from ik_control.bench import buss_alternate

    results = buss_alternate.run(steps=1200, damping=0.2)
    usual, alternate = (law.name for law in buss_alternate.laws(0.2, results['d_max']))
    folded = results['cases']['close, folded']
    for name in (usual, alternate):
        assert folded[name]['final_error'] < 1e-4  # both reach targets in reach
    assert folded[alternate]['max_step'] > 1.2 * folded[usual]['max_step']
    moving = results['cases']['moving']
    assert moving[alternate] != moving[usual]  # the switch changes what the law does
    claims = {c: ok for c, ok, _ in buss_alternate.checks(results)}
    assert claims['jerky when folded, reaching a close target']


def test_error_mode_sam_is_a_deprecated_alias_of_axis_cross():
    # users' configs name SAM eq. 21 'sam': still accepted, the same error
    assert SolverConfig(error_mode='sam').packed().tolist() == \
        SolverConfig(error_mode='axis_cross').packed().tolist()


def _posture_run(target, weights=(), psi=2.0, ticks=3000):
    """Hold the WAM's tool pose at 500 Hz with Parent's posture term; (q0, q, drift)."""
    from dataclasses import replace

    wam = robots.robot('wam')
    base = ControllerConfig()
    config = ControllerConfig(rate_hz=500.0, fallback=FallbackConfig(strategy='off'),
                              collision=CollisionConfig(enabled=False),
                              solver=replace(base.solver, centering_gain=2.0,
                                             posture_target=tuple(target),
                                             posture_weights=tuple(weights),
                                             posture_exponent=psi))
    c = ResolvedRateController(wam, config)
    q0 = np.array(robots.ready_pose('wam'), dtype=float)
    q, t = q0.copy(), 0.0
    c.set_joint_state(wam.joint_names, q, t)
    T0 = wam.frame_placements(q)[0]
    for _ in range(ticks):
        t += 1.0 / 500.0
        c.set_joint_state(wam.joint_names, q, t)
        q = c.update(t).at(1.0 / 500.0)[0]
    return q0, q, float(np.linalg.norm(wam.frame_placements(q)[0][:3, 3] - T0[:3, 3]))


@pytest.mark.parametrize('sign', [1.0, -1.0])
def test_parents_posture_term_turns_the_arm_toward_the_desired_angle_with_the_hand_held(sign):
    """Desired angles in the nullspace (SAM eq. 16): the upper arm rolls, the tool stays."""
    target = np.array(robots.ready_pose('wam'), dtype=float)
    target[2] = sign * 0.8   # wam_j3, the upper arm's roll
    q0, q, drift = _posture_run(target)
    assert sign * (q[2] - q0[2]) > 0.2
    assert drift < 1e-6
    # a larger psi pulls less at offsets under a half range (|d / half range| < 1)
    _, q4, drift = _posture_run(target, psi=4.0)
    assert 0.0 < sign * (q4[2] - q0[2]) < 0.5 * sign * (q[2] - q0[2]) and drift < 1e-6
    # a weight of 0 frees that joint: the pull toward its desired angle is gone
    weights = np.ones(7)
    weights[2] = 0.0
    _, q_free, _ = _posture_run(target, weights)
    np.testing.assert_allclose(q_free, q0, atol=1e-9)


def test_posture_settings_of_the_wrong_length_or_outside_the_limits_are_refused():
    wam = robots.robot('wam')
    with pytest.raises(InputError, match='7 values'):
        VelocitySolver(wam, SolverConfig(posture_target=(0.0, 0.0)))
    with pytest.raises(InputError, match='inside the joint limits'):
        VelocitySolver(wam, SolverConfig(posture_target=(10.0,) * 7))
    with pytest.raises(InputError, match='>= 0'):
        SolverConfig(posture_weights=(-1.0,) * 7).validate()
    with pytest.raises(InputError, match=r'posture_exponent must be a number in \[1, 8\]'):
        SolverConfig(posture_exponent=0.5).validate()
    # on the controller, a refused posture changes nothing (the solver's check comes first)
    from dataclasses import replace

    c = ResolvedRateController(wam, ControllerConfig())
    before = (c.config, c.ik_mode, c.constrained, c.solver.P.copy())
    bad = ControllerConfig(ik_method='ccd', fallback=FallbackConfig(strategy='off'),
                           solver=replace(ControllerConfig().solver, posture_target=(0.0,)))
    with pytest.raises(InputError, match='7 values'):
        c.configure(bad)
    assert (c.config, c.ik_mode, c.constrained) == before[:3]
    np.testing.assert_array_equal(c.solver.P, before[3])

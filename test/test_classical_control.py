"""
The controller's ik_method (ccd, hal, analytic) and its Welman constraints, ROS-free.

Every command window the controller issues is checked against the limits
(:func:`command_checks.assert_window_within_limits`); goals are reached on the robot's
own measured pose; constraints are measured at every knot the robot passes.
"""


from command_checks import assert_window_within_limits
from ik_control import cli, robots
from ik_control.collision.model import CollisionModel
from ik_control.control.classical_mode import ClassicalMode
from ik_control.control.config import (CollisionConfig, ControllerConfig, FallbackConfig,
                                       GoalConfig)
from ik_control.control.constrained_motion import constraints_from_yaml
from ik_control.control.controller import ResolvedRateController
from ik_control.ik.constraints import Handle, PointOnPlane
from ik_control.ik.hal import HalArm
from ik_control.kinematics import RobotModel
from ik_control.validation import InputError
import numpy as np
import pytest

WAM = robots.robot('wam')
SIMON = robots.robot('simon')
RATE = {'wam': 500.0, 'simon': 1000.0}


def _loop(model, config, q, ticks, before=None, each=None):
    """Run a closed loop on an ideal robot, every command checked; return (controller, q)."""
    c = ResolvedRateController(model, config)
    dt = 1.0 / config.rate_hz
    lo = model.lower + config.limits.position_margin
    hi = model.upper - config.limits.position_margin
    t = 0.0
    c.set_joint_state(model.joint_names, q, t)
    for k in range(ticks):
        if before is not None:
            before(c, k, q)
        t += dt
        c.set_joint_state(model.joint_names, q, t)
        command = c.update(t)
        assert_window_within_limits(lo, hi, c.v_max, c.a_max, command)
        q = command.at(dt)[0]
        if each is not None and each(c, k, q):
            break
    return c, q


def _goal_configuration(name, seed, torso_held):
    """Draw a goal configuration near the ready pose, clear of self-contact (12 mm)."""
    model = robots.robot(name)
    rng = np.random.default_rng(seed)
    q0 = robots.ready_pose(name)
    with open(robots.data_path('config', f'{name}.srdf'), encoding='utf-8') as f:
        collision = CollisionModel(model, srdf=f.read())
    while True:  # a goal the robot can take without touching itself
        q_goal = np.clip(q0 + rng.uniform(-0.4, 0.4, model.nq), model.lower + 0.1,
                         model.upper - 0.1)
        if torso_held and name == 'simon':
            q_goal[:2] = q0[:2]        # hal and analytic move the arms, not the torso
        if collision.closest(q_goal)[0] > 0.012:
            return model, q0, q_goal


@pytest.mark.parametrize('name', ['wam', 'simon'])
@pytest.mark.parametrize('method', ['ccd', 'hal', 'analytic'])
@pytest.mark.parametrize('seed', [0, 1])
def test_ik_method_reaches_a_reachable_goal_within_the_limits(name, method, seed):
    model, q0, q_goal = _goal_configuration(name, seed, method != 'ccd')
    config = ControllerConfig(rate_hz=RATE[name], ik_method=method,
                              fallback=FallbackConfig(strategy='off'),
                              goal=GoalConfig(unreachable_time=2.0))
    goals = model.frame_placements(q_goal)

    def send(c, k, q):
        if k == 0:
            for i, frame in enumerate(model.end_effector_names):
                c.set_target_matrix(frame, goals[i])

    # ccd: until reached; the closed forms: 4 s, to see where the joints come to rest
    c, q = _loop(model, config, q0, int(4.0 * config.rate_hz), send,
                 (lambda c, k, q: c.goals.reached.all()) if method == 'ccd' else None)
    assert c.goals.reached.all() and not c.goals.parked.any()
    reached = model.frame_placements(q)
    for i in range(len(goals)):
        assert np.linalg.norm(reached[i, :3, 3] - goals[i, :3, 3]) <= 1e-3
    assert c.fallback.uses == 0
    if method != 'ccd':
        # the arm went to the closed form's configuration in joint space: each arm where
        # HAL puts it from the start (the velocity law would end elsewhere on the
        # redundant arm), the torso where it was
        for i in range(len(goals)):
            arm = HalArm(model, i)
            expected = arm.solve(q0, goals[i, :3, 3], goals[i, :3, :3],
                                 refine_steps=3 if method == 'hal' else 0).q[arm.arm]
            assert np.abs(q[arm.arm] - expected).max() < 1e-4
        if name == 'simon':
            np.testing.assert_array_equal(q[:2], q0[:2])


def test_ccd_mode_moves_on_its_own_path_and_a_holding_hand_stays():
    """SIMON: CCD moves the torso too (both hands' gains); the left hand holds its pose."""
    model, q0, q_goal = _goal_configuration('simon', 4, False)
    goal = model.frame_placements(q_goal)[0]
    left0 = model.frame_placements(q0)[1]
    finals = {}
    for method in ('velocity', 'ccd'):
        config = ControllerConfig(rate_hz=1000.0, ik_method=method,
                                  fallback=FallbackConfig(strategy='off'),
                                  goal=GoalConfig(unreachable_time=2.0))
        c, q = _loop(model, config, q0, 4000,
                     lambda c, k, q: k == 0 and c.set_target_matrix('right_hand', goal),
                     lambda c, k, q: c.goals.reached[0])
        assert c.goals.reached[0]
        left = model.frame_placements(q)[1]
        assert np.linalg.norm(left[:3, 3] - left0[:3, 3]) < 2e-3
        finals[method] = q
    assert np.abs(finals['ccd'] - finals['velocity']).max() > 0.01


def test_ik_method_settings_are_checked():
    with pytest.raises(InputError, match='ik_method'):
        ResolvedRateController(WAM, ControllerConfig(ik_method='jacobian'))
    with pytest.raises(InputError, match='ccd_sweeps'):
        ResolvedRateController(WAM, ControllerConfig(ik_method='ccd', ccd_sweeps=0))
    two = RobotModel.from_urdf(robots.urdf_path('wam'), base_frame='wam_base',
                               end_effectors=['tool', 'wam_link_7'])
    with pytest.raises(InputError, match='share joints'):
        ResolvedRateController(two, ControllerConfig(ik_method='hal'))
    c = ResolvedRateController(WAM, ControllerConfig(ik_method='ccd'))
    assert isinstance(c.ik_mode, ClassicalMode) and c.ik_mode.method == 'ccd'
    c.configure(ControllerConfig())                     # back to the velocity law
    assert c.ik_mode is None


PLANE = '[{type: plane, frame: tool, point: [0.0, 0.0, 0.05], normal: [0.3, 0.2, 1.0]}]'


@pytest.mark.parametrize('method', ['velocity', 'ccd', 'hal'])
@pytest.mark.parametrize('seed', [0, 3])
def test_a_constraint_is_held_at_every_knot_while_goals_are_tracked(method, seed):
    """
    Random goals off the plane, fast motions, joints braking at their bounds.

    The collision stage is off here: where it must bend the velocity to keep two links
    apart it takes precedence over the constraints (safety first), and random postures
    of the WAM come that near itself (docs/collision.md).
    """
    rng = np.random.default_rng(seed)
    q0 = WAM.random_configurations(1, rng, margin=0.1)[0]
    config = ControllerConfig(rate_hz=500.0, ik_method=method, constraints=PLANE,
                              fallback=FallbackConfig(strategy='posture'),
                              collision=CollisionConfig(enabled=False))
    handle = Handle('tool', (0.0, 0.0, 0.05))
    p0 = handle.placement(WAM, q0)[0]
    plane = PointOnPlane(handle, p0, (0.3, 0.2, 1.0))
    scale = 1.0 + np.linalg.norm(p0)
    worst = [0.0]

    def goal(c, k, q):
        if k % 500 == 0:
            q_goal = np.clip(q + rng.normal(0, 0.5, 7), WAM.lower, WAM.upper)
            c.set_target_matrix('tool', WAM.frame_placements(q_goal)[0])

    def measure(c, k, q):
        worst[0] = max(worst[0], abs(plane.evaluate(WAM, q)[0][0]))

    c, q = _loop(WAM, config, q0, 1500, goal, measure)
    assert worst[0] <= 1e-9 * scale
    assert c.constrained.altered == 0
    assert np.abs(q - q0).max() > 0.3                     # it did move, on the plane


def test_constraints_not_met_are_approached_within_the_limits_then_held():
    q0 = robots.ready_pose('simon')
    z = SIMON.pin_frame_placement(q0, 'right_hand')[2, 3] - 0.03
    config = ControllerConfig(rate_hz=1000.0, fallback=FallbackConfig('off'), constraints=(
        f'[{{type: plane, frame: right_hand, plane_point: [0, 0, {z}], normal: [0, 0, 1]}}]'))
    heights = []
    c, q = _loop(SIMON, config, q0, 2500,
                 each=lambda c, k, q: heights.append(
                     SIMON.pin_frame_placement(q, 'right_hand')[2, 3] - z))
    heights = np.abs(heights)
    assert heights[0] > 0.029 and heights[-1] < 1e-9
    assert np.all(np.diff(heights[heights > 1e-6]) <= 1e-9)      # no overshoot


def test_hold_brakes_on_the_constraints():
    q0 = robots.ready_pose('simon')
    config = ControllerConfig(rate_hz=1000.0, fallback=FallbackConfig('off'), constraints=(
        '[{type: plane, frame: right_hand, normal: [0, 0, 1]}, {type: orientation, '
        'frame: right_hand}]'))
    goal = SIMON.frame_placements(q0)[0]
    goal[:3, 3] += (0.1, 0.1, 0.05)
    z0 = SIMON.pin_frame_placement(q0, 'right_hand')[2, 3]
    worst = [0.0]

    def act(c, k, q):
        if k == 0:
            c.set_target_matrix('right_hand', goal)
        if k == 150:
            c.hold()
        worst[0] = max(worst[0], abs(SIMON.pin_frame_placement(q, 'right_hand')[2, 3] - z0))

    c, q = _loop(SIMON, config, q0, 600, act)
    assert worst[0] < 1e-9
    # braked to rest while held (but for the trapezoid's alternating normal velocity
    # that exact knots leave, ~1e-6 rad/s: constrained_motion docstring)
    assert np.abs(c.v_cmd).max() < 1e-5


def test_constraint_settings_are_checked():
    with pytest.raises(InputError, match='needs normal'):
        constraints_from_yaml('[{type: plane, frame: tool}]')
    with pytest.raises(InputError, match='unknown keys'):
        constraints_from_yaml('[{type: orientation, frame: tool, point: [0, 0, 0]}]')
    with pytest.raises(InputError, match='type'):
        constraints_from_yaml('[{type: circle, frame: tool}]')
    with pytest.raises(InputError, match='not valid YAML'):
        constraints_from_yaml('[{type: plane')
    with pytest.raises(InputError, match='not in the robot model'):
        ResolvedRateController(WAM, ControllerConfig(
            fallback=FallbackConfig('off'), constraints='[{type: point, frame: nowhere}]'))
    with pytest.raises(InputError, match='posture'):
        ResolvedRateController(WAM, ControllerConfig(
            constraints='[{type: point, frame: tool}]'))     # fallback 'joint' ignores them
    config = ControllerConfig(fallback=FallbackConfig(strategy='posture'),
                              constraints='[{type: point, frame: tool}]')
    c = ResolvedRateController(WAM, config)
    with pytest.raises(InputError, match='posture'):        # nor later, at run time
        c.configure(config.updated({'fallback.strategy': 'joint'}))
    assert c.config.fallback.strategy == 'posture' and c.constrained is not None
    assert constraints_from_yaml('') == [] and constraints_from_yaml('[]') == []


def test_demo_constraint_task_keeps_simons_palm_on_the_plane(tmp_path, capsys):
    plot = tmp_path / 'constraint.png'
    code = cli.main(['demo', '--robot', 'simon', '--task', 'constraint', '--seconds', '1.5',
                     '--plot', str(plot)])
    out = capsys.readouterr().out
    assert code == 0
    figures = {}
    for line in out.splitlines():
        words = line.split()
        if line.startswith('  point-on-plane error'):
            figures['plane'] = float(words[words.index('max') + 1])
        if line.startswith('  left hand point-to-point'):
            figures['held'] = float(words[words.index('max') + 1])
        if line.startswith('  in-plane tracking error'):
            figures['tracking'] = float(words[words.index('max') + 1])
        if line.startswith('  ticks the limiter changed'):
            figures['altered'] = int(words[-1])
    assert figures['plane'] < 1e-9 and figures['held'] < 1e-9
    assert figures['tracking'] < 1e-3          # after the first half second
    assert figures['altered'] == 0
    assert plot.read_bytes().startswith(b'\x89PNG')
    assert cli.main(['demo', '--robot', 'wam', '--task', 'constraint']) == 2

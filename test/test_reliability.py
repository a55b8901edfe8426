"""
Reliability: bad input never changes a command; faults and load over real processes.

Part 1 (no ROS): the controller core under hypothesis. Random sequences of robot states
and goals -- reachable, unreachable, singular, huge, and malformed ones (NaN, inf, wrong
sizes, zero-norm or unnormalised quaternions, non-rigid matrices, unknown frames and
joints, positions far outside the limits) -- go to one controller, and only the good ones
to a twin. Every malformed input must raise ``InputError``, and the two controllers must
issue bit-identical commands at every tick; every command is finite and within the
position, velocity and acceleration limits.

Part 2 (real processes over DDS): the simulated robot killed and restarted, the
controller killed and restarted mid-motion, a 10 kHz burst of targets, clock jumps under
``use_sim_time`` and invalid parameter updates through ``set_parameters``.
"""

import math
import time

from command_checks import assert_window_within_limits
from hypothesis import given, HealthCheck, settings, strategies as st
from ik_control import robots
from ik_control.control.config import ControllerConfig, LimitsConfig
from ik_control.control.controller import ResolvedRateController
from ik_control.control.robot_link import CONFIRM_SAMPLES
from ik_control.control.status import Status
from ik_control.ik.solver import SolverConfig
from ik_control.validation import InputError, matrix_to_quaternion
import numpy as np
import pytest
from ros_helpers import SCHEDULING_SLACK, stamp_seconds

WAM = robots.robot('wam')
SIMON = robots.robot('simon')
CORE_SETTINGS = settings(max_examples=60, deadline=None,
                         suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------------- part 1: the core
STATE_KINDS = ('follow', 'noise', 'jump', 'reordered_extra', 'nan', 'inf', 'huge', 'short',
               'missing', 'duplicate', 'unknown_only', 'outside')
POSE_KINDS = ('reachable', 'unreachable', 'singular', 'huge', 'nan_position', 'inf_position',
              'zero_quaternion', 'unnormalised', 'nan_quaternion', 'short_position',
              'unknown_frame')
MATRIX_KINDS = ('reachable', 'unreachable', 'far', 'nan', 'inf', 'scaled', 'sheared',
                'mirrored', 'bottom_row', 'shape', 'unknown_frame')
TWIST_KINDS = ('small', 'zero', 'fast', 'nan', 'inf', 'huge', 'short', 'unknown_frame')
BAD = {'nan', 'inf', 'huge_state', 'short', 'missing', 'duplicate', 'unknown_only', 'outside',
       'nan_position', 'inf_position', 'zero_quaternion', 'unnormalised', 'nan_quaternion',
       'short_position', 'unknown_frame', 'scaled', 'sheared', 'mirrored', 'bottom_row',
       'shape', 'huge_twist'}

OPERATIONS = st.one_of(
    st.tuples(st.just('state'), st.sampled_from(STATE_KINDS)),
    st.tuples(st.just('pose'), st.sampled_from(POSE_KINDS)),
    st.tuples(st.just('matrix'), st.sampled_from(MATRIX_KINDS)),
    st.tuples(st.just('twist'), st.sampled_from(TWIST_KINDS)),
    st.tuples(st.just('tick'), st.integers(1, 60)),
    st.tuples(st.just('stale'), st.integers(1, 80)),
)


def _is_bad(op, kind):
    if op == 'state' and kind == 'huge':
        return True
    if op == 'twist' and kind == 'huge':
        return True
    return kind in BAD


class Robot:
    """An ideal robot: it is where the last command put it (unless a test moves it)."""

    def __init__(self, model, q):
        self.model = model
        self.q = q.copy()


def _state_message(model, kind, q, rng):
    """(names, positions) of a joint_states message of ``kind`` for a robot at ``q``."""
    names = list(model.joint_names)
    positions = list(q)
    if kind == 'noise':
        positions = list(np.clip(q + rng.normal(0, 1e-3, q.size), model.lower, model.upper))
    elif kind == 'reordered_extra':  # any order, extra joints: valid
        order = rng.permutation(len(names))
        names = [names[i] for i in order] + ['not_a_joint', 'another']
        positions = [positions[i] for i in order] + [1e300, float('nan')]
    elif kind in ('nan', 'inf', 'huge', 'outside'):
        i = int(rng.integers(len(names)))
        bound = model.upper[i] if rng.random() < 0.5 else model.lower[i]
        positions[i] = {'nan': float('nan'), 'inf': -math.inf, 'huge': 1e300,
                        'outside': bound + math.copysign(0.5, bound - model.center[i])}[kind]
    elif kind == 'short':
        positions = positions[:-1]
    elif kind == 'missing':
        i = int(rng.integers(len(names)))
        del names[i], positions[i]
    elif kind == 'duplicate':
        names[-1] = names[0]
    elif kind == 'unknown_only':
        names = [f'unknown_{i}' for i in range(len(names))]
    return names, positions


def _goal_placement(model, kind, rng, i):
    T = model.frame_placements(model.random_configurations(1, rng, margin=0.05)[0])[i]
    if kind == 'unreachable':
        T[:3, 3] += rng.normal(0, 3.0, 3)
    elif kind == 'singular':
        T = model.frame_placements(np.clip(np.zeros(model.nq), model.lower, model.upper))[i]
    elif kind in ('huge', 'far'):
        T[:3, 3] = rng.choice([-1.0, 1.0], 3) * 10.0 ** rng.uniform(3, 300)
    return T


def _apply(controller, op, kind, model, robot, rng, now):
    """Send one input of ``op``/``kind`` to ``controller`` (a callable for the twin too)."""
    frames = model.end_effector_names
    frame = frames[int(rng.integers(len(frames)))]
    i = frames.index(frame)
    if kind == 'unknown_frame':
        frame = 'no_such_frame'
    if op == 'state':
        names, positions = _state_message(model, kind, robot.q, rng)
        if kind == 'jump':  # the robot was pushed somewhere else inside its limits
            robot.q[:] = model.random_configurations(1, rng, margin=0.05)[0]
            positions = list(robot.q)
        return lambda c: c.set_joint_state(names, positions, now)
    if op == 'pose':
        T = _goal_placement(model, kind, rng, i)
        position, quat = list(T[:3, 3]), list(matrix_to_quaternion(T[:3, :3]))
        if kind == 'nan_position':
            position[1] = float('nan')
        elif kind == 'inf_position':
            position[2] = math.inf
        elif kind == 'short_position':
            position = position[:2]
        elif kind == 'zero_quaternion':
            quat = [0.0, 0.0, 0.0, 0.0]
        elif kind == 'unnormalised':
            quat = list(np.array(quat) * rng.choice([0.5, 1.5, 1e6]))
        elif kind == 'nan_quaternion':
            quat[3] = float('nan')
        return lambda c: c.set_pose_target(frame, position, quat)
    if op == 'matrix':
        T = _goal_placement(model, kind, rng, i)
        if kind == 'nan':
            T[int(rng.integers(3)), int(rng.integers(4))] = float('nan')
        elif kind == 'inf':
            T[int(rng.integers(3)), 3] = -math.inf
        elif kind == 'scaled':
            T[:3, :3] *= 1.1
        elif kind == 'sheared':
            T[0, 1] += 0.2
        elif kind == 'mirrored':
            T[:3, 0] *= -1.0
        elif kind == 'bottom_row':
            T[3, 0] = 0.5
        elif kind == 'shape':
            T = T[:3]
        return lambda c: c.set_target_matrix(frame, T)
    if op == 'twist':
        scale = {'small': 0.05, 'zero': 0.0, 'fast': 5.0, 'nan': 1.0, 'inf': 1.0,
                 'huge': 1e300, 'short': 1.0, 'unknown_frame': 0.05}[kind]
        linear, angular = list(rng.normal(0, 1, 3) * scale), list(rng.normal(0, 1, 3) * scale)
        if kind == 'nan':
            angular[0] = float('nan')
        elif kind == 'inf':
            linear[1] = math.inf
        elif kind == 'short':
            linear = linear[:2]
        return lambda c: c.set_twist_target(frame, linear, angular, now)
    raise AssertionError(op)


def _assert_command_within_limits(model, controller, command):
    cfg = controller.config
    assert_window_within_limits(model.lower + cfg.limits.position_margin,
                                model.upper - cfg.limits.position_margin, controller.v_max,
                                controller.a_max, command)


def _assert_continues(previous, command, dt):
    """``command`` starts where ``previous`` (sent ``dt`` earlier) says the path is."""
    q, v = previous.at(dt)
    np.testing.assert_allclose(command.positions[0], q, rtol=0, atol=1e-9)
    np.testing.assert_allclose(command.velocities[0], v, rtol=0, atol=1e-9)


def _twin_run(model, config, operations, seed):
    rng = np.random.default_rng(seed)
    dirty = ResolvedRateController(model, config)  # gets every input
    clean = ResolvedRateController(model, config)  # gets the good inputs only
    robot = Robot(model, model.random_configurations(1, rng, margin=0.1)[0])
    dt = 1.0 / config.rate_hz
    now = 0.0
    for c in (dirty, clean):
        c.set_joint_state(model.joint_names, robot.q, now)
    previous = None  # the last command: the next one continues its path
    ticks = refused = 0
    for op, arg in operations:
        if op in ('tick', 'stale'):
            for _ in range(arg):
                now += dt
                if op == 'tick':
                    for c in (dirty, clean):
                        c.set_joint_state(model.joint_names, robot.q, now)
                reseeds = dirty.robot.reseeds
                a, b = dirty.update(now), clean.update(now)
                assert (a is None) == (b is None)
                if a is None:
                    previous = None
                    continue
                for x, y in zip(a, b):
                    np.testing.assert_array_equal(x, y)
                assert dirty.status == clean.status
                _assert_command_within_limits(model, dirty, a)
                if previous is not None and dirty.robot.reseeds == reseeds:
                    _assert_continues(previous, a, dt)
                previous = a
                robot.q[:] = a.at(dt)[0]
                ticks += 1
            continue
        send = _apply(dirty, op, arg, model, robot, rng, now)
        if _is_bad(op, arg):
            with pytest.raises(InputError):
                send(dirty)
            refused += 1
        else:
            send(dirty)
            send(clean)
    return ticks, refused


@CORE_SETTINGS
@given(st.lists(OPERATIONS, min_size=4, max_size=40), st.integers(0, 2 ** 32 - 1),
       st.sampled_from(['dls', 'sdls', 'pseudoinverse', 'transpose']),
       st.sampled_from([250.0, 500.0, 1000.0]), st.floats(0.0, 0.1), st.floats(1.0, 40.0))
def test_bad_inputs_never_change_a_command_wam(operations, seed, method, rate, margin, accel):
    config = ControllerConfig(rate_hz=rate,
                              limits=LimitsConfig(position_margin=margin,
                                                  max_acceleration=(accel,)),
                              solver=SolverConfig(method=method, max_joint_step=0.0,
                                                  clamp_error=0.1, clamp_error_rotation=0.5))
    _twin_run(WAM, config, operations + [('tick', 20)], seed)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OPERATIONS, min_size=4, max_size=25), st.integers(0, 2 ** 32 - 1))
def test_bad_inputs_never_change_a_command_simon(operations, seed):
    _twin_run(SIMON, ControllerConfig(rate_hz=1000.0), operations + [('tick', 20)], seed)


def test_every_kind_of_malformed_input_is_refused():
    """Each malformed kind at least once, deterministically (hypothesis may skip some)."""
    operations = [(op, kind) for op, kinds in (('state', STATE_KINDS), ('pose', POSE_KINDS),
                                               ('matrix', MATRIX_KINDS),
                                               ('twist', TWIST_KINDS))
                  for kind in kinds for _ in range(2)]
    operations = [x for pair in zip(operations, [('tick', 5)] * len(operations)) for x in pair]
    ticks, refused = _twin_run(WAM, ControllerConfig(), operations, 1)
    assert ticks > 100
    assert refused == 2 * sum(_is_bad(op, kind) for op, kinds in (
        ('state', STATE_KINDS), ('pose', POSE_KINDS), ('matrix', MATRIX_KINDS),
        ('twist', TWIST_KINDS)) for kind in kinds)


@pytest.mark.parametrize('jump', [-1e4, -0.5, 0.5, 1e4])
def test_clock_jumps_keep_ages_and_never_command_a_jump(jump):
    """
    A clock jump (sim time reset, bag loop, NTP step) at time 1 s during a twist.

    Backward: the controller shifts the times it keeps by the jump, so a twist still
    times out ``twist_timeout`` after it arrived and the state stays fresh; forward: the
    time passed (the twist times out at once). Either way the commands stay continuous.
    """
    model, config = WAM, ControllerConfig(rate_hz=500.0)
    controller = ResolvedRateController(model, config)
    q = robots.ready_pose('wam')
    dt = 1.0 / config.rate_hz
    now, offset = 0.0, 0.0
    speeds = []
    previous, previous_time = None, 0.0
    for k in range(1500):
        now = k * dt + offset
        if k == 500:
            controller.set_twist_target('tool', [0.0, 0.1, 0.0], [0.0, 0.0, 0.0], now)
        if k == 520:
            offset = jump  # the clock jumps between two ticks
            now = k * dt + offset
        if previous is not None:  # the robot follows the commands as time passes for it
            q = previous.at(max(now - previous_time, 0.0))[0]
        controller.set_joint_state(model.joint_names, q, now)
        command = controller.update(now)
        assert command is not None
        _assert_command_within_limits(model, controller, command)
        if previous is not None:
            _assert_continues(previous, command, now - previous_time)
        previous, previous_time = command, now
        speeds.append(np.max(np.abs(command.at(dt)[1])))
    # the twist arrived at tick 500 and times out 0.2 s (100 ticks) later; stopping at
    # 5 rad/s^2 takes a few more ticks: at rest well before tick 800 in every case
    assert max(speeds[540:560]) > 0.01 or jump > 0  # moving after a backward jump
    print(jump, max(speeds[540:560]), max(speeds[700:800]), max(speeds[800:]))
    assert max(speeds[800:]) < 1e-3
    assert not controller.status & Status.STALE_STATE
    # a backward jump is counted (diagnostics: clock_jumps_back) and told once
    assert controller.clock_jumps_back == (1 if jump < 0 else 0)
    told = [e for e in controller.drain_events() if e.kind == 'clock_jump']
    assert len(told) == controller.clock_jumps_back


@pytest.mark.parametrize('offset', [0.0, 0.03, 0.3])
def test_after_stale_states_the_controller_resumes_from_the_measured_state(offset):
    """States stop mid-motion; the robot comes back ``offset`` from where it stopped."""
    config = ControllerConfig(rate_hz=500.0)
    controller = ResolvedRateController(WAM, config)
    q = robots.ready_pose('wam')
    goal = WAM.frame_placements(q)[0]
    goal[:3, 3] += [0.0, 0.3, 0.0]
    controller.set_joint_state(WAM.joint_names, q, 0.0)
    controller.update(0.0)  # goals count from the first tick on
    controller.set_target_matrix('tool', goal)
    dt = 1.0 / config.rate_hz
    k = 0
    for k in range(1, 200):
        command = controller.update(k * dt)
        q = command.at(dt)[0]
        controller.set_joint_state(WAM.joint_names, q, k * dt)
    assert np.max(np.abs(command.at(dt)[1])) > 0.05
    for j in range(k + 1, k + 100):  # no states: the stop, then nothing
        command = controller.update(j * dt)
    assert command is None and controller.status & Status.STALE_STATE
    back = q + offset  # within or beyond reseed_tolerance (0.05) of the last command
    # beyond it from where the arm stopped, after a gap, the robot is believed elsewhere
    # once CONFIRM_SAMPLES samples agree
    for _ in range(CONFIRM_SAMPLES):
        j += 1
        controller.set_joint_state(WAM.joint_names, back, j * dt)
        command = controller.update(j * dt)
        if command is not None:
            break
    a = config.limits.max_acceleration[0]
    q_next, v_next = command.at(dt)
    np.testing.assert_allclose(q_next, back, atol=a * dt * dt + 1e-12)
    assert np.max(np.abs(v_next)) <= a * dt + 1e-12


BAD_CONFIGS = {
    'gain above rate': {'gain': 600.0, 'rate_hz': 500.0},
    'negative timeout': {'joint_state_timeout': -1.0},
    'nan velocity scale': {'limits.velocity_scale': float('nan')},
    'max_velocity above the URDF': {'limits.max_velocity': (10.0,)},
    'max_velocity wrong length': {'limits.max_velocity': (1.0, 1.0)},
    'negative acceleration': {'limits.max_acceleration': (-1.0,)},
    'infinite acceleration': {'limits.max_acceleration': (math.inf,)},
    'negative margin': {'limits.position_margin': -0.1},
}


@pytest.mark.parametrize('name', sorted(BAD_CONFIGS))
def test_an_invalid_configuration_is_refused_without_side_effects(name):
    good = ControllerConfig(rate_hz=500.0)
    dirty, clean = (ResolvedRateController(WAM, good) for _ in range(2))
    q = robots.ready_pose('wam')
    goal = WAM.frame_placements(q + 0.2)[0]
    for c in (dirty, clean):
        c.set_joint_state(WAM.joint_names, q, 0.0)
        c.set_target_matrix('tool', goal)
    for k in range(1, 200):
        now = k / good.rate_hz
        if k == 50:
            with pytest.raises(InputError):
                dirty.configure(good.updated(BAD_CONFIGS[name]))
        a, b = dirty.update(now), clean.update(now)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
        for c in (dirty, clean):
            c.set_joint_state(WAM.joint_names, a.at(1.0 / good.rate_hz)[0], now)
    assert dirty.config == clean.config


# ---------------------------------------------------------------------- part 2: processes
STARTUP = 120.0  # process start and discovery on a busy machine (numba cache load) [s]


class Rig:
    """sim_robot + ik_controller (bundled WAM, config/wam.yaml) and a probe, over DDS."""

    def __init__(self, name, controller_args=(), sim_args=()):
        from ik_control.ros.harness import checks, fuzz, node_rig
        from ros_helpers import domain_id

        domain_id()  # this test run's ROS_DOMAIN_ID, exported for the node processes
        self.checks, self.fuzz = checks, fuzz
        self.model = WAM
        self.ns = f'/{name}'
        self.pair = node_rig.Pair('wam', self.ns, controller_args=controller_args,
                                  sim_args=sim_args)
        self.probe = None
        try:
            self.pair.start()
            self.probe = node_rig.Probe(WAM, self.ns, name=f'{name}_probe')
            self.log = []
            self.sent = {}  # id(command in log) -> when it was sent (DDS source timestamp) [s]
            self.probe.on_command = self._log_command
        except BaseException:
            self.close()
            raise

    def _log_command(self, msg, t):
        self.log.append((t, msg))
        self.sent[id(msg)] = self.probe.sent

    def wait_ready(self):
        self.probe.wait_ready(timeout=STARTUP, pair=self.pair)

    def close(self):
        if self.probe is not None:
            self.probe.close()
        return self.pair.stop()

    def settle(self, timeout=10.0):
        steady = self.fuzz._settle(self.probe, self.pair, timeout)
        assert steady is not None, 'the command did not settle'
        return steady

    def command_arrays(self, since=0):
        """Stamps [s], positions and velocities of point 0 (the path at the stamp)."""
        msgs = [m for _, m in self.log[since:]]
        return (np.array([m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in msgs]),
                np.array([m.points[0].positions for m in msgs]),
                np.array([m.points[0].velocities for m in msgs]))


@pytest.fixture(scope='module')
def rig():
    r = Rig('reliability_wam')
    try:
        r.wait_ready()
        yield r
    finally:
        crashes = r.close()
    assert not crashes, crashes


@pytest.fixture
def own_rig():
    """Give one test that kills a node its own sim + controller pair (no cascade)."""
    r = Rig('reliability_own')
    try:
        r.wait_ready()
        yield r
    finally:
        r.close()


def test_controller_killed_mid_motion_restarts_from_the_measured_state(own_rig):
    rig = own_rig
    probe = rig.probe
    goal = WAM.frame_placements(robots.ready_pose('wam'))[0]
    goal[:3, 3] += [0.0, -0.3, 0.0]
    probe.send_pose('tool', goal)
    assert probe.spin_until(lambda: probe.last_command is not None and np.max(np.abs(
        probe.last_command.points[0].velocities)) > 0.05, 15.0, pair=rig.pair)
    rig.pair.controller.kill()  # SIGKILL mid-motion: no stop trajectory
    probe.spin_for(0.5)
    still = probe.last_state_q.copy()
    probe.spin_for(0.2)
    np.testing.assert_allclose(probe.last_state_q, still, atol=1e-9)  # the robot holds
    n = len(rig.log)
    rig.pair.start_controller()
    assert probe.spin_until(lambda: len(rig.log) > n, STARTUP, pair=rig.pair)
    first = rig.log[n][1].points[0]
    measured = probe.last_state_q
    # the new controller starts where the robot is, at rest: no jump
    np.testing.assert_allclose(first.positions, measured, atol=1e-6)
    np.testing.assert_allclose(first.velocities, 0.0, atol=1e-9)
    probe.spin_for(0.5)
    stamps, q, v = rig.command_arrays(n)
    assert len(q) > 20
    v_max = WAM.velocity_limit
    assert np.all(np.abs(np.diff(q, axis=0)) <= v_max * np.diff(stamps)[:, None] * (1 + 1e-9))
    assert np.max(np.abs(v[-1])) < 1e-6  # it holds the pose it found: no old goal resumed


def test_sim_killed_the_controller_stops_reports_error_and_resumes_without_a_jump(own_rig):
    """
    SIGKILL the robot mid-motion (test_ik_controller_node stops it with SIGINT).

    The stop trajectory comes within joint_state_timeout (0.1 s) plus a tick of the last
    state (plus delivery slack on a loaded machine), the diagnostics say ERROR, and a
    robot that comes back elsewhere (the restarted sim starts at its initial pose) is
    followed from where it is: the first command is its measured position, at rest.
    """
    rig = own_rig
    probe = rig.probe
    # when each message was sent (DDS source timestamps): the probe may take them late
    state_sent = []
    probe.on_state = lambda msg, t: state_sent.append(probe.sent)
    goal = WAM.frame_placements(robots.ready_pose('wam'))[0]
    goal[:3, 3] += [0.0, 0.3, 0.0]
    probe.send_pose('tool', goal)
    assert probe.spin_until(lambda: np.max(np.abs(
        probe.last_command.points[0].velocities)) > 0.05, 15.0, pair=rig.pair)
    n = len(rig.log)
    rig.pair.sim.kill()
    probe.spin_for(1.0)
    probe.on_state = None
    stop = rig.log[-1][1]  # the stop, then nothing
    last, before_last = sorted(state_sent)[-1:-3:-1]
    delay = rig.sent[id(stop)] - last
    print(f'stop trajectory {delay * 1e3:.0f} ms after the last joint_states')
    # at least joint_state_timeout after the last state the controller got was sent (it
    # counts from receipt). SIGKILL can cut the sim's write of its last state between its
    # readers, so the probe's last may never have reached the controller: the lower bound
    # counts from the state before it (a 99 ms delay from the probe's last failed on CI).
    # The upper bounds allow a delivery latency and a late tick on a starved machine
    # (SCHEDULING_SLACK; the bounds of 2 ms this test had were retried away).
    assert rig.sent[id(stop)] - before_last >= 0.1
    assert delay < 0.1 + SCHEDULING_SLACK
    assert rig.sent[id(rig.log[-2][1])] - last < 0.1 + SCHEDULING_SLACK
    assert np.max(np.abs(stop.points[-1].velocities)) == 0.0
    assert probe.spin_until(lambda: 'STALE_STATE' in probe.diagnostics.get(
        'status_codes', '') and probe.diagnostics.get('level') == 2, 5.0)
    n = len(rig.log)
    rig.pair.start_sim()
    assert probe.spin_until(lambda: len(rig.log) > n, STARTUP, pair=rig.pair)
    first = rig.log[n][1].points[0]
    measured = robots.ready_pose('wam')  # the sim starts there, and waits for a command
    step = 10.0 * (1 / 500.0) ** 2  # the first tick may accelerate at 10 rad/s^2 at most
    np.testing.assert_allclose(first.positions, measured, atol=step + 1e-9)
    assert np.max(np.abs(first.velocities)) <= 10.0 / 500.0 + 1e-9
    probe.spin_for(0.5)
    checker = rig.checks.checker_for(WAM, probe.controller_parameters(
        ['limits.position_margin', 'limits.velocity_scale', 'limits.max_velocity',
         'limits.max_acceleration']))
    for _, msg in rig.log[n:]:
        checker.check(msg)
    assert checker.violations == 0, checker.examples
    assert checker.acceleration_checked > 100


def test_the_nodes_map_no_shared_memory_port_that_a_killed_peer_could_leave_locked(rig):
    """
    The rig's nodes talk over UDP only (``node_process.node_environment``).

    A node killed while it held the lock of a Fast DDS shared-memory port left it taken,
    and every later writer into that port blocked: the controller's command publisher was
    stuck for over 30 s after the robot was SIGKILLed (1 kill in about 25, beside a CPU
    hog). A process that maps no such port can never wait on one.
    """
    for process in rig.pair.processes():
        with open(f'/proc/{process.pid}/maps', encoding='ascii', errors='replace') as stream:
            mapped = {line.split()[-1] for line in stream
                      if '/dev/shm/fastdds' in line or '/dev/shm/fastrtps' in line}
        assert not mapped, (process.name, sorted(mapped))


class SimClock:
    """Publishes ``rosgraph_msgs/Clock`` on the rig's remapped clock topic."""

    def __init__(self, rig, start=1000.0, step=0.002):
        from rosgraph_msgs.msg import Clock

        self.rig, self.t, self.step, self.Clock = rig, start, step, Clock
        self.pub = rig.probe.node.create_publisher(Clock, f'{rig.ns}/clock', 10)

    def pump(self, seconds, until=None):
        """Advance the clock by ``step`` every ``step`` seconds of wall time for ``seconds``."""
        probe = self.rig.probe
        end = time.monotonic() + seconds
        next_step = time.monotonic()
        while time.monotonic() < end:
            if until is not None and until():
                return True
            if time.monotonic() >= next_step:
                self.t += self.step
                msg = self.Clock()
                msg.clock.sec, msg.clock.nanosec = int(self.t), int(self.t % 1.0 * 1e9)
                self.pub.publish(msg)
                next_step += self.step
            probe.poll()
            probe.executor.spin_once(timeout_sec=0.0)
            time.sleep(0.0003)
        return until is not None and until()


def test_clock_jumps_under_sim_time_are_handled():
    """
    Both nodes on ``use_sim_time``; the test owns the clock and jumps it.

    After a backward jump the twist in progress still times out ``twist_timeout`` after
    it arrived (the controller shifts the times it keeps); after a forward one it times
    out at once. The nodes stay up, every command is within limits, and the arm comes to
    rest. Consecutive commands never jump, but for one restart per clock jump, and a
    restart starts where the robot is: a clock reset makes the simulated robot hold where
    it is (sim/base.py), a forward jump leaves the state stale (the arm stops), so the
    robot may lag the command by more than ``reseed_tolerance``, and the controller then
    continues from the measured state. A command that jumps anywhere else fails.
    """
    from geometry_msgs.msg import TwistStamped

    sim_time = ['-p', 'use_sim_time:=true']
    rig = Rig('reliability_sim_time', controller_args=sim_time + ['-r', '/clock:=clock'],
              sim_args=sim_time + ['-r', '/clock:=clock'])
    try:
        clock = SimClock(rig)
        probe = rig.probe

        def lag(msg):  # how far a message's stamp is behind the test's clock [s]
            if msg is None:
                return math.inf
            return clock.t - stamp_seconds(msg)

        # both nodes on the test's clock before it starts: the robot steps with it (its
        # joint_states stamped on it) and the controller commands on it
        assert clock.pump(STARTUP, until=lambda: probe.diagnostics and lag(
            probe.last_state) < 0.05 and lag(probe.last_command) < 0.05), (
            f'not on the clock {clock.t:.3f} s after {STARTUP} s: joint_states '
            f'{lag(probe.last_state):.3f} s behind it, commands '
            f'{lag(probe.last_command):.3f} s\n'
            + '\n'.join(p.output_tail(30) for p in rig.pair.processes()))
        checker = rig.checks.checker_for(WAM, probe.controller_parameters(
            ['limits.position_margin', 'limits.velocity_scale', 'limits.max_velocity',
             'limits.max_acceleration']))
        states = []  # the robot's joint_states: (sent [s], positions)
        probe.on_state = lambda msg, t: states.append((probe.sent, np.array(probe.last_state_q)))
        twist = TwistStamped()
        twist.header.frame_id = 'wam_base'  # stamp zero: now
        twist.twist.linear.y = 0.1
        for jump in (-10.0, 10.0, -1000.0):
            for _ in range(25 if jump != -1000.0 else 0):  # 0.5 s of twist, then the jump
                probe.twist_pub['tool'].publish(twist)
                clock.pump(0.02)
            n = len(rig.log)
            clock.t += jump
            clock.pump(1.5)
            # then until the arm is at rest, at most 5 s more (the clock steps with wall
            # time: on a loaded machine the controller gets fewer ticks per second of it)
            for _ in range(50):
                v = rig.command_arrays(n)[2][-20:]
                if len(v) and np.max(np.abs(v)) < 1e-3:
                    break
                clock.pump(0.1)
            for p in rig.pair.processes():
                assert p.alive(), p.output_tail()
            for _, msg in rig.log[n:]:
                checker.check(msg)
            stamps, q, v = rig.command_arrays(n)

            def story():
                head = (f'jump {jump} s: {len(q)} commands after it, {len(rig.log)} in '
                        f'all, clock at {clock.t:.3f} s, diagnostics {probe.diagnostics}')
                tails = [p.output_tail(60) for p in rig.pair.processes()]
                return '\n'.join([head] + tails)
            assert len(q) > 100, story()
            # no jump: between two commands, at most the motion at full speed over the
            # time between their sending (plus two ticks), but for one restart from the
            # robot's measured state (docstring)
            # (send times, so that commands the test process missed do not matter)
            times = np.array([rig.sent[id(m)] for _, m in rig.log[n:]])
            steps = np.abs(np.diff(q, axis=0))
            reach = checker.v_max * (np.diff(times)[:, None] + 2 * 0.002)
            jumps = np.flatnonzero(np.any(steps > reach, axis=1))
            assert len(jumps) <= 1, str([
                (int(i), stamps[i:i + 2].round(4).tolist(), float(np.diff(times)[i]),
                 float(steps[i].max()), q[i:i + 2].round(4).tolist()) for i in jumps]) + story()
            print(f'clock jump {jump:g} s: {len(jumps)} restart(s) from the measured state')
            for i in jumps:
                # a restart: the command after the jump is within full-speed motion (plus
                # two ticks) of a state the robot sent in the 0.5 s before it
                sent = times[i + 1]
                near = [np.max(np.abs(q[i + 1] - qs) - checker.v_max * (sent - ts + 2 * 0.002))
                        for ts, qs in states if sent - 0.5 <= ts <= sent]
                assert near and min(near) <= 0.0, (
                    f'command jump of {steps[i].max():.4g} rad, {min(near, default=np.inf):.4g}'
                    ' rad away from every robot state before it' + story())
            assert np.max(np.abs(v[-20:])) < 1e-3, (jump, np.abs(v[-20:]).max())
        assert checker.violations == 0, checker.examples
        assert clock.pump(5.0, until=lambda: 'STALE_STATE' not in probe.diagnostics.get(
            'status_codes', ''))
        # the two backward jumps, each seen once: a clock reading handed to the controller
        # out of order (a goal's, read after the tick's) would count as one more, and shift
        # every time it keeps (the state then stale at once after a real jump)
        assert clock.pump(2.0, until=lambda: probe.diagnostics.get('clock_jumps_back') == '2'), (
            probe.diagnostics.get('clock_jumps_back'))
    finally:
        crashes = rig.close()
    assert not crashes, crashes


def test_a_10khz_burst_of_targets_never_stalls_the_loop_and_only_the_newest_counts(rig):
    """
    10,000 pose goals at 10 kHz: the loop keeps commanding and the newest goal is reached.

    The burst is 10,000 goals whatever the time they take (at most 10 kHz: one second on
    an idle machine; a starved test process was seen to send 750 in its second, and the
    old check of 2000 failed on the machine, not the node). The command rate during the
    burst is printed, not asserted: on this 2-core machine the test's own publisher takes
    a core, and the rate then says more about the machine's load than about the node (it
    is a benchmark figure). What a user relies on is that a flood of goals never stalls
    the stream: no gap between commands (DDS send times) longer than one control period
    (config/wam.yaml: 500 Hz) plus SCHEDULING_SLACK (a tick starved of CPU on a loaded
    2-core machine). That catches a loop blocked by the flood (goals handled where they
    hold the loop up, or a loop that waits for the goal queue to drain), not a slower
    rate: before the goals were taken as bytes (33 us a message in rclpy, 4 us now) the
    loop kept 275-357 of 500 ticks a second through such a burst, 417-486 after.
    """
    probe = rig.probe
    max_gap = 1.0 / probe.controller_parameters(['rate_hz'])['rate_hz'] + SCHEDULING_SLACK
    rig.settle()
    T0 = probe.current_poses()[0]
    a, b, last = (T0.copy() for _ in range(3))
    a[:3, 3] += [0.05, 0.0, 0.0]
    b[:3, 3] += [-0.05, 0.0, 0.0]
    last[:3, 3] += [0.0, 0.08, -0.05]
    probe.spin_for(1.0)
    c0, s0, t0 = probe.commands, probe.states, time.monotonic()
    probe.spin_for(1.0)
    before = (probe.commands - c0) / (time.monotonic() - t0)
    c0, s0, t0 = probe.commands, probe.states, time.monotonic()
    n = len(rig.log)
    sent, period = 0, 1e-4
    messages = (probe.pose_message(b), probe.pose_message(a))
    publish = probe.pose_pub['tool'].publish
    while sent < 10000:  # at most 10 kHz, alternating between a and b
        while time.monotonic() < t0 + sent * period:
            pass
        publish(messages[sent % 2])
        sent += 1
        if sent % 50 == 0:
            probe.poll()
    probe.send_pose('tool', last)
    elapsed = time.monotonic() - t0
    probe.poll()
    commands, states = probe.commands - c0, probe.states - s0
    print(f'burst: {sent + 1} goals in {elapsed:.2f} s ({(sent + 1) / elapsed:.0f}/s); '
          f'commands {commands / elapsed:.0f}/s during, {before:.0f}/s before; '
          f'joint_states {states / elapsed:.0f}/s')
    times = np.array([rig.sent[id(m)] for _, m in rig.log[n:]])
    assert len(times) > 10 and np.max(np.diff(times)) <= max_gap, np.max(np.diff(times))
    rig.settle(15.0)
    probe.spin_for(0.2)
    reached = WAM.frame_placements(probe.last_state_q)[0]
    assert np.linalg.norm(reached[:3, 3] - last[:3, 3]) < 1e-3  # the newest goal counted
    assert np.linalg.norm(reached[:3, 3] - a[:3, 3]) > 0.05


def _set(probe, ns, params, atomic=False):
    from rcl_interfaces.srv import SetParameters, SetParametersAtomically
    from rclpy.parameter import Parameter

    msgs = [Parameter(name, value=value).to_parameter_msg() for name, value in params]
    if atomic:
        response = probe.call(SetParametersAtomically, f'{ns}/ik_controller/'
                              'set_parameters_atomically',
                              SetParametersAtomically.Request(parameters=msgs))
        return [response.result]
    response = probe.call(SetParameters, f'{ns}/ik_controller/set_parameters',
                          SetParameters.Request(parameters=msgs))
    return list(response.results)


INVALID_UPDATES = [
    ('out of range', [('solver.gain', 5000.0)]),
    ('faster than the URDF', [('limits.velocity_scale', 1.5)]),
    ('max_velocity above the URDF', [('limits.max_velocity', [10.0])]),
    ('negative acceleration', [('limits.max_acceleration', [-1.0])]),
    ('wrong type', [('solver.gain', 'fast')]),
    ('wrong array type', [('limits.max_acceleration', 'x')]),
    ('gain above rate_hz', [('solver.gain', 600.0)]),
    ('read-only rate', [('rate_hz', 100.0)]),
    ('read-only urdf', [('urdf_path', '/tmp/other.urdf')]),
    ('unknown method', [('solver.method', 'magic')]),
    ('clock switched at run time', [('use_sim_time', True)]),
]


def test_invalid_parameter_updates_are_refused_without_side_effects(rig):
    probe, ns = rig.probe, rig.ns
    names = ['rate_hz', 'urdf_path', 'solver.gain', 'solver.method', 'limits.velocity_scale',
             'limits.max_velocity', 'limits.max_acceleration']
    before = probe.controller_parameters(names)
    q_ref, v_ref = rig.settle()
    n = len(rig.log)
    for label, params in INVALID_UPDATES:
        results = _set(probe, ns, params)
        assert not any(r.successful for r in results), (label, results)
        assert all(r.reason for r in results), label
    # atomically: a valid change with an invalid one is refused as a whole
    result = _set(probe, ns, [('solver.gain', 5.0), ('limits.velocity_scale', 2.0)], True)
    assert not result[0].successful
    probe.spin_for(0.3)
    assert probe.controller_parameters(names) == before
    _, q, v = rig.command_arrays(n)
    assert len(q) > 50
    assert np.max(np.abs(q - q_ref)) < 1e-9 and np.max(np.abs(v - v_ref)) < 1e-9
    # a valid update still works (and is undone)
    assert all(r.successful for r in _set(probe, ns, [('solver.gain', 5.0)]))
    assert probe.controller_parameters(['solver.gain']) == {'solver.gain': 5.0}
    assert all(r.successful for r in _set(probe, ns, [('solver.gain', before['solver.gain'])]))

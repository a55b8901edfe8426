"""Tests of the ROS-free simulated robot: trajectory sampler, kinematic and MuJoCo sims."""

import time

from hypothesis import given, HealthCheck, settings
from hypothesis import strategies as st

from ik_control.kinematics import RobotModel
from ik_control.sim import JointTrajectorySampler, KinematicSim, MujocoSim
import numpy as np
import pytest
from sim_test_urdf import three_joint_urdf, WAM_URDF_PATH

NAMES = ('a', 'b', 'c')
Q0 = np.array([0.1, -0.2, 0.3])


def make_sampler():
    return JointTrajectorySampler(NAMES, Q0, t0=0.0)


def snapshot(sampler, ts=(0.0, 5.0, 10.5, 11.0, 100.0)):
    return [tuple(np.copy(x) for x in sampler.sample(t)) for t in ts]


# ----------------------------------------------------------------- sampler

def test_holds_initial_positions_before_any_trajectory():
    s = make_sampler()
    for t in (-1.0, 0.0, 3.0):
        q, qd = s.sample(t)
        np.testing.assert_array_equal(q, Q0)
        np.testing.assert_array_equal(qd, 0.0)
    assert s.active_joints == NAMES


def test_linear_interpolation_from_implicit_point_and_hold_after_end():
    s = make_sampler()
    p = np.array([[1.0, 1.0, 1.0], [2.0, 0.0, -1.0]])
    s.set_trajectory(NAMES, [1.0, 2.0], p, start_time=0.0, now=10.0)
    assert s.start_time == 10.0  # stamp zero = now
    np.testing.assert_allclose(s.times, [0.0, 1.0, 2.0])  # implicit point 0 at receipt
    q, qd = s.sample(10.0)
    np.testing.assert_allclose(q, Q0)
    q, qd = s.sample(10.5)
    np.testing.assert_allclose(q, 0.5 * (Q0 + p[0]))
    np.testing.assert_allclose(qd, p[0] - Q0)
    np.testing.assert_allclose(s.sample(11.0)[0], p[0], atol=1e-15)
    q, qd = s.sample(11.25)
    np.testing.assert_allclose(q, 0.75 * p[0] + 0.25 * p[1])
    np.testing.assert_allclose(qd, p[1] - p[0])
    for t in (12.0, 13.0, 1e6):
        q, qd = s.sample(t)
        np.testing.assert_array_equal(q, p[1])
        np.testing.assert_array_equal(qd, 0.0)
    assert s.done(12.0) and not s.done(11.99)


def test_linear_is_continuous_at_knots():
    s = make_sampler()
    p = np.array([[1.0, 1.0, 1.0], [2.0, 0.0, -1.0], [0.0, 0.5, 0.0]])
    s.set_trajectory(NAMES, [0.5, 1.0, 1.7], p, now=0.0)
    for tk, pk in zip((0.5, 1.0, 1.7), p):
        for eps in (-1e-9, 0.0, 1e-9):
            np.testing.assert_allclose(s.sample(tk + eps)[0], pk, atol=1e-8)


def test_hermite_reproduces_a_cubic_exactly():
    # Cubic Hermite interpolation is exact for cubic polynomials.
    rng = np.random.default_rng(0)
    c = rng.normal(size=(4, 3))

    def poly(t):
        return c[0] + c[1] * t + c[2] * t ** 2 + c[3] * t ** 3

    def dpoly(t):
        return c[1] + 2 * c[2] * t + 3 * c[3] * t ** 2

    knots = np.array([0.0, 0.3, 0.7, 1.2])
    s = JointTrajectorySampler(NAMES, poly(0.0))
    s.set_trajectory(NAMES, knots, np.array([poly(t) for t in knots]),
                     np.array([dpoly(t) for t in knots]), start_time=5.0, now=5.0)
    assert s.times.size == 4  # first point at receipt: no implicit point
    for t in np.concatenate((knots, rng.uniform(0.0, 1.2, 50))):
        q, qd = s.sample(5.0 + t)
        if t < 1.2:
            np.testing.assert_allclose(q, poly(t), atol=1e-12)
            np.testing.assert_allclose(qd, dpoly(t), atol=1e-11)
    # Hold the last position with zero velocity even though v(1.2) != 0.
    q, qd = s.sample(6.2)
    np.testing.assert_allclose(q, poly(1.2), atol=1e-12)
    np.testing.assert_array_equal(qd, 0.0)


def test_hermite_continuous_in_position_and_velocity_at_knots():
    s = make_sampler()
    p = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.5], [0.5, 0.5, -0.5]])
    v = np.array([[1.0, -1.0, 0.0], [0.0, 2.0, -1.0], [0.0, 0.0, 0.0]])
    s.set_trajectory(NAMES, [1.0, 2.0, 2.5], p, v, now=0.0)
    for tk, pk, vk in zip((1.0, 2.0), p, v):
        before = [x.copy() for x in s.sample(tk - 1e-9)]
        after = [x.copy() for x in s.sample(tk + 1e-9)]
        np.testing.assert_allclose(before[0], pk, atol=1e-7)
        np.testing.assert_allclose(after[0], pk, atol=1e-7)
        np.testing.assert_allclose(before[1], vk, atol=1e-6)
        np.testing.assert_allclose(after[1], vk, atol=1e-6)


def test_implicit_point_uses_current_state_and_velocity():
    s = make_sampler()
    cur_q = np.array([0.5, 0.5, 0.5])
    cur_v = np.array([1.0, 0.0, -1.0])
    s.set_trajectory(NAMES, [1.0], [[1.0, 1.0, 1.0]], [[0.0, 0.0, 0.0]], now=2.0,
                     current_position=cur_q, current_velocity=cur_v)
    q, qd = s.sample(2.0)
    np.testing.assert_allclose(q, cur_q)
    np.testing.assert_allclose(qd, cur_v)


def test_new_trajectory_replaces_active_one_continuously():
    s = make_sampler()
    s.set_trajectory(NAMES, [2.0], [[1.0, 1.0, 1.0]], now=0.0)
    q_mid = s.sample(1.0)[0].copy()
    s.set_trajectory(NAMES, [1.0], [[-1.0, -1.0, -1.0]], now=1.0)
    np.testing.assert_allclose(s.sample(1.0)[0], q_mid)  # no jump at replacement
    np.testing.assert_allclose(s.sample(2.0)[0], -1.0)  # old goal forgotten
    np.testing.assert_allclose(s.sample(5.0)[0], -1.0)


def test_future_start_stamp_interpolates_from_receipt():
    s = make_sampler()
    s.set_trajectory(NAMES, [0.5, 1.0], [[1.0] * 3, [2.0] * 3], start_time=20.0, now=10.0)
    assert s.start_time == 20.0
    np.testing.assert_allclose(s.sample(10.0)[0], Q0)
    np.testing.assert_allclose(s.sample(20.5)[0], 1.0)
    np.testing.assert_allclose(s.sample(21.0)[0], 2.0)


def test_past_start_stamp_samples_inside_trajectory():
    s = make_sampler()
    s.set_trajectory(NAMES, [0.0, 2.0], [[0.0] * 3, [2.0] * 3], start_time=9.0, now=10.0)
    np.testing.assert_allclose(s.sample(10.0)[0], 1.0)  # JTC jumps into the trajectory


def test_partial_joints_in_any_order_others_keep_setpoint():
    s = make_sampler()
    s.set_trajectory(NAMES, [1.0], [[1.0, 2.0, 3.0]], now=0.0)
    q_set = s.sample(0.5)[0].copy()
    s.set_trajectory(['c', 'a'], [1.0], [[-3.0, -1.0]], now=0.5)
    assert s.active_joints == ('c', 'a')
    for t in (0.5, 1.0, 1.5, 9.0):
        q, qd = s.sample(t)
        assert q[1] == q_set[1] and qd[1] == 0.0  # 'b' held, although it was moving
    np.testing.assert_allclose(s.sample(1.5)[0], [-1.0, q_set[1], -3.0])


@pytest.mark.parametrize('kwargs, match', [
    ({'joint_names': ['a', 'x'], 'times_from_start': [1.0], 'positions': [[0, 0]]},
     r"unknown joint name\(s\) \['x'\]"),
    ({'joint_names': ['a', 'a'], 'times_from_start': [1.0], 'positions': [[0, 0]]},
     r"duplicate joint name\(s\) \['a'\]"),
    ({'joint_names': [], 'times_from_start': [1.0], 'positions': [[]]}, 'names no joints'),
    ({'joint_names': ['a'], 'times_from_start': [], 'positions': np.zeros((0, 1))}, 'no points'),
    ({'joint_names': ['a', 'b'], 'times_from_start': [1.0], 'positions': [[0.0]]},
     r'positions have shape \(1, 1\); expected \(1 points, 2 joints\)'),
    ({'joint_names': ['a'], 'times_from_start': [1.0, 2.0], 'positions': [[0.0]]},
     'positions have shape'),
    ({'joint_names': ['a'], 'times_from_start': [1.0], 'positions': [[0.0]],
      'velocities': [[0.0, 1.0]]}, 'velocities have shape'),
    ({'joint_names': ['a'], 'times_from_start': [1.0], 'positions': [[np.nan]]},
     "non-finite positions value at point 0, joint 'a'"),
    ({'joint_names': ['a'], 'times_from_start': [1.0], 'positions': [[0.0]],
      'velocities': [[np.inf]]}, 'non-finite velocities'),
    ({'joint_names': ['a'], 'times_from_start': [np.nan], 'positions': [[0.0]]},
     'non-finite time_from_start'),
    ({'joint_names': ['a'], 'times_from_start': [1.0, 1.0], 'positions': [[0.0], [1.0]]},
     'strictly increasing: point 1 at 1 s is not after point 0 at 1 s'),
    ({'joint_names': ['a'], 'times_from_start': [2.0, 1.0], 'positions': [[0.0], [1.0]]},
     'strictly increasing'),
    ({'joint_names': ['a'], 'times_from_start': [-1.0], 'positions': [[0.0]]}, 'negative'),
    ({'joint_names': ['a'], 'times_from_start': [1.0], 'positions': [[0.0]], 'start_time': 3.0},
     'in the past'),
])
def test_invalid_trajectory_raises_and_keeps_active(kwargs, match):
    s = make_sampler()
    s.set_trajectory(NAMES, [1.0, 2.0], [[1.0] * 3, [2.0] * 3], now=10.0)
    before = snapshot(s)
    with pytest.raises(ValueError, match=match):
        s.set_trajectory(now=10.5, **kwargs)
    for (q0, v0), (q1, v1) in zip(before, snapshot(s)):
        np.testing.assert_array_equal(q0, q1)
        np.testing.assert_array_equal(v0, v1)


def test_sampler_constructor_validation():
    with pytest.raises(ValueError, match='duplicate'):
        JointTrajectorySampler(['a', 'a'], [0, 0])
    with pytest.raises(ValueError, match='initial_positions'):
        JointTrajectorySampler(['a', 'b'], [0])


# ------------------------------------------------------------ KinematicSim

LOWER = np.array([-1.0, -2.0, 0.0])
UPPER = np.array([1.0, 2.0, 0.5])


def test_kinematic_ideal_tracking_is_exact():
    """Positions are the setpoint; the velocity is the motion over the step (they agree)."""
    sim = KinematicSim(NAMES, LOWER, UPPER, [0.0, 0.0, 0.1])
    sim.set_trajectory(NAMES, [1.0], [[0.5, -1.0, 0.4]], now=0.0)
    previous = sim.position.copy()
    for t in np.arange(1, 602) * 2e-3:
        sim.step(t)
        q, _ = sim.sampler.sample(t)
        np.testing.assert_allclose(sim.position, q, atol=1e-15)
        np.testing.assert_allclose(sim.velocity, (sim.position - previous) / 2e-3, atol=1e-9)
        previous = sim.position.copy()
    np.testing.assert_allclose(sim.position, [0.5, -1.0, 0.4])
    np.testing.assert_array_equal(sim.velocity, 0.0)


def test_kinematic_lag_converges_with_exact_discretisation():
    tau = 0.05
    sim = KinematicSim(NAMES, LOWER, UPPER, [0.0, 0.0, 0.0], tau=tau)
    target = np.array([0.5, -1.0, 0.4])
    sim.set_trajectory(NAMES, [1e-6], [target], now=0.0)
    sim.step(0.01)
    np.testing.assert_allclose(sim.position, target * (1 - np.exp(-0.01 / tau)), rtol=1e-4)
    for t in np.arange(2, 101) * 0.01:  # 1 s = 20 tau
        sim.step(t)
    np.testing.assert_allclose(sim.position, target, atol=1e-7)


def test_kinematic_clips_initial_and_default_positions():
    assert np.all(KinematicSim(NAMES, LOWER, UPPER, [5.0, -5.0, 0.2]).position
                  == [1.0, -2.0, 0.2])
    np.testing.assert_array_equal(KinematicSim(NAMES, [0.1, -1, -1], [1, 1, 1]).position,
                                  [0.1, 0.0, 0.0])
    with pytest.raises(ValueError, match='tau'):
        KinematicSim(NAMES, LOWER, UPPER, tau=-1.0)


def test_clock_reset_holds_position_then_obeys_new_trajectories():
    sims = [KinematicSim(NAMES, LOWER, UPPER, [0.0, 0.0, 0.1], t0=100.0),
            MujocoSim(three_joint_urdf(), t0=100.0)]
    # exact: the kinematic robot is its setpoint, to the bit; MuJoCo's servo, moving at
    # 0.5 rad/s when the clock resets, overshoots and settles back on the held setpoint
    # (8.6e-12 rad off after 1 s, 1e-9 leaves 100x for other platforms' rounding). The
    # measured position, not the setpoint, is held: MuJoCo's lags the setpoint by 1e-2 rad
    # at the reset, which the old 1e-2 bound let pass
    for sim, exact in zip(sims, (0.0, 1e-9)):
        n = len(sim.joint_names)
        sim.set_trajectory(sim.joint_names, [1.0], [np.full(n, 0.5)])
        sim.step(100.5)
        sim.step(100.4999)  # small backward step: ignored
        assert sim.time == pytest.approx(100.5)
        held = sim.position.copy()
        sim.step(3.0)  # clock reset: hold where the robot is
        assert sim.time == 3.0
        run(sim, 4.0)
        np.testing.assert_allclose(sim.position, held, rtol=0.0, atol=exact)
        sim.set_trajectory(sim.joint_names, [0.2], [np.full(n, 0.3)])
        run(sim, 5.0)
        np.testing.assert_allclose(sim.position, 0.3, rtol=0.0, atol=exact)


finite = st.floats(-10.0, 10.0, allow_nan=False)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tau=st.sampled_from([0.0, 0.01, 0.3]),
       n_points=st.integers(1, 4),
       data=st.data())
def test_kinematic_never_leaves_limits(tau, n_points, data):
    sim = KinematicSim(NAMES, LOWER, UPPER, tau=tau)
    t = 0.0
    for _ in range(3):
        gaps = data.draw(st.lists(st.floats(0.01, 0.5), min_size=n_points,
                                  max_size=n_points))
        pos = data.draw(st.lists(st.lists(finite, min_size=3, max_size=3),
                                 min_size=n_points, max_size=n_points))
        vel = data.draw(st.none() | st.lists(st.lists(finite, min_size=3, max_size=3),
                                             min_size=n_points, max_size=n_points))
        sim.set_trajectory(NAMES, np.cumsum(gaps), pos, vel)
        for dt in data.draw(st.lists(st.floats(1e-4, 0.2), min_size=1, max_size=15)):
            t += dt
            sim.step(t)
            assert np.all(np.isfinite(sim.position)) and np.all(np.isfinite(sim.velocity))
            assert np.all(sim.position >= LOWER) and np.all(sim.position <= UPPER)


# --------------------------------------------------------------- MujocoSim

def run(sim, t_end, rate=500.0):
    """Step ``sim`` from its time to t_end [s] at ``rate`` [Hz]."""
    ticks = int(round((t_end - sim.time) * rate))
    t0 = sim.time
    for k in range(1, ticks + 1):
        sim.step(t0 + k / rate)


@pytest.mark.parametrize('gravity_compensation', [True, False])
def test_mujoco_tracks_step_setpoint_with_gravity(gravity_compensation):
    sim = MujocoSim(three_joint_urdf(), initial_positions=[0.0, 0.3, -0.3],
                    gravity_compensation=gravity_compensation)
    assert sim.joint_names == ('j1', 'j2', 'j3')
    assert sim.model.opt.timestep == 1e-3 and sim.model.opt.gravity[2] == -9.81
    np.testing.assert_allclose(sim.position, [0.0, 0.3, -0.3])
    target = np.array([0.5, -0.6, 1.0])
    sim.set_trajectory(sim.joint_names, [1e-3], [target])  # a step
    run(sim, 1.0)
    np.testing.assert_allclose(sim.position, target, atol=1e-2)
    np.testing.assert_allclose(sim.velocity, 0.0, atol=1e-2)


def test_mujoco_holds_still_under_gravity_without_command():
    sim = MujocoSim(three_joint_urdf(), initial_positions=[0.0, 0.5, 0.5],
                    gravity_compensation=False)
    run(sim, 0.5)
    np.testing.assert_allclose(sim.position, [0.0, 0.5, 0.5], atol=1e-2)


def test_mujoco_step_time_bookkeeping_and_catch_up_limit():
    sim = MujocoSim(three_joint_urdf(), t0=100.0, max_lag=0.05)
    sim.step(100.0105)
    assert sim.time == pytest.approx(100.010)
    sim.step(100.0101)  # inside the same timestep: nothing to do
    assert sim.time == pytest.approx(100.010)
    sim.step(200.0)  # far behind: simulates max_lag only, ends at t
    assert sim.time == pytest.approx(200.0)
    assert sim.data.time == pytest.approx(0.060)


def test_mujoco_mimic_and_held_joints():
    urdf = three_joint_urdf(gripper=True, multiplier=2.0, offset=0.01)
    # Fingers not commanded: held at clip(0) = 0, the mimic follows the leader.
    sim = MujocoSim(urdf, joint_names=['j1', 'j2', 'j3'])
    sim.set_trajectory(['j2'], [0.2], [[0.8]])
    run(sim, 0.8)
    qpos = sim.data.qpos
    fl = qpos[sim.model.jnt_qposadr[sim.model.joint('finger_left').id]]
    fr = qpos[sim.model.jnt_qposadr[sim.model.joint('finger_right').id]]
    assert abs(fl) < 1e-3 and fr == pytest.approx(0.01 + 2.0 * fl, abs=1e-3)
    np.testing.assert_allclose(sim.position, [0.0, 0.8, 0.0], atol=1e-2)
    # Finger commanded: the mimic joint follows through the equality constraint.
    sim = MujocoSim(urdf)
    assert sim.joint_names == ('j1', 'j2', 'j3', 'finger_left')
    sim.set_trajectory(['finger_left'], [0.2], [[0.03]])
    run(sim, 0.8)
    fr = sim.data.qpos[sim.model.jnt_qposadr[sim.model.joint('finger_right').id]]
    assert sim.position[3] == pytest.approx(0.03, abs=1e-3)
    assert fr == pytest.approx(0.01 + 2.0 * 0.03, abs=2e-3)


def test_mujoco_clips_setpoint_to_joint_range():
    sim = MujocoSim(three_joint_urdf())
    sim.set_trajectory(['j2'], [0.1], [[3.0]])  # beyond the 1.5 rad limit
    run(sim, 0.6)
    assert sim.position[1] == pytest.approx(1.5, abs=1e-2)


def test_mujoco_joints_and_errors_are_robot_models():
    urdf = three_joint_urdf(gripper=True)
    sim = MujocoSim(urdf)
    assert sim.joint_names == RobotModel.from_urdf(urdf).joint_names  # fixed, mimic left out
    np.testing.assert_array_equal(sim.lower, [-2.0, -1.5, -2.0, 0.0])
    np.testing.assert_array_equal(sim.upper, [2.0, 1.5, 2.0, 0.04])
    assert sim.model.ngeom == 0  # <visual> (a missing mesh) and <collision> stripped
    for joints, match in ((['j1', 'nope'], r"unknown joints \['nope'\]"),
                          (['finger_right'], 'mimic'),
                          (['tool_joint'], r"unknown joints \['tool_joint'\]")):
        with pytest.raises(ValueError, match=match):
            MujocoSim(urdf, joint_names=joints)
    with pytest.raises(ValueError, match='not valid XML'):
        MujocoSim('<robot>')
    with pytest.raises(ValueError, match=r"initial_positions has 1 values for 4 joints \['j1'"):
        MujocoSim(urdf, initial_positions=[0.0])


@pytest.mark.parametrize('gravity_compensation', [True, False])
def test_mujoco_wam_tracks_step_setpoint(gravity_compensation):
    with open(WAM_URDF_PATH) as f:
        urdf = f.read()
    sim = MujocoSim(urdf, gravity_compensation=gravity_compensation)
    n = len(sim.joint_names)
    target = np.clip(np.linspace(0.3, -0.3, n), sim.lower + 0.05, sim.upper - 0.05)
    sim.set_trajectory(sim.joint_names, [1e-3], [target])
    run(sim, 1.0)
    np.testing.assert_allclose(sim.position, target, atol=1e-2)


def test_mujoco_wam_step_cost(capsys):
    with open(WAM_URDF_PATH) as f:
        sim = MujocoSim(f.read())
    sim.set_trajectory(sim.joint_names, [0.5, 1.0],
                       [np.full(len(sim.joint_names), 0.2), np.zeros(len(sim.joint_names))])
    start = time.process_time()   # CPU: make test runs this at nice 19 beside the node tests
    for k in range(1, 1001):
        sim.step(k * 1e-3)
    per_tick = (time.process_time() - start) / 1000
    with capsys.disabled():
        print('\nMujocoSim WAM: %.1f us per 1 kHz step' % (per_tick * 1e6))
    assert per_tick < 1e-3  # real-time capable

"""
MuJoCo backend: every joint of both robots follows a command stream without ringing.

The armature rule keeps each servo's natural frequency resolved by the timestep
(``sqrt(kp / (M_jj + armature)) h <= MAX_OMEGA_H``) and the damping is critical for that
inertia (issue 10: the WAM wrist rang at about 250 Hz, 16 times its velocity limit).
"""

from ik_control import robots
from ik_control.sim.mujoco_sim import MAX_OMEGA_H, MujocoSim
import numpy as np
import pytest

PERIOD = 0.002  # the controller's tick: a window every 2 ms


def _sim(name):
    model = robots.robot(name)
    q0 = robots.ready_pose(name)
    return model, q0, MujocoSim(robots.urdf_path(name), list(model.joint_names), q0)


@pytest.mark.parametrize('name', ['wam', 'simon'])
def test_armature_and_damping_follow_the_stated_rule(name):
    model, _, sim = _sim(name)
    h = sim.timestep
    inertia = sim.inertia + sim.armature
    assert np.all(np.sqrt(2000.0 / inertia) * h <= MAX_OMEGA_H * (1 + 1e-9))
    heavy = sim.inertia >= 2000.0 * h * h / MAX_OMEGA_H ** 2
    assert np.all(sim.armature[heavy] == 0.0)  # heavy joints keep their own inertia
    np.testing.assert_allclose(sim.kv, 2.0 * np.sqrt(2000.0 * inertia))
    np.testing.assert_allclose(sim.model.dof_armature[sim._vadr], sim.armature)


@pytest.mark.parametrize('name', ['wam', 'simon'])
def test_every_joint_follows_a_sinusoid_without_ringing(name):
    """
    Windows as the controller sends them (point 0 now, then 2 ms knots), 3 s.

    Each joint swings 0.1 rad at up to half its speed limit and 1 rad/s^2 (what its
    effort allows on the heaviest, the SIMON torso). It follows as the servo law says:
    lagging by ``kv v / kp`` (the velocity term acts on the joint's own speed), no more.
    """
    model, q0, sim = _sim(name)
    amp = 0.1
    w = np.minimum(0.5 * model.velocity_limit / amp, np.sqrt(1.0 / amp))
    t = 0.0
    errors, speed_errors, speeds = [], [], []
    times = np.arange(0.0, 0.03, PERIOD)
    for k in range(1500):
        t += PERIOD
        phase = w * (t + times)[:, None]
        sim.set_trajectory(sim.joint_names, times, q0 + amp * np.sin(phase),
                           amp * w * np.cos(phase))
        sim.step(t)
        if k >= 100:  # after the start
            errors.append(sim.position - (q0 + amp * np.sin(w * t)))
            speed_errors.append(sim.velocity - amp * w * np.cos(w * t))
            speeds.append(sim.velocity)
    v_max = model.velocity_limit
    ratio = np.max(np.abs(speeds), axis=0) / v_max
    print('speed / limit', np.round(ratio, 3))
    print('speed error / limit', np.round(np.max(np.abs(speed_errors), axis=0) / v_max, 3))
    print('position error', np.round(np.max(np.abs(errors), axis=0), 4))
    assert np.all(ratio < 1.1 * amp * w / v_max)  # no ringing on any joint
    lag = sim.kv * amp * w / 2000.0
    print('servo lag', np.round(lag, 4))
    assert np.all(np.max(np.abs(errors), axis=0) < 1.2 * lag + 0.003)


def test_the_wam_wrist_settles_after_a_small_step_without_chatter():
    model, q0, sim = _sim('wam')
    target = q0.copy()
    target[6] += 0.01
    sim.set_trajectory(sim.joint_names, [0.0, PERIOD], [q0, target])
    v = []
    for k in range(1, 200):
        sim.step(k * 0.001)
        v.append(sim.velocity[6])
    v = np.array(v)
    assert abs(sim.position[6] - target[6]) < 1e-3
    assert np.count_nonzero(np.diff(np.sign(v[np.abs(v) > 1e-3]))) <= 2  # no ringing

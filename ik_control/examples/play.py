"""
``ik_control play``: a velocity profile or a key-pose path on a robot, without ROS.

The motion file decides how (SAM sec. VI): a velocity profile (``samples``, e.g.
``config/motions/wave.yaml``) is played from the arm's start pose by
:class:`~ik_control.control.velocity_profile.ProfilePlayer` (optionally perturbed); a
key-pose path (``key_poses``, e.g. ``config/motions/glass_to_faucet.yaml``) is fitted
from the start pose by :class:`~ik_control.control.spline_path.PathFollower`. Either way
the nominal pose one tick ahead is the controller core's target every tick, with gain =
rate, i.e. SAM eq. 20-21, on a perfect kinematic robot
(:func:`~ik_control.control.closed_loop.run_closed_loop`). Printed: the tracking error
and where the effector ends; plotted: the paths in 3-D, the error, the joints and the
priority weights over time.
"""

import time

from ik_control import robots
from ik_control.control.closed_loop import run_closed_loop, tracking_config
from ik_control.control.controller import ResolvedRateController
from ik_control.control.path_file import parse_key_pose_file
from ik_control.control.spline_path import PathFollower
from ik_control.control.velocity_profile import parse_profile, ProfilePlayer
from ik_control.examples.plotting import equal_3d_axes
from ik_control.validation import finite_vector, InputError, read_yaml
import numpy as np
import pinocchio as pin

SETTLE = 0.5   # run on after the motion's end [s]


def load_motion(path):
    """Return ``('profile', VelocityProfile)`` or ``('path', KeyPoseFile)`` from a file."""
    data = read_yaml(path, 'motion')
    if isinstance(data, dict) and 'samples' in data:
        return 'profile', parse_profile(data, f"profile '{path}'")
    if isinstance(data, dict) and 'key_poses' in data:
        return 'path', parse_key_pose_file(data, f"path file '{path}'")
    raise InputError(f"motion '{path}' has neither samples (a velocity profile) nor "
                     'key_poses (a path)')


def load_robot(robot, start_q=None):
    """Return ``(model, q0)`` of a bundled robot name or a DH file; q0 [rad] or its ready."""
    overrides = {}
    if robot in robots.SETUPS:   # the first end effector only
        overrides['end_effectors'] = robots.SETUPS[robot].end_effectors[:1]
    model, q0 = robots.load(robot, **overrides)
    if start_q is not None:
        q0 = finite_vector(start_q, model.nq, '--start-q')
    return model, np.array(q0, dtype=float)


def play(model, q0, kind, motion, rate_hz=250.0, perturbation=(0.0, 0.0), seed=None):
    """Play ``motion`` from ``q0``; return the record as a dict (module docstring)."""
    frame = model.end_effectors[0].frame
    controller = ResolvedRateController(model, tracking_config(rate_hz))
    start = model.frame_placements(q0)[0]
    if kind == 'profile':
        player = ProfilePlayer(motion, 0.0, start, perturbation, seed)
        duration, weights_at = motion.duration, player.weights

        def nominal(now):
            return player.advance(now)
    else:
        follower = PathFollower()
        follower.replace(0.0, start, motion.times, motion.poses)
        duration = float(motion.times[-1])
        schedule = motion.priorities

        def weights_at(now):
            return {} if schedule is None else schedule.weights(now)

        def nominal(now):
            return follower.target(now, 0.0)
    wanted = []

    def before_tick(ctrl, now):
        wanted.append(nominal(now + ctrl.dt))
        ctrl.set_target_matrix(frame, wanted[-1])

    began = time.perf_counter()
    record = run_closed_loop(controller, q0, duration + SETTLE, before_tick)
    seconds = time.perf_counter() - began
    wanted = np.array(wanted)
    actual = record.poses[:, 0]
    weights = [weights_at(t) for t in record.times]
    weights = weights if weights and weights[0] else []
    return {'frame': frame, 'times': record.times, 'q': record.q, 'actual': actual,
            'wanted': wanted, 'start': start,
            'position_error': np.linalg.norm(actual[:, :3, 3] - wanted[:, :3, 3], axis=1),
            'rotation_error': np.array([np.linalg.norm(pin.log3(w[:3, :3].T @ a[:3, :3]))
                                        for w, a in zip(wanted, actual)]),
            'status': record.status, 'weights': weights, 'seconds': seconds}


def summary(result):
    """Return the printed figures as plain numbers."""
    end = result['actual'][-1]
    return {'frame': result['frame'], 'duration_s': float(result['times'][-1]),
            'ticks': int(result['times'].size),
            'max_position_error_mm': float(result['position_error'].max() * 1e3),
            'rms_position_error_mm': float(np.sqrt(np.mean(result['position_error'] ** 2))
                                           * 1e3),
            'max_rotation_error_mrad': float(result['rotation_error'].max() * 1e3),
            'end_displacement_m': float(np.linalg.norm(end[:3, 3] - result['start'][:3, 3])),
            'ms_per_tick': float(result['seconds'] / result['times'].size * 1e3)}


def table(name, figures):
    """Return the printed lines."""
    f = figures
    return (f"{name}: effector {f['frame']}, {f['duration_s']:.2f} s, {f['ticks']} ticks "
            f"({f['ms_per_tick']:.3f} ms each)\n"
            f"  tracking error: max {f['max_position_error_mm']:.4f} mm, rms "
            f"{f['rms_position_error_mm']:.4f} mm, rotation max "
            f"{f['max_rotation_error_mrad']:.4f} mrad\n"
            f"  the effector ends {f['end_displacement_m']:.4f} m from where it started")


def plot(name, result, path):
    """Write the PNG: 3-D paths, tracking error, joints and priority weights over time."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    t = result['times']
    fig = plt.figure(figsize=(13, 9))
    ax = fig.add_subplot(2, 2, 1, projection='3d')
    ax.plot(*result['wanted'][:, :3, 3].T, 'k--', lw=1.0, label='nominal')
    ax.plot(*result['actual'][:, :3, 3].T, color='tab:blue', lw=1.0, label='effector')
    equal_3d_axes(ax)
    ax.set_xlabel('x [m]')
    ax.set_ylabel('y [m]')
    ax.set_zlabel('z [m]')
    ax.set_title(f'{name}: effector path')
    ax.legend(fontsize=8)
    ax = fig.add_subplot(2, 2, 2)
    ax.semilogy(t, np.maximum(result['position_error'], 1e-12) * 1e3)
    ax.set_xlabel('time [s]')
    ax.set_ylabel('position error [mm]')
    ax.set_title('tracking error (SAM eq. 20)')
    ax = fig.add_subplot(2, 2, 3)
    ax.plot(t, result['q'])
    ax.set_xlabel('time [s]')
    ax.set_ylabel('joint position [rad]')
    ax.set_title('joints')
    ax = fig.add_subplot(2, 2, 4)
    for key in sorted(result['weights'][0]) if result['weights'] else ():
        ax.plot(t, [w[key] for w in result['weights']], label=key)
    ax.set_xlabel('time [s]')
    ax.set_ylabel('weight')
    ax.set_title('priorities from the motion file (SAM sec. V)'
                 if result['weights'] else 'no priorities in the motion file')
    if result['weights']:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path

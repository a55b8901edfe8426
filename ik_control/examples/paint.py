"""
``ik_control paint``: SAM's spray-painting example (Maciejewski & Klein, sec. VII), without ROS.

The 9-joint robot of SAM Table 1 (``config/robots/sam9.yaml``) paints a car door (a box)
from key poses of its nozzle, read from a task file (``config/motions/paint_door.yaml``):
points on the door's face with times, the nozzle at a fixed stand-off along the face
normal and pointing into it. A :class:`~ik_control.control.spline_path.KeyPosePath` fits
them from the arm's start pose (SAM sec. VI); each tick the controller core
(:class:`~ik_control.control.controller.ResolvedRateController` with
:func:`~ik_control.control.closed_loop.tracking_config`: gain = rate, so the step is SAM
eq. 20-21, ``e = x_d(t + dt) - x_a(t)``) gets the next sample through
``set_target_matrix`` and ``update(now)`` on a perfect kinematic robot
(:func:`~ik_control.control.closed_loop.run_closed_loop`).

It runs twice with SAM's law, the pseudoinverse (``solver.method: pseudoinverse``; the
controller's default is damped least squares): the pseudoinverse solution alone, and with
the door as the secondary goal
of SAM eq. 19 (``ObstacleAvoidance.set_shapes``: the exact box; the nozzle's own link is
left out, it is meant to be near), its weight blended in over time from the task file's
``priorities`` (SAM sec. V). Printed for both: the tracking error of the nozzle along the
path and the smallest clearance between the arm's links (capsules of ``link_radius``) and
the door; the check is that the secondary goal raises the clearance while tracking stays
within ``TRACKING_BOUND``. The plot shows the joint angles over time (the paper's Fig. 7),
the arm and paths in 3-D (Figs. 6, 8), the clearance and the tracking error.
"""

from dataclasses import dataclass, replace
import math
import os
import time

from ik_control.control.closed_loop import run_closed_loop, tracking_config
from ik_control.control.controller import ResolvedRateController
from ik_control.control.priorities import WeightSchedule
from ik_control.control.spline_path import KeyPosePath
from ik_control.examples.plotting import equal_3d_axes
from ik_control.ik.obstacles import ObstacleAvoidance
from ik_control.kinematics import RobotModel
from ik_control.kinematics.dh_file import load_dh_file, xyz_rpy_transform
from ik_control.validation import finite_vector, InputError, read_yaml
import numpy as np
import pinocchio as pin

TRACKING_BOUND = 1e-3   # [m] the nozzle must stay this close to the spline
RUNS = ('pseudoinverse only', 'with door avoidance')


@dataclass
class PaintTask:
    """A painting task read from a task file (module docstring); units m, rad, s."""

    model: RobotModel
    effector: str
    rate_hz: float
    start_q: np.ndarray
    door_pose: np.ndarray
    door_size: tuple
    standoff: float
    times: np.ndarray
    poses: np.ndarray
    end_time: float
    influence: float
    gain: float
    link_radius: float
    priorities: WeightSchedule


def nozzle_pose(door_pose, door_size, standoff, u, v):
    """
    Nozzle pose for the face point ``(u, v)`` [m]: ``standoff`` off the door's -x face.

    Position ``door * (-(thickness / 2 + standoff), u, v)``; orientation the door's, so
    the nozzle's x axis points into the face along its normal.
    """
    T = np.array(door_pose, dtype=float)
    T[:3, 3] = door_pose[:3, :3] @ np.array([-(0.5 * door_size[0] + standoff), u, v]) \
        + door_pose[:3, 3]
    return T


def _positive(data, key, what):
    value = data.get(key)
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise InputError(f'{what}: {key} must be a number > 0, got {value!r}')
    return float(value)


def load_task(path):
    """Read a painting task file (``config/motions/paint_door.yaml``); InputError if bad."""
    data = read_yaml(path, 'task')
    what = f"task '{path}'"
    if not isinstance(data, dict):
        raise InputError(f'{what}: expected a mapping')
    robot_file = os.path.join(os.path.dirname(os.path.abspath(path)), str(data.get('robot')))
    robot = load_dh_file(robot_file)
    effector = str(data.get('effector', robot.tool_link))
    model = RobotModel.from_urdf(robot.urdf(), base_frame=robot.base_link,
                                 end_effectors=[effector])
    door = data.get('door') or {}
    size = finite_vector(door.get('size'), 3, f'{what}: door.size')
    if np.any(size <= 0):
        raise InputError(f'{what}: door.size must be > 0')
    center = finite_vector(door.get('center'), 3, f'{what}: door.center')
    door_pose = xyz_rpy_transform({'xyz': list(center), 'rpy': list(door.get('rpy', [0, 0, 0]))},
                                  1.0, f'{what}: door')
    standoff = _positive(data, 'standoff', what)
    keys = data.get('key_poses')
    if not isinstance(keys, list) or not keys:
        raise InputError(f'{what}: key_poses must be a non-empty list of {{t, face: [u, v]}}')
    times = np.array([float(k.get('t', np.nan)) for k in keys])
    poses = np.array([nozzle_pose(door_pose, size, standoff,
                                  *finite_vector(k.get('face'), 2, f'{what}: key pose face'))
                      for k in keys])
    start_q = finite_vector(data.get('start_q'), model.nq, f'{what}: start_q')
    avoid = data.get('avoidance') or {}
    task = PaintTask(model, effector, _positive(data, 'rate_hz', what), start_q, door_pose,
                     tuple(size), standoff, times, poses,
                     float(data.get('end_time', times[-1])),
                     _positive(avoid, 'influence', f'{what}: avoidance'),
                     _positive(avoid, 'gain', f'{what}: avoidance'),
                     _positive(avoid, 'link_radius', f'{what}: avoidance'),
                     WeightSchedule(data.get('priorities', [{'t': 0.0, 'secondary': 1.0}])))
    KeyPosePath(0.0, np.eye(4), times, poses)   # refuses bad times or poses now
    return task


def _door_checker(task):
    """Return an ObstacleAvoidance measuring the clearance of the links (not the nozzle's)."""
    checker = ObstacleAvoidance(task.model, link_radius=task.link_radius)
    checker.set_shapes([('box', task.door_pose, task.door_size)])
    checker.ignore_effector_segments()
    return checker


def run(task, avoid, progress=None):
    """
    Paint once, with or without the door as secondary goal; return the record as a dict.

    Keys: ``times`` [s], ``q`` [rad], ``actual`` and ``wanted`` nozzle poses, per tick
    ``position_error`` [m], ``rotation_error`` [rad], ``clearance`` [m], and ``status``,
    ``seconds`` (wall time of the loop).
    """
    model = task.model
    config = tracking_config(task.rate_hz, {'obstacles.influence_distance': task.influence,
                                            'obstacles.gain': task.gain,
                                            'obstacles.link_radius': task.link_radius})
    # SAM's primary solution is the pseudoinverse (sec. III), not our damped law
    config = replace(config, solver=replace(config.solver, method='pseudoinverse'))
    controller = ResolvedRateController(model, config)
    if avoid:
        controller.obstacles.set_shapes([('box', task.door_pose, task.door_size)])
        controller.obstacles.ignore_effector_segments()
    start = model.frame_placements(task.start_q)[0]
    path = KeyPosePath(0.0, start, task.times, task.poses)
    wanted = []

    def before_tick(ctrl, now):
        target = path.sample(now + ctrl.dt)      # eq. 20: the next desired configuration
        wanted.append(target)
        ctrl.obstacles.gain = task.gain * task.priorities.weight('secondary', now)
        ctrl.set_target_matrix(task.effector, target)

    began = time.perf_counter()
    record = run_closed_loop(controller, task.start_q, task.end_time, before_tick, progress)
    seconds = time.perf_counter() - began
    wanted = np.array(wanted)
    actual = record.poses[:, 0]
    position_error = np.linalg.norm(actual[:, :3, 3] - wanted[:, :3, 3], axis=1)
    rotation_error = np.array([np.linalg.norm(pin.log3(w[:3, :3].T @ a[:3, :3]))
                               for w, a in zip(wanted, actual)])
    checker, ws = _door_checker(task), model.workspace()
    clearance = np.empty(record.times.size)
    for k, q in enumerate(record.q):
        ws.update(q, jacobian=False)
        clearance[k] = checker.clearances(ws.joint_T, ws.frame_T)[0].min()
    return {'times': record.times, 'q': record.q, 'actual': actual, 'wanted': wanted,
            'method': controller.solver.config.method, 'position_error': position_error,
            'rotation_error': rotation_error, 'clearance': clearance, 'status': record.status,
            'seconds': seconds}


def summary(task, results):
    """Per run: the figures printed and saved (plain floats)."""
    out = {}
    for name, r in results.items():
        k = int(np.argmin(r['clearance']))
        out[name] = {'max_position_error_mm': float(r['position_error'].max() * 1e3),
                     'rms_position_error_mm': float(np.sqrt(np.mean(r['position_error'] ** 2))
                                                    * 1e3),
                     'max_rotation_error_mrad': float(r['rotation_error'].max() * 1e3),
                     'min_clearance_m': float(r['clearance'][k]),
                     'min_clearance_at_s': float(r['times'][k]),
                     'solver_method': r['method'], 'ticks': int(r['times'].size),
                     'ms_per_tick': float(r['seconds'] / r['times'].size * 1e3)}
    return out


def checks(figures):
    """Return the claims of the example, each with whether it holds."""
    plain, avoid = (figures[name] for name in RUNS)
    bound = TRACKING_BOUND * 1e3
    return [(f'the nozzle tracks the spline within {bound:g} mm in both runs',
             max(plain['max_position_error_mm'], avoid['max_position_error_mm']) < bound),
            ('the secondary goal raises the smallest arm-door clearance',
             avoid['min_clearance_m'] > plain['min_clearance_m'])]


def table(task, figures):
    """Return the printed table of the figures."""
    lines = [f'SAM spray painting: {task.model.nq}-joint robot, {task.times.size} key poses, '
             f'{task.end_time:g} s at {task.rate_hz:g} Hz, stand-off {task.standoff:g} m',
             f"{'run':<22s}{'max err':>10s}{'rms err':>10s}{'max rot':>10s}"
             f"{'min clearance':>16s}{'at':>8s}{'ms/tick':>9s}",
             f"{'':<22s}{'[mm]':>10s}{'[mm]':>10s}{'[mrad]':>10s}{'[m]':>16s}{'[s]':>8s}"]
    for name in RUNS:
        f = figures[name]
        lines.append(f"{name:<22s}{f['max_position_error_mm']:>10.4f}"
                     f"{f['rms_position_error_mm']:>10.4f}{f['max_rotation_error_mrad']:>10.4f}"
                     f"{f['min_clearance_m']:>16.4f}{f['min_clearance_at_s']:>8.2f}"
                     f"{f['ms_per_tick']:>9.3f}")
    return '\n'.join(lines)


def _box_edges(pose, size):
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    corners = corners * (0.5 * np.asarray(size))
    world = corners @ pose[:3, :3].T + pose[:3, 3]
    return [(world[i], world[j]) for i in range(8) for j in range(i + 1, 8)
            if np.sum(corners[i] != corners[j]) == 1]


def _arm_points(model, q):
    """Return the base origin, joint origins and effector at ``q`` (base frame)."""
    ws = model.workspace()
    ws.update(q, jacobian=False)
    return np.vstack([np.zeros((1, 3)), ws.joint_T[:, :3, 3], ws.frame_T[:, :3, 3]])


def plot(task, results, path):
    """Write the PNG: joint angles (Fig. 7), 3-D arm and paths (Figs. 6, 8), clearance, error."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    colours = {RUNS[0]: 'tab:red', RUNS[1]: 'tab:blue'}
    fig = plt.figure(figsize=(15, 10))
    ax3d = fig.add_subplot(2, 2, 1, projection='3d')
    for a, b in _box_edges(task.door_pose, task.door_size):
        ax3d.plot(*np.array([a, b]).T, color='0.4', lw=1.0)
    first = results[RUNS[0]]
    ax3d.plot(*first['wanted'][:, :3, 3].T, 'k--', lw=1.0, label='nozzle spline')
    ax3d.scatter(*task.poses[:, :3, 3].T, color='k', s=15, label='key poses')
    for name, r in results.items():
        for i, k in enumerate(np.linspace(0, r['times'].size - 1, 7).astype(int)):
            pts = _arm_points(task.model, r['q'][k])
            ax3d.plot(*pts.T, '-o', color=colours[name], ms=2, lw=1.2, alpha=0.35 + 0.1 * i,
                      label=name if i == 0 else None)
    equal_3d_axes(ax3d, floor=0.0)
    ax3d.view_init(elev=18, azim=-135)
    ax3d.set_xlabel('x [m]')
    ax3d.set_ylabel('y [m]')
    ax3d.set_zlabel('z [m]')
    ax3d.set_title('arm (7 instants) and nozzle path; door as box')
    ax3d.legend(fontsize=7, loc='upper left')

    ax = fig.add_subplot(2, 2, 2)
    for name, r in results.items():
        style = '-' if name == RUNS[1] else ':'
        for j in range(task.model.nq):
            ax.plot(r['times'], r['q'][:, j], style, color=f'C{j}', lw=1.0,
                    label=f'joint {j + 1}' if name == RUNS[1] else None)
    ax.set_xlabel('time [s]')
    ax.set_ylabel('joint angle [rad]')
    ax.set_title('joint angles (SAM Fig. 7): solid with avoidance, dotted without')
    ax.legend(fontsize=7, ncol=3)

    ax = fig.add_subplot(2, 2, 3)
    for name, r in results.items():
        ax.plot(r['times'], r['clearance'], color=colours[name], label=name)
    ax.axhline(task.influence, color='0.5', ls='--', lw=0.8, label='influence distance')
    ax.set_xlabel('time [s]')
    ax.set_ylabel('clearance links - door [m]')
    ax.set_title('smallest clearance between the links (capsules) and the door')
    ax.legend(fontsize=8)

    ax = fig.add_subplot(2, 2, 4)
    for name, r in results.items():
        ax.semilogy(r['times'], np.maximum(r['position_error'], 1e-12) * 1e3,
                    color=colours[name], label=name)
    ax.axhline(TRACKING_BOUND * 1e3, color='0.5', ls='--', lw=0.8, label='1 mm')
    ax.set_xlabel('time [s]')
    ax.set_ylabel('nozzle position error [mm]')
    ax.set_title('tracking error |p_d(t) - p_a(t)| (SAM eq. 20)')
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def run_both(task, progress=None):
    """Run without and with the secondary goal; return ``{run name: record}``."""
    results = {}
    for name, avoid in zip(RUNS, (False, True)):
        if progress:
            progress(f'{name} ...')
        results[name] = run(task, avoid)
    return results

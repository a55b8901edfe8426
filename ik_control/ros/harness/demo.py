"""
``ik_control demo``: the controller following a sequence of goals on the simulated robot.

``sim_robot`` and ``ik_controller`` run as separate processes, as on a robot
(``sys.executable -m ik_control.ros.<node>`` with the robot's parameter file from the
package share), in the private namespace :data:`NAMESPACE` with their ``/diagnostics``
remapped into it, on the user's ``ROS_DOMAIN_ID`` (DDS discovery limited to this host
unless ``ROS_AUTOMATIC_DISCOVERY_RANGE`` says otherwise).

For every goal the demo publishes a geometry_msgs/PoseStamped per end effector and waits
for ``~/<ee>/goal_reached`` (converged) or for the diagnostics to report
``TARGET_UNREACHABLE`` (the controller holds the closest pose it found). The final
errors are computed here, by forward kinematics of the *measured* ``joint_states``
against the goal. A velocity-mode segment streams geometry_msgs/TwistStamped at
:data:`TWIST_RATE` and measures the effector speed the same way.

The robot's own speeds are checked too: a :class:`~ik_control.control.motion_meter.
MotionMeter` over the recorded joint_states (speed over spans of 10 ms) against the URDF
velocity limits; above ``SPEED_TOLERANCE`` times them the demo fails, whatever the goals
did (issue 10: the MuJoCo wrist rang at 16 times its limit while every goal converged).

Progress goes to stderr, the summary table to stdout, and a PNG (matplotlib, Agg) shows
the effector paths, the errors over time with the goal changes, and the joint positions
normalised to their limits.
"""

from dataclasses import dataclass, field
import math
import os
import signal
import sys
import time

from ik_control import robots
from ik_control.control.motion_meter import MotionMeter
from ik_control.ik.pose_error import pose_distance
from ik_control.ros.harness.demo_nodes import (DemoError, NAMESPACE, progress, Recorder,
                                               start_nodes, start_viewer, StopRequest)
from ik_control.ros.harness.demo_plot import plot
from ik_control.ros.harness.node_process import discovery_summary, node_environment
import numpy as np

ROBOTS = ('wam', 'simon')
BACKENDS = ('kinematic', 'mujoco')
STARTUP_TIMEOUT = 120.0    # process start, discovery, numba cache load or compile (first run) [s]
GOAL_TIMEOUT = 15.0        # longest wait for one goal [s]
UNREACHABLE_GRACE = 3.0    # after TARGET_UNREACHABLE, time left to the other effectors [s]
SETTLE_TIME = 0.3          # goal_reached must stay True this long to count [s]
TWIST_RATE = 50.0          # TwistStamped messages per second [Hz]
TWIST_DURATION = 1.0       # length of the velocity-mode segment [s]
TWIST_CHORD = 0.1          # span of the chords the effector speed is measured over [s]
EXIT_FAILED = 1
#: measured joint speed over the URDF velocity limit above which the demo fails: the
#: servo's overshoot and the stamps' jitter, not a ringing joint [-]
SPEED_TOLERANCE = 1.05
EXIT_INTERRUPTED = 130

CONVERGED = 'converged'
UNREACHABLE = 'unreachable (holding closest pose)'
TIMED_OUT = 'NOT converged (timeout)'


# ---------------------------------------------------------------------- goals
def _rot(axis, angle):
    """Return the rotation matrix of ``angle`` [rad] about base axis ``axis`` ('x', 'y', 'z')."""
    c, s = math.cos(angle), math.sin(angle)
    i = 'xyz'.index(axis)
    j, k = (i + 1) % 3, (i + 2) % 3
    R = np.eye(3)
    R[j, j] = R[k, k] = c
    R[k, j], R[j, k] = s, -s
    return R


def _pose(position, R):
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = position
    return T


@dataclass
class Step:
    """
    One step of the demo: a pose goal per end effector, or a velocity-mode segment.

    ``targets`` maps end effector -> 4x4 goal in the base frame; ``expect`` maps end
    effector -> CONVERGED or UNREACHABLE (what the controller should do); ``twist`` maps
    end effector -> (vx, vy, vz) [m/s] for a velocity segment.
    """

    name: str
    targets: dict = field(default_factory=dict)
    expect: dict = field(default_factory=dict)
    twist: dict = field(default_factory=dict)


def wam_steps(model):
    """Return the WAM's steps: reachable poses, velocity mode, near-singular, out of reach."""
    ready = model.frame_placements(robots.ready_pose('wam'))[0]
    p0, R0 = ready[:3, 3], ready[:3, :3]
    # tool high above the front of the base: sigma_min at the goal 0.056 (singular_epsilon
    # 0.04); the way there from the side passes closer to the shoulder/elbow singularity
    high = model.frame_placements(np.array([0.0, 0.3, 0.0, 0.6, 0.0, 0.3, 0.0]))[0]
    reach = {'tool': CONVERGED}
    return [
        Step('forward and down', {'tool': _pose(p0 + [0.12, 0.0, -0.12], R0)}, reach),
        Step('left, tilted', {'tool': _pose(p0 + [-0.10, 0.30, 0.05], _rot('x', 0.4) @ R0)},
             reach),
        Step('right and up, tilted',
             {'tool': _pose(p0 + [-0.10, -0.30, 0.20], _rot('x', -0.4) @ R0)}, reach),
        Step('velocity mode', twist={'tool': (0.0, 0.1, 0.0)}),
        Step('high, via near-singular poses', {'tool': high}, reach),
        Step('out of reach (2 m ahead)', {'tool': _pose(p0 + [2.0, 0.0, 0.0], R0)},
             {'tool': UNREACHABLE}),
        Step('back within reach', {'tool': _pose(p0 + [0.10, 0.0, -0.05], R0)}, reach),
        Step('back to ready', {'tool': ready}, reach),
    ]


def simon_steps(model):
    """Return SIMON's steps: both hands at once, lift in velocity mode, one out of reach."""
    ready = model.frame_placements(robots.ready_pose('simon'))
    forward = _rot('y', -math.pi / 2)  # forearms pointing forward, palms facing each other
    both = {'right_hand': CONVERGED, 'left_hand': CONVERGED}
    return [
        Step('box hold', {'right_hand': _pose([0.42, -0.17, 1.05], forward),
                          'left_hand': _pose([0.42, 0.17, 1.05], forward)}, both),
        Step('velocity mode (lift)', twist={'right_hand': (0.0, 0.0, 0.1),
                                            'left_hand': (0.0, 0.0, 0.1)}),
        Step('box raised, to the left',
             {'right_hand': _pose([0.40, -0.10, 1.15], _rot('z', 0.2) @ forward),
              'left_hand': _pose([0.40, 0.24, 1.15], _rot('z', 0.2) @ forward)}, both),
        Step('right out of reach, left reaches out',
             {'right_hand': _pose([0.4, -1.8, 1.3], forward),
              'left_hand': _pose([0.40, 0.34, 1.15], _rot('z', 0.2) @ forward)},
             {'right_hand': UNREACHABLE, 'left_hand': CONVERGED}),
        Step('back to ready', {'right_hand': ready[0], 'left_hand': ready[1]}, both),
    ]


STEPS = {'wam': wam_steps, 'simon': simon_steps}


# ---------------------------------------------------------------------- running steps
@dataclass
class Row:
    """One line of the summary: a goal of one end effector, or a velocity segment."""

    step: str
    effector: str
    result: str
    seconds: float
    position_mm: float = math.nan
    orientation_mrad: float = math.nan
    notes: str = ''
    ok: bool = True


def _flags_since(rec, t0):
    """Return the status codes of the diagnostics stamped after ``t0``, and min sigma_min."""
    flags, sigma = set(), math.inf
    for stamp, values in rec.diagnostics:
        if stamp >= t0:
            flags.update(f for f in values.get('status_codes', '').split(',') if f != 'NONE')
            try:
                sigma = min(sigma, float(values.get('sigma_min', 'inf')))
            except ValueError:
                pass
    return flags, sigma


def run_pose_step(rec, step):
    """Send the goals of ``step`` and wait for each effector's outcome; return its rows."""
    ees = list(step.targets)
    t_send = time.time()
    marks = {ee: len(rec.goal_reached[ee]) for ee in ees}
    for ee, T in step.targets.items():
        rec.send_pose(ee, T)
    outcome, when = {}, {}
    unreachable_seen = [None]
    scanned = [len(rec.diagnostics)]

    def update():
        now = time.time()
        for ee in ees:
            if ee in outcome:
                continue
            msgs = rec.goal_reached[ee][marks[ee]:]
            # the controller answers a new goal with False, then True once reached; an arm
            # passing through the goal can flip it back: converged = True for SETTLE_TIME
            accepted = next((i for i, (_, v) in enumerate(msgs) if not v), None)
            if accepted is not None and msgs[-1][1] and len(msgs) > accepted + 1:
                if now - msgs[-1][0] >= SETTLE_TIME:
                    outcome[ee], when[ee] = CONVERGED, msgs[-1][0] - t_send
        while unreachable_seen[0] is None and scanned[0] < len(rec.diagnostics):
            stamp, values = rec.diagnostics[scanned[0]]
            scanned[0] += 1
            if stamp > t_send + 0.1 and 'TARGET_UNREACHABLE' in values.get('status_codes', ''):
                unreachable_seen[0] = now
        seen = unreachable_seen[0]
        # the flag is per controller: with several effectors still open, give the ones that
        # are not parked time to converge before calling all open ones unreachable
        grace = UNREACHABLE_GRACE if len(ees) - len(outcome) > 1 else 0.0
        if seen is not None and now - seen >= grace:
            for ee in ees:
                if ee not in outcome:
                    outcome[ee], when[ee] = UNREACHABLE, seen - t_send
        return len(outcome) == len(ees)

    rec.spin_until(update, GOAL_TIMEOUT)
    T = rec.model.frame_placements(rec.settled_q())
    flags, sigma = _flags_since(rec, t_send + 0.1)
    notes = ','.join(sorted(flags - {'TARGET_UNREACHABLE', 'ERROR_CLAMPED',
                                     'VELOCITY_LIMITED', 'ACCELERATION_LIMITED'}))
    if math.isfinite(sigma):
        notes = f'sigma_min {sigma:.3g}' + (f'; {notes}' if notes else '')
    rows = []
    for i, ee in enumerate(rec.model.end_effector_names):
        if ee not in step.targets:
            continue
        result = outcome.get(ee, TIMED_OUT)
        seconds = when.get(ee, time.time() - t_send)
        pos, rot = pose_distance(T[i], step.targets[ee])
        ok = result == step.expect.get(ee, CONVERGED)
        if result == CONVERGED:
            ok = ok and pos < 1e-3 and rot < 1e-2
        rows.append(Row(step.name, ee, result, seconds, pos * 1e3, rot * 1e3, notes, ok))
    return rows


def chord_velocity(t, P, span):
    """
    Return the median velocity of the chords ``(P_i - P_j) / (t_i - t_j)`` [units of P / s].

    ``j`` is the latest sample at least ``span`` [s] before ``i`` (samples ``P`` (n, 3) at
    stamps ``t``). The median over the chords is the speed the effector keeps; one late
    sample or hiccup moves a few chords, not the median (a least-squares slope over 0.7 s
    read 158 mm/s for a 100 mm/s twist on a loaded CI machine). No chord: NaN.
    """
    j = np.searchsorted(t, t - span, side='right') - 1
    i = np.flatnonzero(j >= 0)
    if not len(i):
        return np.full(P.shape[1], np.nan)
    j = j[i]
    return np.median((P[i] - P[j]) / (t[i] - t[j])[:, None], axis=0)


def run_twist_step(rec, step):
    """Stream the twists of ``step`` at TWIST_RATE for TWIST_DURATION; return its rows."""
    start = time.time()
    period = 1.0 / TWIST_RATE
    next_send = time.monotonic()
    while time.time() - start < TWIST_DURATION:
        for ee, v in step.twist.items():
            rec.send_twist(ee, v)
        next_send += period
        rec.spin_until(lambda: False, max(0.0, next_send - time.monotonic()))
    rec.spin_for(0.6)  # twist_timeout, then deceleration to rest
    times = np.array(rec.times)
    window = (times >= start + 0.3) & (times <= start + TWIST_DURATION)
    idx = np.flatnonzero(window)
    rows = []
    for i, ee in enumerate(rec.model.end_effector_names):
        if ee not in step.twist:
            continue
        commanded = float(np.linalg.norm(step.twist[ee]))
        if len(idx) < 2:
            rows.append(Row(step.name, ee, 'no joint_states during the segment',
                            TWIST_DURATION, ok=False))
            continue
        ws = rec.model.workspace()
        P = np.empty((len(idx), 3))
        for k, j in enumerate(idx):
            ws.update(rec.positions[j], jacobian=False)
            P[k] = ws.frame_T[i, :3, 3]
        velocity = chord_velocity(times[idx], P, TWIST_CHORD)
        along = float(velocity @ np.asarray(step.twist[ee]) / commanded)
        ok = abs(along - commanded) < 0.15 * commanded
        axis = 'xyz'[int(np.argmax(np.abs(step.twist[ee])))]
        rows.append(Row(step.name, ee, f'twist {commanded * 1e3:.0f} mm/s along {axis}: '
                        f'measured {np.linalg.norm(velocity) * 1e3:.1f} mm/s',
                        TWIST_DURATION, ok=ok))
    return rows


# ---------------------------------------------------------------------- output
def _fmt(value, digits=2):
    return '-' if not math.isfinite(value) else f'{value:.{digits}f}'


def summary_table(rows):
    """Return the summary table (columns separated by at least two spaces)."""
    header = ('goal', 'effector', 'result', 'time [s]', 'position error [mm]',
              'orientation error [mrad]', 'notes')
    lines = [(r.step, r.effector, r.result, _fmt(r.seconds), _fmt(r.position_mm, 3),
              _fmt(r.orientation_mrad, 2), r.notes or '-') for r in rows]
    widths = [max(len(str(c)) for c in col) for col in zip(header, *lines)]
    out = []
    for line in [header] + lines:
        out.append('  '.join(str(c).ljust(w) for c, w in zip(line, widths)).rstrip())
        if line is header:
            out.append('  '.join('-' * w for w in widths))
    return '\n'.join(out)


def limits_report(model, positions):
    """Return a line on how close the measured joints came to their limits."""
    Q = np.array(positions)
    lo = (Q - model.lower).min(axis=0)
    hi = (model.upper - Q).min(axis=0)
    j = int(np.argmin(np.minimum(lo, hi)))
    side = 'lower' if lo[j] <= hi[j] else 'upper'
    closest = min(lo[j], hi[j])
    inside = bool(np.all(lo >= -1e-9) and np.all(hi >= -1e-9))
    return (f"joints inside their limits throughout: {'yes' if inside else 'NO'} (closest: "
            f'{model.joint_names[j]}, {closest * 1e3:.1f} mrad from its {side} limit)'), inside


def speeds_report(model, times, positions):
    """Return a line on the robot's measured speeds against its limits, and whether within."""
    meter = MotionMeter(model.velocity_limit, np.full(model.nq, np.inf))
    for t, q in zip(times, positions):
        meter.add(t, q)
    ratio = meter.span_speed_ratio
    ok = ratio <= SPEED_TOLERANCE
    where = meter.worst.get('span_speed_ratio')
    joint = model.joint_names[where[1]] if where else '-'
    return (f"robot speeds within the velocity limits: {'yes' if ok else 'NO'} (largest "
            f'{ratio:.3f} of the limit over 10 ms, {joint}; {meter.samples} joint_states)'), ok


# ---------------------------------------------------------------------- main
def run(robot='wam', backend='kinematic', plot_path=None, bag=None, view=None):
    """
    Run the demo; return the exit status (0: every goal behaved as expected).

    ``bag``: a new directory to record the run into as a rosbag2, or None; ``view``: a
    port to serve the live browser view on (``ik_viewer``), or None.
    """
    if robot not in ROBOTS:
        raise DemoError(f"unknown robot '{robot}'; choose one of {', '.join(ROBOTS)}")
    if backend not in BACKENDS:
        raise DemoError(f"unknown backend '{backend}'; choose one of {', '.join(BACKENDS)}")
    if bag is not None and os.path.exists(bag):
        raise DemoError(f"bag directory '{bag}' exists already: rosbag2 writes a new one")
    stop = StopRequest()
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        return _run(robot, backend, plot_path or f'demo_{robot}.png', stop, bag, view)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _run(robot, backend, plot_path, stop, bag=None, view=None):
    env = node_environment()
    started = time.monotonic()
    progress(f"starting sim_robot ({backend}) and ik_controller for '{robot}' in "
             f"{NAMESPACE} (ROS_DOMAIN_ID={env.get('ROS_DOMAIN_ID', '0')}, "
             f'{discovery_summary(env)})')
    processes, rec, interrupted = [], None, False
    try:
        processes = list(start_nodes(robot, backend, env))
        if view is not None:
            processes.append(start_viewer(robot, view, env))
            progress(f'live view: http://127.0.0.1:{view}/')
        model = robots.robot(robot)
        steps = STEPS[robot](model)
        stop.deferred = True  # rclpy from here: stop at the next check, not inside rclpy
        rec = Recorder(model, processes, stop, bag)
        rec.wait_ready(STARTUP_TIMEOUT)
        progress(f'nodes up after {time.monotonic() - started:.1f} s')
        rows, marks = run_steps(rec, steps)
    except KeyboardInterrupt:
        interrupted = True
        progress('interrupted: stopping the nodes')
    except DemoError as exc:
        print(f'ik_control demo: {exc}', file=sys.stderr, flush=True)
        return EXIT_FAILED
    finally:
        if rec is not None:
            rec.close()
        for p in reversed(processes):  # the controller first: no command to a stopped robot
            running = p.alive()  # a node that died is reported by its DemoError
            code = p.stop(grace=1.0 if interrupted else 0.0)
            if running and code not in (0, -signal.SIGINT) and not interrupted:
                progress(f'{p.name} exited with status {code}:\n{p.output_tail(10)}')
        stop.deferred = False
    if interrupted or stop.requested:
        return EXIT_INTERRUPTED
    if rec.bag is not None:
        progress(f'bag: {rec.bag.path} ({sum(rec.bag.counts.values())} messages)')
    progress(f'nodes stopped; writing {plot_path}')
    plot(plot_path, rec, marks, robot, backend)
    line, inside = limits_report(model, rec.positions)
    speeds, slow_enough = speeds_report(model, rec.times, rec.positions)
    print(f'ik_control demo: {robot}, {backend} sim_robot, '
          f'{time.monotonic() - started:.1f} s')
    print(summary_table(rows))
    print(line)
    print(speeds)
    print(f'plot: {plot_path}')
    failed = [r for r in rows if not r.ok]
    if failed or not inside or not slow_enough:
        print(f'ik_control demo: {len(failed)} goal(s) did not behave as expected: '
              + ', '.join(f'{r.step} ({r.effector})' for r in failed), file=sys.stderr)
        return EXIT_FAILED
    return 0


def run_steps(rec, steps):
    """Run every step; return the summary rows and the goal marks (time, name, targets)."""
    rows, marks = [], []
    for n, step in enumerate(steps, 1):
        marks.append((time.time(), step.name, step.targets or None))
        if step.twist:
            new = run_twist_step(rec, step)
        else:
            new = run_pose_step(rec, step)
        for r in new:
            detail = (f'{r.result} after {r.seconds:.2f} s, error {r.position_mm:.3f} mm / '
                      f'{r.orientation_mrad:.2f} mrad' if step.targets else r.result)
            progress(f"{n}/{len(steps)} '{step.name}' {r.effector}: {detail}")
        rows += new
    return rows, marks

"""
SIMON keeps its right palm flat on a table plane while its goal moves above and below it.

A ROS-free run of the constraint solver (:mod:`ik_control.ik.constraints`): four of
Welman's constraints hold the right palm point on the table plane ``z = z0`` (point on
plane) with its orientation (orientation), and the left hand where it is (point to point
and orientation). Each tick the right palm's task velocity toward the goal,
``v = (goal - p) / dt`` [m/s], becomes the applied motion by
:meth:`ConstraintSet.task_velocity` (least squares inside the motions the constraints
allow), and :meth:`ConstraintSet.step` moves the robot with the Lagrange-multiplier
projection, the Newton corrections and the joint limits. The same task velocity without
constraints (damped least squares on the palm alone) shows what they prevent.

The goal runs around a circle of radius ``radius`` [m] tilted so that it rises
``height`` [m] above the table and sinks as far below it; the palm should follow the
goal's vertical projection onto the table. Results: the constraint errors per tick, the
in-plane tracking error, the time per tick, and a plot.

:func:`run_controller` is the same task through the controller core
(:class:`~ik_control.control.controller.ResolvedRateController`, ``ik_control demo --robot
simon --task constraint``): the four constraints are the controller's ``constraints``
(YAML, as the ``ik_controller`` parameter gives them, their values taken where the hands
are at the first tick), the goal circle is a moving goal of the right hand
(:meth:`~ik_control.control.controller.ResolvedRateController.follow_motion`), and every
command goes through the controller's limiter and command window to a perfect kinematic
SIMON at 1 kHz (:func:`~ik_control.control.closed_loop.run_closed_loop`). The figures are
taken at the commanded knots (where the robot is at each tick) and half-way between them
(the trajectory controller's cubic segments).
"""

import time

from ik_control import robots
from ik_control.ik.constraints import (CentreOfMass, ConstraintSet, Handle, Orientation,
                                       PointOnLine, PointOnPlane, PointToPoint)
import numpy as np

PALM = 'right_hand'
HELD = 'left_hand'
# the demo's constraints as the controller's YAML: the right palm on the horizontal plane
# it is on and at its orientation, the left hand where it is, at its orientation
CONTROLLER_CONSTRAINTS = f"""
- {{type: plane, frame: {PALM}, normal: [0, 0, 1]}}
- {{type: orientation, frame: {PALM}}}
- {{type: point, frame: {HELD}}}
- {{type: orientation, frame: {HELD}}}
"""


def _goal(p0, t, period, radius, height):
    """Goal [m] at time ``t`` [s]: a circle through ``p0``, tilted by ``height`` [m]."""
    phase = 2.0 * np.pi * t / period
    return p0 + np.array([radius * (1.0 - np.cos(phase)), radius * np.sin(phase),
                          height * np.sin(phase)])


class CircleGoal:
    """
    The goal circle as a moving goal (``sample``, ``twist``, ``end_time``) of the palm.

    Starts at the palm's pose ``(p0, R0)`` (position [m], rotation) and keeps ``R0``.
    """

    def __init__(self, p0, R0, seconds, period, radius, height):
        self.p0, self.R0 = np.asarray(p0, dtype=float), np.asarray(R0, dtype=float)
        self.end_time = float(seconds)
        self.period, self.radius, self.height = period, radius, height

    def position(self, t):
        """Goal position [m] at ``t`` [s] from the start."""
        return _goal(self.p0, min(max(t, 0.0), self.end_time), self.period, self.radius,
                     self.height)

    def sample(self, t):
        """Goal pose (4x4, base frame) at ``t`` [s]."""
        T = np.eye(4)
        T[:3, :3] = self.R0
        T[:3, 3] = self.position(t)
        return T

    def twist(self, t):
        """Goal velocity (linear [m/s], angular [rad/s]) at ``t`` [s]."""
        if not 0.0 <= t <= self.end_time:
            return np.zeros(6)
        w = 2.0 * np.pi / self.period
        phase = w * t
        return np.array([self.radius * w * np.sin(phase), self.radius * w * np.cos(phase),
                         self.height * w * np.cos(phase), 0.0, 0.0, 0.0])


def run_controller(seconds=8.0, rate=1000.0, period=4.0, radius=0.1, height=0.06,
                   progress=None):
    """Run the demo through the controller core (module docstring); as :func:`run`."""
    from ik_control.control.closed_loop import run_closed_loop
    from ik_control.control.config import ControllerConfig
    from ik_control.control.controller import ResolvedRateController

    model = robots.robot('simon')
    q0 = robots.ready_pose('simon')
    config = ControllerConfig(rate_hz=rate, constraints=CONTROLLER_CONSTRAINTS).updated(
        {'limits.max_acceleration': (5.0,), 'fallback.strategy': 'posture'})
    controller = ResolvedRateController(model, config)
    palm, held = Handle(PALM), Handle(HELD)
    p0, R0 = palm.placement(model, q0)
    goal = CircleGoal(p0, R0, seconds, period, radius, height)
    ticks = int(round(seconds * rate))
    series = {k: np.zeros(ticks) for k in ('t', 'plane_error_m', 'orientation_error_rad',
                                           'held_error_m', 'tracking_error_m',
                                           'goal_height_m', 'palm_height_m',
                                           'between_knots_error_m', 'tick_ms')}
    state = {'k': 0, 'last': None}
    dt = 1.0 / rate
    # the same constraints as objects, to measure them
    measure = ConstraintSet(model, [PointOnPlane(palm, p0, (0.0, 0.0, 1.0)),
                                    Orientation(PALM, R0),
                                    PointToPoint(held, held.placement(model, q0)[0]),
                                    Orientation(HELD, held.placement(model, q0)[1])])

    def before_tick(c, now):
        k = state['k']
        if k == 0:
            c.follow_motion(PALM, goal, now, 'the goal circle')
        if k > 0:   # the previous tick's command, half-way between its first two knots
            q_mid = state['last'].at(0.5 * dt)[0]
            series['between_knots_error_m'][k - 1] = abs(measure.evaluate(q_mid)[0][0])
        state['k'] = k + 1
        state['start'] = time.perf_counter()

    update = controller.update

    def timed_update(now):
        command = update(now)
        series['tick_ms'][state['k'] - 1] = 1e3 * (time.perf_counter() - state['start'])
        state['last'] = command
        return command

    controller.update = timed_update
    record = run_closed_loop(controller, q0, seconds, before_tick,
                             progress=None if progress is None else
                             (lambda f: progress(f't = {f * seconds:.1f} s of {seconds:g} s')))
    controller.update = update
    ws = model.workspace()
    for i in range(ticks):
        q, t = record.q[i], record.times[i]
        C, _ = measure.evaluate(q)
        ws.update(q, jacobian=False)
        p = palm.placement(model, q)[0]
        g = goal.position(t)
        series['t'][i] = t
        series['plane_error_m'][i] = abs(C[0])
        series['orientation_error_rad'][i] = max(np.linalg.norm(C[1:4]), np.linalg.norm(C[7:10]))
        series['held_error_m'][i] = np.linalg.norm(C[4:7])
        series['tracking_error_m'][i] = np.linalg.norm((g - p)[:2])
        series['goal_height_m'][i] = g[2] - p0[2]
        series['palm_height_m'][i] = p[2] - p0[2]
    series['between_knots_error_m'][-1] = series['between_knots_error_m'][-2]
    settled = series['t'] >= 0.5     # after the first half second (the start from rest)
    summary = {
        'ticks': ticks, 'rate_hz': rate, 'seconds': seconds,
        'plane_error_max_m': float(series['plane_error_m'].max()),
        'orientation_error_max_rad': float(series['orientation_error_rad'].max()),
        'held_error_max_m': float(series['held_error_m'].max()),
        'between_knots_error_max_m': float(series['between_knots_error_m'].max()),
        'tracking_error_median_m': float(np.median(series['tracking_error_m'][settled])),
        'tracking_error_max_m': float(series['tracking_error_m'][settled].max()),
        'tracking_error_start_max_m': float(series['tracking_error_m'].max()),
        'goal_off_plane_max_m': float(np.abs(series['goal_height_m']).max()),
        'limiter_altered_ticks': int(controller.constrained.altered),
        'tick_ms_median': float(np.median(series['tick_ms'])),
        'tick_ms_p99': float(np.percentile(series['tick_ms'], 99))}
    return {'summary': summary, 'series': {k: v.tolist() for k, v in series.items()}}


def controller_table(results):
    """Return the summary of :func:`run_controller` as text."""
    s = results['summary']
    return '\n'.join([
        'SIMON right palm on the table plane through the controller, '
        f"{s['seconds']:g} s at {s['rate_hz']:g} Hz ({s['ticks']} ticks), "
        f"goal up to {s['goal_off_plane_max_m'] * 100:.1f} cm off the plane",
        f"  point-on-plane error        max {s['plane_error_max_m']:.2e} m at the knots, "
        f"{s['between_knots_error_max_m']:.2e} m between them",
        f"  palm / left hand rotation   max {s['orientation_error_max_rad']:.2e} rad",
        f"  left hand point-to-point    max {s['held_error_max_m']:.2e} m",
        f"  in-plane tracking error     median {s['tracking_error_median_m']:.2e} m, "
        f"max {s['tracking_error_max_m']:.2e} m after 0.5 s "
        f"({s['tracking_error_start_max_m']:.2e} m from rest)",
        f"  ticks the limiter changed   {s['limiter_altered_ticks']}",
        f"  controller tick             median {s['tick_ms_median']:.2f} ms, "
        f"p99 {s['tick_ms_p99']:.2f} ms"])


def run(seconds=8.0, rate=100.0, period=4.0, radius=0.1, height=0.06, progress=None,
        centre_of_mass=False):
    """
    Run the demo (module docstring); return a dict of per-tick series and a summary.

    ``centre_of_mass``: a fifth constraint keeps SIMON's centre of mass on the vertical
    line through where it starts (Welman's centre-of-mass handle, point on line: the
    balance of a standing figure), so the palm's task is met with the torso and arms
    moving about a fixed centre of mass. Steps :meth:`ConstraintSet.step` refuses (the
    joints left free at their limits cannot keep all five) are counted.
    """
    model = robots.robot('simon')
    q = robots.ready_pose('simon')
    dt = 1.0 / rate
    palm, held = Handle(PALM), Handle(HELD)
    p0, R0 = palm.placement(model, q)
    p_held, R_held = held.placement(model, q)
    kept = [PointOnPlane(palm, p0, (0.0, 0.0, 1.0)), Orientation(PALM, R0),
            PointToPoint(held, p_held), Orientation(HELD, R_held)]
    if centre_of_mass:
        kept.append(PointOnLine(CentreOfMass(), CentreOfMass().placement(model, q)[0],
                                (0.0, 0.0, 1.0)))
    constraints = ConstraintSet(model, kept)
    q_free = q.copy()
    ticks = int(round(seconds * rate))
    series = {k: np.zeros(ticks) for k in ('t', 'plane_error_m', 'orientation_error_rad',
                                           'held_error_m', 'tracking_error_m',
                                           'goal_height_m', 'palm_height_m',
                                           'free_palm_height_m', 'com_error_m', 'tick_ms')}
    refused = 0
    for i in range(ticks):
        t = (i + 1) * dt
        goal = _goal(p0, t, period, radius, height)
        start = time.perf_counter()
        p, Jp, _ = palm.jacobians(model, q)
        g_a = constraints.task_velocity(q, Jp, (goal - p) / dt)
        step = constraints.step(q, g_a, dt)
        q = step.q
        refused += not step.feasible
        series['tick_ms'][i] = 1e3 * (time.perf_counter() - start)
        p_free, J_free, _ = palm.jacobians(model, q_free)
        q_free = np.clip(q_free + dt * J_free.T @ np.linalg.solve(
            J_free @ J_free.T + 1e-6 * np.eye(3), (goal - p_free) / dt), model.lower, model.upper)
        C, _ = constraints.evaluate(q)
        p, _ = palm.placement(model, q)
        projected = goal - np.array([0.0, 0.0, goal[2] - p0[2]])
        series['t'][i] = t
        series['plane_error_m'][i] = abs(C[0])
        series['orientation_error_rad'][i] = max(np.linalg.norm(C[1:4]), np.linalg.norm(C[7:10]))
        series['held_error_m'][i] = np.linalg.norm(C[4:7])
        series['com_error_m'][i] = np.linalg.norm(C[10:12]) if centre_of_mass else 0.0
        series['tracking_error_m'][i] = np.linalg.norm(projected - p)
        series['goal_height_m'][i] = goal[2] - p0[2]
        series['palm_height_m'][i] = p[2] - p0[2]
        series['free_palm_height_m'][i] = palm.placement(model, q_free)[0][2] - p0[2]
        if progress and (i + 1) % int(rate) == 0:
            progress(f't = {t:.0f} s, plane error {abs(C[0]):.2e} m')
    summary = {
        'ticks': ticks, 'rate_hz': rate, 'seconds': seconds,
        'plane_error_max_m': float(series['plane_error_m'].max()),
        'orientation_error_max_rad': float(series['orientation_error_rad'].max()),
        'held_error_max_m': float(series['held_error_m'].max()),
        'tracking_error_median_m': float(np.median(series['tracking_error_m'])),
        'tracking_error_max_m': float(series['tracking_error_m'].max()),
        'free_palm_off_plane_max_m': float(np.abs(series['free_palm_height_m']).max()),
        'goal_off_plane_max_m': float(np.abs(series['goal_height_m']).max()),
        'centre_of_mass': bool(centre_of_mass),
        'com_error_max_m': float(series['com_error_m'].max()),
        'refused_steps': refused,
        'tick_ms_median': float(np.median(series['tick_ms']))}
    return {'summary': summary, 'series': {k: v.tolist() for k, v in series.items()}}


def table(results):
    """Return the summary as text."""
    s = results['summary']
    return '\n'.join([
        f"SIMON right palm on the table plane, {s['seconds']:g} s at {s['rate_hz']:g} Hz "
        f"({s['ticks']} ticks), goal up to {s['goal_off_plane_max_m'] * 100:.1f} cm off the "
        'plane',
        f"  point-on-plane error        max {s['plane_error_max_m']:.2e} m",
        f"  palm / left hand rotation   max {s['orientation_error_max_rad']:.2e} rad",
        f"  left hand point-to-point    max {s['held_error_max_m']:.2e} m",
        f"  in-plane tracking error     median {s['tracking_error_median_m']:.2e} m, "
        f"max {s['tracking_error_max_m']:.2e} m",
        *([f"  centre of mass on its line  max {s['com_error_max_m']:.2e} m off it",
           f"  steps refused (infeasible)  {s['refused_steps']}"]
          if s.get('centre_of_mass') else []),
        '  without the constraints     palm leaves the plane by up to '
        f"{s['free_palm_off_plane_max_m'] * 100:.1f} cm",
        f"  tick (task velocity + constrained step)  median {s['tick_ms_median']:.2f} ms"])


def plot(results, path, title=None):
    """Write the constraint errors and heights over time as a PNG at ``path``."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    s = {k: np.asarray(v) for k, v in results['series'].items()}
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True)
    floor = 1e-18
    ax1.semilogy(s['t'], np.maximum(s['plane_error_m'], floor), label='point on plane |C| [m]')
    if 'between_knots_error_m' in s:
        ax1.semilogy(s['t'], np.maximum(s['between_knots_error_m'], floor),
                     label='point on plane |C| between knots [m]', alpha=0.7)
    ax1.semilogy(s['t'], np.maximum(s['orientation_error_rad'], floor),
                 label='orientations |C| [rad]')
    ax1.semilogy(s['t'], np.maximum(s['held_error_m'], floor),
                 label='left hand point to point |C| [m]')
    if results['summary'].get('centre_of_mass'):
        ax1.semilogy(s['t'], np.maximum(s['com_error_m'], floor),
                     label='centre of mass off its vertical line [m]')
    ax1.semilogy(s['t'], np.maximum(s['tracking_error_m'], floor),
                 label='in-plane distance to the goal [m]', alpha=0.7)
    ax1.set_ylabel('error')
    ax1.set_title(title or 'SIMON: right palm kept on the table plane (Welman constraints)')
    ax1.legend(fontsize=8)
    ax2.plot(s['t'], 100 * s['goal_height_m'], label='goal')
    ax2.plot(s['t'], 100 * s['palm_height_m'], label='palm, constrained')
    if 'free_palm_height_m' in s:
        ax2.plot(s['t'], 100 * s['free_palm_height_m'], '--', label='palm, no constraints')
    ax2.set_ylabel('height above the table [cm]')
    ax2.set_xlabel('time [s]')
    ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path

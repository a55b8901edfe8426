"""
Does the controller reach every reachable goal? ``ik_control bench reach``.

The controller core (:class:`~ik_control.control.controller.ResolvedRateController`, the
code the node runs, without ROS) with the node's shipped configuration
(``config/<robot>.yaml``: rate, gain, limits, tolerances, solver) drives a perfect
kinematic robot: each tick the robot reports its position, and one tick later it is
where the command says (``Command.at(dt)``). For each goal the robot starts at rest at a
random configuration inside the joint limits less ``position_margin``; the goal is the
forward kinematics of another such configuration (for SIMON, both hands from the same
one), so a solution exists. With the collision stage on (``collision.enabled``, the
shipped default) both configurations are drawn free of contact: every checked pair (the
shipped SRDF's) at least ``collision.security_distance`` apart, so a contact-free
solution exists too; the way there may still be blocked (``COLLISION`` misses). A goal
counts as reached when the controller says so (the measured pose within tolerance, the
command at rest); it is missed when the controller parks it as unreachable or after
``timeout`` seconds of simulated time.

Printed per robot and configuration: goals reached (%), time to reach (median, p95),
how many needed the position-IK fallback, and the robot's peak joint speed and
acceleration, differenced from its positions tick by tick, as ratios of the
controller's limits. The position IK runs inline here (the node runs it on a worker
thread), so its time does not delay the simulated robot.
"""

import time

from ik_control import robots
from ik_control.control.controller import ResolvedRateController
from ik_control.launch_util import node_parameters
from ik_control.robots import share_directory
import numpy as np

ROBOTS = ('wam', 'simon')
TIMEOUT = 15.0  # simulated seconds a goal is given [s]


def controller_config(robot, overrides=None):
    """Return the node's ControllerConfig for ``robot``, from its shipped parameter file."""
    import os

    from ik_control.ros import ik_controller_node as node

    # array parameters without a default are declared by type: empty here
    values = {name: p.default if type(p.default) in (bool, int, float, str, list) else []
              for name, p in node.PARAMETERS.items()}
    path = os.path.join(share_directory(), 'config', f'{robot}.yaml')
    values.update(node_parameters(path, node.NODE_NAME))
    values.update(overrides or {})
    return node.controller_config(values)


def run_goal(controller, q0, targets, timeout=TIMEOUT):
    """
    Drive ``controller`` from ``q0`` (at rest) to ``targets`` (ne x 4 x 4, base frame).

    Returns ``(reached, seconds, peak speed ratio, peak acceleration ratio)``.
    """
    model = controller.model
    dt = controller.dt
    names = model.joint_names
    q = np.array(q0, dtype=float)
    v = np.zeros_like(q)
    peak_v = peak_a = 0.0
    for f, ee in enumerate(model.end_effector_names):
        controller.set_target_matrix(ee, targets[f])
    for k in range(int(round(timeout / dt))):
        now = k * dt
        controller.set_joint_state(names, q, now)
        command = controller.update(now)
        if controller.goals.reached.all():
            return True, now, peak_v, peak_a
        if controller.goals.parked.any():
            return False, now, peak_v, peak_a
        if command is None:
            continue
        q_next = command.at(dt)[0]
        v_next = (q_next - q) / dt
        peak_v = max(peak_v, float(np.max(np.abs(v_next) / controller.v_max)))
        peak_a = max(peak_a, float(np.max(np.abs(v_next - v) / dt / controller.a_max)))
        q, v = q_next, v_next
    return False, timeout, peak_v, peak_a


def run_case(robot, goals, seed, overrides=None, progress=None, label=''):
    """Run ``goals`` random reachable goals on ``robot``; return a JSON-ready dict."""
    config = controller_config(robot, overrides)
    model = robots.robot(robot)
    rng = np.random.default_rng(seed)
    lo = model.lower + config.limits.position_margin
    hi = model.upper - config.limits.position_margin
    free = _contact_free(model, config)
    times, misses = [], []
    fallbacks = peak_v = peak_a = 0.0
    wall = time.perf_counter()
    for g in range(goals):
        q0, q_goal = free(rng, lo, hi), free(rng, lo, hi)
        controller = ResolvedRateController(model, config)
        reached, seconds, v, a = run_goal(controller, q0, model.frame_placements(q_goal))
        fallbacks += controller.fallback.requests > 0
        peak_v, peak_a = max(peak_v, v), max(peak_a, a)
        if reached:
            times.append(seconds)
        else:
            err_p, err_r = controller.tracking_errors()
            misses.append({'goal': g, 'seconds': seconds, 'position_error_m': float(max(err_p)),
                           'rotation_error_rad': float(max(err_r)),
                           'reason': '; '.join(r for r in controller.goals.unreachable_reason if r)
                           or 'timeout'})
        if progress and (g + 1) % max(1, goals // 10) == 0:
            progress(f'{robot}{label}: {g + 1}/{goals} goals, {len(times)} reached, '
                     f'{int(fallbacks)} needed the IK, peak speed {peak_v:.3f} accel '
                     f'{peak_a:.3f}, {time.perf_counter() - wall:.0f} s')
    t = np.array(times) if times else np.array([np.nan])
    return {'robot': robot, 'overrides': overrides or {}, 'goals': goals, 'seed': seed,
            'rate_hz': config.rate_hz, 'fallback_strategy': config.fallback.strategy,
            'collision_enabled': bool(config.collision.enabled),
            'collision_misses': sum(m['reason'].startswith('COLLISION') for m in misses),
            'reached': len(times), 'reached_percent': 100.0 * len(times) / goals,
            'seconds_median': float(np.median(t)), 'seconds_p95': float(np.percentile(t, 95)),
            'needed_fallback': int(fallbacks), 'peak_speed_ratio': peak_v,
            'peak_acceleration_ratio': peak_a, 'misses': misses[:20],
            'wall_seconds': time.perf_counter() - wall}


def _contact_free(model, config):
    """Return ``draw(rng, lo, hi)``: a uniform configuration, free of contact if checked."""
    if not config.collision.enabled:
        return lambda rng, lo, hi: rng.uniform(lo, hi)
    from ik_control.collision.model import CollisionModel

    cm = CollisionModel(model, srdf=config.collision.srdf or None)

    def draw(rng, lo, hi):
        while True:
            q = rng.uniform(lo, hi)
            if cm.distances(q, within=config.collision.security_distance)[0].size == 0:
                return q
    return draw


def run(robot_names=ROBOTS, goals=1000, seed=0, cases=None, progress=None):
    """Run every robot with every case (``{label: parameter overrides}``)."""
    cases = cases or {'default': {}}
    return {'goals': goals, 'seed': seed, 'timeout_s': TIMEOUT,
            'results': [run_case(r, goals, seed, overrides, progress, f' [{label}]')
                        | {'case': label}
                        for r in robot_names for label, overrides in cases.items()]}


def table(results):
    """Return the results as a text table."""
    lines = [f"bench reach: {results['goals']} random reachable goals per row (seed "
             f"{results['seed']}), {results['timeout_s']:g} s each, controller core at the "
             "node's shipped config",
             f"{'robot':7} {'case':28} {'reached':>9} {'t50 s':>6} {'t95 s':>6} "
             f"{'IK used':>7} {'speed':>6} {'accel':>6} {'collision':>9}"]
    for r in results['results']:
        lines.append(f"{r['robot']:7} {r['case']:28} {r['reached_percent']:8.1f}% "
                     f"{r['seconds_median']:6.2f} {r['seconds_p95']:6.2f} "
                     f"{r['needed_fallback']:7d} {r['peak_speed_ratio']:6.3f} "
                     f"{r['peak_acceleration_ratio']:6.3f} "
                     + (f"{r.get('collision_misses', 0):4d} miss" if r.get('collision_enabled')
                        else f"{'off':>9}"))
    for r in results['results']:
        for m in r['misses'][:5]:
            lines.append(f"  miss {r['robot']} [{r['case']}] goal {m['goal']}: "
                         f"{m['position_error_m']:.3g} m, {m['rotation_error_rad']:.3g} rad "
                         f"after {m['seconds']:.2f} s ({m['reason']})")
    lines.append('goal: >= 99.5 % reached, speed and acceleration ratios <= 1.0')
    return '\n'.join(lines)

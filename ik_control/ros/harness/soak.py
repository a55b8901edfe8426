"""
``ik_control bench soak``: the controller at its configured rate for minutes, under goals.

SIMON (``config/simon.yaml``: 1 kHz, both hands) runs as two processes, ``sim_robot`` and
``ik_controller``, as in :mod:`ik_control.ros.harness.node_rig` (private namespace,
``/diagnostics`` remapped into it). This process sends a new pose goal to each hand every
:data:`TARGET_PERIOD` (reachable and unreachable ones mixed) and measures, after a
warm-up of :data:`WARMUP` seconds:

* rate: commands received per second here, and the controller's own ``rate_hz`` (its
  loop statistics over the last ticks, from ``/diagnostics``); jitter: the controller's
  ``jitter_us_p50/p99/max`` (tick start against the period);
* memory: resident set size of both node processes (``VmRSS`` in ``/proc/<pid>/status``)
  at the start and the end of the measurement, and its growth;
* limit violations: every command checked as in the fuzz bench
  (:class:`~ik_control.ros.harness.checks.CommandChecker`); the robot's own motion
  (:class:`~ik_control.ros.harness.checks.MotionMonitor`: speed between samples and over 10 ms,
  acceleration over 10 ms, as ratios of the limits) and the setpoints its saturation had
  to clamp (``clamps`` in sim_robot's diagnostics);
* message losses: the controller ticks once per joint_states message (its loop is
  phase-locked to them at the same rate), so the commands expected are the joint_states
  messages the robot published in the window (as received here) and the loss is
  expected minus received; and command pairs that are not
  consecutive ticks (a command lost between them, or a re-seed).

Progress goes to stderr every :data:`PROGRESS_PERIOD` seconds; the figures come back as
a dict (:func:`run`), a table (:func:`table`) and a PNG of rate and RSS over time
(:func:`plot`).
"""

import math
import os
import time

from ik_control import robots
from ik_control.ros.harness import checks, node_rig
import numpy as np

TARGET_PERIOD = 0.05     # a new goal per hand this often [s]
UNREACHABLE_SHARE = 0.25  # share of goals out of reach
WARMUP = 5.0             # seconds before the measurement starts [s]
SAMPLE_PERIOD = 1.0      # RSS and rate samples [s]
PROGRESS_PERIOD = 10.0   # progress lines on stderr [s]
FINAL_DIAGNOSTICS_TIMEOUT = 30.0  # wait for the last diagnostics at most [s]
GOALS = {'rate_hz': 999.5, 'rss_growth_mib': 5.0, 'violations': 0, 'speed_ratio': 1.05}


def _goal(model, rng, ready, i, unreachable):
    q = np.clip(ready + rng.normal(0, 0.25, model.nq), model.lower + 0.1, model.upper - 0.1)
    T = model.frame_placements(q)[i]
    if unreachable:
        direction = rng.normal(0, 1, 3)
        T[:3, 3] += 1.5 * direction / np.linalg.norm(direction)
    return T


def _diag_float(values, key):
    try:
        return float(values[key])
    except (KeyError, ValueError):
        return math.nan


def run(minutes=10.0, robot='simon', seed=0, progress=None, namespace=None,
        realtime_priority=0):
    """
    Soak ``robot`` for ``minutes`` after the warm-up; return the figures (a dict).

    ``realtime_priority`` is passed to both nodes (0: normal scheduling, as in the
    robot's parameter file). ``progress(text)`` receives progress lines. Raises
    :class:`~ik_control.ros.harness.node_rig.FuzzError` if the nodes do not start or one of
    them dies.
    """
    if not minutes > 0:
        raise ValueError('minutes must be > 0')
    say = progress or (lambda text: None)
    model = robots.robot(robot)
    ready = robots.ready_pose(robot)
    namespace = namespace or f'/ik_control_soak_{os.getpid()}'
    rng = np.random.default_rng(seed)
    priority = ['-p', f'realtime_priority:={int(realtime_priority)}']
    pair = node_rig.Pair(robot, namespace, controller_args=priority, sim_args=priority)
    probe = None
    series = {'t': [], 'commands_per_s': [], 'states_per_s': [], 'controller_rate_hz': [],
              'rss_sim_mib': [], 'rss_controller_mib': [], 'jitter_us_p99': []}
    diag_samples = []
    try:
        pair.start()
        say(f'started sim_robot and ik_controller for {robot} in {namespace} '
            f"(ROS_DOMAIN_ID={pair.env.get('ROS_DOMAIN_ID', '0')})")
        probe = node_rig.Probe(model, namespace, name='ik_control_soak')
        probe.wait_ready(pair=pair)
        parameters = probe.controller_parameters(
            ['rate_hz', 'limits.position_margin', 'limits.velocity_scale',
             'limits.max_velocity', 'limits.max_acceleration'])
        rate_hz = float(parameters['rate_hz'])
        checker = checks.checker_for(model, parameters)
        monitor = checks.MotionMonitor(probe, checker.v_max, checker.a_max)
        probe.on_command = lambda msg, t: checker.check(msg)
        probe.on_state = monitor.on_state
        say(f'ready; {rate_hz:g} Hz; warm-up {WARMUP:g} s, then {minutes:g} min of goals '
            f'every {TARGET_PERIOD * 1e3:.0f} ms')
        ees = list(model.end_effector_names)
        duration = minutes * 60.0
        t_start = time.monotonic()
        t_measure = t_start + WARMUP
        t_end = t_measure + duration
        next_goal = t_start
        next_sample = t_measure
        next_progress = t_measure + PROGRESS_PERIOD
        goals = unreachable = 0
        base = None
        last_sample = None
        last_diag_time = -math.inf
        while True:
            now = time.monotonic()
            if now >= t_end and base is not None:
                break
            if now >= next_goal:
                for i, ee in enumerate(ees):
                    far = bool(rng.random() < UNREACHABLE_SHARE)
                    probe.send_pose(ee, _goal(model, rng, ready, i, far))
                    goals += 1
                    unreachable += far
                next_goal += TARGET_PERIOD
                if next_goal < now:  # fell behind: no burst of goals
                    next_goal = now + TARGET_PERIOD
            if probe.diagnostics_time > last_diag_time and now >= t_measure:
                last_diag_time = probe.diagnostics_time
                diag_samples.append({k: _diag_float(probe.diagnostics, k) for k in
                                     ('rate_hz', 'jitter_us_p50', 'jitter_us_p99',
                                      'jitter_us_max', 'compute_us_p99', 'latency_us_p99')})
            if now >= next_sample:
                pair.check_alive()
                sample = (now, probe.commands, probe.states, pair.sim.rss_kib(),
                          pair.controller.rss_kib())
                if base is None:
                    base = {'t': now, 'commands': probe.commands, 'states': probe.states,
                            'rss_sim_kib': sample[3], 'rss_controller_kib': sample[4],
                            'checker': checker.summary(), 'reseeds': probe.diagnostics.get(
                                'reseeds', '0')}
                else:
                    dt = now - last_sample[0]
                    series['t'].append(now - t_measure)
                    series['commands_per_s'].append((sample[1] - last_sample[1]) / dt)
                    series['states_per_s'].append((sample[2] - last_sample[2]) / dt)
                    series['controller_rate_hz'].append(_diag_float(probe.diagnostics,
                                                                    'rate_hz'))
                    series['jitter_us_p99'].append(_diag_float(probe.diagnostics,
                                                               'jitter_us_p99'))
                    series['rss_sim_mib'].append(sample[3] / 1024.0)
                    series['rss_controller_mib'].append(sample[4] / 1024.0)
                last_sample = sample
                next_sample += SAMPLE_PERIOD
            if now >= next_progress:
                elapsed = now - t_measure
                per_second = (probe.commands - base['commands']) / elapsed
                say(f'{elapsed / 60:.1f}/{minutes:g} min: {per_second:.1f} '
                    f'commands/s, controller {probe.diagnostics.get("rate_hz", "?")} Hz, '
                    f'RSS sim {sample[3] / 1024:.1f} MiB controller {sample[4] / 1024:.1f} '
                    f'MiB, violations {checker.violations}')
                next_progress += PROGRESS_PERIOD
            probe.poll()
            probe.executor.spin_once(timeout_sec=0.0)
            time.sleep(0.0005)
        end = {'t': time.monotonic(), 'commands': probe.commands, 'states': probe.states,
               'rss_sim_kib': pair.sim.rss_kib(), 'rss_controller_kib': pair.controller.rss_kib(),
               'checker': checker.summary()}
        # the last figures; a busy probe (it checks every point of every window) may take
        # a while to get through its backlog
        final = probe.fresh_diagnostics(timeout=FINAL_DIAGNOSTICS_TIMEOUT, pair=pair)
        alive = {p.name: p.alive() for p in pair.processes()}
    finally:
        if probe is not None:
            probe.close()
        crashes = pair.stop()
    window = end['t'] - base['t']
    commands = end['commands'] - base['commands']
    states = end['states'] - base['states']
    skipped = end['checker']['acceleration_skipped'] - base['checker']['acceleration_skipped']
    rates = [d['rate_hz'] for d in diag_samples if not math.isnan(d['rate_hz'])]
    summary = end['checker']
    results = {
        'robot': robot, 'configured_rate_hz': rate_hz, 'minutes': window / 60.0,
        'goals_sent': goals, 'unreachable_goals': unreachable,
        'rate': {'commands_per_s': commands / window, 'states_per_s': states / window,
                 'controller_rate_hz_mean': float(np.mean(rates)) if rates else math.nan,
                 'controller_rate_hz_min': float(np.min(rates)) if rates else math.nan},
        'jitter_us': {k: float(np.nanmax([d[k] for d in diag_samples])) if diag_samples
                      else math.nan for k in ('jitter_us_p50', 'jitter_us_p99',
                                              'jitter_us_max', 'compute_us_p99',
                                              'latency_us_p99')},
        'rss_kib': {'sim_start': base['rss_sim_kib'], 'sim_end': end['rss_sim_kib'],
                    'controller_start': base['rss_controller_kib'],
                    'controller_end': end['rss_controller_kib']},
        'rss_growth_mib': {
            'sim': (end['rss_sim_kib'] - base['rss_sim_kib']) / 1024.0,
            'controller': (end['rss_controller_kib'] - base['rss_controller_kib']) / 1024.0},
        'commands_checked': summary['commands'], 'violations': summary['violations'],
        'violation_examples': summary['violation_examples'],
        'measured_motion': monitor.summary(),
        'robot_clamps': int(probe.robot_diagnostics.get('clamps', -1)),
        'robot_last_clamp': probe.robot_diagnostics.get('last_clamp', ''),
        'losses': {'commands_expected': states, 'commands_received': commands,
                   'lost': states - commands, 'non_consecutive_pairs': skipped,
                   'reseeds': int(float(final.get('reseeds', 0)))
                   - int(float(base['reseeds']))},
        'crashes': len(crashes), 'crash_details': crashes, 'alive_at_end': alive,
        'final_diagnostics': final, 'series': series,
    }
    results['goals'] = {
        'rate_hz >= 999.5': results['rate']['commands_per_s'] >= GOALS['rate_hz'],
        'rss growth <= 5 MiB': max(results['rss_growth_mib'].values())
        <= GOALS['rss_growth_mib'],
        'violations == 0': results['violations'] == 0,
        'robot speed <= 1.05x limit': max(results['measured_motion']['step_speed_ratio'],
                                          results['measured_motion']['span_speed_ratio'])
        <= GOALS['speed_ratio'],
        'robot clamps == 0': results['robot_clamps'] == 0}
    return results


def table(results):
    """Return the figures of :func:`run` as a text table."""
    r, j, m = results['rate'], results['jitter_us'], results['rss_kib']
    g, loss = results['rss_growth_mib'], results['losses']
    rows = [
        ('robot', f"{results['robot']} at {results['configured_rate_hz']:g} Hz"),
        ('measured for [min]', f"{results['minutes']:.2f}"),
        ('goals sent', f"{results['goals_sent']} ({results['unreachable_goals']} out of "
                       'reach)'),
        ('commands received [1/s]', f"{r['commands_per_s']:.1f}"),
        ('joint_states received [1/s]', f"{r['states_per_s']:.1f}"),
        ('controller rate_hz mean / min', f"{r['controller_rate_hz_mean']:.1f} / "
                                          f"{r['controller_rate_hz_min']:.1f}"),
        ('jitter p50 / p99 / max [us]', f"{j['jitter_us_p50']:.0f} / {j['jitter_us_p99']:.0f}"
                                        f" / {j['jitter_us_max']:.0f}"),
        ('compute p99, latency p99 [us]', f"{j['compute_us_p99']:.0f}, "
                                          f"{j['latency_us_p99']:.0f}"),
        ('RSS sim start -> end [MiB]', f"{m['sim_start'] / 1024:.1f} -> "
                                       f"{m['sim_end'] / 1024:.1f} ({g['sim']:+.2f})"),
        ('RSS controller start -> end [MiB]', f"{m['controller_start'] / 1024:.1f} -> "
                                              f"{m['controller_end'] / 1024:.1f} "
                                              f"({g['controller']:+.2f})"),
        ('commands checked', str(results['commands_checked'])),
        ('limit violations (must be 0)', str(results['violations'])),
        ('robot speed / limit, max', '{reported_speed:.3f} reported; from positions '
                                     '{step_speed_ratio:.3f} between samples, '
                                     '{span_speed_ratio:.3f} over 10 ms'.format(
                                         **results['measured_motion'])),
        ('robot acceleration / limit, max', '{span_acceleration_ratio:.3f} over 10 ms'.format(
            **results['measured_motion'])),
        ('setpoints clamped by the robot (must be 0)', str(results['robot_clamps'])
         + (f" (last: {results['robot_last_clamp']})" if results.get('robot_last_clamp')
            else '')),
        ('commands expected / received / lost', f"{loss['commands_expected']} / "
                                                f"{loss['commands_received']} / "
                                                f"{loss['lost']}"),
        ('non-consecutive command pairs', f"{loss['non_consecutive_pairs']} (re-seeds "
                                          f"{loss['reseeds']})"),
        ('crashes (must be 0)', str(results['crashes'])),
    ]
    for goal, met in results['goals'].items():
        rows.append((f'goal {goal}', 'met' if met else 'NOT met'))
    width = max(len(k) for k, _ in rows)
    lines = [f'{k:<{width}}  {v}' for k, v in rows]
    for example in results['violation_examples']:
        lines.append(f'  violation: {example}')
    return '\n'.join(lines)


def plot(results, path):
    """Write a PNG of the rate and the RSS of both nodes over time; return ``path``."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    s = results['series']
    fig, (ax_rate, ax_rss) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    ax_rate.plot(s['t'], s['commands_per_s'], label='commands received [1/s]')
    ax_rate.plot(s['t'], s['states_per_s'], label='joint_states received [1/s]', alpha=0.7)
    ax_rate.plot(s['t'], s['controller_rate_hz'], label='controller rate_hz (diagnostics)')
    ax_rate.axhline(results['configured_rate_hz'], color='k', lw=0.8, ls='--',
                    label='configured rate')
    ax_rate.set_ylabel('rate [Hz]')
    ax_rate.legend(loc='lower left', fontsize=8)
    ax_rate.set_title(f"bench soak: {results['robot']}, {results['minutes']:.1f} min, "
                      f"{results['violations']} violations")
    for key, name in (('rss_sim_mib', 'sim_robot'), ('rss_controller_mib', 'ik_controller')):
        rss = np.asarray(s[key])
        if rss.size:
            ax_rss.plot(s['t'], rss - rss[0], label=f'{name} (from {rss[0]:.1f} MiB)')
    ax_rss.axhline(GOALS['rss_growth_mib'], color='r', lw=0.8, ls='--', label='goal bound')
    ax_rss.set_ylabel('RSS growth [MiB]')
    ax_rss.set_xlabel('time since the measurement started [s]')
    ax_rss.legend(loc='upper left', fontsize=8)
    fig.tight_layout()
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path

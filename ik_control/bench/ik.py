"""
Position IK solve rate and time, ours next to the peers that install here, TRAC-IK's way.

The method of TRAC-IK's README (v1.4.6) and its ``trac_ik_examples/src/ik_tests.cpp``:

1. ``N`` random joint configurations, uniform inside the joint limits (seeded RNG);
2. forward kinematics of each gives a target pose of the tip in the base frame (by
   pinocchio, the reference implementation, not by any solver under test);
3. every solver solves the full 6-D pose to ``tolerance`` (1e-5: position [m] and
   rotation [rad]) within ``timeout`` (5 ms), seeded from the middle of the joint limits;
4. the solve rate, and the mean time over all samples including failures (a failure
   usually costs the whole timeout); also the median and 99th percentile.

Success is decided here, the same way for every solver: pinocchio's forward kinematics of
the returned joint values is within ``tolerance`` of the target in position
(``|p - p_d|``) and rotation (the angle of ``R_d R^T``), the joint values are inside the
limits (passing one by ``tolerance`` at most), and the call returned within the timeout.
(TRAC-IK counts KDL's per-component twist test ``|e_i| < eps``, up to sqrt(3) looser; KDL
is given ``eps = tol / sqrt(3)`` here so that its converged answers pass the norm test.)

Times are taken with one clock for all solvers: by default this process's CPU time
(``time.process_time``), which other load on the machine does not inflate; ``wall``
uses ``time.perf_counter`` as TRAC-IK does on an idle machine. Solvers:

* ``ik_control``: :class:`~ik_control.ik.position_ik.PositionIk` (Levenberg-Marquardt with
  joint-limit-aware steps, random restarts, all in compiled code);
* ``ik_control-dls``: the same class iterating the DLS velocity law (``method='law'``),
  the solver before the Levenberg-Marquardt one;
* ``kdl``: PyKDL's ``ChainIkSolverPos_NR_JL`` (Newton-Raphson with the pseudoinverse
  velocity solver and joint limits, as TRAC-IK's "KDL" column), on a chain built from the
  pinocchio model, called again from its last result until converged or timed out;
* ``pink``: ``solve_ik`` (QP, daqp) on a ``FrameTask`` with pink's default configuration
  and velocity limits, integrated with ``dt = 1`` until converged or timed out;
* ``ccd``, ``hal``, ``analytic``: the classical methods of Parent's notes
  (:class:`~ik_control.ik.classical.ClassicalIk`): cyclic coordinate descent with random
  restarts; the HAL closed form plus 3 damped least-squares steps; the closed form alone;
* ``ikpy``: ``Chain.from_urdf_file`` on the URDF and ``inverse_kinematics_frame`` with
  ``orientation_mode='all'`` (SciPy least squares); it has no time limit, so answers
  later than the timeout count as failures.

A peer that cannot be imported or set up is reported with the reason, never fatal.

Robots: the bundled ones and arms of example-robot-data by name, any URDF with a base and
a tip frame, and any robot written as a DH file (``config/robots/sam9.yaml``: its
``base_link`` to its ``tool_link``, all joints). A DH file's URDF
(``load_dh_file(path).urdf()``, as the nodes and ``ik_control solve`` read it) is written
to a temporary file for the run, since the peers read URDF files.
"""

import os
import platform
import sys
import time

from ik_control.bench.arms import bench_robot, load_model, make_targets, reaches, ROBOTS
from ik_control.bench.peers import Context, FACTORIES, PeerUnavailable
from ik_control.ik.classical import CLASSICAL_METHODS
from ik_control.validation import InputError
import numpy as np

SOLVERS = ('ik_control', 'ik_control-dls', 'trac_ik-speed', 'trac_ik-distance', 'rtb-lm',
           'rtb-nr', 'kdl', 'pink', 'ikpy')
# Slow peers run on the first samples only (same targets); None = all samples.
PEER_SAMPLES = {'ik_control': None, 'ik_control-dls': None, 'trac_ik-speed': None,
                'trac_ik-distance': 2000, 'rtb-lm': 2000, 'rtb-nr': 2000, 'kdl': 2000,
                'pink': 1000, 'ikpy': 300}
# Published by TRAC-IK (README, v1.4.6, C++), for the table's footnote.
TRAC_IK_PUBLISHED = {'panda': {'KDL': (61.77, 2.14), 'TRAC-IK': (99.70, 0.38)}}
CLOCKS = {'cpu': time.process_time, 'wall': time.perf_counter}
SOLVERS = SOLVERS + CLASSICAL_METHODS  # rows of the same table


# ----------------------------------------------------------------------------- running
class Progress:
    """
    Show a progress bar on a stream (stderr).

    On a terminal one line is redrawn at most every 0.2 s; otherwise (a log file, a
    pipe) a line is written at every tenth of the work.
    """

    def __init__(self, total, stream=None, width=30):
        self.total = max(1, total)
        self.done = 0
        self.stream = sys.stderr if stream is None else stream
        self.width = width
        self.tty = hasattr(self.stream, 'isatty') and self.stream.isatty()
        self._shown = 0.0
        self._tenth = -1

    def update(self, label, count=1):
        """Advance by ``count`` samples; redraw with ``label``."""
        self.done += count
        fraction = min(1.0, self.done / self.total)
        if not self.tty:
            tenth = int(10 * fraction)
            if tenth > self._tenth:
                self._tenth = tenth
                self.stream.write(f'  {100.0 * fraction:5.1f}%  {label}\n')
                self.stream.flush()
            return
        now = time.monotonic()
        if now - self._shown < 0.2 and self.done < self.total:
            return
        self._shown = now
        filled = int(self.width * fraction)
        bar = '#' * filled + '-' * (self.width - filled)
        self.stream.write(f'\r  [{bar}] {100.0 * fraction:5.1f}%  {label:<32}')
        self.stream.flush()

    def close(self):
        """End the progress line."""
        if self.tty:
            self.stream.write('\n')
            self.stream.flush()


def _summary(times_ms, ok, reached, timeout_ms):
    """Return the statistics of one solver on one robot (times in ms; None when undefined)."""
    t = np.asarray(times_ms)
    n = t.size
    if n == 0:
        return {'samples': 0, 'solved': 0, 'rate': None, 'mean_ms': None, 'median_ms': None,
                'p99_ms': None, 'quantiles_ms': None, 'mean_solved_ms': None,
                'over_timeout': 0, 'solved_late': 0, 'rate_any_time': None}
    solved = int(np.sum(ok))
    late = int(np.sum(reached & ~ok))
    p10, p25, p50, p75, p90, p99 = (float(v) for v in np.percentile(t, [10, 25, 50, 75, 90, 99]))
    return {'samples': n, 'solved': solved, 'rate': 100.0 * solved / n,
            'mean_ms': float(np.mean(t)), 'median_ms': p50, 'p99_ms': p99,
            'quantiles_ms': {'p10': p10, 'p25': p25, 'p75': p75, 'p90': p90,
                             'max': float(np.max(t))},
            'mean_solved_ms': float(np.mean(t[ok])) if solved else None,
            'over_timeout': int(np.sum(t > timeout_ms)), 'solved_late': late,
            'rate_any_time': 100.0 * (solved + late) / n}


def count_samples(samples, solvers, peer_samples=None):
    """Return the number of samples each solver runs (slow peers run on the first few)."""
    caps = dict(PEER_SAMPLES, **(peer_samples or {}))
    return {s: samples if caps.get(s) is None else min(samples, caps[s]) for s in solvers}


def run(robot_names=ROBOTS, samples=10000, timeout_ms=5.0, tolerance=1e-5, solvers=SOLVERS,
        seed=0, clock='cpu', peer_samples=None, progress=True, keep_solutions=False):
    """
    Run the benchmark; return a JSON-ready dict (``keep_solutions`` adds every answer).

    ``peer_samples`` overrides :data:`PEER_SAMPLES`; ``progress`` draws a bar on stderr.
    """
    clock_fn = CLOCKS[clock]
    timeout = timeout_ms / 1e3
    counts = count_samples(samples, solvers, peer_samples)
    bar = Progress(len(robot_names) * sum(counts.values())) if progress else None
    results = {'method': 'TRAC-IK: random configurations inside the limits -> FK -> 6-D pose '
                         'IK from the middle of the limits', 'samples': samples,
               'timeout_ms': timeout_ms, 'tolerance': tolerance, 'seed': seed, 'clock': clock,
               'solvers': list(solvers), 'robots': {},
               'created': time.strftime('%Y-%m-%d %H:%M:%S'),
               'trac_ik_published': TRAC_IK_PUBLISHED, 'python': platform.python_version()}
    for item in robot_names:
        robot = bench_robot(item)
        name = robot.name
        if name in results['robots']:
            raise InputError(f"robot '{name}' given twice (give each a name)")
        model = load_model(robot)
        qs, targets = make_targets(model, samples, seed)
        warm = model.frame_placements(model.center + 0.1 * (model.upper - model.center))[0]
        ctx = Context(robot, model, tolerance, timeout, clock_fn, seed, warm)
        entry = {'urdf': os.path.basename(robot.source or robot.urdf), 'base': robot.base,
                 'tip': robot.tip, 'joints': list(model.joint_names),
                 'continuous_joints': list(model.continuous_joints), 'solvers': {}}
        for solver in solvers:
            n = counts[solver]
            if n < 1:
                entry['solvers'][solver] = {'available': False, 'reason': 'not run (0 samples)'}
                continue
            if bar:
                bar.update(f'{name}: {solver} (set-up)', 0)
            try:
                solve = FACTORIES[solver](ctx)
            except Exception as exc:  # noqa: B902 - any peer failure is reported, not fatal
                entry['solvers'][solver] = {'available': False,
                                            'reason': f'{type(exc).__name__}: {exc}'
                                            if not isinstance(exc, PeerUnavailable)
                                            else str(exc)}
                if bar:
                    bar.update(f'{name}: {solver}', n)
                continue
            times = np.empty(n)
            wall = np.empty(n)
            ok = np.zeros(n, dtype=bool)
            reached = np.zeros(n, dtype=bool)
            own = []    # the solver's own success flag, where it returns one
            errors = []
            solutions = []
            for i in range(n):
                t0, w0 = clock_fn(), time.perf_counter()
                try:
                    q = solve(targets[i])
                except Exception as exc:  # noqa: B902 - a peer's crash is its failure
                    if solver.startswith('ik_control'):
                        raise
                    q = None
                    errors.append(f'{type(exc).__name__}: {exc}')
                times[i] = (clock_fn() - t0) * 1e3
                wall[i] = (time.perf_counter() - w0) * 1e3
                if isinstance(q, tuple):
                    q, flag = q
                    own.append(flag)
                reached[i] = q is not None and reaches(model, q, targets[i], tolerance)
                ok[i] = reached[i] and times[i] <= timeout_ms
                if keep_solutions:
                    solutions.append({'index': i, 'success': bool(ok[i]),
                                      'q': None if q is None else [float(v) for v in q]})
                if bar:
                    bar.update(f'{name}: {solver}')
            stats = dict(available=True, **_summary(times, ok, reached, timeout_ms))
            stats['mean_wall_ms'] = float(np.mean(wall))
            stats['own_rate'] = 100.0 * float(np.mean(own)) if len(own) == n else None
            if errors:
                stats['exceptions'] = len(errors)
                stats['first_exception'] = errors[0]
            if keep_solutions:
                stats['solutions'] = solutions
            stats['times_ms'] = times   # for the plot; to_json drops the arrays
            stats['reached'] = reached
            entry['solvers'][solver] = stats
        results['robots'][name] = entry
    if bar:
        bar.close()
    return results


def to_json(results):
    """Return a copy of ``results`` without the per-sample arrays (JSON-ready)."""
    out = dict(results, robots={})
    for name, entry in results['robots'].items():
        solvers = {s: {k: v for k, v in r.items() if k not in ('times_ms', 'reached')}
                   for s, r in entry['solvers'].items()}
        out['robots'][name] = dict(entry, solvers=solvers)
    return out


def goal_lines(results):
    """
    Return per robot: our solve rate and mean time against TRAC-IK's best mode.

    The goal: a solve rate at least TRAC-IK's (common check) and a mean time (the run's
    clock) at most a third of TRAC-IK's.
    """
    out = []
    for name, entry in results['robots'].items():
        ours = entry['solvers'].get('ik_control', {})
        peers = [(s, r) for s, r in entry['solvers'].items()
                 if s.startswith('trac_ik') and r.get('available')]
        if not ours.get('available') or not peers:
            continue
        best_rate = max(r['rate'] for _, r in peers)
        best_mean = min(r['mean_ms'] for _, r in peers)
        rate_ok = ours['rate'] >= best_rate
        time_ok = ours['mean_ms'] <= best_mean / 3.0
        out.append(f"{name}: goal {'met' if rate_ok and time_ok else 'NOT met'}: solve rate "
                   f"{ours['rate']:.2f} % vs TRAC-IK's best {best_rate:.2f} % "
                   f"({'ok' if rate_ok else 'lower'}), mean {ours['mean_ms']:.3f} ms vs "
                   f"TRAC-IK's best {best_mean:.3f} ms / 3 = {best_mean / 3.0:.3f} ms "
                   f"({'ok' if time_ok else 'slower'})")
    return out


def table(results):
    """Return the text table of :func:`run`'s results (one line per robot and solver)."""
    clock = 'process CPU time' if results['clock'] == 'cpu' else 'wall-clock time'
    lines = [f"6-D pose IK, TRAC-IK's method: tolerance {results['tolerance']:g} m and rad, "
             f"timeout {results['timeout_ms']:g} ms, seed = middle of the limits, "
             f'times = {clock}, mean includes failures',
             f"{'robot':<16}{'solver':<16}{'samples':>8}{'solved':>10}{'mean ms':>10}"
             f"{'median ms':>11}{'p99 ms':>9}{'any time':>10}{'own flag':>10}{'wall ms':>9}"]
    notes = []
    for name, entry in results['robots'].items():
        for solver, r in entry['solvers'].items():
            if not r['available']:
                lines.append(f"{name:<16}{solver:<16}  not available: {r['reason']}")
                continue
            own = '-' if r.get('own_rate') is None else f"{r['own_rate']:.2f}%"
            wall = r.get('mean_wall_ms')
            lines.append(f"{name:<16}{solver:<16}{r['samples']:>8d}{r['rate']:>9.2f}%"
                         f"{r['mean_ms']:>10.3f}{r['median_ms']:>11.3f}{r['p99_ms']:>9.3f}"
                         f"{r['rate_any_time']:>9.2f}%{own:>10}"
                         + ('' if wall is None else f'{wall:>9.3f}'))
            if r.get('exceptions'):
                notes.append(f"{name}/{solver}: {r['exceptions']} calls raised "
                             f"({r['first_exception']})")
    for name, published in results.get('trac_ik_published', {}).items():
        if name in results['robots']:
            text = ', '.join(f'{k} {rate:.2f} % / {ms:.2f} ms' for k, (rate, ms)
                             in published.items())
            notes.append(f'{name}: published by TRAC-IK v1.4.6 (C++, its own machine): {text}')
    counts = {s: r['samples'] for entry in results['robots'].values()
              for s, r in entry['solvers'].items() if r['available']}
    notes.append("'any time': share of samples solved when answers after the timeout count "
                 "(ikpy and rtb have no time limit); 'own flag': the solver's own success "
                 "flag (TRAC-IK's return code >= 0, rtb's success), 'solved' is the common "
                 "check; 'wall ms': mean wall-clock time (TRAC-IK runs two threads, and "
                 'its timeout is on the wall clock: on a loaded machine it gives up sooner '
                 'in CPU time)')
    notes.extend(goal_lines(results))
    fewer = sorted(s for s, n in counts.items() if n < results['samples'])
    if fewer:
        notes.append('slow peers ran on the first samples only (same targets): '
                     + ', '.join(f'{s} {counts[s]}' for s in fewer))
    return '\n'.join(lines + ['  ' + n for n in notes])


def plot(results, path):
    """
    Write a PNG: solve rate (top) and the distribution of solve times (bottom) per robot.

    The bottom curves are the share of all samples solved within a time ``t`` (left of the
    dotted timeout line they end at the solve rate; right of it, answers that came too
    late); needs the in-memory results of :func:`run`, not the JSON.
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    names = list(results['robots'])
    fig, axes = plt.subplots(2, len(names), figsize=(max(6.5, 5.2 * len(names)), 9.0),
                             squeeze=False)
    colors = {s: plt.cm.tab10(i) for i, s in enumerate(SOLVERS)}
    timeout = results['timeout_ms']
    for col, name in enumerate(names):
        solvers = {s: r for s, r in results['robots'][name]['solvers'].items()
                   if r['available']}
        ax = axes[0, col]
        labels = list(solvers)
        rates = [solvers[s]['rate'] for s in labels]
        bars = ax.bar(range(len(labels)), rates, color=[colors.get(s) for s in labels])
        for b, rate in zip(bars, rates):
            ax.text(b.get_x() + b.get_width() / 2, rate, f'{rate:.2f}', ha='center',
                    va='bottom', fontsize=8)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=20, fontsize=8)
        ax.set_ylim(0, 105)
        ax.set_ylabel('solved within timeout [%]')
        ax.set_title(name)
        ax = axes[1, col]
        for s in labels:
            times = np.asarray(solvers[s].get('times_ms', []))
            reached = np.asarray(solvers[s].get('reached', np.ones(times.size, dtype=bool)))
            t = np.sort(times[reached])
            if t.size:
                ax.step(t, np.arange(1, t.size + 1) / times.size, where='post',
                        color=colors.get(s), label=f"{s} (mean {solvers[s]['mean_ms']:.3g} ms)")
        ax.axvline(timeout, color='k', ls=':', lw=1)
        ax.set_xscale('log')
        ax.set_ylim(0, 1.02)
        ax.set_xlabel('time per solve [ms]')
        ax.set_ylabel('share of samples solved within the time')
        ax.legend(fontsize=7, loc='upper center', bbox_to_anchor=(0.5, -0.17), ncol=2)
        ax.grid(alpha=0.3)
    fig.suptitle("6-D pose IK, TRAC-IK's method\n(tolerance "
                 f"{results['tolerance']:g}, timeout {timeout:g} ms, mean includes failures)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path

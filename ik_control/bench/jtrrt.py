"""
``ik_control bench jtrrt``: the paper's Table I on this machine, plus RRT-Connect.

For every scenario of ``config/jtrrt_scenarios.yaml`` and every planner (JT-RRT,
Bertram et al.'s baseline, RRT-Connect to an IK goal) the same ``runs`` seeds are
planned (seed ``1000 k + run`` for scenario ``k``), at most ``max_nodes`` nodes and
``time_limit`` [s] each (the paper: 100000 nodes, no time limit). Time is the search's
wall-clock time [s] (IK included for RRT-Connect; smoothing excluded). Counts are
averaged over the successful runs, as in Table I. Every returned path, before and
after shortcut smoothing, is re-checked at a fine resolution (``FINE_RESOLUTION``: no
robot point moves more than 2 mm between checks, 1 mm clearance) and inside the joint
limits; ``verified`` counts the paths that pass. One untimed plan per planner first
loads the compiled kernels.
"""

import time

from ik_control import robots
from ik_control.planning.collision import CollisionChecker
from ik_control.planning.goal import WorkspaceGoal
from ik_control.planning.jt_rrt import RrtSettings, SETTINGS
from ik_control.planning.pipeline import Planner
from ik_control.planning.scenarios import load_scenarios
from ik_control.planning.smoothing import path_length
import numpy as np

METHODS = (('jt', 'JT-RRT'), ('bertram', 'Bertram et al.'), ('rrt_connect', 'RRT-Connect+IK'))
FINE_RESOLUTION = 0.002
# Table I (Vande Weghe et al. 2007; C++/OpenRAVE, Core2Duo 2.3 GHz, 50 runs):
# successes, time [s], nodes, random ext., goal ext., collision checks, joint limits.
PAPER = {
    'bertram': ((50, 1.542, 8583, 138, 138, 22560, None),
                (50, 0.981, 5663, 90, 89, 14254, None),
                (31, 10.926, 53074, 991, 990, 140566, None),
                (1, 5.396, 27198, 421, 416, 75753, None),
                (50, 1.810, 9853, 160, 157, 26133, None),
                (6, 16.011, 56313, 2858, 2832, 129833, None)),
    'jt': ((50, 0.450, 861, 28, 26, 5731, 116), (50, 1.761, 3189, 130, 131, 23768, 532),
           (50, 0.866, 2800, 118, 120, 8671, 290), (50, 2.304, 6856, 322, 324, 23851, 1497),
           (47, 1.840, 7282, 72, 74, 12979, 5559), (50, 4.152, 16854, 989, 979, 36756, 1912)),
}
COUNTS = ('nodes', 'random_extensions', 'goal_extensions', 'collision_checks',
          'joint_limit_hits')


def _within_limits(path, model):
    return bool(np.all(path >= model.lower - 1e-12) and np.all(path <= model.upper + 1e-12))


def run_one(planner, fine, scenario, goal, seed, method):
    """Plan once; return the run's record (Table I counts, lengths, verification)."""
    plan = planner.plan(scenario.start, goal, np.random.default_rng(seed), method)
    r = plan.result
    record = {'seed': seed, 'success': bool(r.success), 'reason': r.reason,
              'seconds': r.stats.seconds}
    record.update({k: int(getattr(r.stats, k)) for k in COUNTS})
    if r.success:
        model = planner.model
        ok = all(fine.path_free(p) and _within_limits(p, model) for p in (r.path, plan.path))
        record.update(path_length=path_length(r.path), smoothed_length=path_length(plan.path),
                      duration=plan.trajectory.duration, position_error=r.position_error,
                      rotation_error=r.rotation_error, verified=bool(ok))
    return record


def summarize(records):
    """Successes, median/mean time and mean counts over the successful runs."""
    good = [r for r in records if r['success']]
    out = {'runs': len(records), 'successes': len(good),
           'verified': sum(1 for r in good if r['verified'])}
    if not good:
        return out
    seconds = np.array([r['seconds'] for r in good])
    out.update(median_seconds=float(np.median(seconds)), mean_seconds=float(seconds.mean()))
    for key in COUNTS + ('path_length', 'smoothed_length', 'duration'):
        out[key] = float(np.mean([r[key] for r in good]))
    return out


def run(runs=50, threshold=0.15, orientation=False, time_limit=10.0, max_nodes=100000,
        settings='ours', methods=None, scenarios=None, progress=None, **overrides):
    """
    Run the benchmark with the planners' ``settings``; returns a JSON-ready dict.

    ``settings``: ``'paper'`` (Vande Weghe et al.'s own, :data:`PAPER_SETTINGS`) or
    ``'ours'`` (:data:`OUR_SETTINGS`); ``overrides`` (``p_goal``, ``jt_step``,
    ``min_progress``, ``escape_steps``, ...) replace single values of them.
    """
    model = robots.robot('wam')
    methods = [m for m, _ in METHODS if methods is None or m in methods]
    chosen = {**SETTINGS[settings], **{k: v for k, v in overrides.items() if v is not None}}
    planner_settings = RrtSettings(time_limit=time_limit, max_nodes=max_nodes, **chosen)
    results = {'runs': runs, 'threshold': threshold, 'orientation': orientation,
               'time_limit': time_limit, 'max_nodes': max_nodes, 'settings': settings,
               **chosen, 'fine_resolution': FINE_RESOLUTION, 'scenarios': []}
    t0 = time.perf_counter()
    for k, scenario in enumerate(load_scenarios()):
        if scenarios and scenario.name not in scenarios:
            continue
        checker = CollisionChecker(model, scenario.obstacles)
        fine = CollisionChecker(model, scenario.obstacles, resolution=FINE_RESOLUTION)
        planner = Planner(model, checker, planner_settings)
        if not results['scenarios']:  # load (or compile) the kernels outside the timed runs
            for method in methods:
                planner.plan(scenario.start, WorkspaceGoal(scenario.goal_position),
                             np.random.default_rng(0), method)
        goal = WorkspaceGoal(scenario.goal_position,
                             scenario.goal_rotation if orientation else None,
                             threshold=threshold)
        entry = {'index': k + 1, 'name': scenario.name, 'description': scenario.description,
                 'methods': {}}
        for method in methods:
            records = []
            for i in range(runs):
                records.append(run_one(planner, fine, scenario, goal, 1000 * (k + 1) + i,
                                       method))
                if progress and ((i + 1) % 10 == 0 or i + 1 == runs):
                    ok = sum(r['success'] for r in records)
                    progress(f'scenario {k + 1} {scenario.name} {method}: {i + 1}/{runs} runs, '
                             f'{ok} solved ({time.perf_counter() - t0:.0f} s)')
            entry['methods'][method] = {'summary': summarize(records), 'records': records}
        results['scenarios'].append(entry)
    return results


def _fmt(value, spec):
    width = int(spec.split('.')[0].rstrip('df') or 0)
    return '-'.rjust(width) if value is None else format(value, spec)


def table(results):
    """Table I layout: one row per scenario and planner, the paper's rows beside ours."""
    head = (f"{'planner':<16}{'sc':>3}{'solved':>8}{'median s':>10}{'mean s':>9}{'nodes':>8}"
            f"{'rand ext':>9}{'goal ext':>9}{'coll chk':>10}{'jnt lim':>8}{'path rad':>9}"
            f"{'smooth':>8}{'verif':>6}")
    which = {'paper': "the paper's settings", 'ours': 'our settings'}.get(
        results.get('settings'), 'settings')
    lines = [f"JT-RRT bench, {which}: {results['runs']} runs per planner, goal threshold "
             f"{results['threshold']} m{' + orientation' if results['orientation'] else ''}, "
             f"limits {results['max_nodes']} nodes / {results['time_limit']} s, JT-RRT "
             f"p_goal {results.get('p_goal')}, jt_step {results.get('jt_step')} rad, "
             f"min_progress {results['min_progress']} m, escape_steps "
             f"{results.get('escape_steps', 0)}; Bertram p_goal "
             f"{results.get('bertram_p_goal')}; paper rows (2007, C++) in brackets",
             head, '-' * len(head)]
    names = dict(METHODS)
    for entry in results['scenarios']:
        k = entry['index']
        for method, data in entry['methods'].items():
            s = data['summary']
            lines.append(
                f"{names[method]:<16}{k:>3}{s['successes']:>5}/{s['runs']:<2}"
                f"{_fmt(s.get('median_seconds'), '10.3f')}{_fmt(s.get('mean_seconds'), '9.3f')}"
                f"{_fmt(s.get('nodes'), '8.0f')}{_fmt(s.get('random_extensions'), '9.0f')}"
                f"{_fmt(s.get('goal_extensions'), '9.0f')}"
                f"{_fmt(s.get('collision_checks'), '10.0f')}"
                f"{_fmt(s.get('joint_limit_hits') if method == 'jt' else None, '8.0f')}"
                f"{_fmt(s.get('path_length'), '9.2f')}{_fmt(s.get('smoothed_length'), '8.2f')}"
                f"{s['verified']:>6}")
            paper = PAPER.get(method)
            if paper and k <= len(paper) and not results['orientation']:
                p = paper[k - 1]
                lines.append(f"{'  [paper]':<16}{k:>3}{p[0]:>5}/50 {'':>10}{p[1]:9.3f}"
                             f"{p[2]:8d}{p[3]:9d}{p[4]:9d}{p[5]:10d}{_fmt(p[6], '8d')}")
        lines.append('')
    lines.append(recheck_line(results))
    return '\n'.join(lines)


def recheck_line(results):
    """One line: how many returned paths passed the fine re-check, and why runs failed."""
    returned = verified = failed = 0
    reasons = {}
    for entry in results['scenarios']:
        for data in entry['methods'].values():
            for r in data['records']:
                if r['success']:
                    returned += 1
                    verified += bool(r['verified'])
                else:
                    failed += 1
                    reasons[r['reason']] = reasons.get(r['reason'], 0) + 1
    why = ', '.join(f'{n} {reason}' for reason, n in sorted(reasons.items()))
    mm = results['fine_resolution'] * 1000
    return (f're-check at {mm:g} mm: {verified} of {returned} returned paths (raw and '
            f'smoothed) collision-free and inside the joint limits; {failed} runs returned no '
            f"path{f' ({why})' if why else ''}")


def plot(results, path):
    """Median search time per scenario and planner (log scale), the paper's as markers."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4.5))
    scen = results['scenarios']
    x = np.arange(len(scen))
    width = 0.8 / max(1, len(METHODS))
    colours = {'jt': 'tab:blue', 'bertram': 'tab:orange', 'rrt_connect': 'tab:green'}
    for j, (method, label) in enumerate(METHODS):
        meds, solved = [], []
        for entry in scen:
            s = entry['methods'].get(method, {}).get('summary', {})
            meds.append(s.get('median_seconds', np.nan))
            solved.append(f"{s.get('successes', 0)}/{s.get('runs', 0)}")
        if all(np.isnan(meds)):
            continue
        pos = x + (j - 1) * width
        ax.bar(pos, meds, width, label=f'{label} (median)', color=colours[method])
        for xp, m, s in zip(pos, meds, solved):
            if np.isfinite(m):
                ax.text(xp, m, s, ha='center', va='bottom', fontsize=7, rotation=90)
        if method in PAPER and not results['orientation']:
            ax.plot(pos, [PAPER[method][e['index'] - 1][1] for e in scen], 'k_', ms=14,
                    mew=2, label='paper, mean time' if j == 0 else None)
    ax.set_xticks(x, [f"{e['index']}: {e['name']}" for e in scen], rotation=20, fontsize=8)
    ax.set_yscale('log')
    ax.set_ylabel('search time [s]')
    ax.set_title(f"WAM planning, goal within {results['threshold']} m"
                 f"{' + orientation' if results['orientation'] else ''}, "
                 f"{results['runs']} seeds (labels: solved)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path

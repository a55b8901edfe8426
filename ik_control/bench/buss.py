"""
Buss's experiment (sec. 8): Y and double-Y shapes tracking moving targets, one update a step.

The targets move on smooth closed curves (Lissajous figures) around the effectors' rest
positions, with an amplitude that carries them in and out of reach; each simulation step
applies exactly one update of the law. For every law we report the tracking error over
the cycle (per step the mean effector distance to its target: its mean, RMS and worst;
and the mean over the steps with every target in reach), the count of joint jumps (updates
that change some joint by more than :data:`JUMP_RAD`), an oscillation measure (the mean
absolute second difference of the joint angles [rad]), and the microseconds per update,
next to the run times Buss publishes (:data:`PUBLISHED_US`).

ClampMag's ``D_max`` is set as Buss does, "approximately half the length of a typical
link" (sec. 2). DLS and DLS + ClampMag each get the smallest damping at which oscillation
out of reach is rare ("we had to raise the damping constant until unwanted oscillation
became very rare", sec. 8); SDLS runs with and without ClampMag.

A second run makes targets jump: each effector's target jumps at its own times, between
reachable and out-of-reach points. DLS + ClampMag runs with the fixed ``D_max`` and with
Buss's adaptive ``D_max,i`` (sec. 2: infinite right after the jump, then ``beta_i + D_max``
with ``beta_i`` the last update's progress), reset per end effector when its own target
jumps, and, for comparison, reset for all effectors at every jump.

The findings checked (:func:`checks`): the pseudoinverse oscillates badly out of reach,
ClampMag lets DLS run with less damping (both shapes), DLS + ClampMag tracks at least as
well as tuned DLS, the transpose is poor on the double-Y; each is reported as reproduced
or not, with its figures.
"""

from dataclasses import dataclass
import time

from ik_control.ik.solver import SolverConfig, VelocitySolver
from ik_control.kinematics import RobotModel
from ik_control.kinematics.dh import double_y_shape_urdf, y_shape_urdf
import numpy as np


@dataclass(frozen=True)
class Law:
    """A named law with its settings."""

    name: str
    config: SolverConfig


# No clamping or adaptive damping unless a law asks for it: Buss's plain methods.
PLAIN = {'adaptive_damping': False, 'max_joint_step': 0.0, 'clamp_error': 0.0,
         'clamp_error_rotation': 0.0}
DAMPING_GRID = tuple(np.round(np.arange(0.05, 0.801, 0.05), 2))
D_MAX_LINKS = 0.5       # ClampMag D_max in link lengths: "approximately half" (Buss sec. 2)
D_MAX_SMALL_LINKS = 0.2  # a tighter D_max, also run to show how the finding depends on it
PERIOD = 600            # steps of one cycle of the target curves; figures over the last one
OSCILLATION_OK = 0.002  # "unwanted oscillation very rare": mean |second difference| [rad]
JUMP_RAD = 0.1          # an update changing some joint by more than this is a jump [rad]
# Buss sec. 8 (custom C++, 2.8 GHz Pentium) [us per update]; DLS + ClampMag "very close"
# to DLS; the pseudoinverse and SDLS times are not published in this paper.
PUBLISHED_US = {'y': {'transpose': 1.1, 'dls': 2.2},
                'double_y': {'transpose': 6.5, 'dls': 18.5}}


def fixed_laws(d_max):
    """Laws without a damping constant to tune (SDLS with and without ClampMag ``d_max``)."""
    return (Law('transpose', SolverConfig(method='transpose', **PLAIN)),
            Law('pseudoinverse', SolverConfig(method='pseudoinverse', **PLAIN)),
            Law('sdls', SolverConfig(method='sdls', **PLAIN)),
            Law('sdls+clampmag', SolverConfig(method='sdls', **{**PLAIN,
                                                                'clamp_error': d_max})))


def damped_law(damping, clamp, d_max=0.0, adaptive=False):
    """DLS with damping ``damping`` [m], with ClampMag ``d_max`` [m] when ``clamp``."""
    name = f"dls{'+clampmag' if clamp else ''}{' adaptive' if adaptive else ''}"
    return Law(name, SolverConfig(method='dls', **{**PLAIN, 'damping': damping,
                                                   'clamp_error': d_max if clamp else 0.0,
                                                   'adaptive_clamp': adaptive}))


def shape(name):
    """(model, link length) of ``'y'`` or ``'double_y'``."""
    if name == 'y':
        link = 0.5
        urdf, effectors = y_shape_urdf(link), ('e1', 'e2')
    elif name == 'double_y':
        link = 0.4
        urdf, effectors = double_y_shape_urdf(link), ('e1', 'e2', 'e3', 'e4')
    else:
        raise ValueError(f"unknown shape '{name}'")
    model = RobotModel.from_urdf(urdf, end_effectors=[(e, 'position') for e in effectors])
    return model, link


def target_paths(model, steps, period=PERIOD, overreach=1.1, inner=0.75):
    """
    Target positions (steps x effectors x 3) on Lissajous curves, and the reach radii.

    Each effector's target circles a point inside the workspace (its rest position pulled
    toward the base) on a curve whose far side lies ``overreach`` times beyond the
    effector's reach (the largest distance from the base seen at random configurations),
    so every period carries each target out of reach and back.
    """
    rest = model.frame_placements(np.zeros(model.nq))[:, :3, 3]
    reach = _reach(model)
    t = np.arange(steps, dtype=float)
    w = 2 * np.pi / period
    paths = np.empty((steps, len(rest), 3))
    for i, p in enumerate(rest):
        direction = p / np.linalg.norm(p)
        centre = inner * reach[i] * direction
        radius = (overreach - inner) * reach[i]
        side = np.cross(direction, [0.0, 1.0, 0.0])
        side = side / np.linalg.norm(side) if np.linalg.norm(side) > 1e-6 else np.array([1., 0, 0])
        up = np.cross(side, direction)
        phase = 1.3 * i
        a = np.cos(w * t + phase)
        b = np.sin(2 * w * t + phase)
        c = np.sin(w * t + phase)
        paths[:, i] = (centre[None] + radius * (a[:, None] * direction[None]
                                                + 0.5 * b[:, None] * side[None]
                                                + 0.5 * c[:, None] * up[None]))
    return paths, reach


def _reach(model, samples=4000, seed=0):
    """Largest distance of each effector from the base seen at random configurations [m]."""
    rng = np.random.default_rng(seed)
    dists = np.zeros(len(model.end_effectors))
    for q in model.random_configurations(samples, rng):
        p = model.frame_placements(q)[:, :3, 3]
        dists = np.maximum(dists, np.linalg.norm(p, axis=1))
    return dists


def jump_paths(model, steps, reach, hold=100, seed=0, overreach=1.3):
    """
    Targets that jump (steps x effectors x 3), and where each effector's target jumped.

    Effector ``i``'s target holds still for ``hold`` steps, its jumps offset by
    ``i * hold / effectors`` steps from the others'; it jumps alternately to the position
    the effector has at a random configuration (reachable) and to ``overreach`` times its
    reach in a random direction of the upper half space (out of reach).
    """
    rng = np.random.default_rng(seed)
    ne = len(model.end_effectors)
    paths = np.empty((steps, ne, 3))
    jumped = np.zeros((steps, ne), dtype=bool)
    for i in range(ne):
        count = 0
        for k in range(steps):
            if k == 0 or (k + i * hold // ne) % hold == 0:
                if count % 2 == 0:
                    q = model.random_configurations(1, rng)[0]
                    point = model.frame_placements(q)[i, :3, 3]
                else:
                    d = rng.normal(size=3)
                    d[2] = abs(d[2])
                    point = overreach * reach[i] * d / np.linalg.norm(d)
                count += 1
                jumped[k, i] = k > 0
            paths[k, i] = point
    return paths, jumped


def run_law(model, law, paths, jumped=None, reset_all=False, q0=None):
    """
    Simulate one law along ``paths``; return (steps x effectors errors [m], joints, us).

    ``jumped`` (steps x effectors) marks target jumps: the solver's adaptive ClampMag bound
    is reset for the effectors that jumped (for all with ``reset_all``); ``q0``: the start
    configuration [rad] (default: all zero).
    """
    solver = VelocitySolver(model, law.config)
    steps, ne = paths.shape[:2]
    targets = np.tile(np.eye(4), (ne, 1, 1))
    q = np.zeros(model.nq) if q0 is None else np.array(q0, dtype=float)
    err = np.empty((steps, ne))
    qs = np.empty((steps, model.nq))
    for k in range(steps):
        targets[:, :3, 3] = paths[k]
        if jumped is not None and jumped[k].any():
            solver.reset_targets(None if reset_all else np.flatnonzero(jumped[k]))
        dq = solver.step(q, targets)
        err[k] = solver.err_pos
        q = q + dq
        qs[k] = q
    # timing: the same update repeated at a fixed state, after warm-up
    targets[:, :3, 3] = paths[steps // 3]
    reps = 2000
    t0 = time.perf_counter()
    for _ in range(reps):
        solver.step(q, targets)
    us = (time.perf_counter() - t0) / reps * 1e6
    return err, qs, us


def tracking_figures(err, qs, out_of_reach):
    """
    Return the figures of one run: errors [m], jumps, oscillation [rad].

    ``err`` (steps x effectors) distances to the targets; per step their mean ``e_k``:
    mean, RMS and worst of ``e_k`` over the cycle, mean over the steps with every target
    in reach; ``jumps``: updates changing some joint by more than :data:`JUMP_RAD`;
    oscillation: mean ``|q_{k+1} - 2 q_k + q_{k-1}|`` (all steps, and out of reach).
    """
    e = err.mean(axis=1)
    step = np.abs(np.diff(qs, axis=0)).max(axis=1)
    acc = np.abs(np.diff(qs, n=2, axis=0))
    return {'mean_error': float(e.mean()), 'rms_error': float(np.sqrt(np.mean(e * e))),
            'worst_error': float(e.max()),
            'mean_error_in_reach': float(e[~out_of_reach].mean()) if np.any(~out_of_reach)
            else None,
            'jumps': int(np.sum(step > JUMP_RAD)),
            'oscillation': float(acc.mean()),
            'oscillation_out_of_reach': float(acc[out_of_reach[2:]].mean())
            if np.any(out_of_reach[2:]) else 0.0}


def measured_steps(steps):
    """Return the steps the figures cover: the last cycle (after the start-up transient)."""
    return slice(steps - PERIOD if steps >= 2 * PERIOD else steps // 2, steps)


def _measure(model, law, paths, out_of_reach, jumped=None, reset_all=False):
    """Run ``law``; figures over the last cycle, or from the first jump with ``jumped``."""
    err, qs, us = run_law(model, law, paths, jumped, reset_all)
    out = {'damping': law.config.damping if law.config.method == 'dls' else None,
           'd_max': law.config.clamp_error or None}
    window = measured_steps(len(err))
    if jumped is not None:
        window = slice(int(np.argmax(jumped.any(axis=1))), len(err))
    out.update(tracking_figures(err[window], qs[window], out_of_reach[window]))
    out.update(us_per_update=us, error_series=err.mean(axis=1).tolist())
    return out


def _tune(model, clamp, paths, out_of_reach, d_max):
    """Buss's procedure: the smallest damping whose oscillation out of reach is rare."""
    sweep = {}
    for lam in DAMPING_GRID:
        r = _measure(model, damped_law(lam, clamp, d_max), paths, out_of_reach)
        sweep[float(lam)] = r
        if r['oscillation_out_of_reach'] < OSCILLATION_OK:
            return r, sweep
    return r, sweep


def run(steps=1200, shapes=('y', 'double_y'), progress=None):
    """
    Run every law on every shape; returns a JSON-ready dict of results and series.

    DLS and DLS+ClampMag each get the smallest damping from ``DAMPING_GRID`` at which
    oscillation out of reach stays under ``OSCILLATION_OK`` ("we had to raise the damping
    constant until unwanted oscillation became very rare", Buss sec. 8); plain DLS is also
    run at the damping DLS+ClampMag needed, to show what the clamp buys. Then the jumping
    targets (:func:`jump_paths`) with DLS + ClampMag at its tuned damping: fixed
    ``D_max``, adaptive ``D_max,i`` reset per effector, and reset for all.
    """
    results = {'steps': steps, 'd_max_links': D_MAX_LINKS, 'oscillation_ok': OSCILLATION_OK,
               'jump_rad': JUMP_RAD, 'published_us': PUBLISHED_US, 'shapes': {}}
    for shape_name in shapes:
        model, link = shape(shape_name)
        d_max = D_MAX_LINKS * link
        paths, reach = target_paths(model, steps)
        oor = np.any(np.linalg.norm(paths, axis=2) > reach[None], axis=1)
        entry = {'joints': model.nq, 'effectors': len(model.end_effectors),
                 'jacobian': f'{model.task_dim}x{model.nq}', 'link': link, 'd_max': d_max,
                 'out_of_reach_fraction': float(oor.mean()), 'laws': {}}
        for law in fixed_laws(d_max):
            entry['laws'][law.name] = _measure(model, law, paths, oor)
            if progress:
                progress(f'{shape_name}: {law.name}')
        entry['laws']['dls'], sweep = _tune(model, False, paths, oor, d_max)
        entry['laws']['dls+clampmag'], sweep_c = _tune(model, True, paths, oor, d_max)
        lam_c = entry['laws']['dls+clampmag']['damping']
        entry['laws']['dls@clamp_lambda'] = sweep.get(lam_c) or _measure(
            model, damped_law(lam_c, False), paths, oor)
        small = D_MAX_SMALL_LINKS * link
        entry['laws'][f'dls+clampmag@{small:.2f}m'], _ = _tune(model, True, paths, oor, small)
        entry['damping_sweep'] = {
            'dls': {k: {x: v[x] for x in ('mean_error', 'oscillation_out_of_reach')}
                    for k, v in sweep.items()},
            'dls+clampmag': {k: {x: v[x] for x in ('mean_error', 'oscillation_out_of_reach')}
                             for k, v in sweep_c.items()}}
        if progress:
            progress(f'{shape_name}: dls tuned to lambda {entry["laws"]["dls"]["damping"]}, '
                     f'dls+clampmag to {lam_c}')
        jpaths, jumped = jump_paths(model, steps, reach)
        joor = np.any(np.linalg.norm(jpaths, axis=2) > reach[None], axis=1)
        entry['jumping'] = {
            'jumps_of_targets': int(jumped.sum()),
            'laws': {
                'dls+clampmag': _measure(model, damped_law(lam_c, True, d_max), jpaths, joor,
                                         jumped),
                'adaptive, own reset': _measure(model, damped_law(lam_c, True, d_max, True),
                                                jpaths, joor, jumped),
                'adaptive, reset all': _measure(model, damped_law(lam_c, True, d_max, True),
                                                jpaths, joor, jumped, reset_all=True)}}
        if progress:
            progress(f'{shape_name}: jumping targets')
        results['shapes'][shape_name] = entry
    return results


def checks(results):
    """Return the paper's findings as (claim with its figures, reproduced) pairs."""
    out = []
    for name, entry in results['shapes'].items():
        lw = entry['laws']
        clamp, dls = lw['dls+clampmag'], lw['dls']
        pinv = lw['pseudoinverse']
        out.append((f'{name}: pseudoinverse oscillates out of reach (10x DLS+ClampMag: '
                    f"{pinv['oscillation_out_of_reach']:.4f} vs "
                    f"{clamp['oscillation_out_of_reach']:.4f} rad)",
                    pinv['oscillation_out_of_reach'] > 10 * clamp['oscillation_out_of_reach']))
        out.append((f"{name}: ClampMag (D_max {entry['d_max']:.2f} m, half a link) lets DLS "
                    f"run with less damping ({clamp['damping']} vs {dls['damping']} m)",
                    clamp['damping'] < dls['damping']))
        for law, r in lw.items():
            if law.startswith('dls+clampmag@'):
                out.append((f"{name}: ClampMag (D_max {r['d_max']:.2f} m, a fifth of a link) "
                            f"lets DLS run with less damping ({r['damping']} vs "
                            f"{dls['damping']} m)", r['damping'] < dls['damping']))
        out.append((f'{name}: DLS+ClampMag tracks at least as well as tuned DLS (mean '
                    f"{clamp['mean_error']:.4f} vs {dls['mean_error']:.4f} m)",
                    clamp['mean_error'] <= dls['mean_error']))
        jumping = entry.get('jumping', {}).get('laws')
        if jumping:
            fixed, own = jumping['dls+clampmag'], jumping['adaptive, own reset']
            every = jumping['adaptive, reset all']
            out.append((f'{name}: after target jumps, adaptive D_max,i tracks reachable '
                        'targets better than a fixed D_max (mean in reach '
                        f"{own['mean_error_in_reach']:.4f} vs "
                        f"{fixed['mean_error_in_reach']:.4f} m)",
                        own['mean_error_in_reach'] < fixed['mean_error_in_reach']))
            out.append((f'{name}: resetting D_max,i only for the effector whose target '
                        'jumped oscillates less than resetting all '
                        f"({own['oscillation_out_of_reach']:.4f} vs "
                        f"{every['oscillation_out_of_reach']:.4f} rad)",
                        own['oscillation_out_of_reach'] < every['oscillation_out_of_reach']))
    dy = results['shapes'].get('double_y')
    if dy:
        t, c = dy['laws']['transpose'], dy['laws']['dls+clampmag']
        out.append(('double_y: the transpose tracks worse than DLS+ClampMag (mean '
                    f"{t['mean_error']:.4f} vs {c['mean_error']:.4f} m)",
                    t['mean_error'] > 1.5 * c['mean_error']))
    return out


def table(results):
    """Text table of the results."""
    lines = [f"D_max = {results['d_max_links']} link; jumps: updates moving a joint by more "
             f"than {results['jump_rad']} rad; errors: per step the mean effector distance, "
             f'over the last cycle ({PERIOD} steps); Buss us: published (C++, 2.8 GHz '
             'Pentium)']
    head = (f"  {'law':<22}{'lambda m':>9}{'mean err':>10}{'RMS err':>9}{'worst':>8}"
            f"{'in reach':>10}{'jumps':>7}{'osc out':>9}{'us/update':>10}{'Buss us':>9}")
    for name, entry in results['shapes'].items():
        lines.append(f"{name}: {entry['joints']} joints, {entry['effectors']} effectors, "
                     f"J {entry['jacobian']}, link {entry['link']} m, D_max "
                     f"{entry['d_max']:.2f} m, targets out of reach "
                     f"{100 * entry['out_of_reach_fraction']:.0f} % of steps")
        lines.append(head)
        published = results['published_us'].get(name, {})
        for law, r in entry['laws'].items():
            lines.append(_row(law, r, published.get(law)))
        jumping = entry.get('jumping')
        if jumping:
            lines.append(f"  jumping targets ({jumping['jumps_of_targets']} jumps, each "
                         'effector at its own times), DLS + ClampMag at its tuned lambda:')
            for law, r in jumping['laws'].items():
                lines.append(_row(law, r, None))
    return '\n'.join(lines)


def _row(law, r, published):
    lam = '' if r['damping'] is None else f"{r['damping']:.2f}"
    in_reach = '' if r['mean_error_in_reach'] is None else f"{r['mean_error_in_reach']:.4f}"
    buss = '' if published is None else f'{published:.1f}'
    return (f"  {law:<22}{lam:>9}{r['mean_error']:>10.4f}{r['rms_error']:>9.4f}"
            f"{r['worst_error']:>8.3f}{in_reach:>10}{r['jumps']:>7d}"
            f"{r['oscillation_out_of_reach']:>9.5f}{r['us_per_update']:>10.2f}{buss:>9}")


def plot(results, path):
    """
    PNG per shape: tracking error over time (left), microseconds per update (right).

    The right panel sets our per-update times beside those Buss publishes (sec. 8).
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    shapes = list(results['shapes'])
    fig, axes = plt.subplots(len(shapes), 2, figsize=(15, 3.8 * len(shapes)), squeeze=False,
                             gridspec_kw={'width_ratios': [2.2, 1]})
    for row, name in enumerate(shapes):
        entry = results['shapes'][name]
        ax = axes[row, 0]
        for law, r in entry['laws'].items():
            ax.plot(r['error_series'], label=law, lw=1)
        ax.set_title(f'Buss {name}: mean effector distance to target (D_max '
                     f"{entry['d_max']:.2f} m)")
        ax.set_xlabel('step (one update per step)')
        ax.set_ylabel('error [m]')
        ax.set_yscale('log')
        ax.legend(loc='upper right', fontsize=7, ncol=2)
        ax = axes[row, 1]
        laws = list(entry['laws'])
        ours = [entry['laws'][law]['us_per_update'] for law in laws]
        published = results['published_us'].get(name, {})
        x = np.arange(len(laws))
        ax.barh(x - 0.2, ours, height=0.4, label='ik_control (this machine)')
        ax.barh(x + 0.2, [published.get(law, 0.0) for law in laws], height=0.4,
                label='Buss, published (C++, 2.8 GHz Pentium)')
        ax.set_yticks(x)
        ax.set_yticklabels(laws, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel('microseconds per update')
        ax.set_title(f'{name}: run time per update')
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)

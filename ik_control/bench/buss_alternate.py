"""
Buss's alternate Jacobian against the usual one (sec. 4, "An alternate Jacobian").

The alternate Jacobian takes each entry ``ds_i/dtheta_j`` with the target position
``t_i`` in place of the end effector's ``s_i``, as if the target were attached to the
effector's link: the targets are moved towards the effectors rather than the effectors
towards the targets. Buss's two claims, checked here on the Y shape (sec. 8) with DLS +
ClampMag (``D_max`` half a link, as in sec. 2) at one damping for both Jacobians: the
damping ``bench buss`` tunes for the usual one, Buss's procedure (the smallest at which
oscillation out of reach is rare); ``VelocitySolver`` with ``alternate_jacobian``:

1. "this alternate can improve on the usual Jacobian in terms of reducing oscillation or
   overshoot when target positions are too far away to be reached": measured on Buss's
   own moving targets (:func:`~ik_control.bench.buss.target_paths`, in and out of reach):
   the oscillation (mean ``|q_{k+1} - 2 q_k + q_{k-1}|``) over the steps with a target out
   of reach; and on targets held still 1.5 times the reach from the base, 0.5 rad off
   each effector's rest direction, from the open (straight) arm: the overshoot (how far
   the error rises again after its lowest value so far) and the oscillation of the last
   half of the run;
2. "the alternative Jacobian can lead to 'jerky' behavior ... particularly ... when the
   multibody's links are folded back on each other trying to reach a close target
   position": from a folded configuration (every joint at +-2.4 rad) to targets a fifth of
   the reach from the base, held still: the largest joint change in one update, the
   updates changing a joint by more than :data:`~ik_control.bench.buss.JUMP_RAD`, and
   the oscillation.

Each claim is reported as holding or not, with its figures (:func:`checks`): it holds
when the alternate Jacobian changes the figure by at least :data:`MARGIN` of the usual
one's in the claimed direction.
"""

from dataclasses import replace

from ik_control.bench.buss import (_tune as tune_damping, D_MAX_LINKS, damped_law, JUMP_RAD,
                                   Law, measured_steps, run_law, shape, target_paths,
                                   tracking_figures)
import numpy as np

MARGIN = 0.1   # a claim holds on a change of at least this fraction of the usual figure
STEPS = 1200   # updates per run (the moving targets: two cycles)
FAR = 1.5      # still targets this many times the reach from the base
CLOSE = 0.2    # folded case: targets this fraction of the reach from the base
FOLD = 2.4     # folded case: every joint at +-FOLD [rad], alternating in sign
TURN = 0.5     # far case: the targets' direction off the rest direction [rad]


def laws(damping, d_max):
    """Return the usual and the alternate Jacobian: DLS ``damping``, ClampMag ``d_max`` [m]."""
    usual = damped_law(damping, True, d_max)
    alternate = Law(f'{usual.name}, alternate', replace(usual.config, alternate_jacobian=True))
    return usual, alternate


def overshoot(err):
    """Largest rise of the mean error above its lowest value so far [m] (0: monotone)."""
    e = err.mean(axis=1)
    return float(np.max(e - np.minimum.accumulate(e)))


def _still(model, reach, scale, q0, steps, turn=0.0):
    """
    Targets held at ``scale`` times each effector's reach from the base.

    Along the effector's rest direction turned by ``turn`` [rad] about the base's z axis.
    """
    rest = model.frame_placements(np.zeros(model.nq))[:, :3, 3]
    c, s = np.cos(turn), np.sin(turn)
    rest = rest @ np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])
    direction = rest / np.linalg.norm(rest, axis=1, keepdims=True)
    return np.repeat((scale * reach[:, None] * direction)[None], steps, axis=0), q0


def run(steps=STEPS, damping=None, progress=None):
    """
    Run both Jacobians on the three cases of the module docstring; return the figures.

    ``damping`` [m]: DLS's (default: tuned by Buss's procedure, as ``bench buss`` does).
    """
    model, link = shape('y')
    paths, reach = target_paths(model, steps)
    oor = np.any(np.linalg.norm(paths, axis=2) > reach[None], axis=1)
    if damping is None:
        damping = tune_damping(model, True, paths, oor, D_MAX_LINKS * link)[0]['damping']
    folded = FOLD * np.where(np.arange(model.nq) % 2 == 0, 1.0, -1.0)
    cases = {'moving': (paths, np.zeros(model.nq)),
             'far, open': _still(model, reach, FAR, np.zeros(model.nq), steps, TURN),
             'close, folded': _still(model, reach, CLOSE, folded, steps)}
    results = {'shape': 'y', 'damping': damping, 'd_max': D_MAX_LINKS * link, 'steps': steps,
               'far': FAR, 'close': CLOSE,
               'fold_rad': FOLD, 'jump_rad': JUMP_RAD, 'cases': {}}
    for case, (targets, q0) in cases.items():
        out = {}
        for law in laws(damping, D_MAX_LINKS * link):
            err, qs, _ = run_law(model, law, targets, q0=q0)
            window = measured_steps(steps) if case == 'moving' else slice(steps // 2, steps)
            still_oor = np.full(steps, case == 'far, open')
            figures = tracking_figures(err[window], qs[window],
                                       oor[window] if case == 'moving' else still_oor[window])
            step = np.abs(np.diff(np.vstack([q0, qs]), axis=0)).max(axis=1)
            figures.update(overshoot=overshoot(err), max_step=float(step.max()),
                           jumps_all=int(np.sum(step > JUMP_RAD)),
                           final_error=float(err[-1].mean()))
            out[law.name] = figures
            if progress:
                progress(f'alternate Jacobian: {case}, {law.name}')
        results['cases'][case] = out
    return results


def checks(results):
    """Buss's two claims (module docstring): ``[(claim, holds, figures)]``."""
    usual, alternate = (law.name for law in laws(results['damping'], results['d_max']))
    moving, far, folded = (results['cases'][c] for c in ('moving', 'far, open',
                                                         'close, folded'))
    osc_u, osc_a = (moving[n]['oscillation_out_of_reach'] for n in (usual, alternate))
    far_u, far_a = (far[n]['oscillation'] for n in (usual, alternate))
    over_u, over_a = (far[n]['overshoot'] for n in (usual, alternate))
    step_u, step_a = (folded[n]['max_step'] for n in (usual, alternate))
    jumps_u, jumps_a = (folded[n]['jumps_all'] for n in (usual, alternate))
    less = 1.0 - MARGIN
    return [
        ('less oscillation or overshoot with targets out of reach',
         osc_a <= less * osc_u or far_a <= less * far_u or over_a <= less * over_u,
         f'oscillation out of reach: moving targets {osc_u:.2e} usual, {osc_a:.2e} '
         f'alternate, still targets {results["far"]:g} x reach {far_u:.2e} usual, '
         f'{far_a:.2e} alternate [rad]; overshoot there {over_u * 1e3:.1f} usual, '
         f'{over_a * 1e3:.1f} alternate [mm]'),
        ('jerky when folded, reaching a close target',
         step_a >= (1.0 + MARGIN) * step_u or jumps_a > jumps_u,
         f'largest joint change per update {step_u:.3f} usual, {step_a:.3f} alternate '
         f'[rad]; updates over {results["jump_rad"]:g} rad: {jumps_u} usual, {jumps_a} '
         'alternate')]


def table(results):
    """Return the figures per case and Jacobian, and the claims, as text lines."""
    lines = [f"Buss's alternate Jacobian on the Y shape: DLS lambda {results['damping']:g} m, "
             f"ClampMag D_max {results['d_max']:g} m, {results['steps']} updates per case",
             f"{'case':<15}{'Jacobian':<26}{'final err mm':>13}{'overshoot mm':>13}"
             f"{'osc. rad':>10}{'max step':>9}{'jumps':>6}"]
    for case, out in results['cases'].items():
        for name, f in out.items():
            osc = f['oscillation_out_of_reach'] if case == 'moving' else f['oscillation']
            lines.append(f"{case:<15}{name:<26}{f['final_error'] * 1e3:13.1f}"
                         f"{f['overshoot'] * 1e3:13.1f}{osc:10.2e}{f['max_step']:9.3f}"
                         f"{f['jumps_all']:6d}")
    for claim, holds, figures in checks(results):
        lines.append(f"  {'holds' if holds else 'does not hold'}: {claim} ({figures})")
    return lines

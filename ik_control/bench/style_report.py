"""
The report of ``ik_control bench style`` (:mod:`ik_control.bench.style`): text, plot, JSON.

``table`` lays the results out as Gielniak et al.'s Table I (sn x 10000 per DOF, paper's
figures beside ours) with the constraint errors, times and change per cm; ``plot`` draws
both methods' trajectories for two nearby constraints; ``to_json`` drops the per-sample
trajectories.
"""

from ik_control import robots
from ik_control.bench.style import GRID, TABLE
from ik_control.bench.style_execution import DT
import numpy as np


def table(results):
    """Return the text report: Table I layout, errors, times, change per cm."""
    r = results
    lines = [f"Table I on the simulated SIMON ({r['executor']}, kp {r['kp']:.0f} N m/rad, "
             f"{r['rate_hz']:.0f} Hz): "
             f"sn x 10000 averaged over {r['constraints']} constraints, {r['motion']} "
             'from pick to place, '
             + ("both within SIMON's limits (ik_controller's joint-trajectory law, the "
                "robot's saturation on), played alike s times slower"
                if r['limits']['enforced'] else
                'each at its own speed, straight to the simulator with its limits off'),
             f"{'DOF':<11s} {'SIMON joint':<17s} {'paper CCD':>9s} {'paper sty':>9s} "
             f"{'CCD':>7s} {'stylized':>8s} {'sty<CCD':>8s}"]
    for row in r['table']:
        lines.append(f"{row['dof']:<11s} {row['joint']:<17s} {row['paper_ccd']:9.2f} "
                     f"{row['paper_stylized']:9.2f} {row['ccd']:7.2f} {row['stylized']:8.2f} "
                     f"{row['stylized_lower_in']:5d}/{r['constraints']}")
    e, res, g = r['search_error_mm'], r['resolution_mm'], r['grid']
    outer = np.asarray(g['outer_band_search_error_mm'])
    outer_median, outer_max = (np.median(outer), np.max(outer)) if len(outer) else (0.0, 0.0)
    ranges = ', '.join(f'{lo:.2f}-{hi:.2f}' for (lo, hi, _) in GRID)
    ts, lim, cl = r['time_scale'], r['limits'], r['clamps']
    if lim['enforced']:
        lines.append(
            "limits: s (the style adapter's slow-down of the stylized motion to "
            f"{min(lim['v_max']):.1f}-{max(lim['v_max']):.1f} rad/s and "
            f"{max(lim['a_max']):.1f} rad/s^2, applied to both) median {ts['median']:.2f}, "
            f"min {ts['min']:.2f}, max {ts['max']:.2f}; the controller's limiter acted on "
            f"median {r['limited_ticks']['stylized']['median']:.0f} (stylized) and "
            f"{r['limited_ticks']['ccd']['median']:.0f} (CCD) ticks of a segment; robot "
            f"clamps: stylized {cl['stylized']['total']}, CCD {cl['ccd']['total']}")
    else:
        lines.append('limits: none (robot clamps, at the position limits only: stylized '
                     f"{cl['stylized']['total']}, CCD {cl['ccd']['total']})")
    lines += [
        f"constraints: {r['constraints']} of the {g['kept']} points of the "
        f"{' x '.join(str(n) for _, _, n in GRID)} grid (x, y, z {ranges} m) that the hand "
        f"reaches (within {g['reach_m'] * 1e3:.1f} mm) with the searched joints inside eq. 1's "
        f"grids (each search box less its outer {g['grid_margin'] * 100:.1f} %); not used: "
        f'{len(outer)} reached only with a joint in that outer band (search error there median '
        f'{outer_median:.1f}, max {outer_max:.1f} mm; within the resolution in '
        f"{g['outer_band_within_resolution']}/{len(outer)}), {len(g['out_of_box'])} out of "
        'the search box',
        f"constraint error [mm], stylized (search): median {e['median']:.2f}, p95 {e['p95']:.2f},"
        f" max {e['max']:.2f}; the fine increment's resolution (first-order error bound of the "
        'fine grid at the answer, 0.5 sum_j |dp/dq_j| x fine increment_j, fine increments '
        f"{min(r['fine_increment_rad']):.3f}-{max(r['fine_increment_rad']):.3f} rad): median "
        f"{res['median']:.1f}, min {res['min']:.1f}, max {res['max']:.1f}; error within it in "
        f"{r['within_resolution']}/{r['constraints']}",
        'constraint error [mm], stylized with 10 damped least-squares steps after the fine '
        f"step (not in the paper): median {r['refined_search_error_mm']['median']:.3f}, p95 "
        f"{r['refined_search_error_mm']['p95']:.3f}, max "
        f"{r['refined_search_error_mm']['max']:.2f}",
        'constraint error [mm], stylized as executed at the constraint instant: median '
        f"{r['stylized_executed_error_mm']['median']:.2f}, max "
        f"{r['stylized_executed_error_mm']['max']:.2f}",
        f"constraint error [mm], CCD (tolerance {r['ccd_tolerance_m'] * 1e3:.1f}): median "
        f"{r['ccd_error_mm']['median']:.2f}, max {r['ccd_error_mm']['max']:.2f}; converged "
        f"{r['ccd_converged']}/{r['constraints']} (joint speed <= "
        f"{r['ccd_speed_fraction']:.3g} x velocity limit); as executed, at the end: median "
        f"{r['ccd_executed_error_mm']['median']:.2f}, max "
        f"{r['ccd_executed_error_mm']['max']:.2f}",
        'time per adaptation [ms] (search + modulation, CPU): median '
        f"{r['adapt_cpu_ms']['median']:.2f}, p95 {r['adapt_cpu_ms']['p95']:.2f}, max "
        f"{r['adapt_cpu_ms']['max']:.2f}; wall-clock median {r['adapt_wall_ms']['median']:.2f}"
        f", p95 {r['adapt_wall_ms']['p95']:.2f}",
        'segment length as executed [s]: stylized median '
        f"{r['segment_s']['stylized']['median']:.2f}, CCD median "
        f"{r['segment_s']['ccd']['median']:.2f} (max {r['segment_s']['ccd']['max']:.2f})",
        'trajectory change per cm of constraint change [rad/cm, max over joints and time]: '
        f"stylized median {r['change_per_cm_rad']['stylized']['median']:.3f} (max "
        f"{r['change_per_cm_rad']['stylized']['max']:.3f}), CCD median "
        f"{r['change_per_cm_rad']['ccd']['median']:.3f} (max "
        f"{r['change_per_cm_rad']['ccd']['max']:.3f})",
    ]
    if 'baseball' in r:
        b = r['baseball']
        lines.append(
            f"baseball ({b['pitches']} straight pitches): ball to bat line at contact [mm] "
            f"searched median {b['bat_error_mm']['median']:.2f} (max "
            f"{b['bat_error_mm']['max']:.2f}), executed median "
            f"{b['bat_executed_error_mm']['median']:.2f} (max "
            f"{b['bat_executed_error_mm']['max']:.2f}); left hand to its grip median "
            f"{b['grip_error_mm']['median']:.1f} (max {b['grip_error_mm']['max']:.1f}); "
            f"adaptation median {b['adapt_wall_ms']['median']:.1f} ms wall-clock")
    return '\n'.join(lines)


def plot(results, path):
    """Plot both methods' commanded trajectories for two nearby constraints (PNG ``path``)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    nearby = results['nearby']
    names = robots.SIMON_JOINTS
    fig, axes = plt.subplots(2, 4, figsize=(16, 7), sharex=True)
    c0, c1 = (np.asarray(c) for c in nearby['constraints'])
    for ax, (label, joint, _, _) in zip(axes.ravel(), TABLE):
        k = names.index(joint)
        for method, color in (('stylized', 'tab:blue'), ('ccd', 'tab:red')):
            for trajectory, style in zip(nearby[method], ('-', '--')):
                x = np.asarray(trajectory)
                ax.plot(np.arange(len(x)) * DT, x[:, k], style, color=color, lw=1.2)
        ax.set_title(f'{label} ({joint})', fontsize=9)
        ax.set_xlabel('t [s]')
        ax.set_ylabel('rad')
    axes[0, 0].legend(['stylized, c', 'stylized, c + 1 cm', 'CCD, c', 'CCD, c + 1 cm'],
                      fontsize=7)
    per_cm = results['change_per_cm_rad']
    fig.suptitle(f'pick-and-place from pick to the bin at c = {np.round(c0, 3)} m and '
                 f'{np.round(c1, 3)} m; change per cm (median over {results["constraints"]}): '
                 f"stylized {per_cm['stylized']['median']:.3f}, CCD {per_cm['ccd']['median']:.3f}"
                 ' rad/cm', fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def to_json(results):
    """Return the results without the per-sample trajectories (JSON-ready)."""
    out = dict(results)
    nearby = results['nearby']
    out['nearby'] = {'constraints': [np.asarray(c).tolist() for c in nearby['constraints']]}
    out['grid'] = {k: (v.tolist() if isinstance(v, np.ndarray) else v)
                   for k, v in results['grid'].items()}
    out['limits'] = {k: (v.tolist() if isinstance(v, np.ndarray) else v)
                     for k, v in results['limits'].items()}
    out['rows'] = [{k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in r.items()}
                   for r in results['rows']]
    return out

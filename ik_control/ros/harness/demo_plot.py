"""
The demo's figure: effector paths, errors to each goal over time, joints within limits.

Everything is computed from the joint_states the demo recorded (forward kinematics of the
measured positions), not from what the controller commanded.
"""

from ik_control.ik.pose_error import pose_distance
import numpy as np


def plot(path, rec, marks, robot, backend):
    """Write the PNG: effector paths, errors over time with goal changes, normalised joints."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    model = rec.model
    t = np.array(rec.times)
    Q = np.array(rec.positions)
    if marks:  # from just before the first goal: not the start-up wait
        keep = t >= marks[0][0] - 0.5
        t, Q = t[keep], Q[keep]
    if len(t) > 6000:  # plenty for the figure; keeps forward kinematics quick
        keep = np.unique(np.linspace(0, len(t) - 1, 6000).astype(int))
        t, Q = t[keep], Q[keep]
    t0 = marks[0][0] if marks else t[0]
    rel = t - t0
    ws = model.workspace()
    ees = model.end_effector_names
    P = np.empty((len(Q), len(ees), 3))
    err = np.full((len(Q), len(ees), 2), np.nan)
    mark_times = np.array([m[0] for m in marks])
    for k, q in enumerate(Q):
        ws.update(q, jacobian=False)
        P[k] = ws.frame_T[:, :3, 3]
        j = np.searchsorted(mark_times, t[k], side='right') - 1
        if j >= 0 and marks[j][2]:
            for i, ee in enumerate(ees):
                goal = marks[j][2].get(ee)
                if goal is not None:
                    err[k, i] = pose_distance(ws.frame_T[i], goal)

    fig = plt.figure(figsize=(13, 15), constrained_layout=True)
    grid = fig.add_gridspec(4, 2, height_ratios=[1.3, 0.8, 0.8, 1.0])
    fig.suptitle(f'ik_control demo: {robot} ({backend} sim_robot), measured joint_states')
    colors = plt.rcParams['axes.prop_cycle'].by_key()['color']
    for col, (a, b, label) in enumerate(((0, 1, 'y'), (0, 2, 'z'))):
        ax = fig.add_subplot(grid[0, col])
        for i, ee in enumerate(ees):
            ax.plot(P[:, i, a], P[:, i, b], color=colors[i], lw=1.2, label=f'{ee} path')
            ax.plot(P[0, i, a], P[0, i, b], 'o', color=colors[i], ms=5)
            for n, (_, name, goals) in enumerate(marks, 1):
                if goals and ee in goals:
                    g = goals[ee][:3, 3]
                    ax.plot(g[a], g[b], 'x', color=colors[i], ms=8, mew=2)
                    ax.annotate(str(n), (g[a], g[b]), textcoords='offset points',
                                xytext=(4, 4), fontsize=8)
        ax.set_xlabel('x [m]')
        ax.set_ylabel(f'{label} [m]')
        ax.set_aspect('equal', adjustable='datalim')
        ax.grid(True, alpha=0.3)
        ax.set_title(f'effector paths, x-{label} (base frame; x = goal n, o = start)')
        ax.legend(fontsize=8, loc='best')
    first = None
    for row, (k, scale, unit, title, tol) in enumerate(
            ((0, 1e3, 'mm', 'position error to the goal', 1.0),
             (1, 1e3, 'mrad', 'orientation error to the goal', 10.0)), 1):
        ax = fig.add_subplot(grid[row, :], sharex=first)
        first = first or ax
        for i, ee in enumerate(ees):
            ax.semilogy(rel, np.maximum(err[:, i, k] * scale, 1e-3), color=colors[i], lw=1.2,
                        label=ee)
        ax.axhline(tol, color='k', ls=':', lw=1, label=f'goal tolerance {tol:g} {unit}')
        _mark_goals(ax, marks, t0)
        ax.set_ylabel(f'[{unit}]')
        ax.set_title(f'{title} (from forward kinematics of the measured joint_states)')
        ax.grid(True, which='both', alpha=0.3)
        ax.legend(fontsize=8, loc='upper right')
    ax = fig.add_subplot(grid[3, :], sharex=first)
    normalised = 2.0 * (Q - model.lower) / (model.upper - model.lower) - 1.0
    for j, name in enumerate(model.joint_names):
        ax.plot(rel, normalised[:, j], lw=1.0, label=name)
    ax.axhline(1.0, color='r', ls='--', lw=1)
    ax.axhline(-1.0, color='r', ls='--', lw=1)
    _mark_goals(ax, marks, t0)
    ax.set_ylim(-1.15, 1.15)
    ax.set_xlabel('time [s]')
    ax.set_ylabel('(q - mid) / half range [-]')
    ax.set_title('joint positions normalised to their limits (-1 lower, +1 upper)')
    ax.legend(fontsize=7, ncol=max(1, len(model.joint_names) // 4), loc='lower left')
    ax.grid(True, alpha=0.3)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return normalised


def _mark_goals(ax, marks, t0):
    for n, (t, name, _) in enumerate(marks, 1):
        ax.axvline(t - t0, color='0.5', lw=0.8)
        ax.text(t - t0, 1.0, f' {n}', transform=ax.get_xaxis_transform(), va='top',
                fontsize=8)

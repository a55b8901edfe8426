"""
Pictures of the JT-RRT scenarios (matplotlib 3-D): obstacles, the start arm, a planned arm.

Boxes are drawn as their faces, cylinders and spheres as surfaces, the arm as the
polyline through its joint origins and tool (start grey, the end of a JT-RRT plan blue,
its tool path dotted), the goal as a red star inside its threshold sphere.
"""

import os

from ik_control import robots
from ik_control.planning.collision import CollisionChecker
from ik_control.planning.goal import WorkspaceGoal
from ik_control.planning.pipeline import Planner
from ik_control.planning.scenarios import load_scenarios
import numpy as np

FACES = ((0, 1, 3, 2), (4, 5, 7, 6), (0, 1, 5, 4), (2, 3, 7, 6), (0, 2, 6, 4), (1, 3, 7, 5))


def _box(ax, obstacle, colour):
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    half = 0.5 * np.array(obstacle.size)
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    pts = (obstacle.pose[:3, :3] @ (corners * half).T).T + obstacle.pose[:3, 3]
    ax.add_collection3d(Poly3DCollection([pts[list(f)] for f in FACES], facecolor=colour,
                                         edgecolor='0.4', linewidth=0.3, alpha=0.35))


def _round(ax, obstacle, colour):
    u = np.linspace(0, 2 * np.pi, 24)
    if obstacle.shape == 'sphere':
        v = np.linspace(0, np.pi, 12)
        r = obstacle.size[0]
        pts = np.stack([r * np.outer(np.cos(u), np.sin(v)), r * np.outer(np.sin(u), np.sin(v)),
                        r * np.outer(np.ones_like(u), np.cos(v))], axis=-1)
    else:
        r, h = obstacle.size
        z = np.array([-0.5 * h, 0.5 * h])
        pts = np.stack([r * np.outer(np.cos(u), np.ones(2)), r * np.outer(np.sin(u), np.ones(2)),
                        np.outer(np.ones_like(u), z)], axis=-1)
    pts = pts @ obstacle.pose[:3, :3].T + obstacle.pose[:3, 3]
    ax.plot_surface(pts[..., 0], pts[..., 1], pts[..., 2], color=colour, alpha=0.6,
                    linewidth=0)


def _arm(ax, model, q, **style):
    ws = model.workspace()
    ws.update(q, jacobian=False)
    pts = np.vstack([np.zeros(3), ws.joint_T[:, :3, 3], ws.frame_T[0, :3, 3]])
    ax.plot(pts[:, 0], pts[:, 1], pts[:, 2], **style)
    return ws.frame_T[0, :3, 3].copy()


def draw(scenario, model, path, out_file, threshold=0.15):
    """Write the picture of ``scenario`` with planned ``path`` (m x nq, may be empty)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(6, 5))
    ax = fig.add_subplot(projection='3d')
    for o in scenario.obstacles:
        big = o.name in ('floor', 'back_wall', 'side_wall')
        colour = '0.85' if big else ('tab:brown' if o.shape == 'box' else 'tab:cyan')
        if o.shape == 'box':
            _box(ax, o, colour)
        else:
            _round(ax, o, colour)
    _arm(ax, model, scenario.start, color='0.3', lw=4, marker='o', ms=3, label='start')
    if len(path):
        tool = np.array([model.frame_placements(q)[0][:3, 3] for q in path])
        ax.plot(tool[:, 0], tool[:, 1], tool[:, 2], 'b:', lw=1, label='tool path')
        _arm(ax, model, path[-1], color='tab:blue', lw=4, marker='o', ms=3, label='JT-RRT end')
    g = scenario.goal_position
    ax.scatter(*g, color='red', marker='*', s=120, label='goal')
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 16), np.linspace(0, np.pi, 8))
    ax.plot_wireframe(g[0] + threshold * np.cos(u) * np.sin(v),
                      g[1] + threshold * np.sin(u) * np.sin(v), g[2] + threshold * np.cos(v),
                      color='red', lw=0.3, alpha=0.5)
    ax.set_xlim(-0.9, 1.2)
    ax.set_ylim(-1.0, 1.1)
    ax.set_zlim(-0.65, 1.0)
    ax.set_box_aspect((2.1, 2.1, 1.65))
    ax.view_init(elev=22, azim=-60)
    ax.set_xlabel('x [m]')
    ax.set_ylabel('y [m]')
    ax.set_zlabel('z [m]')
    ax.set_title(f'{scenario.name}: {scenario.description}', fontsize=8)
    ax.legend(fontsize=7, loc='upper left')
    fig.tight_layout()
    fig.savefig(out_file, dpi=100)
    plt.close(fig)
    return out_file


def draw_all(out_dir, seed=0):
    """Plan each scenario once with JT-RRT and write ``jtrrt_<k>_<name>.png``; returns paths."""
    model = robots.robot('wam')
    os.makedirs(out_dir, exist_ok=True)
    files = []
    for k, scenario in enumerate(load_scenarios()):
        planner = Planner(model, CollisionChecker(model, scenario.obstacles))
        plan = planner.plan(scenario.start, WorkspaceGoal(scenario.goal_position),
                            np.random.default_rng(seed), 'jt')
        files.append(draw(scenario, model, plan.path if plan.success else [],
                          os.path.join(out_dir, f'jtrrt_{k + 1}_{scenario.name}.png')))
    return files

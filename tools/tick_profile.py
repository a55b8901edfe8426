"""
Time the controller's tick in-process (no ROS): SIMON at 1 kHz moving between goals.

Drives :class:`~ik_control.control.controller.ResolvedRateController` with the bundled
SIMON settings (collision stage on) through ``TICKS`` ticks: six seeded random goal pairs,
one every 0.9 s, the measured state following the command. Prints ``update``'s p50, p90
and p99 [us] after the first 1000 ticks, and what the collision stage measured per tick
(checked pairs, pairs measured, pairs within their horizon ``within``)::

    python tools/tick_profile.py [TICKS]            # default 10000
    python tools/tick_profile.py [TICKS] --profile  # cProfile, the 25 largest own times
    python tools/tick_profile.py [TICKS] --robot wam --idle  # the WAM, no goal, at rest

``--robot`` picks the bundled robot (``simon`` by default); ``--idle`` sends no goal (the
arm holds its ready pose: what a controller does between goals, most of a test's time).
"""

import cProfile
import pstats
import sys
import time

import numpy as np


def build(name='simon'):
    """Return ``(controller, model, q0)`` of robot ``name`` with the bundled settings."""
    from ik_control import robots
    from ik_control.bench.reach import controller_config
    from ik_control.control.controller import ResolvedRateController

    model = robots.robot(name)
    c = ResolvedRateController(model, controller_config(name))
    return c, model, np.array(robots.ready_pose(name), dtype=float)


def run(c, model, q, ticks, times, pairs, idle=False):
    """
    Run ``ticks`` ticks; each update's time [s] into ``times``, pair counts into ``pairs``.

    ``idle``: no goal is sent.
    """
    rng = np.random.default_rng(3)
    dt = 1.0 / c.config.rate_hz
    frames = [e.frame for e in model.end_effectors]
    goals = [model.frame_placements(g) for g in model.random_configurations(6, rng)]
    cm = c.collision.cm if c.collision is not None else None
    if cm is not None:
        near_pairs = cm.near_pairs

        def counted(joint_T, within, travel=None):
            n = near_pairs(joint_T, within, travel)
            rows = cm.pair_index[:n]
            pairs.append((n, int(np.sum(cm.distance[:n] <= np.asarray(within)[rows]))))
            return n
        cm.near_pairs = counted
    for k in range(ticks):
        t = k * dt
        if k % 900 == 10 and not idle:
            for i, frame in enumerate(frames):
                c.set_target_matrix(frame, goals[(k // 900) % len(goals)][i])
        c.set_joint_state(model.joint_names, q, t)
        t0 = time.perf_counter()
        command = c.update(t)
        times[k] = time.perf_counter() - t0
        if command is not None:
            q = command.at(dt)[0].copy()
        c.drain_events()


def main(argv):
    """Time (or profile) the tick; print the figures."""
    ticks = int(argv[0]) if argv and argv[0].isdigit() else 10000
    name = argv[argv.index('--robot') + 1] if '--robot' in argv else 'simon'
    idle = '--idle' in argv
    c, model, q = build(name)
    times, pairs = np.zeros(ticks), []
    if '--profile' in argv:
        profile = cProfile.Profile()
        profile.runcall(run, c, model, q, ticks, times, pairs, idle)
        pstats.Stats(profile).sort_stats('tottime').print_stats(25)
        return 0
    run(c, model, q, ticks, times, pairs, idle)
    us = times[min(1000, ticks // 2):] * 1e6
    print(f'update [us]: p50 {np.percentile(us, 50):.1f}  p90 {np.percentile(us, 90):.1f}  '
          f'p99 {np.percentile(us, 99):.1f}  ({us.size} ticks)')
    if pairs:
        counts = np.array(pairs)
        print(f'collision stage: {len(c.collision.cm.pairs)} checked pairs; measured per tick '
              f'mean {counts[:, 0].mean():.1f} (p50 {np.percentile(counts[:, 0], 50):.0f}, '
              f'max {counts[:, 0].max()}); within their horizon mean {counts[:, 1].mean():.1f}')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))

"""
Record the controller's commands, statuses and events on a scripted run; compare two records.

A refactor of the tick must leave what the controller does bit-identical. This script
drives :class:`~ik_control.control.controller.ResolvedRateController` in-process (no ROS)
through 6000 ticks of a fixed script on each variant (WAM and SIMON with the bundled
settings; the WAM with ``ik_method`` ccd and hal; SIMON with a plane constraint and the
posture fallback): pose goals from seeded random configurations every 900 ticks, a
twist, a hold and a resume, a joint trajectory, an obstacle sphere, measured states with
a little noise, a 0.3 s gap in them (stale: the arm stops, then resumes) and a backward
clock jump of half a second. It records the first point of every command window (positions and
velocities), the status bits of every tick and every event::

    python tools/tick_identity.py record before.npz      # on the old checkout
    python tools/tick_identity.py record after.npz       # on the new one
    python tools/tick_identity.py compare before.npz after.npz

``compare`` exits 1 when anything differs and prints the first differing event. Run the
old checkout's code with ``PYTHONPATH=<old checkout>`` (a ``git worktree``).
"""

import sys

import numpy as np

VARIANTS = {
    'wam': ('wam', {}),
    'simon': ('simon', {}),
    'wam_ccd': ('wam', {'ik_method': 'ccd', 'fallback.strategy': 'off'}),
    'wam_hal': ('wam', {'ik_method': 'hal', 'fallback.strategy': 'off'}),
    'simon_plane': ('simon', {'fallback.strategy': 'posture', 'constraints': (
        '[{type: plane, frame: right_hand, normal: [0, 0, 1]}]')}),
}
TICKS = 6000


def run(robot, overrides):
    """Return (positions, velocities, statuses, events) of the scripted run."""
    from ik_control import robots
    from ik_control.bench.reach import controller_config
    from ik_control.control.controller import ResolvedRateController

    model = robots.robot(robot)
    config = controller_config(robot).updated(overrides)
    c = ResolvedRateController(model, config)
    rng = np.random.default_rng(3)
    q = np.array(robots.ready_pose(robot), dtype=float)
    dt = 1.0 / config.rate_hz
    frames = [e.frame for e in model.end_effectors]
    goals = [model.frame_placements(g) for g in model.random_configurations(6, rng)]
    ball = np.eye(4)
    ball[:3, 3] = (0.5, 0.3, 0.4)
    c.set_obstacle_shapes([('sphere', ball, (0.1, 0.1, 0.1))])
    positions, velocities, statuses, events = [], [], [], []
    for k in range(TICKS):
        t = k * dt - (0.5 if k >= 5600 else 0.0)  # the clock jumps back
        if k % 900 == 10:
            for i, frame in enumerate(frames):
                c.set_target_matrix(frame, goals[(k // 900) % len(goals)][i])
        if k == 2000:
            c.set_twist_target(frames[0], [0.05, 0.0, 0.02], [0.0, 0.0, 0.1], t)
        if k == 3000:
            c.hold()
        if k == 3300:
            c.resume()
        if k == 4000:
            q1 = np.clip(q + 0.3, model.lower, model.upper)
            c.set_joint_trajectory(model.joint_names, np.array([0.0, 2.0]), np.vstack([q, q1]),
                                   np.zeros((2, model.nq)), t)
        noise = 1e-4 * np.sin(k) if k % 7 == 0 else 0.0
        if not 5000 <= k < 5000 + int(0.3 * config.rate_hz):  # no states for 0.3 s
            c.set_joint_state(model.joint_names, q + noise, t)
        command = c.update(t)
        if command is not None:
            q = command.at(dt)[0].copy()
            positions.append(command.positions[0].copy())
            velocities.append(command.velocities[0].copy())
        statuses.append(int(c.status))
        events += [f'{k} {e.kind} {e.message}' for e in c.drain_events()]
    return np.array(positions), np.array(velocities), np.array(statuses), np.array(events)


def record(path):
    """Write every variant's run to ``path`` (.npz)."""
    arrays = {}
    for name, (robot, overrides) in VARIANTS.items():
        q, v, s, ev = run(robot, overrides)
        arrays.update({f'{name}_q': q, f'{name}_v': v, f'{name}_s': s, f'{name}_ev': ev})
        print(f'{name}: {len(s)} ticks, {len(ev)} events')
    np.savez(path, **arrays)


def compare(path_a, path_b):
    """Return 0 when the two records are bit-identical, else 1 (what differs printed)."""
    a, b = np.load(path_a), np.load(path_b)
    differ = 0
    for key in sorted(set(a.files) | set(b.files)):
        same = key in a.files and key in b.files and np.array_equal(a[key], b[key])
        print(f"{key:20s} {'identical' if same else 'DIFFERENT'}")
        if not same:
            differ = 1
            if key.endswith('_ev') and key in a.files and key in b.files:
                first = next(((x, y) for x, y in zip(a[key], b[key]) if x != y), None)
                print(f'  first differing event: {first}')
    return differ


def main(argv):
    """Run ``record OUT`` or ``compare A B``."""
    if len(argv) == 2 and argv[0] == 'record':
        record(argv[1])
        return 0
    if len(argv) == 3 and argv[0] == 'compare':
        return compare(argv[1], argv[2])
    print(__doc__.split('::')[1].split('``compare``')[0], file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))

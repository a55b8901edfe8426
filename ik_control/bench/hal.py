"""
HAL's hand error before and after Jacobian refinement, on the benchmark's robots.

The targets are those of ``ik_control bench ik`` (random configurations inside the
limits, pinocchio FK of the tip, same seed); HAL (:class:`~ik_control.ik.hal.HalArm`)
starts from the middle of the limits. Per robot: how far the shoulder and wrist axes miss
a common point (``axis_residual`` [m]), the hand position [m] and rotation [rad] errors of
the closed form alone, then after 1 and 3 damped least-squares refinement steps, the
share of answers inside the joint limits, and the time of the closed form [ms].
"""

import time

from ik_control.bench import arms
from ik_control.ik.hal import HalArm
import numpy as np

STEPS = (0, 1, 3)


def run(robot_names=arms.ROBOTS, samples=300, seed=0, progress=None):
    """Return a JSON-ready dict of the errors (module docstring)."""
    results = {'samples': samples, 'seed': seed, 'refine_steps': list(STEPS), 'robots': {}}
    for name in robot_names:
        if progress:
            progress(f'{name}: {samples} targets')
        model = arms.load_model(arms.bench_robot(name))
        _, targets = arms.make_targets(model, samples, seed)
        arm = HalArm(model)
        q0 = model.center
        errors = {k: [] for k in STEPS}
        inside, seconds = 0, []
        for T in targets:
            t0 = time.perf_counter()
            q, _, within, _ = arm.closed_form(q0, T[:3, 3], T[:3, :3])
            seconds.append(time.perf_counter() - t0)
            inside += within
            done = 0
            for k in STEPS:
                q = arm.refine(q, T[:3, 3], T[:3, :3], k - done)
                done = k
                errors[k].append(arm.errors(q, T[:3, 3], T[:3, :3]))
        entry = {'axis_residual_m': arm.home(q0)['axis_residual'],
                 'within_limits': 100.0 * inside / samples,
                 'closed_form_ms_median': 1e3 * float(np.median(seconds))}
        for k in STEPS:
            e = np.array(errors[k])
            entry[f'refine_{k}'] = {
                'position_median_m': float(np.median(e[:, 0])),
                'position_max_m': float(e[:, 0].max()),
                'rotation_median_rad': float(np.median(e[:, 1])),
                'rotation_max_rad': float(e[:, 1].max()),
                'below_1e-5': 100.0 * float(np.mean((e[:, 0] <= 1e-5) & (e[:, 1] <= 1e-5)))}
        results['robots'][name] = entry
    return results


def table(results):
    """Return the results as a text table."""
    lines = [f"HAL hand error on {results['samples']} bench-ik targets per robot "
             '(closed form from the middle of the limits, then damped least-squares steps)',
             f"{'robot':<16}{'axis miss m':>12}{'steps':>6}{'pos median m':>14}"
             f"{'pos max m':>11}{'rot median':>12}{'rot max':>10}{'<=1e-5':>9}"]
    for name, entry in results['robots'].items():
        for k in results['refine_steps']:
            r = entry[f'refine_{k}']
            head = f"{name:<16}{entry['axis_residual_m']:>12.3g}" if k == 0 else ' ' * 28
            lines.append(head + f"{k:>6}{r['position_median_m']:>14.3g}"
                         f"{r['position_max_m']:>11.3g}{r['rotation_median_rad']:>12.3g}"
                         f"{r['rotation_max_rad']:>10.3g}{r['below_1e-5']:>8.1f}%")
        lines.append(f"{'':<16}closed form inside the limits {entry['within_limits']:.1f} %, "
                     f"median {entry['closed_form_ms_median']:.2f} ms")
    return '\n'.join(lines)

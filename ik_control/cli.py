"""
The ``ik_control`` command: ``solve``, ``bench`` (and, with the controller, ``demo``).

Every subcommand prints a clear one-line message and exits non-zero on bad input
(unknown frame, unreadable URDF, no solution within the budget); tracebacks are for bugs.
"""

import argparse
import json
import os
import sys

from ik_control.validation import IkControlError
import numpy as np

EXIT_USAGE = 2
EXIT_NO_SOLUTION = 3


def _solve(args):
    from ik_control.ik.position_ik import PositionIk
    from ik_control.kinematics import RobotModel
    from ik_control.validation import pose_matrix

    mode = 'pose' if args.quat is not None else 'position'
    model = RobotModel.from_urdf(args.urdf, base_frame=args.base,
                                 end_effectors=[(args.tip, mode)],
                                 joints=args.joints.split(',') if args.joints else None)
    target = pose_matrix(args.xyz, args.quat)[None]
    seed = None
    if args.seed_q is not None:
        from ik_control.validation import finite_vector
        seed = finite_vector(args.seed_q, model.nq, '--seed-q')
    ik = PositionIk(model, tolerance=args.tolerance, rotation_tolerance=args.tolerance)
    ik.solve(target, seed, time_budget=1e-3, rng=np.random.default_rng(0))  # compile/warm up
    result = ik.solve(target, seed, time_budget=args.timeout_ms / 1e3,
                      rng=np.random.default_rng(args.random_seed))
    report = {'success': result.success, 'joint_names': list(result.joint_names),
              'positions': [float(v) for v in result.q],
              'position_error': result.position_error,
              'rotation_error': result.rotation_error if mode == 'pose' else None,
              'iterations': result.iterations, 'restarts': result.restarts,
              'time_ms': result.seconds * 1e3}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for name, value in zip(result.joint_names, result.q):
            print(f'{name:>24s} {value: .6f}')
        rot = '' if mode == 'position' else f', rotation error {result.rotation_error:.3g} rad'
        print(f"{'solved' if result.success else 'NOT solved'}: position error "
              f'{result.position_error:.3g} m{rot}, {result.seconds * 1e3:.3f} ms, '
              f'{result.iterations} iterations, {result.restarts} restarts')
    if not result.success:
        print(f'ik_control solve: no solution within {args.timeout_ms} ms '
              f'(tolerance {args.tolerance})', file=sys.stderr)
        return EXIT_NO_SOLUTION
    return 0


def _output_dir(args):
    out = args.output_dir
    os.makedirs(out, exist_ok=True)
    return out


def _progress(message):
    print(f'  .. {message}', file=sys.stderr, flush=True)


def _bench_buss(args):
    from ik_control.bench import buss

    results = buss.run(steps=args.steps, progress=None if args.json else _progress)
    checks = buss.checks(results)
    png = os.path.join(_output_dir(args), 'buss.png')
    buss.plot(results, png)
    if args.json:
        slim = json.loads(json.dumps(results))
        for entry in slim['shapes'].values():
            for r in entry['laws'].values():
                r.pop('error_series')
        slim['checks'] = [{'claim': c, 'holds': ok} for c, ok in checks]
        slim['plot'] = png
        print(json.dumps(slim, indent=2))
    else:
        print(buss.table(results))
        for claim, ok in checks:
            print(f"  [{'ok' if ok else 'FAILS'}] {claim}")
        print(f'plot: {png}')
    return 0 if all(ok for _, ok in checks) else 1


def _bench_step(args):
    from ik_control.bench import step

    results = step.run(samples=args.samples, progress=None if args.json else _progress)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(step.table(results))
    return 0


def build_parser():
    """Return the argument parser of the ``ik_control`` command."""
    parser = argparse.ArgumentParser(prog='ik_control', description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest='command', required=True)

    solve = sub.add_parser('solve', help='position IK for one frame of a URDF')
    solve.add_argument('--urdf', required=True, help='URDF file')
    solve.add_argument('--base', default=None, help='base frame (default: the model root)')
    solve.add_argument('--tip', required=True, help='end-effector frame')
    solve.add_argument('--xyz', nargs=3, type=float, required=True, metavar=('X', 'Y', 'Z'),
                       help='target position in the base frame [m]')
    solve.add_argument('--quat', nargs=4, type=float, metavar=('QX', 'QY', 'QZ', 'QW'),
                       help='target orientation (unit quaternion x y z w); none: position only')
    solve.add_argument('--joints', help='comma-separated controlled joints (default: all)')
    solve.add_argument('--seed-q', nargs='+', type=float, help='initial joint values [rad]')
    solve.add_argument('--timeout-ms', type=float, default=50.0, help='time budget [ms]')
    solve.add_argument('--tolerance', type=float, default=1e-5,
                       help='position [m] and rotation [rad] tolerance')
    solve.add_argument('--random-seed', type=int, default=None, help='seed for restarts')
    solve.add_argument('--json', action='store_true', help='print JSON')
    solve.set_defaults(func=_solve)

    bench = sub.add_parser('bench', help='benchmarks (figures and plots)')
    bsub = bench.add_subparsers(dest='bench', required=True)
    b = bsub.add_parser('buss', help="Buss's Y / double-Y tracking experiment")
    b.add_argument('--steps', type=int, default=1200)
    b.add_argument('--json', action='store_true')
    b.add_argument('--output-dir', default='bench_results')
    b.set_defaults(func=_bench_buss)
    s = bsub.add_parser('step', help='microseconds per control update vs pink')
    s.add_argument('--samples', type=int, default=20000)
    s.add_argument('--json', action='store_true')
    s.add_argument('--output-dir', default='bench_results')
    s.set_defaults(func=_bench_step)
    return parser


def main(argv=None):
    """Entry point of the ``ik_control`` console script."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except IkControlError as exc:
        print(f'ik_control {args.command}: {exc}', file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == '__main__':
    sys.exit(main())

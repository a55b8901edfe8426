"""
The ``ik_control`` command: ``solve``, ``bench`` (and, with the controller, ``demo``).

Every subcommand prints a clear one-line message and exits non-zero on bad input
(unknown frame, unreadable URDF, no solution within the budget); tracebacks are for bugs.
"""

import argparse
import json
import os
import sys

from ik_control.validation import IkControlError, InputError
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


def _plain(value):
    """Return numpy scalars and arrays as Python values (``json`` ``default`` hook)."""
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    raise TypeError(f'{type(value).__name__} is not JSON serializable')


def _save(args, name, results):
    """Write ``results`` to ``<output-dir>/<name>.json`` unless ``--no-save``."""
    if not getattr(args, 'save', True):
        return None
    path = os.path.join(_output_dir(args), f'{name}.json')
    text = json.dumps(results, indent=2, default=_plain)   # fails before the file is touched
    with open(path, 'w', encoding='utf-8') as stream:
        stream.write(text + '\n')
    return path


def _emit(args, name, results, text):
    """Save ``results`` as ``<name>.json``, then print them: JSON with --json, else ``text``."""
    _save(args, name, results)
    print(json.dumps(results, indent=2) if args.json else text)


def _bench_buss(args):
    from ik_control.bench import buss

    results = buss.run(steps=args.steps, progress=None if args.json else _progress)
    checks = buss.checks(results)
    png = os.path.join(_output_dir(args), 'buss.png')
    buss.plot(results, png)
    slim = json.loads(json.dumps(results))
    for entry in slim['shapes'].values():
        for r in entry['laws'].values():
            r.pop('error_series')
    slim['checks'] = [{'claim': c, 'holds': bool(ok)} for c, ok in checks]
    slim['plot'] = png
    _emit(args, 'buss', slim, '\n'.join(
        [buss.table(results)] + [f"  [{'ok' if ok else 'FAILS'}] {claim}" for claim, ok in checks]
        + [f'plot: {png}']))
    return 0 if all(ok for _, ok in checks) else 1


def _bench_step(args):
    from ik_control.bench import step

    results = step.run(samples=args.samples, progress=None if args.json else _progress)
    _emit(args, 'step', results, step.table(results))
    return 0


def _bench_loop(args):
    from ik_control.ros import bench_loop

    results = bench_loop.run(seconds=args.seconds, compare_seconds=args.compare_seconds,
                             progress=None if args.json else _progress)
    _emit(args, 'loop', results, bench_loop.table(results))
    return 0


def _demo(args):
    from ik_control.ros import demo

    try:
        return demo.run(args.robot, args.backend, args.plot)
    except demo.DemoError as exc:
        print(f'ik_control demo: {exc}', file=sys.stderr)
        return EXIT_USAGE


def _bench_ik(args):
    from ik_control.bench import ik

    if (args.samples < 1 or args.timeout_ms <= 0 or args.tolerance <= 0
            or (args.peer_samples is not None and args.peer_samples < 1)):
        raise InputError('--samples, --peer-samples, --timeout-ms and --tolerance must be '
                         'positive')
    solvers = ik.SOLVERS
    if args.solvers:
        solvers = tuple(s.strip() for s in args.solvers.split(',') if s.strip())
        unknown = [s for s in solvers if s not in ik.SOLVERS]
        if unknown:
            raise InputError(f'unknown solvers {unknown}; choose from {list(ik.SOLVERS)}')
    peers = None
    if args.peer_samples is not None:
        peers = {s: args.peer_samples for s in ik.SOLVERS if not s.startswith('ik_control')}
    results = ik.run(robot_names=tuple(args.robot or ik.ROBOTS), samples=args.samples,
                     timeout_ms=args.timeout_ms, tolerance=args.tolerance, solvers=solvers,
                     seed=args.seed, clock=args.clock, peer_samples=peers, progress=True)
    png = ik.plot(results, os.path.join(_output_dir(args), 'ik.png'))
    data = ik.to_json(results)
    data['plot'] = png
    data['table'] = ik.table(results)
    _emit(args, 'ik', data, f"{data['table']}\nplot: {png}")
    return 0


def _bench_report(args):
    from ik_control.bench import report

    path = report.write(args.output_dir, args.docs_dir)
    print(f'wrote {path}')
    return 0


def _bench_fuzz(args):
    from ik_control.ros import fuzz

    if args.messages < 1 or not args.rate > 0:
        raise InputError('--messages and --rate must be positive')
    try:
        results = fuzz.run(messages=args.messages, rate=args.rate, robot=args.robot,
                           seed=args.seed, progress=_progress)
    except fuzz.FuzzError as exc:
        print(f'ik_control bench fuzz: {exc}', file=sys.stderr)
        return 1
    _emit(args, 'fuzz', results, fuzz.table(results))
    return 0 if results['violations'] == 0 and results['crashes'] == 0 else 1


def _bench_soak(args):
    from ik_control.ros import fuzz, soak

    if not args.minutes > 0:
        raise InputError('--minutes must be positive')
    try:
        results = soak.run(minutes=args.minutes, robot=args.robot, progress=_progress,
                           realtime_priority=args.realtime_priority)
    except fuzz.FuzzError as exc:
        print(f'ik_control bench soak: {exc}', file=sys.stderr)
        return 1
    results['plot'] = soak.plot(results, os.path.join(_output_dir(args), 'soak.png'))
    _emit(args, 'soak', results, f"{soak.table(results)}\nplot: {results['plot']}")
    return 0 if results['violations'] == 0 and results['crashes'] == 0 else 1


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
    b.add_argument('--save', action=argparse.BooleanOptionalAction, default=True,
                   help='write <output-dir>/buss.json (default: yes)')
    b.set_defaults(func=_bench_buss)
    s = bsub.add_parser('step', help='microseconds per control update vs pink')
    s.add_argument('--samples', type=int, default=20000)
    s.add_argument('--json', action='store_true')
    s.add_argument('--output-dir', default='bench_results')
    s.add_argument('--save', action=argparse.BooleanOptionalAction, default=True,
                   help='write <output-dir>/step.json (default: yes)')
    s.set_defaults(func=_bench_step)

    lp = bsub.add_parser('loop', help='SIMON at 1 kHz: rate, jitter, latency per loop design')
    lp.add_argument('--seconds', type=float, default=60.0,
                    help='measurement of the chosen design [s] (default: 60)')
    lp.add_argument('--compare-seconds', type=float, default=15.0,
                    help='measurement of each alternative design [s] (default: 15)')
    lp.add_argument('--json', action='store_true')
    lp.add_argument('--output-dir', default='bench_results')
    lp.add_argument('--save', action=argparse.BooleanOptionalAction, default=True,
                    help='write <output-dir>/loop.json (default: yes)')
    lp.set_defaults(func=_bench_loop)

    ik = bsub.add_parser('ik', help="position IK solve rate and time vs peers (TRAC-IK's method)")
    ik.add_argument('--robot', action='append', choices=('wam', 'simon_right_arm', 'panda'),
                    help='robot to run (repeatable; default: wam, simon_right_arm and panda)')
    ik.add_argument('--samples', type=int, default=10000,
                    help='random joint configurations per robot (default: 10000)')
    ik.add_argument('--timeout-ms', type=float, default=5.0,
                    help='time limit per solve [ms] (default: 5)')
    ik.add_argument('--tolerance', type=float, default=1e-5,
                    help='position [m] and rotation [rad] tolerance (default: 1e-5)')
    ik.add_argument('--solvers', default=None,
                    help='comma-separated subset of ik_control,ik_control-dls,kdl,pink,ikpy '
                         '(default: all)')
    ik.add_argument('--peer-samples', type=int, default=None,
                    help='samples for every peer (default: kdl 2000, pink 1000, ikpy 300; '
                         'never more than --samples)')
    ik.add_argument('--seed', type=int, default=0, help='seed of the random configurations')
    ik.add_argument('--clock', choices=('cpu', 'wall'), default='cpu',
                    help='time source: process CPU time [s] (default; other load on the '
                         'machine does not count) or wall-clock time')
    ik.add_argument('--json', action='store_true', help='print JSON instead of the table')
    ik.add_argument('--output-dir', default='bench_results',
                    help='where ik.json and ik.png go (default: bench_results)')
    ik.add_argument('--save', action=argparse.BooleanOptionalAction, default=True,
                    help='write <output-dir>/ik.json (default: yes)')
    ik.set_defaults(func=_bench_ik)

    report = bsub.add_parser('report', help='write docs/performance.md from the saved results')
    report.add_argument('--output-dir', default='bench_results',
                        help='where the benchmarks saved their JSON and PNG files')
    report.add_argument('--docs-dir', default='docs',
                        help='where performance.md and the plots go (default: docs)')
    report.set_defaults(func=_bench_report)

    fz = bsub.add_parser('fuzz', help='random valid and malformed messages against a running '
                         'sim_robot + ik_controller: violations, refusals, crashes')
    fz.add_argument('--messages', type=int, default=100000,
                    help='messages to send (default: 100000)')
    fz.add_argument('--rate', type=float, default=2000.0,
                    help='messages per second (default: 2000)')
    fz.add_argument('--robot', choices=('wam', 'simon'), default='wam',
                    help='bundled robot (default: wam)')
    fz.add_argument('--seed', type=int, default=0, help='seed of the random messages')
    fz.add_argument('--json', action='store_true', help='print JSON instead of the table')
    fz.add_argument('--output-dir', default='bench_results',
                    help='where fuzz.json goes (default: bench_results)')
    fz.add_argument('--save', action=argparse.BooleanOptionalAction, default=True,
                    help='write <output-dir>/fuzz.json (default: yes)')
    fz.set_defaults(func=_bench_fuzz)

    soak = bsub.add_parser('soak', help='the controller at its configured rate for minutes, '
                           'goals every 50 ms: rate, jitter, RSS growth, violations, losses')
    soak.add_argument('--minutes', type=float, default=10.0,
                      help='measured duration after a 5 s warm-up [min] (default: 10)')
    soak.add_argument('--robot', choices=('simon', 'wam'), default='simon',
                      help='bundled robot (default: simon, 1 kHz)')
    soak.add_argument('--realtime-priority', type=int, default=0, metavar='P',
                      help='SCHED_FIFO priority of both nodes, 1-98 (default: 0, normal '
                           'scheduling; the OS may refuse it, the nodes then say so)')
    soak.add_argument('--json', action='store_true', help='print JSON instead of the table')
    soak.add_argument('--output-dir', default='bench_results',
                      help='where soak.json and soak.png go (default: bench_results)')
    soak.add_argument('--save', action=argparse.BooleanOptionalAction, default=True,
                      help='write <output-dir>/soak.json (default: yes)')
    soak.set_defaults(func=_bench_soak)

    demo = sub.add_parser('demo', help='the controller on the simulated robot: a sequence of '
                          'goals, a summary table and a plot')
    demo.add_argument('--robot', choices=('wam', 'simon'), default='wam',
                      help='bundled robot (default: wam)')
    demo.add_argument('--backend', choices=('kinematic', 'mujoco'), default='kinematic',
                      help='sim_robot backend (default: kinematic)')
    demo.add_argument('--plot', metavar='FILE', default=None,
                      help='PNG to write (default: demo_<robot>.png in the current directory)')
    demo.set_defaults(func=_demo)
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

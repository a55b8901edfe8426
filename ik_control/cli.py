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
    from ik_control.kinematics.dh_file import robot_description
    from ik_control.validation import pose_matrix

    tips, xyzs, quats = args.tip, args.xyz, args.quat or []
    if len(xyzs) != len(tips) or len(quats) not in (0, len(tips)):
        raise InputError(f'give one --xyz for each of the {len(tips)} --tip, and one --quat '
                         'for each or none (position only)')
    mode = 'pose' if quats else 'position'
    model = RobotModel.from_urdf(robot_description(args.urdf), base_frame=args.base,
                                 end_effectors=[(tip, mode) for tip in tips],
                                 joints=args.joints.split(',') if args.joints else None)
    target = np.array([pose_matrix(xyz, quats[i] if quats else None)
                       for i, xyz in enumerate(xyzs)])
    seed = None
    if args.seed_q is not None:
        from ik_control.validation import finite_vector
        seed = finite_vector(args.seed_q, model.nq, '--seed-q')
    if args.method == 'lm':
        ik = PositionIk(model, tolerance=args.tolerance, rotation_tolerance=args.tolerance)
    else:
        from ik_control.ik.classical import ClassicalIk
        ik = ClassicalIk(model, args.method, tolerance=args.tolerance,
                         rotation_tolerance=args.tolerance)
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


def _dh_to_urdf(args):
    from ik_control.kinematics.dh_file import load_dh_file

    text = load_dh_file(args.file).urdf() + '\n'
    if args.output:
        with open(args.output, 'w', encoding='utf-8') as stream:
            stream.write(text)
    else:
        sys.stdout.write(text)
    return 0


def _paint(args):
    return _paint_report(args.task, args.plot, args.json)


def _paint_report(task_file, plot, as_json):
    """Run SAM's painting example on a task file (default paint_door.yaml); print, plot."""
    from ik_control import robots
    from ik_control.examples import paint

    task = paint.load_task(task_file or robots.motion_path('paint_door'))
    results = paint.run_both(task, progress=None if as_json else _progress)
    figures = paint.summary(task, results)
    verdicts = paint.checks(figures)
    png = paint.plot(task, results, plot or 'paint.png')
    report = {'runs': figures, 'checks': [{'claim': c, 'holds': bool(ok)} for c, ok in verdicts],
              'plot': png}
    print(json.dumps(report, indent=2) if as_json else '\n'.join(
        [paint.table(task, figures)] + [f"  [{'ok' if ok else 'FAILS'}] {c}" for c, ok in verdicts]
        + [f'plot: {png}']))
    return 0 if all(ok for _, ok in verdicts) else 1


def _play(args):
    from ik_control.examples import play

    kind, motion = play.load_motion(args.motion)
    model, q0 = play.load_robot(args.robot, args.start_q)
    if args.rate <= 0:
        raise InputError('--rate must be positive')
    result = play.play(model, q0, kind, motion, args.rate, tuple(args.perturbation), args.seed)
    figures = play.summary(result)
    name = f'{motion.name} ({kind}) on {model.name}'
    png = play.plot(name, result, args.plot) if args.plot else None
    figures['plot'] = png
    print(json.dumps(figures, indent=2) if args.json else play.table(name, figures)
          + (f'\nplot: {png}' if png else ''))
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
        for r in list(entry['laws'].values()) + list(entry.get('jumping', {}).get(
                'laws', {}).values()):
            r.pop('error_series')
    slim['checks'] = [{'claim': c, 'holds': bool(ok)} for c, ok in checks]
    slim['plot'] = png
    _emit(args, 'buss', slim, '\n'.join(
        [buss.table(results)]
        + [f"  [{'reproduced' if ok else 'NOT reproduced'}] {claim}" for claim, ok in checks]
        + [f'plot: {png}']))
    return 0   # findings that do not reproduce are reported as such, with their figures


def _bench_step(args):
    from ik_control.bench import step

    results = step.run(samples=args.samples, robot_names=tuple(args.robot or step.ROBOTS),
                       progress=None if args.json else _progress)
    _emit(args, 'step', results, step.table(results))
    return 0


def _bench_loop(args):
    from ik_control.ros.harness import bench_loop

    results = bench_loop.run(seconds=args.seconds, compare_seconds=args.compare_seconds,
                             progress=None if args.json else _progress,
                             action_client=args.action_client)
    _emit(args, 'loop_action' if args.action_client else 'loop', results,
          bench_loop.table(results))
    return 0


def _constraint_controller_demo(args):
    from ik_control import constraint_demo

    if args.robot != 'simon':
        print('ik_control demo: --task constraint is on --robot simon (its right palm on a '
              'plane)', file=sys.stderr)
        return EXIT_USAGE
    if not args.seconds > 0:
        raise InputError('--seconds must be positive')
    results = constraint_demo.run_controller(args.seconds, progress=_progress)
    plot = args.plot or 'demo_simon_constraint.png'
    os.makedirs(os.path.dirname(plot) or '.', exist_ok=True)
    constraint_demo.plot(results, plot, 'SIMON through the controller: right palm kept on '
                         'the table plane')
    print(f'{constraint_demo.controller_table(results)}\nplot: {plot}')
    return 0


def _demo(args):
    if args.task == 'constraint':
        return _constraint_controller_demo(args)
    if (args.task == 'paint') != (args.robot == 'sam9'):
        print("ik_control demo: --task paint is SAM's example on --robot sam9 (and sam9 has "
              'no other task)', file=sys.stderr)
        return EXIT_USAGE
    if args.task == 'paint':
        return _paint_report(None, args.plot, False)
    from ik_control.ros.harness import demo

    try:
        return demo.run(args.robot, args.backend, args.plot)
    except demo.DemoError as exc:
        print(f'ik_control demo: {exc}', file=sys.stderr)
        return EXIT_USAGE


def _move(args):
    from ik_control.ros import move_client

    goal = {'robot': args.robot, 'end_effectors': args.ee or [], 'xyz': args.xyz,
            'quat': args.quat, 'frame': args.frame,
            'position_tolerance': args.position_tolerance,
            'orientation_tolerance': args.orientation_tolerance, 'time_limit': args.time_limit}
    return move_client.run(goal, action_name=args.action, server_timeout=args.wait)


def _bench_ik(args):
    from ik_control.bench import arms, ik

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
    custom = [args.urdf or [], args.base or [], args.tip or []]
    if len({len(c) for c in custom}) != 1:
        raise InputError('give --urdf, --base and --tip once per robot (same count of each)')
    robots = list(args.robot or [])
    robots += [arms.custom_robot(u, b, t) for u, b, t in zip(*custom)]
    if args.robots_file:
        robots += arms.read_robots_file(args.robots_file)
    results = ik.run(robot_names=tuple(robots or arms.ROBOTS), samples=args.samples,
                     timeout_ms=args.timeout_ms, tolerance=args.tolerance, solvers=solvers,
                     seed=args.seed, clock=args.clock, peer_samples=peers, progress=True)
    png = ik.plot(results, os.path.join(_output_dir(args), 'ik.png'))
    data = ik.to_json(results)
    data['plot'] = png
    data['table'] = ik.table(results)
    _emit(args, 'ik', data, f"{data['table']}\nplot: {png}")
    return 0


def _bench_style(args):
    from ik_control.bench import style

    if args.count < 1 or not args.ccd_speed > 0:
        raise InputError('--count and --ccd-speed must be positive')
    if args.pitches < 0 or not args.kp > 0:
        raise InputError('--pitches must be >= 0 and --kp positive')
    results = style.run(count=args.count, ccd_speed=args.ccd_speed, executor=args.executor,
                        pitches=args.pitches, kp=args.kp, limits=args.limits,
                        progress=None if args.json else _progress)
    png = style.plot(results, os.path.join(_output_dir(args), 'style.png'))
    data = style.to_json(results)
    data['plot'] = png
    _emit(args, 'style', data, f'{style.table(results)}\nplot: {png}')


def _bench_jtrrt(args):
    from ik_control.bench import jtrrt

    if args.scenes_dir:
        from ik_control.bench import jtrrt_scenes
        for path in jtrrt_scenes.draw_all(args.scenes_dir):
            print(f'scenario picture: {path}')
    if args.runs == 0:
        return 0
    results = jtrrt.run(runs=args.runs, threshold=args.threshold, orientation=args.orientation,
                        time_limit=args.time_limit, min_progress=args.min_progress,
                        methods=args.methods.split(',') if args.methods else None,
                        progress=None if args.json else _progress)
    suffix = args.tag or ''
    png = jtrrt.plot(results, os.path.join(_output_dir(args), f'jtrrt{suffix}.png'))
    results['plot'] = png
    _emit(args, f'jtrrt{suffix}', results, f'{jtrrt.table(results)}\nplot: {png}')
    return 0


def _bench_report(args):
    from ik_control.bench import report

    path = report.write(args.output_dir, args.docs_dir)
    print(f'wrote {path}')
    return 0


def _bench_fuzz(args):
    from ik_control.ros.harness import fuzz, node_rig

    if args.messages < 1 or not args.rate > 0:
        raise InputError('--messages and --rate must be positive')
    try:
        results = fuzz.run(messages=args.messages, rate=args.rate, robot=args.robot,
                           seed=args.seed, progress=_progress)
    except node_rig.FuzzError as exc:
        print(f'ik_control bench fuzz: {exc}', file=sys.stderr)
        return 1
    _emit(args, 'fuzz', results, fuzz.table(results))
    return 0 if results['violations'] == 0 and results['crashes'] == 0 else 1


def _bench_soak(args):
    from ik_control.ros.harness import node_rig, soak

    if not args.minutes > 0:
        raise InputError('--minutes must be positive')
    try:
        results = soak.run(minutes=args.minutes, robot=args.robot, progress=_progress,
                           realtime_priority=args.realtime_priority)
    except node_rig.FuzzError as exc:
        print(f'ik_control bench soak: {exc}', file=sys.stderr)
        return 1
    results['plot'] = soak.plot(results, os.path.join(_output_dir(args), 'soak.png'))
    _emit(args, 'soak', results, f"{soak.table(results)}\nplot: {results['plot']}")
    return 0 if results['violations'] == 0 and results['crashes'] == 0 else 1


def _bench_reach(args):
    from ik_control.bench import reach

    if args.goals < 1:
        raise InputError('--goals must be positive')
    cases = {}
    for strategy in args.strategy or ['joint']:
        for gain in args.centering_gain or [None]:
            overrides = {'fallback.strategy': strategy}
            label = f'fallback {strategy}'
            if gain is not None:
                overrides['nullspace.centering_gain'] = gain
                label += f', centering {gain:g}'
            cases[label] = overrides
    results = reach.run(tuple(args.robot or reach.ROBOTS), args.goals, args.seed, cases,
                        progress=None if args.json else _progress)
    _emit(args, 'reach', results, reach.table(results))
    return 0 if all(r['reached_percent'] >= 99.5 for r in results['results']) else 1


def _bench_hal(args):
    from ik_control.bench import hal

    if args.samples < 1:
        raise InputError('--samples must be positive')
    results = hal.run(tuple(args.robot or hal.arms.ROBOTS), args.samples, args.seed,
                      progress=None if args.json else _progress)
    _emit(args, 'hal', results, hal.table(results))
    return 0


def _constraint_demo(args):
    from ik_control import constraint_demo

    if not (args.seconds > 0 and args.rate > 0):
        raise InputError('--seconds and --rate must be positive')
    results = constraint_demo.run(args.seconds, args.rate,
                                  progress=None if args.json else _progress)
    os.makedirs(os.path.dirname(args.plot) or '.', exist_ok=True)
    results['plot'] = constraint_demo.plot(results, args.plot)
    text = f"{constraint_demo.table(results)}\nplot: {results['plot']}"
    print(json.dumps(results['summary'] | {'plot': results['plot']}, indent=2)
          if args.json else text)
    return 0


def build_parser():
    """Return the argument parser of the ``ik_control`` command."""
    parser = argparse.ArgumentParser(prog='ik_control', description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest='command', required=True)

    solve = sub.add_parser('solve', help='position IK for frames of a URDF (one or several '
                           'end effectors)')
    solve.add_argument('--urdf', required=True, help='URDF file or DH file (.yaml)')
    solve.add_argument('--base', default=None, help='base frame (default: the model root)')
    solve.add_argument('--tip', required=True, action='append',
                       help="end-effector frame (repeat for several, e.g. both of SIMON's "
                       'hands: one --xyz and --quat each, in the same order)')
    solve.add_argument('--xyz', nargs=3, type=float, required=True, action='append',
                       metavar=('X', 'Y', 'Z'), help='target position in the base frame [m]')
    solve.add_argument('--quat', nargs=4, type=float, action='append',
                       metavar=('QX', 'QY', 'QZ', 'QW'),
                       help='target orientation (unit quaternion x y z w); none: position only')
    solve.add_argument('--joints', help='comma-separated controlled joints (default: the '
                       'chains from --base to the tips)')
    solve.add_argument('--seed-q', nargs='+', type=float, help='initial joint values [rad]')
    solve.add_argument('--timeout-ms', type=float, default=50.0, help='time budget [ms]')
    solve.add_argument('--tolerance', type=float, default=1e-5,
                       help='position [m] and rotation [rad] tolerance')
    solve.add_argument('--random-seed', type=int, default=None, help='seed for restarts')
    solve.add_argument('--method', choices=('lm', 'ccd', 'hal', 'analytic'), default='lm',
                       help='lm: Levenberg-Marquardt (default); ccd: cyclic coordinate '
                            'descent (several tips: swept together); hal: human-arm closed '
                            'form + 3 refinement steps; analytic: closed form only (planar '
                            "two-link or 7-DoF arm); hal and analytic solve each tip's "
                            '7-joint arm, the other joints held at the seed (--seed-q, '
                            'default mid-range)')
    solve.add_argument('--json', action='store_true', help='print JSON')
    solve.set_defaults(func=_solve)

    dh = sub.add_parser('dh-to-urdf', help='URDF of a robot given as a DH table (YAML file)')
    dh.add_argument('file', help='DH file, e.g. config/robots/sam9.yaml')
    dh.add_argument('-o', '--output', metavar='FILE', help='URDF to write (default: stdout)')
    dh.set_defaults(func=_dh_to_urdf)

    paint = sub.add_parser('paint', help="SAM's spray-painting example without ROS: the "
                           '9-joint robot paints a door with and without avoiding it')
    paint.add_argument('--task', metavar='FILE', default=None,
                       help='task file (default: config/motions/paint_door.yaml)')
    paint.add_argument('--plot', metavar='FILE', default=None,
                       help='PNG to write (default: paint.png in the current directory)')
    paint.add_argument('--json', action='store_true', help='print JSON instead of the table')
    paint.set_defaults(func=_paint)

    play = sub.add_parser('play', help='a velocity profile or key-pose path (YAML) on a robot '
                          'without ROS: tracking error, plot')
    play.add_argument('motion', help='motion file, e.g. config/motions/wave.yaml')
    play.add_argument('--robot', default='wam',
                      help='bundled robot (wam, simon, simon_right_arm) or DH file (default: wam)')
    play.add_argument('--start-q', nargs='+', type=float, default=None,
                      help='start joint values [rad] (default: ready pose, or mid-range)')
    play.add_argument('--rate', type=float, default=250.0, help='control rate [Hz]')
    play.add_argument('--perturbation', nargs=2, type=float, default=(0.0, 0.0),
                      metavar=('LINEAR', 'ANGULAR'),
                      help='profile perturbation amplitudes [m/s, rad/s] (default: none)')
    play.add_argument('--seed', type=int, default=None, help='seed of the perturbation')
    play.add_argument('--plot', metavar='FILE', default=None, help='PNG to write')
    play.add_argument('--json', action='store_true', help='print JSON')
    play.set_defaults(func=_play)

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
    s.add_argument('--robot', action='append', metavar='ROBOT',
                   help='bundled robot (wam, simon, simon_right_arm) or DH file (.yaml, e.g. '
                        'config/robots/sam9.yaml); repeatable (default: wam and simon)')
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
    lp.add_argument('--action-client', action='store_true',
                    help='the chosen design with topic goals, then with MoveToPose action '
                         'goals and feedback (writes loop_action.json)')
    lp.add_argument('--json', action='store_true')
    lp.add_argument('--output-dir', default='bench_results')
    lp.add_argument('--save', action=argparse.BooleanOptionalAction, default=True,
                    help='write <output-dir>/loop.json (default: yes)')
    lp.set_defaults(func=_bench_loop)

    ik = bsub.add_parser('ik', help="position IK solve rate and time vs peers (TRAC-IK's method)")
    ik.add_argument('--robot', action='append', metavar='ROBOT',
                    help='robot to run (repeatable; default: wam, simon_right_arm and panda; '
                         'ur5, kinova, talos, pr2: arms of example-robot-data; or a DH file, '
                         'e.g. config/robots/sam9.yaml: base_link to tool, all joints)')
    ik.add_argument('--urdf', action='append', metavar='FILE',
                    help='any URDF or DH file (repeatable, with one --base and --tip each)')
    ik.add_argument('--base', action='append', metavar='FRAME', help='base frame of --urdf')
    ik.add_argument('--tip', action='append', metavar='FRAME',
                    help='tip frame of --urdf (controlled: the chain from --base to --tip)')
    ik.add_argument('--robots-file', metavar='YAML',
                    help='YAML list of robots: {urdf, base, tip, name (optional), joints '
                         '(optional; default: the chain)}')
    ik.add_argument('--samples', type=int, default=10000,
                    help='random joint configurations per robot (default: 10000)')
    ik.add_argument('--timeout-ms', type=float, default=5.0,
                    help='time limit per solve [ms] (default: 5)')
    ik.add_argument('--tolerance', type=float, default=1e-5,
                    help='position [m] and rotation [rad] tolerance (default: 1e-5)')
    ik.add_argument('--solvers', default=None,
                    help='comma-separated subset of ik_control,ik_control-dls,trac_ik-speed,'
                         'trac_ik-distance,rtb-lm,rtb-nr,kdl,pink,ikpy (default: all)')
    ik.add_argument('--peer-samples', type=int, default=None,
                    help='samples for every peer (default: trac_ik-distance, rtb-*, kdl '
                         '2000, pink 1000, ikpy 300; never more than --samples)')
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

    st = bsub.add_parser('style', help='stylized motion (TSFKS + eq. 2) vs CCD on SIMON: '
                         "Gielniak et al.'s Table I (sn), constraint error, adaptation time")
    st.add_argument('--count', type=int, default=83, help='point constraints (default: 83)')
    st.add_argument('--ccd-speed', type=float, default=0.15,
                    help="CCD's per-tick joint step as a fraction of the velocity limit "
                         '(default: 0.15)')
    st.add_argument('--kp', type=float, default=2000.0,
                    help="MuJoCo servo stiffness [N m/rad] (default: 2000, the simulator's)")
    st.add_argument('--pitches', type=int, default=10,
                    help='baseball pitches the swing is adapted to (default: 10; 0: none)')
    st.add_argument('--executor', choices=('mujoco', 'kinematic'), default='mujoco',
                    help='where the trajectories run: MuJoCo SIMON at 1 kHz (default) or '
                         'the commands themselves')
    st.add_argument('--limits', action=argparse.BooleanOptionalAction, default=True,
                    help="run both methods within SIMON's limits, slowed down alike, through "
                         "ik_controller's joint-trajectory law, the robot's saturation on "
                         '(default); --no-limits: each at its own speed, limits off (the '
                         'earlier measurement)')
    st.add_argument('--json', action='store_true', help='print JSON instead of the table')
    st.add_argument('--output-dir', default='bench_results',
                    help='where style.json and style.png go (default: bench_results)')
    st.add_argument('--save', action=argparse.BooleanOptionalAction, default=True,
                    help='write <output-dir>/style.json (default: yes)')
    st.set_defaults(func=_bench_style)

    jt = bsub.add_parser('jtrrt', help='JT-RRT vs the Bertram baseline vs RRT-Connect on six '
                         "WAM scenarios (the paper's Table I)")
    jt.add_argument('--runs', type=int, default=50, help='seeds per planner (default: 50)')
    jt.add_argument('--threshold', type=float, default=0.15,
                    help='goal position threshold [m] (default: 0.15, as in the paper)')
    jt.add_argument('--orientation', action='store_true',
                    help="also reach the scenario's goal orientation (within 0.1 rad)")
    jt.add_argument('--time-limit', type=float, default=10.0,
                    help='search time limit per run [s] (default: 10)')
    jt.add_argument('--min-progress', type=float, default=0.002,
                    help='JT-RRT: end a goal extension whose step gains less [m] '
                         "(the paper's sec. V improvement; default: 0.002; 0 = Fig. 5)")
    jt.add_argument('--methods', default=None,
                    help='comma-separated subset of jt,bertram,rrt_connect (default: all)')
    jt.add_argument('--scenes-dir', default=None,
                    help='also draw a picture of each scenario there (e.g. docs/jtrrt); '
                         'with --runs 0 only the pictures')
    jt.add_argument('--tag', default='', help='suffix of the result files (jtrrt<tag>.json)')
    jt.add_argument('--json', action='store_true', help='print JSON instead of the table')
    jt.add_argument('--output-dir', default='bench_results',
                    help='where jtrrt.json and jtrrt.png go (default: bench_results)')
    jt.add_argument('--save', action=argparse.BooleanOptionalAction, default=True,
                    help='write <output-dir>/jtrrt.json (default: yes)')
    jt.set_defaults(func=_bench_jtrrt)

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

    rc = bsub.add_parser('reach', help='the controller core from random states to random '
                         'reachable pose goals: reached %%, time, position-IK fallbacks, '
                         'peak speed and acceleration')
    rc.add_argument('--robot', action='append', choices=('wam', 'simon'),
                    help='robot (repeatable; default: both)')
    rc.add_argument('--goals', type=int, default=1000, help='goals per robot and case')
    rc.add_argument('--seed', type=int, default=0, help='seed of the start states and goals')
    rc.add_argument('--strategy', action='append', choices=('joint', 'posture', 'off'),
                    help='fallback.strategy to run (repeatable; default: joint)')
    rc.add_argument('--centering-gain', action='append', type=float,
                    help='nullspace.centering_gain [rad^2/s] (repeatable; default: the '
                    "config's)")
    rc.add_argument('--json', action='store_true', help='print JSON instead of the table')
    rc.add_argument('--output-dir', default='bench_results', help='where reach.json goes')
    rc.add_argument('--save', action=argparse.BooleanOptionalAction, default=True,
                    help='write <output-dir>/reach.json (default: yes)')
    rc.set_defaults(func=_bench_reach)

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

    hl = bsub.add_parser('hal', help="HAL's hand error before and after refinement steps")
    hl.add_argument('--robot', action='append', choices=('wam', 'simon_right_arm', 'panda'),
                    help='robot to run (repeatable; default: all three)')
    hl.add_argument('--samples', type=int, default=300, help='targets per robot')
    hl.add_argument('--seed', type=int, default=0, help='seed of the random configurations')
    hl.add_argument('--json', action='store_true', help='print JSON instead of the table')
    hl.add_argument('--output-dir', default='bench_results', help='where hal.json goes')
    hl.add_argument('--save', action=argparse.BooleanOptionalAction, default=True,
                    help='write <output-dir>/hal.json (default: yes)')
    hl.set_defaults(func=_bench_hal)

    cd = sub.add_parser('constraint-demo', help="SIMON's right palm kept on a table plane "
                        'while its goal moves above and below it (ROS-free)')
    cd.add_argument('--seconds', type=float, default=8.0, help='duration [s] (default: 8)')
    cd.add_argument('--rate', type=float, default=100.0, help='ticks per second [Hz]')
    cd.add_argument('--plot', default='bench_results/constraint_demo.png',
                    help='PNG of the errors over time (default: bench_results/...)')
    cd.add_argument('--json', action='store_true', help='print the summary as JSON')
    cd.set_defaults(func=_constraint_demo)

    demo = sub.add_parser('demo', help='the controller on the simulated robot: a sequence of '
                          'goals, a summary table and a plot')
    demo.add_argument('--robot', choices=('wam', 'simon', 'sam9'), default='wam',
                      help='bundled robot (default: wam); sam9: SAM Table 1, with --task paint')
    demo.add_argument('--task', choices=('goals', 'paint', 'constraint'), default='goals',
                      help='goals: the goal sequence on sim_robot + ik_controller (default); '
                      "paint: SAM's spray-painting example (the same as `ik_control paint`); "
                      "constraint: SIMON's right palm kept on a table plane by the "
                      "controller's constraints while its goal circles above and below it "
                      '(ROS-free: the controller core and a kinematic SIMON at 1 kHz)')
    demo.add_argument('--backend', choices=('kinematic', 'mujoco'), default='kinematic',
                      help='sim_robot backend (default: kinematic)')
    demo.add_argument('--plot', metavar='FILE', default=None,
                      help='PNG to write (default: demo_<robot>.png in the current directory; '
                      'demo_simon_constraint.png for --task constraint)')
    demo.add_argument('--seconds', type=float, default=8.0,
                      help='--task constraint: duration [s] (default: 8, two goal circles)')
    demo.set_defaults(func=_demo)

    mv = sub.add_parser('move', help='send a MoveToPose goal to a running ik_controller; '
                        'print feedback and the result')
    mv.add_argument('--robot', default='wam', help='bundled robot (default: wam): its '
                    'base frame and end effectors')
    mv.add_argument('--ee', action='append', help='end effector (repeat for several, in '
                    'the order of --xyz/--quat; default: the only one)')
    mv.add_argument('--xyz', type=float, nargs=3, action='append', required=True,
                    metavar=('X', 'Y', 'Z'), help='target position [m] (one per --ee)')
    mv.add_argument('--quat', type=float, nargs=4, action='append', required=True,
                    metavar=('X', 'Y', 'Z', 'W'), help='target orientation, unit quaternion')
    mv.add_argument('--frame', default=None, help="targets' frame (default: base frame)")
    mv.add_argument('--position-tolerance', type=float, default=0.0,
                    help="[m] (default 0: the node's goal.position_tolerance)")
    mv.add_argument('--orientation-tolerance', type=float, default=0.0,
                    help="[rad] (default 0: the node's goal.orientation_tolerance)")
    mv.add_argument('--time-limit', type=float, default=0.0, help='[s] (default 0: none)')
    mv.add_argument('--action', default='/ik_controller/move_to_pose',
                    help='action name (default: /ik_controller/move_to_pose)')
    mv.add_argument('--wait', type=float, default=10.0,
                    help='seconds to wait for the action server (default 10)')
    mv.set_defaults(func=_move)
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

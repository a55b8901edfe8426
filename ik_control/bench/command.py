"""
The ``ik_control bench`` subcommands: their arguments, and each run, table, plot and JSON.

Each benchmark prints its figures and compares peers in the same run; results are saved
as ``<output-dir>/<name>.json`` (:func:`ik_control.console.save`) for ``bench report``.
"""

import argparse
import json
import os
import sys

from ik_control.console import emit, output_dir, progress
from ik_control.validation import InputError


def _bench_buss(args):
    from ik_control.bench import buss, buss_alternate

    results = buss.run(steps=args.steps, progress=None if args.json else progress)
    checks = buss.checks(results)
    alternate = buss_alternate.run(progress=None if args.json else progress)
    png = os.path.join(output_dir(args), 'buss.png')
    buss.plot(results, png)
    slim = json.loads(json.dumps(results))
    for entry in slim['shapes'].values():
        for r in list(entry['laws'].values()) + list(entry.get('jumping', {}).get(
                'laws', {}).values()):
            r.pop('error_series')
    slim['checks'] = [{'claim': c, 'holds': bool(ok)} for c, ok in checks]
    slim['alternate_jacobian'] = dict(alternate, checks=[
        {'claim': c, 'holds': bool(ok), 'figures': f}
        for c, ok, f in buss_alternate.checks(alternate)])
    slim['plot'] = png
    emit(args, 'buss', slim, '\n'.join(
        [buss.table(results)]
        + [f"  [{'reproduced' if ok else 'NOT reproduced'}] {claim}" for claim, ok in checks]
        + buss_alternate.table(alternate) + [f'plot: {png}']))
    return 0   # findings that do not reproduce are reported as such, with their figures


def _bench_step(args):
    from ik_control.bench import step

    results = step.run(samples=args.samples, robot_names=tuple(args.robot or step.ROBOTS),
                       progress=None if args.json else progress)
    emit(args, 'step', results, step.table(results))
    return 0


def _bench_loop(args):
    from ik_control.ros.harness import bench_loop

    results = bench_loop.run(seconds=args.seconds, compare_seconds=args.compare_seconds,
                             progress=None if args.json else progress,
                             action_client=args.action_client, profile=args.profile,
                             view=args.view)
    emit(args, 'loop_action' if args.action_client else 'loop', results,
         bench_loop.table(results))
    return 0


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
    png = ik.plot(results, os.path.join(output_dir(args), 'ik.png'))
    data = ik.to_json(results)
    data['plot'] = png
    data['table'] = ik.table(results)
    emit(args, 'ik', data, f"{data['table']}\nplot: {png}")
    return 0


def _bench_style(args):
    from ik_control.bench import style, style_report

    if args.count < 1 or not args.ccd_speed > 0:
        raise InputError('--count and --ccd-speed must be positive')
    if args.pitches < 0 or not args.kp > 0:
        raise InputError('--pitches must be >= 0 and --kp positive')
    results = style.run(count=args.count, ccd_speed=args.ccd_speed, executor=args.executor,
                        pitches=args.pitches, kp=args.kp, limits=args.limits,
                        progress=None if args.json else progress, exemplar=args.exemplar)
    png = style_report.plot(results, os.path.join(output_dir(args), 'style.png'))
    data = style_report.to_json(results)
    data['plot'] = png
    emit(args, 'style', data, f'{style_report.table(results)}\nplot: {png}')


def _bench_jtrrt(args):
    from ik_control.bench import jtrrt

    if args.scenes_dir:
        from ik_control.bench import jtrrt_scenes
        for path in jtrrt_scenes.draw_all(args.scenes_dir):
            print(f'scenario picture: {path}')
    if args.runs == 0:
        return 0
    suffix = args.tag or ''
    blocks, texts = {}, []
    for settings in (('paper', 'ours') if args.settings == 'both' else (args.settings,)):
        results = jtrrt.run(runs=args.runs, threshold=args.threshold,
                            orientation=args.orientation, time_limit=args.time_limit,
                            settings=settings, min_progress=args.min_progress,
                            escape_steps=args.escape_steps, p_goal=args.p_goal,
                            jt_step=args.jt_step,
                            methods=args.methods.split(',') if args.methods else None,
                            scenarios=args.scenarios.split(',') if args.scenarios else None,
                            progress=None if args.json else progress)
        png = jtrrt.plot(results, os.path.join(output_dir(args),
                                               f'jtrrt{suffix}_{settings}.png'))
        results['plot'] = png
        blocks[settings] = results
        texts.append(f'{jtrrt.table(results)}\nplot: {png}')
    emit(args, f'jtrrt{suffix}', blocks, '\n\n'.join(texts))
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
                           seed=args.seed, progress=progress)
    except node_rig.FuzzError as exc:
        print(f'ik_control bench fuzz: {exc}', file=sys.stderr)
        return 1
    emit(args, 'fuzz', results, fuzz.table(results))
    return 0 if results['violations'] == 0 and results['crashes'] == 0 else 1


def _bench_soak(args):
    from ik_control.ros.harness import node_rig, soak

    if not args.minutes > 0:
        raise InputError('--minutes must be positive')
    try:
        results = soak.run(minutes=args.minutes, robot=args.robot, progress=progress,
                           realtime_priority=args.realtime_priority)
    except node_rig.FuzzError as exc:
        print(f'ik_control bench soak: {exc}', file=sys.stderr)
        return 1
    results['plot'] = soak.plot(results, os.path.join(output_dir(args), 'soak.png'))
    emit(args, 'soak', results, f"{soak.table(results)}\nplot: {results['plot']}")
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
                        progress=None if args.json else progress)
    emit(args, 'reach', results, reach.table(results))
    return 0 if all(r['reached_percent'] >= 99.5 for r in results['results']) else 1


def _bench_hal(args):
    from ik_control.bench import hal

    if args.samples < 1:
        raise InputError('--samples must be positive')
    results = hal.run(tuple(args.robot or hal.arms.ROBOTS), args.samples, args.seed,
                      progress=None if args.json else progress)
    emit(args, 'hal', results, hal.table(results))
    return 0


def _output_options(parser, name):
    """Add --json, --output-dir and --save (of ``<output-dir>/<name>.json``) to ``parser``."""
    parser.add_argument('--json', action='store_true', help='print JSON instead of the table')
    parser.add_argument('--output-dir', default='bench_results',
                        help=f'where {name}.json and its plot go (default: bench_results)')
    parser.add_argument('--save', action=argparse.BooleanOptionalAction, default=True,
                        help=f'write <output-dir>/{name}.json (default: yes)')


def add_parser(sub):
    """Add ``bench`` and its subcommands to the ``ik_control`` command's ``sub`` parsers."""
    bench = sub.add_parser('bench', help='benchmarks (figures and plots)')
    bsub = bench.add_subparsers(dest='bench', required=True)
    b = bsub.add_parser('buss', help="Buss's Y / double-Y tracking experiment")
    b.add_argument('--steps', type=int, default=1200)
    _output_options(b, 'buss')
    b.set_defaults(func=_bench_buss)
    s = bsub.add_parser('step', help='microseconds per control update vs pink')
    s.add_argument('--samples', type=int, default=20000)
    s.add_argument('--robot', action='append', metavar='ROBOT',
                   help='bundled robot (wam, simon, simon_right_arm), DH file (.yaml, e.g. '
                        'config/robots/sam9.yaml) or arm of example-robot-data (panda, '
                        'ur5, kinova, ...); repeatable (default: wam and simon)')
    _output_options(s, 'step')
    s.set_defaults(func=_bench_step)

    lp = bsub.add_parser('loop', help='SIMON at 1 kHz: rate, jitter, latency per loop design')
    lp.add_argument('--seconds', type=float, default=60.0,
                    help='measurement of the chosen design [s] (default: 60)')
    lp.add_argument('--compare-seconds', type=float, default=15.0,
                    help='measurement of each alternative design [s] (default: 15)')
    lp.add_argument('--action-client', action='store_true',
                    help='the chosen design with topic goals, then with MoveToPose action '
                         'goals and feedback (writes loop_action.json)')
    lp.add_argument('--profile', action='store_true',
                    help="also sample the chosen design's controller with py-spy and print "
                         "each function's share of the tick")
    lp.add_argument('--view', action='store_true',
                    help='also the chosen design with the browser view (ik_viewer) attached, '
                         'for --compare-seconds (row <chosen>_viewer)')
    _output_options(lp, 'loop')
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
    _output_options(ik, 'ik')
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
    st.add_argument('--exemplar', choices=('current', 'original'), default='current',
                    help='the pick_and_place exemplar: the shipped one (default) or the one '
                         'first authored, before it was re-authored '
                         '(config/motions/pick_and_place_original.yaml)')
    _output_options(st, 'style')
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
    jt.add_argument('--settings', choices=('paper', 'ours', 'both'), default='both',
                    help="the planners' settings: the paper's (p_g 0.5, JT step 0.1 rad, "
                         "Fig. 5's extension), ours (p_g 0.7, JT step 0.5 rad, the sec. V "
                         'rule, 6 escape steps), or both, one block each (default: both)')
    jt.add_argument('--p-goal', type=float, default=None,
                    help="JT-RRT's goal bias p_g, replacing the settings' value")
    jt.add_argument('--jt-step', type=float, default=None,
                    help='JT-RRT: largest joint change of one Jacobian-transpose step [rad], '
                         "replacing the settings' value")
    jt.add_argument('--min-progress', type=float, default=None,
                    help='JT-RRT: end a goal extension whose step gains less [m] '
                         "(the paper's sec. V improvement; 0 = Fig. 5), replacing the "
                         "settings' value")
    jt.add_argument('--escape-steps', type=int, default=None,
                    help='JT-RRT: random steps per goal extension after a colliding JT step, '
                         "not in the paper (0 = the paper's extension), replacing the "
                         "settings' value")
    jt.add_argument('--scenarios', default=None,
                    help='comma-separated scenario names (default: all six)')
    jt.add_argument('--methods', default=None,
                    help='comma-separated subset of jt,bertram,rrt_connect (default: all)')
    jt.add_argument('--scenes-dir', default=None,
                    help='also draw a picture of each scenario there (e.g. docs/jtrrt); '
                         'with --runs 0 only the pictures')
    jt.add_argument('--tag', default='', help='suffix of the result files (jtrrt<tag>.json)')
    _output_options(jt, 'jtrrt')
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
    _output_options(fz, 'fuzz')
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
    _output_options(rc, 'reach')
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
    _output_options(soak, 'soak')
    soak.set_defaults(func=_bench_soak)

    hl = bsub.add_parser('hal', help="HAL's hand error before and after refinement steps")
    hl.add_argument('--robot', action='append', choices=('wam', 'simon_right_arm', 'panda'),
                    help='robot to run (repeatable; default: all three)')
    hl.add_argument('--samples', type=int, default=300, help='targets per robot')
    hl.add_argument('--seed', type=int, default=0, help='seed of the random configurations')
    _output_options(hl, 'hal')
    hl.set_defaults(func=_bench_hal)

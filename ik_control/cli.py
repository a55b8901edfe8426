"""
The ``ik_control`` command: ``solve``, ``bench`` (:mod:`ik_control.bench.command`) and the demos.

Every subcommand prints a clear one-line message and exits non-zero on bad input
(unknown frame, unreadable URDF, no solution within the budget); tracebacks are for bugs.
"""

import argparse
import json
import os
import sys

from ik_control import solve_command
from ik_control.bench import command as bench_command
from ik_control.console import progress
from ik_control.validation import IkControlError, InputError

EXIT_USAGE = 2


def _dh_to_urdf(args):
    from ik_control.kinematics.dh_file import load_dh_file

    text = load_dh_file(args.file).urdf() + '\n'
    if args.output:
        with open(args.output, 'w', encoding='utf-8') as stream:
            stream.write(text)
    else:
        sys.stdout.write(text)
    return 0


def _params(args):
    """Print ik_controller's parameter table, or put it into a README (parameter_table)."""
    from ik_control.ros import parameter_table

    if args.write_readme:
        changed = parameter_table.write_readme(args.write_readme)
        print(f"{args.write_readme}: parameter table {'rewritten' if changed else 'unchanged'}")
    else:
        print(parameter_table.markdown_table())
    return 0


def _collision_matrix(args):
    """Write the allowed-collision SRDF of a URDF (ik_control.collision.acm)."""
    from ik_control import robots
    from ik_control.collision import acm
    from ik_control.kinematics import RobotModel

    if args.urdf in robots.SETUPS:
        setup = robots.SETUPS[args.urdf]
        model = robots.robot(args.urdf)
        pose = args.pose or setup.ready
    else:
        model = RobotModel.from_urdf(args.urdf, joints=args.joints or None)
        pose = args.pose
    if pose is not None and len(pose) != model.nq:
        raise InputError(f'--pose needs {model.nq} values ({", ".join(model.joint_names)}), '
                         f'got {len(pose)}')
    result = acm.compute(model, samples=args.samples, seed=args.seed, pose=pose,
                         never=args.never, convex=args.convex_meshes,
                         progress=lambda k, n: progress(f'{k}/{n} configurations sampled'))
    counts = {}
    for _, _, why in result.disabled:
        counts[why] = counts.get(why, 0) + 1
    text = acm.srdf_text(result, f'written by ik_control collision-matrix: {args.samples} '
                         f'samples, seed {args.seed}; ' + ', '.join(
                             f'{n} {why}' for why, n in sorted(counts.items())))
    if args.output:
        with open(args.output, 'w', encoding='utf-8') as stream:
            stream.write(text)
        print(f'{args.output}: {len(result.disabled)} of {result.checked_pairs} link pairs '
              f'disabled ({", ".join(f"{n} {why}" for why, n in sorted(counts.items()))})')
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
    results = paint.run_both(task, progress=None if as_json else progress)
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


def _constraint_controller_demo(args):
    from ik_control import constraint_demo

    if args.robot != 'simon':
        print('ik_control demo: --task constraint is on --robot simon (its right palm on a '
              'plane)', file=sys.stderr)
        return EXIT_USAGE
    if not args.seconds > 0:
        raise InputError('--seconds must be positive')
    results = constraint_demo.run_controller(args.seconds, progress=progress)
    plot = args.plot or 'demo_simon_constraint.png'
    os.makedirs(os.path.dirname(plot) or '.', exist_ok=True)
    constraint_demo.plot(results, plot, 'SIMON through the controller: right palm kept on '
                         'the table plane')
    print(f'{constraint_demo.controller_table(results)}\nplot: {plot}')
    return 0


def _setup(args):
    """Write the nodes' configuration of an arm from its URDF (ik_control.arm_setup)."""
    from ik_control import arm_setup

    result = arm_setup.write(args.urdf, args.tip, args.out, base=args.base, name=args.name,
                             rate_hz=args.rate, samples=args.samples,
                             progress=lambda k, n: progress(f'{k}/{n} configurations '
                                                            'sampled (allowed collisions)'))
    for line in result.warnings:
        print(f'ik_control setup: warning: {line}', file=sys.stderr)
    print(f'{len(result.joints)} joints: {", ".join(result.joints)}\n'
          f'wrote {result.params}\n      {result.srdf}\n      {result.controllers}\n'
          'bring it up (ROS 2):\n  ' + result.commands[0]
          + '\nor the two nodes without launch:\n  ' + result.commands[1])
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
        return demo.run(args.robot, args.backend, args.plot, args.bag, args.view)
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


def _view(args):
    from ik_control.ros import viewer_node

    if sum(x is not None for x in (args.robot, args.params_file, args.urdf)) == 0:
        args.robot = 'wam'
    if args.robot is not None and (args.params_file or args.urdf):
        print('ik_control view: give --robot, or --params-file, or --urdf with --base and '
              '--tip', file=sys.stderr)
        return EXIT_USAGE
    if args.urdf is not None and args.params_file is None and not args.tip:
        print('ik_control view: --urdf needs --tip (the end effectors; and --base)',
              file=sys.stderr)
        return EXIT_USAGE
    ros_args = viewer_node.robot_arguments(args.robot, args.params_file, args.urdf,
                                           args.base, args.tip or ())
    ros_args += ['-p', f'host:={args.host}', '-p', f'port:={args.port}',
                 '-p', f'controller:={args.controller}']
    if args.namespace:
        ros_args += ['-r', f'__ns:={args.namespace}']
    print(f'ik_control view: http://{args.host}:{args.port}/ (Ctrl-C to stop)', flush=True)
    return viewer_node.run_node(viewer_node.NODE_NAME, viewer_node.ViewerNode,
                                args=['ik_viewer', '--ros-args', *ros_args])


def _constraint_demo(args):
    from ik_control import constraint_demo

    if not (args.seconds > 0 and args.rate > 0 and args.radius > 0 and args.height >= 0):
        raise InputError('--seconds, --rate and --radius must be positive, --height >= 0')
    results = constraint_demo.run(args.seconds, args.rate, radius=args.radius,
                                  height=args.height, progress=None if args.json else progress,
                                  centre_of_mass=args.centre_of_mass)
    os.makedirs(os.path.dirname(args.plot) or '.', exist_ok=True)
    results['plot'] = constraint_demo.plot(results, args.plot, (
        'SIMON: right palm on the table plane, centre of mass on its vertical line'
        if args.centre_of_mass else None))
    text = f"{constraint_demo.table(results)}\nplot: {results['plot']}"
    print(json.dumps(results['summary'] | {'plot': results['plot']}, indent=2)
          if args.json else text)
    return 0


def build_parser():
    """Return the argument parser of the ``ik_control`` command."""
    parser = argparse.ArgumentParser(prog='ik_control', description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest='command', required=True)

    solve_command.add_parser(sub)

    dh = sub.add_parser('dh-to-urdf', help='URDF of a robot given as a DH table (YAML file)')
    dh.add_argument('file', help='DH file, e.g. config/robots/sam9.yaml')
    dh.add_argument('-o', '--output', metavar='FILE', help='URDF to write (default: stdout)')
    dh.set_defaults(func=_dh_to_urdf)

    params = sub.add_parser('params', help="ik_controller's parameters as the README's "
                            'Markdown table, written from their one declaration')
    params.add_argument('--write-readme', metavar='FILE',
                        help="replace the parameter table in FILE (the README's) instead of "
                             'printing it')
    params.set_defaults(func=_params)

    acm = sub.add_parser('collision-matrix', help='the allowed-collision matrix of a URDF as '
                         "an SRDF (MoveIt's setup-assistant rules: adjacent links, contact at "
                         'the default pose, contact in every sample)')
    acm.add_argument('urdf', help='URDF file, or a bundled robot (wam, simon)')
    acm.add_argument('-o', '--output', metavar='FILE', help='SRDF to write (default: stdout)')
    acm.add_argument('--samples', type=int, default=1000,
                     help='random configurations sampled (default 1000)')
    acm.add_argument('--seed', type=int, default=0, help='random seed (default 0)')
    acm.add_argument('--joints', nargs='+', default=None,
                     help='joints to sample (default: every actuated joint)')
    acm.add_argument('--pose', nargs='+', type=float, default=None,
                     help='default pose [rad or m] of the joints (default: the ready pose of '
                          'a bundled robot, else 0 clipped into the limits)')
    acm.add_argument('--never', action='store_true',
                     help="also disable pairs never in contact in the samples (MoveIt's speed "
                          'option: a rare pose is still a real collision)')
    acm.add_argument('--convex-meshes', action='store_true',
                     help='measure meshes as their convex hulls, as the controller does with '
                          'collision.convex_meshes: true')
    acm.set_defaults(func=_collision_matrix)

    arm = sub.add_parser('setup', help="the nodes' configuration of any arm from its URDF: "
                         'parameter file, allowed-collision SRDF, ros2_control controllers, '
                         'and the command that brings it up')
    arm.add_argument('urdf', help='URDF file of the arm')
    arm.add_argument('--tip', action='append', required=True, metavar='FRAME',
                     help='end-effector frame (a link; repeat for each arm of a robot)')
    arm.add_argument('--base', default=None, metavar='FRAME',
                     help="base frame (default: the URDF's root link)")
    arm.add_argument('--out', default='.', metavar='DIR',
                     help='folder for the files (default: the current one)')
    arm.add_argument('--name', default=None,
                     help="stem of the files (default: the URDF file's)")
    arm.add_argument('--rate', type=float, default=500.0,
                     help='control and simulation rate [Hz] (default 500)')
    arm.add_argument('--samples', type=int, default=1000,
                     help='random configurations of the allowed-collision matrix (default '
                          '1000)')
    arm.set_defaults(func=_setup)

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

    bench_command.add_parser(sub)

    cd = sub.add_parser('constraint-demo', help="SIMON's right palm kept on a table plane "
                        'while its goal moves above and below it (ROS-free)')
    cd.add_argument('--seconds', type=float, default=8.0, help='duration [s] (default: 8)')
    cd.add_argument('--rate', type=float, default=100.0, help='ticks per second [Hz]')
    cd.add_argument('--radius', type=float, default=0.1, help="the goal circle's radius [m]")
    cd.add_argument('--height', type=float, default=0.06,
                    help='how far the tilted circle rises above the table [m]')
    cd.add_argument('--centre-of-mass', action='store_true',
                    help="a fifth constraint: SIMON's centre of mass on its vertical line")
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
    demo.add_argument('--bag', metavar='DIR', default=None,
                      help='--task goals: also record the run as a rosbag2 in the new '
                      'directory DIR (joint_states, commands, goals, goal states, status, '
                      'diagnostics; ros2 bag play opens it)')
    demo.add_argument('--view', type=int, nargs='?', const=8080, default=None, metavar='PORT',
                      help='--task goals: also serve the live browser view on '
                      'http://127.0.0.1:PORT/ (default port 8080) while the demo runs')
    demo.set_defaults(func=_demo)

    view = sub.add_parser('view', help='the robot live in a browser page (viser): goals, '
                          'targets, obstacles, status; drag a gizmo to send a pose goal')
    view.add_argument('--robot', choices=('wam', 'simon'), default=None,
                      help='bundled robot (default: wam)')
    view.add_argument('--params-file', default=None, metavar='FILE',
                      help="a parameter file naming the robot (ik_controller's section: "
                      'what ik_control setup writes)')
    view.add_argument('--urdf', default=None, metavar='FILE', help='a URDF (with --base, --tip)')
    view.add_argument('--base', default=None, help='--urdf: the base frame')
    view.add_argument('--tip', action='append', help='--urdf: an end effector (repeatable)')
    view.add_argument('--host', default='127.0.0.1',
                      help='address to serve on (default 127.0.0.1: this machine only)')
    view.add_argument('--port', type=int, default=8080, help='TCP port (default 8080)')
    view.add_argument('--namespace', default='',
                      help="the nodes' namespace (the demo's: /ik_control_demo)")
    view.add_argument('--controller', default='ik_controller',
                      help='name of the ik_controller node (default ik_controller)')
    view.set_defaults(func=_view)

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

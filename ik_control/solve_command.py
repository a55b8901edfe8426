"""
``ik_control solve``: position IK for frames of a URDF, with Parent's control term.

Position IK (:mod:`ik_control.ik.position_ik`, or a classical method of
:mod:`ik_control.ik.classical`) finds joint values that put each tip on its target; with a
``--posture-*`` option the solution is then moved toward desired angles with the tips held
(:mod:`ik_control.ik.posture`). Exit status 0 when solved, :data:`EXIT_NO_SOLUTION` when not.
"""

import json
import sys

from ik_control.validation import InputError
import numpy as np

EXIT_NO_SOLUTION = 3


def run(args):
    """Solve, print the joint values and errors; the exit status says whether it was solved."""
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
    posture = posture_refinement(args, model, mode, target, result) if result.success else None
    report = {'success': result.success, 'joint_names': list(result.joint_names),
              'positions': [float(v) for v in result.q],
              'position_error': result.position_error,
              'rotation_error': result.rotation_error if mode == 'pose' else None,
              'iterations': result.iterations, 'restarts': result.restarts,
              'time_ms': result.seconds * 1e3}
    if posture is not None:
        report['posture'] = posture
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for name, value in zip(result.joint_names, result.q):
            print(f'{name:>24s} {value: .6f}')
        rot = '' if mode == 'position' else f', rotation error {result.rotation_error:.3g} rad'
        print(f"{'solved' if result.success else 'NOT solved'}: position error "
              f'{result.position_error:.3g} m{rot}, {result.seconds * 1e3:.3f} ms, '
              f'{result.iterations} iterations, {result.restarts} restarts')
        if posture is not None:
            kept = '' if posture['applied'] else (
                ' (not applied: the refined solution left the tolerance)')
            print(f"posture term H {posture['cost_before']:.6g} -> {posture['cost']:.6g} "
                  f"in {posture['updates']} updates{kept}")
    if not result.success:
        print(f'ik_control solve: no solution within {args.timeout_ms} ms '
              f'(tolerance {args.tolerance})', file=sys.stderr)
        return EXIT_NO_SOLUTION
    return 0


def posture_refinement(args, model, mode, target, result):
    """
    Parent's control term on a solution (:mod:`ik_control.ik.posture`), when asked for.

    Replaces ``result.q`` by the refined joint values if they stay within the tolerance;
    returns the report's ``posture`` entry, or None without posture options.
    """
    options = (args.posture_target, args.posture_weights, args.posture_exponent,
               args.posture_gain)
    if all(v is None for v in options):
        return None
    from ik_control.ik.position_ik import LAW_CONFIG
    from ik_control.ik.posture import PostureRefinement

    refinement = PostureRefinement(
        model, LAW_CONFIG, posture_target=args.posture_target or (),
        posture_weights=args.posture_weights or (),
        posture_exponent=2.0 if args.posture_exponent is None else args.posture_exponent,
        gain=0.1 if args.posture_gain is None else args.posture_gain)
    before = refinement.cost(result.q)
    q, updates, ep, er = refinement.refine(result.q, target)
    applied = ep <= args.tolerance and (mode == 'position' or er <= args.tolerance)
    if applied:
        result.q, result.position_error, result.rotation_error = q, ep, er
    return {'cost_before': before, 'cost': refinement.cost(result.q), 'updates': updates,
            'applied': bool(applied)}


def add_parser(subparsers):
    """Add ``solve`` and its options to the ``ik_control`` command's ``subparsers``."""
    solve = subparsers.add_parser('solve', help='position IK for frames of a URDF (one or '
                                  'several end effectors)')
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
    solve.add_argument('--posture-target', nargs='+', type=float, metavar='RAD',
                       help="Parent's control term: desired joint angles theta_c [rad], one "
                            'per joint; the solution is then moved toward them with the '
                            'tips held (default with any --posture-* option: mid-range)')
    solve.add_argument('--posture-weights', nargs='+', type=float, metavar='ALPHA',
                       help='per-joint weights alpha_i of the control term [-] (default 1)')
    solve.add_argument('--posture-exponent', type=float, metavar='PSI',
                       help='exponent psi of the control term [-], >= 1 (default 2)')
    solve.add_argument('--posture-gain', type=float, metavar='ALPHA',
                       help='step gain of the control term (alpha of SAM eq. 17) [-] '
                            '(default 0.1)')
    solve.add_argument('--json', action='store_true', help='print JSON')
    solve.set_defaults(func=run)

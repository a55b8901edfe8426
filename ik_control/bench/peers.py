"""
The solvers of ``ik_control bench ik``: ours and the peers that install here (:data:`FACTORIES`).

Each factory takes a :class:`Context` and returns ``solve(target) -> q`` (None or anything
for no answer), timed and judged by :mod:`ik_control.bench.ik`. A peer that cannot be
imported or set up raises :class:`PeerUnavailable` with the reason, never anything fatal.
"""

import contextlib
from dataclasses import dataclass
import importlib.util
import logging
import math
import os
import sys
import sysconfig

from ik_control.bench.arms import BenchRobot
from ik_control.bench.chains import (kdl_chain, kdl_frame, PeerUnavailable, rtb_ets, urdf_chain,
                                     urdf_joint_types, urdf_with_fixed_joints)
from ik_control.ik.classical import CLASSICAL_METHODS, ClassicalIk
from ik_control.ik.position_ik import PositionIk
from ik_control.kinematics import RobotModel
import numpy as np
import pinocchio as pin

KDL_ITERATIONS_PER_CALL = 10   # NR_JL iterations between two looks at the clock
PYKDL_DIRS = ('/usr/lib/python3/dist-packages',)


@dataclass
class Context:
    """Everything a solver factory needs: robot, model, tolerance [m, rad], timeout [s]."""

    robot: BenchRobot
    model: RobotModel
    tolerance: float
    timeout: float
    clock: object
    seed: int
    warm_target: np.ndarray


@contextlib.contextmanager
def quiet_logging():
    """Silence log records up to WARNING while a peer runs (they would break the bar)."""
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)


def ik_control_solver(method):
    """Return a factory of our solver: PositionIk ('lm', 'law') or ClassicalIk (its methods)."""
    def make(ctx):
        solver = ClassicalIk if method in CLASSICAL_METHODS else PositionIk
        ik = solver(ctx.model, method=method, tolerance=ctx.tolerance,
                    rotation_tolerance=ctx.tolerance, clock=ctx.clock)
        rng = np.random.default_rng(ctx.seed + 1)
        ik.solve(ctx.warm_target[None], time_budget=ctx.timeout, rng=rng)   # compile/warm up

        def solve(target):
            return ik.solve(target[None], time_budget=ctx.timeout, rng=rng).q

        return solve
    return make


def reduced_model(model):
    """
    Return (pinocchio model with only the controlled joints, index into our joint order).

    Other joints are locked at the values :class:`RobotModel` holds them at.
    """
    full = model.pin_model
    keep = set(model.joint_names)
    lock = [full.getJointId(n) for n in model.tree_joint_names if n not in keep]
    reduced = pin.buildReducedModel(full, lock, model.tree_configuration(model.center))
    names = [reduced.names[i] for i in range(1, reduced.njoints)]
    return reduced, np.array([names.index(n) for n in model.joint_names])


def make_pink(ctx):
    """Return pink's ``solve_ik`` iterated to the tolerance or the timeout (module doc)."""
    try:
        import pink
        from pink.tasks import FrameTask
    except ImportError as exc:
        raise PeerUnavailable(f'pink cannot be imported ({exc})') from None
    model, tol, clock, timeout = ctx.model, ctx.tolerance, ctx.clock, ctx.timeout
    reduced, order = reduced_model(model)
    data = reduced.createData()
    tip = ctx.robot.tip
    q_center = model.center[np.argsort(order)]   # our order -> reduced order
    base = pin.SE3(model.base_placement)
    task = FrameTask(tip, position_cost=1.0, orientation_cost=1.0)

    def solve(target):
        start = clock()
        goal = base * pin.SE3(target[:3, :3].copy(), target[:3, 3].copy())
        task.set_target(goal)
        configuration = pink.Configuration(reduced, data, q_center.copy())
        while True:
            T = configuration.get_transform_frame_to_world(tip)
            if (np.linalg.norm(goal.translation - T.translation) <= tol
                    and np.linalg.norm(pin.log3(goal.rotation @ T.rotation.T)) <= tol):
                break
            if clock() - start >= timeout:
                break
            with quiet_logging():   # pink logs every overshoot of a limit by ~1e-6
                v = pink.solve_ik(configuration, [task], 1.0, solver='daqp',
                                  safety_break=False)
            configuration.integrate_inplace(v, 1.0)
        return configuration.q[order]

    solve(ctx.warm_target)
    return solve


def make_ikpy(ctx):
    """Return ikpy's ``inverse_kinematics_frame`` on a chain read from the URDF."""
    try:
        from ikpy.chain import Chain
    except ImportError as exc:
        raise PeerUnavailable(f'ikpy cannot be imported ({exc})') from None
    import warnings

    model = ctx.model
    elements = urdf_chain(ctx.robot.urdf, ctx.robot.base, ctx.robot.tip)
    joints = elements[1::2]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        full = Chain.from_urdf_file(ctx.robot.urdf, base_elements=elements,
                                    jax_precompile=False)
        links = full.links[:len(joints) + 1]   # origin link + the joints up to the tip
        active = [link.name in model.joint_names for link in links]
        chain = Chain(links, active_links_mask=active, jax_precompile=False)
    tree_q = model.tree_configuration(model.center)
    initial = np.zeros(len(links))
    ours = np.full(len(links), -1)
    for k, link in enumerate(links):
        if link.name in model.joint_names:
            ours[k] = model.joint_names.index(link.name)
            initial[k] = model.center[ours[k]]
        elif link.name in model.tree_joint_names:
            initial[k] = tree_q[model.tree_joint_names.index(link.name)]
    if sorted(ours[ours >= 0]) != list(range(model.nq)):
        raise PeerUnavailable('the ikpy chain does not hold every controlled joint')
    columns = np.flatnonzero(ours >= 0)[np.argsort(ours[ours >= 0])]
    check = initial.copy()
    check[columns] = model.center + 0.1
    T = model.frame_placements(model.center + 0.1)[0]
    if not np.allclose(chain.forward_kinematics(check), T, atol=1e-9):
        raise PeerUnavailable('the ikpy chain disagrees with the model (forward kinematics)')

    def solve(target):
        with warnings.catch_warnings(), quiet_logging():
            warnings.simplefilter('ignore')
            full_q = chain.inverse_kinematics_frame(target, initial_position=initial,
                                                    orientation_mode='all')
        return np.asarray(full_q)[columns]

    solve(ctx.warm_target)
    return solve


def load_pykdl():
    """
    Import PyKDL: from this environment, else Debian's ``python3-pykdl`` module by path.

    Debian's extension module is built for Debian's Python; it is loaded only when its
    ABI tag matches this interpreter's. Raises :class:`PeerUnavailable` with the reason.
    """
    try:
        import PyKDL
        return PyKDL
    except ImportError:
        pass
    suffix = sysconfig.get_config_var('EXT_SUFFIX') or '.so'
    candidates = [os.path.join(d, 'PyKDL' + suffix) for d in PYKDL_DIRS]
    path = next((c for c in candidates if os.path.exists(c)), None)
    if path is None:
        raise PeerUnavailable(f'no PyKDL module for this Python (looked for {candidates}; '
                              'apt-get install python3-pykdl)')
    try:
        spec = importlib.util.spec_from_file_location('PyKDL', path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except ImportError as exc:
        raise PeerUnavailable(f'{path} does not load: {exc}') from None
    sys.modules['PyKDL'] = module
    return module


def make_rtb(method):
    """
    Return a factory of Robotics Toolbox's C++ ``ik_LM`` / ``ik_NR`` on :func:`rtb_ets`.

    Its residual ``E = 0.5 |e|^2`` over the 6-D error (position, angle-axis) is asked
    below ``tolerance^2 / 2``, which puts both parts within ``tolerance``; it has no time
    limit (answers after the timeout count as failures), its own search limits are the
    defaults (``ilimit`` 30 iterations, ``slimit`` 100 random restarts), joint limits on.
    Its own success flag is reported next to the common check.
    """
    def make(ctx):
        try:
            ets, order = rtb_ets(ctx.model)
        except ImportError as exc:
            raise PeerUnavailable(f'roboticstoolbox cannot be imported ({exc})') from None
        model = ctx.model
        T = model.frame_placements(model.center + 0.1)[0]
        if not np.allclose(ets.eval((model.center + 0.1)[order]), T, atol=1e-9):
            raise PeerUnavailable('the rtb ETS disagrees with the model (forward kinematics)')
        tol = ctx.tolerance ** 2 / 2.0
        q0 = model.center[order]
        solver = ets.ik_LM if method == 'lm' else ets.ik_NR

        def solve(target):
            solution = solver(target, q0=q0, tol=tol, joint_limits=True)
            q = np.empty(model.nq)
            q[order] = solution.q
            return q, bool(solution.success)

        solve(ctx.warm_target)
        return solve
    return make


@contextlib.contextmanager
def quiet_native_output():
    """Send what C/C++ code writes to file descriptors 1 and 2 to /dev/null (KDL's parser)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved + [null]:
            os.close(fd)


def make_trac_ik(mode):
    """
    Return a factory of TRAC-IK (``pytracik``: TRAC-IK's C++ code) in ``mode``.

    ``mode`` is ``'Speed'`` or ``'Distance'``. TRAC-IK reads the URDF itself (KDL's
    parser) and solves from the base link to the tip link with its own ``timeout`` and
    ``eps`` (its per-component twist test, given ``tol / sqrt(3)`` as KDL is). Its joint
    limits are set explicitly from the model (``set_joint_limits``): KDL's parser reads
    some files' ``safety_controller`` limits as zero (the Panda's, for one), and the
    continuous joints get the model's unwrapped limits. Joints of the URDF chain that the
    model holds locked are made ``fixed`` at their locked value in the URDF TRAC-IK reads
    (:func:`urdf_with_fixed_joints`; given as joints with ``lower = upper`` instead, they
    cost TRAC-IK a third of its solve rate on SIMON's arm). It runs two threads (KDL and
    SQP), so its process CPU time can exceed its wall time. Its own success flag (return
    code >= 0) is reported next to the common check.
    """
    def make(ctx):
        try:
            import pytracik
        except ImportError as exc:
            raise PeerUnavailable(f'pytracik cannot be imported ({exc})') from None
        robot, model = ctx.robot, ctx.model
        types = urdf_joint_types(robot.urdf)
        chain = [j for j in urdf_chain(robot.urdf, robot.base, robot.tip)[1::2]
                 if types.get(j) != 'fixed']
        locked = {j: model.locked_values[j] for j in chain if j in model.locked_values}
        followers = [j for j in chain if j not in model.joint_names and j not in locked]
        if followers:
            raise PeerUnavailable(f'joints {followers} of the chain follow a controlled joint '
                                  '(mimic): TRAC-IK cannot express them')
        xml = urdf_with_fixed_joints(robot.urdf, locked)
        chain = [j for j in chain if j not in locked]
        with quiet_native_output():
            solver = pytracik.TRAC_IK(robot.base, robot.tip, xml, ctx.timeout,
                                      ctx.tolerance / math.sqrt(3.0), getattr(pytracik, mode))
        if pytracik.get_num_joints(solver) != len(chain):
            raise PeerUnavailable(f'TRAC-IK has {pytracik.get_num_joints(solver)} joints, '
                                  f'the URDF chain {len(chain)}')
        order = np.array([model.joint_names.index(j) for j in chain])
        pytracik.set_joint_limits(solver, list(model.lower[order]), list(model.upper[order]))
        nominal = model.center[order]
        T = model.frame_placements(model.center + 0.1)[0]
        if not np.allclose(pytracik.fk(solver, nominal + 0.1), T, atol=1e-6):
            raise PeerUnavailable('TRAC-IK disagrees with the model (forward kinematics)')

        def solve(target):
            x, y, z, w = pin.Quaternion(target[:3, :3]).coeffs()
            out = pytracik.ik(solver, nominal, *target[:3, 3], x, y, z, w)
            q = np.empty(model.nq)
            q[order] = out[1:]
            return q, bool(out[0] >= 0)

        solve(ctx.warm_target)
        return solve
    return make


def make_kdl(ctx):
    """Return KDL's ``ChainIkSolverPos_NR_JL`` in TRAC-IK's timed loop (module doc)."""
    kdl = load_pykdl()
    model, clock, timeout = ctx.model, ctx.clock, ctx.timeout
    chain, order = kdl_chain(kdl, model)
    n = chain.getNrOfJoints()

    def jnt(values):
        a = kdl.JntArray(n)
        for i, v in enumerate(values):
            a[i] = float(v)
        return a

    # KDL's solvers keep references to the chain, the limits and each other: all of them
    # must outlive the solver (hence the tuple the closure below holds).
    fk = kdl.ChainFkSolverPos_recursive(chain)
    vel = kdl.ChainIkSolverVel_pinv(chain)
    q_min, q_max = jnt(model.lower[order]), jnt(model.upper[order])
    ik = kdl.ChainIkSolverPos_NR_JL(chain, q_min, q_max, fk, vel, KDL_ITERATIONS_PER_CALL,
                                    ctx.tolerance / math.sqrt(3.0))
    keep_alive = (chain, fk, vel, q_min, q_max)
    nominal = model.center[order]
    check = kdl.Frame()
    fk.JntToCart(jnt(model.center[order]), check)
    T = model.frame_placements(model.center)[0]
    if not np.allclose([check.p[i] for i in range(3)], T[:3, 3], atol=1e-9):
        raise PeerUnavailable('the KDL chain disagrees with the model (forward kinematics)')

    def solve(target, _keep=keep_alive):
        start = clock()
        frame = kdl_frame(kdl, target)
        q_init = jnt(nominal)
        q_out = kdl.JntArray(n)
        while True:
            rc = ik.CartToJnt(q_init, frame, q_out)
            if rc >= 0 or clock() - start >= timeout:
                break
            q_init, q_out = q_out, q_init
        q = np.empty(model.nq)
        q[order] = [q_out[i] for i in range(n)]
        return q

    solve(ctx.warm_target)
    return solve


FACTORIES = {'ik_control': ik_control_solver('lm'), 'ik_control-dls': ik_control_solver('law'),
             'trac_ik-speed': make_trac_ik('Speed'), 'trac_ik-distance': make_trac_ik('Distance'),
             'rtb-lm': make_rtb('lm'), 'rtb-nr': make_rtb('nr'), 'kdl': make_kdl,
             'pink': make_pink, 'ikpy': make_ikpy}

# The classical methods (ik_control.ik.classical: ccd, hal, analytic), rows of the same table.
FACTORIES.update({method: ik_control_solver(method) for method in CLASSICAL_METHODS})

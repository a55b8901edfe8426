"""
Position IK solve rate and time, ours next to the peers that install here, TRAC-IK's way.

The method of TRAC-IK's README (v1.4.6) and its ``trac_ik_examples/src/ik_tests.cpp``:

1. ``N`` random joint configurations, uniform inside the joint limits (seeded RNG);
2. forward kinematics of each gives a target pose of the tip in the base frame (by
   pinocchio, the reference implementation, not by any solver under test);
3. every solver solves the full 6-D pose to ``tolerance`` (1e-5: position [m] and
   rotation [rad]) within ``timeout`` (5 ms), seeded from the middle of the joint limits;
4. the solve rate, and the mean time over all samples including failures (a failure
   usually costs the whole timeout); also the median and 99th percentile.

Success is decided here, the same way for every solver: pinocchio's forward kinematics of
the returned joint values is within ``tolerance`` of the target in position
(``|p - p_d|``) and rotation (the angle of ``R_d R^T``), the joint values are inside the
limits (passing one by ``tolerance`` at most), and the call returned within the timeout.
(TRAC-IK counts KDL's per-component twist test ``|e_i| < eps``, up to sqrt(3) looser; KDL
is given ``eps = tol / sqrt(3)`` here so that its converged answers pass the norm test.)

Times are taken with one clock for all solvers: by default this process's CPU time
(``time.process_time``), which other load on the machine does not inflate; ``wall``
uses ``time.perf_counter`` as TRAC-IK does on an idle machine. Solvers:

* ``ik_control``: :class:`~ik_control.ik.position_ik.PositionIk` (Levenberg-Marquardt with
  joint-limit-aware steps, random restarts, all in compiled code);
* ``ik_control-dls``: the same class iterating the DLS velocity law (``method='law'``),
  the solver before the Levenberg-Marquardt one;
* ``kdl``: PyKDL's ``ChainIkSolverPos_NR_JL`` (Newton-Raphson with the pseudoinverse
  velocity solver and joint limits, as TRAC-IK's "KDL" column), on a chain built from the
  pinocchio model, called again from its last result until converged or timed out;
* ``pink``: ``solve_ik`` (QP, daqp) on a ``FrameTask`` with pink's default configuration
  and velocity limits, integrated with ``dt = 1`` until converged or timed out;
* ``ccd``, ``hal``, ``analytic``: the classical methods of Parent's notes
  (:class:`~ik_control.ik.classical.ClassicalIk`): cyclic coordinate descent with random
  restarts; the HAL closed form plus 3 damped least-squares steps; the closed form alone;
* ``ikpy``: ``Chain.from_urdf_file`` on the URDF and ``inverse_kinematics_frame`` with
  ``orientation_mode='all'`` (SciPy least squares); it has no time limit, so answers
  later than the timeout count as failures.

A peer that cannot be imported or set up is reported with the reason, never fatal.

Robots: the bundled ones and arms of example-robot-data by name, any URDF with a base and
a tip frame, and any robot written as a DH file (``config/robots/sam9.yaml``: its
``base_link`` to its ``tool_link``, all joints). A DH file's URDF
(``load_dh_file(path).urdf()``, as the nodes and ``ik_control solve`` read it) is written
to a temporary file for the run, since the peers read URDF files.
"""

import atexit
import contextlib
from dataclasses import dataclass
import importlib.util
import logging
import math
import os
import platform
import shutil
import sys
import sysconfig
import tempfile
import time
import xml.etree.ElementTree as ElementTree

from ik_control import robots
from ik_control.ik.classical import CLASSICAL_METHODS, ClassicalIk
from ik_control.ik.position_ik import PositionIk
from ik_control.kinematics import RobotModel
from ik_control.kinematics.dh_file import is_dh_file, load_dh_file
from ik_control.validation import InputError
import numpy as np
import pinocchio as pin

ROBOTS = ('wam', 'simon_right_arm', 'panda')
SOLVERS = ('ik_control', 'ik_control-dls', 'trac_ik-speed', 'trac_ik-distance', 'rtb-lm',
           'rtb-nr', 'kdl', 'pink', 'ikpy')
# Slow peers run on the first samples only (same targets); None = all samples.
PEER_SAMPLES = {'ik_control': None, 'ik_control-dls': None, 'trac_ik-speed': None,
                'trac_ik-distance': 2000, 'rtb-lm': 2000, 'rtb-nr': 2000, 'kdl': 2000,
                'pink': 1000, 'ikpy': 300}
# Published by TRAC-IK (README, v1.4.6, C++), for the table's footnote.
TRAC_IK_PUBLISHED = {'panda': {'KDL': (61.77, 2.14), 'TRAC-IK': (99.70, 0.38)}}
CLOCKS = {'cpu': time.process_time, 'wall': time.perf_counter}
KDL_ITERATIONS_PER_CALL = 10   # NR_JL iterations between two looks at the clock
PYKDL_DIRS = ('/usr/lib/python3/dist-packages',)


class PeerUnavailable(RuntimeError):
    """A peer solver cannot be used here (the message says why)."""


@dataclass(frozen=True)
class BenchRobot:
    """A robot of the benchmark: URDF path, base and tip frames, controlled joints."""

    name: str
    urdf: str
    base: str
    tip: str
    joints: tuple = None    # None: the chain from base to tip
    source: str = None      # the DH file ``urdf`` was written from (None: a URDF)


# Arms of example-robot-data: name -> (URDF under its robots/ directory, base, tip).
EXAMPLE_ARMS = {
    'panda': ('panda_description/urdf/panda.urdf', 'panda_link0', 'panda_link8'),
    'ur5': ('ur_description/urdf/ur5_robot.urdf', 'base_link', 'tool0'),
    'kinova': ('kinova_description/robots/kinova.urdf', 'j2s6s200_link_base',
               'j2s6s200_end_effector'),
    'talos': ('talos_data/robots/talos_full_v2.urdf', 'torso_2_link', 'gripper_left_base_link'),
    'pr2': ('pr2_description/urdf/pr2.urdf', 'base_link', 'r_gripper_tool_frame'),
}


def example_robot_urdf(relative):
    """Return the path of a URDF shipped by ``example-robot-data`` (``relative`` to robots/)."""
    from example_robot_data.robots_loader import getModelPath

    return os.path.normpath(os.path.join(getModelPath(relative), relative))


def panda_urdf_path():
    """Return the path of the Franka Panda URDF shipped by ``example-robot-data``."""
    return example_robot_urdf(EXAMPLE_ARMS['panda'][0])


def bench_robot(name):
    """
    Return the :class:`BenchRobot` called ``name`` (one of :data:`ROBOTS`), or of a DH file.

    The Panda chain is ``panda_link0`` -> ``panda_link8`` (the flange, before the hand's
    fixed -45 degree yaw), the chain of TRAC-IK's Panda test configuration; the fingers
    stay locked.
    """
    if isinstance(name, BenchRobot):
        return name
    if is_dh_file(name):
        return custom_robot(name)
    if name == 'panda':
        return BenchRobot('panda', panda_urdf_path(), 'panda_link0', 'panda_link8',
                          tuple(f'panda_joint{i}' for i in range(1, 8)))
    if name in EXAMPLE_ARMS:
        relative, base, tip = EXAMPLE_ARMS[name]
        return BenchRobot(name, example_robot_urdf(relative), base, tip)
    if name not in robots.SETUPS:
        raise InputError(f"unknown robot '{name}'; choose from "
                         f'{list(ROBOTS) + sorted(set(EXAMPLE_ARMS) - set(ROBOTS))} '
                         'or give a DH file (.yaml)')
    setup = robots.SETUPS[name]
    if len(setup.end_effectors) != 1:
        raise ValueError(f"robot '{name}' has {len(setup.end_effectors)} end effectors, "
                         'the benchmark needs one chain')
    return BenchRobot(name, robots.urdf_path(name), setup.base_frame, setup.end_effectors[0],
                      setup.joints)


_DH_URDFS = {}   # DH file (absolute path) -> the URDF file written from it


def dh_urdf_file(path):
    """
    Return the path of a URDF file holding ``load_dh_file(path).urdf()``.

    Written once per process into a temporary directory (removed at exit), named after
    the DH file (``sam9.yaml`` -> ``sam9.urdf``): the peers read URDF files.
    """
    key = os.path.abspath(path)
    if key not in _DH_URDFS:
        text = load_dh_file(path).urdf()
        directory = tempfile.mkdtemp(prefix='ik_control_bench_')
        atexit.register(shutil.rmtree, directory, True)
        out = os.path.join(directory, os.path.splitext(os.path.basename(path))[0] + '.urdf')
        with open(out, 'w', encoding='utf-8') as stream:
            stream.write(text)
        _DH_URDFS[key] = out
    return _DH_URDFS[key]


def custom_robot(urdf, base=None, tip=None, name=None, joints=None):
    """
    Return a :class:`BenchRobot` for any URDF or DH file and chain (``name``: the file's stem).

    A DH file's ``base`` and ``tip`` default to its ``base_link`` and ``tool_link``.
    """
    source = None
    if is_dh_file(urdf):
        dh = load_dh_file(urdf)
        source, base, tip = urdf, base or dh.base_link, tip or dh.tool_link
    for value, what in ((urdf, 'urdf'), (base, 'base'), (tip, 'tip')):
        if not isinstance(value, str) or not value:
            raise InputError(f'each robot needs a {what} (a non-empty string)')
    if not os.path.isfile(urdf):
        raise InputError(f"URDF file '{urdf}' does not exist")
    if joints is not None and (isinstance(joints, str)
                               or not all(isinstance(j, str) for j in joints)):
        raise InputError(f'joints must be a list of joint names, got {joints!r}')
    name = name or os.path.splitext(os.path.basename(urdf))[0]
    if source is not None:
        urdf = dh_urdf_file(source)
    return BenchRobot(str(name), urdf, base, tip, tuple(joints) if joints else None, source)


def read_robots_file(path):
    """
    Return the :class:`BenchRobot` list of a YAML file: a list of ``{urdf, base, tip}``.

    Optional keys: ``name`` and ``joints`` (default: the chain from base to tip); a
    relative ``urdf`` path is relative to the YAML file. ``urdf`` may be a DH file, whose
    ``base`` and ``tip`` default to its ``base_link`` and ``tool_link``.
    """
    import yaml

    try:
        with open(path, encoding='utf-8') as stream:
            entries = yaml.safe_load(stream)
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(f"cannot read robots file '{path}': {exc}") from None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise InputError(f"robots file '{path}' must hold a list of mappings with urdf, base "
                         'and tip')
    out = []
    for entry in entries:
        unknown = set(entry) - {'name', 'urdf', 'base', 'tip', 'joints'}
        if unknown:
            raise InputError(f"robots file '{path}': unknown keys {sorted(unknown)}")
        urdf = entry.get('urdf')
        if isinstance(urdf, str) and not os.path.isabs(urdf):
            urdf = os.path.join(os.path.dirname(os.path.abspath(path)), urdf)
        out.append(custom_robot(urdf, entry.get('base'), entry.get('tip'), entry.get('name'),
                                entry.get('joints')))
    return out


def load_model(robot):
    """Return the :class:`RobotModel` of ``robot`` with its tip as a 6-D pose task."""
    return RobotModel.from_urdf(robot.urdf, joints=robot.joints, base_frame=robot.base,
                                end_effectors=[(robot.tip, 'pose')])


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


def make_targets(model, samples, seed):
    """
    Return (joint configurations, target poses) for ``samples`` random configurations.

    Configurations are uniform inside the limits (``numpy.random.default_rng(seed)``);
    targets (samples x 4 x 4) are pinocchio's placements of the tip in the base frame.
    """
    rng = np.random.default_rng(seed)
    qs = model.random_configurations(samples, rng)
    tip = model.end_effectors[0].frame
    targets = np.array([model.pin_frame_placement(q, tip) for q in qs]).reshape(samples, 4, 4)
    return qs, targets


def pose_errors(model, q, target):
    """
    Return the position [m] and rotation [rad] errors of the tip at ``q`` w.r.t. ``target``.

    Forward kinematics by pinocchio; rotation error = ``|log3(R_d R^T)|``.
    """
    T = model.pin_frame_placement(q, model.end_effectors[0].frame)
    position = float(np.linalg.norm(target[:3, 3] - T[:3, 3]))
    rotation = float(np.linalg.norm(pin.log3(target[:3, :3] @ T[:3, :3].T)))
    return position, rotation


def reaches(model, q, target, tolerance):
    """
    Return True when ``q`` puts the tip on ``target`` inside the joint limits.

    Within ``tolerance`` in position [m] and rotation [rad]; the joint values may pass a
    limit by ``tolerance`` [rad or m] at most (pink's QP steps overshoot by ~1e-6).
    """
    q = np.asarray(q, dtype=float)
    if q.shape != (model.nq,) or not np.all(np.isfinite(q)):
        return False
    if np.any(q < model.lower - tolerance) or np.any(q > model.upper + tolerance):
        return False
    position, rotation = pose_errors(model, q, target)
    return position <= tolerance and rotation <= tolerance


# ----------------------------------------------------------------------------- solvers
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


def urdf_chain(urdf, base, tip):
    """Return the URDF link and joint names from ``base`` to ``tip``: [link, joint, ...]."""
    with open(urdf, encoding='utf-8') as stream:
        root = ElementTree.fromstring(stream.read())
    parent_of = {}
    for joint in root.findall('joint'):
        parent_of[joint.find('child').get('link')] = (joint.get('name'),
                                                      joint.find('parent').get('link'))
    chain = [tip]
    link = tip
    while link != base:
        if link not in parent_of:
            raise PeerUnavailable(f"no URDF chain from '{base}' to '{tip}'")
        joint, link = parent_of[link]
        chain[:0] = [link, joint]
    return chain


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


def _kdl_frame(kdl, T):
    return kdl.Frame(kdl.Rotation(*T[:3, :3].ravel()), kdl.Vector(*T[:3, 3]))


def _axis_motion(axis, kind, value):
    """Return the 4x4 motion of a joint about/along unit ``axis`` by ``value``."""
    T = np.eye(4)
    if kind == 0:
        T[:3, :3] = pin.exp3(np.asarray(axis) * value)
    else:
        T[:3, 3] = np.asarray(axis) * value
    return T


def chain_segments(model):
    """
    Return ([(fixed 4x4 before the joint, axis, kind, our index), ...], last fixed 4x4).

    The chain from the base frame to the (first) tip, read from the model's flattened
    pinocchio tree: each controlled joint on the path comes after the constant transform
    from the previous one (joint placements, locked joints folded in at their locked
    value); the last transform leads to the tip frame. Raises :class:`PeerUnavailable`
    for a mimic joint on the path or a controlled joint that does not move the tip.
    """
    path = []
    j = int(model.frame_joint[0])
    while j >= 0:
        path.append(j)
        j = int(model.parent[j])
    path.reverse()
    pending = model.base_inv.copy()
    segments = []
    for j in path:
        pending = pending @ model.placement[j]
        k = int(model.ctrl_index[j])
        if k < 0:
            pending = pending @ _axis_motion(model.axis[j], model.kind[j], model.q_locked[j])
            continue
        if model.multiplier[j] != 1.0 or model.offset[j] != 0.0:
            raise PeerUnavailable('a mimic joint on the chain cannot be expressed here')
        segments.append((pending, model.axis[j].copy(), int(model.kind[j]), k))
        pending = np.eye(4)
    if sorted(s[3] for s in segments) != list(range(model.nq)):
        raise PeerUnavailable('some controlled joints do not move the tip')
    return segments, pending @ model.frame_placement[0]


def kdl_chain(kdl, model):
    """
    Return (KDL chain from the base frame to the tip, our joint index of each KDL joint).

    Per :func:`chain_segments` entry, a fixed segment with the constant transform, then a
    segment whose joint turns about (or slides along) the joint axis.
    """
    segments, last = chain_segments(model)
    chain = kdl.Chain()
    for fixed, axis, kind, k in segments:
        chain.addSegment(kdl.Segment(kdl.Joint(kdl.Joint.Fixed), _kdl_frame(kdl, fixed)))
        joint_kind = kdl.Joint.RotAxis if kind == 0 else kdl.Joint.TransAxis
        joint = kdl.Joint(model.joint_names[k], kdl.Vector(0.0, 0.0, 0.0),
                          kdl.Vector(*axis), joint_kind)
        chain.addSegment(kdl.Segment(joint, kdl.Frame.Identity()))
    chain.addSegment(kdl.Segment(kdl.Joint(kdl.Joint.Fixed), _kdl_frame(kdl, last)))
    return chain, np.array([seg[3] for seg in segments])


def _z_to(axis):
    """Return a 4x4 rotation that takes the z axis onto the unit vector ``axis``."""
    z = np.array([0.0, 0.0, 1.0])
    w = np.cross(z, axis)
    angle = math.atan2(np.linalg.norm(w), float(np.dot(z, axis)))
    T = np.eye(4)
    if np.linalg.norm(w) > 1e-12:
        T[:3, :3] = pin.exp3(w / np.linalg.norm(w) * angle)
    elif axis[2] < 0:
        T[:3, :3] = np.diag([1.0, -1.0, -1.0])
    return T


def rtb_ets(model):
    """
    Return (Robotics Toolbox ``ETS`` from the base frame to the tip, our joint indices).

    Per :func:`chain_segments` entry: a constant ``SE3`` that also turns z onto the joint
    axis, the joint as ``Rz`` (revolute) or ``tz`` (prismatic), and the rotation back;
    the joint limits are the model's.
    """
    from roboticstoolbox import ET, ETS

    segments, last = chain_segments(model)
    elements = []
    pending = np.eye(4)
    for fixed, axis, kind, _ in segments:
        R = _z_to(axis)
        elements.append(ET.SE3(pending @ fixed @ R))
        elements.append(ET.Rz() if kind == 0 else ET.tz())
        pending = R.T
    elements.append(ET.SE3(pending @ last))
    ets = ETS(elements)
    order = np.array([seg[3] for seg in segments])
    ets.qlim = np.array([model.lower[order], model.upper[order]])
    return ets, order


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


def urdf_joint_types(urdf):
    """Return ``{joint name: URDF type}`` of a URDF file."""
    with open(urdf, encoding='utf-8') as stream:
        root = ElementTree.fromstring(stream.read())
    return {joint.get('name'): joint.get('type') for joint in root.iter('joint')}


def urdf_with_fixed_joints(urdf, values):
    """
    Return the URDF text of file ``urdf`` with the joints in ``values`` made ``fixed``.

    Each such joint's motion at its value [rad or m] (about or along its ``axis``) is
    folded into its ``origin``, so the geometry is unchanged; ``<mimic>`` tags go with it.
    """
    with open(urdf, encoding='utf-8') as stream:
        root = ElementTree.fromstring(stream.read())
    for joint in root.iter('joint'):
        name = joint.get('name')
        if name not in values:
            continue
        kind = 0 if joint.get('type') in ('revolute', 'continuous') else 1
        axis_tag = joint.find('axis')
        axis = np.array([float(v) for v in (axis_tag.get('xyz') if axis_tag is not None
                                            else '1 0 0').split()])
        origin = joint.find('origin')
        if origin is None:
            origin = ElementTree.SubElement(joint, 'origin')
        xyz = [float(v) for v in origin.get('xyz', '0 0 0').split()]
        rpy = [float(v) for v in origin.get('rpy', '0 0 0').split()]
        T = np.eye(4)
        T[:3, :3] = pin.rpy.rpyToMatrix(*rpy)
        T[:3, 3] = xyz
        T = T @ _axis_motion(axis / np.linalg.norm(axis), kind, values[name])
        origin.set('xyz', ' '.join(repr(float(v)) for v in T[:3, 3]))
        origin.set('rpy', ' '.join(repr(float(v)) for v in pin.rpy.matrixToRpy(T[:3, :3])))
        joint.set('type', 'fixed')
        for tag in ('mimic', 'limit', 'axis', 'safety_controller', 'dynamics'):
            for child in joint.findall(tag):
                joint.remove(child)
    return ElementTree.tostring(root, encoding='unicode')


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
        frame = _kdl_frame(kdl, target)
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
SOLVERS = SOLVERS + CLASSICAL_METHODS
FACTORIES.update({method: ik_control_solver(method) for method in CLASSICAL_METHODS})


# ----------------------------------------------------------------------------- running
class Progress:
    """
    Show a progress bar on a stream (stderr).

    On a terminal one line is redrawn at most every 0.2 s; otherwise (a log file, a
    pipe) a line is written at every tenth of the work.
    """

    def __init__(self, total, stream=None, width=30):
        self.total = max(1, total)
        self.done = 0
        self.stream = sys.stderr if stream is None else stream
        self.width = width
        self.tty = hasattr(self.stream, 'isatty') and self.stream.isatty()
        self._shown = 0.0
        self._tenth = -1

    def update(self, label, count=1):
        """Advance by ``count`` samples; redraw with ``label``."""
        self.done += count
        fraction = min(1.0, self.done / self.total)
        if not self.tty:
            tenth = int(10 * fraction)
            if tenth > self._tenth:
                self._tenth = tenth
                self.stream.write(f'  {100.0 * fraction:5.1f}%  {label}\n')
                self.stream.flush()
            return
        now = time.monotonic()
        if now - self._shown < 0.2 and self.done < self.total:
            return
        self._shown = now
        filled = int(self.width * fraction)
        bar = '#' * filled + '-' * (self.width - filled)
        self.stream.write(f'\r  [{bar}] {100.0 * fraction:5.1f}%  {label:<32}')
        self.stream.flush()

    def close(self):
        """End the progress line."""
        if self.tty:
            self.stream.write('\n')
            self.stream.flush()


def _summary(times_ms, ok, reached, timeout_ms):
    """Return the statistics of one solver on one robot (times in ms; None when undefined)."""
    t = np.asarray(times_ms)
    n = t.size
    if n == 0:
        return {'samples': 0, 'solved': 0, 'rate': None, 'mean_ms': None, 'median_ms': None,
                'p99_ms': None, 'quantiles_ms': None, 'mean_solved_ms': None,
                'over_timeout': 0, 'solved_late': 0, 'rate_any_time': None}
    solved = int(np.sum(ok))
    late = int(np.sum(reached & ~ok))
    p10, p25, p50, p75, p90, p99 = (float(v) for v in np.percentile(t, [10, 25, 50, 75, 90, 99]))
    return {'samples': n, 'solved': solved, 'rate': 100.0 * solved / n,
            'mean_ms': float(np.mean(t)), 'median_ms': p50, 'p99_ms': p99,
            'quantiles_ms': {'p10': p10, 'p25': p25, 'p75': p75, 'p90': p90,
                             'max': float(np.max(t))},
            'mean_solved_ms': float(np.mean(t[ok])) if solved else None,
            'over_timeout': int(np.sum(t > timeout_ms)), 'solved_late': late,
            'rate_any_time': 100.0 * (solved + late) / n}


def count_samples(samples, solvers, peer_samples=None):
    """Return the number of samples each solver runs (slow peers run on the first few)."""
    caps = dict(PEER_SAMPLES, **(peer_samples or {}))
    return {s: samples if caps.get(s) is None else min(samples, caps[s]) for s in solvers}


def run(robot_names=ROBOTS, samples=10000, timeout_ms=5.0, tolerance=1e-5, solvers=SOLVERS,
        seed=0, clock='cpu', peer_samples=None, progress=True, keep_solutions=False):
    """
    Run the benchmark; return a JSON-ready dict (``keep_solutions`` adds every answer).

    ``peer_samples`` overrides :data:`PEER_SAMPLES`; ``progress`` draws a bar on stderr.
    """
    clock_fn = CLOCKS[clock]
    timeout = timeout_ms / 1e3
    counts = count_samples(samples, solvers, peer_samples)
    bar = Progress(len(robot_names) * sum(counts.values())) if progress else None
    results = {'method': 'TRAC-IK: random configurations inside the limits -> FK -> 6-D pose '
                         'IK from the middle of the limits', 'samples': samples,
               'timeout_ms': timeout_ms, 'tolerance': tolerance, 'seed': seed, 'clock': clock,
               'solvers': list(solvers), 'robots': {},
               'created': time.strftime('%Y-%m-%d %H:%M:%S'),
               'trac_ik_published': TRAC_IK_PUBLISHED, 'python': platform.python_version()}
    for item in robot_names:
        robot = bench_robot(item)
        name = robot.name
        if name in results['robots']:
            raise InputError(f"robot '{name}' given twice (give each a name)")
        model = load_model(robot)
        qs, targets = make_targets(model, samples, seed)
        warm = model.frame_placements(model.center + 0.1 * (model.upper - model.center))[0]
        ctx = Context(robot, model, tolerance, timeout, clock_fn, seed, warm)
        entry = {'urdf': os.path.basename(robot.source or robot.urdf), 'base': robot.base,
                 'tip': robot.tip, 'joints': list(model.joint_names),
                 'continuous_joints': list(model.continuous_joints), 'solvers': {}}
        for solver in solvers:
            n = counts[solver]
            if n < 1:
                entry['solvers'][solver] = {'available': False, 'reason': 'not run (0 samples)'}
                continue
            if bar:
                bar.update(f'{name}: {solver} (set-up)', 0)
            try:
                solve = FACTORIES[solver](ctx)
            except Exception as exc:  # noqa: B902 - any peer failure is reported, not fatal
                entry['solvers'][solver] = {'available': False,
                                            'reason': f'{type(exc).__name__}: {exc}'
                                            if not isinstance(exc, PeerUnavailable)
                                            else str(exc)}
                if bar:
                    bar.update(f'{name}: {solver}', n)
                continue
            times = np.empty(n)
            wall = np.empty(n)
            ok = np.zeros(n, dtype=bool)
            reached = np.zeros(n, dtype=bool)
            own = []    # the solver's own success flag, where it returns one
            errors = []
            solutions = []
            for i in range(n):
                t0, w0 = clock_fn(), time.perf_counter()
                try:
                    q = solve(targets[i])
                except Exception as exc:  # noqa: B902 - a peer's crash is its failure
                    if solver.startswith('ik_control'):
                        raise
                    q = None
                    errors.append(f'{type(exc).__name__}: {exc}')
                times[i] = (clock_fn() - t0) * 1e3
                wall[i] = (time.perf_counter() - w0) * 1e3
                if isinstance(q, tuple):
                    q, flag = q
                    own.append(flag)
                reached[i] = q is not None and reaches(model, q, targets[i], tolerance)
                ok[i] = reached[i] and times[i] <= timeout_ms
                if keep_solutions:
                    solutions.append({'index': i, 'success': bool(ok[i]),
                                      'q': None if q is None else [float(v) for v in q]})
                if bar:
                    bar.update(f'{name}: {solver}')
            stats = dict(available=True, **_summary(times, ok, reached, timeout_ms))
            stats['mean_wall_ms'] = float(np.mean(wall))
            stats['own_rate'] = 100.0 * float(np.mean(own)) if len(own) == n else None
            if errors:
                stats['exceptions'] = len(errors)
                stats['first_exception'] = errors[0]
            if keep_solutions:
                stats['solutions'] = solutions
            stats['times_ms'] = times   # for the plot; to_json drops the arrays
            stats['reached'] = reached
            entry['solvers'][solver] = stats
        results['robots'][name] = entry
    if bar:
        bar.close()
    return results


def to_json(results):
    """Return a copy of ``results`` without the per-sample arrays (JSON-ready)."""
    out = dict(results, robots={})
    for name, entry in results['robots'].items():
        solvers = {s: {k: v for k, v in r.items() if k not in ('times_ms', 'reached')}
                   for s, r in entry['solvers'].items()}
        out['robots'][name] = dict(entry, solvers=solvers)
    return out


def goal_lines(results):
    """
    Return per robot: our solve rate and mean time against TRAC-IK's best mode.

    The goal: a solve rate at least TRAC-IK's (common check) and a mean time (the run's
    clock) at most a third of TRAC-IK's.
    """
    out = []
    for name, entry in results['robots'].items():
        ours = entry['solvers'].get('ik_control', {})
        peers = [(s, r) for s, r in entry['solvers'].items()
                 if s.startswith('trac_ik') and r.get('available')]
        if not ours.get('available') or not peers:
            continue
        best_rate = max(r['rate'] for _, r in peers)
        best_mean = min(r['mean_ms'] for _, r in peers)
        rate_ok = ours['rate'] >= best_rate
        time_ok = ours['mean_ms'] <= best_mean / 3.0
        out.append(f"{name}: goal {'met' if rate_ok and time_ok else 'NOT met'}: solve rate "
                   f"{ours['rate']:.2f} % vs TRAC-IK's best {best_rate:.2f} % "
                   f"({'ok' if rate_ok else 'lower'}), mean {ours['mean_ms']:.3f} ms vs "
                   f"TRAC-IK's best {best_mean:.3f} ms / 3 = {best_mean / 3.0:.3f} ms "
                   f"({'ok' if time_ok else 'slower'})")
    return out


def table(results):
    """Return the text table of :func:`run`'s results (one line per robot and solver)."""
    clock = 'process CPU time' if results['clock'] == 'cpu' else 'wall-clock time'
    lines = [f"6-D pose IK, TRAC-IK's method: tolerance {results['tolerance']:g} m and rad, "
             f"timeout {results['timeout_ms']:g} ms, seed = middle of the limits, "
             f'times = {clock}, mean includes failures',
             f"{'robot':<16}{'solver':<16}{'samples':>8}{'solved':>10}{'mean ms':>10}"
             f"{'median ms':>11}{'p99 ms':>9}{'any time':>10}{'own flag':>10}{'wall ms':>9}"]
    notes = []
    for name, entry in results['robots'].items():
        for solver, r in entry['solvers'].items():
            if not r['available']:
                lines.append(f"{name:<16}{solver:<16}  not available: {r['reason']}")
                continue
            own = '-' if r.get('own_rate') is None else f"{r['own_rate']:.2f}%"
            wall = r.get('mean_wall_ms')
            lines.append(f"{name:<16}{solver:<16}{r['samples']:>8d}{r['rate']:>9.2f}%"
                         f"{r['mean_ms']:>10.3f}{r['median_ms']:>11.3f}{r['p99_ms']:>9.3f}"
                         f"{r['rate_any_time']:>9.2f}%{own:>10}"
                         + ('' if wall is None else f'{wall:>9.3f}'))
            if r.get('exceptions'):
                notes.append(f"{name}/{solver}: {r['exceptions']} calls raised "
                             f"({r['first_exception']})")
    for name, published in results.get('trac_ik_published', {}).items():
        if name in results['robots']:
            text = ', '.join(f'{k} {rate:.2f} % / {ms:.2f} ms' for k, (rate, ms)
                             in published.items())
            notes.append(f'{name}: published by TRAC-IK v1.4.6 (C++, its own machine): {text}')
    counts = {s: r['samples'] for entry in results['robots'].values()
              for s, r in entry['solvers'].items() if r['available']}
    notes.append("'any time': share of samples solved when answers after the timeout count "
                 "(ikpy and rtb have no time limit); 'own flag': the solver's own success "
                 "flag (TRAC-IK's return code >= 0, rtb's success), 'solved' is the common "
                 "check; 'wall ms': mean wall-clock time (TRAC-IK runs two threads, and "
                 'its timeout is on the wall clock: on a loaded machine it gives up sooner '
                 'in CPU time)')
    notes.extend(goal_lines(results))
    fewer = sorted(s for s, n in counts.items() if n < results['samples'])
    if fewer:
        notes.append('slow peers ran on the first samples only (same targets): '
                     + ', '.join(f'{s} {counts[s]}' for s in fewer))
    return '\n'.join(lines + ['  ' + n for n in notes])


def plot(results, path):
    """
    Write a PNG: solve rate (top) and the distribution of solve times (bottom) per robot.

    The bottom curves are the share of all samples solved within a time ``t`` (left of the
    dotted timeout line they end at the solve rate; right of it, answers that came too
    late); needs the in-memory results of :func:`run`, not the JSON.
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    names = list(results['robots'])
    fig, axes = plt.subplots(2, len(names), figsize=(max(6.5, 5.2 * len(names)), 9.0),
                             squeeze=False)
    colors = {s: plt.cm.tab10(i) for i, s in enumerate(SOLVERS)}
    timeout = results['timeout_ms']
    for col, name in enumerate(names):
        solvers = {s: r for s, r in results['robots'][name]['solvers'].items()
                   if r['available']}
        ax = axes[0, col]
        labels = list(solvers)
        rates = [solvers[s]['rate'] for s in labels]
        bars = ax.bar(range(len(labels)), rates, color=[colors.get(s) for s in labels])
        for b, rate in zip(bars, rates):
            ax.text(b.get_x() + b.get_width() / 2, rate, f'{rate:.2f}', ha='center',
                    va='bottom', fontsize=8)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=20, fontsize=8)
        ax.set_ylim(0, 105)
        ax.set_ylabel('solved within timeout [%]')
        ax.set_title(name)
        ax = axes[1, col]
        for s in labels:
            times = np.asarray(solvers[s].get('times_ms', []))
            reached = np.asarray(solvers[s].get('reached', np.ones(times.size, dtype=bool)))
            t = np.sort(times[reached])
            if t.size:
                ax.step(t, np.arange(1, t.size + 1) / times.size, where='post',
                        color=colors.get(s), label=f"{s} (mean {solvers[s]['mean_ms']:.3g} ms)")
        ax.axvline(timeout, color='k', ls=':', lw=1)
        ax.set_xscale('log')
        ax.set_ylim(0, 1.02)
        ax.set_xlabel('time per solve [ms]')
        ax.set_ylabel('share of samples solved within the time')
        ax.legend(fontsize=7, loc='upper center', bbox_to_anchor=(0.5, -0.17), ncol=2)
        ax.grid(alpha=0.3)
    fig.suptitle("6-D pose IK, TRAC-IK's method\n(tolerance "
                 f"{results['tolerance']:g}, timeout {timeout:g} ms, mean includes failures)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path

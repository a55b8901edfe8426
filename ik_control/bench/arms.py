"""
The arms the benchmarks run on, and how a solution is judged on them.

Robots: the bundled ones and arms of example-robot-data by name (:data:`EXAMPLE_ARMS`),
any URDF with a base and a tip frame, and any robot written as a DH file
(``config/robots/sam9.yaml``: its ``base_link`` to its ``tool_link``, all joints). A DH
file's URDF (``load_dh_file(path).urdf()``, as the nodes and ``ik_control solve`` read it)
is written to a temporary file for the run, since the peers read URDF files. Targets are
pinocchio's placements of random configurations; a solution is judged by pinocchio too
(:func:`reaches`), the same way for every solver.
"""

import atexit
from dataclasses import dataclass
import os
import shutil
import tempfile

from ik_control import robots
from ik_control.kinematics import RobotModel
from ik_control.kinematics.dh_file import is_dh_file, load_dh_file
from ik_control.validation import InputError, read_yaml
import numpy as np
import pinocchio as pin

ROBOTS = ('wam', 'simon_right_arm', 'panda')


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
    entries = read_yaml(path, 'robots file')
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

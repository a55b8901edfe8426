"""
The robots this package brings: where their files are, and their standard set-up.

``urdf_path('wam')`` finds ``urdf/wam.urdf`` in the installed share directory (through
ament_index where a ROS installation or the ament wheels provide it) or in the source
tree (``pip install -e .``). ``robot('wam')`` returns a :class:`RobotModel` with the
controlled joints, base frame and end effectors that ``config/wam.yaml`` uses;
``load(name_or_dh_file)`` also takes a robot written as a DH file (``config/robots``).
"""

from dataclasses import dataclass
import os

from ik_control.validation import InputError, ModelError
import numpy as np

PACKAGE = 'ik_control'


@dataclass(frozen=True)
class RobotSetup:
    """Standard set-up of a bundled robot: frames, controlled joints and a ready pose [rad]."""

    urdf: str
    base_frame: str
    end_effectors: tuple
    joints: tuple
    ready: tuple


WAM_JOINTS = tuple(f'wam_j{i}' for i in range(1, 8))
SIMON_ARM = ('shoulder_x', 'shoulder_z', 'shoulder_y', 'elbow_x', 'wrist_y', 'wrist_x', 'wrist_z')
SIMON_JOINTS = (('torso_y', 'torso_x') + tuple(f'right_{j}' for j in SIMON_ARM)
                + tuple(f'left_{j}' for j in SIMON_ARM))
SIMON_ARM_READY = (-0.4, 0.15, -0.3, 1.4, 0.0, 0.0, 0.0)

SETUPS = {
    'wam': RobotSetup('wam.urdf', 'wam_base', ('tool',), WAM_JOINTS,
                      (0.0, 0.6, 0.0, 1.6, 0.0, 0.94, 0.0)),
    'simon': RobotSetup('simon.urdf', 'simon_base', ('right_hand', 'left_hand'), SIMON_JOINTS,
                        (0.0, 0.0) + SIMON_ARM_READY + SIMON_ARM_READY),
    'simon_right_arm': RobotSetup('simon.urdf', 'simon_base', ('right_hand',),
                                  tuple(f'right_{j}' for j in SIMON_ARM), SIMON_ARM_READY),
}


def share_directory():
    """Return the package's share directory (installed), or the source tree root (development)."""
    try:
        from ament_index_python.packages import get_package_share_directory
        return get_package_share_directory(PACKAGE)
    except Exception:  # noqa: B902 - not installed through ament: use the source tree
        return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def data_path(*parts):
    """Path of a file shipped with the package (``urdf/``, ``config/``, ``launch/``)."""
    path = os.path.join(share_directory(), *parts)
    if not os.path.exists(path):
        source = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                              *parts)
        if os.path.exists(source):
            return source
        raise ModelError(f"package file '{os.path.join(*parts)}' not found under "
                         f'{share_directory()}')
    return path


def motion_path(name):
    """Path of the motion shipped as ``config/motions/<name>.yaml`` (see :func:`data_path`)."""
    return data_path('config', 'motions', f'{name}.yaml')


def urdf_path(name):
    """Path of the URDF of bundled robot ``name`` (``wam``, ``simon``)."""
    if name not in SETUPS:
        raise ModelError(f"unknown robot '{name}'; bundled robots: {sorted(SETUPS)}")
    return data_path('urdf', SETUPS[name].urdf)


def robot(name, **overrides):
    """Return the RobotModel of bundled robot ``name`` (``overrides`` replace its set-up)."""
    from ik_control.kinematics import RobotModel

    setup = SETUPS[name] if name in SETUPS else None
    if setup is None:
        raise ModelError(f"unknown robot '{name}'; bundled robots: {sorted(SETUPS)}")
    kwargs = {'base_frame': setup.base_frame, 'end_effectors': setup.end_effectors,
              'joints': setup.joints}
    kwargs.update(overrides)
    return RobotModel.from_urdf(urdf_path(name), **kwargs)


def ready_pose(name):
    """Return the ready configuration of bundled robot ``name`` [rad], controlled-joint order."""
    return np.array(SETUPS[name].ready, dtype=float)


def load(robot_or_file, **overrides):
    """
    Return ``(RobotModel, start pose)`` of a bundled robot name or a DH file (``.yaml``).

    A bundled robot (:data:`SETUPS`) comes with its set-up and ready pose [rad]. A DH file
    (:mod:`ik_control.kinematics.dh_file`) becomes the model of its URDF
    (``load_dh_file(path).urdf()``, as every node and command reads it), all joints
    controlled, one 6-D pose task from its ``base_link`` to its ``tool_link``, starting at
    the middle of its joint limits [rad or m]. ``overrides`` replace the set-up's
    :class:`RobotModel` arguments (``end_effectors``, ``joints``, ``base_frame``).
    """
    from ik_control.kinematics import RobotModel
    from ik_control.kinematics.dh_file import is_dh_file, load_dh_file

    if is_dh_file(robot_or_file):
        dh = load_dh_file(robot_or_file)
        kwargs = {'base_frame': dh.base_link, 'end_effectors': [dh.tool_link]}
        kwargs.update(overrides)
        model = RobotModel.from_urdf(dh.urdf(), **kwargs)
        return model, np.array(model.center, dtype=float)
    if robot_or_file in SETUPS:
        return robot(robot_or_file, **overrides), ready_pose(robot_or_file)
    raise InputError(f"robot '{robot_or_file}' is neither a bundled robot "
                     f'({sorted(SETUPS)}) nor a DH file (.yaml)')

"""
Key-pose path files: SAM's position-error specification written down (sec. VI).

A path file (``config/motions/*.yaml``) lists the poses an end effector must reach and
when, for :class:`~ik_control.control.spline_path.PathFollower` (the spline starts from
wherever the effector is when the path is given)::

    name: glass_to_faucet
    effector: tool              # end-effector frame (informational; the caller picks)
    key_poses:                  # t [s] after the start, position [m] in the base frame,
      - {t: 2.0, xyz: [0.5, 0.2, 0.4], rpy: [0, 1.5708, 0]}      # URDF roll-pitch-yaw [rad]
      - {t: 4.0, xyz: [0.4, -0.2, 0.6], quat: [0, 0.7071068, 0, 0.7071068]}   # or x y z w
    priorities:                 # optional: WeightSchedule knots over the path's time
      - {t: 0.0, primary: 1.0, secondary: 0.5}

Orientation: ``rpy`` or a unit quaternion ``quat`` (x, y, z, w; refused when its norm is
off 1 by more than 1e-3, as the controller refuses target poses).
"""

from dataclasses import dataclass
from typing import Optional

from ik_control.control.priorities import WeightSchedule
from ik_control.control.spline_path import KeyPosePath
from ik_control.kinematics.dh_file import xyz_rpy_transform
from ik_control.validation import (finite_vector, IkControlError, InputError,
                                   quaternion_to_matrix, read_yaml, unit_quaternion)
import numpy as np

TOP_KEYS = {'name', 'effector', 'key_poses', 'priorities'}


@dataclass
class KeyPoseFile:
    """A parsed path file: key times [s from the start] (k,), poses (k, 4, 4), extras."""

    name: str
    effector: Optional[str]
    times: np.ndarray
    poses: np.ndarray
    priorities: Optional[WeightSchedule]


def _pose(entry, what):
    if not isinstance(entry, dict) or 't' not in entry or 'xyz' not in entry:
        raise InputError(f'{what} needs t, xyz and rpy or quat')
    if ('rpy' in entry) == ('quat' in entry):
        raise InputError(f'{what}: give exactly one of rpy and quat')
    xyz = finite_vector(entry['xyz'], 3, f'{what}: xyz')
    if 'quat' in entry:
        T = np.eye(4)
        T[:3, :3] = quaternion_to_matrix(unit_quaternion(entry['quat'], f'{what}: quat'))
        T[:3, 3] = xyz
        return T
    try:
        return xyz_rpy_transform({'xyz': list(xyz), 'rpy': entry['rpy']}, 1.0, what)
    except IkControlError as exc:   # a ModelError from the DH helper: input here
        raise InputError(str(exc)) from None


def parse_key_pose_file(data, source='path file'):
    """Return the :class:`KeyPoseFile` of a parsed path file (module docstring)."""
    if not isinstance(data, dict) or not isinstance(data.get('key_poses'), list):
        raise InputError(f'{source}: expected a mapping with a key_poses list')
    unknown = set(data) - TOP_KEYS
    if unknown:
        raise InputError(f'{source}: unknown keys {sorted(unknown)}; allowed: {sorted(TOP_KEYS)}')
    entries = data['key_poses']
    poses = np.array([_pose(e, f'{source}: key pose {i}') for i, e in enumerate(entries)])
    try:
        times = np.array([float(e['t']) for e in entries])
    except (TypeError, ValueError):
        raise InputError(f'{source}: key pose times must be numbers') from None
    KeyPosePath(0.0, np.eye(4), times, poses)   # the same checks as when it is followed
    schedule = data.get('priorities')
    return KeyPoseFile(str(data.get('name', source)), data.get('effector'), times,
                       poses.reshape(-1, 4, 4),
                       None if schedule is None else WeightSchedule(schedule))


def load_key_pose_file(path):
    """Read a key-pose path file (module docstring)."""
    return parse_key_pose_file(read_yaml(path, 'path file'), f"path file '{path}'")

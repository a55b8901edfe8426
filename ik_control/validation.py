"""
Errors raised at the boundary of the core, and the checks that raise them.

Everything that enters the math from outside (a file, a parameter, a message turned
into arrays) passes one of these checks first, so bad numbers become a clear exception
(which the ROS layer turns into a diagnostic) and never reach a joint command.
"""

from dataclasses import field, fields
import math
from numbers import Real

import numpy as np

#: the dataclass field metadata key of a setting's range ``(lo, hi)`` (:func:`ranged`)
RANGE = 'range'
RIGID_TOLERANCE = 1e-6  # |R^T R - I| and |det R - 1| accepted in a rigid transform [-]


class IkControlError(ValueError):
    """Base class of the errors ik_control raises for bad user input."""


class ModelError(IkControlError):
    """A robot description, frame or joint selection that cannot be used."""


class InputError(IkControlError):
    """A numeric input (configuration, target, gain) that is malformed or not finite."""


def ranged(default, lo, hi):
    """
    Return a dataclass field whose value must lie in ``[lo, hi]``, its units' range.

    The one place a setting's range is typed: :func:`check_ranges` refuses a value outside
    it, and the ROS parameter that sets the field is declared with the same range
    (:func:`field_range`).
    """
    return field(default=default, metadata={RANGE: (lo, hi)})


def field_range(owner, name):
    """Return ``(lo, hi)`` of dataclass ``owner``'s field ``name`` (:func:`ranged`), or None."""
    for f in fields(owner):
        if f.name == name:
            return f.metadata.get(RANGE)
    raise InputError(f"'{type(owner).__name__}' has no field '{name}'")


def check_ranges(settings, prefix=''):
    """
    Raise :class:`InputError` for the first :func:`ranged` field of ``settings`` outside its range.

    ``prefix`` names the group in the message (``'limits.'``): ``limits.velocity_scale
    must be a number in [0.001, 1], got 2.0``. A bool is not a number here.
    """
    for f in fields(settings):
        bounds = f.metadata.get(RANGE)
        if bounds is None:
            continue
        value = getattr(settings, f.name)
        if not (isinstance(value, Real) and not isinstance(value, bool)
                and math.isfinite(value) and bounds[0] <= value <= bounds[1]):
            raise InputError(f'{prefix}{f.name} must be a number in [{bounds[0]:g}, '
                             f'{bounds[1]:g}], got {value!r}')


def read_yaml(path, what):
    """
    Return the YAML document in file ``path``; :class:`InputError` if it cannot be read.

    ``what`` names the file in the message: ``cannot read <what> '<path>': <reason>`` or
    ``<what> '<path>' is not valid YAML: <error>``.
    """
    import yaml

    try:
        with open(path, encoding='utf-8') as stream:
            return yaml.safe_load(stream)
    except OSError as exc:
        raise InputError(f"cannot read {what} '{path}': {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{what} '{path}' is not valid YAML: {exc}") from None


def finite_vector(value, size, what):
    """Return ``value`` as a float vector of length ``size`` or raise :class:`InputError`."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f'{what} must be numbers') from None
    if arr.ndim != 1 or arr.shape[0] != size:
        raise InputError(f'{what} must have {size} values, got shape {arr.shape}')
    if not np.all(np.isfinite(arr)):
        raise InputError(f'{what} contains NaN or infinite values')
    return arr


def unit_quaternion(xyzw, what='quaternion', tolerance=1e-3):
    """
    Return ``xyzw`` as a finite unit quaternion; reject zero norm or norms off 1 by > tolerance.

    Unnormalised quaternions are refused rather than silently normalised: a message whose
    norm is far from 1 was built wrongly, and guessing its meaning could move the robot.
    """
    arr = finite_vector(xyzw, 4, what)
    norm = float(np.linalg.norm(arr))
    if abs(norm - 1.0) > tolerance:
        raise InputError(f'{what} is not normalised (norm {norm:.6g})')
    return arr / norm


def quaternion_to_matrix(xyzw):
    """Rotation matrix of a unit quaternion given as (x, y, z, w)."""
    x, y, z, w = xyzw
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def matrix_to_quaternion(R):
    """Return the unit quaternion (x, y, z, w) of a rotation matrix (Shepperd's method)."""
    t = np.trace(R)
    if t > 0:
        s = 2.0 * np.sqrt(1.0 + t)
        q = [(R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, 0.25 * s]
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(max(1.0 + R[i, i] - R[j, j] - R[k, k], 1e-300))
        q = [0.0, 0.0, 0.0, (R[k, j] - R[j, k]) / s]
        q[i] = 0.25 * s
        q[j] = (R[j, i] + R[i, j]) / s
        q[k] = (R[k, i] + R[i, k]) / s
    q = np.array(q)
    return q / np.linalg.norm(q)


def pose_matrix(xyz, xyzw=None):
    """4x4 homogeneous transform from a position and an optional (x, y, z, w) quaternion."""
    T = np.eye(4)
    T[:3, 3] = finite_vector(xyz, 3, 'position')
    if xyzw is not None:
        T[:3, :3] = quaternion_to_matrix(unit_quaternion(xyzw))
    return T


def rotation_matrix(R, what):
    """
    Return ``R`` as a float 3x3 rotation matrix, or raise :class:`InputError` naming ``what``.

    A rotation: finite, orthonormal and of determinant +1, each within ``RIGID_TOLERANCE``
    (``|R^T R - I|`` and ``|det R - 1|``: no reflection).
    """
    try:
        R = np.asarray(R, dtype=float)
    except (TypeError, ValueError):
        R = None
    if (R is None or R.shape != (3, 3) or not np.all(np.isfinite(R))
            or np.max(np.abs(R.T @ R - np.eye(3))) > RIGID_TOLERANCE
            or abs(np.linalg.det(R) - 1.0) > RIGID_TOLERANCE):
        raise InputError(f'{what} is not a rotation matrix (finite 3x3, R^T R = I, '
                         'det R = +1)')
    return R


def rigid_transform(T, what):
    """
    Return ``T`` as a float 4x4 rigid transform, or raise :class:`InputError` naming ``what``.

    Rigid: every entry finite, the rotation part a :func:`rotation_matrix`, the last row
    0 0 0 1.
    """
    try:
        T = np.asarray(T, dtype=float)
    except (TypeError, ValueError):
        T = None
    if T is None or T.shape != (4, 4) or not np.all(np.isfinite(T)):
        raise InputError(f'{what} is not a rigid transform (finite 4x4 numbers)')
    if np.any(T[3] != (0.0, 0.0, 0.0, 1.0)):
        raise InputError(f'{what} is not a rigid transform (last row not 0 0 0 1)')
    rotation_matrix(T[:3, :3], f'{what} is not a rigid transform: its rotation')
    return T

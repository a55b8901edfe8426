"""
Pose error between a current and a desired placement, in base-frame axes.

The error drives the velocity laws as Buss's ``e = t - s`` (sec. 2) extended to
orientation; three forms (``ERROR_*`` codes):

* ``log3`` (default): ``[p_d - p_a ; log3(R_d R_a^T)]`` -- position difference at the frame
  origin and the rotation vector of the remaining rotation, both in base axes; this is the
  decoupled form of the SE(3) logarithm, matched to the LOCAL_WORLD_ALIGNED Jacobian.
* ``se3``: ``log6(T_a^-1 T_d)`` (translation through the SE(3) left Jacobian), rotated into
  base axes; equals ``log3`` to first order.
* ``axis_cross``: SAM eq. (20) ``e_p = p_d - p_a`` and eq. (21)
  ``e_o = 0.5 (n_a x n_d + o_a x o_d + a_a x a_d)`` with n, o, a the columns of R: the
  half sum of the cross products of the frame axes (``sin`` of the angle for small
  errors, not the angle). ``sam``, its earlier name, is accepted as a deprecated alias
  (:data:`ERROR_MODE_ALIASES`): SAM also specifies the spline of eq. (20), which the
  error mode alone is not.
"""

import math

from numba import njit
import numpy as np

ERROR_LOG3 = 0
ERROR_SE3 = 1
ERROR_AXIS_CROSS = 2
ERROR_MODES = {'log3': ERROR_LOG3, 'se3': ERROR_SE3, 'axis_cross': ERROR_AXIS_CROSS}
#: Deprecated error-mode names and the name each stands for (still accepted).
ERROR_MODE_ALIASES = {'sam': 'axis_cross'}


def error_mode_code(name):
    """Return the ``ERROR_*`` code of error mode ``name`` (an alias too); KeyError if unknown."""
    return ERROR_MODES[ERROR_MODE_ALIASES.get(name, name)]


@njit(cache=True, nogil=True)
def log3(R, out):
    """Rotation vector ``w`` with ``exp([w]x) = R`` into ``out``; returns its angle in [0, pi]."""
    c = 0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0)
    c = min(1.0, max(-1.0, c))
    theta = np.arccos(c)
    vx = R[2, 1] - R[1, 2]
    vy = R[0, 2] - R[2, 0]
    vz = R[1, 0] - R[0, 1]
    if theta < 1e-6:
        out[0] = 0.5 * vx
        out[1] = 0.5 * vy
        out[2] = 0.5 * vz
        return theta
    if theta > np.pi - 1e-4:
        # Near pi: axis from the diagonal of (R + I) / 2 = a a^T.
        d0 = max(0.0, 0.5 * (R[0, 0] + 1.0))
        d1 = max(0.0, 0.5 * (R[1, 1] + 1.0))
        d2 = max(0.0, 0.5 * (R[2, 2] + 1.0))
        ax = np.sqrt(d0)
        ay = np.sqrt(d1)
        az = np.sqrt(d2)
        if ax >= ay and ax >= az:
            ay = (R[0, 1] + R[1, 0]) / (4.0 * ax)
            az = (R[0, 2] + R[2, 0]) / (4.0 * ax)
        elif ay >= az:
            ax = (R[0, 1] + R[1, 0]) / (4.0 * ay)
            az = (R[1, 2] + R[2, 1]) / (4.0 * ay)
        else:
            ax = (R[0, 2] + R[2, 0]) / (4.0 * az)
            ay = (R[1, 2] + R[2, 1]) / (4.0 * az)
        norm = np.sqrt(ax * ax + ay * ay + az * az)
        sign = 1.0
        if ax * vx + ay * vy + az * vz < 0.0:
            sign = -1.0
        out[0] = sign * theta * ax / norm
        out[1] = sign * theta * ay / norm
        out[2] = sign * theta * az / norm
        return theta
    k = 0.5 * theta / np.sin(theta)
    out[0] = k * vx
    out[1] = k * vy
    out[2] = k * vz
    return theta


@njit(cache=True, nogil=True)
def pose_error(Ta, Td, mode, position_only, out, work):
    """
    Write the error from placement ``Ta`` to ``Td`` (4x4) into ``out`` (3 or 6 values).

    ``work`` is a (3, 3) scratch array. See the module docstring for ``mode``.
    """
    out[0] = Td[0, 3] - Ta[0, 3]
    out[1] = Td[1, 3] - Ta[1, 3]
    out[2] = Td[2, 3] - Ta[2, 3]
    if position_only:
        return
    if mode == ERROR_AXIS_CROSS:
        # SAM eq. (21): sum over the columns n, o, a of R_a x R_d.
        ex = 0.0
        ey = 0.0
        ez = 0.0
        for c in range(3):
            ex += Ta[1, c] * Td[2, c] - Ta[2, c] * Td[1, c]
            ey += Ta[2, c] * Td[0, c] - Ta[0, c] * Td[2, c]
            ez += Ta[0, c] * Td[1, c] - Ta[1, c] * Td[0, c]
        out[3] = 0.5 * ex
        out[4] = 0.5 * ey
        out[5] = 0.5 * ez
        return
    # R_rel = R_d R_a^T (base axes)
    for r in range(3):
        for c in range(3):
            work[r, c] = Td[r, 0] * Ta[c, 0] + Td[r, 1] * Ta[c, 1] + Td[r, 2] * Ta[c, 2]
    w = out[3:6]
    theta = log3(work, w)
    if mode != ERROR_SE3:
        return
    # log6(Ta^-1 Td): the body-frame translation is Ra^T (pd - pa); its SE(3) part is
    # V^-1 p with V^-1 = I - 0.5 [w]x + (1/theta^2)(1 - theta sin / (2 (1 - cos))) [w]x^2.
    # Expressed in base axes, [w]x acts on the base-axes difference directly.
    px = out[0]
    py = out[1]
    pz = out[2]
    cx = w[1] * pz - w[2] * py
    cy = w[2] * px - w[0] * pz
    cz = w[0] * py - w[1] * px
    ccx = w[1] * cz - w[2] * cy
    ccy = w[2] * cx - w[0] * cz
    ccz = w[0] * cy - w[1] * cx
    if theta < 1e-6:
        b = 1.0 / 12.0
    else:
        b = (1.0 - theta * np.sin(theta) / (2.0 * (1.0 - np.cos(theta)))) / (theta * theta)
    out[0] = px - 0.5 * cx + b * ccx
    out[1] = py - 0.5 * cy + b * ccy
    out[2] = pz - 0.5 * cz + b * ccz


@njit(cache=True, nogil=True)
def pose_distance(T, goal):
    """
    Position [m] and rotation-angle [rad] distance of placement ``T`` from ``goal`` (4x4).

    ``|p - p_goal|`` and the angle of ``R = R_goal^T R_T``, ``atan2(|s|, (tr R - 1) / 2)``
    with ``s`` its axial vector (accurate near 0 and pi, unlike ``acos``): the figures
    goals are judged by (the controller's goals, demo, the ``move_to_pose`` action).
    Compiled: the controller checks the measured pose of reached goals every tick.
    """
    R = np.empty((3, 3))
    for i in range(3):
        for k in range(3):
            R[i, k] = goal[0, i] * T[0, k] + goal[1, i] * T[1, k] + goal[2, i] * T[2, k]
    sx = 0.5 * (R[2, 1] - R[1, 2])
    sy = 0.5 * (R[0, 2] - R[2, 0])
    sz = 0.5 * (R[1, 0] - R[0, 1])
    angle = math.atan2(math.sqrt(sx * sx + sy * sy + sz * sz),
                       0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0))
    dx, dy, dz = T[0, 3] - goal[0, 3], T[1, 3] - goal[1, 3], T[2, 3] - goal[2, 3]
    return math.sqrt(dx * dx + dy * dy + dz * dz), angle

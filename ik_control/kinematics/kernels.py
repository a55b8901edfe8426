"""
Compiled forward kinematics and frame Jacobians for trees of 1-DoF joints.

The pinocchio model is the reference; :class:`~ik_control.kinematics.robot_model.RobotModel`
flattens it into the arrays these kernels take, so that one control tick costs one
call into compiled code instead of dozens of Python-level pinocchio calls (each of
which costs about a microsecond of object overhead, see DESIGN.md). The tests check
these kernels against pinocchio's ``framesForwardKinematics`` and
``computeFrameJacobian`` at random configurations of every robot.

Kinematics (SAM eq. 2, Buss sec. 2): with ``M_j`` the constant placement of joint
``j`` in its parent joint's frame and ``X_j(q_j)`` its motion (rotation about, or
translation along, the unit axis ``a_j``)::

    T_j = T_parent(j) @ M_j @ X_j(q_j)

A frame ``f`` on joint ``j`` sits at ``T_f = T_j @ F_f``. The Jacobian column of a
revolute joint ``j`` for a point ``p`` carried by the subtree of ``j`` is (SAM eq. 4,
Buss sec. 2)::

    [ z_j x (p - o_j) ; z_j ]      z_j = R_j a_j,  o_j = origin of T_j

and ``[ z_j ; 0 ]`` for a prismatic joint. Columns are expressed in the base (world)
axes at the point ``p`` (pinocchio's ``LOCAL_WORLD_ALIGNED``). Passing a target
position as ``p`` instead of the frame origin gives Buss's *alternate Jacobian*.

Controlled joints map to tree joints through ``ctrl_index``/``multiplier``/``offset``
(identity for a controlled joint, URDF ``<mimic>`` coupling for a slave joint,
``ctrl_index = -1`` for a locked joint held at ``q_locked``)::

    q_tree[j] = multiplier[j] * q[ctrl_index[j]] + offset[j]     (ctrl_index[j] >= 0)
    q_tree[j] = q_locked[j]                                      (ctrl_index[j] == -1)

so that ``J_ctrl[:, k] = sum_j multiplier[j] * J_tree[:, j]`` over ``ctrl_index[j] == k``.
"""

from ik_control.kinematics import buffers
from numba import njit
import numpy as np

JOINT_REVOLUTE = 0
JOINT_PRISMATIC = 1


@njit(cache=True, nogil=True)
def tree_configuration(q, ctrl_index, multiplier, offset, q_locked, out):
    """Expand controlled joint values ``q`` into tree joint values ``out`` (see module doc)."""
    for j in range(out.shape[0]):
        k = ctrl_index[j]
        if k >= 0:
            out[j] = multiplier[j] * q[k] + offset[j]
        else:
            out[j] = q_locked[j]


@njit(cache=True, nogil=True)
def _compose(A, i, B, k, out, o):
    """``out[o] = A[i] @ B[k]`` for stacks of homogeneous 4x4 transforms (no views made)."""
    for r in range(3):
        a0 = A[i, r, 0]
        a1 = A[i, r, 1]
        a2 = A[i, r, 2]
        out[o, r, 0] = a0 * B[k, 0, 0] + a1 * B[k, 1, 0] + a2 * B[k, 2, 0]
        out[o, r, 1] = a0 * B[k, 0, 1] + a1 * B[k, 1, 1] + a2 * B[k, 2, 1]
        out[o, r, 2] = a0 * B[k, 0, 2] + a1 * B[k, 1, 2] + a2 * B[k, 2, 2]
        out[o, r, 3] = a0 * B[k, 0, 3] + a1 * B[k, 1, 3] + a2 * B[k, 2, 3] + A[i, r, 3]


@njit(cache=True, nogil=True)
def forward_kinematics(q_tree, parent, placement, axis, kind, frame_joint, frame_placement,
                       base_inv, joint_T, frame_T, tmp):
    """
    Placements of every joint (``joint_T``) and every frame (``frame_T``) in the base frame.

    ``parent[j] < j`` (pinocchio's topological order; -1 for the root). ``base_inv`` (1, 4, 4)
    is the inverse placement of the base frame in the model root, applied first so that
    every result is expressed in the base frame. ``tmp`` is a (2, 4, 4) scratch array.
    """
    nj = q_tree.shape[0]
    for j in range(nj):
        p = parent[j]
        if p < 0:
            _compose(base_inv, 0, placement, j, tmp, 0)
        else:
            _compose(joint_T, p, placement, j, tmp, 0)
        x = axis[j, 0]
        y = axis[j, 1]
        z = axis[j, 2]
        qj = q_tree[j]
        if kind[j] == JOINT_PRISMATIC:
            for r in range(3):
                joint_T[j, r, 0] = tmp[0, r, 0]
                joint_T[j, r, 1] = tmp[0, r, 1]
                joint_T[j, r, 2] = tmp[0, r, 2]
                joint_T[j, r, 3] = tmp[0, r, 3] + qj * (
                    tmp[0, r, 0] * x + tmp[0, r, 1] * y + tmp[0, r, 2] * z)
            continue
        c = np.cos(qj)
        s = np.sin(qj)
        v = 1.0 - c
        # Rodrigues: rotation about the unit axis (x, y, z) by q_j
        m00 = c + x * x * v
        m01 = x * y * v - z * s
        m02 = x * z * v + y * s
        m10 = y * x * v + z * s
        m11 = c + y * y * v
        m12 = y * z * v - x * s
        m20 = z * x * v - y * s
        m21 = z * y * v + x * s
        m22 = c + z * z * v
        for r in range(3):
            a0 = tmp[0, r, 0]
            a1 = tmp[0, r, 1]
            a2 = tmp[0, r, 2]
            joint_T[j, r, 0] = a0 * m00 + a1 * m10 + a2 * m20
            joint_T[j, r, 1] = a0 * m01 + a1 * m11 + a2 * m21
            joint_T[j, r, 2] = a0 * m02 + a1 * m12 + a2 * m22
            joint_T[j, r, 3] = tmp[0, r, 3]
    for f in range(frame_joint.shape[0]):
        j = frame_joint[f]
        if j < 0:
            _compose(base_inv, 0, frame_placement, f, frame_T, f)
        else:
            _compose(joint_T, j, frame_placement, f, frame_T, f)


@njit(cache=True, nogil=True)
def frame_jacobians(joint_T, points, axis, kind, support, ctrl_index, multiplier, row_frame,
                    row_component, out):
    """
    Stacked task Jacobian rows w.r.t. the controlled joints (module doc).

    Row ``r`` of ``out`` is component ``row_component[r]`` (0-2 linear x,y,z; 3-5 angular)
    of the velocity of point ``points[row_frame[r]]``; ``support[f, j]`` tells whether tree
    joint ``j`` moves frame ``f``. ``out`` is overwritten (shape rows x controlled joints).
    """
    out[:, :] = 0.0
    nj = joint_T.shape[0]
    for j in range(nj):
        k = ctrl_index[j]
        if k < 0:
            continue
        m = multiplier[j]
        T = joint_T[j]
        zx = T[0, 0] * axis[j, 0] + T[0, 1] * axis[j, 1] + T[0, 2] * axis[j, 2]
        zy = T[1, 0] * axis[j, 0] + T[1, 1] * axis[j, 1] + T[1, 2] * axis[j, 2]
        zz = T[2, 0] * axis[j, 0] + T[2, 1] * axis[j, 1] + T[2, 2] * axis[j, 2]
        for r in range(out.shape[0]):
            f = row_frame[r]
            if not support[f, j]:
                continue
            comp = row_component[r]
            if kind[j] == JOINT_PRISMATIC:
                if comp == 0:
                    out[r, k] += m * zx
                elif comp == 1:
                    out[r, k] += m * zy
                elif comp == 2:
                    out[r, k] += m * zz
                continue
            dx = points[f, 0] - T[0, 3]
            dy = points[f, 1] - T[1, 3]
            dz = points[f, 2] - T[2, 3]
            if comp == 0:
                out[r, k] += m * (zy * dz - zz * dy)
            elif comp == 1:
                out[r, k] += m * (zz * dx - zx * dz)
            elif comp == 2:
                out[r, k] += m * (zx * dy - zy * dx)
            elif comp == 3:
                out[r, k] += m * zx
            elif comp == 4:
                out[r, k] += m * zy
            else:
                out[r, k] += m * zz


@njit(cache=True, nogil=True)
def frame_origins(frame_T, out):
    """Copy the origin of every frame placement into ``out`` (frames x 3)."""
    for f in range(frame_T.shape[0]):
        out[f, 0] = frame_T[f, 0, 3]
        out[f, 1] = frame_T[f, 1, 3]
        out[f, 2] = frame_T[f, 2, 3]


def identity_transforms(n):
    """``n`` 4x4 identity transforms, the initial value of the kernels' output arrays."""
    return np.repeat(np.eye(4)[None, :, :], n, axis=0)


# --------------------------------------------------------------------------------------
# Packed model: one float and one int array instead of ~20 arguments.
#
# Each array argument of a compiled function costs ~0.12 us to unbox at the call, which
# would be most of a control tick. The model is therefore packed into ``F`` (float64)
# and ``IX`` (int64), and the per-loop buffers into ``W``; compiled code slices views.
# Header of ``IX``: [nt, ne, nq, m] = tree joints, frames, controlled joints, task rows.

HEADER = 4


def pack_model(parent, placement, axis, kind, ctrl_index, multiplier, offset, q_locked,
               frame_joint, frame_placement, base_inv, support, row_frame, row_component, lower,
               upper):
    """
    Pack the kinematic tree and the controlled joints' limits into ``(F, IX)``.

    The 4x4 placements come first as one block (joints, frames, base inverse) so that a
    single reshape gives all of them: each reshape in compiled code costs ~25 ns.
    """
    nt, ne, m, nq = parent.shape[0], frame_joint.shape[0], row_frame.shape[0], lower.shape[0]
    F = np.concatenate([placement.ravel(), frame_placement.ravel(), base_inv.ravel(),
                        axis.ravel(), multiplier, offset, q_locked, lower,
                        upper]).astype(np.float64)
    IX = np.concatenate([[nt, ne, nq, m], parent, kind, ctrl_index, frame_joint,
                        support.astype(np.int64).ravel(), row_frame,
                        row_component]).astype(np.int64)
    return F, IX


@njit(cache=True, nogil=True, inline='always')
def model_views(F, IX):
    """Return views of the packed model (the kernels' arguments), see :func:`pack_model`."""
    nt, ne, nq, m = IX[0], IX[1], IX[2], IX[3]
    placement, o = buffers.matrices(F, 0, nt, 4, 4)
    frame_placement, o = buffers.matrices(F, o, ne, 4, 4)
    base_inv, o = buffers.matrices(F, o, 1, 4, 4)
    axis, o = buffers.matrix(F, o, nt, 3)
    multiplier, o = buffers.vector(F, o, nt)
    offset, o = buffers.vector(F, o, nt)
    q_locked, o = buffers.vector(F, o, nt)
    lower, o = buffers.vector(F, o, nq)
    upper, o = buffers.vector(F, o, nq)
    parent, k = buffers.vector(IX, HEADER, nt)
    kind, k = buffers.vector(IX, k, nt)
    ctrl_index, k = buffers.vector(IX, k, nt)
    frame_joint, k = buffers.vector(IX, k, ne)
    support, k = buffers.matrix(IX, k, ne, nt)
    row_frame, k = buffers.vector(IX, k, m)
    row_component, k = buffers.vector(IX, k, m)
    return (placement, axis, multiplier, offset, q_locked, frame_placement, base_inv, parent,
            kind, ctrl_index, frame_joint, support, row_frame, row_component, lower, upper)


@njit(cache=True, nogil=True)
def work_size(IX):
    """Length of the work buffer ``W`` for :func:`work_views`."""
    nt, ne, nq, m = IX[0], IX[1], IX[2], IX[3]
    return (nt + ne + 2) * 16 + nt + ne * 3 + m * nq


@njit(cache=True, nogil=True, inline='always')
def work_views(IX, W):
    """Return views of the work buffer: q_tree, joint_T, frame_T, points, J, tmp."""
    nt, ne, nq, m = IX[0], IX[1], IX[2], IX[3]
    joint_T, o = buffers.matrices(W, 0, nt, 4, 4)
    frame_T, o = buffers.matrices(W, o, ne, 4, 4)
    tmp, o = buffers.matrices(W, o, 2, 4, 4)
    q_tree, o = buffers.vector(W, o, nt)
    points, o = buffers.matrix(W, o, ne, 3)
    J, o = buffers.matrix(W, o, m, nq)
    return q_tree, joint_T, frame_T, points, J, tmp


@njit(cache=True, nogil=True)
def kinematics_from_views(model, work, q, use_points, jacobian):
    """:func:`update_kinematics` on already-unpacked views (``model_views``, ``work_views``)."""
    (placement, axis, multiplier, offset, q_locked, frame_placement, base_inv, parent, kind,
     ctrl_index, frame_joint, support, row_frame, row_component, lower, upper) = model
    q_tree, joint_T, frame_T, points, J, tmp = work
    tree_configuration(q, ctrl_index, multiplier, offset, q_locked, q_tree)
    forward_kinematics(q_tree, parent, placement, axis, kind, frame_joint, frame_placement,
                       base_inv, joint_T, frame_T, tmp)
    if not jacobian:
        return
    if not use_points:
        frame_origins(frame_T, points)
    frame_jacobians(joint_T, points, axis, kind, support, ctrl_index, multiplier, row_frame,
                    row_component, J)


@njit(cache=True, nogil=True)
def update_kinematics(F, IX, W, q, use_points, jacobian):
    """
    Compute forward kinematics at ``q`` into ``W``, then (optionally) the Jacobian.

    The Jacobian is taken at the frame origins, or at the points already stored in ``W``
    when ``use_points`` (Buss's alternate Jacobian).
    """
    kinematics_from_views(model_views(F, IX), work_views(IX, W), q, use_points, jacobian)

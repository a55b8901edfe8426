"""
Robots from Denavit-Hartenberg tables and from simple joint lists, as URDF text.

Standard (distal) DH, SAM eq. (1): the transform from frame i-1 to frame i is::

    A_{i-1,i} = Rz(theta_i) Tz(d_i) Tx(a_i) Rx(alpha_i)

and chains multiply, SAM eq. (2): ``A_{i,j} = A_{i,i+1} ... A_{j-1,j}``. Joint i moves
along/about the z axis of frame i-1, so in URDF terms joint i sits at the constant part
``Tz(d_{i-1}) Tx(a_{i-1}) Rx(alpha_{i-1})`` of the previous row, with axis z; the last
row's constant part (and an optional tool transform) goes into a fixed ``tool`` joint.

The same generator builds Buss's Y (7 joints, 2 end effectors) and double-Y (16 joints,
4 end effectors) test shapes, and the 9-joint robot of SAM Table 1.
"""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DHRow:
    """
    One DH row: ``alpha`` [rad], ``a`` [m], ``d`` [m], joint ``kind`` and limits.

    ``kind`` is ``'revolute'`` (variable theta, ``offset`` added to it) or ``'prismatic'``
    (variable d, ``offset`` added to it).
    """

    alpha: float
    a: float
    d: float
    kind: str = 'revolute'
    offset: float = 0.0
    lower: float = -np.pi
    upper: float = np.pi
    velocity: float = 2.0
    effort: float = 50.0


def dh_transform(alpha, a, d, theta):
    """SAM eq. (1): ``Rz(theta) Tz(d) Tx(a) Rx(alpha)`` as a 4x4 array."""
    ct, st, ca, sa = np.cos(theta), np.sin(theta), np.cos(alpha), np.sin(alpha)
    return np.array([[ct, -ca * st, sa * st, a * ct],
                     [st, ca * ct, -sa * ct, a * st],
                     [0.0, sa, ca, d],
                     [0.0, 0.0, 0.0, 1.0]])


def dh_forward(rows, q, base=None, tool=None):
    """SAM eq. (2): ``base @ A_1(q_1) ... A_n(q_n) @ tool`` for a DH table."""
    T = np.eye(4) if base is None else np.array(base, dtype=float)
    for row, qi in zip(rows, q):
        if row.kind == 'revolute':
            T = T @ dh_transform(row.alpha, row.a, row.d, qi + row.offset)
        else:
            T = T @ dh_transform(row.alpha, row.a, row.d + qi + row.offset, 0.0)
    return T if tool is None else T @ np.asarray(tool, dtype=float)


@dataclass(frozen=True)
class JointSpec:
    """A joint for :func:`tree_urdf`: placement in the parent link, axis, kind and limits."""

    name: str
    parent: str
    child: str
    xyz: tuple = (0.0, 0.0, 0.0)
    rpy: tuple = (0.0, 0.0, 0.0)
    axis: tuple = (0.0, 0.0, 1.0)
    kind: str = 'revolute'
    lower: float = -np.pi
    upper: float = np.pi
    velocity: float = 2.0
    effort: float = 50.0


def _fmt(values):
    return ' '.join(repr(float(v)) for v in values)


def _rpy_of(R):
    """URDF roll-pitch-yaw (fixed-axis XYZ) of a rotation matrix."""
    pitch = np.arcsin(-np.clip(R[2, 0], -1.0, 1.0))
    if abs(np.cos(pitch)) > 1e-9:
        roll = np.arctan2(R[2, 1], R[2, 2])
        yaw = np.arctan2(R[1, 0], R[0, 0])
    else:
        roll = np.arctan2(-R[1, 2], R[1, 1])
        yaw = 0.0
    return roll, pitch, yaw


def tree_urdf(name, root, joints, mass=0.5, visuals=None):
    """
    URDF text for a tree of links joined by ``joints`` (a sequence of :class:`JointSpec`).

    Every link gets a small inertia so that MuJoCo accepts the file too. ``visuals`` maps a
    link to cylinders ``(xyz, rpy, length, radius)`` [m, rad] drawn in it (for RViz).
    """
    links = [root] + [j.child for j in joints]
    out = [f'<robot name="{name}">']
    inertia = 1e-3
    for link in links:
        shapes = ''.join(
            f'<visual><origin xyz="{_fmt(xyz)}" rpy="{_fmt(rpy)}"/><geometry><cylinder '
            f'radius="{radius!r}" length="{length!r}"/></geometry></visual>'
            for xyz, rpy, length, radius in (visuals or {}).get(link, ()))
        out.append(f'  <link name="{link}"><inertial><origin xyz="0 0 0"/><mass value="{mass}"/>'
                   f'<inertia ixx="{inertia}" iyy="{inertia}" izz="{inertia}" ixy="0" ixz="0" '
                   f'iyz="0"/></inertial>{shapes}</link>')
    for j in joints:
        out.append(f'  <joint name="{j.name}" type="{j.kind}">'
                   f'<parent link="{j.parent}"/><child link="{j.child}"/>'
                   f'<origin xyz="{_fmt(j.xyz)}" rpy="{_fmt(j.rpy)}"/>')
        if j.kind != 'fixed':
            out.append(f'    <axis xyz="{_fmt(j.axis)}"/><limit lower="{float(j.lower)!r}" '
                       f'upper="{float(j.upper)!r}" velocity="{j.velocity:.12g}" '
                       f'effort="{j.effort:.12g}"/>')
        out.append('  </joint>')
    out.append('</robot>')
    return '\n'.join(out)


def dh_urdf(rows, name='dh_robot', base=None, tool=None, prefix='joint', joint_names=None,
            link_names=None, base_link='base_link', tool_link='tool', visual_radius=0.0):
    """
    URDF text of a DH table (module docstring); frames ``base_link``, ``link_i``, ``tool``.

    ``base`` is the placement of DH frame 0 in ``base_link``; ``tool`` an extra fixed
    transform after the last DH frame. Joint offsets shift the URDF zero, so joint value
    ``q_i`` here equals the DH variable minus ``offset``. Joints are named ``<prefix>i``
    and links ``link_i`` unless ``joint_names`` / ``link_names`` (one per row) are given;
    the fixed joint to ``tool_link`` is ``<tool_link>_joint``. With ``visual_radius`` [m] > 0
    each link is drawn (for RViz) as cylinders along its ``d`` (z) and ``a`` (x) offsets.
    """
    base = np.eye(4) if base is None else np.asarray(base, dtype=float)
    tool = np.eye(4) if tool is None else np.asarray(tool, dtype=float)
    joint_names = joint_names or [f'{prefix}{i}' for i in range(1, len(rows) + 1)]
    link_names = link_names or [f'link_{i}' for i in range(1, len(rows) + 1)]
    joints = []
    constant = base
    parent = base_link
    for i, row in enumerate(rows):
        if row.kind == 'revolute':
            constant = constant @ dh_transform(0.0, 0.0, 0.0, row.offset)
        else:
            constant = constant @ dh_transform(0.0, 0.0, row.offset, 0.0)
        child = link_names[i]
        joints.append(JointSpec(joint_names[i], parent, child, tuple(constant[:3, 3]),
                                _rpy_of(constant[:3, :3]), (0.0, 0.0, 1.0), row.kind,
                                row.lower, row.upper, row.velocity, row.effort))
        constant = dh_transform(row.alpha, row.a, row.d, 0.0)
        parent = child
    last = constant @ tool
    joints.append(JointSpec(f'{tool_link}_joint', parent, tool_link, tuple(last[:3, 3]),
                            _rpy_of(last[:3, :3]), kind='fixed'))
    visuals = {}
    if visual_radius > 0.0:
        for link, row in zip(link_names, rows):
            d = row.d
            visuals[link] = [cylinder for cylinder in (
                ((0.0, 0.0, 0.5 * d), (0.0, 0.0, 0.0), abs(d), visual_radius),
                ((0.5 * row.a, 0.0, d), (0.0, 0.5 * np.pi, 0.0), abs(row.a), visual_radius))
                if cylinder[2] > 1e-9]
    return tree_urdf(name, base_link, joints, visuals=visuals)


# SAM Table 1: (alpha [deg], a [m], d [m]) of the 9-joint spray-painting robot.
SAM_TABLE_1 = ((90, 0, 1.0), (0, 1.5, 0), (0, 1.5, 0), (90, 0, 0), (0, 1.0, 0), (90, 0, 0),
               (90, 0, 1.0), (90, 0, 0), (0, 1.0, 0))


def sam_robot_rows():
    """Return the DH rows of SAM Table 1 (all revolute, +-pi limits)."""
    return [DHRow(np.radians(al), a, d) for al, a, d in SAM_TABLE_1]


def sam_robot_urdf():
    """URDF text of the 9-joint robot of SAM Table 1 (end effector frame ``tool``)."""
    return dh_urdf(sam_robot_rows(), name='sam_9r')


_AXES = ((0.0, 0.0, 1.0), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0))


def _chain(joints, parent, prefix, count, length, first_axis, direction=(0.0, 0.0, 1.0)):
    """Append ``count`` revolute joints of spacing ``length`` along ``direction``."""
    for i in range(count):
        child = f'{prefix}_{i + 1}'
        xyz = (0.0, 0.0, 0.0) if (i == 0 and not joints) else tuple(length * np.array(direction))
        joints.append(JointSpec(f'{prefix}_j{i + 1}', parent, child, xyz,
                                axis=_AXES[(first_axis + i) % 3]))
        parent = child
    return parent


def _effector(joints, parent, name, length, direction):
    joints.append(JointSpec(f'{name}_joint', parent, name, tuple(length * np.array(direction)),
                            kind='fixed'))


def y_shape_urdf(link=0.5):
    """
    Buss's Y: a 3-joint trunk splitting into two 2-joint branches; effectors ``e1``, ``e2``.

    7 revolute joints and 2 position effectors: J is 6 x 7 (Buss sec. 8, Fig. 1).
    """
    joints = []
    trunk = _chain(joints, 'base_link', 'trunk', 3, link, 0)
    left, right = (-0.5, 0.0, 0.866), (0.5, 0.0, 0.866)
    a = _chain(joints, trunk, 'left', 2, link, 1, left)
    b = _chain(joints, trunk, 'right', 2, link, 1, right)
    _effector(joints, a, 'e1', link, left)
    _effector(joints, b, 'e2', link, right)
    return tree_urdf('buss_y', 'base_link', joints)


def double_y_shape_urdf(link=0.4):
    """
    Buss's double-Y: trunk of 4, two branches of 2, each splitting into two twigs of 2.

    16 revolute joints and 4 position effectors ``e1``-``e4``: J is 12 x 16 (Buss sec. 8).
    """
    joints = []
    trunk = _chain(joints, 'base_link', 'trunk', 4, link, 0)
    dirs = {'l': (-0.5, 0.0, 0.866), 'r': (0.5, 0.0, 0.866)}
    twig = {'l': (-0.866, 0.0, 0.5), 'r': (0.866, 0.0, 0.5)}
    effector = 1
    for side, d in dirs.items():
        branch = _chain(joints, trunk, f'{side}', 2, link, 1, d)
        for sub in ('l', 'r'):
            td = np.array(twig[sub]) if side == sub else np.array(d) * 0.0 + (0.0, 0.0, 1.0)
            tip = _chain(joints, branch, f'{side}{sub}', 2, link, 2, tuple(td))
            _effector(joints, tip, f'e{effector}', link, tuple(td))
            effector += 1
    return tree_urdf('buss_double_y', 'base_link', joints)

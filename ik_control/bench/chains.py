"""
The benchmark's arm as each peer reads it: a URDF chain, a KDL chain, a Robotics Toolbox ETS.

Built from the pinocchio model (:class:`~ik_control.kinematics.RobotModel`), so that every
peer solves the same chain: joints outside it fixed at the values the model holds them at.
"""

import math
import xml.etree.ElementTree as ElementTree

import numpy as np
import pinocchio as pin


class PeerUnavailable(RuntimeError):
    """A peer solver cannot be used here (the message says why)."""


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


def kdl_frame(kdl, T):
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
        chain.addSegment(kdl.Segment(kdl.Joint(kdl.Joint.Fixed), kdl_frame(kdl, fixed)))
        joint_kind = kdl.Joint.RotAxis if kind == 0 else kdl.Joint.TransAxis
        joint = kdl.Joint(model.joint_names[k], kdl.Vector(0.0, 0.0, 0.0),
                          kdl.Vector(*axis), joint_kind)
        chain.addSegment(kdl.Segment(joint, kdl.Frame.Identity()))
    chain.addSegment(kdl.Segment(kdl.Joint(kdl.Joint.Fixed), kdl_frame(kdl, last)))
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

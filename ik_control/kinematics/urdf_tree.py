"""
From URDF text to the kinematic tree that a :class:`~.robot_model.RobotModel` controls.

* :func:`read_urdf`: the text, from a file path or an XML string;
* :func:`unwrap_continuous`: every ``continuous`` joint made a ``revolute`` one with limits
  (the URDF's finite ones, else +-:data:`CONTINUOUS_RANGE`), so every joint has one
  configuration value;
* :func:`mimic_table`: the ``<mimic>`` slaves and whom they follow;
* :func:`chain_joints` and :func:`reduce_to_chain`: the joints from the base frame to the
  end effectors, and the pinocchio model with every other joint (and every joint that is
  not 1-DoF: floating, planar) locked away by ``buildReducedModel``.

Each failure is a :class:`~ik_control.validation.ModelError` that names what is wrong and
what the model has.
"""

import math
import os
import xml.etree.ElementTree as ElementTree

from ik_control.validation import ModelError
import pinocchio as pin

__all__ = ['chain_joints', 'check_frame', 'CONTINUOUS_RANGE', 'joint_kind', 'mimic_table',
           'ONE_DOF_JOINTS', 'parse_urdf', 'read_urdf', 'reduce_to_chain', 'unwrap_continuous']

CONTINUOUS_RANGE = 2.0 * math.pi  # limits of an unwrapped continuous joint: +- this [rad]
ONE_DOF_JOINTS = ('JointModelRX', 'JointModelRY', 'JointModelRZ', 'JointModelRevoluteUnaligned',
                  'JointModelPX', 'JointModelPY', 'JointModelPZ',
                  'JointModelPrismaticUnaligned')


def read_urdf(urdf):
    """Return URDF XML text from a path or an XML string, with a clear error otherwise."""
    if not isinstance(urdf, str) or not urdf.strip():
        raise ModelError('no robot description: give a URDF file path or XML string')
    if urdf.lstrip().startswith('<'):
        return urdf
    if not os.path.isfile(urdf):
        raise ModelError(f"URDF file '{urdf}' does not exist")
    with open(urdf, encoding='utf-8') as stream:
        return stream.read()


def parse_urdf(xml):
    try:
        return ElementTree.fromstring(xml)
    except ElementTree.ParseError as exc:
        raise ModelError(f'URDF is not valid XML: {exc}') from None


def unwrap_continuous(xml):
    """
    Return (URDF text with every ``continuous`` joint made ``revolute``, their names).

    The limits are the URDF's ``lower``/``upper`` where it gives finite ones with
    lower < upper, else +-:data:`CONTINUOUS_RANGE` [rad]; effort and velocity limits are
    kept (0 where the URDF has none). A URDF without continuous joints is returned as is.
    """
    root = parse_urdf(xml)
    names = []
    for joint in root.iter('joint'):
        if joint.get('type') != 'continuous':
            continue
        names.append(joint.get('name'))
        joint.set('type', 'revolute')
        limit = joint.find('limit')
        if limit is None:
            limit = ElementTree.SubElement(joint, 'limit')
        try:
            lower, upper = float(limit.get('lower')), float(limit.get('upper'))
            ok = math.isfinite(lower) and math.isfinite(upper) and lower < upper
        except (TypeError, ValueError):
            ok = False
        if not ok:
            limit.set('lower', repr(-CONTINUOUS_RANGE))
            limit.set('upper', repr(CONTINUOUS_RANGE))
        for key in ('effort', 'velocity'):
            limit.set(key, limit.get(key, '0'))
    if not names:
        return xml, ()
    return ElementTree.tostring(root, encoding='unicode'), tuple(names)


def mimic_table(xml):
    """``{slave: (master, multiplier, offset)}`` from the ``<mimic>`` tags of moving joints."""
    root = parse_urdf(xml)
    table = {}
    for joint in root.iter('joint'):
        mimic = joint.find('mimic')
        if mimic is not None and joint.get('type') != 'fixed':
            table[joint.get('name')] = (mimic.get('joint'),
                                        float(mimic.get('multiplier', 1.0)),
                                        float(mimic.get('offset', 0.0)))
    return table


def joint_kind(joint):
    """Return a user-facing name of a pinocchio joint's type (for messages)."""
    short = joint.shortname()
    return {'JointModelFreeFlyer': 'floating', 'JointModelPlanar': 'planar',
            'JointModelSpherical': 'spherical', 'JointModelSphericalZYX': 'spherical',
            'JointModelTranslation': 'translation'}.get(short, short)


def check_frame(pin_model, frame, shown=40):
    """Raise :class:`ModelError` naming the frames when ``frame`` is not one of the model."""
    if isinstance(frame, str) and pin_model.existFrame(frame):
        return
    names = sorted({f.name for f in pin_model.frames})
    more = f' and {len(names) - shown} more' if len(names) > shown else ''
    raise ModelError(f"unknown frame '{frame}'; the model has {names[:shown]}{more}")


def frame_id(pin_model, frame):
    """
    Return the pinocchio id of ``frame``; where a link and a joint share the name, the link's.

    URDFs may name a joint like its child link (the tool's, often); pinocchio then holds a
    BODY frame and a JOINT (or FIXED_JOINT) frame of that name, and its ``getFrameId``
    refuses to choose. A name is a link first (the frame a user means by a tip or a
    base); :class:`ModelError` where it is still ambiguous or unknown.
    """
    check_frame(pin_model, frame)
    matches = [i for i, f in enumerate(pin_model.frames) if f.name == frame]
    if len(matches) > 1:
        links = [i for i in matches if pin_model.frames[i].type == pin.FrameType.BODY]
        if len(links) != 1:
            raise ModelError(f"frame '{frame}' names {len(matches)} frames of the model, "
                             f'{len(links)} of them links: rename one in the URDF')
        matches = links
    return matches[0]


def _frame_joint_support(pin_model, frame):
    """Return the set of joint ids (> 0) that move ``frame`` (pinocchio ``supports``)."""
    joint = pin_model.frames[frame_id(pin_model, frame)].parentJoint
    return {int(j) for j in pin_model.supports[joint] if j > 0}


def chain_joints(pin_model, base_frame, tips, mimic=None):
    """
    Return the joints from ``base_frame`` to the ``tips`` (names, in tree order).

    A joint is on the chain when it moves a tip but not the base. A URDF ``<mimic>`` slave
    on the chain is replaced by its master (the slave then follows it).
    """
    mimic = mimic or {}
    base = _frame_joint_support(pin_model, base_frame)
    ids = set()
    for tip in tips:
        ids |= _frame_joint_support(pin_model, tip) - base
    names = {pin_model.names[j] for j in ids}
    names = {mimic[n][0] if n in mimic else n for n in names}
    return [pin_model.names[j] for j in range(1, pin_model.njoints)
            if pin_model.names[j] in names]


def reduce_to_chain(pin_model, mimic, joints, tips, base_frame, locked_positions):
    """
    Return (pinocchio model, mimic table, controlled joints, {locked-away joint: value}).

    ``joints`` given: those are controlled; the joints that are not 1-DoF (floating, planar)
    are locked away, the other joints stay in the tree, held at their locked values.
    ``joints`` empty with end-effector frames ``tips``: the chain from ``base_frame`` to them
    (:func:`chain_joints`) is controlled, and every other joint is locked away (with the
    mimic slaves of chain joints that are off the chain). Neither: every 1-DoF, non-mimic
    joint. Locked joints take ``locked_positions`` [rad or m], else 0 kept inside the
    limits (the neutral configuration for joints that are not 1-DoF); a mimic slave of a
    locked master follows its master's locked value.
    """
    names = [pin_model.names[j] for j in range(1, pin_model.njoints)]
    index = {n: j + 1 for j, n in enumerate(names)}
    one_dof = {n: pin_model.joints[index[n]].shortname() in ONE_DOF_JOINTS for n in names}
    for slave, (master, _, _) in mimic.items():
        if slave not in index or master not in index:
            raise ModelError(f"mimic joint '{slave}' follows unknown joint '{master}'")
    tips = list(tips)
    base = base_frame or pin_model.frames[0].name
    chain = not joints and bool(tips)
    if chain:
        joints = chain_joints(pin_model, base, tips, mimic)
    elif not joints:
        joints = [n for n in names if n not in mimic and one_dof[n]]
    joints = list(joints)
    for n in joints:
        if n in index and not one_dof[n]:
            joint = pin_model.joints[index[n]]
            where = f"on the chain from '{base}' to {tips}" if chain else 'listed to control'
            child = [f"its child link '{f.name}'" for f in pin_model.frames
                     if f.parentJoint == index[n] and f.type == pin.FrameType.BODY]
            raise ModelError(
                f"joint '{n}' is a {joint_kind(joint)} joint ({joint.nq} configuration "
                f'values, {joint.nv} DoF) {where}; ik_control controls revolute, continuous '
                'and prismatic joints: choose a base frame below this joint '
                f"({(child or ['its child link'])[0]}) or list the joints to control without it")
    keep = set(joints)
    if chain:
        keep |= {s for s, (m, _, _) in mimic.items() if m in keep}
        lock = [n for n in names if n not in keep]
    else:
        lock = [n for n in names if not one_dof[n] and n not in keep]
    if not lock:
        return pin_model, dict(mimic), joints, {}
    q_ref = pin.neutral(pin_model)
    for n in names:
        j = index[n]
        if one_dof[n]:
            i = pin_model.joints[j].idx_q
            q_ref[i] = min(max(0.0, pin_model.lowerPositionLimit[i]),
                           pin_model.upperPositionLimit[i])
    for n, value in (locked_positions or {}).items():
        if not one_dof[n]:
            raise ModelError(f"joint '{n}' ({joint_kind(pin_model.joints[index[n]])}) "
                             'is locked at its neutral configuration; no locked position '
                             'can be given for it')
        q_ref[pin_model.joints[index[n]].idx_q] = float(value)
    for slave, (master, mult, off) in mimic.items():
        if master not in keep and one_dof[slave] and one_dof[master]:
            q_ref[pin_model.joints[index[slave]].idx_q] = (
                mult * q_ref[pin_model.joints[index[master]].idx_q] + off)
    reduced = pin.buildReducedModel(pin_model, [index[n] for n in lock], q_ref)
    kept = set(names) - set(lock)
    mimic = {s: v for s, v in mimic.items() if s in kept and v[0] in kept}
    held = {n: float(q_ref[pin_model.joints[index[n]].idx_q]) for n in lock if one_dof[n]}
    return reduced, mimic, joints, held

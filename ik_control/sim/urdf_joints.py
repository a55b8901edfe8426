"""
Minimal URDF joint table for the simulated robot (names, types, limits, mimic).

Parsed with :mod:`xml.etree.ElementTree`, in document order, so the simulator
does not depend on a kinematics library. Units: rad (revolute, continuous) and
m (prismatic).
"""

from dataclasses import dataclass
import math
from typing import List, Optional, Sequence, Tuple
from xml.etree import ElementTree

__all__ = ['UrdfJoint', 'parse_urdf_joints', 'movable_joint_names',
           'select_joints', 'strip_geometry']

MOVABLE_TYPES = ('revolute', 'continuous', 'prismatic')
KNOWN_TYPES = MOVABLE_TYPES + ('fixed', 'floating', 'planar')


@dataclass(frozen=True)
class UrdfJoint:
    """One URDF joint: name, type, limits [rad or m] and mimic leader (or None)."""

    name: str
    joint_type: str
    lower: float
    upper: float
    mimic: Optional[str] = None
    multiplier: float = 1.0
    offset: float = 0.0


def _parse_root(urdf_xml: str) -> ElementTree.Element:
    if not isinstance(urdf_xml, str) or not urdf_xml.strip():
        raise ValueError('the URDF is empty')
    try:
        root = ElementTree.fromstring(urdf_xml)
    except ElementTree.ParseError as exc:
        raise ValueError('the URDF is not valid XML: %s' % exc) from None
    if root.tag != 'robot':
        raise ValueError('the URDF root element is <%s>, expected <robot>' % root.tag)
    return root


def _float(elem: Optional[ElementTree.Element], attr: str, default: float) -> float:
    if elem is None or elem.get(attr) is None:
        return default
    try:
        return float(elem.get(attr))
    except ValueError:
        raise ValueError('bad number %r in <%s %s=...>'
                         % (elem.get(attr), elem.tag, attr)) from None


def parse_urdf_joints(urdf_xml: str) -> List[UrdfJoint]:
    """
    Return every ``<joint>`` of the URDF in document order.

    Revolute and prismatic limits come from ``<limit lower upper>`` (URDF
    defaults 0); continuous joints get (-inf, inf). Raises :class:`ValueError`
    for invalid XML, a root other than ``<robot>``, or an unknown joint type.
    """
    root = _parse_root(urdf_xml)
    joints = []
    for elem in root.findall('joint'):
        name = elem.get('name')
        jtype = elem.get('type')
        if not name:
            raise ValueError('a URDF <joint> has no name')
        if jtype not in KNOWN_TYPES:
            raise ValueError('URDF joint %r has unknown type %r' % (name, jtype))
        limit = elem.find('limit')
        if jtype == 'continuous':
            lower, upper = -math.inf, math.inf
        elif jtype in MOVABLE_TYPES:
            lower, upper = _float(limit, 'lower', 0.0), _float(limit, 'upper', 0.0)
            if lower > upper:
                raise ValueError('URDF joint %r has lower limit %g > upper limit %g'
                                 % (name, lower, upper))
        else:
            lower, upper = 0.0, 0.0
        mimic = elem.find('mimic')
        joints.append(UrdfJoint(
            name=name, joint_type=jtype, lower=lower, upper=upper,
            mimic=None if mimic is None else mimic.get('joint'),
            multiplier=_float(mimic, 'multiplier', 1.0),
            offset=_float(mimic, 'offset', 0.0)))
    return joints


def movable_joint_names(joints: Sequence[UrdfJoint]) -> List[str]:
    """Names of the non-fixed, non-mimic revolute/continuous/prismatic joints, in order."""
    return [j.name for j in joints if j.joint_type in MOVABLE_TYPES and j.mimic is None]


def select_joints(joints: Sequence[UrdfJoint], names: Sequence[str]
                  ) -> Tuple[List[str], List[float], List[float]]:
    """
    Return ``(names, lower, upper)`` for the requested joints (all movable if empty).

    Raises :class:`ValueError` for unknown, duplicate, fixed, mimic or
    unsupported (floating, planar) joints.
    """
    by_name = {j.name: j for j in joints}
    names = list(names) if names else movable_joint_names(joints)
    if not names:
        raise ValueError('the URDF has no movable joints')
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ValueError('unknown joint(s) %s; the URDF has movable joints %s'
                         % (unknown, movable_joint_names(joints)))
    if len(set(names)) != len(names):
        raise ValueError('joint(s) listed twice: %s'
                         % sorted({n for n in names if names.count(n) > 1}))
    for n in names:
        j = by_name[n]
        if j.joint_type not in MOVABLE_TYPES:
            raise ValueError('joint %r is %s, not revolute/continuous/prismatic'
                             % (n, j.joint_type))
        if j.mimic is not None:
            raise ValueError('joint %r mimics %r and cannot be commanded' % (n, j.mimic))
    return (names, [by_name[n].lower for n in names], [by_name[n].upper for n in names])


def strip_geometry(urdf_xml: str) -> str:
    """
    Return the URDF without ``<visual>`` and ``<collision>`` elements.

    The simulator needs only the kinematic tree and inertias; dropping the
    geometry avoids loading meshes (``package://`` URIs) and contacts.
    """
    root = _parse_root(urdf_xml)
    for link in root.findall('link'):
        for tag in ('visual', 'collision'):
            for elem in link.findall(tag):
                link.remove(elem)
    return ElementTree.tostring(root, encoding='unicode')

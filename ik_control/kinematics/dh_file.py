"""
Robots described as Denavit-Hartenberg tables in YAML files (SAM sec. II, Table 1).

A DH file lists, per joint, the four parameters of SAM eq. (1) -- twist ``alpha``, length
``a``, offset ``d`` and the joint variable's zero ``offset`` (theta for a revolute joint,
d for a prismatic one) -- with the joint's limits; :func:`load_dh_file` reads it and
:meth:`DHRobot.urdf` writes the URDF (:func:`ik_control.kinematics.dh.dh_urdf`), so a DH
robot is usable wherever a URDF is (``RobotModel.from_urdf(robot.urdf())``,
``robot_description`` of the nodes, robot_state_publisher, RViz)::

    name: sam9                  # robot name (URDF <robot name>)
    angle_unit: deg             # 'rad' (default) or 'deg': alpha, offsets, revolute limits
    base_link: base_link        # optional frame names (defaults shown)
    tool_link: tool
    joint_prefix: joint         # joint i is <joint_prefix>i unless it has a 'name'
    link_prefix: link_          # link i is <link_prefix>i
    visual_radius: 0.04         # links drawn as cylinders of this radius [m] (RViz); 0: none
    base: {xyz: [0, 0, 0], rpy: [0, 0, 0]}   # DH frame 0 in base_link [m, angle_unit]
    tool: {xyz: [0, 0, 0], rpy: [0, 0, 0]}   # tool frame in the last DH frame
    joints:
      - {alpha: 90, a: 0.0, d: 1.0}          # revolute, limits +-pi, 2 rad/s
      - {type: prismatic, alpha: 0, a: 0, d: 0.2, lower: 0.0, upper: 0.5, velocity: 0.3}

Lengths are metres, velocities rad/s (revolute) or m/s (prismatic). An angle may also be
written with ``pi``: ``-pi/2``, ``0.5*pi``, ``pi`` (in radians whatever ``angle_unit``).
``rpy`` is URDF's fixed-axis roll-pitch-yaw. Anything else raises :class:`ModelError`
naming the key.
"""

from dataclasses import dataclass
import math
import os
import re

from ik_control.kinematics.dh import dh_forward, dh_urdf, DHRow
from ik_control.validation import ModelError
import numpy as np

_PI_TERM = re.compile(r'^\s*([+-]?)\s*(\d*\.?\d*)\s*\*?\s*pi\s*(?:/\s*(\d+\.?\d*))?\s*$')
TOP_KEYS = {'name', 'angle_unit', 'base_link', 'tool_link', 'joint_prefix', 'link_prefix',
            'base', 'tool', 'joints', 'visual_radius'}
JOINT_KEYS = {'name', 'type', 'alpha', 'a', 'd', 'offset', 'lower', 'upper', 'velocity',
              'effort'}


@dataclass(frozen=True)
class DHRobot:
    """
    A robot read from a DH file: rows, base/tool transforms (4x4) and frame names.

    ``forward(q)`` is SAM eq. (2) with the base and tool (the tool frame in the base
    link); ``urdf()`` the equivalent URDF text.
    """

    name: str
    rows: tuple
    base: np.ndarray
    tool: np.ndarray
    joint_names: tuple
    link_names: tuple
    base_link: str = 'base_link'
    tool_link: str = 'tool'
    visual_radius: float = 0.04

    def urdf(self):
        """URDF text of this robot (joint ``i`` value = DH variable minus its offset)."""
        return dh_urdf(list(self.rows), name=self.name, base=self.base, tool=self.tool,
                       joint_names=list(self.joint_names), link_names=list(self.link_names),
                       base_link=self.base_link, tool_link=self.tool_link,
                       visual_radius=self.visual_radius)

    def forward(self, q):
        """Tool placement in ``base_link`` for joint values ``q`` (SAM eq. 2), 4x4."""
        return dh_forward(self.rows, q, base=self.base, tool=self.tool)


def _angle(value, scale, what):
    """Return an angle [rad] from a number in the file's unit or a ``pi`` expression."""
    if isinstance(value, str):
        match = _PI_TERM.match(value)
        if not match:
            raise ModelError(f"{what}: '{value}' is neither a number nor of the form "
                             "'[-][k*]pi[/m]'")
        sign, factor, divisor = match.groups()
        result = (float(factor) if factor not in ('', '.') else 1.0) * math.pi
        result /= float(divisor) if divisor else 1.0
        return -result if sign == '-' else result
    return _number(value, what) * scale


def _number(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ModelError(f'{what} must be a finite number, got {value!r}')
    return float(value)


def xyz_rpy_transform(spec, scale, what):
    """Return the 4x4 transform of ``{xyz: [m], rpy: [angles]}``; ``scale``: rad per angle unit."""
    if spec is None:
        return np.eye(4)
    if not isinstance(spec, dict) or set(spec) - {'xyz', 'rpy'}:
        raise ModelError(f'{what} must be a mapping with keys xyz and rpy')
    xyz = spec.get('xyz', [0.0, 0.0, 0.0])
    rpy = spec.get('rpy', [0.0, 0.0, 0.0])
    if not (isinstance(xyz, list) and len(xyz) == 3 and isinstance(rpy, list) and len(rpy) == 3):
        raise ModelError(f'{what}: xyz and rpy must be lists of 3 values')
    xyz = [_number(v, f'{what}.xyz') for v in xyz]
    r, p, y = (_angle(v, scale, f'{what}.rpy') for v in rpy)
    cr, sr, cp, sp, cy, sy = (math.cos(r), math.sin(r), math.cos(p), math.sin(p),
                              math.cos(y), math.sin(y))
    T = np.eye(4)
    T[:3, :3] = (np.array([[cy, -sy, 0.0], [sy, cy, 0.0], [0.0, 0.0, 1.0]])
                 @ np.array([[cp, 0.0, sp], [0.0, 1.0, 0.0], [-sp, 0.0, cp]])
                 @ np.array([[1.0, 0.0, 0.0], [0.0, cr, -sr], [0.0, sr, cr]]))
    T[:3, 3] = xyz
    return T


def _row(spec, scale, what):
    if not isinstance(spec, dict):
        raise ModelError(f'{what} must be a mapping of DH parameters')
    unknown = set(spec) - JOINT_KEYS
    if unknown:
        raise ModelError(f'{what}: unknown keys {sorted(unknown)}; allowed: '
                         f'{sorted(JOINT_KEYS)}')
    kind = spec.get('type', 'revolute')
    if kind not in ('revolute', 'prismatic'):
        raise ModelError(f"{what}: type must be 'revolute' or 'prismatic', not {kind!r}")
    for key in ('alpha', 'a', 'd'):
        if key not in spec:
            raise ModelError(f"{what}: missing '{key}'")
    revolute = kind == 'revolute'

    def variable(key, default):
        if key not in spec:
            return default
        if revolute:
            return _angle(spec[key], scale, f'{what}.{key}')
        return _number(spec[key], f'{what}.{key}')

    row = DHRow(alpha=_angle(spec['alpha'], scale, f'{what}.alpha'),
                a=_number(spec['a'], f'{what}.a'), d=_number(spec['d'], f'{what}.d'),
                kind=kind, offset=variable('offset', 0.0),
                lower=variable('lower', -math.pi if revolute else 0.0),
                upper=variable('upper', math.pi if revolute else 1.0),
                velocity=_number(spec.get('velocity', 2.0), f'{what}.velocity'),
                effort=_number(spec.get('effort', 50.0), f'{what}.effort'))
    if not row.lower < row.upper:
        raise ModelError(f'{what}: lower limit {row.lower:g} must be below upper {row.upper:g}')
    if row.velocity <= 0.0 or row.effort <= 0.0:
        raise ModelError(f'{what}: velocity and effort limits must be > 0')
    return row


def parse_dh(data, source='DH file'):
    """Return the :class:`DHRobot` of a parsed DH file (a dict, module docstring)."""
    if not isinstance(data, dict):
        raise ModelError(f'{source}: expected a mapping with a joints list')
    unknown = set(data) - TOP_KEYS
    if unknown:
        raise ModelError(f'{source}: unknown keys {sorted(unknown)}; allowed: {sorted(TOP_KEYS)}')
    unit = data.get('angle_unit', 'rad')
    if unit not in ('rad', 'deg'):
        raise ModelError(f"{source}: angle_unit must be 'rad' or 'deg', not {unit!r}")
    scale = math.pi / 180.0 if unit == 'deg' else 1.0
    joints = data.get('joints')
    if not isinstance(joints, list) or not joints:
        raise ModelError(f'{source}: joints must be a non-empty list')
    rows = tuple(_row(j, scale, f'{source}: joint {i + 1}') for i, j in enumerate(joints))
    prefix = str(data.get('joint_prefix', 'joint'))
    link_prefix = str(data.get('link_prefix', 'link_'))
    names = tuple(str(j.get('name', f'{prefix}{i + 1}')) for i, j in enumerate(joints))
    links = tuple(f'{link_prefix}{i + 1}' for i in range(len(rows)))
    base_link = str(data.get('base_link', 'base_link'))
    tool_link = str(data.get('tool_link', 'tool'))
    visual_radius = _number(data.get('visual_radius', 0.04), f'{source}: visual_radius')
    if visual_radius < 0.0:
        raise ModelError(f'{source}: visual_radius must be >= 0 m')
    frames = names + links + (base_link, tool_link, f'{tool_link}_joint')
    if len(set(frames)) != len(frames):
        raise ModelError(f'{source}: joint and link names must be distinct: {list(frames)}')
    return DHRobot(str(data.get('name', 'dh_robot')), rows,
                   xyz_rpy_transform(data.get('base'), scale, f'{source}: base'),
                   xyz_rpy_transform(data.get('tool'), scale, f'{source}: tool'),
                   names, links, base_link, tool_link, visual_radius)


def load_dh_file(path):
    """Read a DH YAML file (module docstring) into a :class:`DHRobot`."""
    import yaml

    if not os.path.isfile(path):
        raise ModelError(f"DH file '{path}' does not exist")
    with open(path, encoding='utf-8') as stream:
        try:
            data = yaml.safe_load(stream)
        except yaml.YAMLError as exc:
            raise ModelError(f"DH file '{path}' is not valid YAML: {exc}") from None
    return parse_dh(data, f"DH file '{path}'")


def is_dh_file(path):
    """Return True if ``path`` names a DH YAML file (``.yaml``/``.yml``), not URDF text."""
    return (isinstance(path, str) and not path.lstrip().startswith('<')
            and path.lower().endswith(('.yaml', '.yml')))


def robot_description(urdf_or_dh):
    """
    URDF text or path for :meth:`RobotModel.from_urdf`: a DH file becomes its URDF text.

    Anything else (a URDF path or XML string) is returned unchanged.
    """
    return load_dh_file(urdf_or_dh).urdf() if is_dh_file(urdf_or_dh) else urdf_or_dh

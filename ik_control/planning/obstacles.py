"""
Obstacles for the planners: boxes, spheres and cylinders placed in the robot's base frame.

An :class:`Obstacle` is a primitive shape and its placement ``pose`` (4x4, base frame):

* ``box``: ``size = (x, y, z)`` full edge lengths [m], centred on the pose origin;
* ``sphere``: ``size = (radius,)`` [m];
* ``cylinder``: ``size = (radius, length)`` [m], axis along the pose's z, centred.

:func:`obstacle_from_dict` reads the form used in ``config/jtrrt_scenarios.yaml`` and in
the planner node's parameters: ``{name, type, size, position [m], rpy [rad]}``.
"""

from dataclasses import dataclass, field

from ik_control.validation import finite_vector, InputError, rigid_transform
import numpy as np
import pinocchio as pin

SHAPES = {'box': 3, 'sphere': 1, 'cylinder': 2}


@dataclass(frozen=True)
class Obstacle:
    """A primitive obstacle: ``shape`` in :data:`SHAPES`, ``size`` [m], ``pose`` 4x4."""

    name: str
    shape: str
    size: tuple
    pose: np.ndarray = field(default_factory=lambda: np.eye(4))

    def __post_init__(self):
        """Check the shape name, the sizes (finite, > 0) and the pose (a rigid transform)."""
        if self.shape not in SHAPES:
            raise InputError(f"obstacle '{self.name}': type must be one of {sorted(SHAPES)}, "
                             f"not '{self.shape}'")
        size = finite_vector(self.size, SHAPES[self.shape], f"obstacle '{self.name}' size")
        if np.any(size <= 0.0):
            raise InputError(f"obstacle '{self.name}': sizes must be > 0 m, got {list(size)}")
        pose = rigid_transform(self.pose, f"obstacle '{self.name}': pose")
        object.__setattr__(self, 'size', tuple(float(s) for s in size))
        object.__setattr__(self, 'pose', pose.copy())

    @property
    def position(self):
        """Centre of the shape in the base frame [m]."""
        return self.pose[:3, 3].copy()

    def marker_scale(self):
        """Size as visualization_msgs/Marker gives it: x, y, z extents [m] (diameters)."""
        if self.shape == 'box':
            return list(self.size)
        if self.shape == 'sphere':
            return [2.0 * self.size[0]] * 3
        return [2.0 * self.size[0], 2.0 * self.size[0], self.size[1]]

    def coal_geometry(self):
        """Return the coal shape of this obstacle (full box sides, cylinder radius and length)."""
        import coal

        if self.shape == 'box':
            return coal.Box(*self.size)
        if self.shape == 'sphere':
            return coal.Sphere(self.size[0])
        return coal.Cylinder(self.size[0], self.size[1])

    def aabb(self):
        """Axis-aligned bounding box ``(lower, upper)`` of the shape in the base frame [m]."""
        R, c = self.pose[:3, :3], self.pose[:3, 3]
        if self.shape == 'box':
            half = np.abs(R) @ (0.5 * np.array(self.size))
        elif self.shape == 'sphere':
            half = np.full(3, self.size[0])
        else:
            r, h = self.size
            axis = R[:, 2]
            half = 0.5 * h * np.abs(axis) + r * np.sqrt(np.maximum(0.0, 1.0 - axis ** 2))
        return c - half, c + half


def pose_from(position, rpy=(0.0, 0.0, 0.0)):
    """Return the 4x4 placement at ``position`` [m] with roll-pitch-yaw ``rpy`` [rad]."""
    T = np.eye(4)
    T[:3, :3] = pin.rpy.rpyToMatrix(*finite_vector(rpy, 3, 'rpy'))
    T[:3, 3] = finite_vector(position, 3, 'position')
    return T


def obstacle_from_dict(spec, default_name='obstacle'):
    """Build an :class:`Obstacle` from ``{name, type, size, position, rpy}`` (rpy optional)."""
    if not isinstance(spec, dict):
        raise InputError(f'an obstacle must be a mapping, got {type(spec).__name__}')
    unknown = set(spec) - {'name', 'type', 'size', 'position', 'rpy'}
    name = str(spec.get('name', default_name))
    if unknown:
        raise InputError(f"obstacle '{name}': unknown keys {sorted(unknown)}")
    for key in ('type', 'size', 'position'):
        if key not in spec:
            raise InputError(f"obstacle '{name}': '{key}' is missing")
    size = spec['size']
    size = [size] if np.isscalar(size) else size
    return Obstacle(name, str(spec['type']), tuple(size),
                    pose_from(spec['position'], spec.get('rpy', (0.0, 0.0, 0.0))))


def obstacles_from_yaml(text, prefix='obstacle'):
    """
    Parse a YAML list of obstacle mappings (a node parameter) into :class:`Obstacle` s.

    Unnamed entries are called ``<prefix>_<index>``. Raises InputError.
    """
    import yaml

    try:
        specs = yaml.safe_load(text) or []
    except yaml.YAMLError as exc:
        raise InputError(f'not valid YAML: {exc}') from None
    if not isinstance(specs, list):
        raise InputError('must be a YAML list of {name, type, size, position, rpy}')
    return [obstacle_from_dict(o, f'{prefix}_{i}') for i, o in enumerate(specs)]

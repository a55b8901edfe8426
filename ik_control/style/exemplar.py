"""
Exemplar motions: one stylized trajectory per task, shipped as data in ``config/motions/``.

A motion file (YAML) holds what an animator delivers plus what the adaptation needs::

    name: pick_and_place
    robot: simon                      # bundled robot (ik_control.robots)
    dt: 0.01                          # sample period [s]
    joint_names: [torso_y, ...]       # columns of positions
    positions: [[...], ...]           # samples x joints [rad]
    instants: {pick: 1.5, place: 2.9} # named constraint instants [s from the start]
    end_effector: right_hand          # frame that meets the constraint
    search_joints: [...]              # joints TSFKS searches (the others: mid-range)
    modulated_joints: [...]           # joints whose velocity eq. 2 scales
    segment: {a: [x, y, z], b: [...]} # optional: a line in the end-effector frame [m]

:meth:`Exemplar.sampled` resamples the curves at the control period with a C2 cubic spline
(positions and their analytic derivative as velocities), so that the 1 kHz trajectory is as
smooth as the animator's curve and not a polyline of the stored samples.
"""

from dataclasses import dataclass, field
import os

from ik_control.robots import motion_path
from ik_control.validation import InputError, ModelError
import numpy as np
from scipy.interpolate import CubicSpline
import yaml


@dataclass
class Exemplar:
    """One exemplar motion (module docstring); ``positions`` is (samples, joints) [rad]."""

    name: str
    robot: str
    dt: float
    joint_names: tuple
    positions: np.ndarray
    instants: dict
    end_effector: str
    search_joints: tuple
    modulated_joints: tuple
    segment: tuple = None
    description: str = ''
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        """Check the shapes and names (InputError with the reason)."""
        self.positions = np.asarray(self.positions, dtype=float)
        self.joint_names = tuple(self.joint_names)
        n = len(self.joint_names)
        if self.positions.ndim != 2 or self.positions.shape[1] != n:
            raise InputError(f"motion '{self.name}': positions must be samples x {n} joints, "
                             f'got {self.positions.shape}')
        if self.positions.shape[0] < 4 or not np.all(np.isfinite(self.positions)):
            raise InputError(f"motion '{self.name}': needs >= 4 finite samples")
        if not (np.isfinite(self.dt) and self.dt > 0):
            raise InputError(f"motion '{self.name}': dt must be > 0 [s], got {self.dt}")
        for key in ('search_joints', 'modulated_joints'):
            names = tuple(getattr(self, key))
            setattr(self, key, names)
            unknown = [j for j in names if j not in self.joint_names]
            if unknown:
                raise InputError(f"motion '{self.name}': {key} {unknown} are not in "
                                 'joint_names')
        for label, t in self.instants.items():
            if not 0.0 < float(t) < self.duration:
                raise InputError(f"motion '{self.name}': instant '{label}' = {t} s is not "
                                 f'inside (0, {self.duration}) s')

    @property
    def duration(self):
        """Length of the motion [s]."""
        return (self.positions.shape[0] - 1) * self.dt

    def instant(self, label):
        """Time [s] of the named constraint instant."""
        if label not in self.instants:
            raise InputError(f"motion '{self.name}' has no instant '{label}'; it has "
                             f'{sorted(self.instants)}')
        return float(self.instants[label])

    def sampled(self, dt):
        """Return ``(times, positions, velocities)`` resampled every ``dt`` [s] (C2 spline)."""
        if not (np.isfinite(dt) and dt > 0):
            raise InputError(f'sample period must be > 0 [s], got {dt}')
        t_src = np.arange(self.positions.shape[0]) * self.dt
        spline = CubicSpline(t_src, self.positions, axis=0, bc_type='clamped')
        count = int(np.floor(self.duration / dt + 1e-9)) + 1
        t = np.arange(count) * dt
        return t, spline(t), spline(t, 1)

    def to_dict(self):
        """Plain data for YAML (the file format of the module docstring)."""
        data = {'name': self.name, 'description': self.description, 'robot': self.robot,
                'dt': float(self.dt), 'joint_names': list(self.joint_names),
                'instants': {k: float(v) for k, v in self.instants.items()},
                'end_effector': self.end_effector, 'search_joints': list(self.search_joints),
                'modulated_joints': list(self.modulated_joints)}
        if self.segment is not None:
            data['segment'] = {'a': [float(v) for v in self.segment[0]],
                               'b': [float(v) for v in self.segment[1]]}
        data.update(self.extra)
        data['positions'] = [[round(float(v), 6) for v in row] for row in self.positions]
        return data


KNOWN_KEYS = {'name', 'description', 'robot', 'dt', 'joint_names', 'positions', 'instants',
              'end_effector', 'search_joints', 'modulated_joints', 'segment'}


def load_motion(name_or_path):
    """Load an exemplar by name (``pick_and_place``, ``baseball_swing``) or YAML path."""
    try:
        path = (name_or_path if os.path.sep in str(name_or_path)
                else motion_path(name_or_path))
        with open(path, encoding='utf-8') as stream:
            data = yaml.safe_load(stream)
    except (OSError, yaml.YAMLError, ModelError) as exc:
        raise InputError(f"cannot read motion '{name_or_path}': {exc}") from None
    if not isinstance(data, dict):
        raise InputError(f"motion file '{path}' is not a mapping")
    missing = sorted({'name', 'robot', 'dt', 'joint_names', 'positions', 'instants',
                      'end_effector', 'search_joints', 'modulated_joints'} - set(data))
    if missing:
        raise InputError(f"motion file '{path}' lacks {missing}")
    segment = data.get('segment')
    if segment is not None:
        segment = (np.asarray(segment['a'], float), np.asarray(segment['b'], float))
    return Exemplar(name=data['name'], robot=data['robot'], dt=float(data['dt']),
                    joint_names=data['joint_names'], positions=data['positions'],
                    instants=dict(data['instants']), end_effector=data['end_effector'],
                    search_joints=data['search_joints'],
                    modulated_joints=data['modulated_joints'], segment=segment,
                    description=data.get('description', ''),
                    extra={k: v for k, v in data.items() if k not in KNOWN_KEYS})

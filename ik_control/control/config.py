"""
The controller's parameters (:class:`ControllerConfig`), with units, defaults and checks.

The configuration is nested as the ``ik_controller`` node's ROS parameters are:
``limits.position_margin`` is ``config.limits.position_margin``, ``collision.enabled``
is ``config.collision.enabled``. Three ROS names differ from their field, because the
field is not where the name's group suggests: ``solver.gain`` is the controller's
``gain`` (the convergence rate K [1/s], not :class:`SolverConfig`'s per-update
fraction), ``nullspace.*`` are the velocity law's ``solver.*`` (the law computes the
nullspace terms), and ``collision.srdf_path`` gives ``collision.srdf``, the file's
text. A numeric field's range is typed here, once (:func:`~ik_control.validation.ranged`,
``rate_hz`` in [1, 5000] Hz); the ROS parameters
(``ik_control.ros.ik_controller_parameters``) take their defaults and ranges from here,
and :meth:`ControllerConfig.validate` refuses a value outside its range, naming the first
bad value by the field's dotted name.
"""

from dataclasses import dataclass, field, fields, replace
import math

from ik_control.control import classical_mode
from ik_control.control.fallback import STRATEGIES
from ik_control.ik.solver import SolverConfig
from ik_control.validation import check_ranges, InputError, ranged

__all__ = ['CollisionConfig', 'ControllerConfig', 'FallbackConfig', 'GoalConfig',
           'LimitsConfig', 'ObstaclesConfig']


@dataclass
class LimitsConfig:
    """``limits.*``: what every command keeps to (control/limits.py)."""

    position_margin: float = ranged(0.02, 0.0, 1.0)     # kept from each joint limit [rad or m]
    velocity_scale: float = ranged(1.0, 0.001, 1.0)     # of the URDF velocity limits [-]
    max_velocity: tuple = ()                # per-joint, at most the URDF's [rad/s]; empty = URDF
    max_acceleration: tuple = (10.0,)       # one value or one per joint [rad/s^2]


@dataclass
class ObstaclesConfig:
    """``obstacles.*``: SAM eq. 19's escape from the obstacles, as a secondary goal."""

    influence_distance: float = ranged(0.1, 0.0, 2.0)   # clearance below which obstacles repel [m]
    gain: float = ranged(5.0, 0.0, 100.0)               # escape speed per metre inside it [1/s]
    link_radius: float = ranged(0.05, 0.0, 1.0)         # radius of the arm's capsules [m]


@dataclass
class CollisionConfig:
    """``collision.*``: the URDF's shapes kept apart (control/collision_stage.py)."""

    enabled: bool = True
    srdf: str = ''                          # SRDF XML: pairs not checked; '' = see docs
    convex_meshes: bool = False             # meshes measured as their convex hulls
    security_distance: float = ranged(0.01, 0.0, 0.5)   # no checked pair comes nearer [m]
    influence_distance: float = ranged(0.05, 0.001, 1.0)  # pairs nearer are bounded [m]
    gain: float = ranged(10.0, 0.01, 1000.0)  # damper rate xi: approach <= xi (d - d_s) [1/s]


@dataclass
class GoalConfig:
    """``goal.*``: when a goal is reached, and when it is given up (goal_referee.py)."""

    position_tolerance: float = ranged(1e-3, 1e-6, 1.0)     # reached within [m]
    orientation_tolerance: float = ranged(1e-2, 1e-6, 3.2)  # reached within [rad]
    unreachable_time: float = ranged(0.5, 1e-3, 3600.0)  # no progress this long: unreachable [s]


@dataclass
class FallbackConfig:
    """``fallback.*``: the position IK asked when the law stalls (fallback.py)."""

    strategy: str = 'joint'                 # joint | posture | off
    time_budget: float = ranged(0.05, 0.001, 10.0)  # CPU time of one position-IK solve [s]


#: the nested groups of :class:`ControllerConfig`, by attribute
GROUPS = ('limits', 'obstacles', 'collision', 'goal', 'fallback', 'solver')


@dataclass
class ControllerConfig:
    """Controller parameters; units in brackets (module docstring for the ROS names)."""

    rate_hz: float = ranged(500.0, 1.0, 5000.0)             # control rate [Hz]
    max_expected_latency: float = ranged(0.02, 0.0, 1.0)    # commands lead the clock by [s]
    gain: float = ranged(10.0, 0.01, 1000.0)                # convergence rate K [1/s]
    joint_state_timeout: float = ranged(0.1, 0.001, 10.0)   # stale joint_states after [s]
    twist_timeout: float = ranged(0.2, 0.001, 10.0)         # velocity command valid for [s]
    reseed_tolerance: float = ranged(0.05, 1e-4, 3.2)  # |q_measured - q_commanded| re-seed [rad]
    # a pose goal's joint step: velocity (the law) | ccd | hal | analytic (classical_mode.py)
    ik_method: str = 'velocity'
    ccd_sweeps: int = ranged(10, 1, 10000)                  # ik_method ccd: sweeps per tick [-]
    # Welman's constraints kept while tracking: YAML text or a list of constraint objects
    # (constrained_motion.py); empty = none
    constraints: object = ''
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    obstacles: ObstaclesConfig = field(default_factory=ObstaclesConfig)
    collision: CollisionConfig = field(default_factory=CollisionConfig)
    goal: GoalConfig = field(default_factory=GoalConfig)
    fallback: FallbackConfig = field(default_factory=FallbackConfig)
    solver: SolverConfig = field(default_factory=lambda: SolverConfig(
        clamp_error=0.1, clamp_error_rotation=0.5, max_joint_step=0.0, centering_gain=0.0))

    def updated(self, values):
        """
        Return a copy with ``values`` set: ``{dotted field name: value}``.

        ``{'fallback.strategy': 'off', 'rate_hz': 1000.0}`` sets ``fallback.strategy`` and
        ``rate_hz``; the groups are copied, so ``self`` is unchanged. An unknown name is an
        :class:`InputError`. Nothing is checked: :meth:`validate` does that.
        """
        copy = replace(self, **{g: replace(getattr(self, g)) for g in GROUPS})
        for name, value in values.items():
            group, _, leaf = name.rpartition('.')
            if group:
                owner = getattr(copy, group) if group in GROUPS else None
            else:
                owner = copy if leaf not in GROUPS else None  # a group is not a setting
            if owner is None or leaf not in {f.name for f in fields(owner)}:
                raise InputError(f"the controller has no setting '{name}'")
            setattr(owner, leaf, value)
        return copy

    def validate(self, nq):
        """Raise :class:`InputError` naming the first bad value; returns self."""
        col = self.collision
        check_ranges(self)
        for group in GROUPS:
            check_ranges(getattr(self, group), f'{group}.')
        if col.influence_distance <= col.security_distance:
            raise InputError('collision.influence_distance must exceed '
                             f'collision.security_distance ({col.influence_distance}'
                             f' <= {col.security_distance} m)')
        if self.fallback.strategy not in STRATEGIES:
            raise InputError(f"fallback.strategy '{self.fallback.strategy}' is not one of "
                             f'{list(STRATEGIES)}')
        if self.gain / self.rate_hz > 1.0:
            raise InputError(f'gain {self.gain} 1/s exceeds rate_hz {self.rate_hz}: '
                             'the controller would overshoot every tick')
        lim = self.limits
        for name, values, counts in (('limits.max_velocity', lim.max_velocity, (0, 1, nq)),
                                     ('limits.max_acceleration', lim.max_acceleration, (1, nq))):
            if len(values) not in counts:
                raise InputError(f'{name} needs 1 or {nq} values, got {len(values)}')
            if any(not (math.isfinite(v) and v > 0) for v in values):
                raise InputError(f'{name} values must be finite and > 0, got {list(values)}')
        self.solver.validate()
        classical_mode.check_config(self)
        return self

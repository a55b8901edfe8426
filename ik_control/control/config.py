"""
The controller's parameters (:class:`ControllerConfig`), with units, defaults and checks.

The configuration is nested as the ``ik_controller`` node's ROS parameters are:
``limits.position_margin`` is ``config.limits.position_margin``, ``collision.enabled``
is ``config.collision.enabled``. Three ROS names differ from their field, because the
field is not where the name's group suggests: ``solver.gain`` is the controller's
``gain`` (the convergence rate K [1/s], not :class:`SolverConfig`'s per-update
fraction), ``nullspace.*`` are the velocity law's ``solver.*`` (the law computes the
nullspace terms), and ``collision.srdf_path`` gives ``collision.srdf``, the file's
text. The ROS parameters (``ik_control.ros.ik_controller_parameters``) take their
defaults from here; :meth:`ControllerConfig.validate` names the first bad value, by the
field's dotted name.
"""

from dataclasses import dataclass, field, fields, replace
import math

from ik_control.control import classical_mode
from ik_control.control.fallback import STRATEGIES
from ik_control.ik.solver import SolverConfig
from ik_control.validation import InputError

__all__ = ['CollisionConfig', 'ControllerConfig', 'FallbackConfig', 'GoalConfig',
           'LimitsConfig', 'ObstaclesConfig']


@dataclass
class LimitsConfig:
    """``limits.*``: what every command keeps to (control/limits.py)."""

    position_margin: float = 0.02           # kept from each joint limit [rad or m]
    velocity_scale: float = 1.0             # fraction of the URDF velocity limits [-]
    max_velocity: tuple = ()                # per-joint, at most the URDF's [rad/s]; empty = URDF
    max_acceleration: tuple = (10.0,)       # one value or one per joint [rad/s^2]


@dataclass
class ObstaclesConfig:
    """``obstacles.*``: SAM eq. 19's escape from the obstacles, as a secondary goal."""

    influence_distance: float = 0.1         # clearance below which obstacles repel [m]
    gain: float = 5.0                       # escape speed per metre inside it [1/s]
    link_radius: float = 0.05               # radius of the arm's capsules [m]


@dataclass
class CollisionConfig:
    """``collision.*``: the URDF's shapes kept apart (control/collision_stage.py)."""

    enabled: bool = True
    srdf: str = ''                          # SRDF XML: pairs not checked; '' = see docs
    convex_meshes: bool = False             # meshes measured as their convex hulls
    security_distance: float = 0.01         # no checked pair comes nearer [m]
    influence_distance: float = 0.05        # pairs nearer than this are bounded [m]
    gain: float = 10.0                      # damper rate xi: approach <= xi (d - d_s) [1/s]


@dataclass
class GoalConfig:
    """``goal.*``: when a goal is reached, and when it is given up (goal_referee.py)."""

    position_tolerance: float = 1e-3        # reached within [m]
    orientation_tolerance: float = 1e-2     # reached within [rad]
    unreachable_time: float = 0.5           # no progress for this long: unreachable [s]


@dataclass
class FallbackConfig:
    """``fallback.*``: the position IK asked when the law stalls (fallback.py)."""

    strategy: str = 'joint'                 # joint | posture | off
    time_budget: float = 0.05               # CPU time of one position-IK solve [s]


#: the nested groups of :class:`ControllerConfig`, by attribute
GROUPS = ('limits', 'obstacles', 'collision', 'goal', 'fallback', 'solver')


@dataclass
class ControllerConfig:
    """Controller parameters; units in brackets (module docstring for the ROS names)."""

    rate_hz: float = 500.0                  # control rate [Hz]
    max_expected_latency: float = 0.02      # commands lead the clock by this much [s]
    gain: float = 10.0                      # convergence rate K [1/s]
    joint_state_timeout: float = 0.1        # stale joint_states after [s]
    twist_timeout: float = 0.2              # velocity command valid for [s]
    reseed_tolerance: float = 0.05          # |q_measured - q_commanded| re-seed bound [rad]
    # a pose goal's joint step: velocity (the law) | ccd | hal | analytic (classical_mode.py)
    ik_method: str = 'velocity'
    ccd_sweeps: int = 10                    # ik_method ccd: CCD sweeps per tick [-]
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
        lim, obs, col, goal = self.limits, self.obstacles, self.collision, self.goal
        _check(lambda v: v > 0, 'a finite number > 0', (
            ('rate_hz', self.rate_hz), ('gain', self.gain),
            ('joint_state_timeout', self.joint_state_timeout),
            ('twist_timeout', self.twist_timeout), ('reseed_tolerance', self.reseed_tolerance),
            ('limits.velocity_scale', lim.velocity_scale),
            ('goal.position_tolerance', goal.position_tolerance),
            ('goal.orientation_tolerance', goal.orientation_tolerance),
            ('goal.unreachable_time', goal.unreachable_time),
            ('fallback.time_budget', self.fallback.time_budget),
            ('collision.influence_distance', col.influence_distance),
            ('collision.gain', col.gain)))
        _check(lambda v: v >= 0, 'a finite number >= 0', (
            ('max_expected_latency', self.max_expected_latency),
            ('limits.position_margin', lim.position_margin),
            ('obstacles.influence_distance', obs.influence_distance),
            ('obstacles.gain', obs.gain), ('obstacles.link_radius', obs.link_radius),
            ('collision.security_distance', col.security_distance)))
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
        for name, values, counts in (('limits.max_velocity', lim.max_velocity, (0, 1, nq)),
                                     ('limits.max_acceleration', lim.max_acceleration, (1, nq))):
            if len(values) not in counts:
                raise InputError(f'{name} needs 1 or {nq} values, got {len(values)}')
            if any(not (math.isfinite(v) and v > 0) for v in values):
                raise InputError(f'{name} values must be finite and > 0, got {list(values)}')
        self.solver.validate()
        classical_mode.check_config(self)
        return self


def _check(holds, expected, named_values):
    """Raise :class:`InputError` for the first ``(name, value)`` not a number where ``holds``."""
    for name, value in named_values:
        if not (isinstance(value, (int, float)) and not isinstance(value, bool)
                and math.isfinite(value) and holds(value)):
            raise InputError(f'{name} must be {expected}, got {value!r}')

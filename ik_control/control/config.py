"""
The controller's parameters (:class:`ControllerConfig`), with units, defaults and checks.

The ROS parameters of the same names (``ik_control.ros.ik_controller_parameters``) take
their defaults from here; :meth:`ControllerConfig.validate` names the first bad value.
"""

from dataclasses import dataclass, field
import math

from ik_control.control import classical_mode
from ik_control.control.fallback import STRATEGIES
from ik_control.ik.solver import SolverConfig
from ik_control.validation import InputError

__all__ = ['ControllerConfig']


@dataclass
class ControllerConfig:
    """Controller parameters; units in brackets (the ROS parameters of the same names)."""

    rate_hz: float = 500.0                  # control rate [Hz]
    max_expected_latency: float = 0.02      # commands lead the clock by this much [s]
    gain: float = 10.0                      # convergence rate K [1/s]
    joint_state_timeout: float = 0.1        # stale joint_states after [s]
    twist_timeout: float = 0.2              # velocity command valid for [s]
    reseed_tolerance: float = 0.05          # |q_measured - q_commanded| re-seed bound [rad]
    position_margin: float = 0.02           # kept from each joint limit [rad or m]
    velocity_scale: float = 1.0             # fraction of the URDF velocity limits [-]
    max_velocity: tuple = ()                # per-joint, at most the URDF's [rad/s]; empty = URDF
    max_acceleration: tuple = (10.0,)       # one value or one per joint [rad/s^2]
    goal_position_tolerance: float = 1e-3   # goal reached within [m]
    goal_orientation_tolerance: float = 1e-2  # goal reached within [rad]
    unreachable_time: float = 0.5           # no progress to a goal for this long [s]
    obstacle_influence: float = 0.1         # clearance below which obstacles repel [m]
    obstacle_gain: float = 5.0              # escape speed per metre inside it [1/s]
    link_radius: float = 0.05               # radius of the arm's capsules [m]
    # the collision stage (control/collision_stage.py): the URDF's collision shapes kept
    # apart from each other and from the obstacles
    collision_enabled: bool = True
    collision_srdf: str = ''                # SRDF XML: pairs not checked; '' = see docs
    collision_convex_meshes: bool = False   # meshes measured as their convex hulls
    collision_security_distance: float = 0.01  # no checked pair comes nearer [m]
    collision_influence_distance: float = 0.05  # pairs nearer than this are bounded [m]
    collision_gain: float = 10.0            # damper rate xi: approach <= xi (d - d_s) [1/s]
    fallback_strategy: str = 'joint'        # stalled goal: joint | posture | off (fallback.py)
    fallback_time_budget: float = 0.05      # CPU time of one position-IK solve [s]
    # a pose goal's joint step: velocity (the law) | ccd | hal | analytic (classical_mode.py)
    ik_method: str = 'velocity'
    ccd_sweeps: int = 10                    # ik_method ccd: CCD sweeps per tick [-]
    # Welman's constraints kept while tracking: YAML text or a list of constraint objects
    # (constrained_motion.py); empty = none
    constraints: object = ''
    solver: SolverConfig = field(default_factory=lambda: SolverConfig(
        clamp_error=0.1, clamp_error_rotation=0.5, max_joint_step=0.0, centering_gain=0.0))

    def validate(self, nq):
        """Raise :class:`InputError` naming the first bad value; returns self."""
        positive = ('rate_hz', 'gain', 'joint_state_timeout', 'twist_timeout',
                    'reseed_tolerance', 'velocity_scale', 'goal_position_tolerance',
                    'goal_orientation_tolerance', 'unreachable_time', 'fallback_time_budget')
        for name in positive:
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise InputError(f'{name} must be a finite number > 0, got {value!r}')
        for name in ('obstacle_influence', 'obstacle_gain', 'link_radius',
                     'max_expected_latency', 'collision_security_distance'):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise InputError(f'{name} must be a finite number >= 0, got {value!r}')
        for name in ('collision_influence_distance', 'collision_gain'):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise InputError(f'{name} must be a finite number > 0, got {value!r}')
        if self.collision_influence_distance <= self.collision_security_distance:
            raise InputError('collision_influence_distance must exceed '
                             f'collision_security_distance ({self.collision_influence_distance}'
                             f' <= {self.collision_security_distance} m)')
        if self.fallback_strategy not in STRATEGIES:
            raise InputError(f"fallback_strategy '{self.fallback_strategy}' is not one of "
                             f'{list(STRATEGIES)}')
        if not (math.isfinite(self.position_margin) and self.position_margin >= 0):
            raise InputError(f'position_margin must be >= 0, got {self.position_margin}')
        if self.gain / self.rate_hz > 1.0:
            raise InputError(f'gain {self.gain} 1/s exceeds rate_hz {self.rate_hz}: '
                             'the controller would overshoot every tick')
        for name, values in (('max_velocity', self.max_velocity),
                             ('max_acceleration', self.max_acceleration)):
            if len(values) not in ((0, 1, nq) if name == 'max_velocity' else (1, nq)):
                raise InputError(f'{name} needs 1 or {nq} values, got {len(values)}')
            if any(not (math.isfinite(v) and v > 0) for v in values):
                raise InputError(f'{name} values must be finite and > 0, got {list(values)}')
        self.solver.validate()
        classical_mode.check_config(self)
        return self

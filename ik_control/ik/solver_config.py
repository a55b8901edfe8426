"""
The velocity law's settings: :class:`SolverConfig`, and its packed form ``P``.

:func:`ik_control.ik.solver.solve_step` reads the settings as the float vector ``P``
(:meth:`SolverConfig.packed`, the ``P_*`` slots below), followed per joint by the
posture's desired angles and weights (:meth:`ik_control.ik.solver.VelocitySolver.configure`).
"""

from dataclasses import asdict, dataclass
import math

from ik_control.ik.pose_error import ERROR_MODE_ALIASES, error_mode_code, ERROR_MODES
from ik_control.validation import check_ranges, InputError, ranged
import numpy as np

METHODS = {'transpose': 0, 'pseudoinverse': 1, 'dls': 2, 'dls_svd': 3, 'sdls': 4}


@dataclass
class SolverConfig:
    """Parameters of one update; units in brackets. Defaults suit a 1 m arm at 0.5-1 kHz."""

    method: str = 'dls'                 # transpose | pseudoinverse | dls | dls_svd | sdls
    damping: float = ranged(0.01, 0.0, 10.0)        # lambda_0, always-on damping [m]
    adaptive_damping: bool = True       # add damping as sigma_min falls below epsilon
    damping_max: float = ranged(0.1, 0.0, 10.0)     # lambda_max added at a singularity [m]
    singular_epsilon: float = ranged(0.04, 1e-6, 10.0)  # sigma_min where damping grows [m/rad]
    pinv_threshold: float = ranged(1e-6, 0.0, 1.0)  # singular values taken as zero (pinv) [m/rad]
    sdls_gamma_max: float = ranged(math.pi / 4, 0.0, math.pi)  # SDLS bound on joint change [rad]
    clamp_error: float = ranged(0.1, 0.0, 10.0)  # D_max on each position error [m]; 0 = off
    clamp_error_rotation: float = ranged(0.5, 0.0, 3.2)  # on each rotation error [rad]; 0 = off
    adaptive_clamp: bool = False        # Buss's per-effector D_max,i after target jumps
    max_joint_step: float = ranged(0.1, 0.0, 10.0)  # largest joint step per update [rad]; 0 = off
    orientation_weight: float = ranged(0.3, 0.0, 100.0)  # weight of rotation rows [m/rad]
    error_mode: str = 'log3'            # log3 | se3 | axis_cross (sam: deprecated alias)
    alternate_jacobian: bool = False    # Buss's Jacobian at the target positions
    centering_gain: float = ranged(0.0, 0.0, 10.0)  # SAM eq. 17's alpha, centering (eq. 18)
    posture_target: tuple = ()          # Parent's desired angles theta_c [rad]; () = mid-range
    posture_weights: tuple = ()         # Parent's per-joint alpha_i [-]; () = 1 each
    posture_exponent: float = ranged(2.0, 1.0, 8.0)  # Parent's psi (2: SAM eq. 18) [-]
    manipulability_gain: float = ranged(0.0, 0.0, 10.0)  # alpha of the manipulability gradient
    gain: float = ranged(1.0, 1e-9, 1.0)  # fraction of the (clamped) error corrected per update

    def validate(self):
        """Raise :class:`InputError` naming the first bad field."""
        if self.method not in METHODS:
            raise InputError(f"solver method '{self.method}' is not one of {sorted(METHODS)}")
        if self.error_mode not in ERROR_MODES and self.error_mode not in ERROR_MODE_ALIASES:
            raise InputError(f"error_mode '{self.error_mode}' is not one of {sorted(ERROR_MODES)}")
        check_ranges(self, 'solver.')  # every number of the law has its range
        if self.method == 'sdls' and self.sdls_gamma_max <= 0:
            raise InputError('solver.sdls_gamma_max must be > 0')
        for name in ('posture_target', 'posture_weights'):
            values = getattr(self, name)
            if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in values):
                raise InputError(f'solver.{name} must be finite numbers, got {list(values)}')
        if any(w < 0 for w in self.posture_weights):
            raise InputError('solver.posture_weights must be >= 0')
        return self

    def packed(self):
        """Return the float array the compiled step reads (layout ``P_*`` below)."""
        self.validate()
        p = np.zeros(P_SIZE)
        p[P_METHOD] = METHODS[self.method]
        p[P_LAMBDA0] = self.damping
        p[P_ADAPTIVE] = float(self.adaptive_damping)
        p[P_LAMBDA_MAX] = self.damping_max
        p[P_EPSILON] = self.singular_epsilon
        p[P_PINV_THRESHOLD] = self.pinv_threshold
        p[P_GAMMA_MAX] = self.sdls_gamma_max
        p[P_DMAX] = self.clamp_error
        p[P_DMAX_ROT] = self.clamp_error_rotation
        p[P_ADAPTIVE_CLAMP] = float(self.adaptive_clamp)
        p[P_MAX_STEP] = self.max_joint_step
        p[P_ORIENT_W] = self.orientation_weight
        p[P_ERROR_MODE] = error_mode_code(self.error_mode)
        p[P_ALTERNATE] = float(self.alternate_jacobian)
        p[P_CENTERING] = self.centering_gain
        p[P_MANIP] = self.manipulability_gain
        p[P_GAIN] = self.gain
        p[P_PSI] = self.posture_exponent
        return p

    def as_dict(self):
        """Plain dict of the fields (for reports)."""
        return asdict(self)


(P_METHOD, P_LAMBDA0, P_ADAPTIVE, P_LAMBDA_MAX, P_EPSILON, P_PINV_THRESHOLD, P_GAMMA_MAX, P_DMAX,
 P_DMAX_ROT, P_ADAPTIVE_CLAMP, P_MAX_STEP, P_ORIENT_W, P_ERROR_MODE, P_ALTERNATE, P_CENTERING,
 P_MANIP, P_GAIN, P_PSI, P_SIZE) = range(19)
# after the P_SIZE scalars, per joint: the posture's desired angles theta_c, its weights
# alpha_i (VelocitySolver.configure)

"""
The ``ik_controller`` node's parameters, and what they are turned into.

:data:`PARAMETERS` declares each one (description with units; range; whether it may
change at run time), as MoveIt Servo's parameter file does; one that configures the
controller names its :class:`ControllerConfig` field (:func:`_setting`), whose dataclass
default is its default and which :func:`controller_config` fills; the
README's table is checked against it (test_parameter_docs) and config/*.yaml name the same
parameters (test_launch_files). :func:`controller_config`, :func:`load_model` and
:func:`fixed_obstacles` turn the values into the controller's configuration, its robot
model and its fixed obstacles; a bad value is an :class:`InputError` or a
:class:`StartupError` with a clear message.
"""

import os

from ik_control.control.config import ControllerConfig
from ik_control.ik.obstacles import MAX_OBSTACLES
from ik_control.ik.pose_error import ERROR_MODE_ALIASES
from ik_control.kinematics import RobotModel
from ik_control.kinematics.dh_file import robot_description
from ik_control.planning.obstacles import obstacles_from_yaml
from ik_control.robots import share_directory
from ik_control.ros.parameters import Param, StartupError
from ik_control.validation import field_range, IkControlError, InputError
import numpy as np
from rclpy.parameter import Parameter
import yaml

LOOP_MODES = ('synchronized', 'on_joint_states', 'timer')
#: command_interface -> the default output topic (the ros2_controllers' own topics)
COMMAND_INTERFACES = {'trajectory': 'joint_trajectory_controller/joint_trajectory',
                      'position': 'forward_position_controller/commands',
                      'velocity': 'forward_velocity_controller/commands'}
_C = ControllerConfig()
_ARR_STR = Parameter.Type.STRING_ARRAY
_ARR_DBL = Parameter.Type.DOUBLE_ARRAY


def read_srdf(path, parameter='collision.srdf_path'):
    """
    Return the text of the SRDF ``path`` ('' for none), or a StartupError naming the file.

    ``parameter``: the parameter that gave the path, for the error.

    A relative path is looked up in the current directory, then in the package.
    """
    if not path:
        return ''
    candidates = [path]
    if not os.path.isabs(path):
        candidates.append(os.path.join(share_directory(), path))
    for candidate in candidates:
        if os.path.isfile(candidate):
            with open(candidate, encoding='utf-8') as f:
                return f.read()
    raise StartupError(f"{parameter}: no file '{path}' (looked in the current "
                       f'directory and in {share_directory()})')


def _setting(field, description, dynamic=False, convert=None):
    """
    Return the :class:`Param` that sets the configuration's ``field``, with its default and range.

    ``field``: the dotted name of a :class:`ControllerConfig` field (``limits.position_margin``,
    ``solver.damping``), the parameter's own name but for the three that config.py
    names. The dataclass is the one place the default and the range
    (:func:`~ik_control.validation.ranged`) are typed, and :func:`controller_config` the
    one place the value is read.
    A tuple default is declared as a list (an empty one as a double array); ``convert``
    turns the parameter's value into the field's (else a list becomes a tuple).
    """
    group, _, leaf = field.rpartition('.')
    owner = getattr(_C, group) if group else _C
    default = getattr(owner, leaf)
    lo, hi = field_range(owner, leaf) or (None, None)
    if isinstance(default, tuple):
        default = list(default) if default else _ARR_DBL
    return Param(default, description, lo, hi, dynamic, field, convert)


PARAMETERS = {
    'robot_description': Param(
        '', 'URDF XML of the robot; if empty, urdf_path is read.'),
    'urdf_path': Param(
        '',
        'URDF file, or a DH table file (.yaml, see config/robots), used when robot_description '
        'is empty.'),
    'base_frame': Param(
        '', 'Frame of targets and commands (REP 105 base_link); empty = the URDF root. No '
        'controlled joint may move it.'),
    'end_effectors': Param(
        _ARR_STR, 'End-effector frames of the URDF, one task each.'),
    'end_effector_modes': Param(
        _ARR_STR, "Per end effector 'pose' (6-D) or 'position' (3-D); empty = all 'pose'."),
    'joints': Param(
        _ARR_STR,
        'Controlled joints, in command order; empty = the chain from base_frame to the end '
        'effectors (other joints locked; continuous joints unwrapped to +-2 pi or their URDF '
        'limits).'),
    'rate_hz': _setting(
        'rate_hz', 'Control rate [Hz].'),
    'command_interface': Param(
        'trajectory',
        "Command stream: 'trajectory' (stamped trajectory_msgs/JointTrajectory windows for "
        "joint_trajectory_controller), 'position' or 'velocity' (std_msgs/Float64MultiArray for "
        'the forward command controllers).'),
    'output_topic': Param(
        '', "Topic of the commands; empty = the controller's default for command_interface: "
        'joint_trajectory_controller/joint_trajectory, forward_position_controller/commands or '
        'forward_velocity_controller/commands.'),
    'max_expected_latency': _setting(
        'max_expected_latency',
        'How far ahead each trajectory command commits the path (stamped points for every tick '
        'in it, then braking to rest): a command delivered up to this late is followed without '
        'a jump [s]; 0 = the one-point, stamp-zero format (unsafe when the transport delays or '
        'bunches messages).'),
    'loop': Param(
        'synchronized',
        "Tick scheduling: 'synchronized' (ticks at rate_hz on the own clock, phase-locked to "
        "arrive just after each joint_states message; under use_sim_time as 'on_joint_states'), "
        "'on_joint_states' (a tick per joint_states message, at the latest 1.5 periods after "
        "the last) or 'timer' (an rclpy timer at rate_hz)."),
    'autostart': Param(
        True,
        'Configure and activate at start (a managed node that commands at once); false = '
        'start unconfigured and wait for the lifecycle transitions (ros2 lifecycle set '
        'configure, activate).'),
    'realtime_priority': Param(
        0, 'SCHED_FIFO priority of the loop (1-98; needs CAP_SYS_NICE or an rtprio limit); 0 = '
        'normal scheduling.', lo=0, hi=98),
    'busy_wait': Param(
        0.0002,
        'Time before each tick spent polling the clock instead of sleeping (sleep wakes late, '
        'and a sleeping core runs the next tick from cold caches) [s]; at or above 1/rate_hz '
        'the loop never sleeps and keeps one core busy.', lo=0.0, hi=1.0),
    'statistics_file': Param(
        '',
        'If set, the loop statistics (tick start, compute time and its parts input, update and '
        'publish, joint_states age; s) are written to this .npz file at shutdown (used by '
        'ik_control bench loop).'),
    'joint_state_timeout': _setting(
        'joint_state_timeout', 'joint_states older than this stop the arm [s].', dynamic=True),
    'twist_timeout': _setting(
        'twist_timeout',
        'A target_twist is followed for this long after it arrives, then the arm decelerates '
        '[s].', dynamic=True),
    'reseed_tolerance': _setting(
        'reseed_tolerance',
        'Measured and commanded positions further apart than this restart integration from the '
        'measurement [rad].', dynamic=True),
    'diagnostics_rate': Param(
        2.0, 'Rate of /diagnostics messages [Hz].', lo=0.1, hi=100.0),
    'markers_rate': Param(
        30.0, 'Rate of ~/markers (goals, targets, obstacles, the closest pair) while anything '
        'subscribes to it (RViz, ik_control view) [Hz].', lo=0.1, hi=100.0),
    'solver.method': _setting(
        'solver.method', 'Velocity law: transpose, pseudoinverse, dls, dls_svd or sdls.',
        dynamic=True),
    'solver.gain': _setting(
        'gain', 'Convergence rate K of q_dot = J^# K e [1/s].', dynamic=True),
    'solver.damping': _setting(
        'solver.damping', 'Always-on DLS damping lambda_0 [m].', dynamic=True),
    'solver.adaptive_damping': _setting(
        'solver.adaptive_damping',
        'Raise damping as the smallest singular value falls below singular_epsilon.',
        dynamic=True),
    'solver.damping_max': _setting(
        'solver.damping_max', 'Damping added at a singularity [m].', dynamic=True),
    'solver.singular_epsilon': _setting(
        'solver.singular_epsilon', 'Smallest singular value below which damping grows [m/rad].',
        dynamic=True),
    'solver.clamp_error': _setting(
        'solver.clamp_error',
        "ClampMag D_max on each effector's position error (bounds Cartesian speed to gain * "
        'D_max) [m].', dynamic=True),
    'solver.clamp_error_rotation': _setting(
        'solver.clamp_error_rotation', "Bound on each effector's rotation error [rad].",
        dynamic=True),
    'solver.adaptive_clamp': _setting(
        'solver.adaptive_clamp', "Buss's per-effector D_max after target jumps.", dynamic=True),
    'solver.orientation_weight': _setting(
        'solver.orientation_weight', 'Weight of rotation errors against position errors [m/rad].',
        dynamic=True),
    'solver.error_mode': _setting(
        'solver.error_mode',
        'Pose error: log3, se3 or axis_cross (SAM eq. 21; sam is its deprecated alias).',
        dynamic=True),
    'solver.alternate_jacobian': _setting(
        'solver.alternate_jacobian', "Buss's Jacobian at the target positions.", dynamic=True),
    'nullspace.centering_gain': _setting(
        'solver.centering_gain',
        'Joint-centering gain alpha (SAM eq. 17-18): joint speed -alpha grad H [rad^2/s].',
        dynamic=True),
    'nullspace.posture_target': _setting(
        'solver.posture_target',
        "Parent's desired angles theta_c of the centering term, one per controlled joint, "
        'inside the limits; empty = the middle of each range [rad or m].', dynamic=True),
    'nullspace.posture_weights': _setting(
        'solver.posture_weights',
        "Parent's per-joint weights alpha_i of the centering term (0: the joint is free); "
        'empty = 1 each [-].', dynamic=True),
    'nullspace.posture_exponent': _setting(
        'solver.posture_exponent',
        "Parent's exponent psi of H = sum alpha_i ((q_i - q_ci) / half range_i)^psi; 2 = SAM "
        'eq. 18 [-].', dynamic=True),
    'nullspace.manipulability_gain': _setting(
        'solver.manipulability_gain',
        'Manipulability-gradient gain: joint speed alpha grad w [1/s per unit of grad w].',
        dynamic=True),
    'limits.position_margin': _setting(
        'limits.position_margin', 'Distance kept from each joint limit [rad or m].', dynamic=True),
    'limits.velocity_scale': _setting(
        'limits.velocity_scale', 'Fraction of the URDF velocity limits used [-].', dynamic=True),
    'limits.max_velocity': _setting(
        'limits.max_velocity',
        'Joint velocity limits, one or one per joint; empty = URDF limits [rad/s].', dynamic=True),
    'limits.max_acceleration': _setting(
        'limits.max_acceleration', 'Joint acceleration limits, one or one per joint [rad/s^2].',
        dynamic=True),
    'obstacles.fixed': Param(
        '[]',
        'Fixed obstacles, a YAML list of {name, type (box, sphere, cylinder), size, position, '
        "rpy} in the base frame [m, rad] (as jt_rrt_planner's); avoided with those from "
        '~/obstacles.'),
    'obstacles.influence_distance': _setting(
        'obstacles.influence_distance',
        "Clearance between the arm's links (its URDF shapes, or capsules) and an obstacle below "
        'which the arm moves away (SAM eq. 19) [m].', dynamic=True),
    'obstacles.gain': _setting(
        'obstacles.gain', 'Escape speed per metre of clearance missing [1/s].', dynamic=True),
    'obstacles.link_radius': _setting(
        'obstacles.link_radius',
        "Radius of the capsules around the arm's links (joint origin to joint origin) that SAM "
        'eq. 19 measures on a robot from a DH table or a URDF without <collision> shapes; a '
        "URDF's shapes are used where it has them [m].", dynamic=True),
    'collision.enabled': _setting(
        'collision.enabled',
        "Keep the URDF's collision shapes at least collision.security_distance apart (self "
        'pairs and obstacles), whatever the goal asks.', dynamic=True),
    'collision.srdf_path': _setting(
        'collision.srdf',
        'SRDF whose <disable_collisions> pairs are not checked (ik_control collision-matrix '
        'writes one); a relative path is looked up in the current directory, then in the '
        'package; empty = pairs in contact at the first state are not checked.',
        convert=read_srdf),
    'collision.convex_meshes': _setting(
        'collision.convex_meshes',
        'Measure mesh collision shapes as their convex hulls (compiled GJK: tens of '
        'microseconds a pair, a concave link counted with its hollows filled) instead of as '
        'triangle meshes (coal BVH: exact, but about a millisecond a tick on an arm of STL '
        'meshes).'),
    'collision.security_distance': _setting(
        'collision.security_distance',
        'No checked pair is commanded nearer than this, braking tail included [m].', dynamic=True),
    'collision.influence_distance': _setting(
        'collision.influence_distance',
        'Pairs nearer than this have their approach speed bounded [m].', dynamic=True),
    'collision.gain': _setting(
        'collision.gain',
        'Velocity damper rate xi: a pair approaches at most at xi (d - security_distance) '
        '[1/s].', dynamic=True),
    'goal.position_tolerance': _setting(
        'goal.position_tolerance', 'goal_reached within this position error [m].', dynamic=True),
    'goal.orientation_tolerance': _setting(
        'goal.orientation_tolerance', 'goal_reached within this rotation error [rad].',
        dynamic=True),
    'fallback.strategy': _setting(
        'fallback.strategy',
        'When the Cartesian law stalls on a goal, the position IK is asked for a configuration: '
        'joint (joint-space approach, then Cartesian), posture (pulled toward it in the '
        'nullspace) or off.', dynamic=True),
    'fallback.time_budget': _setting(
        'fallback.time_budget',
        'CPU time of one position-IK solve before the goal is called unreachable [s].',
        dynamic=True),
    'ik_method': _setting(
        'ik_method',
        "How a pose goal's joint step is made: velocity (the velocity law, solver.*), ccd "
        "(cyclic coordinate descent sweeps each tick), hal (HAL's closed form + refinement, "
        'approached in joint space) or analytic (the closed form alone, on arms whose shoulder '
        'and wrist axes meet); twists and paths always use the velocity law. The limits apply '
        'to every method (docs/classical_ik.md).', dynamic=True),
    'ccd_sweeps': _setting(
        'ccd_sweeps', 'ik_method ccd: CCD sweeps per tick.', dynamic=True),
    'constraints': _setting(
        'constraints',
        "Welman's geometric constraints kept while the goals are tracked: a YAML list of {type "
        '(plane, line, point, orientation), frame, point, and normal, direction, plane_point, '
        'line_point, target or quaternion} in the base frame [m]; values left out are taken '
        'where the link is when they take effect; empty = none. Needs fallback.strategy posture '
        'or off (docs/classical_ik.md).', dynamic=True),
}


def controller_config(values):
    """
    Build the ControllerConfig from parameter values (raises InputError on bad combinations).

    Each parameter declared with :func:`_setting` sets its field; the others (robot,
    loop, topics) are the node's own.
    """
    fields = {}
    for name, param in PARAMETERS.items():
        if param.field is None:
            continue
        value = values[name]
        if param.convert is not None:
            value = param.convert(value)
        elif isinstance(value, list):
            value = tuple(value)
        fields[param.field] = value
    return _C.updated(fields)


def warn_deprecated(values, logger):
    """Log, through ``logger``, each parameter value given by a deprecated name."""
    mode = values['solver.error_mode']
    if mode in ERROR_MODE_ALIASES:
        logger.warning(f"solver.error_mode '{mode}' is deprecated: it is "
                       f"'{ERROR_MODE_ALIASES[mode]}' (SAM eq. 21), use that name")


def profile_request(text):
    """
    Return ``(name or path, perturbation, seed)`` of a ``velocity_profile`` message.

    Either the profile's name or file path, or a YAML mapping ``{profile: wave,
    perturbation: [linear m/s, angular rad/s], seed: 1}`` (perturbation and seed
    optional).
    """
    text = text.strip()
    if not text.startswith('{'):
        return text, 0.0, None
    try:
        spec = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f'velocity_profile is not valid YAML: {exc}') from None
    unknown = set(spec) - {'profile', 'perturbation', 'seed'} if isinstance(spec, dict) else ()
    if not isinstance(spec, dict) or 'profile' not in spec or unknown:
        raise InputError('velocity_profile must be a name, a file, or {profile, '
                         'perturbation, seed}')
    seed = spec.get('seed')
    if seed is not None and not (isinstance(seed, int) and seed >= 0):
        raise InputError('velocity_profile seed must be an integer >= 0')
    try:
        perturbation = np.asarray(spec.get('perturbation', 0.0), dtype=float)
    except (TypeError, ValueError):
        perturbation = None
    if perturbation is None or perturbation.size not in (1, 2):
        raise InputError('velocity_profile perturbation must be one number or [linear, '
                         'angular]')
    return str(spec['profile']), perturbation.reshape(-1), seed


def fixed_obstacles(text):
    """Return ``obstacles.fixed`` as ``(shape, pose, Marker scale)`` (or StartupError)."""
    try:
        obstacles = obstacles_from_yaml(text, 'fixed')
    except IkControlError as exc:
        raise StartupError(f'obstacles.fixed: {exc}') from None
    if len(obstacles) > MAX_OBSTACLES:
        raise StartupError(f'obstacles.fixed: at most {MAX_OBSTACLES} obstacles, got '
                           f'{len(obstacles)}')
    return [(o.shape, o.pose, o.marker_scale()) for o in obstacles]


def load_model(values):
    """Load the RobotModel from the robot parameters (StartupError with a clear message)."""
    urdf = values['robot_description'] or values['urdf_path']
    ees = values['end_effectors']
    if not ees:
        raise StartupError('end_effectors is empty: name at least one frame of the URDF')
    modes = values['end_effector_modes'] or ['pose'] * len(ees)
    if len(modes) != len(ees):
        raise StartupError(f'end_effector_modes has {len(modes)} entries for {len(ees)} '
                           'end effectors')
    try:
        return RobotModel.from_urdf(robot_description(urdf), joints=values['joints'] or None,
                                    base_frame=values['base_frame'] or None,
                                    end_effectors=list(zip(ees, modes)))
    except IkControlError as exc:
        raise StartupError(str(exc)) from None

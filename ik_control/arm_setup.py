"""
``ik_control setup``: a working configuration of the nodes for any arm, from its URDF.

From a URDF, a base frame and one or more tip frames (a two-armed robot has two), it
writes into one folder:

* ``NAME.yaml``, the parameter file of ``ik_controller`` and ``sim_robot`` (the
  ``/**/node: ros__parameters`` layout of ``config/wam.yaml``): the URDF's path, the base
  frame, the tips as 6-D pose tasks, the chain joints from the base to the tips (mimic
  slaves replaced by their masters: :func:`~ik_control.kinematics.urdf_tree.chain_joints`),
  the control rate, the SRDF, and the simulated robot's start pose (:func:`start_pose`:
  dexterous, without contact). Where the URDF gives a joint no velocity
  limit (a continuous joint without ``<limit>``), ``DEFAULT_VELOCITY`` is written as the
  joint's limit for both nodes (``limits.max_velocity``, ``max_velocity``) and a warning
  says so: the nodes never take a missing limit as 0 or as infinite;
* ``NAME.srdf``, the allowed-collision matrix (:mod:`~ik_control.collision.acm`,
  MoveIt's rules, the start pose as the default pose); an arm whose collision shapes are
  meshes gets ``collision.convex_meshes: true`` and its matrix measured the same way;
* ``NAME_controllers.yaml``, a ros2_control ``controller_manager`` file with a
  ``joint_trajectory_controller`` on the joints (position commands; position and
  velocity states), for a real robot or Gazebo.

:func:`write` returns the files and the commands that bring the arm up.
"""

from dataclasses import dataclass
import os

from ik_control.collision import acm
from ik_control.collision.model import CollisionModel
from ik_control.kinematics import RobotModel
from ik_control.kinematics.urdf_tree import frame_id
from ik_control.launch_util import read_text, root_link
from ik_control.validation import InputError
import numpy as np
import yaml

__all__ = ['ArmSetup', 'DEFAULT_VELOCITY', 'write']

DEFAULT_VELOCITY = 1.0      # [rad/s or m/s] for a joint the URDF gives no velocity limit
DEFAULT_RATE = 500.0        # control and simulation rate [Hz]
START_CANDIDATES = 200      # configurations :func:`start_pose` chooses from


@dataclass
class ArmSetup:
    """What :func:`write` wrote: the files, the joints, the warnings, the commands."""

    params: str
    srdf: str
    controllers: str
    joints: list
    warnings: list
    commands: list


class _PlainDumper(yaml.SafeDumper):
    """YAML as ROS 2's parameter parser reads it: block maps, no anchors or aliases."""

    def ignore_aliases(self, data):
        return True


def _dump(document, stream):
    yaml.dump(document, stream, Dumper=_PlainDumper, default_flow_style=False,
              sort_keys=False)


def _model(urdf_path, base, tips):
    """Return the RobotModel of the chain from ``base`` to ``tips`` (pose tasks)."""
    return RobotModel.from_urdf(urdf_path, base_frame=base,
                                end_effectors=[(tip, 'pose') for tip in tips])


def start_pose(model, candidates=START_CANDIDATES, seed=0):
    """
    Return a start pose [rad or m]: dexterous, inside the limits, without contact.

    Of the middle of the joint limits (0 for a continuous joint) and ``candidates``
    configurations drawn uniformly in the middle half of each range (a continuous joint:
    +-pi/2), the one whose task Jacobian has the largest smallest singular value
    (farthest from a singularity: the middle of a UR5's limits is its straight, singular
    arm) among those whose collision shapes of links that are not adjacent do not touch
    (meshes as their convex hulls, which hold them).
    """
    lower, upper = model.lower, model.upper
    bounded = np.isfinite(lower) & np.isfinite(upper)
    lo, hi = np.where(bounded, lower, 0.0), np.where(bounded, upper, 0.0)
    mid = 0.5 * (lo + hi)
    half = np.where(bounded, 0.25 * (hi - lo), 0.5 * np.pi)
    rng = np.random.default_rng(seed)
    poses = np.vstack([mid, mid + rng.uniform(-1.0, 1.0, (candidates, mid.size)) * half])
    poses = np.clip(poses, lower, upper)
    shapes = CollisionModel(model, convex=True)   # hulls: fast, and never miss a contact
    ws = model.workspace()
    best, best_sigma = poses[0], -1.0
    for q in poses:
        if shapes.robot_count and shapes.closest(q)[0] <= 0.0:
            continue
        ws.update(q)
        sigma = float(np.linalg.svd(ws.J, compute_uv=False)[-1])
        if sigma > best_sigma:
            best, best_sigma = q, sigma
    return best


def write(urdf_path, tips, out_dir, base=None, name=None, rate_hz=DEFAULT_RATE, samples=1000,
          progress=None):
    """
    Write the configuration of the arm of ``urdf_path`` into ``out_dir`` (module docstring).

    ``tips``: the end-effector frames (links or frames of the URDF; a name that is both a
    link and a joint means the link); ``base``: the base frame (default: the URDF's root
    link); ``name``: the files' stem (default: the URDF file's); ``rate_hz`` [Hz];
    ``samples``: random configurations for the allowed-collision matrix. Raises
    :class:`InputError` (or ``ModelError``) naming what is wrong.
    """
    if not tips:
        raise InputError('give at least one --tip frame')
    if not rate_hz > 0.0:
        raise InputError(f'--rate must be > 0 Hz, got {rate_hz}')
    urdf_path = os.path.abspath(urdf_path)
    if not os.path.isfile(urdf_path):
        raise InputError(f"no URDF file '{urdf_path}'")
    base = base or root_link(read_text(urdf_path))
    model = _model(urdf_path, base, tips)
    for frame in [base, *tips]:
        frame_id(model.pin_model, frame)     # an unknown frame: one clear error
    name = name or os.path.splitext(os.path.basename(urdf_path))[0]
    os.makedirs(out_dir, exist_ok=True)
    out_dir = os.path.abspath(out_dir)
    joints = list(model.joint_names)
    q0 = start_pose(model)
    warnings = []
    v_urdf = model.velocity_limit
    missing = ~((v_urdf > 0.0) & np.isfinite(v_urdf))
    velocity = None
    if missing.any():
        velocity = np.where(missing, DEFAULT_VELOCITY, v_urdf)
        warnings.append(f'joints {[j for j, m in zip(joints, missing) if m]} have no velocity '
                        f'limit in the URDF: {DEFAULT_VELOCITY:g} rad/s (or m/s) written for '
                        "them (limits.max_velocity, max_velocity); edit it to your robot's")
    # meshes as their hulls: coal's triangle meshes cost about a millisecond a tick on an
    # arm of STL meshes (the Kinova's), the hulls' compiled GJK a fifth of one
    convex = CollisionModel(model).meshes > 0
    result = acm.compute(model, samples=samples, seed=0, pose=q0, progress=progress,
                         convex=convex)
    srdf = os.path.join(out_dir, f'{name}.srdf')
    with open(srdf, 'w', encoding='utf-8') as stream:
        stream.write(acm.srdf_text(result, f'written by ik_control setup: {samples} samples, '
                                   'seed 0, the start pose as the default pose'))
    controller = {
        'urdf_path': urdf_path, 'base_frame': base, 'end_effectors': list(tips),
        'end_effector_modes': ['pose'] * len(tips), 'joints': joints,
        'rate_hz': float(rate_hz),
        'collision': {'srdf_path': srdf, 'convex_meshes': bool(convex)}}
    sim = {'urdf_path': urdf_path, 'joints': joints,
           'initial_positions': [float(v) for v in q0], 'rate_hz': float(rate_hz),
           'collision_srdf_path': srdf}
    if velocity is not None:
        controller['limits'] = {'max_velocity': [float(v) for v in velocity]}
        sim['max_velocity'] = [float(v) for v in velocity]
    params = os.path.join(out_dir, f'{name}.yaml')
    with open(params, 'w', encoding='utf-8') as stream:
        stream.write(f'# ik_control parameters for {name} ({urdf_path}), written by '
                     '`ik_control setup`;\n# every other parameter keeps its default '
                     '(README: parameters).\n')
        _dump({'/**/ik_controller': {'ros__parameters': controller},
               '/**/sim_robot': {'ros__parameters': sim}}, stream)
    controllers = os.path.join(out_dir, f'{name}_controllers.yaml')
    with open(controllers, 'w', encoding='utf-8') as stream:
        stream.write(f'# ros2_control controllers for {name}, written by `ik_control setup`\n')
        _dump({
            'controller_manager': {'ros__parameters': {
                'update_rate': int(round(rate_hz)),
                'joint_state_broadcaster': {
                    'type': 'joint_state_broadcaster/JointStateBroadcaster'},
                'joint_trajectory_controller': {
                    'type': 'joint_trajectory_controller/JointTrajectoryController'}}},
            'joint_trajectory_controller': {'ros__parameters': {
                'joints': joints, 'command_interfaces': ['position'],
                'state_interfaces': ['position', 'velocity'],
                'allow_partial_joints_goal': True}}}, stream)
    commands = [
        f'ros2 launch ik_control ik_control.launch.py urdf:={urdf_path} params_file:={params}',
        f'sim_robot --ros-args --params-file {params} & '
        f'ik_controller --ros-args --params-file {params}']
    return ArmSetup(params, srdf, controllers, joints, warnings, commands)

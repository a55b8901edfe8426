"""
RobotModel: a pinocchio model, the controlled joints, and the end-effector task rows.

One object holds everything about the robot that the controller and the solvers need:

* the pinocchio ``Model`` built from a URDF file or string (or a DH table, see
  :mod:`ik_control.kinematics.dh`), kept as the reference implementation;
* the controlled joints (a subset; the others are locked at ``locked_positions``;
  URDF ``<mimic>`` slaves follow their master), in the order the user gave, with their
  position, velocity and effort limits; without a joint list, the chain from the base
  frame to the end effectors (see :func:`~.urdf_tree.chain_joints`);
* any URDF: joints that are not 1-DoF (floating, planar) and, for a chain, every joint
  off the chain are locked with pinocchio's ``buildReducedModel``; a ``continuous`` joint
  is unwrapped into a revolute joint with the URDF's limits if it gives finite ones, else
  +-:data:`~.urdf_tree.CONTINUOUS_RANGE` (so every joint has one configuration value, ``nq == nv``;
  the controller brakes at these limits instead of wrapping around);
* the end effectors: frames of the model, each a 6-D pose task or a 3-D position task,
  stacked into one task vector in the order given;
* flat arrays of the kinematic tree for the compiled kernels in
  :mod:`ik_control.kinematics.kernels`.

All placements and Jacobians are expressed in ``base_frame`` (REP 105 ``base_link`` style:
a frame that no controlled joint moves).
"""

from dataclasses import dataclass

from ik_control.kinematics import kernels
from ik_control.kinematics.urdf_tree import (frame_id, joint_kind, mimic_table, read_urdf,
                                             reduce_to_chain, unwrap_continuous)
from ik_control.validation import InputError, ModelError
import numpy as np
import pinocchio as pin


@dataclass(frozen=True)
class EndEffector:
    """A task frame: ``mode`` ``'pose'`` (6 rows: linear, then angular x y z) or ``'position'``."""

    frame: str
    mode: str = 'pose'

    @property
    def dim(self):
        """Task rows this end effector contributes (6 or 3)."""
        return 6 if self.mode == 'pose' else 3


def _as_end_effector(spec):
    if isinstance(spec, EndEffector):
        ee = spec
    elif isinstance(spec, str):
        ee = EndEffector(spec)
    else:
        ee = EndEffector(*spec)
    if ee.mode not in ('pose', 'position'):
        raise ModelError(f"end effector '{ee.frame}': mode must be 'pose' or 'position', "
                         f"not '{ee.mode}'")
    return ee


class RobotModel:
    """
    Kinematic model of the controlled part of a robot (see module docstring).

    Attributes (arrays over the controlled joints, in ``joint_names`` order): ``lower``,
    ``upper`` [rad or m], ``velocity_limit`` [rad/s or m/s], ``effort_limit``.
    ``locked_values`` maps every other 1-DoF joint of the URDF (in the tree or locked away)
    to the value it is held at; ``continuous_joints`` names the unwrapped controlled ones.
    ``end_effectors`` is the tuple of :class:`EndEffector`; ``task_dim`` the stacked task size.
    """

    def __init__(self, pin_model, mimic=None, joints=None, end_effectors=(), base_frame=None,
                 locked_positions=None, name=None):
        self.full_pin_model = pin_model
        mimic = dict(mimic or {})
        actuated = [pin_model.names[i] for i in range(1, pin_model.njoints)
                    if pin_model.names[i] not in mimic]
        unknown = [n for n in (joints or ()) if not pin_model.existJointName(n)]
        if unknown:
            raise ModelError(f'unknown joints {unknown}; the model has {actuated}')
        slaves = [n for n in (joints or ()) if n in mimic]
        if slaves:
            raise ModelError(f'joints {slaves} are URDF mimic joints and cannot be controlled; '
                             f'control their masters {[mimic[n][0] for n in slaves]} instead')
        for name_ in locked_positions or {}:
            if not pin_model.existJointName(name_):
                raise ModelError(f"locked position given for unknown joint '{name_}'")
        self.continuous_joints = ()
        pin_model, mimic, joints, held = reduce_to_chain(
            pin_model, mimic, joints, [_as_end_effector(e).frame for e in end_effectors],
            base_frame, locked_positions)
        locked_positions = {n: v for n, v in (locked_positions or {}).items()
                            if pin_model.existJointName(n)}
        self.pin_model = pin_model
        self.pin_data = pin_model.createData()
        self.name = name or pin_model.name
        tree_names = [pin_model.names[i] for i in range(1, pin_model.njoints)]
        nt = len(tree_names)
        self._check_joint_types(tree_names)
        index = {n: j for j, n in enumerate(tree_names)}
        if len(set(joints)) != len(joints):
            raise ModelError(f'joints listed twice in {joints}')
        self.joint_names = tuple(joints)
        self.nq = len(joints)

        tree_lower = np.array(pin_model.lowerPositionLimit, dtype=float)
        tree_upper = np.array(pin_model.upperPositionLimit, dtype=float)
        idx = np.array([index[n] for n in joints], dtype=np.int64)
        self.lower = tree_lower[idx].copy()
        self.upper = tree_upper[idx].copy()
        self.velocity_limit = np.array(pin_model.velocityLimit, dtype=float)[idx].copy()
        self.effort_limit = np.array(pin_model.effortLimit, dtype=float)[idx].copy()
        bad = [joints[i] for i in range(self.nq)
               if not (np.isfinite(self.lower[i]) and np.isfinite(self.upper[i])
                       and self.lower[i] < self.upper[i])]
        if bad:
            raise ModelError(f'joints {bad} need finite position limits with lower < upper')

        # Controlled -> tree mapping (kernels module doc).
        ctrl_index = -np.ones(nt, dtype=np.int64)
        multiplier = np.ones(nt)
        offset = np.zeros(nt)
        ctrl_index[idx] = np.arange(self.nq)
        q_locked = np.clip(np.zeros(nt), tree_lower, tree_upper)  # locked at 0, kept in limits
        for name_, value in (locked_positions or {}).items():
            if name_ not in index:
                raise ModelError(f"locked position given for unknown joint '{name_}'")
            q_locked[index[name_]] = float(value)
        for slave, (master, mult, off) in mimic.items():
            s, m = index[slave], index[master]
            if ctrl_index[m] >= 0:
                ctrl_index[s] = ctrl_index[m]
                multiplier[s] = mult
                offset[s] = off
            else:
                q_locked[s] = mult * q_locked[m] + off
        self.ctrl_index = ctrl_index
        self.multiplier = multiplier
        self.offset = offset
        self.q_locked = q_locked
        # every 1-DoF joint of the URDF that does not move with the controlled ones [rad, m]
        self.locked_values = dict(held, **{tree_names[j]: float(q_locked[j])
                                           for j in range(nt) if ctrl_index[j] < 0})
        self.tree_joint_names = tuple(tree_names)

        self._flatten_tree()
        self.base_frame = base_frame or pin_model.frames[0].name
        self._set_base(self.base_frame)
        self.end_effectors = ()
        self.set_end_effectors(end_effectors)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_urdf(cls, urdf, **kwargs):
        """Build from a URDF file path or XML string; ``kwargs`` as for the constructor."""
        xml = read_urdf(urdf)
        mimic = mimic_table(xml)
        unwrapped, continuous = unwrap_continuous(xml)
        try:
            model = pin.buildModelFromXML(unwrapped)
        except (RuntimeError, ValueError) as exc:
            raise ModelError(f'pinocchio cannot parse the URDF: {exc}') from None
        model_kwargs = dict(kwargs)
        model = cls(model, mimic=mimic, **model_kwargs)
        model.urdf_xml = xml
        model.continuous_joints = tuple(n for n in continuous if n in model.joint_names)
        return model

    def _check_joint_types(self, tree_names):
        for i in range(1, self.pin_model.njoints):
            joint = self.pin_model.joints[i]
            if joint.nq != 1 or joint.nv != 1:
                raise ModelError(
                    f"joint '{tree_names[i - 1]}' ({joint_kind(joint)}) is not a 1-DoF "
                    'revolute or prismatic joint: build the model with RobotModel.from_urdf '
                    '(which unwraps continuous joints and locks the others away)')

    def _flatten_tree(self):
        model, data = self.pin_model, self.pin_data
        pin.forwardKinematics(model, data, pin.neutral(model))
        nt = model.njoints - 1
        self.parent = np.array([model.parents[i] - 1 for i in range(1, model.njoints)],
                               dtype=np.int64)
        self.placement = np.array([model.jointPlacements[i].homogeneous
                                   for i in range(1, model.njoints)]).reshape(nt, 4, 4)
        axis = np.zeros((nt, 3))
        kind = np.zeros(nt, dtype=np.int64)
        for i in range(1, model.njoints):
            s = np.array(data.joints[i].S).ravel()
            if np.linalg.norm(s[3:]) > 0.5:
                axis[i - 1] = s[3:] / np.linalg.norm(s[3:])
                kind[i - 1] = kernels.JOINT_REVOLUTE
            else:
                axis[i - 1] = s[:3] / np.linalg.norm(s[:3])
                kind[i - 1] = kernels.JOINT_PRISMATIC
        self.axis = axis
        self.kind = kind
        ancestors = np.zeros((model.njoints, nt), dtype=np.bool_)
        for i in range(1, model.njoints):
            ancestors[i] = ancestors[model.parents[i]]
            ancestors[i, i - 1] = True
        self._joint_ancestors = ancestors

    def _frame_id(self, frame):
        return frame_id(self.pin_model, frame)

    def _frame_support(self, fid):
        """Bool mask over tree joints that move frame ``fid``."""
        return self._joint_ancestors[self.pin_model.frames[fid].parentJoint]

    def _set_base(self, frame):
        fid = self._frame_id(frame)
        moving = [self.tree_joint_names[j] for j in np.flatnonzero(self._frame_support(fid))
                  if self.ctrl_index[j] >= 0]
        if moving:
            raise ModelError(f"base frame '{frame}' is moved by controlled joints {moving}")
        data = self.pin_data
        pin.framesForwardKinematics(self.pin_model, data, self.q_locked)
        self.base_placement = data.oMf[fid].homogeneous.copy()
        self.base_inv = np.linalg.inv(self.base_placement)

    def set_end_effectors(self, end_effectors):
        """Choose the task frames; rebuilds the row tables used by the kernels."""
        ees = tuple(_as_end_effector(e) for e in end_effectors)
        names = [e.frame for e in ees]
        if len(set(names)) != len(names):
            raise ModelError(f'end effectors listed twice in {names}')
        fids = [self._frame_id(e.frame) for e in ees]
        self.end_effectors = ees
        self.frame_ids = tuple(fids)
        ne = len(ees)
        self.frame_joint = np.array([self.pin_model.frames[f].parentJoint - 1 for f in fids],
                                    dtype=np.int64)
        self.frame_placement = np.array(
            [self.pin_model.frames[f].placement.homogeneous for f in fids]).reshape(ne, 4, 4)
        self.support = np.array([self._frame_support(f) for f in fids],
                                dtype=np.bool_).reshape(ne, len(self.tree_joint_names))
        rows_frame, rows_comp, offsets = [], [], []
        for f, ee in enumerate(ees):
            offsets.append(len(rows_frame))
            comps = range(6) if ee.mode == 'pose' else range(3)
            rows_frame.extend([f] * len(comps))
            rows_comp.extend(comps)
        self.row_frame = np.array(rows_frame, dtype=np.int64)
        self.row_component = np.array(rows_comp, dtype=np.int64)
        self.task_offsets = tuple(offsets)
        self.task_dim = len(rows_frame)
        self.task_is_pose = np.array([e.mode == 'pose' for e in ees], dtype=np.bool_)
        self.packed_f, self.packed_i = self.packed_within(self.lower, self.upper)
        unmoved = [e.frame for e, s in zip(ees, self.support)
                   if not np.any(self.ctrl_index[s] >= 0)]
        if unmoved:
            raise ModelError(f'end effectors {unmoved} are not moved by any controlled joint')

    def packed_within(self, lower, upper):
        """Return the packed model for the kernels, with position limits ``lower``/``upper``."""
        return kernels.pack_model(
            self.parent, self.placement, self.axis, self.kind, self.ctrl_index, self.multiplier,
            self.offset, self.q_locked, self.frame_joint, self.frame_placement, self.base_inv,
            self.support, self.row_frame, self.row_component, np.asarray(lower, dtype=float),
            np.asarray(upper, dtype=float))

    # ------------------------------------------------------------------ queries
    @property
    def end_effector_names(self):
        """Frame names of the end effectors, in task order."""
        return tuple(e.frame for e in self.end_effectors)

    def end_effector_index(self, end_effector):
        """
        Return the task index of ``end_effector``, given by frame name or by index.

        Raises :class:`InputError` for a name that is not an end effector or an index out
        of range.
        """
        names = self.end_effector_names
        if isinstance(end_effector, str):
            if end_effector not in names:
                raise InputError(f"end effector '{end_effector}' is not one of {list(names)}")
            return names.index(end_effector)
        if not 0 <= int(end_effector) < len(names):
            raise InputError(f'end effector index {end_effector} is not in 0..{len(names) - 1}')
        return int(end_effector)

    @property
    def center(self):
        """Middle of each controlled joint's range [rad or m]."""
        return 0.5 * (self.lower + self.upper)

    def workspace(self, W=None):
        """
        Preallocated buffers for allocation-free kinematics (see :class:`KinematicsWorkspace`).

        ``W`` optionally supplies the buffer (a view into a larger one).
        """
        return KinematicsWorkspace(self, W)

    def tree_configuration(self, q):
        """Pinocchio configuration vector for controlled joint values ``q``."""
        out = np.empty(len(self.tree_joint_names))
        kernels.tree_configuration(np.asarray(q, dtype=float), self.ctrl_index, self.multiplier,
                                   self.offset, self.q_locked, out)
        return out

    def frame_placements(self, q):
        """End-effector placements in the base frame, shape (end effectors, 4, 4)."""
        ws = self.workspace()
        ws.update(q, jacobian=False)
        return ws.frame_T.copy()

    def jacobian(self, q, points=None):
        """
        Stacked task Jacobian (task_dim x nq) at ``q``; ``points`` replaces the frame origins.

        With ``points`` set to the target positions this is Buss's alternate Jacobian.
        """
        ws = self.workspace()
        ws.update(q, points=points)
        return ws.J.copy()

    def random_configurations(self, count, rng, margin=0.0):
        """Draw ``count`` configurations uniformly inside the limits shrunk by ``margin``."""
        span = self.upper - self.lower
        lo = self.lower + margin * span
        return lo + rng.random((count, self.nq)) * (1.0 - 2.0 * margin) * span

    def pin_frame_placement(self, q, frame):
        """Return pinocchio's placement of ``frame`` in the base frame (4x4)."""
        fid = self._frame_id(frame)
        pin.framesForwardKinematics(self.pin_model, self.pin_data, self.tree_configuration(q))
        return self.base_inv @ self.pin_data.oMf[fid].homogeneous

    def pin_frame_jacobian(self, q, frame):
        """
        Return pinocchio's 6 x nq Jacobian of ``frame`` (LOCAL_WORLD_ALIGNED, base axes).

        Chain rule through the mimic coupling: ``J_ctrl = J_tree @ C``.
        """
        fid = self._frame_id(frame)
        qt = self.tree_configuration(q)
        J = pin.computeFrameJacobian(self.pin_model, self.pin_data, qt, fid,
                                     pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        R = self.base_inv[:3, :3]
        J = np.vstack([R @ J[:3], R @ J[3:]])
        return J @ self._coupling()

    def _coupling(self):
        """Return ``C`` (tree joints x controlled): tree velocities ``C q_dot`` (mimics)."""
        coupling = np.zeros((len(self.tree_joint_names), self.nq))
        rows = np.flatnonzero(self.ctrl_index >= 0)
        coupling[rows, self.ctrl_index[rows]] = self.multiplier[rows]
        return coupling

    def centre_of_mass(self, q):
        """
        Return the robot's centre of mass ``c`` [m] and its Jacobian (3 x nq), base frame.

        pinocchio's ``centerOfMass`` and ``jacobianCenterOfMass`` over every link of the
        model (locked joints at their locked values), ``dc/dq = J_c`` through the mimic
        coupling; the base frame's placement is fixed, so ``c_base = R c + t``.
        """
        qt = self.tree_configuration(q)
        c = pin.centerOfMass(self.pin_model, self.pin_data, qt)
        J = pin.jacobianCenterOfMass(self.pin_model, self.pin_data, qt)
        R, t = self.base_inv[:3, :3], self.base_inv[:3, 3]
        return R @ c + t, (R @ J) @ self._coupling()


class KinematicsWorkspace:
    """
    Buffers for one robot: ``update(q)`` fills ``frame_T`` (placements), ``J`` (task Jacobian).

    All buffers are views of one array ``W`` so that compiled code receives the whole
    workspace as a single argument; reusing one workspace per control loop keeps the tick
    free of allocation.
    """

    def __init__(self, model, W=None):
        self.model = model
        size = kernels.work_size(model.packed_i)
        self.W = np.zeros(size) if W is None else W
        if self.W.shape != (size,):
            raise ValueError(f'work buffer must have {size} values')
        (self.q_tree, self.joint_T, self.frame_T, self.points, self.J,
         _) = kernels.work_views(model.packed_i, self.W)
        self.joint_T[:] = np.eye(4)
        self.frame_T[:] = np.eye(4)

    def update(self, q, points=None, jacobian=True):
        """Compute FK at ``q``, then (optionally) the Jacobian at ``points`` or the origins."""
        m = self.model
        if points is not None:
            self.points[:, :] = points
        kernels.update_kinematics(m.packed_f, m.packed_i, self.W, q, points is not None,
                                  jacobian)

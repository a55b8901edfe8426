r"""
MuJoCo physics simulated robot with position servos tracking the JTC setpoint.

The URDF is read by :meth:`ik_control.kinematics.RobotModel.from_urdf` (joint
selection, default order, mimic table and their errors, as for the controller),
then loaded by MuJoCo's own URDF importer (``mujoco.MjSpec.from_string``) after
its ``<visual>`` and ``<collision>`` elements are removed: the simulator models
the rigid-body dynamics of the arm only (no meshes to resolve, no contacts).
Every link that moves needs an ``<inertial>``.

Model built through :class:`mujoco.MjSpec`:

* gravity on (``-9.81 m/s^2`` along world z), physics timestep ``timestep``
  (default 1 ms), MuJoCo's ``discrete`` integrator (MuJoCo >= 3.13), which
  treats the servo's stiffness and damping implicitly (effective inertia
  :math:`M + h K_v + h^2 K_p`): stiff servos on light links (the WAM wrist,
  :math:`7.6 \cdot 10^{-5}\,kg\,m^2` about joint 7, with
  :math:`k_p = 2000` gives :math:`\omega h \approx 5`) stay stable. Older
  MuJoCo falls back to ``implicitfast`` (damping implicit only), where
  :math:`h \sqrt{k_p / M_{jj}}` must stay below about 1;
* one position actuator per commanded joint, torque (or force)
  :math:`\tau = k_p (q_d - q) - k_v \dot q`, saturated by the joint's URDF
  ``effort`` limit (MuJoCo's ``actuatorfrcrange``). (A velocity feed-forward,
  :math:`k_v (\dot q_d - \dot q)`, removes the lag :math:`k_v \dot q / k_p` but let
  the effort-saturated SIMON torso overshoot its limit: not used);
* **armature** (the drive's reflected rotor inertia), by a stated rule: each
  commanded joint's inertia :math:`M_{jj}` (joint-space inertia at the initial
  configuration) is raised to at least :math:`k_p h^2 / (\omega h)_{max}^2` with
  :math:`(\omega h)_{max}` = ``MAX_OMEGA_H`` (0.5), so that the servo's natural
  frequency :math:`\omega = \sqrt{k_p / (M_{jj} + a_j)}` is resolved by the
  timestep :math:`h`. Without it the WAM wrist (:math:`M_{77} = 7.6 \cdot
  10^{-5}\,kg\,m^2`, :math:`\omega h \approx 5` at :math:`k_p = 2000`) rang at
  about 250 Hz; with it, 0.008 kg m^2, the order of a geared wrist motor's
  reflected inertia;
* **servo damping** :math:`k_v`: given, or critical
  (``damping_ratio``) for the joint's inertia with its armature,
  :math:`k_v = 2 \zeta \sqrt{k_p (M_{jj} + a_j)}`; the joints' passive damping
  and friction are the URDF's ``<dynamics>`` (none when absent);
* joints of the URDF that are not commanded (fingers, ...) are **held** by the
  same kind of position actuator at their initial position ``clip(0, lower,
  upper)``;
* URDF ``<mimic>`` joints are not actuated: MuJoCo's importer couples them to
  their leader with a joint equality constraint
  :math:`q_m = \mathrm{offset} + \mathrm{multiplier}\, q_l`;
* optional gravity compensation: every body gets ``gravcomp = 1``, i.e. the
  passive force :math:`-g(q)` cancels gravity exactly, as a gravity-compensated
  real arm (e.g. the Barrett WAM) does.
"""

import math
from typing import Optional, Sequence
from xml.etree import ElementTree

from ik_control.kinematics import RobotModel
from ik_control.kinematics.urdf_tree import mimic_table
from ik_control.sim.base import clip_initial_positions, SimRobot
from ik_control.sim.trajectory import JointTrajectorySampler
import numpy as np

__all__ = ['MAX_OMEGA_H', 'MujocoSim']

#: largest servo natural frequency times the timestep: the armature rule keeps every
#: joint's ``sqrt(kp / (M_jj + armature)) * timestep`` at most this [-]
MAX_OMEGA_H = 0.5


def _integrator(mujoco):
    """Return MuJoCo's ``discrete`` integrator, or ``implicitfast`` where it is missing."""
    kinds = mujoco.mjtIntegrator
    return getattr(kinds, 'mjINT_DISCRETE', kinds.mjINT_IMPLICITFAST)


def _without_geometry(urdf_xml: str) -> str:
    """Return the URDF without its ``<visual>`` and ``<collision>`` elements."""
    root = ElementTree.fromstring(urdf_xml)
    for link in root.iter('link'):
        for elem in link.findall('visual') + link.findall('collision'):
            link.remove(elem)
    return ElementTree.tostring(root, encoding='unicode')


class MujocoSim(SimRobot):
    """
    Physics simulation of a URDF robot whose joints track a trajectory setpoint.

    Parameters
    ----------
    urdf:
        URDF file path or XML string.
    joint_names:
        Commanded joints (the order of every array); default: every non-fixed,
        non-mimic joint in :attr:`RobotModel.joint_names` order (pinocchio's
        depth-first tree order, which may differ from the URDF's document order).
    initial_positions:
        Initial positions of the commanded joints [rad or m]; default
        ``clip(0, lower, upper)``.
    kp:
        Position gain [N m/rad or N/m], > 0.
    kv:
        Velocity gain [N m s/rad or N s/m]; ``<= 0`` selects critical damping
        (``damping_ratio``) computed by MuJoCo from the joint-space inertia at
        the model's reference configuration.
    gravity_compensation:
        Cancel gravity on every body (``body.gravcomp = 1``).
    timestep:
        Physics timestep [s].
    t0:
        Time of the initial state [s].
    max_lag:
        Largest time [s] one :meth:`step` simulates; if the caller falls
        further behind, the physics skips the excess (the robot "pauses")
        instead of stalling the caller.
    damping_ratio:
        Damping ratio used when ``kv <= 0``.

    """

    def __init__(self, urdf: str, joint_names: Optional[Sequence[str]] = None,
                 initial_positions: Optional[Sequence[float]] = None,
                 kp: float = 2000.0, kv: float = 0.0,
                 gravity_compensation: bool = True, timestep: float = 1e-3,
                 t0: float = 0.0, max_lag: float = 0.1,
                 damping_ratio: float = 1.0, v_max=None, a_max=None):
        import mujoco  # imported here: the kinematic backend does not need it

        self._mj = mujoco
        robot = RobotModel.from_urdf(urdf, joints=joint_names)
        self._names = robot.joint_names
        n = len(self._names)
        if not (np.isfinite(kp) and kp > 0.0):
            raise ValueError('kp must be finite and > 0, got %r' % kp)
        if not (np.isfinite(timestep) and timestep > 0.0):
            raise ValueError('timestep must be finite and > 0, got %r' % timestep)
        q0 = clip_initial_positions(self._names, robot.lower, robot.upper, initial_positions)
        mimic = mimic_table(robot.urdf_xml)
        held = tuple(name for name in robot.tree_joint_names
                     if name not in mimic and name not in self._names)

        try:
            spec = mujoco.MjSpec.from_string(_without_geometry(robot.urdf_xml))
        except ValueError as exc:
            raise ValueError('MuJoCo cannot load the URDF: %s' % exc) from None
        spec.option.timestep = float(timestep)
        spec.option.integrator = _integrator(mujoco)
        spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
        if gravity_compensation:
            for body in spec.bodies:
                body.gravcomp = 1.0
        try:
            bare = spec.compile()  # for the inertia of each joint, before actuators
        except ValueError as exc:
            raise ValueError('MuJoCo cannot compile the URDF model: %s' % exc) from None
        inertia, armature = self._joint_inertia(bare, self._names + held, q0, kp, timestep)
        for jname, a in zip(self._names + held, armature):
            spec.joint(jname).armature = float(a)
        kvs = (np.full(len(inertia), float(kv)) if kv > 0.0
               else 2.0 * float(damping_ratio) * np.sqrt(kp * (inertia + armature)))
        # Commanded joints first, so that their controls are ctrl[:n]. The control
        # range is the joint range: MuJoCo clamps the setpoint.
        for jname, k in zip(self._names + held, kvs):
            act = spec.add_actuator()
            act.name = jname + '_position'
            act.target = jname
            act.trntype = mujoco.mjtTrn.mjTRN_JOINT
            act.set_to_position(kp=float(kp), kv=float(k))
            act.inheritrange = 1.0
        model = spec.compile()
        data = mujoco.MjData(model)
        self.model, self.data, self.spec = model, data, spec
        self.armature, self.kv = armature[:n], kvs[:n]
        self.inertia = inertia[:n]

        jid = np.array([model.joint(name).id for name in self._names], dtype=np.intp)
        self._qadr = model.jnt_qposadr[jid].copy()
        self._vadr = model.jnt_dofadr[jid].copy()
        self.lower = robot.lower.copy()
        self.upper = robot.upper.copy()

        data.qpos[self._qadr] = q0
        data.ctrl[:n] = q0
        for k, jname in enumerate(held):
            joint = model.joint(jname)
            hq = float(np.clip(0.0, *model.jnt_range[joint.id]))
            data.qpos[model.jnt_qposadr[joint.id]] = hq
            data.ctrl[n + k] = hq
        self._init_mimic_positions()
        mujoco.mj_forward(model, data)

        self._n = n
        self._dt = float(timestep)
        self._max_substeps = max(1, int(round(max_lag / self._dt)))
        self._t_base = float(t0)
        self._nsub = 0
        self._time = float(t0)
        self._position = data.qpos[self._qadr].copy()
        self._velocity = data.qvel[self._vadr].copy()
        self._ctrl = data.ctrl[:n]  # view
        self.sampler = JointTrajectorySampler(self._names, self._position, t0=self._time)
        self._init_setpoint(self.lower, self.upper, v_max, a_max)

    def _joint_inertia(self, model, names, q0, kp, timestep):
        """
        Inertia ``M_jj`` of each joint at the initial configuration, and its armature.

        Armature (module docstring): ``max(0, kp h^2 / MAX_OMEGA_H^2 - M_jj)``.
        """
        mj = self._mj
        data = mj.MjData(model)
        for name, q in zip(self._names, q0):
            data.qpos[model.jnt_qposadr[model.joint(name).id]] = q
        mj.mj_forward(model, data)
        full = np.zeros((model.nv, model.nv))
        if hasattr(data, 'qM'):  # MuJoCo 3: mj_fullM(m, dst, qM)
            mj.mj_fullM(model, full, data.qM)
        else:  # MuJoCo 4: mj_fullM(m, d, dst)
            mj.mj_fullM(model, data, full)
        dof = np.array([model.jnt_dofadr[model.joint(name).id] for name in names], dtype=int)
        inertia = np.diag(full)[dof].copy()
        armature = np.maximum(0.0, kp * timestep ** 2 / MAX_OMEGA_H ** 2 - inertia)
        return inertia, armature

    def _init_mimic_positions(self) -> None:
        """Place mimic joints on their equality constraint q1 = sum_i c_i q2^i."""
        mj, model, data = self._mj, self.model, self.data
        for e in range(model.neq):
            if model.eq_type[e] != mj.mjtEq.mjEQ_JOINT or model.eq_obj2id[e] < 0:
                continue
            q2 = data.qpos[model.jnt_qposadr[model.eq_obj2id[e]]]
            c = model.eq_data[e, :5]
            data.qpos[model.jnt_qposadr[model.eq_obj1id[e]]] = np.polyval(c[::-1], q2)

    lower: np.ndarray
    """Lower joint limits of the commanded joints [rad or m]."""
    upper: np.ndarray
    """Upper joint limits of the commanded joints [rad or m]."""

    @property
    def timestep(self) -> float:
        """Physics timestep [s]."""
        return self._dt

    def step(self, t: float) -> None:
        """
        Advance the physics to time ``t`` [s] in whole timesteps.

        Each substep samples the setpoint at the end of the substep and sets
        it as the position actuators' target (MuJoCo clamps it into the joint
        range), then calls ``mj_step``. Afterwards :attr:`time` is the last substep
        time (<= ``t``, within one timestep). A ``t`` more than
        :attr:`clock_reset_threshold` before :attr:`time` restarts the clock
        there, holding the current position.
        """
        mj, model, data, dt = self._mj, self.model, self.data, self._dt
        nsteps = math.floor((t - self._time) / dt + 1e-6)
        if nsteps <= 0:
            if self._clock_reset(t):
                self._t_base, self._nsub = float(t), 0
            return
        if nsteps > self._max_substeps:
            # Fell behind: skip the excess time (the physics pauses).
            skip = nsteps - self._max_substeps
            self._t_base += skip * dt
            nsteps = self._max_substeps
        ctrl, sample, mj_step = self._ctrl, self.setpoint, mj.mj_step
        t_base, nsub = self._t_base, self._nsub
        for k in range(1, nsteps + 1):
            ctrl[:] = sample(t_base + (nsub + k) * dt)[0]
            mj_step(model, data)
        self._nsub = nsub + nsteps
        self._time = t_base + self._nsub * dt
        data.qpos.take(self._qadr, out=self._position)
        data.qvel.take(self._vadr, out=self._velocity)

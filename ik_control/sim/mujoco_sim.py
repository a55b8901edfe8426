r"""
MuJoCo physics simulated robot with position servos tracking the JTC setpoint.

The URDF is loaded by MuJoCo's own URDF importer (``mujoco.MjSpec.from_string``)
after its ``<visual>`` and ``<collision>`` elements are removed: the simulator
models the rigid-body dynamics of the arm only (no meshes to resolve, no
contacts). Every link that moves needs an ``<inertial>``.

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
  ``effort`` limit (MuJoCo's ``actuatorfrcrange``);
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

from ik_control.sim.base import default_initial_positions, SimRobot
from ik_control.sim.trajectory import JointTrajectorySampler
from ik_control.sim.urdf_joints import parse_urdf_joints, select_joints, strip_geometry
import numpy as np

__all__ = ['MujocoSim']


def _integrator(mujoco):
    """Return MuJoCo's ``discrete`` integrator, or ``implicitfast`` where it is missing."""
    kinds = mujoco.mjtIntegrator
    return getattr(kinds, 'mjINT_DISCRETE', kinds.mjINT_IMPLICITFAST)


class MujocoSim(SimRobot):
    """
    Physics simulation of a URDF robot whose joints track a trajectory setpoint.

    Parameters
    ----------
    urdf_xml:
        URDF as an XML string.
    joint_names:
        Commanded joints (the order of every array); default: all non-fixed,
        non-mimic joints in URDF order.
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

    def __init__(self, urdf_xml: str, joint_names: Optional[Sequence[str]] = None,
                 initial_positions: Optional[Sequence[float]] = None,
                 kp: float = 2000.0, kv: float = 0.0,
                 gravity_compensation: bool = True, timestep: float = 1e-3,
                 t0: float = 0.0, max_lag: float = 0.1,
                 damping_ratio: float = 1.0):
        import mujoco  # imported here: the kinematic backend does not need it

        self._mj = mujoco
        urdf_joints = parse_urdf_joints(urdf_xml)
        names, lower, upper = select_joints(urdf_joints, joint_names or [])
        self._names = tuple(names)
        n = len(names)
        lower = np.array(lower)
        upper = np.array(upper)
        if not (np.isfinite(kp) and kp > 0.0):
            raise ValueError('kp must be finite and > 0, got %r' % kp)
        if not (np.isfinite(timestep) and timestep > 0.0):
            raise ValueError('timestep must be finite and > 0, got %r' % timestep)
        if initial_positions is None:
            q0 = default_initial_positions(lower, upper)
        else:
            q0 = np.array(initial_positions, dtype=float).reshape(-1)
            if q0.shape != (n,):
                raise ValueError('initial_positions has %d values for %d joints'
                                 % (q0.size, n))
            q0 = np.clip(q0, lower, upper)

        held = [j for j in urdf_joints
                if j.joint_type in ('revolute', 'continuous', 'prismatic')
                and j.mimic is None and j.name not in self._names]

        try:
            spec = mujoco.MjSpec.from_string(strip_geometry(urdf_xml))
        except ValueError as exc:
            raise ValueError('MuJoCo cannot load the URDF: %s' % exc) from None
        spec.option.timestep = float(timestep)
        spec.option.integrator = _integrator(mujoco)
        spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
        if gravity_compensation:
            for body in spec.bodies:
                body.gravcomp = 1.0
        # Commanded joints first, so that their controls are ctrl[:n]. The
        # control range is the joint range: MuJoCo clamps the setpoint.
        ranges = {j.name: (j.lower, j.upper) for j in urdf_joints}
        for jname in list(self._names) + [j.name for j in held]:
            act = spec.add_actuator()
            act.name = jname + '_position'
            act.target = jname
            act.trntype = mujoco.mjtTrn.mjTRN_JOINT
            if kv > 0.0:
                act.set_to_position(kp=float(kp), kv=float(kv))
            else:
                act.set_to_position(kp=float(kp), dampratio=float(damping_ratio))
            lo, hi = ranges[jname]
            if np.isfinite(lo) and np.isfinite(hi):
                act.ctrlrange = [lo, hi]
                act.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
            else:
                act.ctrllimited = mujoco.mjtLimited.mjLIMITED_FALSE
        try:
            model = spec.compile()
        except ValueError as exc:
            raise ValueError('MuJoCo cannot compile the URDF model: %s' % exc) from None
        data = mujoco.MjData(model)
        self.model, self.data, self.spec = model, data, spec

        jid = np.array([model.joint(name).id for name in self._names], dtype=np.intp)
        self._qadr = model.jnt_qposadr[jid].copy()
        self._vadr = model.jnt_dofadr[jid].copy()
        limited = model.jnt_limited[jid].astype(bool)
        self.lower = np.where(limited, model.jnt_range[jid, 0], -np.inf)
        self.upper = np.where(limited, model.jnt_range[jid, 1], np.inf)

        data.qpos[self._qadr] = q0
        data.ctrl[:n] = q0
        for k, j in enumerate(held):
            hq = float(np.clip(0.0, j.lower, j.upper))
            data.qpos[model.jnt_qposadr[model.joint(j.name).id]] = hq
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
    """Lower joint limits of the commanded joints [rad or m] (-inf if unlimited)."""
    upper: np.ndarray
    """Upper joint limits of the commanded joints [rad or m] (+inf if unlimited)."""

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
        ctrl, sample, mj_step = self._ctrl, self.sampler.sample, mj.mj_step
        t_base, nsub = self._t_base, self._nsub
        for k in range(1, nsteps + 1):
            ctrl[:] = sample(t_base + (nsub + k) * dt)[0]
            mj_step(model, data)
        self._nsub = nsub + nsteps
        self._time = t_base + self._nsub * dt
        data.qpos.take(self._qadr, out=self._position)
        data.qvel.take(self._vadr, out=self._velocity)

"""
The controller's ``ik_method``: a pose goal's joint step by CCD, HAL or the closed form.

With ``ik_method: velocity`` (the default) the velocity law gives each tick's joint change
``dq = J^# K e dt``. The classical methods of Parent's notes give it instead
(:class:`ClassicalMode`, called by :class:`~ik_control.control.controller.ResolvedRateController`
once a tick with the law's ``dq``), and everything after is unchanged: the nullspace
obstacle avoidance, the position-IK fallback, Welman's constraints
(:mod:`~ik_control.control.constrained_motion`), then the same velocity, acceleration and
position limiter and command window. So the limits are kept whatever the method.

* ``ccd``: each tick, ``ccd_sweeps`` CCD sweeps from the commanded state toward every
  effector's target together (:class:`~ik_control.ik.tree_ccd.TreeCcd`: SIMON's torso
  takes the angle best for both hands), each joint change in a sweep bounded by
  ``v_max / K``; the sweeps' change ``D`` is where CCD would go, and the arm moves toward
  it at the convergence rate: ``q_dot = K D`` (as the law's ``J^# K e``). Sweeps stop
  within a tenth of the goal tolerances, so the arm comes to rest on the goal.
* ``hal``: when a goal arrives, HAL's closed form and 3 damped least-squares refinement
  steps (:class:`~ik_control.ik.hal.HalArm`) give the goal configuration of that
  effector's 7-joint arm; the arm moves toward it in joint space, ``q_dot = K (q* - q)``.
  Joints that are no goal's arm (SIMON's torso, an arm whose hand holds) keep still.
* ``analytic``: the closed form alone, where it is exact: 7-joint arms whose three
  shoulder axes and three wrist axes meet in points (the WAM, SIMON's arms; elsewhere,
  e.g. the Panda, use ``hal``), and a chain of two parallel revolute joints with one end
  effector (the law of cosines, :class:`~ik_control.ik.two_link.PlanarTwoLink`).

Both joint-space motions are scaled as a whole (the direction kept) so that no joint is
faster than its limit nor faster than it can brake from before ``D`` is covered:
``|q_dot_i| <= min(v_max_i, sqrt(2 c a_max_i |D_i|))`` (``c`` =
:data:`~ik_control.control.robot_link.JOIN_BRAKING`), which the limiter then enforces
exactly. Twists and moving goals (paths, velocity profiles) always use the velocity law:
they are velocities with a feed-forward; as long as one effector follows one, the tick's
step is the law's.
"""

from ik_control.control.goal_set import MODE_MOTION, MODE_POSE, MODE_TWIST
from ik_control.control.robot_link import JOIN_BRAKING
from ik_control.ik.hal import HalArm
from ik_control.ik.tree_ccd import TreeCcd
from ik_control.ik.two_link import PlanarTwoLink
from ik_control.validation import InputError, ModelError
import numpy as np

IK_METHODS = ('velocity', 'ccd', 'hal', 'analytic')
HAL_REFINE_STEPS = 3        # damped least-squares steps after HAL's closed form
# the closed form counts as exact when the shoulder and wrist axes meet within this [m]
EXACT_AXIS_RESIDUAL = 1e-9
# CCD sweeps stop within this fraction of the goal tolerances [-]
CCD_TOLERANCE_FRACTION = 0.1


def check_config(config):
    """Raise :class:`InputError` for a bad ``ik_method``, or ``ccd_sweeps`` not an integer."""
    if config.ik_method not in IK_METHODS:
        raise InputError(f"ik_method '{config.ik_method}' is not one of {list(IK_METHODS)}")
    sweeps = config.ccd_sweeps  # its range: ControllerConfig.ccd_sweeps
    if isinstance(sweeps, bool) or not isinstance(sweeps, (int, np.integer)):
        raise InputError(f'ccd_sweeps must be an integer, got {sweeps!r}')


def build(old, model, config):
    """Return the :class:`ClassicalMode` for ``config`` (``old`` if it fits), or None."""
    if config.ik_method == 'velocity':
        return None
    if old is not None and old.method == config.ik_method:
        old.sweeps = int(config.ccd_sweeps)
        return old
    try:
        return ClassicalMode(model, config.ik_method, config.ccd_sweeps)
    except ModelError as exc:
        raise InputError(f"ik_method '{config.ik_method}': {exc}") from None


class ClassicalMode:
    """One of ``ccd``, ``hal``, ``analytic`` as the controller's step (module docstring)."""

    def __init__(self, model, method, sweeps=10):
        if method not in IK_METHODS[1:]:
            raise InputError(f"classical ik_method '{method}' is not one of {IK_METHODS[1:]}")
        self.model = model
        self.method = method
        self.sweeps = int(sweeps)
        ne = len(model.end_effectors)
        self.ccd = None
        self.arms = []
        self.two_link = None
        if method == 'ccd':
            self.ccd = TreeCcd(model)
        elif method == 'analytic' and model.nq == 2 and ne == 1:
            self.two_link = PlanarTwoLink(model)
        else:
            self.arms = [HalArm(model, e) for e in range(ne)]
            joints = np.concatenate([a.arm for a in self.arms])
            if np.unique(joints).size != joints.size:
                raise ModelError("HAL solves each end effector's 7-joint arm alone; these "
                                 'arms share joints')
            if method == 'analytic':
                for arm in self.arms:
                    residual = arm.home(model.center)['axis_residual']
                    if residual > EXACT_AXIS_RESIDUAL:
                        raise ModelError(
                            f"the closed form is not exact on '{arm.frame_name}': its "
                            f'shoulder or wrist axes miss a common point by {residual:.3g} m '
                            '(use hal, which refines it)')
        self._alpha = None
        self._alpha_targets = None
        self._goal_q = None                 # HAL / analytic: goal configuration
        self._goal_targets = np.full((ne, 4, 4), np.nan)
        self._braking = np.empty(model.nq)
        self._compile()

    def _compile(self):
        """Solve once at the centre, so that the method's kernels are ready before a tick."""
        model = self.model
        q = model.center.copy()
        T = model.frame_placements(q)
        if self.ccd is not None:
            self.ccd.solve(q, T, max_iterations=1, tolerance=1e-3, rotation_tolerance=1e-2,
                           max_joint_step=np.ones(model.nq), alpha=self.ccd.weights(q))
        steps = HAL_REFINE_STEPS if self.method == 'hal' else 0
        for e, arm in enumerate(self.arms):
            arm.solve(q, T[e][:3, 3], T[e][:3, :3], refine_steps=steps)
        if self.two_link is not None:
            self.two_link.solve(T[0][:3, 3], q_current=q)

    # ------------------------------------------------------------------ the tick
    def joint_step(self, tick, dq):
        """
        Return the joint change of this tick (replacing the law's ``dq``).

        Returns ``dq`` unchanged while an effector follows a twist or a moving goal, or
        no effector has a pose goal.
        """
        mode = tick.goals.mode
        if np.any((mode == MODE_TWIST) | (mode == MODE_MOTION)) or not np.any(
                mode == MODE_POSE):
            return dq
        q = tick.q
        if self.ccd is not None:
            delta = self._ccd_change(tick, q)
        else:
            delta = self._closed_form_goal(tick, q, mode == MODE_POSE) - q
        return self._toward(tick, delta) * tick.dt

    def _ccd_change(self, tick, q):
        targets = tick.goals.targets
        if self._alpha_targets is None or not np.array_equal(targets, self._alpha_targets):
            self._alpha = self.ccd.weights(q)       # per goal: weights from where it starts
            self._alpha_targets = targets.copy()
        cfg = tick.config
        result = self.ccd.solve(q, targets, max_iterations=self.sweeps,
                                tolerance=CCD_TOLERANCE_FRACTION * cfg.goal.position_tolerance,
                                rotation_tolerance=CCD_TOLERANCE_FRACTION
                                * cfg.goal.orientation_tolerance,
                                max_joint_step=tick.v_max / cfg.gain, alpha=self._alpha)
        return result.q - q

    def _closed_form_goal(self, tick, q, pursued):
        """Goal configuration: each pursued effector's arm by the closed form, once per goal."""
        targets = tick.goals.targets
        if self._goal_q is None:
            self._goal_q = q.copy()
        goal = self._goal_q
        cfg = tick.config
        for e in range(len(self._goal_targets)):
            arm = self.arms[e].arm if self.arms else np.arange(self.model.nq)
            if not pursued[e]:
                goal[arm] = q[arm]              # a holding hand's arm keeps still
                self._goal_targets[e] = np.nan
                continue
            T = targets[e]
            if np.array_equal(T, self._goal_targets[e]):
                continue
            self._goal_targets[e] = T
            here = tick.frame_T[e]
            pose = bool(self.model.task_is_pose[e])
            if (np.linalg.norm(here[:3, 3] - T[:3, 3]) <= cfg.goal.position_tolerance
                    and (not pose or _angle(here[:3, :3], T[:3, :3])
                         <= cfg.goal.orientation_tolerance)):
                goal[arm] = q[arm]              # there already: no other elbow, no motion
                continue
            if self.two_link is not None:
                goal[:] = np.clip(self.two_link.solve(T[:3, 3], q_current=q)[0],
                                  self.model.lower, self.model.upper)
                continue
            rotation = T[:3, :3] if pose else here[:3, :3]
            steps = HAL_REFINE_STEPS if self.method == 'hal' else 0
            goal[arm] = self.arms[e].solve(q, T[:3, 3], rotation, refine_steps=steps).q[arm]
        return goal

    def _toward(self, tick, delta):
        """``K delta`` scaled as a whole within ``v_max`` and the braking speed (docstring)."""
        v = tick.config.gain * delta
        speed = np.abs(v)
        np.sqrt(2.0 * JOIN_BRAKING * tick.a_max * np.abs(delta), out=self._braking)
        cap = np.minimum(tick.v_max, self._braking)
        moving = speed > 0.0
        if moving.any():
            scale = min(1.0, float(np.min(cap[moving] / speed[moving])))
            v *= scale
        return v


def _angle(Ra, Rb):
    """Rotation angle between two rotation matrices [rad]."""
    return float(np.arccos(np.clip(0.5 * (np.trace(Ra.T @ Rb) - 1.0), -1.0, 1.0)))

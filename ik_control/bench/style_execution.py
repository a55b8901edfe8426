"""
How ``bench style`` runs a joint trajectory on SIMON: as a user would, within its limits.

:func:`execute_plan` slows the plan down uniformly, has ``ik_controller``'s joint-trajectory
law follow it with SIMON's shipped limits (:func:`follow`), and executes the commands on the
MuJoCo SIMON or as they are (:func:`execute`), with ``sim_robot``'s setpoint saturation.
"""

from typing import NamedTuple

from ik_control import robots
from ik_control.control import limits as limits_mod
from ik_control.control.joint_goal import JointGoal
import numpy as np

DT = 1e-3  # control and physics step [s]


class Limits(NamedTuple):
    """SIMON's shipped limits: ik_controller's and the robot's (``config/simon.yaml``)."""

    gain: float             # the controller's convergence rate K [1/s]
    margin: float           # position_margin [rad]
    v_max: np.ndarray       # the controller's velocity limits [rad/s]
    a_max: np.ndarray       # the controller's acceleration limits [rad/s^2]
    robot_v_max: np.ndarray  # sim_robot's saturation: URDF velocity limits [rad/s]
    robot_a_max: np.ndarray  # sim_robot's saturation: its max_acceleration [rad/s^2]


def simon_limits(model):
    """Read :class:`Limits` from the shipped parameter file, as the nodes read it."""
    import os

    from ik_control.bench.reach import controller_config
    from ik_control.launch_util import node_parameters

    config = controller_config('simon')
    v_max, a_max = limits_mod.joint_limits(model, config)  # the controller's own reading
    robot = node_parameters(os.path.join(robots.share_directory(), 'config', 'simon.yaml'),
                            'sim_robot')
    robot_a = np.broadcast_to(np.array(robot['max_acceleration'], dtype=float), (model.nq,))
    return Limits(config.gain, config.limits.position_margin, v_max, a_max,
                  model.velocity_limit.copy(), robot_a.copy())


def follow(model, limits, times, positions, velocities=None, max_seconds=30.0):
    """
    Return the command stream ``ik_controller`` makes of a joint trajectory (Q, V, limited).

    Its joint-trajectory law (:mod:`ik_control.control.joint_goal`, the functions the
    controller calls): every ``DT``, ``v_des = v_ref(t) + K (q_ref(t) - q_c)`` (cubic
    Hermite between points with velocities, linear between points without), limited by
    :func:`~ik_control.control.limits.limit_velocity` (velocity, acceleration, the position
    limits less the margin) and integrated by the trapezoidal rule, from the plan's first
    point at rest until the plan is done (past its end, within 1 mm of its last point, at
    rest), or past its end with every joint below 0.01 rad/s for 20 ms (K times the 1 mm:
    a last point inside the margin band, where the limiter holds the joint off and lets it
    creep toward the bound, is never within 1 mm). Open loop (the robot where commanded,
    as ``bench reach`` runs the controller): the node commits the same knots ``lead``
    ahead of its clock. ``Q``, ``V``: (k, n) [rad, rad/s] every ``DT`` from 0; ``limited``:
    the ticks at which the limiter changed the desired velocity (a plan within the limits
    has few: its start from rest).
    """
    goal = JointGoal(model, model.joint_names, times, positions, velocities, 0.0)
    q = np.array(goal.positions[0], dtype=float)
    v = np.zeros_like(q)
    v_des, v_out, q_next = np.zeros_like(q), np.zeros_like(q), np.zeros_like(q)
    rows_q, rows_v = [q.copy()], [v.copy()]
    limited = still = 0
    scaled = limits_mod.VELOCITY_SCALED | limits_mod.ACCELERATION_LIMITED
    for k in range(1, int(round(max_seconds / DT)) + 1):
        t = k * DT
        goal.desired_velocity(t, q, limits.gain, v_des)
        flags = limits_mod.limit_velocity(q, v, v_des, model.lower, model.upper, limits.margin,
                                          limits.v_max, limits.a_max, DT, v_out)
        limited += bool(flags & scaled)
        limits_mod.integrate(q, v, v_out, DT, q_next)
        q[:] = q_next
        v[:] = v_out
        rows_q.append(q.copy())
        rows_v.append(v.copy())
        still = still + 1 if t >= goal.end_time and not np.any(np.abs(v) > 1e-2) else 0
        if goal.done(t, q, v) or still >= 20:
            break
    return np.array(rows_q), np.array(rows_v), limited


def execute(urdf, joint_names, positions, velocities=None, kp=2000.0, v_max=None,
            a_max=None):
    """
    Run a 1 kHz trajectory on the MuJoCo SIMON (servo ``kp`` [N m/rad]); measure it.

    ``v_max``, ``a_max`` [rad/s, rad/s^2]: the robot-side setpoint saturation
    (:mod:`ik_control.sim.saturation`, as ``sim_robot`` enforces it); None: off (the
    position limits only). Returns the measured positions, one row per trajectory sample,
    and the saturation's clamps.
    """
    from ik_control.sim.mujoco_sim import MujocoSim

    if velocities is None:
        velocities = np.gradient(positions, DT, axis=0)
    sim = MujocoSim(urdf, joint_names=joint_names, initial_positions=positions[0], kp=kp,
                    v_max=v_max, a_max=a_max)
    n = positions.shape[0]
    sim.set_trajectory(joint_names, np.arange(1, n) * DT, positions[1:], velocities[1:])
    measured = np.empty_like(positions)
    measured[0] = sim.position
    for k in range(1, n):
        sim.step(k * DT)
        measured[k] = sim.position
    return measured, sim.clamps


def execute_plan(model, limits, urdf, times, positions, velocities=None, executor='mujoco',
                 kp=2000.0):
    """
    Run a plan as a user runs it on SIMON: :func:`follow`, then the saturating :func:`execute`.

    Returns ``(measured, clamps, limited)``: the measured positions every ``DT`` (the
    controller's commands themselves for ``executor`` 'kinematic', with no clamps), the
    robot's clamps and the controller's limited ticks.
    """
    q, v, limited = follow(model, limits, times, positions, velocities)
    if executor != 'mujoco':
        return q, 0, limited
    measured, clamps = execute(urdf, model.joint_names, q, v, kp, limits.robot_v_max,
                               limits.robot_a_max)
    return measured, clamps, limited

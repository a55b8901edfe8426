"""
The controller core in a closed loop with a perfect kinematic robot, without ROS.

Each tick at ``now = k dt``: the robot reports where it is (``set_joint_state``),
``before_tick(controller, now)`` sets the goals (a key-pose path's next sample, a
profile's pose, obstacle weights), ``update(now)`` computes the command window, and the
robot is where the window says one tick later (``Command.at(dt)``). The record holds the
joint positions and the end-effector poses at ``now + dt``.

:func:`tracking_config` is the configuration for following a moving target exactly:
gain = rate, SAM's error (eq. 20-21), no clamping, and commands one tick ahead (no
transport latency to absorb here). The target set at ``now`` is then reached at
``now + dt``: pass the motion's sample at ``now + dt``, and compare it with the record.
"""

from dataclasses import dataclass

from ik_control.control.config import ControllerConfig
from ik_control.ik.solver import SolverConfig
import numpy as np


def tracking_config(rate_hz, overrides=None):
    """
    Return the ControllerConfig of SAM eq. 20 at ``rate_hz`` [Hz] (module docstring).

    ``overrides``: ``{dotted field name: value}`` (:meth:`ControllerConfig.updated`).
    """
    solver = SolverConfig(error_mode='axis_cross', clamp_error=0.0, clamp_error_rotation=0.0,
                          max_joint_step=0.0)
    config = ControllerConfig(rate_hz=rate_hz, gain=rate_hz, max_expected_latency=1.0 / rate_hz,
                              solver=solver)
    return config.updated(overrides or {})


@dataclass
class LoopRecord:
    """Times [s] (k,), joint positions (k, nq) [rad or m], effector poses (k, e, 4, 4)."""

    times: np.ndarray
    q: np.ndarray
    poses: np.ndarray
    status: np.ndarray


def run_closed_loop(controller, q0, duration, before_tick, progress=None):
    """
    Run ``controller`` from joint values ``q0`` for ``duration`` [s] (module docstring).

    ``progress(fraction)`` is called about every tenth of the run.
    """
    model = controller.model
    dt = controller.dt
    ticks = int(round(duration / dt))
    q = np.array(q0, dtype=float)
    times = np.empty(ticks)
    qs = np.empty((ticks, model.nq))
    poses = np.empty((ticks, len(model.end_effectors), 4, 4))
    status = np.empty(ticks, dtype=np.int64)
    names = model.joint_names
    ws = model.workspace()
    for k in range(ticks):
        now = k * dt
        controller.set_joint_state(names, q, now)
        before_tick(controller, now)
        command = controller.update(now)
        if command is not None:
            q = np.array(command.at(dt)[0])
        ws.update(q, jacobian=False)
        times[k], qs[k], poses[k], status[k] = now + dt, q, ws.frame_T, controller.status
        if progress is not None and ticks >= 10 and k % (ticks // 10) == 0:
            progress(k / ticks)
    return LoopRecord(times, qs, poses, status)

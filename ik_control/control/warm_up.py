"""
The tick's compiled kernels run once before the first tick.

numba compiles a kernel at its first call (or loads it from its cache): a real-time loop
must not spend a tick on that. :func:`warm_up` calls each kernel the tick uses, with the
types it will get, when the controller is built; the solver's buffers are left as they
would be before any tick (test_tick_compiles_nothing checks that no tick compiles).
"""

from ik_control.control import limits
from ik_control.control.cartesian_stage import freeze_pushing
from ik_control.control.command_window import compile_kernels
from ik_control.control.goal_set import GoalSet
from ik_control.control.goal_state import EventQueue
from ik_control.control.robot_link import join_velocity, RobotLink
from ik_control.ik.pose_error import pose_distance
import numpy as np

__all__ = ['warm_up']


def warm_up(model, solver, v_max, a_max, dt):
    """Run each compiled kernel of the tick once for ``model`` (its solver, limits, ``dt``)."""
    q = model.center.copy()
    solver.ws.update(q, jacobian=False)
    solver.step(q, solver.ws.frame_T.copy())
    zero, v = np.zeros(model.nq), np.zeros(model.nq)
    limits.limit_velocity(q, zero, zero.copy(), model.lower, model.upper, 0.0, v_max, a_max,
                          dt, v)
    limits.integrate(q, zero, v, dt, q.copy())
    join_velocity(q, q, v_max, a_max, v)  # re-seed, fallback approach
    freeze_pushing(q, zero, model.lower, model.upper, v)  # the law's re-solve at bounds
    link = RobotLink(model, EventQueue())  # the joint_states checks: bounds, then speed
    for _ in range(2):
        link.take(link.positions(model.joint_names, q), 0.0, None)
    GoalSet(model.end_effector_names, EventQueue()).judge(solver.err_pos, solver.err_rot,
                                                          zero, 0.0, 1.0)
    frame_T = solver.ws.frame_T
    pose_distance(frame_T[0], frame_T[0])  # the referee's check of a reached goal
    compile_kernels(model.lower, model.upper, q, a_max, dt)
    model.tree_configuration(q)  # (the position IK's retries, the collision checks)
    solver.reset_targets()

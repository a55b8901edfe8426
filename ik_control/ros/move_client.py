"""
``ik_control move``: send a MoveToPose goal to a running ik_controller and wait for it.

For users without ``ros2 action send_goal``: one ``--xyz``/``--quat`` pair per end
effector (``--ee`` names them, in the same order; a robot with one end effector needs
none), in ``--frame`` (default the robot's base frame). Feedback is printed as it comes
(about 10 Hz): per effector the position [mm] and orientation [mrad] errors, then the
controller's status codes. Ctrl-C cancels the goal (the arm holds where it is) and waits
for the result. Exit status: 0 SUCCEEDED, 1 any other result, 2 bad arguments or no
server.
"""

from ik_control import robots
from ik_control.ros.move_to_pose_server import load_action_type
from ik_control.validation import finite_vector, InputError, unit_quaternion
import rclpy
from rclpy.action import ActionClient
from rclpy.executors import SingleThreadedExecutor

DEFAULT_ACTION = '/ik_controller/move_to_pose'
EXIT_FAILED = 1
EXIT_USAGE = 2


def result_names(action_type):
    """error_code value -> constant name of the action's result (SUCCEEDED, ...)."""
    result = action_type.Result
    return {getattr(result, name): name for name in dir(result)
            if name.isupper() and isinstance(getattr(result, name), int)}


def build_goal(action_type, robot, end_effectors, xyz, quat, frame=None,
               position_tolerance=0.0, orientation_tolerance=0.0, time_limit=0.0):
    """
    Build a MoveToPose goal for bundled ``robot`` (InputError on inconsistent arguments).

    ``xyz`` [m] and ``quat`` (x y z w, unit) are lists with one entry per end effector;
    ``end_effectors`` may be empty for a robot with one end effector. Tolerances [m, rad]
    of 0 take the node's; ``time_limit`` [s] 0 is none.
    """
    if robot not in robots.SETUPS:
        raise InputError(f"unknown robot '{robot}'; bundled: {sorted(robots.SETUPS)}")
    setup = robots.SETUPS[robot]
    names = list(end_effectors)
    if not names:
        if len(setup.end_effectors) != 1:
            raise InputError(f'{robot} has end effectors {list(setup.end_effectors)}: name '
                             'each with --ee, one --xyz/--quat pair each')
        names = [setup.end_effectors[0]]
    if not (len(names) == len(xyz) == len(quat)):
        raise InputError(f'{len(names)} end effectors, {len(xyz)} --xyz and {len(quat)} '
                         '--quat: give one --xyz and one --quat per end effector')
    if time_limit < 0.0 or position_tolerance < 0.0 or orientation_tolerance < 0.0:
        raise InputError('tolerances and --time-limit must be >= 0')
    from geometry_msgs.msg import PoseStamped
    from ik_control.ros.conversions import sec_to_duration

    goal = action_type.Goal()
    goal.end_effectors = names
    for p, q in zip(xyz, quat):
        p = finite_vector(p, 3, '--xyz')
        q = unit_quaternion(q, '--quat')
        target = PoseStamped()
        target.header.frame_id = frame or setup.base_frame
        target.pose.position.x, target.pose.position.y, target.pose.position.z = map(float, p)
        o = target.pose.orientation
        o.x, o.y, o.z, o.w = map(float, q)
        goal.targets.append(target)
    if position_tolerance > 0.0:
        goal.position_tolerance = [float(position_tolerance)]
    if orientation_tolerance > 0.0:
        goal.orientation_tolerance = [float(orientation_tolerance)]
    goal.time_limit = sec_to_duration(time_limit)
    return goal


def format_feedback(feedback):
    """One line of feedback: elapsed time, errors per effector [mm, mrad], status codes."""
    t = feedback.elapsed.sec + 1e-9 * feedback.elapsed.nanosec
    parts = [f'{t:6.2f} s']
    for ee, p, r, ok in zip(feedback.end_effectors, feedback.position_errors,
                            feedback.orientation_errors, feedback.within_tolerance):
        parts.append(f'{ee}: {p * 1e3:8.2f} mm {r * 1e3:8.2f} mrad{" ok" if ok else ""}')
    parts.append(','.join(feedback.status_codes) or 'OK')
    return '  '.join(parts)


def run(goal_args, action_name=DEFAULT_ACTION, server_timeout=10.0, out=print):
    """
    Send the goal built by ``build_goal(action_type, **goal_args)`` and wait for its result.

    Returns the exit status (module docstring).
    """
    action_type = load_action_type()
    if action_type is None:
        raise InputError('ik_control_interfaces is not installed: run make venv, or build it '
                         'in your workspace (README)')
    goal = build_goal(action_type, **goal_args)
    names = result_names(action_type)
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node('ik_control_move', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    client = ActionClient(node, action_type, action_name)
    try:
        if not client.wait_for_server(timeout_sec=server_timeout):
            raise InputError(f"no MoveToPose server on '{action_name}' within "
                             f'{server_timeout:g} s (is ik_controller running?)')
        sent = client.send_goal_async(goal, feedback_callback=lambda msg: out(
            format_feedback(msg.feedback)))
        executor.spin_until_future_complete(sent)
        handle = sent.result()
        if not handle.accepted:
            out('goal rejected')
            return EXIT_FAILED
        result_future = handle.get_result_async()
        try:
            executor.spin_until_future_complete(result_future)
        except KeyboardInterrupt:
            out('canceling ...')
            executor.spin_until_future_complete(handle.cancel_goal_async(), timeout_sec=5.0)
            executor.spin_until_future_complete(result_future, timeout_sec=10.0)
        if not result_future.done():
            out('no result')
            return EXIT_FAILED
        result = result_future.result().result
        errors = '  '.join(f'{ee}: {p * 1e3:.2f} mm {r * 1e3:.2f} mrad' for ee, p, r in
                           zip(result.end_effectors, result.position_errors,
                               result.orientation_errors))
        out(f'result: {names.get(result.error_code, result.error_code)}: {result.message}'
            + (f'  ({errors})' if errors else ''))
        return 0 if result.error_code == action_type.Result.SUCCEEDED else EXIT_FAILED
    finally:
        client.destroy()
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)

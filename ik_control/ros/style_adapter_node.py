"""
``style_adapter`` node: one exemplar motion, adapted to a point known at run time.

Gielniak, Liu & Thomaz's style-preserving adaptation (:mod:`ik_control.style`): the
exemplar (``motion``, e.g. SIMON's stylized pick-and-place) is velocity-modulated (eq. 2)
from the robot's actual state so that its end effector meets the goal point at the
exemplar's constraint instant, at joint values found by TSFKS (eq. 1).

* subscribes ``joint_states`` (the start: the latest state of every joint of the robot)
  and ``~/goal`` (geometry_msgs/PointStamped, in ``base_frame`` or any frame of the robot
  model, placed by forward kinematics at the current state);
* publishes the adapted motion on ``execute_topic`` (trajectory_msgs/JointTrajectory,
  header stamp zero = start now, every controlled joint: those the motion does not move
  hold their current value), by default ``ik_controller/joint_trajectory``, so that the
  controller, the one node that commands the robot, runs it within its limits;
* ``/diagnostics``, on every change and again each second (``DIAGNOSTICS_PERIOD``, as
  diagnostic_updater does, so a monitor that starts late still sees it): whether a joint
  state has come (``joint_state_received``; goals before it are refused), how many
  subscriptions this node sees on ``execute_topic`` (``plan_subscribers``: a plan sent
  before the controller's is matched is lost to it), and OK with the
  figures of the last adaptation (constraint instant [s],
  search error [m], time taken [ms], the uniform slow-down that keeps the motion within
  the joints' velocity and acceleration limits, how far it was clipped into the joint
  limits [rad]: eq. 2 scales the exemplar's profiles from wherever the robot is, which
  can take a joint that the exemplar runs to its stop a little past it), or ERROR with
  why a goal was refused (no joint state yet, an unknown frame, a point that is not
  finite, a point the search cannot place).
"""

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PointStamped
from ik_control import robots
from ik_control.ros.conversions import arrays_to_joint_trajectory, joint_state_positions
from ik_control.ros.frame_resolver import FrameResolver
from ik_control.ros.parameters import declare_all, Param, run_node, StartupError
from ik_control.style.adapter import StyleAdapter
from ik_control.style.modulation import time_scale
from ik_control.validation import finite_vector, IkControlError, InputError
import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

NAME = 'style_adapter'
PARAMETERS = {
    'robot': Param('simon', 'bundled robot the motion is for (simon)'),
    'motion': Param('pick_and_place', 'exemplar: a name in config/motions or a file'),
    'start': Param('', "where in the exemplar the motion begins: an instant's name or '' "
                   '(its beginning)'),
    'output_period': Param(0.01, 'time between the published points [s] (the exemplar is '
                           'sampled at 1 ms; the controller reads at most 1024 points)',
                           0.001, 0.1),
    'execute_topic': Param('ik_controller/joint_trajectory', "topic of ik_controller's "
                           'joint-trajectory input (one node commands the robot)'),
    'max_acceleration': Param(5.0, 'joint acceleration the adapted motion may ask for '
                              "[rad/s^2] (the controller's limits.max_acceleration); a "
                              'faster one is slowed down uniformly', 0.01, 1000.0),
}
MAX_POINTS = 1024  # what the controller's joint-trajectory reader takes
DIAGNOSTICS_PERIOD = 1.0  # the last status is published again this often [s]


class StyleAdapterNode(Node):
    """The style adapter node (module docstring)."""

    def __init__(self, **kwargs):
        super().__init__(NAME, **kwargs)
        self.values = v = declare_all(self, PARAMETERS)
        try:
            self.model = robots.robot(v['robot'])
            self.adapter = StyleAdapter(v['motion'], model=self.model)
        except IkControlError as exc:
            raise StartupError(str(exc)) from None
        # the exemplar's joints among the robot's
        self.cols = [self.model.joint_names.index(j) for j in self.adapter.exemplar.joint_names]
        self.step = max(1, int(round(v['output_period'] / self.adapter.dt)))
        samples = -(-len(self.adapter.times) // self.step) + 1
        if samples > MAX_POINTS:
            raise StartupError(f"motion '{v['motion']}' would be {samples} points at "
                               f"output_period {v['output_period']} s; at most {MAX_POINTS}")
        # the first adaptation compiles the search (seconds): done now, not at the first goal
        a = self.adapter
        a.adapt(self._exemplar_point(), self.model.joint_names, self.model.center)
        self.q = None
        # goal frames: other model frames at the measured state, tf2 beyond
        self.frames = FrameResolver(self.model, self, lambda: self.q)
        self.adaptations = 0
        self.create_subscription(JointState, 'joint_states', self._on_state, 10)
        self.create_subscription(PointStamped, '~/goal', self._on_goal, 10)
        self.pub = self.create_publisher(JointTrajectory, v['execute_topic'], 10)
        self.pub_diag = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._status = (DiagnosticStatus.WARN, 'waiting for joint_states', {})
        self.create_timer(DIAGNOSTICS_PERIOD, lambda: self._report(*self._status))
        self.get_logger().info(f"motion '{self.adapter.exemplar.name}' "
                               f'({self.adapter.times[-1]:.2f} s) ready; goals on ~/goal')

    def _exemplar_point(self):
        """Where the exemplar itself puts its end effector at its first constraint instant."""
        a = self.adapter
        q = self.model.center.copy()
        q[self.cols] = a.pose_at(min(a.exemplar.instants, key=a.exemplar.instants.get))
        # a contiguous copy, as a goal's point is: numba compiles per array layout
        return self.model.pin_frame_placement(q, a.exemplar.end_effector)[:3, 3].copy()

    def _on_state(self, msg):
        q = joint_state_positions(msg, self.model.joint_names)
        if q is not None:
            first = self.q is None
            self.q = q
            if first:
                self.get_logger().info('joint_states received: goals are adapted from here')
                self._report(DiagnosticStatus.OK, 'ready: joint_states received',
                             {'adaptations': str(self.adaptations)})

    def _on_goal(self, msg):
        try:
            if self.q is None:
                raise InputError('no joint state received yet')
            p = msg.point
            point = finite_vector([p.x, p.y, p.z], 3, 'goal point')
            T = self.frames.to_base(msg.header.frame_id, np.eye(4), msg.header.stamp)
            point = T[:3, :3] @ point + T[:3, 3]
            start = self.values['start'] or None
            motion = self.adapter.adapt(point, self.model.joint_names, self.q, start=start)
        except IkControlError as exc:
            self._report(DiagnosticStatus.ERROR, f'goal refused: {exc}')
            self.get_logger().warning(f'goal refused: {exc}', throttle_duration_sec=1.0)
            return
        scale = self._time_scale(motion)  # of the motion as eq. 2 made it, then clipped
        clipped = self._clip_to_limits(motion)
        self.pub.publish(self._trajectory(motion))
        self.adaptations += 1
        figures = {'constraint_time_s': f'{motion.constraint_time:.3f}',
                   'search_error_m': f'{motion.search_error:.4f}',
                   'clipped_rad': f'{clipped:.4f}',
                   'time_scale': f'{scale:.3f}',
                   'adaptation_ms': f'{motion.seconds * 1e3:.1f}',
                   'adaptations': str(self.adaptations)}
        self._report(DiagnosticStatus.OK, 'adapted trajectory published', figures)
        self.get_logger().info(
            f'goal {np.round(point, 3).tolist()} m: adapted in {motion.seconds * 1e3:.1f} ms, '
            f'met at {motion.constraint_time:.2f} s, search error {motion.search_error:.4f} m'
            + (f', clipped {clipped:.3f} rad into the joint limits' if clipped else ''))

    def _clip_to_limits(self, motion):
        """
        Clip the adapted motion into the joint limits; return the largest clip [rad].

        The controller refuses a trajectory outside the limits, and the robot cannot go
        past its stops. Eq. 2 scales an exemplar that runs up to a limit (SIMON's
        pick-and-place takes right_shoulder_z to its -0.6 rad stop before placing) a
        little past it, by how much depends on the start: there the joint rests on its
        stop (velocity zero), and the amount is reported (``clipped_rad``).
        """
        clipped = np.clip(motion.positions, self.model.lower[self.cols],
                          self.model.upper[self.cols])
        amount = float(np.max(np.abs(clipped - motion.positions)))
        motion.velocities[clipped != motion.positions] = 0.0
        motion.positions = clipped
        return amount

    def _time_scale(self, motion):
        """
        Slow the motion down uniformly to the joints' limits; return the factor (>= 1).

        The exemplar was animated for the character, not for this robot's limits (SIMON's
        pick-and-place asks up to 15 rad/s^2). Played at ``1/s`` of its speed, velocities
        scale by ``1/s`` and accelerations by ``1/s^2``: ``s`` is the least factor that
        keeps them within the URDF velocity limits and ``max_acceleration``. The shape,
        the style, is the same; the constraint instant comes ``s`` times later.
        """
        scale = time_scale(motion.velocities, self.adapter.dt,
                           self.model.velocity_limit[self.cols], self.values['max_acceleration'])
        motion.times = motion.times * scale
        motion.velocities = motion.velocities / scale
        motion.constraint_time *= scale
        return scale

    def _trajectory(self, motion):
        """Every joint of the robot, the motion's sampled every ``output_period``."""
        keep = np.arange(0, len(motion.times), self.step)
        if keep[-1] != len(motion.times) - 1:
            keep = np.append(keep, len(motion.times) - 1)
        # the constraint instant itself is a point: the cubic passes it exactly
        keep = np.union1d(keep, [int(np.argmin(np.abs(motion.times - motion.constraint_time)))])
        n = len(keep)
        positions = np.tile(self.q, (n, 1))
        velocities = np.zeros((n, self.model.nq))
        positions[:, self.cols] = motion.positions[keep]
        velocities[:, self.cols] = motion.velocities[keep]
        velocities[-1] = 0.0  # the exemplar ends at rest; the controller holds it there
        times = motion.times[keep]
        times = times - times[0]
        # point 0 is the current state at time 0; the controller starts from it
        return arrays_to_joint_trajectory(self.model.joint_names, times, positions,
                                          velocities, 0.0, self.model.base_frame)

    def _report(self, level, message, values=None):
        """Publish (and keep, for the periodic repeat) a status of the adapter."""
        self._status = (level, message, values or {})
        status = DiagnosticStatus(level=level, name=f'{NAME}: {self.values["motion"]}',
                                  message=message, hardware_id=self.model.name)
        values = dict(values or {}, joint_state_received=str(self.q is not None).lower(),
                      plan_subscribers=str(self.pub.get_subscription_count()))
        status.values = [KeyValue(key=k, value=v) for k, v in values.items()]
        out = DiagnosticArray(status=[status])
        out.header.stamp = self.get_clock().now().to_msg()
        self.pub_diag.publish(out)


def main(args=None):
    """Entry point of ``ros2 run ik_control style_adapter``; exits 2 on invalid parameters."""
    import sys
    sys.exit(run_node(NAME, StyleAdapterNode, args=args))


if __name__ == '__main__':
    main()

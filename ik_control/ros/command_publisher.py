"""
The command stream of ``ik_controller``: one serialized message per tick on ``output_topic``.

Per ``command_interface`` (no Python message objects on the 1 kHz path, whatever the
number of points: :mod:`ik_control.ros.cdr`):

* ``trajectory``: trajectory_msgs/JointTrajectory, the command window of the tick
  (:mod:`ik_control.control.command_window`), header stamp the tick's time; with
  ``max_expected_latency`` 0 the knot one period ahead alone, stamp zero;
* ``position``: std_msgs/Float64MultiArray, the path one period ahead;
* ``velocity``: std_msgs/Float64MultiArray, the path's velocity one period ahead plus
  ``VELOCITY_FEEDBACK_GAIN`` times the offset of the measured state from the path at the
  measurement's time (a velocity-commanded robot integrates what it is sent, and would
  drift off the path), clipped to the velocity limits.
"""

from ik_control.ros.cdr import SerializedTemplate, TrajectoryWriter
import numpy as np
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

#: command_interface velocity: rate at which an offset between the robot (joint_states)
#: and the commanded path is corrected [1/s] (time constant 0.1 s, slower than the
#: joint_states period and the transport's latency, so the loop stays stable)
VELOCITY_FEEDBACK_GAIN = 10.0


class CommandPublisher:
    """
    Publish each tick's command (module docstring).

    ``names``: the controlled joints in command order; ``period`` [s]: the tick's;
    ``max_points``: the longest window (``CommandWindow.max_points``).
    """

    def __init__(self, node, interface, topic, names, period, max_points, stamp_zero):
        self.interface = interface
        self.period = period
        self._stamp_zero = interface == 'trajectory' and stamp_zero
        if interface == 'trajectory':
            msg_type = JointTrajectory
            # a window: point 0, the knots ahead (each late tick adds the tail's), a
            # braking knot per joint; 4 lead * rate_hz + n + 16 points overflowed on
            # SIMON under load (121 points: the controller died)
            self._writer = TrajectoryWriter(list(names), max_points=max_points)
            self._one_time = np.array([period])
        else:
            msg_type = Float64MultiArray
            self._array = SerializedTemplate(
                Float64MultiArray(), {'data': lambda msg, v: setattr(msg, 'data', v)},
                len(names))
            self._array_data = self._array.view('data')
        self.publisher = node.create_publisher(msg_type, topic, 10)

    def publish(self, command, stamp_ns, controller):
        """Publish ``command`` (a :class:`Command`) of the tick at ``stamp_ns`` [ns]."""
        if self.interface == 'trajectory':
            if self._stamp_zero:
                q, v = command.at(self.period)
                self.publisher.publish(self._writer.payload(0, self._one_time, q[None],
                                                            v[None]))
            else:
                self.publisher.publish(self._writer.payload(stamp_ns, command.times,
                                                            command.positions,
                                                            command.velocities))
            return
        q, v = command.at(self.period)
        if self.interface == 'position':
            self._array_data[:] = q
        else:
            c = controller
            q_path, _ = c.path.sample(c.robot.stamp)
            v += VELOCITY_FEEDBACK_GAIN * (q_path - c.robot.q)
            np.clip(v, -c.v_max, c.v_max, out=self._array_data)
        self.publisher.publish(self._array.payload())

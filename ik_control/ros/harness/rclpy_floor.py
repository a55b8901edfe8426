"""
rclpy's own share of a 1 kHz tick, measured by a bare node: the floor under the controller.

``python -m ik_control.ros.harness.rclpy_floor --ros-args -r __ns:=NS -p ...`` does, once
a period, exactly the rclpy calls of ``ik_controller``'s synchronized tick and nothing
else: take the newest joint_states as bytes (:func:`~ik_control.ros.realtime_loop.
take_latest`), take each goal subscription (``~/E/target_pose``, ``~/E/target_twist``
per effector and ``~/joint_trajectory``: empty in a steady tick), and publish a
serialized JointTrajectory of the controller's size (``points`` knots of ``joints``
joints, :class:`~ik_control.ros.cdr.TrajectoryWriter`). The time of each of the three
parts of every tick that took a state is written to ``statistics_file`` (npz, seconds)
at the end: ``ik_control bench loop`` prints them beside the controller's tick, so what
is left is ours, not rclpy's.
"""

import time

from geometry_msgs.msg import PoseStamped, TwistStamped
from ik_control.ros.cdr import TrajectoryWriter
from ik_control.ros.parameters import declare_all, Param, run_node
from ik_control.ros.realtime_loop import take_latest
import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

PARTS = ('take_state', 'take_goals', 'publish')
PARAMETERS = {
    'rate_hz': Param(1000.0, 'ticks per second [Hz]', 1.0, 10000.0),
    'seconds': Param(10.0, 'how long to measure [s]', 0.1, 3600.0),
    'effectors': Param(['right_hand', 'left_hand'], 'end effectors whose goal topics are '
                       'taken, as ik_controller takes them'),
    'joints': Param(16, 'joints of the published trajectory', 1, 100),
    'points': Param(24, 'knots of the published trajectory (the command window)', 1, 256),
    'statistics_file': Param('', 'npz to write the part times [s] to'),
}


class RclpyFloor(Node):
    """The bare node of the module docstring; :meth:`measure` runs the loop."""

    def __init__(self, **kwargs):
        """Declare the parameters; create the subscriptions and the publisher."""
        super().__init__('rclpy_floor', **kwargs)
        self.values = declare_all(self, PARAMETERS)
        v = self.values
        self.state = self.create_subscription(
            JointState, 'joint_states', lambda msg: None,
            QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE), raw=True)
        self.goals = []
        for ee in v['effectors']:
            self.goals.append(self.create_subscription(
                PoseStamped, f'ik_controller/{ee}/target_pose', lambda msg: None, 10, raw=True))
            self.goals.append(self.create_subscription(
                TwistStamped, f'ik_controller/{ee}/target_twist', lambda msg: None, 10,
                raw=True))
        self.goals.append(self.create_subscription(
            JointTrajectory, 'ik_controller/joint_trajectory', lambda msg: None, 10, raw=True))
        self.out = self.create_publisher(JointTrajectory, 'rclpy_floor/joint_trajectory', 10)
        n, k = v['joints'], v['points']
        writer = TrajectoryWriter([f'joint_{j}' for j in range(n)], max_points=k)
        self.payload = writer.payload(1, np.arange(k) * 1e-3, np.zeros((k, n)),
                                      np.zeros((k, n)))

    def measure(self):
        """Tick at ``rate_hz`` for ``seconds``; return the part times [s], ticks x parts."""
        period = 1.0 / self.values['rate_hz']
        ticks = int(self.values['seconds'] / period)
        times = np.full((ticks, len(PARTS)), np.nan)
        clock = time.perf_counter
        next_tick = clock()
        for k in range(ticks):
            pause = next_tick - clock()
            if pause > 0.0:
                time.sleep(pause)
            next_tick += period
            t0 = clock()
            state = take_latest(self.state)
            t1 = clock()
            for sub in self.goals:
                take_latest(sub)
            t2 = clock()
            if state is None:
                continue
            self.out.publish(self.payload)
            times[k] = (t1 - t0, t2 - t1, clock() - t2)
        return times[~np.isnan(times[:, 0])]

    def spin(self, executor):
        """Measure (no executor: the loop takes its messages itself), then save."""
        times = self.measure()
        path = self.values['statistics_file']
        if path:
            np.savez(path, **{part: times[:, j] for j, part in enumerate(PARTS)})


def main(args=None):
    """Entry point (``python -m ik_control.ros.harness.rclpy_floor``)."""
    import sys

    sys.exit(run_node('rclpy_floor', RclpyFloor, args=args))


if __name__ == '__main__':
    main()

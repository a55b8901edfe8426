"""
``fault_relay``: a transport that misbehaves on purpose, between a controller and a robot.

A test harness (not a node a robot needs): it takes the commands from ``input_topic`` as
serialized bytes and republishes them on ``output_topic``, unchanged, but late,
bunched, dropped or out of order, in phases of ``phase_duration`` seconds that cycle
through ``faults`` (then, after ``fault_duration`` seconds, delivers normally):

* ``normal``: at once;
* ``delay``: each message ``uniform(0, max_delay)`` late (so some overtake others);
* ``bunch``: held back and released together every ``max_delay`` seconds, in order;
* ``drop``: half of them lost;
* ``reorder``: every other message held until the next one is sent, then sent after it.

The faults are drawn from ``seed``. ``message_type`` is ``trajectory``
(trajectory_msgs/JointTrajectory) or ``array`` (std_msgs/Float64MultiArray).
"""

import heapq
import sys
import time

from ik_control.ros.parameters import declare_all, Param, run_node
from ik_control.ros.realtime_loop import PolledGroup, take_all
import numpy as np
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

NODE_NAME = 'fault_relay'
FAULTS = ('normal', 'delay', 'bunch', 'drop', 'reorder')
POLL_PERIOD = 2e-4  # [s]

PARAMETERS = {
    'input_topic': Param('commands_in', 'Topic the commands come from.'),
    'output_topic': Param('commands_out', 'Topic the commands go to.'),
    'message_type': Param('trajectory', "'trajectory' or 'array' (Float64MultiArray)."),
    'faults': Param(Parameter.Type.STRING_ARRAY, 'Phases, cycled: normal, delay, bunch, '
                    'drop, reorder (unset: all of them).'),
    'phase_duration': Param(0.2, 'Duration of each phase [s].', 0.001, 100.0),
    'fault_duration': Param(1e9, 'After this long the relay delivers normally [s].', 0.0,
                            1e9),
    'max_delay': Param(0.008, 'Longest delay of a message, and the bunching period [s].', 0.0,
                       10.0),
    'seed': Param(0, 'Seed of the random faults.', 0, 2 ** 31 - 1),
}


class FaultRelay(Node):
    """The relay (module docstring)."""

    def __init__(self, **kwargs):
        """Declare the parameters, subscribe and publish."""
        super().__init__(NODE_NAME, **kwargs)
        p = declare_all(self, PARAMETERS)
        self.values = p
        msg_type = {'trajectory': JointTrajectory, 'array': Float64MultiArray}[
            p['message_type']]
        self.faults = list(p['faults'] or FAULTS)
        self.rng = np.random.default_rng(p['seed'])
        self.sub = self.create_subscription(msg_type, p['input_topic'], lambda _: None, 100,
                                            callback_group=PolledGroup(), raw=True)
        self.pub = self.create_publisher(msg_type, p['output_topic'], 100)
        self.queue = []  # (release time, sequence, bytes)
        self.held = None  # reorder: the message waiting for the next one
        self.sequence = 0
        self.counts = dict.fromkeys(FAULTS, 0)

    def phase(self, elapsed):
        """Return the fault of the phase ``elapsed`` seconds after the start."""
        if elapsed >= self.values['fault_duration']:
            return 'normal'
        return self.faults[int(elapsed / self.values['phase_duration']) % len(self.faults)]

    def _push(self, when, raw):
        self.sequence += 1
        heapq.heappush(self.queue, (when, self.sequence, raw))

    def take(self, now, elapsed):
        """Queue every message that came in, by the fault of the phase."""
        fault = self.phase(elapsed)
        max_delay = self.values['max_delay']
        for raw in take_all(self.sub):
            self.counts[fault] += 1
            if fault == 'delay':
                self._push(now + self.rng.uniform(0.0, max_delay), raw)
            elif fault == 'bunch':
                period = max(max_delay, 1e-6)
                self._push((np.floor(now / period) + 1.0) * period, raw)
            elif fault == 'drop':
                if self.rng.random() < 0.5:
                    self._push(now, raw)
            elif fault == 'reorder':
                if self.held is None:
                    self.held = raw
                else:
                    self._push(now, raw)
                    self._push(now, self.held)
                    self.held = None
            else:
                self._push(now, raw)
        if fault != 'reorder' and self.held is not None:
            self._push(now, self.held)
            self.held = None

    def release(self, now):
        """Publish the messages that are due."""
        while self.queue and self.queue[0][0] <= now:
            self.pub.publish(heapq.heappop(self.queue)[2])

    def spin(self, executor):
        """Poll, queue and release until shutdown."""
        start = time.monotonic()
        while self.context.ok():
            now = time.monotonic()
            self.take(now, now - start)
            self.release(now)
            executor.spin_once(timeout_sec=0.0)
            time.sleep(POLL_PERIOD)


def main(args=None):
    """Entry point: ``python -m ik_control.ros.harness.fault_relay --ros-args ...``."""
    sys.exit(run_node(NODE_NAME, FaultRelay, args=args))


if __name__ == '__main__':
    main()

"""
The demo's processes and its own node: start ``sim_robot`` and ``ik_controller``, record.

The nodes run in the private namespace :data:`NAMESPACE` (``/diagnostics`` remapped into
it); :class:`Recorder` publishes the goals and records joint_states, goal_reached,
diagnostics and the commands; :class:`StopRequest` turns Ctrl-C into a clean stop.
"""

import os
import sys
import time

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, TwistStamped
from ik_control import robots
from ik_control.ros.conversions import pose_stamped
from ik_control.ros.harness.bag import BagRecorder
from ik_control.ros.harness.node_process import NodeProcess
import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, UInt32, UInt8
from trajectory_msgs.msg import JointTrajectory

NAMESPACE = '/ik_control_demo'
DIAGNOSTICS_RATE = 10.0    # the controller's /diagnostics rate during the demo [Hz]
STOP_TIMEOUT = 10.0        # SIGINT to exit, then SIGKILL [s]
LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)


class DemoError(Exception):
    """The demo cannot go on (a node died, nothing arrived); the message says why."""


def progress(message):
    """Print a progress line of the demo on stderr."""
    print(f'[demo] {message}', file=sys.stderr, flush=True)


# ---------------------------------------------------------------------- processes
class StopRequest:
    """
    SIGINT/SIGTERM handler: raise KeyboardInterrupt at once, or at the next check.

    While rclpy runs (``deferred``), a KeyboardInterrupt raised inside rclpy's C++ code
    can surface as an unrelated RuntimeError; the request is then only recorded, and
    :meth:`check` (called by the spin loop every few milliseconds) raises it.
    """

    def __init__(self):
        """Start with no request, raising immediately."""
        self.deferred = False
        self.requested = False

    def __call__(self, signum, frame):
        """Record the request; raise KeyboardInterrupt unless deferred."""
        self.requested = True
        if not self.deferred:
            raise KeyboardInterrupt

    def check(self):
        """Raise KeyboardInterrupt if a stop was requested."""
        if self.requested:
            raise KeyboardInterrupt


def start_nodes(robot, backend, env):
    """Start sim_robot and ik_controller for ``robot``; return them (sim, controller)."""
    params = robots.data_path('config', f'{robot}.yaml')
    common = ['--params-file', params, '-r', f'__ns:={NAMESPACE}',
              '-p', f'urdf_path:={robots.urdf_path(robot)}']
    sim = NodeProcess('sim_robot', 'ik_control.ros.sim_robot_node',
                      common + ['-p', f'backend:={backend}'], env, STOP_TIMEOUT)
    try:
        ctl = NodeProcess('ik_controller', 'ik_control.ros.ik_controller_node',
                          common + ['-p', f'diagnostics_rate:={DIAGNOSTICS_RATE}',
                                    '-r', f'/diagnostics:={NAMESPACE}/diagnostics'], env,
                          STOP_TIMEOUT)
    except BaseException:
        sim.stop()
        raise
    return sim, ctl


def start_viewer(robot, port, env):
    """Start the live browser view (``ik_viewer``) of ``robot``'s nodes on ``port``."""
    from ik_control.ros.viewer_node import robot_arguments

    return NodeProcess('ik_viewer', 'ik_control.ros.viewer_node',
                       robot_arguments(robot) + ['-r', f'__ns:={NAMESPACE}',
                                                 '-p', f'port:={port}'], env, STOP_TIMEOUT)


# ---------------------------------------------------------------------- the ROS client
def bag_topics(model):
    """
    Return what ``ik_control demo --bag`` records: ``(topic, message class, qos)``.

    The robot's joint_states, the controller's commands, goals (poses, twists), goal
    states, status flags, and /diagnostics (remapped into :data:`NAMESPACE`).
    """
    ctl = f'{NAMESPACE}/ik_controller'
    topics = [(f'{NAMESPACE}/joint_states', JointState, 100),
              (f'{NAMESPACE}/joint_trajectory_controller/joint_trajectory', JointTrajectory, 100),
              (f'{NAMESPACE}/diagnostics', DiagnosticArray, 10),
              (f'{ctl}/status', UInt32, LATCHED)]
    for ee in model.end_effector_names:
        topics += [(f'{ctl}/{ee}/target_pose', PoseStamped, 10),
                   (f'{ctl}/{ee}/target_twist', TwistStamped, 10),
                   (f'{ctl}/{ee}/goal_reached', Bool, LATCHED),
                   (f'{ctl}/{ee}/goal_state', UInt8, LATCHED)]
    return topics


class Recorder:
    """The demo's own rclpy node: publishes goals, records joint_states and diagnostics."""

    def __init__(self, model, processes, stop=None, bag=None):
        """
        Create the node (own context) with publishers and subscriptions in NAMESPACE.

        ``bag``: a directory to record the run into as a rosbag2 (:mod:`.bag`), or None.
        """
        self.model = model
        self.processes = processes
        self.stop = stop or StopRequest()
        self.context = rclpy.Context()
        # no rclpy signal handlers: Ctrl-C goes to StopRequest, which stops the nodes
        rclpy.init(context=self.context, signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node('ik_control_demo', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.times, self.positions = [], []
        self._order = (None, None)
        self.goal_reached = {ee: [] for ee in model.end_effector_names}
        self.diagnostics = []
        self.commands = 0
        node, ctl = self.node, f'{NAMESPACE}/ik_controller'
        node.create_subscription(JointState, f'{NAMESPACE}/joint_states', self._on_state, 100)
        node.create_subscription(DiagnosticArray, f'{NAMESPACE}/diagnostics',
                                 self._on_diagnostics, 10)
        self._command_sub = node.create_subscription(
            JointTrajectory, f'{NAMESPACE}/joint_trajectory_controller/joint_trajectory',
            self._on_command, 10)
        self.pose_pub, self.twist_pub = {}, {}
        for ee in model.end_effector_names:
            node.create_subscription(Bool, f'{ctl}/{ee}/goal_reached',
                                     lambda m, ee=ee: self.goal_reached[ee].append(
                                         (time.time(), m.data)), LATCHED)
            self.pose_pub[ee] = node.create_publisher(PoseStamped, f'{ctl}/{ee}/target_pose',
                                                      10)
            self.twist_pub[ee] = node.create_publisher(TwistStamped,
                                                       f'{ctl}/{ee}/target_twist', 10)
        self.bag = None if bag is None else BagRecorder(node, bag, bag_topics(model))

    # --------------------------------------------------------------- callbacks
    def _on_state(self, msg):
        names = tuple(msg.name)
        if self._order[0] != names:
            try:
                self._order = (names, [names.index(n) for n in self.model.joint_names])
            except ValueError:
                return
        if len(msg.position) != len(names):
            return
        stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        self.times.append(stamp if stamp > 0 else time.time())
        self.positions.append(np.asarray(msg.position)[self._order[1]])

    def _on_diagnostics(self, msg):
        for status in msg.status:
            if status.hardware_id == self.model.name:
                stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
                values = {kv.key: kv.value for kv in status.values}
                self.diagnostics.append((stamp, values))

    def _on_command(self, msg):
        self.commands += 1

    # --------------------------------------------------------------- spinning
    def check_processes(self):
        """Raise DemoError naming a node that exited, with the tail of its output."""
        for p in self.processes:
            if not p.alive():
                raise DemoError(f'{p.name} exited with status {p.proc.returncode}; its last '
                                f'output:\n{p.output_tail()}')

    def spin_for(self, seconds):
        """Process callbacks for ``seconds`` [s], checking the node processes."""
        self.spin_until(lambda: False, seconds)

    def spin_until(self, predicate, timeout):
        """Process callbacks until ``predicate()`` or ``timeout`` [s]; return ``predicate()``."""
        end = time.monotonic() + timeout
        next_check = 0.0
        while True:
            self.stop.check()
            if predicate():
                return True
            now = time.monotonic()
            if now >= end:
                return False
            if now >= next_check:
                self.check_processes()
                next_check = now + 0.2
            self.executor.spin_once(timeout_sec=min(0.005, end - now))

    def wait_ready(self, timeout):
        """Wait for joint_states, a first command and matched goal subscriptions."""
        pubs = list(self.pose_pub.values()) + list(self.twist_pub.values())

        def ready():
            return (self.positions and self.commands > 0
                    and all(p.get_subscription_count() > 0 for p in pubs)
                    and all(self.goal_reached[ee] for ee in self.goal_reached))
        start = time.monotonic()
        while not self.spin_until(ready, min(10.0, start + timeout - time.monotonic())):
            if time.monotonic() - start >= timeout:
                break
            progress(f'waiting for the nodes ({time.monotonic() - start:.0f} s): '
                     f"joint_states {'yes' if self.positions else 'no'}, commands "
                     f"{'yes' if self.commands else 'no'} (the first start compiles "
                     'the numba kernels)')
        if not ready():
            raise DemoError(f'the nodes did not come up within {timeout:.0f} s (joint_states '
                            f'{len(self.positions)}, commands {self.commands})')
        self.node.destroy_subscription(self._command_sub)
        self.spin_for(0.5)  # let discovery finish, to see foreign publishers
        topic = f'{NAMESPACE}/joint_states'
        count = self.node.count_publishers(topic)
        if count > 1:
            raise DemoError(f'{count} publishers on {topic}: another demo or sim_robot runs in '
                            f"ROS_DOMAIN_ID={os.environ.get('ROS_DOMAIN_ID', '0')}; stop it "
                            'or choose another ROS_DOMAIN_ID')

    def settled_q(self, timeout=2.0, still=1e-5):
        """
        Return the measured joint positions [rad] once the arm is at rest.

        At rest: no joint moved more than ``still`` [rad] over the last 0.1 s of
        joint_states, the newest of them less than 50 ms old; at most ``timeout`` [s].
        """
        def at_rest():
            if not self.times or time.time() - self.times[-1] > 0.05:
                return False
            times = np.array(self.times[-2000:])
            k = int(np.searchsorted(times, times[-1] - 0.1))
            if times[k] > times[-1] - 0.09:
                return False
            recent = np.array(self.positions[len(self.positions) - len(times) + k:])
            return float(np.max(np.ptp(recent, axis=0))) < still
        self.spin_until(at_rest, timeout)
        return self.positions[-1]

    def send_pose(self, ee, T):
        """Publish the goal ``T`` (4x4, base frame) for end effector ``ee``."""
        self.pose_pub[ee].publish(
            pose_stamped(T, self.model.base_frame, self.node.get_clock().now()))

    def send_twist(self, ee, linear):
        """Publish a velocity command [m/s] for end effector ``ee`` (base frame)."""
        msg = TwistStamped()
        msg.header.frame_id = self.model.base_frame
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.twist.linear.x, msg.twist.linear.y, msg.twist.linear.z = (float(v) for v in linear)
        self.twist_pub[ee].publish(msg)

    def close(self):
        """Finish the bag, destroy the node and shut the context down."""
        try:
            if self.bag is not None:
                self.bag.close()
            self.executor.shutdown()
            self.node.destroy_node()
        finally:
            rclpy.try_shutdown(context=self.context)

"""
The rig of the node benches and tests: the two nodes, and a probe node beside them.

:class:`Pair` runs ``sim_robot`` and ``ik_controller`` for a bundled robot as separate
processes (the robot's parameter file, a private namespace, ``/diagnostics`` remapped
into it, the user's ``ROS_DOMAIN_ID``, discovery on this host unless
``ROS_AUTOMATIC_DISCOVERY_RANGE`` says otherwise); :class:`Probe` is the bench's own
rclpy node, which publishes inputs and polls the nodes' outputs. Used by ``bench fuzz``
(:mod:`~ik_control.ros.harness.fuzz`), ``bench soak`` and the node tests.
"""

import math
import time

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, TwistStamped
from ik_control import robots
from ik_control.ros.conversions import pose_stamped
from ik_control.ros.harness.node_process import node_environment, NodeProcess
from ik_control.ros.realtime_loop import PolledGroup, take_all
import numpy as np
from rcl_interfaces.srv import GetParameters
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import MarkerArray

STARTUP_TIMEOUT = 120.0     # process start, discovery, numba cache load or compile [s]
STOP_TIMEOUT = 5.0          # SIGINT to exit, then SIGKILL [s]
DIAGNOSTICS_RATE = 10.0     # the controller's /diagnostics rate during the run [Hz]
QUEUE_DEPTH = 1000          # recorder subscription depth (no loss while polling)
ROBOT_STATUS = 'simulated robot'  # the end of sim_robot's diagnostic status name


class FuzzError(Exception):
    """The run cannot go on (a node did not start, nothing arrived); the message says why."""


# ---------------------------------------------------------------------- processes
class Pair:
    """
    ``sim_robot`` + ``ik_controller`` for bundled ``robot`` in namespace ``namespace``.

    Both get the robot's parameter file and its URDF; ``controller_args`` and
    ``sim_args`` are extra ``--ros-args`` (e.g. ``['-p', 'rate_hz:=1000.0']``).
    """

    def __init__(self, robot, namespace, env=None, controller_args=(), sim_args=()):
        """Remember the command lines; :meth:`start` starts the nodes."""
        self.robot = robot
        self.namespace = namespace
        self.env = env or node_environment()
        common = ['--params-file', robots.data_path('config', f'{robot}.yaml'),
                  '-r', f'__ns:={namespace}', '-p', f'urdf_path:={robots.urdf_path(robot)}']
        self.sim_args = common + ['-r', f'/diagnostics:={namespace}/diagnostics', *sim_args]
        self.controller_args = common + ['-p', f'diagnostics_rate:={DIAGNOSTICS_RATE}',
                                         '-r', f'/diagnostics:={namespace}/diagnostics',
                                         *controller_args]
        self.sim = self.controller = None
        self.crashes = []

    def start_sim(self, extra=()):
        """Start (or restart) the simulated robot."""
        self.sim = NodeProcess('sim_robot', 'ik_control.ros.sim_robot_node',
                               self.sim_args + list(extra), self.env, STOP_TIMEOUT)
        return self.sim

    def start_controller(self, extra=()):
        """Start (or restart) the controller."""
        self.controller = NodeProcess('ik_controller', 'ik_control.ros.ik_controller_node',
                                      self.controller_args + list(extra), self.env,
                                      STOP_TIMEOUT)
        return self.controller

    def start(self):
        """Start both nodes; returns self."""
        self.start_sim()
        self.start_controller()
        return self

    def processes(self):
        """Return the running node processes."""
        return [p for p in (self.sim, self.controller) if p is not None]

    def check_alive(self):
        """Raise FuzzError naming a node that exited, with the tail of its output."""
        for p in self.processes():
            if not p.alive():
                raise FuzzError(f'{p.name} exited with status {p.proc.returncode}; its last '
                                f'output:\n{p.output_tail()}')

    def stop(self):
        """Stop both nodes; record as crashes those that died or exit non-zero on SIGINT."""
        for p in (self.controller, self.sim):
            if p is None:
                continue
            died = not p.alive()
            code = p.stop()
            if died or code != 0:
                self.crashes.append({'node': p.name, 'exit_code': code,
                                     'died_before_stop': died, 'output': p.output_tail()})
        return self.crashes

    def __enter__(self):
        """Start both nodes."""
        return self.start()

    def __exit__(self, *exc):
        """Stop both nodes."""
        self.stop()


# ---------------------------------------------------------------------- the bench's node
class Probe:
    """
    The bench's own rclpy node: publishes inputs, polls the controller's outputs.

    Commands, joint_states and diagnostics are read without an executor (a
    :class:`~ik_control.ros.realtime_loop.PolledGroup`, depth :data:`QUEUE_DEPTH`) by
    :meth:`poll`, which passes each command to ``on_command(msg, t)`` and each state to
    ``on_state(msg, t)`` (``t`` = ``time.monotonic()`` when taken); during each call
    :attr:`sent` is when that message was published (DDS source timestamp [s], system
    clock), which does not depend on how late this process takes it.
    """

    def __init__(self, model, namespace, name='ik_control_fuzz', context_args=None):
        """Create the node in its own context (Ctrl-C stays a KeyboardInterrupt)."""
        self.model = model
        self.namespace = namespace
        self.context = rclpy.Context()
        rclpy.init(context=self.context, args=context_args,
                   signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        node, ctl = self.node, f'{namespace}/ik_controller'
        polled = PolledGroup()
        deep = QoSProfile(depth=QUEUE_DEPTH, reliability=ReliabilityPolicy.RELIABLE)
        self.command_sub = node.create_subscription(
            JointTrajectory, f'{namespace}/joint_trajectory_controller/joint_trajectory',
            lambda m: None, deep, callback_group=polled)
        self.state_sub = node.create_subscription(JointState, f'{namespace}/joint_states',
                                                  lambda m: None, deep, callback_group=polled)
        self.diag_sub = node.create_subscription(DiagnosticArray, f'{namespace}/diagnostics',
                                                 lambda m: None, 100, callback_group=polled)
        self.state_pub = node.create_publisher(JointState, f'{namespace}/joint_states', 100)
        self.pose_pub = {ee: node.create_publisher(PoseStamped, f'{ctl}/{ee}/target_pose', 100)
                         for ee in model.end_effector_names}
        self.obstacle_pub = node.create_publisher(MarkerArray, f'{ctl}/obstacles', 100)
        self.twist_pub = {ee: node.create_publisher(TwistStamped, f'{ctl}/{ee}/target_twist',
                                                    100)
                          for ee in model.end_effector_names}
        self.on_command = self.on_state = None
        self.sent = math.nan
        self.last_command = None
        self.last_state = None
        self.last_state_q = None
        self.commands = self.states = 0
        self.diagnostics = {}     # latest key/values of the controller
        self.robot_diagnostics = {}  # latest key/values of sim_robot (its clamps)
        self.diagnostics_time = -math.inf
        self.status_codes_seen = set()
        self._state_order = (None, None)

    def close(self):
        """Destroy the node and shut the context down."""
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)

    # ------------------------------------------------------------------ reading
    def poll(self):
        """Take every waiting command, state and diagnostics message; return how many."""
        t = time.monotonic()
        count = 0
        for msg, info in take_all(self.command_sub, with_info=True):
            self.sent = 1e-9 * info['source_timestamp']
            self.commands += 1
            self.last_command = msg
            if self.on_command is not None:
                self.on_command(msg, t)
            count += 1
        for msg, info in take_all(self.state_sub, with_info=True):
            self.sent = 1e-9 * info['source_timestamp']
            if msg.header.frame_id == 'ik_control_fuzz':
                continue  # our own malformed joint_states
            q = self.state_positions(msg)
            if q is None:
                continue
            self.states += 1
            self.last_state, self.last_state_q = msg, q
            if self.on_state is not None:
                self.on_state(msg, t)
            count += 1
        for msg in take_all(self.diag_sub):
            for status in msg.status:
                if status.hardware_id == self.model.name:
                    self.diagnostics = {kv.key: kv.value for kv in status.values}
                    self.diagnostics['level'] = int.from_bytes(status.level, 'little') if \
                        isinstance(status.level, bytes) else int(status.level)
                    self.diagnostics_time = t
                    self.status_codes_seen.update(
                        self.diagnostics.get('status_codes', '').split(','))
                elif status.name.endswith(ROBOT_STATUS):
                    self.robot_diagnostics = {kv.key: kv.value for kv in status.values}
            count += 1
        return count

    def state_positions(self, msg):
        """Positions of ``msg`` in model joint order, or None if it does not name them all."""
        names = tuple(msg.name)
        if names != self._state_order[0]:
            try:
                self._state_order = (names, [names.index(n) for n in self.model.joint_names])
            except ValueError:
                return None
        if len(msg.position) != len(names):
            return None
        return np.asarray(msg.position)[self._state_order[1]]

    def spin_for(self, seconds, period=0.001):
        """Poll and serve services for ``seconds`` [s]."""
        self.spin_until(lambda: False, seconds, period)

    def spin_until(self, predicate, timeout, period=0.001, pair=None):
        """Poll until ``predicate()`` or ``timeout`` [s]; return ``predicate()``."""
        end = time.monotonic() + timeout
        next_check = 0.0
        while True:
            self.poll()
            if predicate():
                return True
            now = time.monotonic()
            if now >= end:
                return False
            if pair is not None and now >= next_check:
                pair.check_alive()
                next_check = now + 0.2
            self.executor.spin_once(timeout_sec=0.0)
            time.sleep(period)

    def refused(self):
        """Refused messages as last reported by the controller (-1 before any diagnostics)."""
        return int(self.diagnostics.get('refused_messages', -1))

    def fresh_diagnostics(self, timeout=5.0, pair=None):
        """Wait for a diagnostics message published after this call; return its values."""
        start = time.monotonic()
        if not self.spin_until(lambda: self.diagnostics_time > start + 0.05, timeout,
                               pair=pair):
            raise FuzzError('no diagnostics from the controller')
        return self.diagnostics

    def wait_ready(self, timeout=STARTUP_TIMEOUT, pair=None):
        """Wait for joint_states, commands, diagnostics and matched goal subscriptions."""
        pubs = (list(self.pose_pub.values()) + list(self.twist_pub.values())
                + [self.obstacle_pub])

        def ready():
            return (self.last_state is not None and self.commands > 0 and self.diagnostics
                    and all(p.get_subscription_count() > 0 for p in pubs))
        if not self.spin_until(ready, timeout, pair=pair):
            raise FuzzError(f'the nodes did not come up within {timeout:.0f} s (joint_states '
                            f'{self.states}, commands {self.commands}, diagnostics '
                            f'{bool(self.diagnostics)})')

    def call(self, srv_type, name, request, timeout=5.0):
        """Call service ``name`` and return the response (FuzzError on timeout)."""
        client = self.node.create_client(srv_type, name)
        try:
            if not client.wait_for_service(timeout_sec=timeout):
                raise FuzzError(f'service {name} not available')
            future = client.call_async(request)
            self.executor.spin_until_future_complete(future, timeout_sec=timeout)
            if not future.done():
                raise FuzzError(f'service {name} did not answer within {timeout} s')
            return future.result()
        finally:
            self.node.destroy_client(client)

    def controller_parameters(self, names, node='ik_controller'):
        """
        Return ``{name: value}`` of the controller's parameters (get_parameters service).

        One request per name: rclpy answers a request naming an unset parameter (an array
        without a default) with no values at all; such parameters are None here.
        """
        from rclpy.parameter import parameter_value_to_python
        out = {}
        for name in names:
            response = self.call(GetParameters, f'{self.namespace}/{node}/get_parameters',
                                 GetParameters.Request(names=[name]))
            out[name] = (parameter_value_to_python(response.values[0]) if response.values
                         else None)
        return out

    # ------------------------------------------------------------------ writing
    def current_poses(self):
        """Placements (ne, 4, 4) of the effectors at the last measured state."""
        return self.model.frame_placements(self.last_state_q)

    def pose_message(self, T, frame_id=None, stamp=None):
        """Return a PoseStamped of ``T`` (4x4, in the base frame unless ``frame_id``)."""
        return pose_stamped(T, self.model.base_frame if frame_id is None else frame_id,
                            time.time() if stamp is None else stamp)

    def send_pose(self, ee, T, frame_id=None, stamp=None):
        """Publish a pose goal for ``ee`` (4x4 in the base frame); return the message."""
        msg = self.pose_message(T, frame_id, stamp)
        self.pose_pub[ee].publish(msg)
        return msg

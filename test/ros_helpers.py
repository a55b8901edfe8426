"""
Shared helpers for tests that run real rclpy and real DDS (no mocks).

Import from test modules (``from ros_helpers import ...``); pytest puts the
``test`` directory on ``sys.path``.

* :func:`domain_id` / :func:`ros_env`: one ROS_DOMAIN_ID for the test process
  and every node it launches (taken from the environment, e.g. the Makefile's
  random one, or drawn at random in 1..100 and exported before rclpy.init).
* :class:`RosTestContext`: an rclpy context with one test node and executor,
  ``spin_until(predicate, timeout)``.
* :class:`Collector`: a subscription that keeps the messages it received;
  ``current()`` waits for one stamped after the question. Raw (bytes) collectors, the
  robot's 250-1000 Hz streams, are taken by a second node in a background thread.
* :class:`NodeProcess`: launch ``python -m <module> --ros-args ...`` as a
  subprocess, stop it with SIGINT (then SIGKILL), read its output.
"""

from collections import deque
import os
import random
import threading
import time
from typing import Callable, List, Optional, Sequence

from ik_control.ros.harness import node_process
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.experimental import EventsExecutor
from rclpy.qos import QoSProfile
from rclpy.serialization import deserialize_message

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# A message's delivery latency plus a tick's lateness on a starved 2-core machine: what a
# timing bound in a node test allows beyond the logic's own (10x the worst seen: ticks 20 ms
# late in a loaded soak) [s].
SCHEDULING_SLACK = 0.2

# What the tests' ik_controller and sim_robot run with beyond their own arguments: their
# loops sleep to each deadline instead of polling the clock through its last 200 us
# (busy_wait). The polling costs each 500 Hz process about a tenth of a core (more
# under `make test NODE_WORKERS=2`, two test modules at once) for tick jitter that no
# test here measures (`ik_control bench loop` does, with the default).
LOOP_NODES = ('ik_control.ros.ik_controller_node', 'ik_control.ros.sim_robot_node')
LOOP_NODE_ARGS = ('-p', 'busy_wait:=0.0')

# What the tests' ik_controller starts with before its own arguments, unless they name a
# parameter file (whose values then stand, as shipped): /diagnostics at 20 Hz, not the
# default 2 Hz, so a test that waits for the first status published after an event waits
# about 50 ms for it, not 500 ms.
TEST_DIAGNOSTICS_RATE = 20.0  # [Hz]
CONTROLLER_TEST_ARGS = ('-p', f'diagnostics_rate:={TEST_DIAGNOSTICS_RATE}')
# how long after an event a test controller's /diagnostics has told it [s]
DIAGNOSTICS_AFTER = SCHEDULING_SLACK + 1.0 / TEST_DIAGNOSTICS_RATE


def domain_id() -> int:
    """Return the test run's ROS_DOMAIN_ID, choosing and exporting one if unset."""
    value = os.environ.get('ROS_DOMAIN_ID', '').strip()
    if not value:
        value = str(random.randint(1, 100))  # ROS-recommended range: 0..101
        os.environ['ROS_DOMAIN_ID'] = value
    return int(value)


def ros_env(**extra: str) -> dict:
    """
    Environment for node subprocesses: the nodes' own, this run's domain, the repository.

    :func:`~ik_control.ros.harness.node_process.node_environment` (unbuffered logging,
    faulthandler on: an abort prints every thread's stack), ``ROS_DOMAIN_ID`` of
    :func:`domain_id`, the repository first on ``PYTHONPATH``.
    """
    env = node_process.node_environment()
    env['ROS_DOMAIN_ID'] = str(domain_id())
    path = env.get('PYTHONPATH', '')
    env['PYTHONPATH'] = REPO_ROOT + (os.pathsep + path if path else '')
    env.update(extra)
    return env


class RosTestContext:
    """
    An rclpy context (own domain) with one node and a single-threaded executor.

    Use as a context manager; ``node`` creates publishers and subscriptions.
    """

    def __init__(self, node_name: str = 'test_node'):
        """Init rclpy in a fresh context on :func:`domain_id` and create the node."""
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain_id())
        self.node = rclpy.create_node(node_name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._streams = None  # (node, executor, thread, stop) of the raw collectors

    def stream_node(self):
        """
        Return the node of the raw collectors, served by an EventsExecutor in its own thread.

        The robot's joint_states and command windows (250-1000 Hz each) took this process
        47-63 % of a core through the SingleThreadedExecutor, 13-21 % this way (idle WAM
        at 500 Hz, SIMON at 1 kHz): CPU the robot's and the controller's loops lacked on
        a 2-core machine. The thread only appends bytes to a deque. It spins in 10 ms
        turns: rclpy adds a subscription to a node only between an EventsExecutor's spins.
        """
        if self._streams is None:
            node = rclpy.create_node(f'{self.node.get_name()}_streams', context=self.context)
            executor = EventsExecutor(context=self.context)
            executor.add_node(node)
            stop = threading.Event()

            def serve():
                while not stop.is_set():
                    executor.spin_once(timeout_sec=0.01)
            thread = threading.Thread(target=serve, name='streams', daemon=True)
            thread.start()
            self._streams = (node, executor, thread, stop)
        return self._streams[0]

    def spin_for(self, seconds: float) -> None:
        """Process callbacks for ``seconds`` [s]."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=min(0.01, max(end - time.monotonic(), 0.0)))

    def spin_until(self, predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
        """Process callbacks until ``predicate()`` is true or ``timeout`` [s]; return it."""
        end = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() >= end:
                return bool(predicate())
            self.executor.spin_once(timeout_sec=0.01)
        return True

    def collect(self, msg_type, topic: str, qos=10, raw=False) -> 'Collector':
        """Subscribe ``topic`` and return a :class:`Collector` of its messages."""
        return Collector(self, msg_type, topic, qos, raw)

    def wait_for_subscribers(self, publisher, count: int = 1, timeout: float = 5.0) -> bool:
        """Wait until ``publisher`` is matched by ``count`` subscriptions."""
        return self.spin_until(lambda: publisher.get_subscription_count() >= count, timeout)

    def close(self) -> None:
        """Destroy the node and shut the context down."""
        if self._streams is not None:
            node, executor, thread, stop = self._streams
            stop.set()
            thread.join(timeout=5.0)
            executor.shutdown()
            node.destroy_node()
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)

    def __enter__(self) -> 'RosTestContext':
        """Return self."""
        return self

    def __exit__(self, *exc) -> None:
        """Close."""
        self.close()


class Collector:
    """
    Messages received on one topic, with waiting helpers.

    ``raw=True`` takes them as bytes and deserializes them when the test reads
    :attr:`messages`: rclpy's deserialization of a 1 kHz stream of multi-point
    JointTrajectory windows costs this process most of a core, and a process that falls
    behind a KEEP_LAST queue loses samples (a third of SIMON's, in a test that only
    waited while the robot moved).
    """

    def __init__(self, ctx: RosTestContext, msg_type, topic: str, qos=10, raw=False):
        """Subscribe ``topic`` on ``ctx.node``."""
        self.ctx = ctx
        self.msg_type = msg_type
        self._raw = deque()  # appended by the streams thread, taken here
        self._messages: List = []
        qos = qos if isinstance(qos, QoSProfile) else int(qos)
        node = ctx.stream_node() if raw else ctx.node
        self.subscription = node.create_subscription(
            msg_type, topic, self._take if raw else self._messages.append, qos, raw=raw)

    def _take(self, raw: bytes) -> None:
        self._raw.append(raw)  # (rclpy inspects a callback's signature: no builtin method)

    @property
    def messages(self) -> List:
        """Return the messages received so far, oldest first."""
        raw = self._raw
        for _ in range(len(raw)):  # what has come: the thread may append meanwhile
            self._messages.append(deserialize_message(raw.popleft(), self.msg_type))
        return self._messages

    @property
    def last(self):
        """Most recent message, or None."""
        return self.messages[-1] if self.messages else None

    def clear(self) -> None:
        """Forget the messages received so far."""
        self._raw.clear()
        self._messages.clear()

    def wait(self, predicate: Optional[Callable] = None, timeout: float = 5.0):
        """
        Return the first new message (from now on) satisfying ``predicate``.

        Raises :class:`TimeoutError` with the last message seen.
        """
        seen = [len(self.messages)]
        found = []

        def scan():
            while seen[0] < len(self.messages):
                msg = self.messages[seen[0]]
                seen[0] += 1
                if predicate is None or predicate(msg):
                    found.append(msg)
                    return True
            return False

        first = seen[0]
        if self.ctx.spin_until(scan, timeout):
            return found[0]
        last = self.last
        now = 1e-9 * self.ctx.node.get_clock().now().nanoseconds
        age = f'stamped {now - stamp_seconds(last):.3f} s ago' if hasattr(last, 'header') else ''
        came = len(self.messages) - first
        raise TimeoutError(f'no matching message within {timeout:.1f} s ({came} came '
                           f'meanwhile); the last {age}: {last!r}'[:2000])

    def current(self, timeout: float = 5.0):
        """
        Return the first message whose ``header.stamp`` is at or after this call.

        Not the next one queued: on a loaded machine this process may take a node's
        messages a second late (measured: 0.38 s), and what a node published before
        the question (the robot before a goal was reached, commands before a restart)
        is not its answer. Stamps and this node's clock are the same system clock.
        """
        now = 1e-9 * self.ctx.node.get_clock().now().nanoseconds
        return self.wait(lambda m: stamp_seconds(m) >= now, timeout)


def stamp_seconds(msg) -> float:
    """Return ``msg.header.stamp`` in seconds."""
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


class NodeProcess(node_process.NodeProcess):
    """A node in a subprocess (:class:`ik_control.ros.harness.node_process.NodeProcess`)."""

    def __init__(self, module: str, ros_args: Sequence[str] = (), env: Optional[dict] = None):
        """
        Start ``python -m module`` on the test domain (:func:`ros_env`), in the repository.

        For :data:`LOOP_NODES`, :data:`LOOP_NODE_ARGS` go last: rcl keeps the ``-p``
        overrides as one entry where the first of them stands, and a parameter file's entry
        for the node after it overrides them all (so given first, they undid a test's
        ``-p`` after the file). :data:`CONTROLLER_TEST_ARGS` go first, for the test's own
        ``-p`` to override; with a parameter file they are left out (first, they would be
        the ``-p`` entry that the file overrides, the test's own ``-p`` with them).
        """
        first = (CONTROLLER_TEST_ARGS if module == LOOP_NODES[0]
                 and '--params-file' not in ros_args else ())
        ros_args = [*first, *ros_args, *(LOOP_NODE_ARGS if module in LOOP_NODES else ())]
        super().__init__(module.rsplit('.', 1)[-1], module, ros_args, env or ros_env(),
                         cwd=REPO_ROOT)

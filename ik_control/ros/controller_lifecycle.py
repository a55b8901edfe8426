"""
The lifecycle of ``ik_controller``: a managed node (rclpy's LifecycleNode).

Transitions (``ros2 lifecycle set /ik_controller <transition>``, or a lifecycle manager
such as nav2's):

* ``configure``: the robot model, the controller (its compiled kernels loaded from
  numba's cache or compiled), the topics, services, action and timers, all from the
  parameters. With ``autostart`` (the default) this happens at start, followed by
  ``activate``, so ``ros2 run`` and the launch files need no lifecycle manager; a bad
  parameter then ends the process with one line (exit 2). Later, a bad parameter fails
  the transition with its reason logged.
* ``activate``: the controller takes the robot from its measured state, at rest (the
  command starts where the robot is: no jump); goals are taken from then on.
* ``deactivate``: every goal ends (a MoveToPose goal aborts with ``INACTIVE``), the
  command brakes every joint to rest within its acceleration limit, as on lost
  joint_states, and the node then publishes no command, so another controller can take
  the same joint_trajectory_controller. Goals are refused while inactive (status
  ``INACTIVE``; diagnostics and ``~/status`` go on). With a realtime loop (``loop``
  ``synchronized`` or ``on_joint_states``) the transition returns once the braking
  command has gone out, at most :data:`BRAKE_WAIT` later.
* ``cleanup``: the controller starts afresh (goals, obstacles from ``~/obstacles``, the
  link to the robot forgotten); the topics stay (their names and types come from
  parameters that cannot change at run time). ``configure`` then makes it ready again.
* ``shutdown``: brakes as ``deactivate`` does; the node then commands nothing.

A mixin of :class:`~ik_control.ros.ik_controller_node.IkControllerNode`, whose
``controller``, ``lock``, ``inbox``, ``_now`` and ``_configure`` it uses.
"""

import time

from ik_control.validation import IkControlError
from rclpy.lifecycle import TransitionCallbackReturn

#: longest a deactivate waits for the braking command to have gone out [s]
BRAKE_WAIT = 5.0
_POLL = 0.005  # how often it looks [s]


class ControllerLifecycle:
    """The transitions of ``ik_controller`` (module docstring)."""

    _loop_runs = False  # True while the realtime loop ticks in another thread

    def on_configure(self, state):
        """Build the controller and the node's interfaces (unless autostart did)."""
        if self.controller is None:
            try:
                self._configure()
            except IkControlError as exc:  # StartupError included
                self.get_logger().error(f'configure failed: {exc}')
                self.controller = None
                return TransitionCallbackReturn.FAILURE
        self.get_logger().info('configured')
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state):
        """Take the robot from its measured state."""
        with self.lock:
            self.controller.engage()
        self.get_logger().info('activated: commanding from the measured state')
        return TransitionCallbackReturn.SUCCESS

    def on_deactivate(self, state):
        """End every goal, brake to rest, then publish nothing."""
        waited = self._release()
        self.get_logger().info(
            f'deactivated: the arm braked to rest{waited}; no command is published until '
            'activated')
        return TransitionCallbackReturn.SUCCESS

    def on_cleanup(self, state):
        """Start the controller afresh (module docstring)."""
        with self.lock:
            self.controller = self._new_controller()
            self.inbox.clear()  # inputs meant for the controller that is gone
            self._pending_state = None
        self.get_logger().info('cleaned up: goals, obstacles and the link to the robot '
                               'forgotten')
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state):
        """Brake to rest as deactivate does; command nothing after."""
        if self.controller is not None:
            self._release()
        return TransitionCallbackReturn.SUCCESS

    def _release(self):
        """
        Release the controller and wait for the braking command to go out.

        Returns what was waited, as a phrase for the log ('' when nothing was).
        """
        with self.lock:
            self.controller.release(self._now())
        if not self._loop_runs:  # the ticks run in this (the executor's) thread
            return ''
        start = time.monotonic()
        while time.monotonic() - start < BRAKE_WAIT:
            with self.lock:
                moving = self.controller.braking(self._now())
            if not moving:
                return f' (in {time.monotonic() - start:.2f} s)'
            time.sleep(_POLL)
        return f' (still braking after {BRAKE_WAIT:g} s)'

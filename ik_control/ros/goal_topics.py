"""
The ``ik_controller`` node's goal inputs: messages in, controller calls out.

:class:`GoalTopics` holds the callbacks of the node's goal topics and services (target
poses, twists, key-pose paths, velocity profiles, joint trajectories, obstacle markers,
``~/hold`` and ``~/resume``). Their frames go through the node's
:class:`~ik_control.ros.frame_resolver.FrameResolver` (``frames``), the action's too:
the base frame as it is, other frames of the model placed at the commanded state, the
rest through tf2 where tf2_ros is installed. A
message that cannot be followed is refused (:meth:`IkControllerNode.refuse
<ik_control.ros.ik_controller_node.IkControllerNode.refuse>`): the command does not
change.

No callback calls the controller's goal methods. Each checks what it can alone (counts,
files, the message's own numbers; a key-pose spline is fitted from a read of where the
effector is), then posts the rest to the node's :class:`~ik_control.control.inbox.Inbox`
(``post``): the tick runs it at its start, with its own time, before it takes
joint_states. So frames are placed at the commanded state
of that tick, a stamp-zero goal starts at that tick, and a target stream for one effector
costs one entry a tick (posted under the effector's key: the newest wins). An entry that
raises :class:`~ik_control.validation.InputError` is refused by the drain.

It is a mixin of :class:`~ik_control.ros.ik_controller_node.IkControllerNode`, whose
``post`` and ``read``, ``controller`` (only inside entries), ``_stamp_seconds``, refusals
(``refuse``), ``frames``, obstacle markers and
goal publishers it uses; the node creates the subscriptions.
"""

import os

from geometry_msgs.msg import PoseStamped, TwistStamped
from ik_control import robots
from ik_control.control.spline_path import KeyPosePath, MAX_KEYS
from ik_control.control.velocity_profile import load_profile, ProfileMotion
from ik_control.ros.conversions import pose_to_matrix
from ik_control.ros.ik_controller_parameters import profile_request
from ik_control.ros.obstacle_markers import MAX_MARKERS
from ik_control.validation import IkControlError, InputError
import numpy as np
from rclpy.serialization import deserialize_message

__all__ = ['GoalTopics']


class GoalTopics:
    """The goal callbacks of ``ik_controller`` (module docstring)."""

    def _on_joint_trajectory(self, raw):
        """Follow a joint trajectory (header stamp zero: from the tick that takes it)."""
        try:
            stamp, names, times, positions, velocities = self._joint_trajectory_reader.read(raw)
        except (InputError, ValueError) as exc:
            self.refuse(f'joint_trajectory: {exc}')
            return

        def follow(now):
            try:
                self.controller.set_joint_trajectory(names, times, positions, velocities,
                                                     stamp if stamp != 0.0 else now)
            except (InputError, ValueError) as exc:
                raise InputError(f'joint_trajectory: {exc}') from None
        self.post(follow)

    def _on_pose(self, ee, raw):
        """Take a PoseStamped (bytes) for ``ee``: the newest of a tick is its goal."""
        msg = deserialize_message(raw, PoseStamped)

        def aim(now):
            T = pose_to_matrix(msg.pose, f'{ee} target')
            T = self.frames.to_base(msg.header.frame_id, T, msg.header.stamp)
            if not np.all(np.isfinite(T)):
                raise InputError(f'{ee} target is not finite in the base frame')
            self.controller.set_target_matrix(ee, T)
            self.announce_goal()
        self.post(aim, key=('target_pose', ee))

    def _on_path(self, ee, msg):
        """
        Follow a nav_msgs/Path of key poses (module docstring).

        The spline is fitted here, off the tick (under a millisecond for a few poses, a
        third of a second for ``MAX_KEYS``), from where the effector is at a read of the
        controller; the tick that takes it starts it.
        """
        if not 0 < len(msg.poses) <= MAX_KEYS:
            self.refuse(f'{ee} target_path has {len(msg.poses)} poses: give 1 to {MAX_KEYS}')
            return
        origin = msg.header.stamp
        offsets = np.array([(p.header.stamp.sec - origin.sec)
                            + 1e-9 * (p.header.stamp.nanosec - origin.nanosec)
                            for p in msg.poses])

        frames = [p.header.frame_id or msg.header.frame_id for p in msg.poses]

        def look(c, now):  # model frames are placed at the commanded state (once each)
            placed = {f: self.frames.to_base(f, np.eye(4), msg.header.stamp)
                      for f in set(frames)}
            return (placed, *c.motion_start(ee, now))
        try:
            local = [pose_to_matrix(p.pose, f'{ee} target_path pose {k}')
                     for k, p in enumerate(msg.poses)]
            placed, start, twist = self.read(look)
            poses = np.array([placed[f] @ T for f, T in zip(frames, local)])
            if not np.all(np.isfinite(poses)):
                raise InputError(f'{ee} target_path is not finite in the base frame')
            path = KeyPosePath(0.0, start, offsets, poses, twist)  # checks the times
        except InputError as exc:
            self.refuse(str(exc))
            return
        self.post(lambda now: self._start_motion(ee, path, now,
                                                 f'a path of {len(offsets)} key poses'))

    def _on_profile(self, ee, msg):
        """Play a velocity profile: a name or file, or ``{profile, perturbation, seed}``."""
        try:
            name, perturbation, seed = profile_request(msg.data)
            path = name
            if name and os.sep not in name and not name.endswith('.yaml'):
                try:
                    path = robots.motion_path(name)
                except IkControlError:
                    raise InputError(f"{ee} velocity_profile '{name}' is neither a file nor "
                                     'a profile in config/motions') from None
            profile = load_profile(path)  # the file is read here, off the tick
        except InputError as exc:
            self.refuse(str(exc))
            return

        def play(now):  # from where the effector is at this tick: no jump
            start, _ = self.controller.motion_start(ee, now)
            self._start_motion(ee, ProfileMotion(profile, start, perturbation, seed), now,
                               f"velocity profile '{profile.name}'")
        self.post(play)

    def _start_motion(self, ee, motion, now, what):
        """Hand a moving goal to the controller at the tick ``now`` [s] and say so."""
        self.controller.follow_motion(ee, motion, now, what)
        self.announce_goal()

    def _on_twist(self, ee, raw):
        """
        Follow a velocity goal given in the axes of ``header.frame_id``.

        Any frame of the model (the end effector's own: tool-frame jogging, as MoveIt
        Servo's command frame) or of tf2; its rotation at the commanded state turns both
        vectors into base axes: ``v_base = R v``, ``w_base = R w``. The twist still
        moves the effector's own point. A stamp-zero twist starts at the tick that takes it.
        """
        msg = deserialize_message(raw, TwistStamped)

        def aim(now):
            R = self.frames.to_base(msg.header.frame_id, np.eye(4), msg.header.stamp)[:3, :3]
            stamp = self._stamp_seconds(msg.header.stamp)
            if stamp != 0.0 and abs(now - stamp) > max(1.0, self.controller.config.twist_timeout):
                raise InputError(f'{ee} target_twist stamp is {now - stamp:.3g} s away from '
                                 'now')
            t = msg.twist
            self.controller.set_twist_target(ee, R @ [t.linear.x, t.linear.y, t.linear.z],
                                             R @ [t.angular.x, t.angular.y, t.angular.z], now)
        self.post(aim, key=('target_twist', ee))

    def _on_obstacles(self, msg):
        """Apply a MarkerArray to the obstacle set, marker by marker (module docstring)."""
        if len(msg.markers) > MAX_MARKERS:
            self.refuse(f'obstacles: {len(msg.markers)} markers in one message, at most '
                        f'{MAX_MARKERS} are taken')
            return

        def apply(now):
            changed = False
            for marker in msg.markers:  # model frames: at the commanded state
                try:
                    changed |= self._markers.apply(marker, self.frames.to_base)
                except InputError as exc:
                    self.refuse(f"obstacle '{marker.ns}' {marker.id}: {exc}", now)
            if changed:
                self.controller.set_obstacle_shapes(self._markers.shapes())
        self.post(apply)

    def _on_hold(self, request, response):
        self.post(lambda now: self.controller.hold())
        response.success = True
        response.message = 'holding the current pose from the next tick; goals paused until ' \
                           '~/resume'
        return response

    def _on_resume(self, request, response):
        self.post(lambda now: self.controller.resume())
        response.success = True
        response.message = 'following the paused goals again from the next tick'
        return response

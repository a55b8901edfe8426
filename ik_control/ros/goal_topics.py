"""
The ``ik_controller`` node's goal inputs: messages in, controller calls out.

:class:`GoalTopics` holds the callbacks of the node's goal topics and services (target
poses, twists, key-pose paths, velocity profiles, joint trajectories, obstacle markers,
``~/hold`` and ``~/resume``). Their frames go through the node's
:class:`~ik_control.ros.frame_resolver.FrameResolver` (``frames``), the action's too:
the base frame as it is, other frames of the model placed at the commanded state, the
rest through tf2 where tf2_ros is installed. A
message that cannot be followed is refused (:meth:`IkControllerNode._refuse
<ik_control.ros.ik_controller_node.IkControllerNode._refuse>`): the command does not
change.

It is a mixin of :class:`~ik_control.ros.ik_controller_node.IkControllerNode`, whose
``controller``, ``model``, ``lock``, clock (``_now``, ``_stamp_seconds``), refusals,
``frames``, obstacle markers and goal publishers it uses; the node creates the
subscriptions.
"""

import os

from ik_control import robots
from ik_control.control.spline_path import KeyPosePath, MAX_KEYS
from ik_control.control.velocity_profile import load_profile, ProfileMotion
from ik_control.ros.conversions import pose_to_matrix
from ik_control.ros.ik_controller_parameters import profile_request
from ik_control.ros.obstacle_markers import MAX_MARKERS
from ik_control.validation import IkControlError, InputError
import numpy as np

__all__ = ['GoalTopics']


class GoalTopics:
    """The goal callbacks of ``ik_controller`` (module docstring)."""

    def _on_joint_trajectory(self, raw):
        """Follow a joint trajectory (header stamp zero: from now)."""
        try:
            stamp, names, times, positions, velocities = self._joint_trajectory_reader.read(raw)
            start = stamp if stamp != 0.0 else self._now()
            self.controller.set_joint_trajectory(names, times, positions, velocities, start)
        except (InputError, ValueError) as exc:
            self._refuse(f'joint_trajectory: {exc}')

    def _on_pose(self, ee, msg):
        try:
            T = pose_to_matrix(msg.pose, f'{ee} target')
            T = self.frames.to_base(msg.header.frame_id, T, msg.header.stamp)
            if not np.all(np.isfinite(T)):
                raise InputError(f'{ee} target is not finite in the base frame')
            self.controller.set_target_matrix(ee, T)
            self._publish_goal(force=True)
        except InputError as exc:
            self._refuse(str(exc))

    def _on_path(self, ee, msg):
        """Follow a nav_msgs/Path of key poses (module docstring)."""
        try:
            if not 0 < len(msg.poses) <= MAX_KEYS:
                raise InputError(f'{ee} target_path has {len(msg.poses)} poses: give 1 to '
                                 f'{MAX_KEYS}')
            origin = msg.header.stamp
            offsets = np.array([(p.header.stamp.sec - origin.sec)
                                + 1e-9 * (p.header.stamp.nanosec - origin.nanosec)
                                for p in msg.poses])
            poses = np.empty((len(msg.poses), 4, 4))
            with self.lock:  # other frames of the model are placed at the commanded state
                for k, p in enumerate(msg.poses):
                    frame = p.header.frame_id or msg.header.frame_id
                    T = pose_to_matrix(p.pose, f'{ee} target_path pose {k}')
                    poses[k] = self.frames.to_base(frame, T, p.header.stamp)
                now = self._now()
                start, twist = self.controller.motion_start(ee, now)
            if not np.all(np.isfinite(poses)):
                raise InputError(f'{ee} target_path is not finite in the base frame')
            path = KeyPosePath(0.0, start, offsets, poses, twist)  # checks the times
            with self.lock:  # starts now: an older reading would be a backward clock jump
                self._start_motion(ee, path, self._now(),
                                   f'a path of {len(offsets)} key poses')
        except InputError as exc:
            with self.lock:
                self._refuse(str(exc))

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
            profile = load_profile(path)
            with self.lock:
                now = self._now()
                start, _ = self.controller.motion_start(ee, now)
                self._start_motion(ee, ProfileMotion(profile, start, perturbation, seed), now,
                                   f"velocity profile '{profile.name}'")
        except InputError as exc:
            with self.lock:
                self._refuse(str(exc))

    def _start_motion(self, ee, motion, now, what):
        """Hand a moving goal to the controller and say so (call with the lock held)."""
        self.controller.follow_motion(ee, motion, now, what)
        self._publish_goal(force=True)

    def _on_twist(self, ee, msg):
        """
        Follow a velocity goal given in the axes of ``header.frame_id``.

        Any frame of the model (the end effector's own: tool-frame jogging, as MoveIt
        Servo's command frame) or of tf2; its rotation at the commanded state turns both
        vectors into base axes: ``v_base = R v``, ``w_base = R w``. The twist still
        moves the effector's own point.
        """
        try:
            R = self.frames.to_base(msg.header.frame_id, np.eye(4), msg.header.stamp)[:3, :3]
            now = self._now()
            stamp = self._stamp_seconds(msg.header.stamp)
            if stamp != 0.0 and abs(now - stamp) > max(1.0, self.controller.config.twist_timeout):
                raise InputError(f'{ee} target_twist stamp is {now - stamp:.3g} s away from '
                                 'now')
            t = msg.twist
            self.controller.set_twist_target(ee, R @ [t.linear.x, t.linear.y, t.linear.z],
                                             R @ [t.angular.x, t.angular.y, t.angular.z], now)
        except InputError as exc:
            self._refuse(str(exc))

    def _on_obstacles(self, msg):
        """Apply a MarkerArray to the obstacle set, marker by marker (module docstring)."""
        if len(msg.markers) > MAX_MARKERS:
            with self.lock:
                self._refuse(f'obstacles: {len(msg.markers)} markers in one message, at most '
                             f'{MAX_MARKERS} are taken')
            return
        with self.lock:  # frames of the model are placed at the commanded state
            changed = False
            for marker in msg.markers:
                try:
                    changed |= self._markers.apply(marker, self.frames.to_base)
                except InputError as exc:
                    self._refuse(f"obstacle '{marker.ns}' {marker.id}: {exc}")
            if changed:
                self.controller.set_obstacle_shapes(self._markers.shapes())

    def _on_hold(self, request, response):
        with self.lock:
            self.controller.hold()
        self._log_events()
        response.success = True
        response.message = 'holding the current pose; goals paused until ~/resume'
        return response

    def _on_resume(self, request, response):
        with self.lock:
            self.controller.resume()
        self._log_events()
        response.success = True
        response.message = 'following the paused goals again'
        return response

"""
One rule for the frame a goal is given in, shared by every node that takes goals.

:class:`FrameResolver` expresses a placement ``T`` given in ``frame_id`` in the model's
base frame: ``T`` itself in ``base_frame`` (or with an empty frame_id); ``T_frame T`` for
a frame of the robot model, ``T_frame`` its placement by forward kinematics at the
configuration the node names (the controller's commanded state, the robot's measured
one); ``T_tf T`` for any other frame, looked up in tf2 (latest transform) where tf2_ros
is installed, made at the first such goal. Anything else is an :class:`InputError` whose
message starts ``unknown frame '<frame_id>'``, so a refusal reads the same on
``ik_controller``'s topics and action, the planner and the style adapter.
"""

from ik_control.validation import finite_vector, InputError, quaternion_to_matrix, unit_quaternion
import numpy as np

__all__ = ['FrameResolver']


class FrameResolver:
    """
    The frame rule (module docstring) for ``model`` on ``node``.

    ``configuration()`` returns the joint values [rad or m] at which the model's frames
    are placed, or None while there are none (then a goal in a model frame is refused).
    The caller holds whatever lock guards that configuration.
    """

    def __init__(self, model, node, configuration):
        self.model, self.node, self.configuration = model, node, configuration
        self._tf_buffer = None
        self._tf_listener = None

    def to_base(self, frame_id, T, stamp=None):
        """Return ``T`` (4x4 in ``frame_id``) in the base frame, or raise InputError."""
        model = self.model
        if frame_id in ('', model.base_frame):
            return T
        if model.pin_model.existFrame(frame_id):
            q = self.configuration()
            if q is None:
                raise InputError(f"frame '{frame_id}': no joint state yet to place it")
            return model.pin_frame_placement(q, frame_id) @ T
        return self._lookup_tf(frame_id) @ T

    def _lookup_tf(self, frame_id):
        """Return the latest tf2 transform of ``frame_id`` in the base frame (4x4)."""
        if self._tf_buffer is None:
            try:
                import tf2_ros
            except ImportError:
                raise InputError(f"unknown frame '{frame_id}': not a frame of the robot "
                                 'model, and tf2_ros is not installed') from None
            self._tf_buffer = tf2_ros.Buffer()
            self._tf_listener = tf2_ros.TransformListener(self._tf_buffer, self.node)
        try:
            import rclpy.time
            tf = self._tf_buffer.lookup_transform(self.model.base_frame, frame_id,
                                                  rclpy.time.Time())
        except Exception as exc:  # noqa: B902 - tf2 raises several unrelated types
            raise InputError(f"unknown frame '{frame_id}': no transform to "
                             f"'{self.model.base_frame}' ({exc})") from None
        t, r = tf.transform.translation, tf.transform.rotation
        M = np.eye(4)
        M[:3, :3] = quaternion_to_matrix(unit_quaternion([r.x, r.y, r.z, r.w]))
        M[:3, 3] = finite_vector([t.x, t.y, t.z], 3, 'transform')
        return M

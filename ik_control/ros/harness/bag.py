"""
A rosbag2 of what a run publishes, written without a ROS installation (``rosbags``).

:class:`BagRecorder` subscribes to topics on an rclpy node as serialized messages and
writes their CDR bytes unchanged into a rosbag2 (sqlite3 storage, format version 8, the
message definitions of ROS 2 Kilted from ``rosbags``' type store), stamped with the time
they were received [ns, system clock]. ``ros2 bag play``, ``ros2 bag info``, RViz through
playback, PlotJuggler and Foxglove open it. The bytes are DDS's, Fast-CDR's trailing
padding included, which ``rosbags``' own CDR decoder refuses ("CDR message size
mismatch"): read them with ``rosbags.rosbag2.Reader`` and decode them with rclpy's
``deserialize_message``, as ``test/test_demo.py`` does.
"""

import time

from ik_control.validation import InputError


def message_type_name(cls):
    """Return the ROS name of a message class: ``sensor_msgs/msg/JointState``."""
    return f"{cls.__module__.split('.')[0]}/msg/{cls.__name__}"


class BagRecorder:
    """
    Record ``topics`` (``(name, message class, qos)``) seen by ``node`` into ``path``.

    ``path`` must not exist yet (rosbag2 makes the directory; ``rosbags`` refuses an
    existing one). Raises :class:`~ik_control.validation.InputError` where ``rosbags`` is
    not installed.
    """

    def __init__(self, node, path, topics):
        try:
            from rosbags.rosbag2 import Writer
            from rosbags.typesys import get_typestore, Stores
        except ImportError:
            raise InputError('--bag needs the rosbags package (pip install rosbags; make '
                             'venv installs it)') from None
        store = get_typestore(Stores.ROS2_KILTED)
        self.path = path
        self.counts = {}
        self._writer = Writer(path, version=8)
        self._writer.open()
        self._subscriptions = []
        for topic, cls, qos in topics:
            connection = self._writer.add_connection(topic, message_type_name(cls),
                                                     typestore=store)
            self.counts[topic] = 0
            self._subscriptions.append(node.create_subscription(
                cls, topic, lambda raw, c=connection, t=topic: self._write(c, t, raw), qos,
                raw=True))

    def _write(self, connection, topic, raw):
        self._writer.write(connection, time.time_ns(), bytes(raw))
        self.counts[topic] += 1

    def close(self):
        """Finish the bag (its metadata.yaml is written now)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None

"""Serialized joint_states and commands (ik_control.ros.cdr) against rclpy's own."""

from hypothesis import given, settings, strategies as st
from ik_control.ros.cdr import JointStateReader, SerializedTemplate
import numpy as np
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

NAMES = st.lists(st.text(st.characters(min_codepoint=33, max_codepoint=0x2fff), max_size=12),
                 max_size=9)
FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)


def _state(frame, names, positions, velocities, sec=12, nanosec=345):
    msg = JointState(name=names, position=positions, velocity=velocities)
    msg.header.frame_id = frame
    msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
    return msg


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=9), NAMES, st.data())
def test_reader_reads_what_rclpy_reads_whatever_the_layout(frame, names, data):
    reader = JointStateReader()
    for _ in range(3):  # the first read learns the layout, the next ones use it
        n = data.draw(st.sampled_from([len(names), max(0, len(names) - 1), len(names) + 1]))
        positions = data.draw(st.lists(FLOATS, min_size=n, max_size=n))
        velocities = data.draw(st.lists(FLOATS, max_size=3))
        raw = serialize_message(_state(frame, names, positions, velocities))
        stamp, got_names, got = reader.read(raw)
        expected = deserialize_message(raw, JointState)
        assert got_names == tuple(expected.name)
        np.testing.assert_array_equal(got, np.array(expected.position))
        assert stamp == 12 + 345e-9


def test_a_steady_stream_is_read_through_the_remembered_layout():
    reader = JointStateReader()
    names = [f'joint_{i}' for i in range(16)]
    rng = np.random.default_rng(0)
    for k in range(50):
        q = rng.normal(size=16)
        _, got_names, got = reader.read(serialize_message(_state('base', names, q.tolist(),
                                                                 [], sec=k)))
        np.testing.assert_array_equal(got, q)
        assert got_names == tuple(names)
    assert reader.fast_reads == 49
    # other names in the same number of bytes are not taken for the remembered ones
    renamed = [f'joint_{i}' for i in range(15)] + ['joint_X']
    _, got_names, _ = reader.read(serialize_message(_state('base', renamed, q.tolist(), [])))
    assert got_names == tuple(renamed) and reader.fast_reads == 49


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 20), st.data())
def test_command_template_serializes_what_rclpy_would(n, data):
    names = [f'j{i}' for i in range(n)]
    msg = JointTrajectory(joint_names=names, points=[JointTrajectoryPoint()])
    msg.points[0].time_from_start.nanosec = 1_000_000
    template = SerializedTemplate(msg, {
        'positions': lambda m, v: setattr(m.points[0], 'positions', v),
        'velocities': lambda m, v: setattr(m.points[0], 'velocities', v)}, n)
    for _ in range(3):
        q = np.array(data.draw(st.lists(FLOATS, min_size=n, max_size=n)))
        v = np.array(data.draw(st.lists(FLOATS, min_size=n, max_size=n)))
        template.view('positions')[:] = q
        template.view('velocities')[:] = v
        got = deserialize_message(template.payload(), JointTrajectory)
        assert list(got.joint_names) == names and len(got.points) == 1
        point = got.points[0]
        np.testing.assert_array_equal(point.positions, q)
        np.testing.assert_array_equal(point.velocities, v)
        assert len(point.accelerations) == len(point.effort) == 0
        assert (point.time_from_start.sec, point.time_from_start.nanosec) == (0, 1_000_000)


def test_state_template_carries_the_stamp():
    names = ['a', 'bb', 'ccc']
    template = SerializedTemplate(JointState(name=names), {
        'position': lambda m, v: setattr(m, 'position', v),
        'velocity': lambda m, v: setattr(m, 'velocity', v)}, 3)
    template.set_stamp(1_700_000_000_123_456_789)
    template.view('position')[:] = [1.0, 2.0, 3.0]
    msg = deserialize_message(template.payload(), JointState)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (1_700_000_000, 123_456_789)
    assert list(msg.name) == names and list(msg.position) == [1.0, 2.0, 3.0]
    assert list(msg.velocity) == [0.0, 0.0, 0.0]

"""Integration tests of the sim_robot node: real rclpy, real DDS, node in a subprocess."""

import time

from ik_control.ros.conversions import (
    arrays_to_joint_state, arrays_to_joint_trajectory, joint_trajectory_to_arrays, time_to_sec,
    write_float_array)
from ik_control.ros.parameters import StartupError
from ik_control.ros.sim_robot_node import make_sim, PARAMETERS
import numpy as np
import pytest
from rclpy.qos import QoSDurabilityPolicy, QoSProfile, QoSReliabilityPolicy
from ros_helpers import NodeProcess, RosTestContext
from sensor_msgs.msg import JointState
from sim_test_urdf import three_joint_urdf
from trajectory_msgs.msg import JointTrajectory

MODULE = 'ik_control.ros.sim_robot_node'
NAMES = ['j1', 'j2', 'j3', 'finger_left']
Q0 = [0.1, 0.2, 0.3, 0.0]
TRAJ_TOPIC = 'joint_trajectory_controller/joint_trajectory'


@pytest.fixture(scope='module')
def urdf_path(tmp_path_factory):
    path = tmp_path_factory.mktemp('urdf') / 'three.urdf'
    path.write_text(three_joint_urdf(gripper=True))
    return str(path)


@pytest.fixture(scope='module')
def ctx():
    with RosTestContext('sim_robot_test') as context:
        yield context


@pytest.fixture(scope='module')
def bad_startups(urdf_path, tmp_path_factory):
    """Start every bad configuration at once (they run in parallel) and collect them."""
    bad_xml = tmp_path_factory.mktemp('bad') / 'bad.urdf'
    bad_xml.write_text('<robot name="x"><link name="a"></robot>')
    cases = {
        'backend': (['-p', 'urdf_path:=' + urdf_path, '-p', 'backend:=gazebo'],
                    "unknown backend 'gazebo'; choose one of kinematic, mujoco"),
        'missing_file': (['-p', 'urdf_path:=/nonexistent/robot.urdf'],
                         "URDF file '/nonexistent/robot.urdf' does not exist"),
        'bad_xml': (['-p', 'urdf_path:=' + str(bad_xml)], 'URDF is not valid XML'),
        'no_robot': ([], 'no robot description'),
        'initial_positions': (['-p', 'urdf_path:=' + urdf_path,
                               '-p', 'initial_positions:=[0.0, 1.0]'],
                              "initial_positions has 2 values for 4 joints ['j1'"),
        'unknown_joint': (['-p', 'urdf_path:=' + urdf_path, '-p', 'joints:=[j1, elbow]'],
                          "unknown joints ['elbow']"),
        'rate_range': (['-p', 'urdf_path:=' + urdf_path, '-p', 'rate_hz:=0.5'],
                       "parameter 'rate_hz'"),
    }
    procs = {key: (NodeProcess(MODULE, args), expected)
             for key, (args, expected) in cases.items()}
    results = {}
    for key, (proc, expected) in procs.items():
        try:
            rc = proc.wait(timeout=60.0)  # seven nodes start at once: slow on a busy machine
        finally:
            proc.stop()
        results[key] = (rc, proc.stderr, expected)
    return results


@pytest.fixture(scope='module')
def kinematic_node(urdf_path, ctx):
    # the trajectories of these tests step faster than the joints' limits: the JTC
    # semantics are checked without the robot-side saturation (test_sim_core checks it)
    args = ['-r', '__ns:=/kin', '-p', 'urdf_path:=' + urdf_path, '-p', 'enforce_limits:=false',
            '-p', 'initial_positions:=[%s]' % ', '.join(str(q) for q in Q0)]
    with NodeProcess(MODULE, args) as proc:
        states = ctx.collect(JointState, '/kin/joint_states')
        pub = ctx.node.create_publisher(JointTrajectory, '/kin/' + TRAJ_TOPIC, 10)
        try:
            states.wait(timeout=15.0)
        except TimeoutError:
            pytest.fail('no joint_states from sim_robot; stderr:\n' + proc.stderr)
        assert ctx.wait_for_subscribers(pub)
        yield proc, states, pub
        assert proc.stop() == 0


def positions(msg):
    return np.asarray(msg.position)


def near(target, atol):
    return lambda msg: np.allclose(positions(msg), target, atol=atol)


def test_publishes_joint_states(kinematic_node, ctx):
    _, states, _ = kinematic_node
    msg = states.wait()
    assert list(msg.name) == NAMES
    np.testing.assert_allclose(positions(msg), Q0)
    np.testing.assert_allclose(msg.velocity, 0.0)
    assert len(msg.effort) == 0
    assert abs(time_to_sec(msg.header.stamp) - time.time()) < 1.0
    states.clear()
    ctx.spin_for(0.5)
    # 500 Hz nominal, judged by the stamps: this process may drop messages (depth 10)
    # when it is slow to take them, and counting them measured this process (56 of 250
    # once, under load), while consecutive ones it took are a publishing period apart
    stamps = np.array([time_to_sec(m.header.stamp) for m in states.messages])
    assert len(stamps) >= 10 and stamps[-1] - stamps[0] > 0.3
    gaps = np.diff(stamps)
    assert np.all(gaps > 0) and np.median(gaps) < 0.004, np.round(gaps * 1e3, 2)


def test_moves_to_commanded_position(kinematic_node, ctx):
    _, states, pub = kinematic_node
    target = [0.5, -0.4, 1.0, 0.02]
    pub.publish(arrays_to_joint_trajectory(NAMES, [0.3], [target]))
    states.wait(near(target, 1e-9), timeout=5.0)
    # then at rest there (the velocity is the motion over the step to each sample; the
    # first sample within 1e-9 may still end the approach, microseconds before its end)
    msg = states.wait(lambda m: near(target, 1e-9)(m) and not np.any(m.velocity), 1.0)
    # and it stays
    for msg in [states.wait(timeout=1.0) for _ in range(5)]:
        assert near(target, 1e-9)(msg)
        np.testing.assert_allclose(msg.velocity, 0.0)


def test_partial_trajectory_moves_named_joints_only(kinematic_node, ctx):
    _, states, pub = kinematic_node
    start = positions(states.wait()).copy()
    pub.publish(arrays_to_joint_trajectory(['j3', 'j1'], [0.1, 0.2], [[0.0, 0.0], [-0.5, 0.7]],
                                           [[0.0, 0.0], [0.0, 0.0]]))
    expected = start.copy()
    expected[[2, 0]] = [-0.5, 0.7]
    states.wait(near(expected, 1e-9), timeout=5.0)


def test_invalid_trajectory_is_rejected_and_state_unchanged(kinematic_node, ctx):
    proc, states, pub = kinematic_node
    before = positions(states.wait()).copy()
    pub.publish(arrays_to_joint_trajectory(['j1', 'bogus'], [0.2], [[1.0, 1.0]]))
    bad_time = arrays_to_joint_trajectory(['j1'], [0.2, 0.1], [[1.0], [1.1]])
    pub.publish(bad_time)
    ctx.spin_for(0.5)
    np.testing.assert_array_equal(positions(states.wait()), before)
    deadline = time.monotonic() + 5.0
    while "unknown joint name(s) ['bogus']" not in proc.stderr and time.monotonic() < deadline:
        ctx.spin_for(0.1)
    assert "rejected trajectory: unknown joint name(s) ['bogus']" in proc.stderr
    # A valid trajectory afterwards is still obeyed.
    pub.publish(arrays_to_joint_trajectory(['j1'], [0.1], [[-0.3]]))
    states.wait(lambda m: abs(m.position[0] + 0.3) < 1e-9, timeout=5.0)


def test_mujoco_backend_tracks_trajectory(urdf_path, ctx):
    args = ['-r', '__ns:=/mj', '-p', 'urdf_path:=' + urdf_path, '-p', 'backend:=mujoco',
            '-p', 'enforce_limits:=false',
            '-p', 'joints:=[j1, j2, j3]', '-p', 'gravity_compensation:=false',
            '-p', 'rate_hz:=250.0']
    with NodeProcess(MODULE, args) as proc:
        states = ctx.collect(JointState, '/mj/joint_states')
        qos = QoSProfile(depth=1, reliability=QoSReliabilityPolicy.RELIABLE,
                         durability=QoSDurabilityPolicy.VOLATILE)
        pub = ctx.node.create_publisher(JointTrajectory, '/mj/' + TRAJ_TOPIC, qos)
        try:
            first = states.wait(timeout=15.0)
        except TimeoutError:
            pytest.fail('no joint_states from sim_robot (mujoco); stderr:\n' + proc.stderr)
        assert list(first.name) == ['j1', 'j2', 'j3']
        assert ctx.wait_for_subscribers(pub)
        target = [0.4, 0.6, -0.5]
        pub.publish(arrays_to_joint_trajectory(['j1', 'j2', 'j3'], [0.2, 0.4],
                                               [[0.2, 0.3, -0.2], target]))
        states.wait(near(target, 1e-2), timeout=5.0)
        ctx.node.destroy_publisher(pub)
        ctx.node.destroy_subscription(states.subscription)
        assert proc.stop() == 0, proc.stderr
        assert 'Traceback' not in proc.stderr


@pytest.mark.parametrize('case', ['backend', 'missing_file', 'bad_xml', 'no_robot',
                                  'initial_positions', 'unknown_joint', 'rate_range'])
def test_bad_startup_parameters_exit_2_with_clear_message(bad_startups, case):
    rc, stderr, expected = bad_startups[case]
    assert rc == 2, stderr
    assert expected in stderr
    assert '[sim_robot] startup failed: ' in stderr
    assert len([line for line in stderr.splitlines() if 'startup failed' in line]) == 1
    assert 'Traceback' not in stderr


# ------------------------------------------------- conversions (no DDS needed)

def test_joint_trajectory_round_trip_and_shape_errors():
    msg = arrays_to_joint_trajectory(['a', 'b'], [0.5, 1.25], [[1.0, 2.0], [3.0, 4.0]],
                                     [[0.0, 0.1], [0.2, 0.3]], stamp=12.5)
    arr = joint_trajectory_to_arrays(msg)
    assert arr.joint_names == ('a', 'b') and arr.start_time == 12.5
    np.testing.assert_allclose(arr.times, [0.5, 1.25])
    np.testing.assert_allclose(arr.positions, [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(arr.velocities, [[0.0, 0.1], [0.2, 0.3]])
    assert joint_trajectory_to_arrays(
        arrays_to_joint_trajectory(['a'], [1.0], [[0.0]])).velocities is None
    msg.points[1].positions = [1.0]
    with pytest.raises(ValueError, match='point 1 has 1 positions for 2 joint_names'):
        joint_trajectory_to_arrays(msg)
    msg.points[1].positions = [1.0, 2.0]
    msg.points[1].velocities = []
    with pytest.raises(ValueError, match='velocities are given for 1 of 2 points'):
        joint_trajectory_to_arrays(msg)


def test_joint_state_and_float_arrays_fill_in_place():
    msg = arrays_to_joint_state(['a', 'b', 'c'], [1.0, 2.0, 3.0], [0.1, 0.2, 0.3], stamp=2.5)
    buf = msg.position
    same = arrays_to_joint_state(['a', 'b', 'c'], np.array([4.0, 5.0, 6.0]), None, msg=msg)
    assert same is msg and msg.position is buf  # refilled in place
    assert list(msg.position) == [4.0, 5.0, 6.0] and len(msg.velocity) == 0
    assert time_to_sec(msg.header.stamp) == 2.5
    for values in ([7.0, 8.0, 9.0], np.array([7, 8, 9]), np.array([7.0, 0, 8.0, 0, 9.0])[::2],
                   np.array([[7.0, 8.0, 9.0]], dtype=np.float32)):
        write_float_array(msg, 'position', values)  # converted, still in place
        assert msg.position is buf and list(msg.position) == [7.0, 8.0, 9.0]
    write_float_array(msg, 'position', np.array([1.0, 2.0]))  # new length: new array
    assert msg.position is not buf and list(msg.position) == [1.0, 2.0]
    write_float_array(msg, 'position', None)
    assert len(msg.position) == 0


def test_a_joint_without_a_velocity_limit_is_a_startup_error_not_a_joint_that_never_moves():
    # a continuous joint may come without <limit> (pinocchio then says velocity 0): with
    # enforce_limits the simulated robot would clamp every setpoint to 0 rad/s
    xml = three_joint_urdf().replace(
        '<joint name="j1" type="revolute"', '<joint name="j1" type="continuous"').replace(
        '<limit lower="-2" upper="2" effort="100" velocity="2"/>', '', 1)
    values = {name: param.default if type(param.default) in (bool, int, float, str, list)
              else [] for name, param in PARAMETERS.items()}  # (arrays default to empty)
    values['robot_description'] = xml
    with pytest.raises(StartupError, match=r"joints \['j1'\] have no velocity limit"):
        make_sim(values, 0.0)
    values['enforce_limits'] = False
    assert make_sim(values, 0.0).robot_model.nq == 3

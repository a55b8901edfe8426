"""Robots from DH files (SAM sec. II, Table 1): the file, its URDF and eq. (1)-(2), (4)."""

import os

from hypothesis import given, settings, strategies as st
from ik_control import cli, robots
from ik_control.kinematics import RobotModel
from ik_control.kinematics.dh import dh_forward, dh_transform, sam_robot_rows
from ik_control.kinematics.dh_file import load_dh_file, parse_dh, robot_description
from ik_control.validation import ModelError
import numpy as np
import pinocchio as pin
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAM9 = os.path.join(ROOT, 'config', 'robots', 'sam9.yaml')
WAM_DH = os.path.join(ROOT, 'config', 'robots', 'wam_dh.yaml')


def _eq1_by_factors(alpha, a, d, theta):
    """Rz(theta) Tz(d) Tx(a) Rx(alpha): the four motions SAM sec. II composes into eq. (1)."""
    rz = pin.SE3(pin.utils.rotate('z', theta), np.zeros(3))
    tz = pin.SE3(np.eye(3), np.array([0.0, 0.0, d]))
    tx = pin.SE3(np.eye(3), np.array([a, 0.0, 0.0]))
    rx = pin.SE3(pin.utils.rotate('x', alpha), np.zeros(3))
    return (rz * tz * tx * rx).homogeneous


@settings(max_examples=60, deadline=None)
@given(st.floats(-4, 4), st.floats(-2, 2), st.floats(-2, 2), st.floats(-7, 7))
def test_eq1_matrix_is_the_product_of_its_four_motions(alpha, a, d, theta):
    np.testing.assert_allclose(dh_transform(alpha, a, d, theta),
                               _eq1_by_factors(alpha, a, d, theta), atol=1e-12)


def _product_of_eq1(robot, q):
    """Tool placement as base * A_1 ... A_n * tool with every A from the four motions."""
    T = robot.base.copy()
    for row, qi in zip(robot.rows, q):
        if row.kind == 'revolute':
            T = T @ _eq1_by_factors(row.alpha, row.a, row.d, qi + row.offset)
        else:
            T = T @ _eq1_by_factors(row.alpha, row.a, row.d + qi + row.offset, 0.0)
    return T @ robot.tool


PRISMATIC_FILE = {
    'name': 'mixed', 'angle_unit': 'deg', 'base': {'xyz': [0.1, -0.2, 0.3], 'rpy': [10, 20, 30]},
    'tool': {'xyz': [0.0, 0.0, 0.12], 'rpy': ['pi/2', 0, '-0.25*pi']},
    'joints': [{'alpha': 90, 'a': 0.1, 'd': 0.3, 'offset': 20},
               {'type': 'prismatic', 'alpha': -90, 'a': 0.0, 'd': 0.2, 'offset': 0.1,
                'lower': 0.0, 'upper': 0.6, 'velocity': 0.3},
               {'alpha': 0, 'a': 0.4, 'd': 0.0, 'lower': -150, 'upper': 150}]}


@pytest.mark.parametrize('which', ['sam9', 'wam_dh', 'mixed'])
def test_urdf_of_a_dh_file_equals_the_product_of_eq1_matrices(which):
    robot = parse_dh(PRISMATIC_FILE) if which == 'mixed' else load_dh_file(
        SAM9 if which == 'sam9' else WAM_DH)
    model = RobotModel.from_urdf(robot.urdf(), base_frame=robot.base_link,
                                 end_effectors=[robot.tool_link])
    for q in model.random_configurations(40, np.random.default_rng(5)):
        expected = _product_of_eq1(robot, q)
        np.testing.assert_allclose(model.frame_placements(q)[0], expected, atol=1e-12)
        np.testing.assert_allclose(robot.forward(q), expected, atol=1e-12)


def test_sam9_file_is_sam_table_1():
    robot = load_dh_file(SAM9)
    assert robot.name == 'sam9' and len(robot.rows) == 9
    q = np.random.default_rng(6).uniform(-3, 3, (20, 9))
    for qi in q:
        np.testing.assert_allclose(robot.forward(qi), dh_forward(sam_robot_rows(), qi),
                                   atol=1e-12)


def test_sam9_jacobian_is_sam_eq4():
    """Column i of J: (z_{i-1} x (p - p_{i-1}), z_{i-1}) from the frames A_{0,i-1} (eq. 4)."""
    robot = load_dh_file(SAM9)
    model = RobotModel.from_urdf(robot.urdf(), end_effectors=['tool'])
    for q in model.random_configurations(10, np.random.default_rng(7)):
        frames = [np.eye(4)]
        for row, qi in zip(robot.rows, q):
            frames.append(frames[-1] @ dh_transform(row.alpha, row.a, row.d, qi))
        p = frames[-1][:3, 3]
        expected = np.array([np.concatenate([np.cross(F[:3, 2], p - F[:3, 3]), F[:3, 2]])
                             for F in frames[:-1]]).T
        np.testing.assert_allclose(model.jacobian(q), expected, atol=1e-12)


def test_wam_dh_file_agrees_with_wam_urdf():
    """Every link frame and the tool, limits and joint names: the same robot to 1e-9."""
    urdf = robots.robot('wam')
    dh = RobotModel.from_urdf(robot_description(WAM_DH), base_frame='wam_base',
                              end_effectors=['tool'])
    assert dh.joint_names == urdf.joint_names
    np.testing.assert_array_equal(dh.lower, urdf.lower)
    np.testing.assert_array_equal(dh.upper, urdf.upper)
    np.testing.assert_array_equal(dh.velocity_limit, urdf.velocity_limit)
    frames = ['tool'] + [f'wam_link_{i}' for i in range(1, 8)]
    for q in urdf.random_configurations(100, np.random.default_rng(8)):
        for frame in frames:
            np.testing.assert_allclose(dh.pin_frame_placement(q, frame),
                                       urdf.pin_frame_placement(q, frame), atol=1e-9)
        np.testing.assert_allclose(dh.jacobian(q), urdf.jacobian(q), atol=1e-9)


@pytest.mark.parametrize('change, message', [
    ({'joints': []}, 'non-empty list'),
    ({'colour': 'red'}, 'unknown keys'),
    ({'angle_unit': 'grad'}, 'angle_unit'),
    ({'joints': [{'a': 0.1, 'd': 0.0}]}, "missing 'alpha'"),
    ({'joints': [{'alpha': 'tau/2', 'a': 0.1, 'd': 0.0}]}, 'pi'),
    ({'joints': [{'alpha': 0, 'a': float('nan'), 'd': 0.0}]}, 'finite'),
    ({'joints': [{'alpha': 0, 'a': 0.1, 'd': 0.0, 'lower': 1.0, 'upper': -1.0}]}, 'below'),
    ({'joints': [{'type': 'helical', 'alpha': 0, 'a': 0.1, 'd': 0.0}]}, 'revolute'),
    ({'joints': [{'alpha': 0, 'a': 0.1, 'd': 0.0, 'velocity': 0}]}, '> 0'),
    ({'base': {'xyz': [0, 0]}}, 'lists of 3'),
])
def test_bad_dh_files_are_refused_with_the_reason(change, message):
    data = dict(PRISMATIC_FILE)
    data.update(change)
    with pytest.raises(ModelError, match=message):
        parse_dh(data)


def test_missing_or_broken_file(tmp_path):
    with pytest.raises(ModelError, match='does not exist'):
        load_dh_file(str(tmp_path / 'none.yaml'))
    broken = tmp_path / 'broken.yaml'
    broken.write_text('joints: [alpha: 1\n')
    with pytest.raises(ModelError, match='not valid YAML'):
        load_dh_file(str(broken))


def test_cli_dh_to_urdf_and_solve_take_a_dh_file(tmp_path, capsys):
    out = tmp_path / 'sam9.urdf'
    assert cli.main(['dh-to-urdf', SAM9, '-o', str(out)]) == 0
    model = RobotModel.from_urdf(str(out), end_effectors=['tool'])
    assert model.nq == 9
    q = np.full(9, 0.3)
    target = model.frame_placements(q)[0][:3, 3]
    assert cli.main(['solve', '--urdf', SAM9, '--tip', 'tool', '--xyz', *map(str, target),
                     '--json', '--random-seed', '1']) == 0
    assert '"success": true' in capsys.readouterr().out
    assert cli.main(['dh-to-urdf', str(tmp_path / 'no.yaml')]) == cli.EXIT_USAGE


def test_urdf_visuals_draw_each_link_from_its_joint_to_the_next():
    """Cylinders along d then a: from the link's origin to the next frame's, at any q."""
    from xml.etree import ElementTree
    robot = load_dh_file(SAM9)
    urdf = robot.urdf()
    model = RobotModel.from_urdf(urdf, end_effectors=['tool'])
    links = {link.get('name'): link for link in ElementTree.fromstring(urdf).iter('link')}
    chain = list(robot.link_names) + ['tool']
    q = model.random_configurations(1, np.random.default_rng(9))[0]
    for name, following in zip(chain[:-1], chain[1:]):
        T = model.pin_frame_placement(q, name)
        points = []
        for visual in links[name].iter('visual'):
            origin = visual.find('origin')
            xyz = np.array([float(v) for v in origin.get('xyz').split()])
            axis = pin.rpy.rpyToMatrix(*[float(v) for v in origin.get('rpy').split()])[:, 2]
            half = 0.5 * float(visual.find('geometry/cylinder').get('length'))
            assert float(visual.find('geometry/cylinder').get('radius')) == 0.08
            ends = sorted([xyz - half * axis, xyz + half * axis], key=lambda p: p @ p)
            points.extend(T[:3, :3] @ p + T[:3, 3] for p in ends)
        if not points:   # a = d = 0: the next frame starts where this one does
            np.testing.assert_allclose(model.pin_frame_placement(q, following)[:3, 3],
                                       T[:3, 3], atol=1e-9)
            continue
        np.testing.assert_allclose(points[0], T[:3, 3], atol=1e-9)
        for a, b in zip(points[1:-1:2], points[2::2]):      # the two cylinders meet
            np.testing.assert_allclose(a, b, atol=1e-9)
        np.testing.assert_allclose(points[-1], model.pin_frame_placement(q, following)[:3, 3],
                                   atol=1e-9)


def test_sam9_from_its_dh_file_runs_on_the_nodes_and_reaches_a_goal():
    """
    sim_robot and ik_controller take ``urdf_path:=config/robots/sam9.yaml`` as a URDF.

    A pose goal (the forward kinematics of a configuration inside the limits) is reached,
    as measured from the robot's joint_states by pinocchio on the URDF written from the DH
    table -- not by the project's RobotModel.
    """
    from geometry_msgs.msg import PoseStamped
    from ik_control.ros.conversions import pose_stamped
    from ros_helpers import NodeProcess, RosTestContext
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Bool
    from test_ik_controller_node import LATCHED, STARTUP

    path = SAM9
    start = [-0.11, 2.18, -2.3, 0.84, 0.59, -2.09, 1.63, -0.84, 0.19]  # paint_door.yaml
    ns = '/sam9_dh'
    sim = NodeProcess('ik_control.ros.sim_robot_node', [
        '-r', f'__ns:={ns}', '-p', f'urdf_path:={path}', '-p', 'rate_hz:=200.0',
        '-p', f"initial_positions:=[{', '.join(map(str, start))}]"])
    ctl = NodeProcess('ik_control.ros.ik_controller_node', [
        '-r', f'__ns:={ns}', '-p', f'urdf_path:={path}', '-p', 'base_frame:=base_link',
        '-p', 'end_effectors:=[tool]', '-p', 'rate_hz:=200.0',
        '-p', 'joint_state_timeout:=0.5'])
    ctx = RosTestContext('sam9_tester')
    try:
        urdf = load_dh_file(path).urdf()
        model = pin.buildModelFromXML(urdf)
        data = model.createData()
        tool = model.getFrameId('tool')

        def fk(names, q):
            full = pin.neutral(model)
            for name, value in zip(names, q):
                full[model.joints[model.getJointId(name)].idx_q] = value
            pin.framesForwardKinematics(model, data, full)
            return data.oMf[tool].homogeneous.copy()

        states = ctx.collect(JointState, f'{ns}/joint_states', 50)
        reached = ctx.collect(Bool, f'{ns}/ik_controller/tool/goal_reached', LATCHED)
        pub = ctx.node.create_publisher(PoseStamped, f'{ns}/ik_controller/tool/target_pose', 10)
        assert ctx.wait_for_subscribers(pub, 1, timeout=STARTUP), ctl.stderr[-2000:]
        first = states.wait(timeout=STARTUP)
        goal = fk(first.name, np.array(start) + [0.2, -0.15, 0.1, 0.2, -0.2, 0.1, 0.2, 0.1, 0.3])
        msg = pose_stamped(goal, 'base_link')
        ctx.spin_for(1.0)  # the controller holds the start: its first commands
        reached.clear()
        pub.publish(msg)
        reached.wait(lambda m: m.data, timeout=20.0)
        ctx.spin_for(0.3)
        last = states.current()  # not one this process took late from a backlog
        T = fk(last.name, last.position)
        assert np.linalg.norm(T[:3, 3] - goal[:3, 3]) < 1e-3
        assert np.linalg.norm(pin.log3(T[:3, :3].T @ goal[:3, :3])) < 1e-2
    finally:
        ctx.close()
        for p in (ctl, sim):
            p.stop()

"""
``ik_control setup`` on arms the package does not ship, and the nodes brought up from its files.

Each arm of example-robot-data (Franka Panda, UR5, Kinova Jaco 2, and Baxter's two arms
from its base) is configured by the one command; ``sim_robot`` and ``ik_controller``
start from the written parameter file alone (real rclpy, DDS); two seeded reachable,
contact-free goals (one pose per tip) are reached, judged from the robot's own
joint_states by pinocchio on the URDF (not the package's RobotModel), and the robot's
joint speeds stay within the URDF's limits.
"""

from ik_control.bench.arms import EXAMPLE_ARMS, example_robot_urdf
from ik_control.cli import main as cli_main
from ik_control.collision.model import CollisionModel
from ik_control.kinematics import RobotModel
import numpy as np
import pinocchio as pin
import pytest
import yaml

# (the Kinova Jaco 2's test took 24 s while its STL meshes were measured as triangle
# meshes; as the convex hulls its setup file asks for, 8 s: docs/any_urdf.md)
#: arm -> (URDF under example-robot-data, base, tips): a two-armed robot has two tips
TEST_ARMS = {arm: (relative, base, [tip])
             for arm, (relative, base, tip) in EXAMPLE_ARMS.items()
             if arm in ('panda', 'ur5', 'kinova')}
TEST_ARMS['baxter'] = ('baxter_description/urdf/baxter.urdf', 'base',
                       ['left_hand_link', 'right_hand_link'])
GOALS = 2


def _setup(arm, out):
    relative, base, tips = TEST_ARMS[arm]
    urdf = example_robot_urdf(relative)
    assert cli_main(['setup', urdf, '--base', base, *[a for t in tips for a in ('--tip', t)],
                     '--out', str(out), '--name', arm, '--samples', '100',
                     '--rate', '250']) == 0
    with open(out / f'{arm}.yaml', encoding='utf-8') as stream:
        params = yaml.safe_load(stream)
    return urdf, base, tips, params


def _goals(urdf, base, tips, params, count, seed):
    """Return goal configurations near the start, clear of contact, within the limits."""
    controller = params['/**/ik_controller']['ros__parameters']
    model = RobotModel.from_urdf(urdf, base_frame=base,
                                 end_effectors=[(tip, 'pose') for tip in tips])
    assert list(model.joint_names) == controller['joints']
    srdf = open(controller['collision']['srdf_path'], encoding='utf-8').read()
    # the arms' shapes are STL meshes: the file has the controller measure their hulls
    assert controller['collision']['convex_meshes'] is True
    cm = CollisionModel(model, srdf=srdf, convex=True)
    q0 = np.array(params['/**/sim_robot']['ros__parameters']['initial_positions'])
    rng = np.random.default_rng(seed)
    goals = []
    for _ in range(500):
        q = np.clip(q0 + rng.uniform(-0.35, 0.35, q0.size), model.lower + 0.05,
                    model.upper - 0.05)
        if cm.closest(q)[0] > 0.012 and len(goals) < count:
            goals.append(q)
    assert len(goals) == count
    return model, goals


@pytest.mark.parametrize('arm', sorted(TEST_ARMS))
def test_an_unseen_arm_set_up_by_one_command_reaches_goals_on_the_nodes(arm, tmp_path):
    from geometry_msgs.msg import PoseStamped
    from ik_control.ros.conversions import pose_stamped
    from ros_helpers import NodeProcess, RosTestContext
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Bool
    from test_ik_controller_node import LATCHED, STARTUP

    urdf, base, tips, params = _setup(arm, tmp_path)
    model, goals = _goals(urdf, base, tips, params, GOALS, seed=len(arm))
    # the judge: pinocchio on the URDF file, from joint_states by name
    judge = pin.buildModelFromUrdf(urdf)
    data = judge.createData()
    tip_ids = [[i for i, f in enumerate(judge.frames)
                if f.name == tip and f.type == pin.FrameType.BODY][0] for tip in tips]
    base_id = [i for i, f in enumerate(judge.frames) if f.name == base][0]
    limit = {judge.names[j]: judge.velocityLimit[judge.joints[j].idx_v]
             for j in range(1, judge.njoints) if judge.joints[j].nv == 1}

    def tip_in_base(names, q, tip_id):
        full = pin.neutral(judge)
        for name, value in zip(names, q):
            jid = judge.getJointId(name)
            if judge.joints[jid].nq == 1:
                full[judge.joints[jid].idx_q] = value
            else:  # continuous: (cos, sin)
                k = judge.joints[jid].idx_q
                full[k:k + 2] = (np.cos(value), np.sin(value))
        pin.framesForwardKinematics(judge, data, full)
        return (data.oMf[base_id].inverse() * data.oMf[tip_id]).homogeneous

    ns = f'/setup_{arm}'
    files = ['-r', f'__ns:={ns}', '--params-file', str(tmp_path / f'{arm}.yaml')]
    sim = NodeProcess('ik_control.ros.sim_robot_node', files)
    ctl = NodeProcess('ik_control.ros.ik_controller_node', files)
    ctx = RosTestContext(f'setup_{arm}_tester')
    try:
        states = ctx.collect(JointState, f'{ns}/joint_states', 2000)
        reached = [ctx.collect(Bool, f'{ns}/ik_controller/{tip}/goal_reached', LATCHED)
                   for tip in tips]
        pubs = [ctx.node.create_publisher(PoseStamped,
                                          f'{ns}/ik_controller/{tip}/target_pose', 10)
                for tip in tips]
        for pub in pubs:
            assert ctx.wait_for_subscribers(pub, 1, timeout=STARTUP), ctl.stderr[-2000:]
        states.wait(timeout=STARTUP)
        for q in goals:
            goal = model.frame_placements(q)
            for k, pub in enumerate(pubs):
                reached[k].clear()
                pub.publish(pose_stamped(goal[k], base))

            def done(k):  # the new goal's False came, and True since
                msgs = reached[k].messages
                return any(not m.data for m in msgs) and msgs[-1].data

            assert ctx.spin_until(lambda: all(done(k) for k in range(len(tips))), 25.0), arm
            ctx.spin_for(0.2)
            last = states.current()
            for k, tip_id in enumerate(tip_ids):
                T = tip_in_base(last.name, last.position, tip_id)
                assert np.linalg.norm(T[:3, 3] - goal[k, :3, 3]) < 2e-3, (arm, tips[k])
                assert np.linalg.norm(pin.log3(T[:3, :3].T @ goal[k, :3, :3])) < 2e-2, arm
        speeds = {}
        for msg in states.messages:
            for name, v in zip(msg.name, msg.velocity):
                speeds[name] = max(speeds.get(name, 0.0), abs(v))
        assert set(model.joint_names) <= set(speeds)
        assert max(speeds[n] for n in model.joint_names) > 0.05     # it moved
        for name in model.joint_names:
            assert speeds[name] <= limit[name] * (1.0 + 1e-6), (arm, name)
    finally:
        ctx.close()
        for p in (ctl, sim):
            p.stop()


def test_a_joint_without_a_velocity_limit_gets_one_written_and_a_warning(tmp_path, capsys):
    """A continuous joint without <limit>: both nodes get DEFAULT_VELOCITY for it."""
    from ik_control.arm_setup import DEFAULT_VELOCITY

    urdf = tmp_path / 'spinner.urdf'
    urdf.write_text(
        '<?xml version="1.0"?><robot name="spinner"><link name="base"/><link name="a">'
        '<collision><geometry><box size="0.05 0.05 0.3"/></geometry></collision></link>'
        '<link name="b"/><joint name="j1" type="revolute"><parent link="base"/>'
        '<child link="a"/><axis xyz="0 1 0"/>'
        '<limit lower="-1" upper="1" velocity="2" effort="1"/></joint>'
        '<joint name="j2" type="continuous"><parent link="a"/><child link="b"/>'
        '<origin xyz="0 0 0.3"/><axis xyz="0 0 1"/></joint></robot>')
    assert cli_main(['setup', str(urdf), '--tip', 'b', '--out', str(tmp_path),
                     '--samples', '20']) == 0
    err = capsys.readouterr().err
    assert "['j2'] have no velocity limit" in err
    params = yaml.safe_load((tmp_path / 'spinner.yaml').read_text())
    controller = params['/**/ik_controller']['ros__parameters']
    sim = params['/**/sim_robot']['ros__parameters']
    assert controller['joints'] == ['j1', 'j2']
    assert controller['collision']['convex_meshes'] is False  # a box: no mesh to hull
    assert controller['limits']['max_velocity'] == [2.0, DEFAULT_VELOCITY]
    assert sim['max_velocity'] == [2.0, DEFAULT_VELOCITY]
    assert -1.0 <= sim['initial_positions'][0] <= 1.0
    assert cli_main(['setup', str(urdf), '--tip', 'nowhere', '--out', str(tmp_path)]) == 2
    assert 'nowhere' in capsys.readouterr().err

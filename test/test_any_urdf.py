"""Arms from example-robot-data: chains of any URDF, FK against pinocchio, solve, controller."""

import contextlib
import io
import json

from hypothesis import given, settings, strategies as st
from ik_control import cli, robots
from ik_control.bench.arms import EXAMPLE_ARMS, example_robot_urdf
from ik_control.collision import acm
from ik_control.control.config import CollisionConfig, ControllerConfig
from ik_control.control.controller import ResolvedRateController
from ik_control.kinematics import RobotModel
from ik_control.kinematics.urdf_tree import CONTINUOUS_RANGE
from ik_control.validation import ModelError
import numpy as np
import pinocchio as pin
import pytest

# name: expected chain (the arms are ik_control.bench.ik.EXAMPLE_ARMS)
CHAINS = {
    'panda': tuple(f'panda_joint{i}' for i in range(1, 8)),
    'ur5': ('shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint', 'wrist_1_joint',
            'wrist_2_joint', 'wrist_3_joint'),
    # three continuous joints in the chain
    'kinova': tuple(f'j2s6s200_joint_{i}' for i in range(1, 7)),
    # gripper mimic joints and 37 other joints outside the chain
    'talos': tuple(f'arm_left_{i}_joint' for i in range(1, 8)),
    # prismatic torso and two continuous joints in the chain, mimic grippers outside
    'pr2': ('torso_lift_joint', 'r_shoulder_pan_joint', 'r_shoulder_lift_joint',
            'r_upper_arm_roll_joint', 'r_elbow_flex_joint', 'r_forearm_roll_joint',
            'r_wrist_flex_joint', 'r_wrist_roll_joint'),
}
ARMS = {name: EXAMPLE_ARMS[name] + (CHAINS[name],) for name in CHAINS}


def arm_path(name):
    return example_robot_urdf(EXAMPLE_ARMS[name][0])


MODELS = {name: RobotModel.from_urdf(arm_path(name), base_frame=ARMS[name][1],
                                     end_effectors=[(ARMS[name][2], 'pose')])
          for name in ARMS}
FULL = {name: pin.buildModelFromUrdf(arm_path(name)) for name in ARMS}


def full_configuration(name, q, rng):
    """Return a configuration of the original URDF model: chain at ``q``, the rest random."""
    model, full = MODELS[name], FULL[name]
    qf = pin.randomConfiguration(full, np.maximum(full.lowerPositionLimit, -3.0),
                                 np.minimum(full.upperPositionLimit, 3.0))
    for k, joint_name in enumerate(model.joint_names):
        joint = full.joints[full.getJointId(joint_name)]
        if joint.nq == 2:   # continuous: (cos, sin)
            qf[joint.idx_q:joint.idx_q + 2] = np.cos(q[k]), np.sin(q[k])
        else:
            qf[joint.idx_q] = q[k]
    return qf


def full_placement_and_jacobian(name, qf):
    """Tip placement and 6 x nq Jacobian in the base frame from the original pinocchio model."""
    model, full = MODELS[name], FULL[name]
    data = full.createData()
    base, tip = full.getFrameId(ARMS[name][1]), full.getFrameId(ARMS[name][2])
    J = pin.computeFrameJacobian(full, data, qf, tip, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
    pin.framesForwardKinematics(full, data, qf)
    R = data.oMf[base].rotation.T
    T = (data.oMf[base].inverse() * data.oMf[tip]).homogeneous
    cols = [full.joints[full.getJointId(n)].idx_v for n in model.joint_names]
    return T, np.vstack([R @ J[:3, cols], R @ J[3:, cols]])


@pytest.mark.parametrize('name', sorted(ARMS))
def test_default_joints_are_the_chain_and_the_rest_is_locked_away(name):
    model = MODELS[name]
    assert model.joint_names == ARMS[name][3]
    assert model.pin_model.njoints - 1 == model.nq   # nothing else left in the tree
    assert np.all(model.lower < model.upper) and np.all(model.velocity_limit > 0)
    for joint in model.continuous_joints:
        k = model.joint_names.index(joint)
        assert model.upper[k] - model.lower[k] >= 2 * np.pi   # every angle reachable
        assert model.upper[k] <= CONTINUOUS_RANGE + 1e-9


def test_the_arms_cover_continuous_mimic_and_prismatic_joints():
    assert len(MODELS['kinova'].continuous_joints) == 3
    assert MODELS['pr2'].continuous_joints == ('r_forearm_roll_joint', 'r_wrist_roll_joint')
    assert MODELS['pr2'].kind[0] == 1   # the torso lift is prismatic
    full = FULL['talos']
    assert full.njoints - 1 > 40 and sum(j.nq == 2 for j in FULL['pr2'].joints) >= 4


@pytest.mark.parametrize('name', sorted(ARMS))
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_fk_and_jacobian_match_pinocchio_on_the_full_model(name, seed):
    """Off-chain joints anywhere (random values) do not move the tip relative to the base."""
    model = MODELS[name]
    rng = np.random.default_rng(seed)
    q = model.random_configurations(1, rng)[0]
    T_full, J_full = full_placement_and_jacobian(name, full_configuration(name, q, rng))
    ws = model.workspace()
    ws.update(q)
    np.testing.assert_allclose(ws.frame_T[0], T_full, atol=1e-10)
    np.testing.assert_allclose(ws.J, J_full, atol=1e-10)


@pytest.mark.parametrize('name', sorted(ARMS))
def test_solve_command_uses_the_chain(name):
    model = MODELS[name]
    rng = np.random.default_rng(7)
    q_goal = model.random_configurations(1, rng, margin=0.05)[0]
    T = model.frame_placements(q_goal)[0]
    quat = pin.Quaternion(T[:3, :3]).coeffs()   # x y z w
    out = io.StringIO()
    with contextlib.redirect_stdout(out):   # a 30 s budget: it returns at its solution,
        # and make test runs this at nice 19 beside the node tests
        rc = cli.main(['solve', '--urdf', arm_path(name), '--base', ARMS[name][1],
                       '--tip', ARMS[name][2], '--xyz', *map(str, T[:3, 3]),
                       '--quat', *map(str, quat), '--timeout-ms', '30000', '--json',
                       '--random-seed', '1'])
    report = json.loads(out.getvalue())
    assert rc == 0 and report['success']
    assert tuple(report['joint_names']) == ARMS[name][3]
    q = np.array(report['positions'])
    assert np.all(q >= model.lower - 1e-9) and np.all(q <= model.upper + 1e-9)
    np.testing.assert_allclose(model.pin_frame_placement(q, ARMS[name][2])[:3, 3], T[:3, 3],
                               atol=2e-5)


@pytest.mark.parametrize('name', sorted(ARMS))
def test_controller_reaches_a_random_reachable_goal(name):
    model = MODELS[name]
    rng = np.random.default_rng(3)
    q0 = model.random_configurations(1, rng, margin=0.2)[0]
    step = np.where(model.kind == 1, 0.02, 0.4)   # [m] prismatic (the PR2 lifts at 13 mm/s)
    q_goal = np.clip(q0 + rng.uniform(-1, 1, model.nq) * step, model.lower + 0.05,
                     model.upper - 0.05)
    T_goal = model.frame_placements(q_goal)[0]
    # the allowed-collision SRDF a user writes with `ik_control collision-matrix` (the
    # PR2's shoulder shells overlap in every pose: without it the arm could not move)
    srdf = acm.srdf_text(acm.compute(model, samples=100, pose=q0))
    config = ControllerConfig(rate_hz=100.0, collision=CollisionConfig(srdf=srdf))
    controller = ResolvedRateController(model, config)
    q, t = q0.copy(), 0.0
    controller.set_joint_state(model.joint_names, q, t)
    controller.update(t)   # the first tick holds the pose it finds: the goal comes after
    controller.set_target_matrix(ARMS[name][2], T_goal)
    for _ in range(int(8.0 * config.rate_hz)):
        t += 1.0 / config.rate_hz
        controller.set_joint_state(model.joint_names, q, t)
        command = controller.update(t)
        q = command.at(1.0 / config.rate_hz)[0].copy()   # where a JTC puts it by next tick
        assert np.all(q >= model.lower) and np.all(q <= model.upper)
        if controller.goals.reached[0]:
            break
    assert controller.goals.reached[0], controller.tracking_errors()
    T = model.pin_frame_placement(q, ARMS[name][2])
    assert np.linalg.norm(T[:3, 3] - T_goal[:3, 3]) < 1e-3


def _urdf(joint_type, extra=''):
    return f"""<robot name="r"><link name="world"/><link name="a"/><link name="b"/>
      <joint name="float" type="{joint_type}"><parent link="world"/><child link="a"/>
        {extra}</joint>
      <joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>"""


@pytest.mark.parametrize('joint_type', ['floating', 'planar'])
def test_unusable_joints_are_named_with_their_type_and_what_to_do(joint_type):
    with pytest.raises(ModelError, match=f"joint 'float' is a {joint_type} joint .* choose a "
                                         "base frame below this joint \\(its child link 'a'\\)"):
        RobotModel.from_urdf(_urdf(joint_type), base_frame='world', end_effectors=['b'])
    # below it, the same URDF works: the floating joint is locked away
    model = RobotModel.from_urdf(_urdf(joint_type), base_frame='a', end_effectors=['b'])
    assert model.joint_names == ('j',)
    # an explicit joint list locks it away too, and refuses to control it
    model = RobotModel.from_urdf(_urdf(joint_type), joints=['j'], base_frame='a',
                                 end_effectors=['b'])
    assert model.tree_joint_names == ('j',)
    with pytest.raises(ModelError, match=f"joint 'float' is a {joint_type} joint .* listed"):
        RobotModel.from_urdf(_urdf(joint_type), joints=['float', 'j'])


def test_mimic_slave_on_the_chain_follows_its_master():
    xml = """<robot name="r"><link name="w"/><link name="a"/><link name="b"/><link name="c"/>
      <joint name="m" type="revolute"><parent link="w"/><child link="c"/><axis xyz="0 0 1"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      <joint name="j" type="revolute"><parent link="w"/><child link="a"/><axis xyz="0 0 1"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      <joint name="s" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 1 0"/>
        <origin xyz="0.5 0 0"/><limit lower="-2" upper="2" effort="1" velocity="1"/>
        <mimic joint="m" multiplier="2" offset="0.1"/></joint></robot>"""
    model = RobotModel.from_urdf(xml, base_frame='w', end_effectors=['b'])
    assert sorted(model.joint_names) == ['j', 'm']   # the slave's master joins the chain
    q = np.zeros(2)
    q[model.joint_names.index('m')] = 0.3
    qt = model.tree_configuration(q)
    assert qt[model.tree_joint_names.index('s')] == pytest.approx(2 * 0.3 + 0.1)
    J = model.jacobian(q)
    np.testing.assert_allclose(J, model.pin_frame_jacobian(q, 'b'), atol=1e-12)
    assert np.linalg.norm(J[:, model.joint_names.index('m')]) > 0.5   # moves b through s
    with pytest.raises(ModelError, match=r"control their masters \['m'\] instead"):
        RobotModel.from_urdf(xml, joints=['s'])


def test_a_link_and_a_joint_sharing_a_name_resolve_to_the_link():
    # the WAM with its tool plate's fixed joint named like its child link, 'tool'
    # (as some vendors' URDFs do): pinocchio then holds two frames called 'tool'
    with open(robots.urdf_path('wam'), encoding='utf-8') as f:
        xml = f.read().replace('<joint name="wam_tool_joint"', '<joint name="tool"')
    wam = robots.robot('wam')
    model = RobotModel.from_urdf(xml, base_frame='wam_base', end_effectors=[('tool', 'pose')])
    rng = np.random.default_rng(0)
    for q in model.random_configurations(20, rng):
        np.testing.assert_allclose(model.frame_placements(q), wam.frame_placements(q),
                                   atol=1e-12)
    controller = ResolvedRateController(model, ControllerConfig(rate_hz=500.0))
    assert controller.current_pose('tool').shape == (4, 4)

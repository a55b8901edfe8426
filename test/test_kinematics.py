"""RobotModel and the compiled kinematics against pinocchio and finite differences."""

from ik_control import robots
from ik_control.kinematics import RobotModel
from ik_control.kinematics.dh import (dh_forward, dh_urdf, DHRow, double_y_shape_urdf,
                                      sam_robot_rows, sam_robot_urdf, y_shape_urdf)
from ik_control.validation import InputError, ModelError
import numpy as np
import pinocchio as pin
import pytest


def _models():
    return {
        'wam': robots.robot('wam'),
        'simon': robots.robot('simon'),
        'simon_right_arm': robots.robot('simon_right_arm'),
        'sam': RobotModel.from_urdf(sam_robot_urdf(), end_effectors=['tool']),
        'y': RobotModel.from_urdf(y_shape_urdf(), end_effectors=[('e1', 'position'),
                                                                 ('e2', 'position')]),
        'double_y': RobotModel.from_urdf(double_y_shape_urdf(),
                                         end_effectors=[(f'e{i}', 'position')
                                                        for i in range(1, 5)]),
    }


MODELS = _models()


@pytest.mark.parametrize('name', sorted(MODELS))
def test_placements_and_jacobians_match_pinocchio(name):
    model = MODELS[name]
    rng = np.random.default_rng(1)
    ws = model.workspace()
    for q in model.random_configurations(40, rng):
        ws.update(q)
        for f, ee in enumerate(model.end_effectors):
            np.testing.assert_allclose(ws.frame_T[f], model.pin_frame_placement(q, ee.frame),
                                       atol=1e-12)
            rows = slice(model.task_offsets[f], model.task_offsets[f] + ee.dim)
            np.testing.assert_allclose(ws.J[rows],
                                       model.pin_frame_jacobian(q, ee.frame)[:ee.dim],
                                       atol=1e-12)


@pytest.mark.parametrize('name', sorted(MODELS))
def test_jacobian_matches_central_differences(name):
    model = MODELS[name]
    rng = np.random.default_rng(2)
    h = 1e-6
    for q in model.random_configurations(5, rng, margin=0.05):
        J = model.jacobian(q)
        numeric = np.zeros_like(J)
        for k in range(model.nq):
            dq = np.zeros(model.nq)
            dq[k] = h
            Tp, Tm = model.frame_placements(q + dq), model.frame_placements(q - dq)
            for f, ee in enumerate(model.end_effectors):
                o = model.task_offsets[f]
                numeric[o:o + 3, k] = (Tp[f, :3, 3] - Tm[f, :3, 3]) / (2 * h)
                if ee.dim == 6:
                    numeric[o + 3:o + 6, k] = pin.log3(Tp[f, :3, :3] @ Tm[f, :3, :3].T) / (2 * h)
        np.testing.assert_allclose(J, numeric, atol=1e-6)


def test_alternate_jacobian_uses_the_target_point():
    model = MODELS['y']
    q = np.full(model.nq, 0.2)
    targets = np.array([[1.0, 0.2, 2.0], [-0.5, 0.1, 1.8]])
    J_alt = model.jacobian(q, points=targets)
    # moving the point on the same link: revolute column = z x (t - o)
    shifted = model.workspace()
    shifted.update(q)
    for f in range(2):
        rows = slice(3 * f, 3 * f + 3)
        assert not np.allclose(J_alt[rows], shifted.J[rows])
    # a point moved with the effector gives back the usual Jacobian
    np.testing.assert_allclose(model.jacobian(q, points=shifted.frame_T[:, :3, 3]), shifted.J)


def test_sam_table_1_robot_equals_the_dh_product():
    model = MODELS['sam']
    rows = sam_robot_rows()
    rng = np.random.default_rng(3)
    for q in model.random_configurations(50, rng):
        np.testing.assert_allclose(model.pin_frame_placement(q, 'tool'), dh_forward(rows, q),
                                   atol=1e-12)


def test_dh_builder_with_offsets_prismatic_joint_and_tool():
    rows = [DHRow(np.pi / 2, 0.1, 0.3, offset=0.4), DHRow(0.0, 0.5, 0.0, kind='prismatic',
                                                          lower=0.0, upper=0.5, offset=0.2),
            DHRow(-np.pi / 2, 0.0, 0.2)]
    base = np.eye(4)
    base[2, 3] = 0.7
    tool = np.eye(4)
    tool[:3, :3] = pin.utils.rotate('x', np.pi / 2)
    model = RobotModel.from_urdf(dh_urdf(rows, base=base, tool=tool), end_effectors=['tool'])
    rng = np.random.default_rng(4)
    for q in model.random_configurations(30, rng):
        np.testing.assert_allclose(model.frame_placements(q)[0],
                                   dh_forward(rows, q, base=base, tool=tool), atol=1e-12)


def test_simon_slave_joint_follows_torso_pitch():
    model = MODELS['simon']
    assert 'torso_y_slave' not in model.joint_names
    q = robots.ready_pose('simon')
    qt = model.tree_configuration(q + 0.1)
    names = model.tree_joint_names
    assert qt[names.index('torso_y_slave')] == pytest.approx(qt[names.index('torso_y')])
    # the pitch moves the hands through both torso joints: its column is the sum of the two
    # joints' columns of pinocchio's own tree Jacobian (mimic multiplier 1) ...
    pm, pd = model.pin_model, model.pin_model.createData()
    v = {n: pm.joints[pm.getJointId(n)].idx_v for n in ('torso_y', 'torso_y_slave')}
    col = model.joint_names.index('torso_y')
    R = model.base_inv[:3, :3]
    rng = np.random.default_rng(5)
    for qc in [q] + list(model.random_configurations(10, rng)):
        J = model.jacobian(qc)
        for f, ee in enumerate(model.end_effectors):
            Jt = pin.computeFrameJacobian(pm, pd, model.tree_configuration(qc),
                                          pm.getFrameId(ee.frame),
                                          pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
            Jt = np.vstack([R @ Jt[:3], R @ Jt[3:]])
            o = model.task_offsets[f]
            np.testing.assert_allclose(J[o:o + 6, col],
                                       Jt[:, v['torso_y']] + Jt[:, v['torso_y_slave']],
                                       atol=1e-12)
    # ... so with the torso not rolled (parallel axes) the hands turn at exactly twice the
    # single joint's rate: 2 rad/s about the base y axis per rad/s of torso_y
    assert q[model.joint_names.index('torso_x')] == 0.0
    J = model.jacobian(q)
    for o in model.task_offsets:
        np.testing.assert_allclose(J[o + 3:o + 6, col], [0.0, 2.0, 0.0], atol=1e-12)


def test_locked_joints_stay_put_and_subset_models_agree():
    full, arm = MODELS['simon'], MODELS['simon_right_arm']
    q_full = np.zeros(full.nq)
    q_arm = q_full[[full.joint_names.index(n) for n in arm.joint_names]]
    np.testing.assert_allclose(arm.frame_placements(q_arm)[0], full.frame_placements(q_full)[0])
    assert arm.jacobian(q_arm).shape == (6, 7)


@pytest.mark.parametrize('kwargs, message', [
    ({'end_effectors': ['no_such_frame']}, "unknown frame 'no_such_frame'"),
    ({'joints': ['wam_j1', 'nope']}, 'unknown joints'),
    ({'joints': ['wam_j1', 'wam_j1']}, 'listed twice'),
    ({'base_frame': 'wam_link_3'}, 'is moved by controlled joints'),
    ({'end_effectors': [('tool', 'sideways')]}, "mode must be 'pose' or 'position'"),
])
def test_bad_model_requests_are_refused_clearly(kwargs, message):
    with pytest.raises(ModelError, match=message):
        robots.robot('wam', **kwargs)


def test_bad_files_are_refused_clearly(tmp_path):
    with pytest.raises(ModelError, match='does not exist'):
        RobotModel.from_urdf(str(tmp_path / 'missing.urdf'))
    with pytest.raises(ModelError, match='not valid XML'):
        RobotModel.from_urdf('<robot name="x"><link name="a"></robot>')
    with pytest.raises(ModelError, match='no robot description'):
        RobotModel.from_urdf('')
    with pytest.raises(ModelError, match='are URDF mimic joints and cannot be controlled'):
        robots.robot('simon', joints=['torso_y_slave'])


def test_an_end_effector_is_found_by_name_or_index_and_anything_else_is_refused():
    """RobotModel.end_effector_index, which CCD, HAL and TSFKS resolve their effector with."""
    simon = robots.robot('simon')
    assert simon.end_effector_index('left_hand') == 1
    assert simon.end_effector_index('right_hand') == 0 and simon.end_effector_index(1) == 1
    with pytest.raises(InputError, match="'tool' is not one of"):
        simon.end_effector_index('tool')
    for index in (2, -1):
        with pytest.raises(InputError, match=r'is not in 0\.\.1'):
            simon.end_effector_index(index)

# Copyright 2025 ik_control maintainers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""Checks of urdf/wam.urdf and urdf/simon.urdf with pinocchio, MuJoCo and plain XML (no ROS)."""

import os
from xml.etree import ElementTree

import mujoco
import numpy as np
import pinocchio as pin
import pytest

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WAM_URDF = os.path.join(PACKAGE_ROOT, 'urdf', 'wam.urdf')
SIMON_URDF = os.path.join(PACKAGE_ROOT, 'urdf', 'simon.urdf')
WAM_YAML = os.path.join(PACKAGE_ROOT, 'config', 'wam_controllers.yaml')
SIMON_YAML = os.path.join(PACKAGE_ROOT, 'config', 'simon_controllers.yaml')
BOTH = [WAM_URDF, SIMON_URDF]
IDS = ['wam', 'simon']

# ---------------------------------------------------------------- WAM reference data
# Barrett standard (distal) DH: A_i = Rz(q_i) Tz(d_i) Tx(a_i) Rx(alpha_i)
WAM_ALPHA = np.pi * np.array([-0.5, 0.5, -0.5, 0.5, -0.5, 0.5, -0.5])
WAM_A = np.array([0.0, 0.0, 0.045, -0.045, 0.0, 0.0, 0.0])
WAM_D = np.array([0.0, 0.0, 0.55, 0.0, 0.30, 0.0, 0.0609])
WAM_BASE_Z = 0.346
WAM_JOINTS = ['wam_j%d' % i for i in range(1, 8)]
WAM_LIMITS = [(-2.6, 2.6), (-1.985, 1.985), (-2.8, 2.8), (-0.9, 3.14159),
              (-4.8, 1.3), (-1.5707, 1.5707), (-2.95, 2.95)]
WAM_MASSES = [10.77, 3.87, 1.80, 2.17, 0.357, 0.409, 0.0755]
WAM_READY = [0.0, 0.6, 0.0, 1.6, 0.0, 0.94, 0.0]

# ---------------------------------------------------------------- SIMON reference data
ARM = ['shoulder_x', 'shoulder_z', 'shoulder_y', 'elbow_x', 'wrist_y', 'wrist_x', 'wrist_z']
SIMON_CONTROLLED = (['torso_y', 'torso_x'] + ['right_' + j for j in ARM] +
                    ['left_' + j for j in ARM])
SIMON_SLAVE = 'torso_y_slave'
SIMON_FINGERS = ['%s_finger_%d' % (s, i) for s in ('right', 'left') for i in range(1, 5)]
SIMON_READY_ARM = {'shoulder_x': -0.4, 'shoulder_z': 0.15, 'shoulder_y': -0.3,
                   'elbow_x': 1.4, 'wrist_y': 0.0, 'wrist_x': 0.0, 'wrist_z': 0.0}
SIMON_READY = {'torso_y': 0.0, 'torso_x': 0.0, SIMON_SLAVE: 0.0}
SIMON_READY.update({side + '_' + j: v for side in ('right', 'left')
                    for j, v in SIMON_READY_ARM.items()})
SIMON_READY.update(dict.fromkeys(SIMON_FINGERS, 0.2))
MIRROR = np.diag([1.0, -1.0, 1.0])


# ---------------------------------------------------------------- helpers
def _root(path):
    return ElementTree.parse(path).getroot()


def _joints(root):
    return {j.get('name'): j for j in root.findall('joint')}


def _moving_joints(root):
    return {n: j for n, j in _joints(root).items() if j.get('type') != 'fixed'}


def _links(root):
    return {link.get('name'): link for link in root.findall('link')}


def _floats(text):
    return np.array([float(x) for x in text.split()])


def _hom(rot=np.eye(3), trans=(0.0, 0.0, 0.0)):
    m = np.eye(4)
    m[:3, :3] = rot
    m[:3, 3] = trans
    return m


def _rot_x(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def _rot_z(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def wam_dh_fk(q):
    """Tool pose from the DH table: Tz(0.346) * A_1(q_1) ... A_7(q_7) * Rx(pi/2)."""
    t = _hom(trans=(0.0, 0.0, WAM_BASE_Z))
    for i in range(7):
        t = (t @ _hom(_rot_z(q[i])) @ _hom(trans=(0.0, 0.0, WAM_D[i]))
             @ _hom(trans=(WAM_A[i], 0.0, 0.0)) @ _hom(_rot_x(WAM_ALPHA[i])))
    return t @ _hom(_rot_x(np.pi / 2))


def _q_from_names(model, values):
    q = pin.neutral(model)
    for name, v in values.items():
        q[model.joints[model.getJointId(name)].idx_q] = v
    return q


def _simon_random_values(model, rng):
    """Random joint values inside the limits, slave joint following torso_y."""
    values = {}
    for jid in range(1, model.njoints):
        name = model.names[jid]
        iq = model.joints[jid].idx_q
        values[name] = rng.uniform(model.lowerPositionLimit[iq], model.upperPositionLimit[iq])
    values[SIMON_SLAVE] = values['torso_y']
    return values


@pytest.fixture(scope='module')
def wam_model():
    return pin.buildModelFromUrdf(WAM_URDF)


@pytest.fixture(scope='module')
def simon_model():
    return pin.buildModelFromUrdf(SIMON_URDF)


# ---------------------------------------------------------------- both robots
@pytest.mark.parametrize('path', BOTH, ids=IDS)
def test_pinocchio_loads_model_and_geometry(path):
    model = pin.buildModelFromUrdf(path)
    root = _root(path)
    assert model.nq == model.nv == len(_moving_joints(root))
    n_collision = sum(len(link.findall('collision')) for link in root.findall('link'))
    n_visual = sum(len(link.findall('visual')) for link in root.findall('link'))
    collision = pin.buildGeomFromUrdf(model, path, pin.COLLISION)
    visual = pin.buildGeomFromUrdf(model, path, pin.VISUAL)
    assert collision.ngeoms == n_collision > 0
    assert visual.ngeoms == n_visual > 0
    data = model.createData()
    pin.forwardKinematics(model, data, pin.neutral(model))


@pytest.mark.parametrize('path', BOTH, ids=IDS)
def test_mujoco_loads(path):
    mj = mujoco.MjModel.from_xml_path(path)
    root = _root(path)
    assert mj.njnt == len(_moving_joints(root))
    assert mj.ngeom > 0
    assert np.all(mj.body_mass[1:] > 0.0)  # body 0 is the world (fused fixed base)
    data = mujoco.MjData(mj)
    mujoco.mj_step(mj, data)
    assert np.all(np.isfinite(data.qpos))


@pytest.mark.parametrize('path', BOTH, ids=IDS)
def test_only_primitive_shapes(path):
    for link in _root(path).findall('link'):
        for tag in ('visual', 'collision'):
            for element in link.findall(tag):
                shapes = [g.tag for g in element.find('geometry')]
                assert shapes and set(shapes) <= {'box', 'cylinder', 'sphere'}, \
                    (link.get('name'), shapes)
        assert len(link.findall('visual')) == len(link.findall('collision'))


@pytest.mark.parametrize('path', BOTH, ids=IDS)
def test_joint_limits_are_sane(path):
    moving = _moving_joints(_root(path))
    assert moving
    for name, joint in moving.items():
        assert joint.get('type') == 'revolute', name
        limit = joint.find('limit')
        assert limit is not None, name
        lower, upper = float(limit.get('lower')), float(limit.get('upper'))
        assert lower < upper, name
        assert float(limit.get('velocity')) > 0.0, name
        assert float(limit.get('effort')) > 0.0, name
    model = pin.buildModelFromUrdf(path)
    assert np.all(model.lowerPositionLimit < model.upperPositionLimit)
    assert np.all(model.velocityLimit > 0.0)
    assert np.all(model.effortLimit > 0.0)


@pytest.mark.parametrize('path', BOTH, ids=IDS)
def test_moving_links_have_physical_inertia(path):
    root = _root(path)
    links = _links(root)
    for joint in _moving_joints(root).values():
        child = joint.find('child').get('link')
        inertial = links[child].find('inertial')
        assert inertial is not None, child
        mass = float(inertial.find('mass').get('value'))
        assert mass > 0.0, child
        i = {k: float(v) for k, v in inertial.find('inertia').attrib.items()}
        tensor = np.array([[i['ixx'], i['ixy'], i['ixz']],
                           [i['ixy'], i['iyy'], i['iyz']],
                           [i['ixz'], i['iyz'], i['izz']]])
        principal = np.sort(np.linalg.eigvalsh(tensor))
        assert principal[0] > 0.0, child
        assert principal[0] + principal[1] >= principal[2] * (1.0 - 1e-9), child
    # the same holds for the bodies pinocchio builds (fixed children merged in)
    model = pin.buildModelFromUrdf(path)
    for jid in range(1, model.njoints):
        inertia = model.inertias[jid]
        assert inertia.mass > 0.0
        principal = np.sort(np.linalg.eigvalsh(inertia.inertia))
        assert principal[0] > 0.0
        assert principal[0] + principal[1] >= principal[2] * (1.0 - 1e-9)


@pytest.mark.parametrize('path,ready', [(WAM_URDF, dict(zip(WAM_JOINTS, WAM_READY))),
                                        (SIMON_URDF, SIMON_READY)], ids=IDS)
def test_ready_pose_within_limits_and_collision_free(path, ready):
    model = pin.buildModelFromUrdf(path)
    assert set(ready) == {model.names[j] for j in range(1, model.njoints)}
    q = _q_from_names(model, ready)
    assert np.all(q >= model.lowerPositionLimit + 0.1)
    assert np.all(q <= model.upperPositionLimit - 0.1)
    mj = mujoco.MjModel.from_xml_path(path)
    data = mujoco.MjData(mj)
    for values in ({}, ready):
        data.qpos[:] = 0.0
        for name, v in values.items():
            jid = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_JOINT, name)
            data.qpos[mj.jnt_qposadr[jid]] = v
        mujoco.mj_forward(mj, data)
        assert data.ncon == 0, 'self-contact in %s' % ('ready pose' if values else 'q = 0')


# ---------------------------------------------------------------- WAM
def test_wam_fk_matches_dh_table(wam_model):
    model = wam_model
    data = model.createData()
    assert [model.names[j] for j in range(1, model.njoints)] == WAM_JOINTS
    tool = model.getFrameId('tool')
    assert tool < len(model.frames)
    rng = np.random.default_rng(20240607)
    for _ in range(300):
        q = rng.uniform(model.lowerPositionLimit, model.upperPositionLimit)
        pin.framesForwardKinematics(model, data, q)
        np.testing.assert_allclose(data.oMf[tool].homogeneous, wam_dh_fk(q), rtol=0, atol=1e-9)


def test_wam_zero_pose_points_up(wam_model):
    data = wam_model.createData()
    pin.framesForwardKinematics(wam_model, data, np.zeros(7))
    tool = data.oMf[wam_model.getFrameId('tool')]
    np.testing.assert_allclose(tool.translation, [0.0, 0.0, 0.346 + 0.55 + 0.30 + 0.0609],
                               atol=1e-12)
    np.testing.assert_allclose(tool.rotation, np.eye(3), atol=1e-12)


def test_wam_masses_and_limits_match_table(wam_model):
    root = _root(WAM_URDF)
    links = _links(root)
    joints = _joints(root)
    assert sorted(_moving_joints(root)) == WAM_JOINTS
    assert root.find('link').get('name') == 'wam_base'
    assert joints['wam_j1'].find('parent').get('link') == 'wam_base'
    for i, name in enumerate(WAM_JOINTS):
        joint = joints[name]
        child = joint.find('child').get('link')
        assert child == 'wam_link_%d' % (i + 1)
        np.testing.assert_allclose(_floats(joint.find('axis').get('xyz')), [0, 0, 1])
        mass = float(links[child].find('inertial/mass').get('value'))
        assert mass == pytest.approx(WAM_MASSES[i], abs=1e-12)
        assert wam_model.inertias[i + 1].mass == pytest.approx(WAM_MASSES[i], abs=1e-12)
        limit = joint.find('limit')
        assert float(limit.get('lower')) == pytest.approx(WAM_LIMITS[i][0], abs=1e-12)
        assert float(limit.get('upper')) == pytest.approx(WAM_LIMITS[i][1], abs=1e-12)
    np.testing.assert_allclose(wam_model.lowerPositionLimit, [lim[0] for lim in WAM_LIMITS])
    np.testing.assert_allclose(wam_model.upperPositionLimit, [lim[1] for lim in WAM_LIMITS])


# ---------------------------------------------------------------- SIMON
def test_simon_joint_structure(simon_model):
    root = _root(SIMON_URDF)
    moving = _moving_joints(root)
    assert set(moving) == set(SIMON_CONTROLLED) | {SIMON_SLAVE} | set(SIMON_FINGERS)
    assert len(SIMON_CONTROLLED) == 16
    mimic = moving[SIMON_SLAVE].find('mimic')
    assert mimic is not None
    assert mimic.get('joint') == 'torso_y'
    assert float(mimic.get('multiplier', '1')) == 1.0
    assert float(mimic.get('offset', '0')) == 0.0
    assert sum(j.find('mimic') is not None for j in moving.values()) == 1
    # slave is a second fore/aft (pitch) joint higher up the torso
    np.testing.assert_allclose(_floats(moving[SIMON_SLAVE].find('axis').get('xyz')), [0, 1, 0])
    np.testing.assert_allclose(_floats(moving['torso_y'].find('axis').get('xyz')), [0, 1, 0])
    np.testing.assert_allclose(_floats(moving['torso_x'].find('axis').get('xyz')), [1, 0, 0])
    assert _floats(moving[SIMON_SLAVE].find('origin').get('xyz'))[2] > 0.1
    # pinocchio can model the coupling exactly, MuJoCo turns it into a joint equality
    coupled = pin.buildModelFromUrdf(SIMON_URDF, mimic=True)
    assert coupled.nq == simon_model.nq - 1 == 16 + len(SIMON_FINGERS)
    mj = mujoco.MjModel.from_xml_path(SIMON_URDF)
    assert mj.neq == 1 and mj.eq_type[0] == mujoco.mjtEq.mjEQ_JOINT
    names = {mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_JOINT, i)
             for i in (mj.eq_obj1id[0], mj.eq_obj2id[0])}
    assert names == {SIMON_SLAVE, 'torso_y'}


def test_simon_frames_and_links(simon_model):
    root = _root(SIMON_URDF)
    joints = _joints(root)
    links = _links(root)
    assert root.find('link').get('name') == 'simon_base'
    assert 'head' in links
    for side in ('right', 'left'):
        frame = side + '_hand'
        assert simon_model.existFrame(frame)
        parent_joint = [j for j in joints.values() if j.find('child').get('link') == frame]
        assert len(parent_joint) == 1 and parent_joint[0].get('type') == 'fixed'
    # hand frames are parallel to simon_base with the arms hanging (q = 0)
    data = simon_model.createData()
    pin.framesForwardKinematics(simon_model, data, pin.neutral(simon_model))
    for side in ('right', 'left'):
        np.testing.assert_allclose(data.oMf[simon_model.getFrameId(side + '_hand')].rotation,
                                   np.eye(3), atol=1e-12)


def test_simon_dimensions(simon_model):
    data = simon_model.createData()
    pin.framesForwardKinematics(simon_model, data, pin.neutral(simon_model))

    def pos(joint):
        return data.oMi[simon_model.getJointId(joint)].translation

    assert 0.8 <= pos('torso_y')[2] <= 0.9
    assert np.linalg.norm(pos('right_shoulder_x') - pos('left_shoulder_x')) == \
        pytest.approx(0.36, abs=1e-9)
    for side in ('right', 'left'):
        upper = np.linalg.norm(pos(side + '_elbow_x') - pos(side + '_shoulder_x'))
        fore = np.linalg.norm(pos(side + '_wrist_y') - pos(side + '_elbow_x'))
        hand = np.linalg.norm(data.oMf[simon_model.getFrameId(side + '_hand')].translation -
                              pos(side + '_wrist_z'))
        assert upper == pytest.approx(0.28, abs=1e-9)
        assert fore == pytest.approx(0.25, abs=1e-9)
        assert 0.04 <= hand <= 0.1
    moving_mass = sum(simon_model.inertias[j].mass for j in range(1, simon_model.njoints))
    assert 40.0 <= moving_mass <= 60.0


def test_simon_arms_are_mirror_images(simon_model):
    """Left hand at the mirrored configuration equals the right hand reflected in y."""
    model = simon_model
    data = model.createData()
    right, left = model.getFrameId('right_hand'), model.getFrameId('left_hand')
    rng = np.random.default_rng(7)
    for _ in range(100):
        values = _simon_random_values(model, rng)
        mirrored = {}
        for name, v in values.items():
            if name.startswith('right_'):
                mirrored['left_' + name[len('right_'):]] = v
            elif name.startswith('left_'):
                mirrored['right_' + name[len('left_'):]] = v
            elif name == 'torso_x':  # side lean flips sign under y -> -y
                mirrored[name] = -v
            else:
                mirrored[name] = v
        pin.framesForwardKinematics(model, data, _q_from_names(model, values))
        right_pose = data.oMf[right].copy()
        pin.framesForwardKinematics(model, data, _q_from_names(model, mirrored))
        left_pose = data.oMf[left]
        np.testing.assert_allclose(left_pose.translation, MIRROR @ right_pose.translation,
                                   atol=1e-12)
        np.testing.assert_allclose(left_pose.rotation, MIRROR @ right_pose.rotation @ MIRROR,
                                   atol=1e-12)


def test_simon_joint_directions(simon_model):
    """Sign conventions documented in the URDF header."""
    model = simon_model
    data = model.createData()
    hand = model.getFrameId('right_hand')

    def right_hand(values):
        pin.framesForwardKinematics(model, data, _q_from_names(model, values))
        return data.oMf[hand].translation.copy()

    rest = right_hand({})
    assert right_hand({'right_shoulder_x': -1.0})[0] > rest[0] + 0.3  # forward flexion
    assert right_hand({'right_shoulder_z': 1.0})[1] < rest[1] - 0.3  # abduction (outwards)
    assert right_hand({'right_elbow_x': 1.5})[0] > rest[0] + 0.2  # elbow flexion forward
    bent = {'right_elbow_x': 1.5}
    assert right_hand(dict(bent, right_shoulder_y=1.0))[1] < right_hand(bent)[1] - 0.1
    # leaning the torso forward moves the shoulders forward
    pin.framesForwardKinematics(model, data, _q_from_names(
        model, {'torso_y': 0.3, SIMON_SLAVE: 0.3}))
    assert data.oMi[model.getJointId('right_shoulder_x')].translation[0] > 0.1


def test_simon_right_hand_reaches_table_top(simon_model):
    model = simon_model
    data = model.createData()
    hand = model.getFrameId('right_hand')
    # 1) random sampling: a good share of the reachable set lies in front of the torso
    rng = np.random.default_rng(3)
    points = []
    for _ in range(1500):
        pin.framesForwardKinematics(model, data,
                                    _q_from_names(model, _simon_random_values(model, rng)))
        points.append(data.oMf[hand].translation.copy())
    points = np.array(points)
    assert points[:, 0].max() > 0.55
    in_front = (points[:, 0] > 0.3) & (points[:, 2] > 0.85) & (points[:, 2] < 1.15)
    assert in_front.mean() > 0.05
    # 2) every table-top target (0.9-1.1 m high, 0.3-0.5 m in front) is reachable with
    #    the torso and right-arm joints inside their limits (damped least squares IK)
    names = ['torso_y', 'torso_x'] + ['right_' + j for j in ARM]
    iv = [model.joints[model.getJointId(n)].idx_v for n in names]
    i_torso = model.joints[model.getJointId('torso_y')].idx_q
    i_slave = model.joints[model.getJointId(SIMON_SLAVE)].idx_q
    start = _q_from_names(model, SIMON_READY)
    for x in (0.3, 0.4, 0.5):
        for y in (-0.3, -0.15, 0.0):
            for z in (0.9, 1.0, 1.1):
                target = np.array([x, y, z])
                q = start.copy()
                for _ in range(200):
                    q[i_slave] = q[i_torso]
                    pin.computeJointJacobians(model, data, q)
                    pin.updateFramePlacements(model, data)
                    err = target - data.oMf[hand].translation
                    if np.linalg.norm(err) < 1e-4:
                        break
                    jac = pin.getFrameJacobian(model, data, hand, pin.LOCAL_WORLD_ALIGNED)[:3]
                    jac[:, i_torso] += jac[:, i_slave]
                    jac = jac[:, iv]
                    dq = jac.T @ np.linalg.solve(jac @ jac.T + 1e-4 * np.eye(3), err)
                    q[iv] += np.clip(dq, -0.2, 0.2)
                    q = np.clip(q, model.lowerPositionLimit, model.upperPositionLimit)
                assert np.linalg.norm(err) < 1e-4, target


# ---------------------------------------------------------------- ros2_control blocks
@pytest.mark.parametrize('path,system,joints,yaml_file,rate', [
    (WAM_URDF, 'WamSystem', WAM_JOINTS, WAM_YAML, 500),
    (SIMON_URDF, 'SimonSystem', SIMON_CONTROLLED, SIMON_YAML, 1000)], ids=IDS)
def test_ros2_control_blocks_and_controller_yaml(path, system, joints, yaml_file, rate):
    root = _root(path)
    block = root.find('ros2_control')
    assert block.get('name') == system and block.get('type') == 'system'
    assert block.find('hardware/plugin').text.strip() == 'gz_ros2_control/GazeboSimSystem'
    commanded = [j for j in block.findall('joint') if j.find('command_interface') is not None]
    assert [j.get('name') for j in commanded] == joints
    # anything else is a mimic joint with state interfaces only (SIMON's torso slave)
    others = [j for j in block.findall('joint') if j not in commanded]
    assert all(j.find('param[@name="mimic"]') is not None for j in others)
    for joint in commanded:
        assert [c.get('name') for c in joint.findall('command_interface')] == ['position']
        assert [s.get('name') for s in joint.findall('state_interface')] == \
            ['position', 'velocity']
    plugin = root.find('gazebo/plugin')
    assert plugin.get('filename') == 'gz_ros2_control-system'
    assert plugin.get('name') == 'gz_ros2_control::GazeboSimROS2ControlPlugin'
    assert plugin.find('parameters').text.strip().endswith(
        'config/' + os.path.basename(yaml_file))

    import yaml
    with open(yaml_file) as f:
        config = yaml.safe_load(f)
    manager = config['controller_manager']['ros__parameters']
    assert manager['update_rate'] == rate
    assert manager['joint_state_broadcaster']['type'] == \
        'joint_state_broadcaster/JointStateBroadcaster'
    assert manager['joint_trajectory_controller']['type'] == \
        'joint_trajectory_controller/JointTrajectoryController'
    jtc = config['joint_trajectory_controller']['ros__parameters']
    assert jtc['joints'] == joints
    assert jtc['command_interfaces'] == ['position']
    assert jtc['state_interfaces'] == ['position', 'velocity']
    # the streamed windows end at rest: the JTC's default refusal of moving ends holds
    assert jtc['allow_nonzero_velocity_at_trajectory_end'] is False
    assert jtc['interpolate_from_desired_state'] is True
    for interface in ('position', 'velocity'):  # command_interface position / velocity
        name = f'forward_{interface}_controller'
        assert manager[name]['type'] == 'forward_command_controller/ForwardCommandController'
        forward = config[name]['ros__parameters']
        assert forward['joints'] == joints and forward['interface_name'] == interface

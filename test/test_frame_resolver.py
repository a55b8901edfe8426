"""The frame rule every goal-taking node shares (ik_control.ros.frame_resolver)."""

import sys

from ik_control import robots
from ik_control.ros.frame_resolver import FrameResolver
from ik_control.validation import InputError
import numpy as np
import pinocchio as pin
import pytest

WAM = robots.robot('wam')


def _pose(seed):
    return pin.exp6(np.random.default_rng(seed).standard_normal(6)).homogeneous


def test_base_frame_goals_are_kept_and_model_frames_are_placed_at_the_configuration():
    q = robots.ready_pose('wam') + 0.2
    frames = FrameResolver(WAM, None, lambda: q)
    T = _pose(1)
    for base in ('', WAM.base_frame):
        np.testing.assert_array_equal(frames.to_base(base, T), T)
    # pinocchio on the URDF, independently of the model's own kinematics
    urdf = pin.buildModelFromUrdf(robots.urdf_path('wam'))
    data = urdf.createData()
    full = pin.neutral(urdf)
    for name, value in zip(WAM.joint_names, q):
        full[urdf.joints[urdf.getJointId(name)].idx_q] = value
    pin.framesForwardKinematics(urdf, data, full)
    base = data.oMf[urdf.getFrameId(WAM.base_frame)]
    link = data.oMf[urdf.getFrameId('wam_link_4')]
    np.testing.assert_allclose(frames.to_base('wam_link_4', T),
                               (base.inverse() * link).homogeneous @ T, atol=1e-12)


def test_a_model_frame_before_any_joint_state_and_an_unknown_frame_are_refused(monkeypatch):
    with pytest.raises(InputError, match="frame 'wam_link_4': no joint state yet"):
        FrameResolver(WAM, None, lambda: None).to_base('wam_link_4', np.eye(4))
    # without tf2 (as from PyPI; made so on a ROS installation too) the refusal says so
    monkeypatch.setitem(sys.modules, 'tf2_ros', None)
    with pytest.raises(InputError, match="unknown frame 'map': not a frame of the robot "
                                         'model, and tf2_ros is not installed'):
        FrameResolver(WAM, None, lambda: WAM.center).to_base('map', np.eye(4))

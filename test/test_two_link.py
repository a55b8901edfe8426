"""Analytic two-link IK (ik_control.ik.two_link) against its closed form and pinocchio FK."""

from hypothesis import given, settings, strategies as st
from ik_control.ik.ccd import ccd_solve
from ik_control.ik.two_link import PlanarTwoLink, two_link_fk, two_link_ik
from ik_control.kinematics import RobotModel
from ik_control.kinematics.dh import dh_urdf, DHRow
from ik_control.validation import InputError, ModelError
import numpy as np
import pytest

L1, L2 = 0.7, 0.45
# DH planar 2R with a 30 degree offset on the second joint and a base lifted 0.2 m
ARM = RobotModel.from_urdf(
    dh_urdf([DHRow(0.0, L1, 0.0), DHRow(0.0, L2, 0.0, offset=np.radians(30.0))],
            base=np.array([[1, 0, 0, 0.1], [0, 1, 0, 0.0], [0, 0, 1, 0.2], [0, 0, 0, 1.0]])),
    end_effectors=[('tool', 'position')])
angle = st.floats(-np.pi, np.pi)
length = st.floats(0.05, 2.0)


@settings(max_examples=100, deadline=None)
@given(length, length, angle, angle, angle, angle)
def test_both_solutions_reach_a_reachable_goal_and_the_nearer_is_chosen(l1, l2, a, b, c, d):
    goal = two_link_fk(l1, l2, (a, b))
    sol = two_link_ik(l1, l2, goal, q_current=(c, d))
    assert sol.reachable
    for q in sol.solutions:
        np.testing.assert_allclose(two_link_fk(l1, l2, q), goal, atol=1e-7 * (l1 + l2))
    assert sol.solutions[0, 1] >= 0.0 >= sol.solutions[1, 1]
    wrap = lambda v: (v + np.pi) % (2 * np.pi) - np.pi  # noqa: E731
    dist = [np.abs(wrap(s - (c, d))).sum() for s in sol.solutions]
    assert np.abs(wrap(sol.q - sol.solutions[int(np.argmin(dist))])).max() < 1e-12


@settings(max_examples=100, deadline=None)
@given(length, length, angle, st.floats(0.0, 3.0))
def test_out_of_reach_goal_gives_the_nearest_reachable_point(l1, l2, direction, scale):
    reach_min, reach_max = abs(l1 - l2), l1 + l2
    distance = scale * reach_max
    goal = distance * np.array([np.cos(direction), np.sin(direction)])
    sol = two_link_ik(l1, l2, goal)
    reachable = reach_min <= distance <= reach_max
    assert sol.reachable == reachable
    nearest = min(max(distance, reach_min), reach_max)
    assert np.linalg.norm(sol.point - goal) == pytest.approx(abs(distance - nearest), abs=1e-9)
    np.testing.assert_allclose(sol.point, two_link_fk(l1, l2, sol.q), atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.floats(-3.0, 3.0), st.floats(-2.5, 2.5))
def test_robot_model_adapter_matches_pinocchio(q1, q2):
    two_link = PlanarTwoLink(ARM)
    goal = ARM.pin_frame_placement([q1, q2], 'tool')[:3, 3]
    q, reachable, out_of_plane = two_link.solve(goal, q_current=[q1, q2])
    assert reachable and out_of_plane < 1e-12
    np.testing.assert_allclose(ARM.pin_frame_placement(q, 'tool')[:3, 3], goal, atol=1e-9)
    # the solution nearer the current pose is the current pose itself
    assert np.abs((q - (q1, q2) + np.pi) % (2 * np.pi) - np.pi).max() < 1e-6


def test_ccd_on_the_two_link_arm_agrees_with_the_closed_form():
    goal = ARM.pin_frame_placement([0.4, 1.1], 'tool')[:3, 3]
    result = ccd_solve(ARM, [0.0, 0.0], goal, tolerance=1e-9, max_iterations=5000)
    q, _, _ = PlanarTwoLink(ARM).solve(goal, q_current=result.q)
    assert result.converged
    np.testing.assert_allclose(result.q, q, atol=1e-6)


def test_bad_input_is_refused():
    with pytest.raises(InputError, match='l1'):
        two_link_ik(0.0, 1.0, (0.5, 0.5))
    with pytest.raises(InputError, match='NaN'):
        two_link_ik(1.0, 1.0, (np.nan, 0.5))
    with pytest.raises(ModelError, match='two controlled'):
        PlanarTwoLink(RobotModel.from_urdf(dh_urdf([DHRow(0.0, 1.0, 0.0)] * 3)))

"""Velocity laws, clamps, nullspace and pose errors against their equations."""

from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays
from ik_control.ik import laws, linalg, nullspace
from ik_control.ik.pose_error import ERROR_AXIS_CROSS, ERROR_LOG3, ERROR_SE3, pose_error
from ik_control.ik.solver import SIGMA_ITERATIONS
import numpy as np
import pinocchio as pin
import pytest


def _random_jacobian(rng, m, n, rank=None):
    J = rng.standard_normal((m, n))
    if rank is not None:
        U, s, Vt = np.linalg.svd(J, full_matrices=False)
        s[rank:] = 0.0
        J = (U * s) @ Vt
    return J


@pytest.mark.parametrize('shape', [(6, 7), (12, 16), (3, 7), (6, 6), (7, 4)])
def test_jacobi_svd_matches_numpy(shape):
    rng = np.random.default_rng(0)
    for rank in (None, min(shape) - 1):
        J = _random_jacobian(rng, *shape, rank=rank)
        U, s, V = linalg.jacobi_svd(J)
        np.testing.assert_allclose(s, np.linalg.svd(J, compute_uv=False), atol=1e-12)
        np.testing.assert_allclose((U * s) @ V.T, J, atol=1e-12)
        np.testing.assert_allclose(V.T @ V, np.eye(V.shape[1]), atol=1e-12)


def test_pseudoinverse_is_buss_eq_13():
    rng = np.random.default_rng(1)
    for shape, rank in [((6, 7), None), ((12, 16), None), ((6, 7), 4)]:
        J = _random_jacobian(rng, *shape, rank=rank)
        e = rng.standard_normal(shape[0])
        dq = np.zeros(shape[1])
        laws.pseudoinverse_step(J, e, 1e-9, dq)
        np.testing.assert_allclose(dq, np.linalg.pinv(J, rcond=1e-9) @ e, atol=1e-10)


def test_dls_cholesky_form_equals_svd_form_and_normal_equations():
    rng = np.random.default_rng(2)
    J = _random_jacobian(rng, 6, 7)
    e = rng.standard_normal(6)
    lam2 = 0.3 ** 2
    dq, dq_svd = np.zeros(7), np.zeros(7)
    laws.dls_step(J, e, lam2, dq, np.zeros((6, 6)), np.zeros(6))
    laws.dls_svd_step(J, e, lam2, dq_svd)
    expected = np.linalg.solve(J.T @ J + lam2 * np.eye(7), J.T @ e)  # Buss eq. 10
    np.testing.assert_allclose(dq, expected, atol=1e-12)
    np.testing.assert_allclose(dq_svd, expected, atol=1e-12)


def test_dls_stays_bounded_at_an_exact_singularity():
    rng = np.random.default_rng(3)
    J = _random_jacobian(rng, 6, 7, rank=5)
    e = rng.standard_normal(6)
    dq = np.zeros(7)
    laws.dls_step(J, e, 0.0, dq, np.zeros((6, 6)), np.zeros(6))
    assert np.all(np.isfinite(dq))
    laws.dls_step(J, e, 0.1 ** 2, dq, np.zeros((6, 6)), np.zeros(6))
    # |dq| <= |e| / (2 lambda) for DLS (max of s / (s^2 + l^2) is 1 / (2 l))
    assert np.linalg.norm(dq) <= np.linalg.norm(e) / (2 * 0.1) + 1e-9


def test_transpose_alpha_is_the_optimal_step():
    rng = np.random.default_rng(4)
    J = _random_jacobian(rng, 6, 7)
    e = rng.standard_normal(6)
    dq = np.zeros(7)
    laws.transpose_step(J, e, dq, np.zeros(6))
    direction = J.T @ e
    alpha = dq @ direction / (direction @ direction)
    np.testing.assert_allclose(dq, alpha * direction)
    residual = lambda a: np.linalg.norm(e - a * J @ direction)  # noqa: E731
    assert residual(alpha) <= min(residual(alpha * 1.01), residual(alpha * 0.99))


def test_smallest_singular_value_estimate():
    rng = np.random.default_rng(5)
    for rank_deficit in (0, 1):
        J = _random_jacobian(rng, 6, 7)
        U, s, Vt = np.linalg.svd(J, full_matrices=False)
        s[-1] = 1e-3 if rank_deficit else s[-1]
        J = (U * s) @ Vt
        L = np.zeros((6, 6))
        lam2 = laws.dls_factor(J, 0.01 ** 2, L)  # lambda_0 as the controller's default
        est = laws.smallest_singular_value(L, lam2, SIGMA_ITERATIONS, np.zeros(6), np.zeros(6))
        # inverse iteration: an upper bound, exact where it matters (sigma_min small)
        assert est >= s[-1] * (1 - 1e-9)
        assert est == pytest.approx(s[-1], rel=1e-4 if rank_deficit else 5e-2, abs=1e-6)


def test_adaptive_damping_grows_as_sigma_min_falls():
    values = [laws.adaptive_damping(s, 0.01, 0.1, 0.05) for s in (0.1, 0.05, 0.03, 0.0)]
    assert values[0] == values[1] == pytest.approx(1e-4)
    assert values[1] < values[2] < values[3] == pytest.approx(1e-4 + 1e-2)


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, 7, elements=st.floats(-1e6, 1e6)), st.floats(1e-3, 10))
def test_clamp_max_abs_bounds_every_component_and_keeps_direction(v, limit):
    w = v.copy()
    laws.clamp_max_abs(w, limit)
    assert np.max(np.abs(w)) <= limit * (1 + 1e-12)
    if np.max(np.abs(v)) > 0:
        k = np.argmax(np.abs(v))
        np.testing.assert_allclose(w * v[k], v * w[k], atol=1e-9 * max(1, abs(v[k] * w[k])))


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2 ** 32 - 1))
def test_sdls_steps_toward_the_target_within_gamma_max(seed):
    # Buss & Kim: each phi_i is the pseudoinverse's term along v_i, scaled down by a clamp,
    # so J dq has a positive component along e (it reduces the error to first order)
    # whenever J^T e != 0, and no joint moves more than gamma_max
    rng = np.random.default_rng(seed)
    J = _random_jacobian(rng, 6, 7, rank=int(rng.integers(3, 7)))
    e = rng.standard_normal(6) * 10 ** rng.uniform(-3, 3)
    dq = np.zeros(7)
    laws.sdls_step(J, e, np.pi / 4, dq)
    assert np.all(np.isfinite(dq)) and np.max(np.abs(dq)) <= np.pi / 4 + 1e-12
    assert e @ (J @ dq) > 0.0
    # undamped where nothing clamps: the pseudoinverse step (the sum of the phi_i unclamped)
    small = e * (1e-9 / np.linalg.norm(e))
    laws.sdls_step(J, small, np.pi / 4, dq)
    np.testing.assert_allclose(dq, np.linalg.pinv(J, rcond=1e-9) @ small, rtol=1e-6,
                               atol=1e-18)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.sampled_from([(6, 7), (12, 16), (3, 7), (6, 6), (7, 4)]),
       st.sampled_from([None, 'deficient', 'near']))
def test_nullspace_projection_is_exact_at_any_rank(seed, shape, rank):
    # SAM eq. 16's projector: J (I - J^+ J) z = 0 to rounding, however close to singular
    rng = np.random.default_rng(seed)
    m, n = shape
    J = _random_jacobian(rng, m, n, rank=min(shape) - 1 if rank == 'deficient' else None)
    if rank == 'near':  # one singular value 1e-9 .. 1e-4 of the largest
        U, s, Vt = np.linalg.svd(J, full_matrices=False)
        s[-1] = s[0] * 10 ** rng.uniform(-9, -4)
        J = (U * s) @ Vt
    z = rng.standard_normal(n)
    out = np.zeros(n)
    nullspace.project_nullspace(J, z, out, np.zeros((n, m)), np.zeros(m))
    assert np.linalg.norm(J @ out) <= 1e-12 * np.linalg.norm(J, 2) * np.linalg.norm(z)
    # an orthogonal projection: what it removes is orthogonal to what it keeps
    assert abs(out @ (z - out)) <= 1e-12 * (z @ z)
    if rank is None:  # full rank: exactly (I - J^+ J) z, all of the nullspace kept
        np.testing.assert_allclose(out, z - np.linalg.pinv(J) @ (J @ z), atol=1e-10)


def test_a_damped_projector_would_leak_into_the_task_near_a_singularity():
    # why the projector is not built from the damped inverse (nullspace.py docstring):
    # with lambda = 0.01 and sigma_min = 1e-3, J (I - J^T (J J^T + lambda^2 I)^-1 J) z
    # keeps ~ sigma (lambda^2 / (sigma^2 + lambda^2)) of z's component: far above 1e-9
    rng = np.random.default_rng(3)
    J = _random_jacobian(rng, 6, 7)
    U, s, Vt = np.linalg.svd(J, full_matrices=False)
    s[-1] = 1e-3
    J = (U * s) @ Vt
    z = Vt[-1]  # along the weakest task direction
    damped = z - J.T @ np.linalg.solve(J @ J.T + 1e-4 * np.eye(6), J @ z)
    exact = np.zeros(7)
    nullspace.project_nullspace(J, z, exact, np.zeros((7, 6)), np.zeros(6))
    assert np.linalg.norm(J @ damped) > 1e-4
    assert np.linalg.norm(J @ exact) < 1e-15 * 1e3


def test_joint_centering_gradient_is_sam_eq_18():
    lower, upper = np.array([-1.0, 0.0]), np.array([1.0, 2.0])
    q = np.array([0.5, 0.5])
    grad = np.zeros(2)
    nullspace.posture_gradient(q, lower, upper, (lower + upper) / 2, np.ones(2), 2.0, grad)
    H = lambda x: np.sum(((x - (lower + upper) / 2) / ((upper - lower) / 2)) ** 2)  # noqa: E731
    numeric = [(H(q + d) - H(q - d)) / 2e-6 for d in np.eye(2) * 1e-6]
    np.testing.assert_allclose(grad, numeric, rtol=1e-6)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), psi=st.sampled_from([1.5, 2.0, 3.0, 4.0]))
def test_the_posture_gradient_is_the_gradient_of_parents_control_term(seed, psi):
    """H = sum alpha_i ((q_i - q_ci) / dq_i)^psi: desired angles, weights and psi."""
    rng = np.random.default_rng(seed)
    lower = rng.uniform(-3.0, -0.5, 5)
    upper = rng.uniform(0.5, 3.0, 5)
    centre = rng.uniform(lower, upper)
    weight = rng.uniform(0.0, 3.0, 5)
    q = rng.uniform(lower, upper)
    grad = np.zeros(5)
    nullspace.posture_gradient(q, lower, upper, centre, weight, psi, grad)
    half = (upper - lower) / 2
    H = lambda x: np.sum(weight * np.abs((x - centre) / half) ** psi)  # noqa: E731
    assert nullspace.posture_cost(q, lower, upper, centre, weight, psi) == pytest.approx(H(q))
    h = 1e-6
    numeric = np.array([(H(q + d) - H(q - d)) / (2 * h) for d in np.eye(5) * h])
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6)


def test_task_priority_keeps_the_primary_task_and_uses_what_is_left():
    """SAM eq. (19) as obstacle avoidance runs it: dq1 + task_priority_term."""
    rng = np.random.default_rng(7)
    J1, J2 = _random_jacobian(rng, 3, 7), _random_jacobian(rng, 3, 7)
    dx1, dx2 = rng.standard_normal(3), rng.standard_normal(3)
    dq1 = np.linalg.pinv(J1) @ dx1
    dq = dq1 + nullspace.task_priority_term(J1, dq1, J2, dx2, damping2=0.0)
    np.testing.assert_allclose(J1 @ dq, dx1, atol=1e-9)
    np.testing.assert_allclose(J2 @ dq, dx2, atol=1e-9)  # 3 + 3 <= 7: both satisfiable
    J2c = np.vstack([J1[:2], J2[:1]])  # conflicts with the primary task
    dx2c = rng.standard_normal(3)
    dq = dq1 + nullspace.task_priority_term(J1, dq1, J2c, dx2c, damping2=0.05)
    np.testing.assert_allclose(J1 @ dq, dx1, atol=1e-9)
    # the damping bounds the secondary step where the tasks conflict: with lambda_2 = 0.05
    # the secondary step is no longer than |dx2 - J2 dq1| / (2 lambda_2)
    assert np.linalg.norm(dq - dq1) <= np.linalg.norm(dx2c - J2c @ dq1) / (2 * 0.05) + 1e-9


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.sampled_from([None, 'deficient', 'near']))
def test_the_eq19_term_leaves_the_primary_task_velocity_unchanged(seed, rank):
    # SAM eq. 19's obstacle term switched on: J1 (dq1 + term) == J1 dq1 to 1e-9 relative,
    # also at and next to a singularity of the primary task, where a projector built from
    # the damped inverse (lambda_1 0.05, the term before) leaked into the task
    rng = np.random.default_rng(seed)
    J1 = _random_jacobian(rng, 6, 7, rank=5 if rank == 'deficient' else None)
    if rank == 'near':
        U, s, Vt = np.linalg.svd(J1, full_matrices=False)
        s[-1] = s[0] * 10 ** rng.uniform(-6, -2)
        J1 = (U * s) @ Vt
    J2 = _random_jacobian(rng, int(rng.integers(1, 4)), 7)
    dq1, dx2 = rng.standard_normal(7), rng.standard_normal(J2.shape[0])
    term = nullspace.task_priority_term(J1, dq1, J2, dx2)
    assert np.linalg.norm(J1 @ term) <= 1e-9 * np.linalg.norm(J1, 2) * np.linalg.norm(term)
    if rank == 'near':  # what the damped projector did here: a visible leak
        N1 = np.eye(7) - J1.T @ np.linalg.solve(J1 @ J1.T + 0.05 ** 2 * np.eye(6), J1)
        J2N = J2 @ N1
        damped = J2N.T @ np.linalg.solve(J2N @ J2N.T + 0.05 ** 2 * np.eye(len(dx2)),
                                         dx2 - J2 @ dq1)
        assert np.linalg.norm(J1 @ damped) > 1e-6 * np.linalg.norm(J1, 2) * np.linalg.norm(
            damped)


def _rotation(rng, angle=None):
    axis = rng.standard_normal(3)
    axis /= np.linalg.norm(axis)
    angle = rng.uniform(0, np.pi) if angle is None else angle
    return pin.exp3(axis * angle)


@pytest.mark.parametrize('angle', [None, 1e-9, np.pi - 1e-6, np.pi])
def test_log3_error_matches_pinocchio(angle):
    rng = np.random.default_rng(8)
    for _ in range(20):
        Ta, Td = np.eye(4), np.eye(4)
        Ta[:3, :3] = _rotation(rng)
        Td[:3, :3] = _rotation(rng, angle) @ Ta[:3, :3]
        Ta[:3, 3], Td[:3, 3] = rng.standard_normal(3), rng.standard_normal(3)
        out = np.zeros(6)
        pose_error(Ta, Td, ERROR_LOG3, False, out, np.zeros((3, 3)))
        expected = pin.log3(Td[:3, :3] @ Ta[:3, :3].T)
        if angle is not None and angle > 3.1:  # +-pi: either sign is a valid logarithm
            assert np.linalg.norm(out[3:]) == pytest.approx(np.linalg.norm(expected))
            np.testing.assert_allclose(pin.exp3(out[3:]), pin.exp3(expected), atol=1e-6)
        else:
            np.testing.assert_allclose(out[3:], expected, atol=1e-9)
        np.testing.assert_allclose(out[:3], Td[:3, 3] - Ta[:3, 3])


def test_se3_error_is_pinocchio_log6_in_base_axes():
    rng = np.random.default_rng(9)
    for _ in range(20):
        Ma = pin.SE3(_rotation(rng), rng.standard_normal(3))
        Md = pin.SE3(_rotation(rng, rng.uniform(0, 3)), rng.standard_normal(3))
        out = np.zeros(6)
        pose_error(Ma.homogeneous, Md.homogeneous, ERROR_SE3, False, out, np.zeros((3, 3)))
        local = pin.log6(Ma.inverse() * Md).vector
        R = Ma.rotation
        np.testing.assert_allclose(out, np.concatenate([R @ local[:3], R @ local[3:]]),
                                   atol=1e-9)


def test_sam_orientation_error_is_eq_21_and_agrees_with_log3_for_small_rotations():
    rng = np.random.default_rng(10)
    Ta, Td = np.eye(4), np.eye(4)
    Ta[:3, :3] = _rotation(rng)
    Td[:3, :3] = _rotation(rng, 1e-4) @ Ta[:3, :3]
    sam, log = np.zeros(6), np.zeros(6)
    pose_error(Ta, Td, ERROR_AXIS_CROSS, False, sam, np.zeros((3, 3)))
    pose_error(Ta, Td, ERROR_LOG3, False, log, np.zeros((3, 3)))
    na, nd = Ta[:3, :3], Td[:3, :3]
    eq21 = 0.5 * sum(np.cross(na[:, c], nd[:, c]) for c in range(3))
    np.testing.assert_allclose(sam[3:], eq21, atol=1e-15)
    np.testing.assert_allclose(sam[3:], log[3:], atol=1e-10)

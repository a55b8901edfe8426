"""Checks on the controller's command windows shared by the limit and reliability tests."""

import numpy as np


def assert_window_within_limits(lower, upper, v_max, a_max, command, tol=1e-9):
    """
    Assert that one command window keeps every limit.

    Times start at 0 and increase; every point is inside ``[lower, upper]`` (the
    position limits less the margin) and within ``v_max``; consecutive points differ in
    velocity by at most ``a_max`` times their spacing (the path between them is the
    constant-acceleration motion); the last point is at rest.
    """
    times, q, v = command
    assert times[0] == 0.0 and np.all(np.diff(times) > 0.0), times
    assert np.all(np.isfinite(q)) and np.all(np.isfinite(v))
    assert np.all(q >= lower - tol) and np.all(q <= upper + tol), (q, lower, upper)
    assert np.all(np.abs(v) <= v_max * (1 + tol))
    dv = np.abs(np.diff(v, axis=0))
    assert np.all(dv <= a_max * np.diff(times)[:, None] * (1 + 1e-6) + tol)
    assert not np.any(v[-1])

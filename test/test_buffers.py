"""Each compiled layout tiles its flat buffer exactly (ik_control.kinematics.buffers)."""

from ik_control import robots
from ik_control.ik import bounded_lm, solver
from ik_control.kinematics import kernels
import numpy as np
import pytest


def _tiles(buffer, views, start=0):
    """Assert ``views`` cover ``buffer[start:]`` once each: no gap, no overlap, no overrun."""
    covered = np.zeros(buffer.size, dtype=np.int64)
    base = buffer.__array_interface__['data'][0]
    for view in views:
        assert np.shares_memory(view, buffer)
        offset = (view.__array_interface__['data'][0] - base) // buffer.itemsize
        covered[offset:offset + view.size] += 1
    assert np.all(covered[start:] == 1), np.flatnonzero(covered[start:] != 1)[:10] + start
    assert not covered[:start].any()


@pytest.mark.parametrize('robot', ['wam', 'simon'])
def test_every_buffer_layout_covers_its_buffer_exactly_once(robot):
    model = robots.robot(robot)
    F, IX = model.packed_f, model.packed_i
    views = kernels.model_views(F, IX)
    _tiles(F, [v for v in views if v.dtype == F.dtype])
    _tiles(IX, [v for v in views if v.dtype == IX.dtype], start=kernels.HEADER)
    W = np.zeros(kernels.work_size(IX))
    _tiles(W, kernels.work_views(IX, W))
    B = np.zeros(solver.buffer_size(IX))
    _tiles(B, solver.buffer_views(IX, B))
    B = np.zeros(bounded_lm.buffer_size(IX))
    _tiles(B, bounded_lm.buffer_views(IX, B))

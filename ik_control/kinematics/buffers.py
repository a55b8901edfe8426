"""
Carving one flat buffer into named views: the layout helper of the compiled code.

The compiled kernels keep all their arrays in one flat float (or int) buffer, so a
solver or a model crosses into compiled code as a few arrays and allocates nothing per
call. Each layout (:func:`~ik_control.kinematics.kernels.model_views`,
:func:`~ik_control.kinematics.kernels.work_views`,
:func:`~ik_control.ik.solver.buffer_views`, :func:`~ik_control.ik.bounded_lm.buffer_views`)
takes its views in order with these helpers, each returning the view and the offset
after it, instead of slicing by hand-computed offsets.
"""

from numba import njit

__all__ = ['matrices', 'matrix', 'vector']


@njit(cache=True, nogil=True, inline='always')
def vector(B, o, n):
    """Return ``B[o:o + n]`` and the offset after it."""
    return B[o:o + n], o + n


@njit(cache=True, nogil=True, inline='always')
def matrix(B, o, rows, cols):
    """Return the next ``rows * cols`` values of ``B`` from ``o`` as a (rows, cols) view."""
    return B[o:o + rows * cols].reshape((rows, cols)), o + rows * cols


@njit(cache=True, nogil=True, inline='always')
def matrices(B, o, count, rows, cols):
    """Return the next ``count`` (rows, cols) matrices of ``B`` from ``o`` as one view."""
    n = count * rows * cols
    return B[o:o + n].reshape((count, rows, cols)), o + n

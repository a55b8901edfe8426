"""Plot helpers shared by the examples (matplotlib, Agg)."""

import numpy as np


def equal_3d_axes(ax, floor=None):
    """
    Give a 3-D axes equal scales on x, y, z around its data (metres look like metres).

    Without this, a path that is flat in one axis is stretched along it to the plot's
    full height (rounding noise looks like motion). ``floor`` [m]: lowest z shown.
    """
    lo, hi = np.array(ax.get_w_lims()).reshape(3, 2).T
    centre, half = 0.5 * (lo + hi), max(0.5 * (hi - lo).max(), 1e-3)
    ax.set_xlim(centre[0] - half, centre[0] + half)
    ax.set_ylim(centre[1] - half, centre[1] + half)
    z0 = centre[2] - half if floor is None else max(centre[2] - half, floor)
    ax.set_zlim(z0, z0 + 2 * half)
    ax.set_box_aspect((1.0, 1.0, 1.0))

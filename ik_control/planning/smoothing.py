"""
Shortcut smoothing of a joint-space path (random shortcuts, e.g. Geraerts & Overmars 2007).

Each iteration picks two waypoints ``i < j`` of the current path at random; when the
straight segment between them is free (:meth:`CollisionChecker.segment_free`), the
waypoints between them are dropped. Finally waypoints whose neighbours can be joined
directly are removed in one pass from the start. The path stays collision-free at every
step and never gets longer (triangle inequality in joint space).
"""

import numpy as np


def path_length(path):
    """Joint-space length of a polyline path (sum of Euclidean segment lengths) [rad]."""
    path = np.asarray(path, dtype=float)
    if len(path) < 2:
        return 0.0
    return float(np.sum(np.linalg.norm(np.diff(path, axis=0), axis=1)))


def shortcut(path, checker, rng, iterations=100):
    """Return a shorter free path with the same ends (module docstring); ``rng`` a Generator."""
    path = [np.asarray(q, dtype=float) for q in path]
    for _ in range(int(iterations)):
        if len(path) < 3:
            break
        i, j = sorted(rng.choice(len(path), size=2, replace=False))
        if j - i < 2:
            continue
        if checker.segment_free(path[i], path[j]):
            path = path[:i + 1] + path[j:]
    out = [path[0]]
    k = 0
    while k < len(path) - 1:
        j = len(path) - 1
        while j > k + 1 and not checker.segment_free(path[k], path[j]):
            j -= 1
        out.append(path[j])
        k = j
    return np.array(out)

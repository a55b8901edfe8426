"""
A search tree in configuration space: node configurations, parents, goal distances.

Arrays grow by doubling so that adding a node is O(1) amortised. Queries:

* the configuration-space nearest neighbour (Euclidean norm of the joint difference
  [rad]): one compiled pass over the stored nodes (no temporary arrays);
* the node closest to the goal in the workspace among those not yet used for a goal
  extension (paper sec. IV): a binary heap of ``(distance, index)``, O(log n) per node
  (a node leaves the heap when it is found used);
* the node closest to the goal among all (Bertram et al.): kept up to date as nodes are
  added, O(1).

Ties go to the lowest index, as an ``argmin`` over the nodes would give.
"""

import heapq

from numba import njit
import numpy as np


@njit(cache=True, nogil=True)
def _nearest(nodes, size, q):
    best, best_d = 0, np.inf
    nq = q.shape[0]
    for i in range(size):
        d = 0.0
        for k in range(nq):
            t = nodes[i, k] - q[k]
            d += t * t
        if d < best_d:
            best, best_d = i, d
    return best


class Tree:
    """Nodes ``q[:size]`` (rad), ``parent`` (-1 at the root), ``distance`` to the goal."""

    def __init__(self, root, distance=np.inf, capacity=1024):
        root = np.asarray(root, dtype=float)
        self.nq = root.shape[0]
        self.q = np.empty((capacity, self.nq))
        self.parent = np.empty(capacity, dtype=np.int64)
        self.distance = np.empty(capacity)
        self.used = np.empty(capacity, dtype=bool)
        self.size = 0
        self._heap = []             # (distance, index) of nodes with a finite distance
        self._closest = -1          # index of the smallest distance so far (-1: none finite)
        self.add(root, -1, distance)

    def add(self, q, parent, distance=np.inf):
        """Append a node; returns its index."""
        if self.size == self.q.shape[0]:
            cap = 2 * self.size
            self.q = np.resize(self.q, (cap, self.nq))
            self.parent = np.resize(self.parent, cap)
            self.distance = np.resize(self.distance, cap)
            self.used = np.resize(self.used, cap)
        i = self.size
        self.q[i] = q
        self.parent[i] = parent
        self.distance[i] = distance
        self.used[i] = False
        self.size += 1
        if distance < np.inf:
            heapq.heappush(self._heap, (float(distance), i))
            if self._closest < 0 or distance < self.distance[self._closest]:
                self._closest = i
        return i

    def nearest(self, q):
        """Index of the node nearest ``q`` in configuration space (Euclidean, rad)."""
        return int(_nearest(self.q, self.size, np.ascontiguousarray(q, dtype=float)))

    def closest_to_goal(self, skip_used):
        """Index of the node with the smallest goal distance (unused ones if ``skip_used``)."""
        if not skip_used:
            return self._closest
        heap = self._heap
        while heap and self.used[heap[0][1]]:
            heapq.heappop(heap)
        return heap[0][1] if heap else -1

    def path_to(self, i):
        """Return the configurations from the root to node ``i`` (m x nq)."""
        chain = []
        while i >= 0:
            chain.append(i)
            i = self.parent[i]
        return self.q[chain[::-1]].copy()

"""
A search tree in configuration space: node configurations, parents, goal distances.

Arrays grow by doubling so that adding a node is O(1) amortised and the nearest-node
queries are single vectorised passes over the stored nodes: the configuration-space
nearest neighbour (Euclidean norm of the joint difference [rad]) and the workspace node
closest to the goal among those not yet used for a goal extension (paper sec. IV).
"""

import numpy as np


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
        return i

    def nearest(self, q):
        """Index of the node nearest ``q`` in configuration space (Euclidean, rad)."""
        diff = self.q[:self.size] - q
        return int(np.argmin(np.einsum('ij,ij->i', diff, diff)))

    def closest_to_goal(self, skip_used):
        """Index of the node with the smallest goal distance (unused ones if ``skip_used``)."""
        d = self.distance[:self.size]
        if skip_used:
            d = np.where(self.used[:self.size], np.inf, d)
        i = int(np.argmin(d))
        return i if np.isfinite(d[i]) else -1

    def path_to(self, i):
        """Return the configurations from the root to node ``i`` (m x nq)."""
        chain = []
        while i >= 0:
            chain.append(i)
            i = self.parent[i]
        return self.q[chain[::-1]].copy()

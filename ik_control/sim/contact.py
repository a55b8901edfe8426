"""
Contact of a simulated robot with itself, judged from its own state.

The simulated robot (``sim_robot``) checks the positions it publishes against the URDF's
collision shapes, the controller's own model
(:class:`~ik_control.collision.model.CollisionModel`), so a user sees on its
``/diagnostics`` whether the robot touched itself, whatever commanded it.
"""

from ik_control.collision.model import CollisionModel
import numpy as np

__all__ = ['ContactReport']


class ContactReport:
    """
    Contact of the simulated robot with itself, checked on its own state (no command).

    The URDF's collision shapes (:class:`~ik_control.collision.model.CollisionModel`):
    pairs of non-adjacent links less the SRDF's, or, without one, less those in contact
    at the first state. Counts the checks and those in contact, keeps the deepest, and
    says when a contact starts and ends (returned by :meth:`check`, for the log).
    """

    def __init__(self, model, srdf, q0):
        self.cm = CollisionModel(model, srdf=srdf or None)
        self.allowed = []
        if not srdf:
            rows, _ = self.cm.distances(q0, within=0.0)
            self.allowed = [self.cm.pair_name(k) for k in rows]
            links = {frozenset((self.cm.links[a], self.cm.links[b]))
                     for a, b in self.cm.pairs[rows]}
            self.cm.set_disabled(self.cm.disabled | links)
        self.checks = self.samples = 0
        self.deepest, self.deepest_pair = 0.0, ''
        self.touching = False

    def check(self, q):
        """Check ``q``; return a line when a contact starts or ends, else None."""
        self.checks += 1
        rows, d = self.cm.distances(q, within=0.0)
        if rows.size == 0:
            if self.touching:
                self.touching = False
                return 'contact ended'
            return None
        self.samples += 1
        i = int(np.argmin(d))
        name = self.cm.pair_name(rows[i])
        if d[i] < self.deepest:
            self.deepest, self.deepest_pair = float(d[i]), name
        if not self.touching:
            self.touching = True
            return f'contact: {name} {-1e3 * d[i]:.1f} mm deep ({rows.size} pairs)'
        return None

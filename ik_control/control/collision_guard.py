"""
The controller's collision checks, built from one configuration (docs/collision.md).

:class:`CollisionGuard` holds the tick's :class:`~ik_control.control.collision_stage.
CollisionStage` and the position IK's own copy of the same :class:`~ik_control.collision.
model.CollisionModel` (the fallback solves on its own thread), keeps their scenes and
disabled pairs equal, and decides the two questions around the stage: is an IK solution
clear (:meth:`CollisionGuard.accept`), and which pairs in contact at the first state are
left unchecked when no SRDF is given (:meth:`CollisionGuard.allow_start_contacts`).
"""

from ik_control.collision.model import CollisionModel
from ik_control.control import collision_stage
from ik_control.control.collision_stage import CollisionStage
from ik_control.control.status import Status

_NONE = int(Status.NONE)
_COLLISION_NEAR = int(Status.COLLISION_NEAR)
_COLLISION_HALT = int(Status.COLLISION_HALT)


def configure(old, model, config, events):
    """
    Return the guard for ``config`` (``old`` re-parameterised where it fits), or None.

    None where ``collision.enabled`` is off or the model has no URDF (a DH robot). A new
    SRDF or mesh measure builds a new guard, which keeps ``old``'s scene.
    """
    if not config.collision.enabled or getattr(model, 'urdf_xml', None) is None:
        return None
    guard = old
    convex = config.collision.convex_meshes
    if old is None or old.srdf != config.collision.srdf or old.convex != convex:
        guard = CollisionGuard(model, config.collision.srdf, events, convex)
        guard.set_scene(old.stage.cm.scene if old is not None else [])
        guard.limited_since = old.limited_since if old is not None else None
    stage = guard.stage
    stage.security = config.collision.security_distance
    stage.influence = config.collision.influence_distance
    stage.gain = config.collision.gain
    return guard


def eq19_shapes(model, convex=False):
    """
    Return the URDF's collision shapes for SAM eq. 19's term, or None (capsules).

    A robot from a URDF with ``<collision>`` shapes is measured by them (scene pairs
    only; ``convex``: meshes as their hulls); a robot from a DH table, or a URDF without
    shapes, by the capsules of ``obstacles.link_radius`` around its joint origins.
    """
    if getattr(model, 'urdf_xml', None) is None:
        return None
    shapes = CollisionModel(model, self_pairs=False, convex=convex)
    return shapes if shapes.robot_count else None


class CollisionGuard:
    """
    The collision stage and the position IK's check for one robot and SRDF.

    ``srdf``: the SRDF's XML ('' = none: the pairs in contact at the first state are
    left out, :meth:`allow_start_contacts`); ``events``: the controller's
    :class:`~ik_control.control.goal_state.EventQueue`; ``convex``: meshes measured as
    their convex hulls (:class:`~ik_control.collision.model.CollisionModel`).
    """

    def __init__(self, model, srdf, events, convex=False):
        cm = CollisionModel(model, srdf=srdf or None, convex=convex)
        if cm.robot_count == 0:
            events.post('collision_no_shapes', 'warn', 'the URDF has no <collision> shapes: '
                        'the collision stage has nothing to check (scene obstacles need '
                        'robot shapes too)')
        self.stage = CollisionStage(model, cm)
        self.srdf, self.convex = srdf, convex
        self.events = events
        # the IK thread's own copy
        self.check = CollisionModel(model, srdf=srdf or None, convex=convex)
        self.allow_start = not srdf  # the first state's contacts are still to be allowed
        self.limited_since = None  # since when the stage bounds the motion [s], or None

    def bound(self, now, tick, joint_T, J, h, tracking_error):
        """
        Bound the tick's desired velocity ``tick.v_des`` by the stage; return status bits.

        ``joint_T``: the tree joints' placements at ``tick.q``; ``J``: the task Jacobian
        of this tick, or None; ``h`` [s] the tick's step; ``tracking_error`` [rad or m] per
        joint, the robot's distance from the committed path
        (:meth:`CollisionStage.constrain`). Keeps :attr:`limited_since`, which the referee
        reads to call a stalled goal unreachable for ``COLLISION``.
        """
        model = self.stage.model
        flags = self.stage.constrain(joint_T, J, tick.q, tick.v_prev, tick.v_des, tick.v_max,
                                     tick.a_max, model.lower, model.upper,
                                     tick.config.limits.position_margin, h, tracking_error)
        status = _NONE
        if flags & collision_stage.NEAR:
            status |= _COLLISION_NEAR
        if flags & collision_stage.HALTED:
            status |= _COLLISION_HALT
        if flags & collision_stage.LIMITED:
            if self.limited_since is None:
                self.limited_since = now
        else:
            self.limited_since = None
        return status

    def set_scene(self, shapes):
        """Give the stage and the IK's check the same obstacles, as exact shapes."""
        self.stage.cm.set_scene(shapes)
        self.check.set_scene(shapes)

    def accept(self, q):
        """
        Whether the position IK's solution ``q`` keeps every pair the security distance apart.

        Only the solution is checked; the straight approach to it is guarded by the
        collision stage (docs/collision.md says what checking the line as well did).
        Called on the fallback's thread: it uses the IK's own copy of the model.
        """
        return not self.check.distances(q, within=self.stage.security)[0].size

    def allow_start_contacts(self, q):
        """
        Leave pairs in contact at ``q``, the first state, unchecked (logged), once.

        MoveIt's "Default" rule at run time (contact: nearer than the security distance,
        as :mod:`~ik_control.collision.acm` counts it): shells that overlap where the robot
        starts would otherwise stop every motion. An SRDF (``collision.srdf``) decides
        instead: then this does nothing.
        """
        if not self.allow_start:
            return
        self.allow_start = False
        cm = self.stage.cm
        rows, d = cm.distances(q, within=self.stage.security)
        if rows.size:
            names = [cm.pair_name(k) for k in rows]
            links = {frozenset((cm.links[a], cm.links[b]))
                     for a, b in cm.pairs[rows] if b < cm.robot_count}
            cm.set_disabled(cm.disabled | links)
            self.check.set_disabled(cm.disabled)
            self.events.post('collision_allowed', 'warn',
                             f'no SRDF: {len(names)} pairs in contact at the start are not '
                             f'checked ({", ".join(names[:4])}{"..." if len(names) > 4 else ""});'
                             ' write one with `ik_control collision-matrix`')

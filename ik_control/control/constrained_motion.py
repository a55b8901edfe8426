"""
Welman's geometric constraints kept by the controller while it tracks its goals.

``ControllerConfig.constraints`` (the ``constraints`` parameter of ``ik_controller``)
names constraints on link handles (:mod:`ik_control.ik.constraints`): a point of a link
kept on a plane, on a line or on a point, a link kept at an orientation. Each tick,
after the law (or the ``ik_method``) has produced the desired joint velocity ``v`` and
before the limiter, :meth:`ConstrainedMotion.apply` replaces it:

1. the task part: the task velocity the law asked for, ``x_dot = J v`` (``J`` the
   weighted task Jacobian), becomes the least-squares motion inside the motions the
   constraints allow, ``g = N (J N)^T ((J N)(J N)^T + lambda^2 I)^-1 x_dot``
   (:meth:`ConstraintSet.task_velocity`, ``N`` the constraint nullspace projector), plus
   the part of ``v`` that neither the task nor the constraints see (the obstacle
   avoidance's and the other secondary motions: the projection of ``v`` onto the
   nullspace of ``[J; J_c]``). So what the constraints forbid (the palm leaving the
   table) is dropped and the rest of the goal (the palm's motion on the table) is kept;
2. the Lagrange-multiplier projection ``q_dot = K (g + J_c^T lambda)`` with
   ``J_c K J_c^T lambda = -J_c K g - k_s C`` (Welman; ``k_s`` = the controller's gain),
   and what the limiter makes of it (the whole velocity scaled, its direction kept): the
   velocity aimed at, ``v_t``;
3. the knot the controller commits is ``q + (v_prev + v) dt / 2`` (trapezoidal). With
   ``C_0``, ``J_0`` the constraints at the knot of the last velocity kept,
   ``q + v_prev dt``, ``C = 0`` at the knot is, to first order in the change,
   ``J_0 dt / 2 (v - v_prev) = -C_0`` (this carries the constraints' curvature: the
   acceleration a curved constraint needs at speed); the velocity is the one nearest
   ``v_t`` that meets it inside per-joint bounds that the limiter leaves unchanged (its
   velocity and acceleration limits, the braking distance to each position bound and the
   position clip, :meth:`ConstrainedMotion._bounds`): a small active-set least squares;
4. the knot is put exactly on the constraints by Newton steps (``|C| <= 1e-12``; the
   second-order remainder of step 3) and the velocity is the one that reaches it,
   ``v = 2 (q* - q) / dt - v_prev``. A joint whose velocity the limiter still changes (a
   joint turning at its bound, a rule the bounds do not model) takes the limiter's value
   and the others meet the constraints without it.

The controller's own limiter then runs as always and leaves that velocity unchanged, so
the committed knots keep every constraint to about 1e-12 m (or rad). Where no velocity
within the limits keeps them (a constraint so curved at the speed asked that it needs
more acceleration than the limits give), the limiter's velocity is taken and
:attr:`ConstrainedMotion.altered` counts the tick. Between knots, a trajectory
controller's cubic segments leave the constraints by ``O(dt^2)``; the braking tail of
each command window (the stop if the stream ends) does not keep them. Exact knots with the
trapezoidal rule fix the average of two consecutive velocities across the constraints,
not each: a velocity across them left by a start or a stop alternates in sign from tick
to tick (about 1e-6 rad/s after a hold, undamped but harmless: the knots stay on).

Constraints not met when they take effect (an explicit plane the palm is not on) are
approached: ``C`` at the next knot is asked to be ``exp(-k_s dt)`` of what it is, as fast
as the bounds allow, until it is below :data:`APPROACH`.

The YAML form (:func:`constraints_from_yaml`) is a list of mappings, each with a
``type`` (``plane``, ``line``, ``point``, ``orientation``), the link ``frame`` and, for the
point types, the handle ``point`` in that frame [m] (default its origin)::

    - {type: plane, frame: right_hand, normal: [0, 0, 1]}          # plane_point: [x, y, z]
    - {type: orientation, frame: right_hand}                       # quaternion: [x, y, z, w]
    - {type: point, frame: left_hand}                              # target: [x, y, z]
    - {type: line, frame: left_hand, direction: [1, 0, 0]}         # line_point: [x, y, z]
    - {type: line, frame: com, direction: [0, 0, 1]}               # the centre of mass

``frame: com`` is the robot's centre of mass (:class:`~ik_control.ik.constraints.
CentreOfMass`: kept over its support by a vertical line, say), for the point types only.
``plane_point``, ``line_point``, ``target`` and ``quaternion`` are in the base frame; left
out, they are where the handle is when the constraints take effect (the first tick
after they were set), so ``normal: [0, 0, 1]`` alone keeps the palm on the horizontal
plane it is on. The joint-space approach of the position-IK fallback (``fallback.strategy:
joint``) does not know the constraints: with constraints, use ``posture`` or ``off``.
"""

from ik_control.control import limits as limits_mod
from ik_control.ik.constraints import (CentreOfMass, COM, constraint_projector, ConstraintSet,
                                       Handle, lagrange_multipliers, Orientation, PointOnLine,
                                       PointOnPlane, PointToPoint, task_motion)
from ik_control.validation import (finite_vector, InputError, quaternion_to_matrix,
                                   unit_quaternion)
import numpy as np

# the velocity bounds are kept this fraction of the acceleration step inside the
# limiter's: the Newton correction after the first-order step stays inside them [-]
BOUND_SHRINK = 1e-3
# constraints further than this [m or rad] are approached (at the feedback gain) rather
# than met at the next knot by Newton steps
APPROACH = 1e-9
# damping of the task's least squares inside the allowed motions (task_velocity)
TASK_DAMPING = 1e-3
_SAME = 1e-12  # velocities this close (relative) are the same: rounding [-]
TYPES = {'plane': ('normal', 'plane_point'), 'line': ('direction', 'line_point'),
         'point': ('target',), 'orientation': ('quaternion',)}


def _box_least_squares(target, A, b, lo, hi, rcond):
    """
    Return ``v`` nearest ``target`` with ``A v = b`` (least squares if it cannot), in bounds.

    Active set: the equality-constrained nearest point, then the joint furthest outside
    its bounds ``[lo, hi]`` is put on the bound and the rest solved again, at most once
    per joint.
    """
    n = target.size
    v = target.copy()
    fixed = np.zeros(n, dtype=bool)
    for _ in range(n + 1):
        free = ~fixed
        Af = A[:, free]
        rhs = b - A[:, fixed] @ v[fixed] - Af @ target[free]
        U, s, Vt = np.linalg.svd(Af, full_matrices=False)
        keep = s > rcond * (s[0] if s.size and s[0] > 0.0 else 1.0)
        v[free] = target[free] + Vt[keep].T @ ((U[:, keep].T @ rhs) / s[keep])
        outside = np.maximum(v - hi, lo - v)
        outside[fixed] = 0.0
        i = int(np.argmax(outside))
        if outside[i] <= 0.0:
            break
        fixed[i] = True
        v[i] = min(max(v[i], lo[i]), hi[i])
    return v


def constraints_from_yaml(text):
    """
    Parse the YAML list of constraints (module docstring) into checked mappings.

    Raises :class:`InputError` naming the first bad entry.
    """
    import yaml

    try:
        specs = yaml.safe_load(text) if text.strip() else []
    except yaml.YAMLError as exc:
        raise InputError(f'constraints are not valid YAML: {exc}') from None
    if specs is None:
        specs = []
    if not isinstance(specs, list):
        raise InputError('constraints must be a YAML list of {type, frame, ...}')
    out = []
    for i, spec in enumerate(specs):
        if not isinstance(spec, dict) or spec.get('type') not in TYPES:
            raise InputError(f'constraint {i}: needs type: one of {list(TYPES)}')
        kind = spec['type']
        allowed = {'type', 'frame', *TYPES[kind]}
        if kind != 'orientation':
            allowed.add('point')
        unknown = set(spec) - allowed
        if unknown:
            raise InputError(f'constraint {i} ({kind}): unknown keys {sorted(unknown)}; '
                             f'allowed {sorted(allowed)}')
        if not isinstance(spec.get('frame'), str) or not spec['frame']:
            raise InputError(f'constraint {i} ({kind}): needs the link frame (frame: name)')
        checked = {'type': kind, 'frame': spec['frame']}
        if spec['frame'] == COM and (kind == 'orientation' or 'point' in spec):
            raise InputError(f'constraint {i} ({kind}): frame {COM} is the centre of mass, a '
                             'point without orientation or an offset (type plane, line or '
                             'point, no point:)')
        try:
            if kind != 'orientation':
                checked['point'] = finite_vector(spec.get('point', (0.0, 0.0, 0.0)), 3,
                                                 f'constraint {i} point')
            for key in TYPES[kind]:
                if key not in spec:
                    if key in ('normal', 'direction'):
                        raise InputError(f'constraint {i} ({kind}): needs {key}: [x, y, z]')
                    continue
                if key == 'quaternion':
                    checked[key] = unit_quaternion(spec[key], f'constraint {i} quaternion')
                else:
                    checked[key] = finite_vector(spec[key], 3, f'constraint {i} {key}')
                if key in ('normal', 'direction') and np.linalg.norm(checked[key]) < 1e-12:
                    raise InputError(f'constraint {i} ({kind}): {key} must not be zero')
        except InputError:
            raise
        except (TypeError, ValueError) as exc:
            raise InputError(f'constraint {i} ({kind}): {exc}') from None
        out.append(checked)
    return out


def bind(model, specs, q):
    """Constraint objects of ``specs`` on ``model``; values left out are taken at ``q``."""
    made = []
    for spec in specs:
        kind, frame = spec['type'], spec['frame']
        if kind == 'orientation':
            R = (quaternion_to_matrix(spec['quaternion']) if 'quaternion' in spec
                 else model.pin_frame_placement(q, frame)[:3, :3])
            made.append(Orientation(frame, R))
            continue
        handle = CentreOfMass() if frame == COM else Handle(frame, tuple(spec['point']))
        here = handle.placement(model, q)[0]
        if kind == 'plane':
            made.append(PointOnPlane(handle, spec.get('plane_point', here), spec['normal']))
        elif kind == 'line':
            made.append(PointOnLine(handle, spec.get('line_point', here), spec['direction']))
        else:
            made.append(PointToPoint(handle, spec.get('target', here)))
    return made


def build(old, model, config):
    """Return the :class:`ConstrainedMotion` of ``config.constraints`` (``old`` if same)."""
    source = config.constraints
    if (source.strip() if isinstance(source, str) else len(source)) and (
            config.fallback.strategy == 'joint'):
        raise InputError("constraints need fallback.strategy 'posture' or 'off': the joint-"
                         'space approach to a position-IK solution ignores them')
    if isinstance(source, str):
        if old is not None and isinstance(old.source, str) and old.source == source:
            old.feedback_gain = config.gain
            return old
        specs = constraints_from_yaml(source)
        objects = None
    else:
        if old is not None and old.source is source:
            old.feedback_gain = config.gain
            return old
        specs, objects = None, list(source)
    if not (specs or objects):
        return None
    return ConstrainedMotion(model, source, specs, objects, config.gain)


class ConstrainedMotion:
    """The constraints of one configuration and their per-tick projection (module docstring)."""

    def __init__(self, model, source, specs, objects, feedback_gain):
        self.model = model
        self.source = source
        self.feedback_gain = float(feedback_gain)
        self.set = None
        if objects is not None:
            self.set = ConstraintSet(model, objects, feedback_gain=feedback_gain)
        else:
            for i, spec in enumerate(specs):
                if spec['frame'] != COM and not model.pin_model.existFrame(spec['frame']):
                    raise InputError(f"constraint {i}: frame '{spec['frame']}' is not in the "
                                     'robot model')
        self.specs = specs
        self.residual = 0.0       # largest |C| at the last committed knot [m or rad]
        self.altered = 0          # ticks whose constrained step the limiter changed
        self._check = np.zeros(model.nq)

    def _bind(self, q):
        self.set = ConstraintSet(self.model, bind(self.model, self.specs, q),
                                 feedback_gain=self.feedback_gain)

    def apply(self, tick, h, task):
        """
        Replace the tick's desired velocity ``tick.v_des`` by the constrained one.

        ``h`` [s] is the tick; ``task``: the velocity came from the Cartesian law this tick
        (``tick.J`` is the task Jacobian at ``tick.q``), else it is kept as a joint
        motion and only projected (hold).
        """
        q, v_prev, v = tick.q, tick.v_prev, tick.v_des
        if self.set is None:
            self._bind(q)
        cs = self.set
        C, Jc = cs.evaluate(q)
        g = self._task_motion(tick.J, Jc, v) if task else v
        m = self.model
        v1 = self._velocity(Jc, g, C)
        # what the limiter makes of it (the whole velocity scaled: its direction kept)
        self._altered(tick, h, v1)
        target = self._check.copy()
        # the knot reached with the last velocity kept, and the constraints there: the
        # knot of end velocity v is that one plus h (v - v_prev) / 2 (trapezoidal), so
        # C = 0 there is, to first order in the change, A v = b
        C0, J0 = cs.evaluate(q + h * v_prev)
        A = 0.5 * h * J0
        b = A @ v_prev - C0
        # constraints not met (set where the arm was not): C shrinks by exp(-k_s dt) a
        # tick instead, to first order, as fast as the bounds allow
        approaching = np.abs(C).max() > APPROACH
        if approaching:
            b += np.exp(-self.feedback_gain * h) * C
        lo, hi = self._bounds(tick, h)
        v[:] = _box_least_squares(target, A, b, lo, hi, cs.rcond)
        if approaching:
            self.residual = float(np.abs(C).max())
            return
        K = cs.K.copy()
        for _ in range(m.nq):
            knot, _ = cs.correct(q + 0.5 * h * (v_prev + v), K)
            v[:] = 2.0 * (knot - q) / h - v_prev
            if not self._altered(tick, h, v):
                break
            # a rule of the limiter that the bounds do not model (a joint turning at its
            # position bound): the joints it changes get its velocity, the others keep
            # the constraints
            changed = np.abs(self._check - v) > _SAME * (1.0 + np.abs(v))
            lo[changed] = hi[changed] = self._check[changed]
            K[changed] = 0.0
            v[:] = _box_least_squares(target, A, b, lo, hi, cs.rcond)
        if self._altered(tick, h, v):
            # no velocity within the limits keeps the constraints (the constraints'
            # curvature at this speed needs more acceleration, or they were not met):
            # the limiter's, and the constraint error it leaves
            self.altered += 1
            v[:] = self._check
        self.residual = cs.residual(q + 0.5 * h * (v_prev + v))

    def _bounds(self, tick, h):
        """
        Per-joint bounds [rad/s] on the end velocity that the limiter leaves unchanged.

        Rules 1 to 4 of :mod:`~ik_control.control.limits` as bounds on each joint (the
        velocity and acceleration limits, the braking distance to the position bound and
        the position clip), ``BOUND_SHRINK`` of the acceleration step inside them.
        """
        m = self.model
        lo, hi = np.empty(m.nq), np.empty(m.nq)
        limits_mod.velocity_box(tick.q, tick.v_prev, m.lower, m.upper,
                                tick.config.limits.position_margin, tick.v_max, tick.a_max, h,
                                lo, hi)
        shrink = BOUND_SHRINK * tick.a_max * h
        hi, lo = hi - shrink, lo + shrink
        bad = lo > hi                    # no room: the limiter's own choice decides
        lo[bad] = hi[bad] = 0.5 * (lo[bad] + hi[bad])
        return lo, hi

    def _altered(self, tick, h, v):
        """Whether the controller's limiter would change ``v`` (its output in ``_check``)."""
        m = self.model
        limits_mod.limit_velocity(tick.q, tick.v_prev, v, m.lower, m.upper,
                                  tick.config.limits.position_margin, tick.v_max, tick.a_max, h,
                                  self._check)
        return bool(np.any(np.abs(self._check - v) > _SAME * (1.0 + np.abs(v))))

    def _velocity(self, Jc, g, C):
        """Welman's ``q_dot = K (g + J_c^T lambda)`` with ``J_c q_dot = -k_s C``."""
        K = self.set.K
        lam = lagrange_multipliers(Jc, K, g, C, self.feedback_gain, self.set.rcond)
        return K * (g + Jc.T @ lam)

    def _task_motion(self, J, Jc, v):
        """Return the task's least squares inside the allowed motions plus the unseen part of v."""
        N = constraint_projector(Jc, self.set.K, self.set.rcond)
        g = task_motion(J, N, J @ v, TASK_DAMPING)
        stacked = np.vstack([J, Jc])
        _, s2, Vt2 = np.linalg.svd(stacked)
        rank = int(np.sum(s2 > 1e-9 * (s2[0] if s2.size else 0.0)))
        free = Vt2[rank:]
        return g + free.T @ (free @ v)

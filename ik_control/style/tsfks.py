"""
TSFKS: the two-step (coarse, then fine) forward-kinematics search of Gielniak et al., sec. IV-A.

Given a point constraint ``p`` [m] in the base frame, find joint values that bring an end
effector (or a line segment attached to it, the baseball bat of sec. V-D) onto ``p``:

1. **Search box.** Each searched joint ``j`` is confined to its hardware limits less a
   buffer of ``buffer`` (10-15 % in the paper) of its full range at each end, so that the
   velocity modulation that follows has room (sec. IV-A, last paragraph). The joints that
   are not searched stay at the midpoint of their range (``fixed`` overrides it).
2. **Coarse search.** Each searched joint's box ``[lo, hi]`` is sampled by eq. (1)::

       Theta(i) = lo + i / i_max * (hi - lo),    i = 1 .. i_max - 1,
       i_max = round((hi - lo) / increment)

   (an increment of 20 % of the range gives the paper's four values). Forward kinematics is
   evaluated at every combination; the combination ``S`` with the smallest Euclidean
   distance between the constraint and the robot's constrained point is kept.
3. **Fine search.** The same, with ``[lo, hi] = S -+ coarse increment / 2`` (clipped to the
   box) sampled by the fine increment. The fine increment sets the final error.

4. **Ties** (not in the paper; ``tie_fraction`` > 0 and a ``deviation`` given to
   :meth:`Tsfks.search`). The six-joint arm is redundant: many grid points are about as
   near the constraint as the nearest one, and the plain minimum jumps between them as the
   constraint moves. In each step, the grid points within ``tie_fraction`` of the grid's
   resolution (``0.5 sum_j |dp/dq_j| increment_j`` at the nearest point) of the nearest
   distance are ties, and the tie with the least ``deviation`` wins: for the style adapter,
   the one whose eq. 2 scalars are nearest 1 (the least modulation of the exemplar,
   :func:`~ik_control.style.modulation.scalar_deviation`). A tie's own distance must stay
   within its grid's resolution; and if the fine answer in a tie-broken coarse cell is
   farther than ``TIE_ACCEPT`` of the fine resolution, the fine step searches the nearest
   coarse cell instead, as in the paper (at most a third grid: 4 096 + 2 x 46 656 FK).

The grids and their compiled search are :mod:`ik_control.style.tsfks_grid`.
"""

from dataclasses import dataclass
import time

from ik_control.ik import laws
from ik_control.style.tsfks_grid import eq1_samples, grid_search
from ik_control.validation import finite_vector, InputError
import numpy as np


@dataclass
class TsfksResult:
    """Outcome of :meth:`Tsfks.search`."""

    q: np.ndarray            # all controlled joints [rad]: searched values, others fixed
    error: float             # distance between the constraint and the constrained point [m]
    resolution: float        # first-order error bound of the fine grid at q [m] (see search)
    coarse_error: float      # best distance of the coarse step [m]
    evaluations: int         # forward-kinematics evaluations, both steps
    seconds: float


class Tsfks:
    """
    Two-step forward-kinematics search (module docstring) for one end effector of a model.

    Parameters
    ----------
    model:
        :class:`~ik_control.kinematics.RobotModel`.
    end_effector:
        Frame name of one of ``model.end_effectors``.
    search_joints:
        Controlled joints searched (the joints that matter for the constraint); each must
        move the end effector.
    coarse_fraction, fine_fraction:
        Coarse and fine increments as fractions of each joint's search range (scalars or one
        per searched joint); the paper's example: coarse 0.2. ``fine_fraction`` is a fraction
        of the search range too (e.g. 0.025).
    buffer:
        Part of each joint's full range left out at each limit (0.10-0.15 in the paper).
    fixed:
        ``{joint: value [rad]}`` for joints that are not searched (default: mid-range).
    segment:
        ``(a, b)``: endpoints [m] of a segment in the end-effector frame that must pass
        through the constraint (the bat); default: the frame origin (a point constraint).
    box:
        ``{joint: (lo, hi)}`` [rad]: narrower search ranges (intersected with the buffered
        limits), for a search confined to a small region (the strike zone of sec. V-D).
    posture_weight:
        [m] Not in the paper (0 gives its pure distance search). The redundant arm has many
        grid points within millimetres of a point; the plain minimum then jumps between
        them for constraints a centimetre apart. With a weight, each grid point costs
        ``distance + posture_weight * sum_j ((q_j - preferred_j) / range_j)^2``, so among
        near-equal solutions the one nearest a preferred posture (the exemplar's pose at
        the constraint instant) wins.
    refine_iterations:
        Not in the paper (0 keeps its two steps): damped least-squares steps after the fine
        step (:meth:`refine`), which take the grid's answer onto the constraint.
    tie_fraction:
        Not in the paper (0 keeps its pure minimum): the tolerance, as a fraction of each
        step's grid resolution, within which grid points are ties broken by the
        ``deviation`` given to :meth:`search` (module docstring, 4.).

    """

    #: A tie-broken coarse cell is kept if the fine answer in it is within this fraction of
    #: the fine resolution; otherwise the fine step searches the nearest coarse cell.
    TIE_ACCEPT = 0.5

    def __init__(self, model, end_effector, search_joints, coarse_fraction=0.2,
                 fine_fraction=0.025, buffer=0.125, fixed=None, segment=None, box=None,
                 posture_weight=0.0, refine_iterations=0, tie_fraction=0.0):
        self.model = model
        self.frame = model.end_effector_index(end_effector)
        if not 0.0 <= buffer < 0.5:
            raise InputError(f'buffer must be in [0, 0.5) of the joint range, got {buffer}')
        joints = list(search_joints)
        unknown = [j for j in joints if j not in model.joint_names]
        if unknown or not joints or len(set(joints)) != len(joints):
            raise InputError(f'search joints {joints} must be distinct joints of '
                             f'{list(model.joint_names)}')
        k_of = {n: k for k, n in enumerate(model.joint_names)}
        chain = np.flatnonzero(model.support[self.frame])
        ctrl = model.ctrl_index[chain]
        order = []
        for k in ctrl:
            name = model.joint_names[k] if k >= 0 else None
            if name in joints and name not in order:
                order.append(name)
        if len(order) != len(joints):
            raise InputError(f'search joints {sorted(set(joints) - set(order))} do not move '
                             f"'{end_effector}'")
        self.search_joints = tuple(order)           # chain order (fastest digit = distal)
        self.search_index = np.array([k_of[n] for n in order], dtype=np.int64)
        span = model.upper - model.lower
        self.box_lower = model.lower + buffer * span
        self.box_upper = model.upper - buffer * span
        for name, (lo, hi) in (box or {}).items():
            if name not in k_of or not lo <= hi:
                raise InputError(f"search box for '{name}' must be a joint and lo <= hi")
            k = k_of[name]
            self.box_lower[k] = max(self.box_lower[k], float(lo))
            self.box_upper[k] = min(self.box_upper[k], float(hi))
            if self.box_lower[k] > self.box_upper[k]:
                raise InputError(f"search box for '{name}' lies outside its buffered limits")
        rng = (self.box_upper - self.box_lower)[self.search_index]
        self.coarse_increment = rng * self._fractions(coarse_fraction, 'coarse_fraction')
        self.fine_increment = rng * self._fractions(fine_fraction, 'fine_fraction')
        self.grid_lower, self.grid_upper = self._grid_region()
        if not (np.isfinite(posture_weight) and posture_weight >= 0.0):
            raise InputError(f'posture_weight must be >= 0 [m], got {posture_weight}')
        span_s = (model.upper - model.lower)[self.search_index]
        self._posture_weight = float(posture_weight) / span_s ** 2
        self.tie_fraction = float(tie_fraction)
        if not (np.isfinite(self.tie_fraction) and self.tie_fraction >= 0.0):
            raise InputError(f'tie_fraction must be >= 0, got {tie_fraction}')
        self.refine_iterations = int(refine_iterations)
        if self.refine_iterations < 0:
            raise InputError(f'refine_iterations must be >= 0, got {refine_iterations}')
        q_rest = model.center.copy()
        for name, value in (fixed or {}).items():
            if name not in k_of:
                raise InputError(f"fixed value given for unknown joint '{name}'")
            q_rest[k_of[name]] = float(value)
        self.q_rest = q_rest
        a, b = (np.zeros(3), np.zeros(3)) if segment is None else segment
        self.seg_a = finite_vector(a, 3, 'segment start')
        self.seg_b = finite_vector(b, 3, 'segment end')
        # Chain tables for grid_search.
        self._chain = chain
        self._placement = np.ascontiguousarray(model.placement[chain])
        self._axis = np.ascontiguousarray(model.axis[chain])
        self._kind = np.ascontiguousarray(model.kind[chain])
        slot = -np.ones(len(chain), dtype=np.int64)
        pos = {k: s for s, k in enumerate(self.search_index)}
        for c, k in enumerate(ctrl):
            if k >= 0 and k in pos:
                slot[c] = pos[k]
        self._slot = slot
        self._multiplier = np.ascontiguousarray(model.multiplier[chain])
        self._frame_placement = np.ascontiguousarray(model.frame_placement[self.frame])
        self._base_inv = np.ascontiguousarray(model.base_inv)
        self._ws = model.workspace()

    def _fractions(self, value, what):
        arr = np.broadcast_to(np.asarray(value, dtype=float), (len(self.search_index),))
        if not np.all(np.isfinite(arr)) or np.any(arr <= 0.0) or np.any(arr > 1.0):
            raise InputError(f'{what} must be in (0, 1] of the search range, got {value}')
        return arr.copy()

    def _grid_region(self):
        """
        Outermost values [rad] the two steps can sample, per searched joint (chain order).

        Eq. (1) takes interior samples only, and the fine window is the coarse sample
        +- half a coarse increment: a joint's lowest value is the first fine sample around
        its first coarse sample (12.9 % of the search range in from the box's edge for the
        increments 20 % and 3 %). Constraints reached only with a joint beyond
        ``[grid_lower, grid_upper]`` are out of the search's reach.
        """
        k = self.search_index
        lows, highs = [], []
        for lo, hi, c, f in zip(self.box_lower[k], self.box_upper[k], self.coarse_increment,
                                self.fine_increment):
            coarse = eq1_samples(lo, hi, c)
            lows.append(eq1_samples(max(coarse[0] - 0.5 * c, lo), min(coarse[0] + 0.5 * c, hi),
                                    f)[0])
            highs.append(eq1_samples(max(coarse[-1] - 0.5 * c, lo),
                                     min(coarse[-1] + 0.5 * c, hi), f)[-1])
        return np.array(lows), np.array(highs)

    def _q_fixed(self, q_rest):
        """Chain joint values of the non-searched joints; offsets of the searched ones."""
        m = self.model
        q_tree = m.tree_configuration(q_rest)[self._chain]
        searched = self._slot >= 0
        q_tree[searched] = m.offset[self._chain][searched]
        return np.ascontiguousarray(q_tree)

    def _grid(self, lows, highs, increments, q_fixed, target, preferred, q_rest=None,
              deviation=None):
        """
        Best grid point (values, distance [m]) of eq. 1 grids, and the evaluations made.

        With ``deviation`` (and ``tie_fraction`` > 0) the grid points within
        ``tie_fraction`` of the grid's resolution of the nearest one are ties, and the tie
        whose ``deviation`` (summed over the searched joints) is least wins (class
        docstring); ``q_rest`` places the resolution's Jacobian.
        """
        rows = [eq1_samples(lo, hi, inc) for lo, hi, inc in zip(lows, highs, increments)]
        counts = np.array([len(r) for r in rows], dtype=np.int64)
        values = np.zeros((len(rows), counts.max()))
        for s, r in enumerate(rows):
            values[s, :len(r)] = r
        ties = deviation is not None and self.tie_fraction > 0.0
        every = np.empty(int(np.prod(counts)) if ties else 0)
        best, dist, evals = grid_search(
            self._base_inv, self._placement, self._axis, self._kind, self._slot,
            self._multiplier, q_fixed, self._frame_placement, self.seg_a, self.seg_b, target,
            values, counts, 1, preferred, self._posture_weight, every)
        chosen = values[np.arange(len(rows)), best[0]]
        if not ties:
            return chosen, float(dist[0]), int(evals), chosen
        q = q_rest.copy()
        q[self.search_index] = chosen
        lever = self._lever(q, target)
        tolerance = self.tie_fraction * 0.5 * float(np.sum(lever * increments))
        near = np.flatnonzero(every <= dist[0] + tolerance)
        index = np.unravel_index(near, tuple(counts))
        cost = np.asarray(deviation(values), dtype=float)
        total = np.zeros(len(near))
        for s in range(len(rows)):
            total += cost[s, index[s]]
        pick = np.lexsort((every[near], total))[0]
        tie = values[np.arange(len(rows)), [i[pick] for i in index]]
        q[self.search_index] = tie
        if every[near[pick]] > 0.5 * float(np.sum(self._lever(q, target) * increments)):
            return chosen, float(dist[0]), int(evals), chosen   # beyond its own resolution
        return tie, float(every[near[pick]]), int(evals), chosen

    def search(self, target, fixed=None, preferred=None, deviation=None):
        """
        Run both steps for the constraint ``target`` [m] (base frame); return a TsfksResult.

        ``fixed`` overrides values of non-searched joints for this call; ``preferred``
        (all controlled joints [rad]) is the posture the ``posture_weight`` term pulls
        toward (default: mid-range); ``deviation``: a function from candidate values of the
        searched joints, (searched joints, m) [rad] in chain order, to their costs of the
        same shape, summed over the joints to break ties (``tie_fraction``; None: none).
        ``resolution`` is ``0.5 * sum_j |dp/dq_j| * fine_increment_j`` at the result: to
        first order, the largest error of the nearest fine-grid point to an exact solution
        inside the fine window.
        """
        start = time.perf_counter()
        target = finite_vector(target, 3, 'constraint point')
        q_rest = self.q_rest.copy()
        for name, value in (fixed or {}).items():
            if name not in self.model.joint_names:
                raise InputError(f"fixed value given for unknown joint '{name}'")
            q_rest[self.model.joint_names.index(name)] = float(value)
        q_fixed = self._q_fixed(q_rest)
        pref = self.model.center if preferred is None else finite_vector(
            preferred, self.model.nq, 'preferred posture')
        pref = np.ascontiguousarray(pref[self.search_index])
        lo = self.box_lower[self.search_index]
        hi = self.box_upper[self.search_index]
        coarse, coarse_err, n1, nearest = self._grid(lo, hi, self.coarse_increment, q_fixed,
                                                     target, pref, q_rest, deviation)
        half = 0.5 * self.coarse_increment

        def fine_step(cell):
            return self._grid(np.maximum(cell - half, lo), np.minimum(cell + half, hi),
                              self.fine_increment, q_fixed, target, pref, q_rest, deviation)
        fine, err, n2, _ = fine_step(coarse)
        if not np.array_equal(coarse, nearest):
            q = q_rest.copy()
            q[self.search_index] = fine
            if err > self.TIE_ACCEPT * self.resolution(q, target):
                fine, err, n3, _ = fine_step(nearest)      # the paper's coarse cell
                n2 += n3
        q = q_rest
        q[self.search_index] = fine
        resolution = self.resolution(q, target)
        if self.refine_iterations:
            q, err = self.refine(q, target, err)
        seconds = time.perf_counter() - start
        return TsfksResult(q, err, resolution, coarse_err, n1 + n2, seconds)

    def refine(self, q, target, error):
        """
        Polish a grid result: damped least squares steps (Buss eq. 11) on the searched joints.

        ``dq = J^T (J J^T + lambda^2 I)^-1 e`` with ``J`` the 3-row position Jacobian of the
        constrained point and ``e`` its error; each step is clipped into the search box and
        kept only if the distance falls. At most ``refine_iterations`` steps; stops below
        1e-6 m. Returns (q, distance [m]).
        """
        k = self.search_index
        rows = self.model.task_offsets[self.frame] + np.arange(3)
        points = np.zeros((len(self.model.end_effectors), 3))
        dq = np.zeros(len(k))
        L = np.zeros((3, 3))
        work = np.zeros(3)
        for _ in range(self.refine_iterations):
            if error < 1e-6:
                break
            points[self.frame] = self.constrained_point(q, target)
            J = np.ascontiguousarray(self.model.jacobian(q, points=points)[np.ix_(rows, k)])
            laws.dls_step(J, target - points[self.frame], 1e-4, dq, L, work)
            trial = q.copy()
            trial[k] = np.clip(q[k] + dq, self.box_lower[k], self.box_upper[k])
            d = float(np.linalg.norm(self.constrained_point(trial, target) - target))
            if d >= error:
                break
            q, error = trial, d
        return q, error

    def constrained_point(self, q, target):
        """Point [m] of the segment nearest ``target`` at ``q`` (the frame origin if a point)."""
        self._ws.update(finite_vector(q, self.model.nq, 'q'), jacobian=False)
        T = self._ws.frame_T[self.frame]
        A = T[:3, :3] @ self.seg_a + T[:3, 3]
        B = T[:3, :3] @ self.seg_b + T[:3, 3]
        d = B - A
        u = 0.0 if d @ d == 0.0 else float(np.clip((target - A) @ d / (d @ d), 0.0, 1.0))
        return A + u * d

    def _lever(self, q, target):
        """``|dp/dq_j|`` [m/rad] of the constrained point for each searched joint at ``q``."""
        points = np.zeros((len(self.model.end_effectors), 3))
        points[self.frame] = self.constrained_point(q, target)
        J = self.model.jacobian(q, points=points)
        rows = self.model.task_offsets[self.frame] + np.arange(3)
        return np.linalg.norm(J[np.ix_(rows, self.search_index)], axis=0)

    def resolution(self, q, target):
        """First-order error bound [m] of the fine grid at ``q`` (see :meth:`search`)."""
        return float(0.5 * np.sum(self._lever(q, target) * self.fine_increment))

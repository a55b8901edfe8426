"""
Style-preserving adaptation of one exemplar to a point constraint (Gielniak et al., sec. IV).

:meth:`StyleAdapter.adapt` is the ROS-free call a node makes: motion, constraint point,
current joint state in; times, joint names, positions and velocities out.

1. **Kinematic search** (:class:`~ik_control.style.tsfks.Tsfks`): the exemplar's
   ``search_joints`` are searched (among near-equal grid points, the one whose eq. 2
   scalars are nearest 1: ``tie_fraction``, not in the paper); every other joint is held at
   the value it will have at the constraint instant: the middle of its range for a
   modulated joint (the paper), the exemplar's unscaled motion from the actual state for
   the others (they are not modulated, so that value is known in advance). A ``follower``
   (the left hand on the bat) is searched next, with the first search's result fixed: its
   point is the ``attach`` point of the first end effector's frame, a constant offset as
   in sec. V-D.
2. **Velocity modulation** (:func:`~ik_control.style.modulation.modulate`, eq. 2) of the
   exemplar from ``start`` to its end, resampled at ``dt``, from the actual joint values.

Time-varying constraints (the baseball of sec. V-D): :func:`plan_swing` takes the ball's
straight path, known at release, finds when it crosses the hitting plane, starts the swing
so that the exemplar's contact instant falls then, and adapts the swing to that point.
"""

from dataclasses import dataclass
import time

from ik_control import robots
from ik_control.style.exemplar import Exemplar, load_motion
from ik_control.style.modulation import modulate, scalar_deviation, scale_velocities
from ik_control.style.tsfks import Tsfks
from ik_control.validation import finite_vector, InputError
import numpy as np


@dataclass
class AdaptedMotion:
    """An adapted trajectory: ``positions``/``velocities`` (samples, joints) at ``times``."""

    times: np.ndarray           # [s] from the start of the adapted motion
    joint_names: tuple
    positions: np.ndarray       # [rad]
    velocities: np.ndarray      # [rad/s]
    constraint_time: float      # [s] from the start, when the constraint is met
    target: np.ndarray          # joint values found by the search, at constraint_time [rad]
    search_error: float         # distance constraint - constrained point at target [m]
    resolution: float           # first-order bound of the fine grid's error [m]
    scalars: np.ndarray         # (joints, 2): eq. 2 scalars of rising / falling increments
    methods: tuple              # per joint: 'eq2', 'split', 'still' or 'unscaled'
    seconds: float              # time spent adapting [s]
    search_seconds: float       # of which the kinematic search [s]


class StyleAdapter:
    """
    Adapt one exemplar motion (name, path or :class:`Exemplar`) to point constraints.

    ``dt`` [s]: period of the output trajectory (SIMON: 1 ms). ``coarse_fraction``,
    ``fine_fraction``, ``buffer``: TSFKS increments and limit buffer (fractions of the
    range, see :class:`Tsfks`); ``min_net_fraction``: below it a joint's profile counts as
    cyclic and gets the split scaling (:mod:`ik_control.style.modulation`);
    ``posture_weight`` [m]: the search's pull toward the exemplar's pose at the constraint
    instant (0: the paper's pure distance), ``refine_iterations``: damped least-squares
    steps after the fine step (0: the paper's two steps); ``tie_fraction``: grid points
    within this fraction of the grid's resolution of the nearest are ties, and the one
    that needs the least modulation (eq. 2 scalars nearest 1) wins (not in the paper; 0:
    its pure minimum); see :class:`Tsfks`.
    """

    def __init__(self, motion, model=None, dt=1e-3, coarse_fraction=0.2, fine_fraction=0.03,
                 buffer=0.125, min_net_fraction=0.25, posture_weight=0.0,
                 refine_iterations=0, tie_fraction=0.1):
        self.exemplar = motion if isinstance(motion, Exemplar) else load_motion(motion)
        ex = self.exemplar
        self.model = model or robots.robot(ex.robot)
        missing = [j for j in ex.joint_names if j not in self.model.joint_names]
        if missing:
            raise InputError(f"motion '{ex.name}' names joints {missing} the robot lacks")
        self.dt = float(dt)
        self.times, self.theta, self.theta_dot = ex.sampled(self.dt)
        self.min_net_fraction = float(min_net_fraction)
        self._cols = np.array([self.model.joint_names.index(j) for j in ex.joint_names])
        self.modulated = np.array([j in ex.modulated_joints for j in ex.joint_names])
        box = None
        window = ex.extra.get('search_window')
        if window is not None:
            i_pc = self._sample(float(min(ex.instants.values())))
            box = {j: (self.theta[i_pc, k] - window, self.theta[i_pc, k] + window)
                   for k, j in enumerate(ex.joint_names) if j in ex.search_joints}
        kwargs = {'coarse_fraction': coarse_fraction, 'fine_fraction': fine_fraction,
                  'buffer': buffer}
        self.search = Tsfks(self.model, ex.end_effector, ex.search_joints, segment=ex.segment,
                            box=box, posture_weight=posture_weight,
                            refine_iterations=refine_iterations, tie_fraction=tie_fraction,
                            **kwargs)
        follower = ex.extra.get('follower')
        self.follower = None
        if follower is not None:
            self.follower_attach = finite_vector(follower['attach'], 3, 'follower attach')
            kwargs['buffer'] = float(follower.get('buffer', buffer))
            self.follower = Tsfks(self.model, follower['end_effector'],
                                  follower['search_joints'], **kwargs)

    def _sample(self, t):
        """Index of the output sample at exemplar time ``t`` [s]."""
        i = int(round(t / self.dt))
        if not 0 <= i < len(self.times):
            raise InputError(f'time {t} s is outside the motion (0..{self.times[-1]:.3f} s)')
        return i

    def pose_at(self, when):
        """Exemplar joint values [rad] at an instant name or a time [s] (1 ms samples)."""
        return self.theta[self._sample(self._start_time(when))].copy()

    def _start_time(self, start):
        if start is None:
            return 0.0
        return self.exemplar.instant(start) if isinstance(start, str) else float(start)

    def current_state(self, joint_names, positions):
        """Actual values of the exemplar's joints [rad] from a joint state (any order)."""
        names = list(joint_names)
        q = finite_vector(positions, len(names), 'joint positions')
        index = {n: i for i, n in enumerate(names)}
        missing = [j for j in self.exemplar.joint_names if j not in index]
        if missing:
            raise InputError(f'joint state lacks {missing}')
        return np.array([q[index[j]] for j in self.exemplar.joint_names])

    def adapt(self, constraint, joint_names, positions, instant=None, start=None):
        """
        Adapt the exemplar so the end effector meets ``constraint`` [m] at ``instant``.

        ``joint_names``/``positions`` [rad]: the robot's state now (it becomes the start);
        ``start``: where in the exemplar the motion begins (instant name or time [s],
        default 0); ``instant``: the constraint instant's name (default: the first after
        ``start``). Returns an :class:`AdaptedMotion` from ``start`` to the exemplar's end.
        """
        began = time.perf_counter()
        ex = self.exemplar
        constraint = finite_vector(constraint, 3, 'constraint point')
        psi0 = self.current_state(joint_names, positions)
        i0, i_pc = self._span(start, instant)
        theta = self.theta[i0:]
        fixed = self._held(psi0, i0, i_pc)
        searched = time.perf_counter()
        preferred = self.model.center.copy()
        preferred[self._cols] = self.theta[i_pc]
        result = self.search.search(constraint, fixed=fixed, preferred=preferred,
                                    deviation=self._deviation(theta, i_pc - i0, psi0))
        q_pc = result.q
        if self.follower is not None:
            T = self._frame(q_pc, self.search.frame)
            point = T[:3, :3] @ self.follower_attach + T[:3, 3]
            q_pc = self.follower.search(point, fixed=dict(zip(self.model.joint_names,
                                                              q_pc))).q
        search_seconds = time.perf_counter() - searched
        psi_pc = q_pc[self._cols]
        psi, a, b, methods = modulate(theta, i_pc - i0, psi0, psi_pc, self.modulated,
                                      self.min_net_fraction, ex.joint_names)
        velocities = scale_velocities(self.theta_dot[i0:], a, b)
        return AdaptedMotion(self.times[i0:] - self.times[i0], ex.joint_names, psi, velocities,
                             self.times[i_pc] - self.times[i0], psi_pc, result.error,
                             result.resolution, np.stack([a, b], axis=1), methods,
                             time.perf_counter() - began, search_seconds)

    def _deviation(self, theta, i_pc, psi0):
        """
        Return the search's tie-break: ``values`` (searched joints, m) [rad] -> deviations.

        How far from 1 the eq. 2 scalars of each searched joint would be if the search
        answered that value (:func:`~ik_control.style.modulation.scalar_deviation`).
        """
        cols = np.array([list(self.exemplar.joint_names).index(self.model.joint_names[k])
                         for k in self.search.search_index])
        theta = theta[:i_pc + 1]

        def deviation(values):
            change = np.zeros((values.shape[1], theta.shape[1]))
            change[:, cols] = values.T - psi0[cols]
            return scalar_deviation(theta, i_pc, change, self.modulated,
                                    self.min_net_fraction)[:, cols].T
        return deviation

    def _span(self, start, instant):
        """Sample indices of ``start`` and of the constraint instant (see :meth:`adapt`)."""
        ex = self.exemplar
        t0 = self._start_time(start)
        if instant is None:
            later = sorted(t for t in ex.instants.values() if t > t0 + 1e-9)
            if not later:
                raise InputError(f"motion '{ex.name}' has no constraint instant after {t0} s")
            t_pc = later[0]
        else:
            t_pc = ex.instant(instant)
        i0, i_pc = self._sample(t0), self._sample(t_pc)
        if i_pc <= i0:
            raise InputError(f'constraint instant {t_pc} s is not after the start {t0} s')
        return i0, i_pc

    def _held(self, psi0, i0, i_pc):
        """``{joint: value [rad]}`` at the constraint instant of the joints not searched."""
        q_pc = self.model.center.copy()
        q_pc[self._cols] = np.where(self.modulated, self.model.center[self._cols],
                                    psi0 + self.theta[i_pc] - self.theta[i0])
        return dict(zip(self.model.joint_names, q_pc))

    def held_joints(self, joint_names, positions, start=None, instant=None):
        """
        Values [rad] at which :meth:`adapt` holds the joints it does not search, by name.

        The same arguments as :meth:`adapt` (without the constraint): mid-range for the
        modulated joints, the exemplar's unscaled motion from the given state for the others.
        """
        psi0 = self.current_state(joint_names, positions)
        return self._held(psi0, *self._span(start, instant))

    def _frame(self, q, frame):
        return self.model.frame_placements(q)[frame]

    def constraint_distance(self, positions, constraint):
        """Distance [m] from ``constraint`` to the constrained point (or bat) at ``positions``."""
        q = self.model.center.copy()
        q[self._cols] = positions
        return float(np.linalg.norm(self.search.constrained_point(q, constraint)
                                    - np.asarray(constraint, dtype=float)))


def ball_crossing(release_point, velocity, plane_x):
    """
    Time [s] after release and point [m] where a straight pitch crosses the plane ``x = plane_x``.

    The ball moves as ``p(t) = release_point + velocity * t`` (constant velocity, known at
    release, sec. V-D). Raises InputError if it never reaches the plane.
    """
    p0 = finite_vector(release_point, 3, 'release point')
    v = finite_vector(velocity, 3, 'ball velocity')
    if v[0] == 0.0 or (plane_x - p0[0]) / v[0] <= 0.0:
        raise InputError('the pitch never crosses the hitting plane')
    t = (plane_x - p0[0]) / v[0]
    return t, p0 + v * t


def plan_swing(adapter, release_point, velocity, joint_names, positions, plane_x=None):
    """
    Adapt the swing to a pitch: returns ``(start_delay [s], AdaptedMotion, contact point)``.

    The contact point is where the ball crosses the hitting plane (default: the plane of the
    exemplar's bat at contact, through its mid-point); the swing starts ``start_delay``
    after release so that the exemplar's contact instant coincides with the crossing.
    """
    ex = adapter.exemplar
    t_contact = ex.instant('contact')
    if plane_x is None:
        q = adapter.model.center.copy()
        q[adapter._cols] = adapter.theta[adapter._sample(t_contact)]
        T = adapter._frame(q, adapter.search.frame)
        mid = 0.5 * (adapter.search.seg_a + adapter.search.seg_b)
        plane_x = float((T[:3, :3] @ mid + T[:3, 3])[0])
    t_cross, point = ball_crossing(release_point, velocity, plane_x)
    delay = t_cross - t_contact
    if delay < 0.0:
        raise InputError(f'the ball crosses the plate {t_cross:.3f} s after release: too '
                         f'soon for a swing whose contact comes {t_contact:.3f} s in')
    motion = adapter.adapt(point, joint_names, positions, instant='contact')
    return delay, motion, point

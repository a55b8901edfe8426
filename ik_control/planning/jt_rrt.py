"""
JT-RRT (Vande Weghe, Ferguson & Srinivasa, Fig. 5) and the baseline of Bertram et al.

Both grow one tree from ``q_start`` until a node's end effector is within the goal's
threshold (Fig. 5, line 2). Each iteration draws ``p`` uniformly in [0, 1] (line 3) and
compares it with the goal bias ``p_g`` (``p_goal`` for JT-RRT, ``bertram_p_goal`` for
the baseline):

* ``p >= p_g``: **ExtendRandomly** -- a uniform configuration inside the joint limits;
  the node nearest to it in configuration space is extended towards it in straight steps
  of ``step_size`` [rad] (joint-space norm), one node per step, until it is reached or
  a step collides (each step checked by :meth:`CollisionChecker.segment_free`).
* ``p < p_g``: **ExtendTowardsGoal**. JT-RRT (lines 11-23): the node closest to the goal
  in the workspace that has not been used for a goal extension before (sec. IV: the
  Jacobian transpose would repeat the same extension) is extended by repeated
  Jacobian-transpose steps :func:`jacobian_transpose_step`, the Jacobian re-evaluated
  at every step, each step clamped into the joint limits (sec. IV), one node per step,
  until the goal is reached, a step collides, no joint can move (every joint held at a
  limit, or ``J^T e = 0``), or ``max_goal_steps``. Every node a JT step is taken from is
  marked used, not only the first: the Jacobian transpose is deterministic, so a later
  goal extension from a node inside an earlier extension would only repeat its steps
  and add duplicate nodes (our reading of sec. IV's rule). With ``min_progress`` > 0
  [m], the improvement proposed in sec. V: the extension also ends when a step brings
  the end effector less than ``min_progress`` closer to the goal.

  **Not in the paper** (``escape_steps`` > 0; ``escape_steps = 0`` is the paper's
  extension): a step of sec. V's outlook, "the Jacobian transpose as a guide for a more
  informed local search during goal extension". When a JT step collides, the extension
  does not end at once: from the node it is at, one random step of
  ``escape_length`` [rad] (2-norm) is taken in a direction drawn uniformly from the
  half-space that does not oppose ``J^T e`` (``u . J^T e >= 0``), clamped into the joint
  limits and checked as one segment; if it is free its end becomes a node and the
  Jacobian-transpose steps resume from there. At most ``escape_steps`` such steps per
  extension; the extension ends when one collides (or at the other stops above). It is
  general (no scenario-specific setting) and draws from the same ``rng``.

  Bertram et al. (sec. II): the
  node closest to the goal in the workspace (it may be chosen again) is extended in a
  random direction of configuration space, over ``random_direction_length`` [rad].

Statistics follow Table I: nodes added, attempted random and goal extensions, collision
checks (configurations checked), and joint-limit hits (JT steps in which some joint was
clamped at a limit).
"""

from dataclasses import dataclass, field
import time

from ik_control.ik.laws import clamp_max_abs, transpose_step
from ik_control.kinematics import kernels
from ik_control.kinematics.robot_model import EndEffector, RobotModel
from ik_control.planning.goal import goal_distance
from ik_control.planning.tree import Tree
from ik_control.validation import finite_vector, InputError
from numba import njit
import numpy as np

METHODS = ('jt', 'bertram')


@njit(cache=True, nogil=True)
def jacobian_transpose_step(F, IX, W, q, target, position_only, rotation_weight, max_step,
                            lower, upper, q_new, e, dq, work_m, work):
    """
    One step of Fig. 5 lines 13-16 from ``q`` into ``q_new``: ``dq = alpha J^T e``.

    ``J`` is the end effector's Jacobian at ``q`` (rows 0-2 linear, 3-5 angular, the
    angular rows and errors weighted by ``rotation_weight`` [m/rad]; only rows 0-2 for a
    position goal), ``e`` the goal error (:mod:`ik_control.planning.goal`), ``alpha``
    Buss's optimal step length ``<e, J J^T e> / |J J^T e|^2`` (the workspace delta of
    line 14), then ``dq`` scaled so that ``max |dq_i| <= max_step`` [rad] and ``q + dq``
    clamped into ``[lower, upper]``. Returns ``(clamped, moved)``: whether a joint was
    held at a limit, and ``max |q_new - q|`` [rad].
    """
    kernels.update_kinematics(F, IX, W, q, False, True)
    views = kernels.work_views(IX, W)
    T, J = views[2][0], views[4]
    goal_distance(T, target, position_only, rotation_weight, e, work)
    m = 3 if position_only else 6
    Jw = J[:m].copy()
    ew = e[:m].copy()
    for r in range(3, m):
        ew[r] *= rotation_weight
        for c in range(J.shape[1]):
            Jw[r, c] *= rotation_weight
    transpose_step(Jw, ew, dq, work_m[:m])
    clamp_max_abs(dq, max_step)
    clamped = False
    moved = 0.0
    for i in range(q.shape[0]):
        v = q[i] + dq[i]
        if v < lower[i]:
            v = lower[i]
            clamped = True
        elif v > upper[i]:
            v = upper[i]
            clamped = True
        q_new[i] = v
        moved = max(moved, abs(v - q[i]))
    return clamped, moved


#: Vande Weghe et al.'s own settings: ``p_g`` 0.5 for both planners (sec. V), Fig. 5's
#: goal extension (no min-progress rule, no escape steps), and its "small step" of the
#: Jacobian transpose read as the random extensions' node spacing, 0.1 rad
PAPER_SETTINGS = {'p_goal': 0.5, 'bertram_p_goal': 0.5, 'jt_step': 0.1, 'min_progress': 0.0,
                  'escape_steps': 0}
#: ours: the goal bias tuned on the scenarios, Buss's optimal step capped at 0.5 rad, the
#: sec. V rule at 2 mm a step, and escape steps (module docstring)
OUR_SETTINGS = {'p_goal': 0.7, 'bertram_p_goal': 0.5, 'jt_step': 0.5, 'min_progress': 0.002,
                'escape_steps': 6}
SETTINGS = {'paper': PAPER_SETTINGS, 'ours': OUR_SETTINGS}


@dataclass
class RrtSettings:
    """Planner settings; lengths in rad (joint space), distances in m, time in s."""

    p_goal: float = 0.7                 # JT-RRT's goal bias p_g (sec. V: 0.5, not tuned)
    bertram_p_goal: float = 0.5         # the baseline's p_g (sec. V: 0.5, its best [6])
    step_size: float = 0.1              # node spacing of random extensions [rad, 2-norm]
    jt_step: float = 0.5                # largest joint change of one JT step [rad]
    max_goal_steps: int = 300           # JT steps per goal extension at most
    min_progress: float = 0.0           # sec. V improvement [m per step]; 0 = Fig. 5
    escape_steps: int = 6               # not in the paper: random steps per goal extension
    escape_length: float = 1.0          # length of one of them [rad, 2-norm]
    random_direction_length: float = 0.5  # Bertram: length of a goal extension [rad]
    max_nodes: int = 100000             # tree size limit (Table I footnote 2)
    time_limit: float = 10.0            # planning time limit [s]

    def __post_init__(self):
        """Reject settings that cannot work."""
        for name in ('p_goal', 'bertram_p_goal'):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise InputError(f'{name} must be in [0, 1], got {getattr(self, name)}')
        for name in ('step_size', 'jt_step', 'random_direction_length', 'escape_length',
                     'time_limit'):
            value = getattr(self, name)
            if not np.isfinite(value) or value <= 0.0:
                raise InputError(f'{name} must be a finite number > 0, got {value}')
        if not np.isfinite(self.min_progress) or self.min_progress < 0.0:
            raise InputError(f'min_progress must be >= 0 m, got {self.min_progress}')
        if self.max_nodes < 2 or self.max_goal_steps < 1:
            raise InputError('max_nodes must be >= 2 and max_goal_steps >= 1')
        if self.escape_steps < 0:
            raise InputError(f'escape_steps must be >= 0, got {self.escape_steps}')


@dataclass
class RrtStats:
    """Table I's columns for one planning run."""

    nodes: int = 0
    random_extensions: int = 0
    goal_extensions: int = 0
    collision_checks: int = 0
    joint_limit_hits: int = 0
    seconds: float = 0.0


@dataclass
class RrtResult:
    """Outcome: ``path`` (m x nq, start to goal node) when ``success``, else ``reason``."""

    success: bool
    reason: str
    path: np.ndarray
    tree: Tree
    stats: RrtStats = field(default_factory=RrtStats)
    position_error: float = np.inf      # at the path's last node [m]
    rotation_error: float = np.inf      # [rad], 0 for a position goal


class GoalKinematics:
    """Forward kinematics and Jacobian of the goal frame, buffers allocated once."""

    def __init__(self, model, frame):
        self.model = RobotModel(model.pin_model, joints=model.joint_names,
                                end_effectors=[EndEffector(frame, 'pose')],
                                base_frame=model.base_frame)
        m = self.model
        self.ws = m.workspace()
        self.e = np.zeros(6)
        self.dq = np.zeros(m.nq)
        self.work_m = np.zeros(6)
        self.work = np.zeros((3, 3))

    def placement(self, q):
        """Goal-frame placement at ``q`` in the base frame (4x4 view, overwritten next call)."""
        self.ws.update(q, jacobian=False)
        return self.ws.frame_T[0]

    def distance(self, q, target, goal):
        """Return ``(d, position error, rotation error)`` of the goal frame at ``q``."""
        return goal_distance(self.placement(q), target, goal.position_only,
                             goal.rotation_weight, self.e, self.work)


class WorkspaceRrt:
    """
    JT-RRT and the Bertram baseline for one robot and one :class:`CollisionChecker`.

    ``plan(q_start, goal, rng, method)`` runs one search (module docstring); ``goal`` is a
    :class:`~ik_control.planning.goal.WorkspaceGoal`, ``rng`` a ``numpy.random.Generator``
    (the only source of randomness: a seed gives one result).
    """

    def __init__(self, model, checker, settings=None):
        self.model = model
        self.checker = checker
        self.settings = settings or RrtSettings()
        self._kin = {}
        self.lower = model.lower.copy()
        self.upper = model.upper.copy()

    def kinematics(self, frame):
        """Return the :class:`GoalKinematics` of ``frame`` (built once)."""
        if frame not in self._kin:
            self._kin[frame] = GoalKinematics(self.model, frame)
        return self._kin[frame]

    def check_start(self, q_start):
        """Return the start as an array, or raise :class:`InputError` with the reason."""
        q = finite_vector(q_start, self.model.nq, 'start configuration')
        if np.any(q < self.lower - 1e-9) or np.any(q > self.upper + 1e-9):
            raise InputError('start configuration is outside the joint limits')
        return np.clip(q, self.lower, self.upper)

    def plan(self, q_start, goal, rng, method='jt'):
        """Grow the tree (Fig. 5) and return an :class:`RrtResult`."""
        if method not in METHODS:
            raise InputError(f"method must be one of {list(METHODS)}, not '{method}'")
        s = self.settings
        q0 = self.check_start(q_start)
        kin = self.kinematics(goal.frame)
        target = goal.target()
        stats = RrtStats()
        checks0 = self.checker.checks
        t0 = time.perf_counter()
        d0, dp0, th0 = kin.distance(q0, target, goal)
        tree = Tree(q0, d0)
        run = _Run(self, tree, kin, goal, target, stats)
        if not self.checker.config_free(q0):
            return run.finish('start in collision', -1, t0, checks0)
        if run.reached(dp0, th0):
            return run.finish('', 0, t0, checks0)
        goal_step = run.jt_extension if method == 'jt' else run.random_direction_extension
        p_goal = s.p_goal if method == 'jt' else s.bertram_p_goal
        while True:
            if tree.size >= s.max_nodes:
                return run.finish('node limit', -1, t0, checks0)
            if time.perf_counter() - t0 > s.time_limit:
                return run.finish('timeout', -1, t0, checks0)
            if rng.random() < p_goal:
                stats.goal_extensions += 1
                hit = goal_step(rng)
            else:
                stats.random_extensions += 1
                q_rand = self.model.random_configurations(1, rng)[0]
                hit = run.connect(tree.nearest(q_rand), q_rand, np.inf)
            if hit >= 0:
                return run.finish('', hit, t0, checks0)


class _Run:
    """State of one search: the tree, the goal and the counters."""

    def __init__(self, planner, tree, kin, goal, target, stats):
        self.p = planner
        self.s = planner.settings
        self.checker = planner.checker
        self.tree = tree
        self.kin = kin
        self.goal = goal
        self.target = target
        self.stats = stats
        self.q_new = np.zeros(tree.nq)

    def reached(self, dp, theta):
        g = self.goal
        return dp <= g.threshold and (g.position_only or theta <= g.rotation_threshold)

    def add(self, q, parent):
        """Add a node; returns (index, distance, reached)."""
        d, dp, theta = self.kin.distance(q, self.target, self.goal)
        return self.tree.add(q, parent, d), d, self.reached(dp, theta)

    def connect(self, i, q_target, max_length):
        """Step by ``step_size`` from node ``i`` towards ``q_target``; goal node or -1."""
        tree, step = self.tree, self.s.step_size
        q = tree.q[i].copy()
        delta = q_target - q
        length = min(float(np.linalg.norm(delta)), max_length)
        if length <= 0.0:
            return -1
        direction = delta / np.linalg.norm(delta)
        travelled = 0.0
        while travelled < length - 1e-12 and tree.size < self.s.max_nodes:
            advance = min(step, length - travelled)
            q_next = q + advance * direction
            if not self.checker.segment_free(q, q_next):
                return -1
            i, _, done = self.add(q_next, i)
            if done:
                return i
            q = q_next
            travelled += advance
        return -1

    def jt_extension(self, rng):
        """
        Extend towards the goal as Fig. 5 lines 11-23, clamped, with the sec. V stop rule.

        Each node a JT step is taken from is marked used; a colliding step is followed by
        at most ``escape_steps`` random steps (:meth:`escape`, not in the paper) from
        which the JT steps resume (module docstring).
        """
        tree, kin, s, goal = self.tree, self.kin, self.s, self.goal
        i = tree.closest_to_goal(skip_used=True)
        if i < 0:
            return -1
        q = tree.q[i].copy()
        d_old = tree.distance[i]
        m = kin.model
        escapes = s.escape_steps
        for _ in range(s.max_goal_steps):
            if tree.size >= s.max_nodes:
                return -1
            tree.used[i] = True     # its JT step is taken now: never again (sec. IV)
            clamped, moved = jacobian_transpose_step(
                m.packed_f, m.packed_i, kin.ws.W, q, self.target, goal.position_only,
                goal.rotation_weight, s.jt_step, self.p.lower, self.p.upper, self.q_new,
                kin.e, kin.dq, kin.work_m, kin.work)
            if clamped:
                self.stats.joint_limit_hits += 1
            if moved < 1e-9:
                return -1           # no joint can move
            if not self.checker.segment_free(q, self.q_new):
                if escapes <= 0:
                    return -1
                escapes -= 1
                i, done = self.escape(i, kin.dq, rng)
                if i < 0 or done:
                    return i
                q[:] = tree.q[i]
                d_old = tree.distance[i]
                continue
            d, dp, theta = kin.distance(self.q_new, self.target, goal)
            if s.min_progress > 0.0 and d > d_old - s.min_progress:
                return -1           # sec. V: the step no longer brings the effector closer
            i = tree.add(self.q_new, i, d)
            if self.reached(dp, theta):
                return i
            q[:] = self.q_new
            d_old = d
        return -1

    def escape(self, i, g, rng):
        """
        Not in the paper: one random step from node ``i`` not opposing ``g`` (``J^T e``).

        The direction is uniform on the half-sphere ``u . g >= 0`` (a normal draw
        reflected into it), of 2-norm ``escape_length`` [rad], clamped into the joint
        limits and checked as one segment. Returns ``(node, reached)``: the new node and
        whether it is within the goal, or ``(-1, False)`` when the step collides.
        """
        u = rng.standard_normal(self.tree.nq)
        ug = float(np.dot(u, g))
        if ug < 0.0:
            u -= (2.0 * ug / float(np.dot(g, g))) * g
        u *= self.s.escape_length / np.linalg.norm(u)
        q_target = np.clip(self.tree.q[i] + u, self.p.lower, self.p.upper)
        if not self.checker.segment_free(self.tree.q[i], q_target):
            return -1, False
        j, _, done = self.add(q_target, i)
        return j, done

    def random_direction_extension(self, rng):
        """Bertram et al.: the workspace-closest node extended in a random direction."""
        i = self.tree.closest_to_goal(skip_used=False)
        u = rng.standard_normal(self.tree.nq)
        u *= self.s.random_direction_length / np.linalg.norm(u)
        q_target = np.clip(self.tree.q[i] + u, self.p.lower, self.p.upper)
        return self.connect(i, q_target, self.s.random_direction_length)

    def finish(self, reason, goal_node, t0, checks0):
        st = self.stats
        st.seconds = time.perf_counter() - t0
        st.nodes = self.tree.size - 1
        st.collision_checks = self.checker.checks - checks0
        if goal_node < 0:
            return RrtResult(False, reason, np.zeros((0, self.tree.nq)), self.tree, st)
        path = self.tree.path_to(goal_node)
        _, dp, theta = self.kin.distance(path[-1], self.target, self.goal)
        return RrtResult(True, '', path, self.tree, st, float(dp), float(theta))

"""
The position-IK fallback: what the controller does when the Cartesian law stalls on a goal.

Resolved-rate control is local: from some states its law makes no progress toward a
goal that has a solution -- the arm rests at a joint limit, or creeps along a singular
direction with ``sigma_min`` near zero (Buss sec. 5 and 6). The controller's goal
bookkeeping finds that without a length scale (no fall of the error by 1 % of itself in
``unreachable_time``). Then, instead of calling the goal unreachable, it asks the
position IK (:class:`ik_control.ik.position_ik.PositionIk`: bounded Levenberg-Marquardt
with random restarts, every end effector solved together -- SIMON's hands with the
shared torso -- inside the joint limits less ``position_margin``, seeded with the
commanded state) for a goal configuration ``q*``. The solve runs on an executor (on
the node a worker thread: the compiled solver releases the GIL; the benchmark runs it
inline), never on the control tick; its time budget counts the solving thread's CPU time.

Two ways to get there, ``fallback.strategy``:

* ``joint`` (default): a joint-space approach. The desired joint velocity is
  ``K (q* - q)`` (``K`` = ``gain`` [1/s]), cut to the velocity and acceleration limits
  by the same limiter as every command, until every joint is within
  :data:`HANDBACK` of ``q*``; then Cartesian tracking finishes from inside the goal's
  basin. The other effectors follow the approach too (``q*`` keeps their targets).
* ``posture``: Cartesian tracking goes on and ``K (q* - q)`` is added in the exact
  nullspace of the task (SAM eq. 16, :func:`ik_control.ik.nullspace.project_nullspace`):
  the self-motion pulls toward the IK's solution without moving the hands.
* ``off``: no fallback; a stalled goal is unreachable at once.

``ik_control bench reach`` compares them. A goal is unreachable when the position IK
finds no solution within ``fallback.time_budget``, or when it stalls again after
:data:`MAX_TRIES` fallbacks; the controller's event says which.
"""

from concurrent.futures import Future
from dataclasses import replace
import time

from ik_control.ik import nullspace
from ik_control.ik.position_ik import PositionIk
import numpy as np

__all__ = ['HANDBACK', 'IkFallback', 'MAX_TRIES', 'STRATEGIES']

STRATEGIES = ('joint', 'posture', 'off')
#: A joint-space approach hands back to Cartesian tracking once every joint is this close
#: to the IK's solution [rad or m]: the hand is then within a few millimetres of the goal,
#: where the damped least-squares law converges.
HANDBACK = 0.01
#: Fallbacks one goal may use; stalling again after that many makes it unreachable.
MAX_TRIES = 2
#: Position IK tolerances as a fraction of the goal tolerances (it must land well inside
#: them, so that Cartesian tracking only polishes) [-].
TOLERANCE_FRACTION = 0.1


class IkFallback:
    """
    Position-IK requests for stalled goals, solved off the control tick (module docstring).

    Parameters
    ----------
    model:
        The controller's RobotModel (every end effector is solved together).
    margin:
        Distance kept from each joint limit [rad or m] (the controller's position_margin).
    tolerance, rotation_tolerance:
        Goal tolerances [m, rad]; the IK solves to :data:`TOLERANCE_FRACTION` of them.
    time_budget:
        CPU time of one solve [s].
    executor:
        ``submit(fn) -> Future`` (e.g. a one-thread ``ThreadPoolExecutor``); None solves
        inline, at the request.

    Notes
    -----
    It keeps the controller's side too, per end effector: ``seeking`` (a solve is pending
    for its goal), ``tries`` (fallbacks its goal has used), and the solution found --
    ``approach`` (joint strategy) or ``posture`` (posture strategy) -- with ``serving``,
    the effectors it is for; ``uses`` counts the solutions found since start.

    """

    def __init__(self, model, margin, tolerance, rotation_tolerance, time_budget=0.05,
                 executor=None):
        self.model = model
        self.time_budget = float(time_budget)
        self.executor = executor
        self._future = None
        self._key = None
        self.requests = 0
        ne, n, m = len(model.end_effectors), model.nq, model.task_dim
        self.seeking = np.zeros(ne, dtype=bool)
        self.tries = np.zeros(ne, dtype=np.int64)
        self.serving = np.zeros(ne, dtype=bool)
        self.uses = 0
        self.approach = None
        self.posture = None
        #: ``accept(q) -> bool``, or None: whether the solution ``q`` keeps the pairs
        #: apart. A clear solution is taken and approached on the straight joint line,
        #: which the collision stage guards; one in contact is solved again from a random
        #: start, within the same time budget. Called on the solving thread
        self.accept = None
        self._z, self._dq = np.zeros(n), np.zeros(n)
        self._H, self._beta = np.zeros((n, m)), np.zeros(m)
        # the posture pull's kernel compiled (or loaded) now, not on a tick
        nullspace.project_nullspace(np.zeros((m, n)), self._z, self._dq, self._H, self._beta)
        self.reconfigure(margin, tolerance, rotation_tolerance)

    def reconfigure(self, margin, tolerance, rotation_tolerance):
        """
        Solve with a new ``position_margin`` and goal tolerances from now on.

        A pending solve was for the old ones: it is dropped, and its goals may ask again.
        """
        self.cancel()
        self.seeking[:] = False
        model = self.model
        self.ik = PositionIk(model, tolerance=TOLERANCE_FRACTION * tolerance,
                             rotation_tolerance=TOLERANCE_FRACTION * rotation_tolerance,
                             clock=time.thread_time, margin=margin)
        # compile (or load) the solver now: compiling holds the GIL for seconds, which a
        # first request on a worker thread would take from the control loop
        self.ik.solve(model.frame_placements(model.center), model.center, 0.0,
                      rng=np.random.default_rng(0), max_restarts=0)

    # ------------------------------------------------------------------ the controller's side
    def ask(self, which, targets, q_seed, goal_ids):
        """
        Ask for every effector's target at once for the stalled goals ``which`` (mask).

        Goals already waiting for a solve join; ``goal_ids`` (the controller's count of
        goals per effector) tells a result from one for replaced goals. Returns the mask
        of the goals asked for.
        """
        which = which | self.seeking
        self.seeking |= which
        self.tries[which] += 1
        self.request((goal_ids.copy(), which.copy()), targets, q_seed, seed=int(goal_ids.sum()))
        return which

    def take(self, goal_ids, strategy):
        """
        Return ``(which, IkResult)`` of a finished solve for goals not replaced since, or None.

        A solution becomes the ``approach`` (``strategy`` joint) or the ``posture`` target,
        for the effectors ``which``.
        """
        done = self.poll()
        if done is None:
            return None
        (asked_ids, which), result = done
        self.seeking[which] = False
        if not np.array_equal(asked_ids[which], goal_ids[which]):
            return None  # those goals were replaced meanwhile
        if result.success:
            self.uses += 1
            self.serving[:] = which
            if strategy == 'joint':
                self.approach = result.q
            else:
                self.posture = result.q
        return which, result

    def approach_done(self, q):
        """Whether every joint of ``q`` is within :data:`HANDBACK` of the approach's goal."""
        return bool(np.max(np.abs(self.approach - q)) < HANDBACK)

    def posture_step(self, J, q, scale, active):
        """
        Posture strategy's term ``N scale (q* - q)``, ``N`` the exact nullspace of ``J``.

        ``scale``: the gain times the period [-]; ``active``: 0 for joints held still.
        Returns a view the next call overwrites.
        """
        z = self._z
        np.subtract(self.posture, q, out=z)
        z *= scale * active
        nullspace.project_nullspace(J, z, self._dq, self._H, self._beta)
        return self._dq

    def end(self, i):
        """Effector ``i``'s goal ended or changed: drop a solve or a solution it is part of."""
        self.tries[i] = 0
        if self.seeking[i]:
            self.cancel()
            self.seeking[:] = False
        if self.serving[i]:
            self.approach = self.posture = None
            self.serving[:] = False

    @property
    def pending(self):
        """Whether a request is being solved."""
        return self._future is not None

    def request(self, key, targets, q_seed, seed=0):
        """
        Ask for joint values reaching ``targets`` (ne x 4 x 4) from ``q_seed``.

        ``key`` comes back with the result (to match it to the goals it was for); an
        earlier request's result is dropped. ``seed`` seeds the random restarts.
        """
        targets = np.array(targets, dtype=float)
        q_seed = np.array(q_seed, dtype=float)
        rng = np.random.default_rng(seed)
        # the solver of this request: a reconfigure meanwhile builds a new one, which a
        # job still queued must not share with the control thread's warm-up solve
        ik, budget, accept, model = self.ik, self.time_budget, self.accept, self.model

        def solve():
            start = time.thread_time()
            result = ik.solve(targets, q_seed, budget, rng=rng)
            rejected = 0
            while result.success and accept is not None and not accept(result.q):
                rejected += 1
                left = budget - (time.thread_time() - start)
                if left <= 0.0:
                    return replace(result, success=False, rejected=rejected)
                seed = model.random_configurations(1, rng)[0]
                result = ik.solve(targets, seed, left, rng=rng)
            return replace(result, rejected=rejected)

        self.requests += 1
        self._key = key
        if self.executor is None:
            self._future = Future()
            self._future.set_result(solve())
        else:
            self._future = self.executor.submit(solve)

    def poll(self):
        """Return ``(key, IkResult)`` once the pending request is solved, else None."""
        future = self._future
        if future is None or not future.done():
            return None
        self._future = None
        return self._key, future.result()

    def cancel(self):
        """Drop the pending request (a worker finishes it; its result is ignored)."""
        self._future = None
        self._key = None

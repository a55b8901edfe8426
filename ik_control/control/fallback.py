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
import time

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

    """

    def __init__(self, model, margin, tolerance, rotation_tolerance, time_budget=0.05,
                 executor=None):
        self.ik = PositionIk(model, tolerance=TOLERANCE_FRACTION * tolerance,
                             rotation_tolerance=TOLERANCE_FRACTION * rotation_tolerance,
                             clock=time.thread_time, margin=margin)
        self.time_budget = float(time_budget)
        self.executor = executor
        self._future = None
        self._key = None
        self.requests = 0
        # compile (or load) the solver now: compiling holds the GIL for seconds, which a
        # first request on a worker thread would take from the control loop
        self.ik.solve(model.frame_placements(model.center), model.center, 0.0,
                      rng=np.random.default_rng(0), max_restarts=0)

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

        def solve():
            return self.ik.solve(targets, q_seed, self.time_budget, rng=rng)

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

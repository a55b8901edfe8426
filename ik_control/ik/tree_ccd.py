"""
CCD for several end effectors of one tree (SIMON's two hands and its shared torso).

:mod:`ik_control.ik.ccd` sets one joint at a time to the angle that maximises the gain
``g(phi) = k1 (1 - cos phi) + k2 cos phi + k3 sin phi`` of one end effector. A joint that
moves several end effectors (SIMON's torso moves both hands) has one such gain per
effector it moves, each of the same form in ``phi``; their sum is again of that form with
the coefficients summed, so the best angle for the whole set of goals is still the closed
form ``phi = atan2(sum k3, sum k2 - sum k1)`` (Welman's CCD with the weighted sum of the
goals' gains). A joint that moves one effector gets exactly the single-chain step.

The sweep visits every controlled joint that moves some effector, distal first (tree
order reversed: both arms from the wrist inwards, then the torso), each at its most
proximal tree joint; a URDF mimic joint is handled as in :mod:`~ik_control.ik.ccd` (the
change halved until the summed weighted cost does not grow). A prismatic joint takes
the weighted least-squares translation ``sum_e alpha_e (P_d,e - P_c,e) . a / sum_e
alpha_e``. Every joint change is bounded by the joint limits and ``max_joint_step``.

Weights: ``alpha_e = 1 / (l_e / 4)^2`` [1/m^2] per effector (``l_e`` its largest
joint-to-effector distance, :data:`~ik_control.ik.ccd.POSITION_SCALE`), so the effectors'
position errors weigh alike whatever their reach; ``w_o`` is ``orientation_weight`` for a
pose effector and 0 for a position-only one (``RobotModel.task_is_pose``).

The sweep is :func:`~ik_control.ik.ccd.ccd_sweep`, the one that the single-chain
:class:`~ik_control.ik.ccd.Ccd` runs too (with one effector); this module sets up the
effector set. :class:`TreeCcd` runs sweeps to convergence (``ccd`` in ``ik_control
solve`` for several effectors) or a bounded number of them (the controller's
``ik_method: ccd``).
"""

import time

from ik_control.ik.ccd import ccd_errors, ccd_iterate, CcdResult, POSITION_SCALE
from ik_control.validation import finite_vector, InputError
import numpy as np


class TreeCcd:
    """
    CCD on every end effector of a :class:`~ik_control.kinematics.RobotModel` at once.

    ``orientation_weight`` is ``w_o`` [unitless] of the pose effectors (module docstring);
    the position weights ``alpha_e`` are set from the configuration of each solve.
    """

    def __init__(self, model, orientation_weight=1.0):
        if not np.isfinite(orientation_weight) or orientation_weight < 0.0:
            raise InputError('orientation_weight must be finite and >= 0, '
                             f'got {orientation_weight}')
        self.model = model
        self.orientation_weight = float(orientation_weight)
        ne = len(model.end_effectors)
        self.frames = np.arange(ne, dtype=np.int64)
        self.use_rotation = np.array([bool(model.task_is_pose[e]) for e in range(ne)])
        self.w_o = np.where(self.use_rotation, self.orientation_weight, 0.0)
        nt = len(model.tree_joint_names)
        support = np.array([[bool(model.support[e][j]) for j in range(nt)] for e in range(ne)])
        tree = [j for j in range(nt) if support[:, j].any() and model.ctrl_index[j] >= 0]
        counts = np.bincount(model.ctrl_index[tree], minlength=model.nq)
        self.coupled = counts > 1
        first = {}
        moves = {}
        for j in tree:                  # parents precede children: the proximal one first
            k = int(model.ctrl_index[j])
            first.setdefault(k, j)
            moves[k] = moves.get(k, np.zeros(ne, dtype=bool)) | support[:, j]
        pairs = sorted(((j, k) for k, j in first.items()), reverse=True)   # distal first
        self.order = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        self.moves = np.array([moves[k] for _, k in pairs], dtype=bool).reshape(-1, ne)
        self.joints = tuple(model.joint_names[k] for _, k in pairs)
        self._ws = model.workspace()

    def goals(self, targets):
        """Return ``(p_d (ne, 3), R_d (ne, 3, 3))`` of ``targets`` (ne x 4 x 4), checked."""
        T = np.asarray(targets, dtype=float)
        ne = self.frames.size
        if T.shape != (ne, 4, 4) or not np.all(np.isfinite(T)):
            raise InputError(f'targets must be finite, shape ({ne}, 4, 4)')
        return np.ascontiguousarray(T[:, :3, 3]), np.ascontiguousarray(T[:, :3, :3])

    def weights(self, q):
        """``alpha_e = 1 / (POSITION_SCALE l_e)^2`` [1/m^2] at ``q`` (module docstring)."""
        ws = self._ws
        ws.update(q, jacobian=False)
        alpha = np.empty(self.frames.size)
        for e in range(self.frames.size):
            p = ws.frame_T[e, :3, 3]
            lengths = [np.linalg.norm(p - ws.joint_T[j, :3, 3])
                       for n, (j, _) in enumerate(self.order) if self.moves[n, e]]
            alpha[e] = 1.0 / (POSITION_SCALE * max(max(lengths, default=1.0), 1e-3)) ** 2
        return alpha

    def _steps(self, max_joint_step):
        step = np.array(np.broadcast_to(np.asarray(max_joint_step, dtype=float),
                                        (self.model.nq,)))
        if np.any(np.isnan(step)) or np.any(step <= 0.0):
            raise InputError('max_joint_step must be > 0 [rad or m] for every joint')
        return step

    def errors(self, q, targets):
        """Return (ne, 2): each effector's position [m] and rotation [rad] error at ``q``."""
        p_d, R_d = self.goals(targets)
        out = np.empty((self.frames.size, 2))
        m = self.model
        ccd_errors(m.packed_f, m.packed_i, self._ws.W, finite_vector(q, m.nq, 'q').copy(),
                   self.frames, p_d, R_d, self.use_rotation, out)
        return out

    def solve(self, q0, targets, max_iterations=200, tolerance=1e-4, rotation_tolerance=1e-3,
              max_joint_step=np.inf, alpha=None):
        """
        Sweep from ``q0`` toward ``targets`` (ne x 4 x 4, base frame) until converged.

        As :meth:`Ccd.solve <ik_control.ik.ccd.Ccd.solve>`, with the largest error over
        the effectors; ``alpha`` (ne,) overrides the position weights.
        """
        start = time.perf_counter()
        m = self.model
        p_d, R_d = self.goals(targets)
        q = finite_vector(q0, m.nq, 'q').copy()
        max_iterations = int(max_iterations)
        if max_iterations < 0:
            raise InputError(f'max_iterations must be >= 0, got {max_iterations}')
        if not (tolerance > 0.0 and rotation_tolerance > 0.0):
            raise InputError('tolerance and rotation_tolerance must be > 0')
        alpha = self.weights(q) if alpha is None else np.asarray(alpha, dtype=float)
        history = np.zeros((max_iterations + 1, 2))
        sweeps, ok = ccd_iterate(m.packed_f, m.packed_i, self._ws.W, self.order, self.moves,
                                 self.coupled, self.frames, q, p_d, R_d, self.use_rotation,
                                 alpha, self.w_o, self._steps(max_joint_step),
                                 max_iterations, float(tolerance), float(rotation_tolerance),
                                 history)
        history = history[:sweeps + 1].copy()
        return CcdResult(q, bool(ok), int(sweeps), float(history[-1, 0]),
                         float(history[-1, 1]), history, time.perf_counter() - start)

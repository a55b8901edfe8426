"""
``ik_control bench style``: Table I of Gielniak, Liu & Thomaz, stylized motion against CCD.

The experiment of sec. V-C on the simulated SIMON:

* **Constraints.** A grid in front of SIMON's right side (x 0.25-0.60 m, y -0.60-0.10 m,
  z 0.80-1.35 m in ``simon_base``, 6 x 7 x 5 points), kept where the right hand reaches
  (within 1 mm, found by bounded least squares) with the searched joints inside the region
  eq. 1's grids sample and the other joints where the adapter holds them
  (:func:`constraint_grid`); ``count`` (83, as in the paper) of them, evenly spread through
  the list. Eq. 1 samples a window's interior only, so the two steps never put a joint in
  the outer 12.9 % of its search box (the limits less the buffer); a point reached only
  with a joint there is out of the search's reach (the grid point (0.39, 0.10, 0.94) m:
  75 mm off, the search's best there 43.5 mm). Those points are not used but reported,
  with the search's error on them.
* **Start.** Both methods start from the same configuration: the exemplar's pose at the
  ``pick`` instant (the robot holds the box); the constraint is the bin. Only this shared
  segment is compared (the paper compares box to bin only).
* **Stylized.** :class:`~ik_control.style.adapter.StyleAdapter` adapts ``pick_and_place``
  from ``pick`` so the hand meets the bin at the ``place`` instant; the segment is start to
  ``place``.
* **CCD.** :class:`~ik_control.ik.ccd_motion.CcdMotion` from the same start, one bounded sweep per
  1 ms tick (each joint at most ``ccd_speed`` of its velocity limit), position goal,
  until the hand is within ``ccd_tolerance``; the segment is start to arrival. sn grows
  with speed (it is the mean absolute second difference per ``dt``, about the square of
  the speed for the same path): with the default 0.15 CCD's median executed segment is
  1.77 s against the stylized 2.30 s, so CCD moves faster; ``ccd_speed`` 0.105 makes the
  two equally long (2.31 s against 2.30 s), the fair comparison (docs/style.md).
* **Execution, within SIMON's limits.** Both segments are run as a user runs a joint
  trajectory on this robot, with the same time scaling for both
  (:func:`~.style_execution.execute_plan`):

  1. played ``s`` times slower, ``s`` the ``style_adapter`` node's uniform slow-down of
     the stylized motion to the joints' velocity limits and ``max_acceleration``
     (:func:`~ik_control.style.modulation.time_scale`, on the whole adapted motion; 1.0 to
     2.7 over the 83); CCD's segment by the same ``s``, so the two keep the ratio of
     durations that ``ccd_speed`` set (a slow-down to its own limits would make CCD 6 to
     9.5 times slower: a step to 0.15 of the velocity limit in one tick asks 450 rad/s^2);
  2. followed by ``ik_controller``'s joint-trajectory law with SIMON's shipped limits
     (``config/simon.yaml``: gain 10/s, URDF velocity limits, 5 rad/s^2, 0.02 rad margin;
     :func:`~.style_execution.follow`), the node that commands the robot, which turns
     CCD's velocity steps into ramps within the limits;
  3. executed on the MuJoCo SIMON (:class:`~ik_control.sim.mujoco_sim.MujocoSim`,
     critically damped position servos of stiffness ``kp``, default 2000 N m/rad as the
     simulator's, 1 ms physics step) with the robot-side setpoint saturation that
     ``sim_robot`` enforces (URDF velocity limits, its ``max_acceleration``); its clamps are
     counted (an unsafe command stream) and reported per method;

  and the measured joint positions, sampled every 1 ms from the start until the
  controller is done (at rest on the segment's last point:
  :func:`~.style_execution.follow`), give sn (eq. 3) per joint.
  ``limits=False`` (``--no-limits``) is the earlier measurement: each segment at its own
  speed (the exemplar's, CCD's per-tick steps) sent straight to the simulator with the
  saturation off; with the earlier exemplar it asked up to 33 rad/s^2 (stylized) and
  450 rad/s^2 (CCD), which the robot clamps (on 91 % and 99.9 % of the ticks, where sn
  grew up to 2.2 and 3.7 times).

Joint names: the paper's DOF labels are SIMON's URDF joint names (the URDF was written
after them): Torso Y = ``torso_y`` (fore/aft), Torso X = ``torso_x`` (side), Shoulder X/Z/Y
= ``right_shoulder_x/z/y``, Elbow X = ``right_elbow_x``, Wrist X/Z = ``right_wrist_x/z``.
``right_wrist_y`` is not in Table I; neither method's sn is reported for it.

Also measured: the constraint error (searched and as executed; and with the search's
optional damped least-squares refinement, which is not in the paper), the time per adaptation,
and how much each method's trajectory changes when the constraint moves by 1 cm (the
paper's point that CCD changes a lot for a small change): max over joints and time of the
joint difference [rad] between the trajectories for ``c`` and ``c + 1 cm``.
"""

import time

from ik_control import robots
from ik_control.bench.style_execution import DT, execute, execute_plan, simon_limits
from ik_control.ik.ccd_motion import CcdMotion
from ik_control.style.adapter import StyleAdapter
from ik_control.style.modulation import time_scale
from ik_control.style.smoothness import smoothness
import numpy as np

MOTION = 'pick_and_place'
#: ``--exemplar``: the shipped exemplar, or the one first authored (before its re-authoring)
EXEMPLARS = {'current': MOTION, 'original': 'pick_and_place_original'}
TABLE = (('Torso Y', 'torso_y', 2.55, 1.12), ('Torso X', 'torso_x', 2.39, 0.36),
         ('Shoulder X', 'right_shoulder_x', 0.78, 0.64),
         ('Shoulder Z', 'right_shoulder_z', 1.34, 0.51),
         ('Shoulder Y', 'right_shoulder_y', 0.53, 0.19),
         ('Elbow X', 'right_elbow_x', 1.27, 1.25), ('Wrist X', 'right_wrist_x', 0.34, 0.32),
         ('Wrist Z', 'right_wrist_z', 0.27, 0.21))
GRID = ((0.25, 0.60, 6), (-0.60, 0.10, 7), (0.80, 1.35, 5))
NEARBY_STEP = np.array([0.0, 0.01, 0.0])        # 1 cm sideways


def constraint_grid(adapter, q_start, count=83, reach=1e-3, starts=4, seed=0):
    """
    Return ``count`` grid points [m] the search can reach, and how the grid was sorted.

    A point of :data:`GRID` is kept when the right hand comes within ``reach`` of it with
    the searched joints inside the region eq. 1's two grids sample (``Tsfks.grid_lower`` to
    ``grid_upper``: each joint's buffered box less its outer 12.9 %) and the other joints
    where :meth:`StyleAdapter.adapt` holds them from ``q_start``: bounded least squares on
    the hand position (``scipy.optimize.least_squares``, dogbox, bounds the region) from the
    search's own answer and from ``starts`` random configurations of the region. A kept
    point has such a configuration (found); a rejected one may be reachable there all the
    same (none found). Rejected points are checked the same way against the whole buffered
    box (``outer_band``: reached only with a joint in its outer band; the rest
    ``out_of_box``). ``count`` of the kept points are taken, evenly spread through the list.
    """
    from scipy.optimize import least_squares

    axes = [np.linspace(lo, hi, n) for lo, hi, n in GRID]
    grid = np.array(np.meshgrid(*axes, indexing='ij')).reshape(3, -1).T
    search = adapter.search
    model = adapter.model
    k = search.search_index
    held = adapter.held_joints(adapter.exemplar.joint_names, q_start, start='pick',
                               instant='place')
    q = np.array([held[n] for n in model.joint_names])
    rows = model.task_offsets[search.frame] + np.arange(3)
    rng = np.random.default_rng(seed)

    def hand(x, point):
        q[k] = x
        return search.constrained_point(q, point) - point

    def jac(x, point):
        q[k] = x
        return model.jacobian(q)[np.ix_(rows, k)]

    def best(lower, upper, point):
        first = np.clip(search.search(point, fixed=held).q[k], lower, upper)
        error = np.inf
        for x0 in [first] + [rng.uniform(lower, upper) for _ in range(starts)]:
            fit = least_squares(hand, x0, jac=jac, bounds=(lower, upper), args=(point,),
                                method='dogbox', xtol=1e-8, ftol=1e-10, gtol=1e-10)
            error = min(error, float(np.linalg.norm(fit.fun)))
            if error <= reach:
                break
        return error

    kept = np.array([best(search.grid_lower, search.grid_upper, p) <= reach for p in grid])
    outer = np.array([not kept[i] and best(search.box_lower[k], search.box_upper[k], p) <= reach
                      for i, p in enumerate(grid)])
    reachable = grid[kept]
    if len(reachable) < count:
        raise ValueError(f'only {len(reachable)} reachable grid points for {count} constraints')
    chosen = reachable[np.round(np.linspace(0, len(reachable) - 1, count)).astype(int)]
    return chosen, {'points': len(grid), 'kept': int(kept.sum()), 'reach_m': reach,
                    'outer_band': grid[outer], 'out_of_box': grid[~kept & ~outer]}


def stylized_segment(adapter, constraint, q_start):
    """Adapt from ``pick``: (positions, velocities) to ``place``, adaptation times [s]."""
    names = adapter.exemplar.joint_names
    wall = time.perf_counter()
    cpu = time.thread_time()
    motion = adapter.adapt(constraint, names, q_start, start='pick', instant='place')
    cpu = time.thread_time() - cpu
    wall = time.perf_counter() - wall
    i = int(round(motion.constraint_time / DT))
    return motion, motion.positions[:i + 1], motion.velocities[:i + 1], wall, cpu


def ccd_segment(ccd, constraint, q_start, max_ticks):
    """CCD from ``q_start``, one bounded sweep per tick until reached: (ticks + 1, joints)."""
    q = q_start.copy()
    out = [q]
    for _ in range(max_ticks):
        if ccd.reached(q, constraint):
            break
        q = ccd.step(q, constraint)
        out.append(q)
    return np.array(out)


def _hand(adapter, q):
    ws = adapter.model.workspace()
    ws.update(q, jacobian=False)
    return ws.frame_T[adapter.search.frame, :3, 3].copy()


def _change_per_cm(a, b, step_m):
    """Largest joint difference [rad] between two trajectories per cm of constraint change."""
    n = max(len(a), len(b))
    pad = [np.vstack([x, np.repeat(x[-1:], n - len(x), axis=0)]) for x in (a, b)]
    return float(np.max(np.abs(pad[0] - pad[1]))) / (step_m * 100.0)


def run(count=83, ccd_speed=0.15, ccd_tolerance=0.002, executor='mujoco', pitches=10,
        kp=2000.0, limits=True, progress=None, exemplar='current'):
    """
    Run the experiment (module docstring) and :func:`baseball`; return the results.

    ``limits``: execute both segments within SIMON's limits, slowed down alike
    (:func:`~.style_execution.execute_plan`); False: the earlier measurement, each at its
    own speed straight to the simulator with the saturation off. ``exemplar``: a key of
    :data:`EXEMPLARS`.
    """
    motion_name = EXEMPLARS[exemplar]
    adapter = StyleAdapter(motion_name, dt=DT)
    model = adapter.model
    names = model.joint_names
    if tuple(adapter.exemplar.joint_names) != names:
        raise ValueError('the exemplar must name the robot joints in model order')
    urdf = robots.urdf_path('simon')
    q_start = adapter.pose_at('pick')
    ccd = CcdMotion(model, max_joint_step=ccd_speed * model.velocity_limit * DT,
                    end_effector=adapter.exemplar.end_effector, tolerance=ccd_tolerance)
    setup = simon_limits(model)
    max_ticks = int(3.0 / DT)
    cols = [names.index(j) for _, j, _, _ in TABLE]
    constraints, grid = constraint_grid(adapter, q_start, count)
    adapter.adapt(constraints[0], names, q_start, start='pick')     # compile / warm up
    rows = []
    for c, point in enumerate(constraints):
        motion, pos, vel, wall, cpu = stylized_segment(adapter, point, q_start)
        ccd_pos = ccd_segment(ccd, point, q_start, max_ticks)
        i_constraint = len(pos) - 1
        extra = {'time_scale': 1.0, 'stylized_clamps': 0, 'ccd_clamps': 0,
                 'stylized_limited': 0, 'ccd_limited': 0}
        if limits:
            # the node's slow-down of the whole adapted motion, the same for both segments
            scale = time_scale(motion.velocities, DT, setup.v_max, setup.a_max)
            sty_meas, sty_clamps, sty_limited = execute_plan(
                model, setup, urdf, np.arange(len(pos)) * DT * scale,
                np.clip(pos, model.lower, model.upper), vel / scale, executor, kp)
            ccd_meas, ccd_clamps, ccd_limited = execute_plan(
                model, setup, urdf, np.arange(len(ccd_pos)) * DT * scale, ccd_pos, None,
                executor, kp)
            i_constraint = int(round(i_constraint * scale))
            extra = {'time_scale': scale, 'stylized_clamps': sty_clamps,
                     'ccd_clamps': ccd_clamps, 'stylized_limited': sty_limited,
                     'ccd_limited': ccd_limited}
        elif executor == 'mujoco':
            sty_meas, extra['stylized_clamps'] = execute(urdf, names, pos, vel, kp)
            ccd_meas, extra['ccd_clamps'] = execute(urdf, names, ccd_pos, kp=kp)
        else:
            sty_meas, ccd_meas = pos, ccd_pos
        moved = point + NEARBY_STEP
        _, pos2, _, _, _ = stylized_segment(adapter, moved, q_start)
        ccd_pos2 = ccd_segment(ccd, moved, q_start, max_ticks)
        rows.append({
            'constraint': point,
            'stylized_sn': smoothness(sty_meas[:, cols], DT),
            'ccd_sn': smoothness(ccd_meas[:, cols], DT),
            'search_error': motion.search_error, 'resolution': motion.resolution,
            'stylized_error': float(np.linalg.norm(_hand(adapter, pos[-1]) - point)),
            'stylized_executed_error': float(np.linalg.norm(
                _hand(adapter, sty_meas[min(i_constraint, len(sty_meas) - 1)]) - point)),
            'ccd_error': float(np.linalg.norm(_hand(adapter, ccd_pos[-1]) - point)),
            'ccd_executed_error': float(np.linalg.norm(_hand(adapter, ccd_meas[-1]) - point)),
            'ccd_converged': bool(ccd.reached(ccd_pos[-1], point)),
            'stylized_seconds': (len(sty_meas) - 1) * DT,
            'ccd_seconds': (len(ccd_meas) - 1) * DT,
            'adapt_wall_ms': wall * 1e3, 'adapt_cpu_ms': cpu * 1e3,
            'search_ms': motion.search_seconds * 1e3,
            'stylized_change_per_cm': _change_per_cm(pos, pos2, 0.01),
            'ccd_change_per_cm': _change_per_cm(ccd_pos, ccd_pos2, 0.01),
            **extra,
        })
        if c == count // 2:
            nearby = {'constraints': [point, moved], 'stylized': [pos, pos2],
                      'ccd': [ccd_pos, ccd_pos2]}
        if progress and (c + 1) % 10 == 0:
            progress(f'{c + 1}/{count} constraints')
    results = summarize(rows, nearby, count, ccd_speed, ccd_tolerance, executor, motion_name)
    results['kp'] = kp
    results['limits'] = dict(setup._asdict(), enforced=bool(limits))
    results['fine_increment_rad'] = adapter.search.fine_increment.tolist()
    outer = [adapter.adapt(p, names, q_start, start='pick') for p in grid['outer_band']]
    k = adapter.search.search_index
    results['grid'] = {
        'points': grid['points'], 'kept': grid['kept'], 'reach_m': grid['reach_m'],
        'outer_band': grid['outer_band'], 'out_of_box': grid['out_of_box'],
        'outer_band_search_error_mm': [m.search_error * 1e3 for m in outer],
        'outer_band_within_resolution': int(sum(m.search_error <= m.resolution
                                                for m in outer)),
        'grid_margin': float(np.max((adapter.search.grid_lower - adapter.search.box_lower[k])
                                    / (adapter.search.box_upper - adapter.search.box_lower)[k]))}
    refined = StyleAdapter(motion_name, dt=DT, refine_iterations=10)
    errors = [refined.adapt(p, names, q_start, start='pick').search_error for p in constraints]
    results['refined_search_error_mm'] = {'median': float(np.median(errors)) * 1e3,
                                          'p95': float(np.percentile(errors, 95)) * 1e3,
                                          'max': float(np.max(errors)) * 1e3}
    if pitches:
        if progress:
            progress(f'baseball: {pitches} pitches')
        swings = baseball(pitches, executor, kp)
        results['baseball'] = {
            key: {'median': float(np.median([s[key] for s in swings])),
                  'max': float(np.max([s[key] for s in swings]))}
            for key in ('bat_error_mm', 'bat_executed_error_mm', 'grip_error_mm',
                        'adapt_wall_ms')}
        results['baseball']['pitches'] = pitches
    return results


def baseball(pitches=10, executor='mujoco', kp=2000.0, seed=0):
    """
    Sec. V-D: straight pitches across the strike zone; the swing adapted to each.

    Each pitch leaves ``(12 m, y, z)`` at 9 m/s toward a point of the strike zone in front of
    SIMON (y 0.0-0.35 m, z 0.95-1.25 m at the hitting plane); :func:`plan_swing` starts the
    swing so that contact falls when the ball crosses the plane. Returns the distance [mm]
    from the ball to the bat line at contact (searched and as executed), the left hand's
    distance to its grip on the bat, and the adaptation time.
    """
    from ik_control.style.adapter import plan_swing

    adapter = StyleAdapter('baseball_swing', dt=DT)
    names = adapter.exemplar.joint_names
    urdf = robots.urdf_path('simon')
    q0 = adapter.pose_at(0.0)
    rng = np.random.default_rng(seed)
    plan_swing(adapter, [12.0, 0.2, 1.1], [-9.0, 0.0, 0.0], names, q0)     # warm up
    grip = np.asarray(adapter.exemplar.extra['follower']['attach'], dtype=float)
    out = []
    for _ in range(pitches):
        aim = np.array([0.5, rng.uniform(0.0, 0.35), rng.uniform(0.95, 1.25)])
        release = np.array([12.0, rng.uniform(-0.2, 0.4), rng.uniform(1.0, 1.6)])
        velocity = 9.0 * (aim - release) / np.linalg.norm(aim - release)
        wall = time.perf_counter()
        delay, motion, point = plan_swing(adapter, release, velocity, names, q0)
        wall = time.perf_counter() - wall
        i = int(round(motion.constraint_time / DT))
        measured = (execute(urdf, names, motion.positions[:i + 1], motion.velocities[:i + 1],
                            kp)[0] if executor == 'mujoco' else motion.positions[:i + 1])
        T = adapter.model.frame_placements(motion.positions[i])
        out.append({'contact_point': point, 'start_delay_s': delay,
                    'bat_error_mm': motion.search_error * 1e3,
                    'bat_executed_error_mm': adapter.constraint_distance(measured[-1],
                                                                         point) * 1e3,
                    'grip_error_mm': float(np.linalg.norm(
                        T[1, :3, 3] - (T[0, :3, :3] @ grip + T[0, :3, 3]))) * 1e3,
                    'adapt_wall_ms': wall * 1e3})
    return out


def summarize(rows, nearby, count, ccd_speed, ccd_tolerance, executor, motion=MOTION):
    """Average over the constraints in the layout of Table I; add errors and times."""
    sty = np.array([r['stylized_sn'] for r in rows]) * 1e4
    ccd = np.array([r['ccd_sn'] for r in rows]) * 1e4

    def stats(key, scale=1.0):
        v = np.array([r[key] for r in rows]) * scale
        return {'median': float(np.median(v)), 'p95': float(np.percentile(v, 95)),
                'min': float(np.min(v)), 'max': float(np.max(v)), 'mean': float(np.mean(v))}

    table = [{'dof': label, 'joint': joint, 'paper_ccd': p_ccd, 'paper_stylized': p_sty,
              'ccd': float(ccd[:, i].mean()), 'stylized': float(sty[:, i].mean()),
              'stylized_lower_in': int(np.sum(sty[:, i] < ccd[:, i]))}
             for i, (label, joint, p_ccd, p_sty) in enumerate(TABLE)]
    return {
        'constraints': count, 'motion': motion, 'executor': executor,
        'rate_hz': 1.0 / DT, 'ccd_speed_fraction': ccd_speed,
        'ccd_tolerance_m': ccd_tolerance, 'table': table,
        'search_error_mm': stats('search_error', 1e3),
        'resolution_mm': stats('resolution', 1e3),
        'within_resolution': int(sum(r['search_error'] <= r['resolution'] for r in rows)),
        'stylized_error_mm': stats('stylized_error', 1e3),
        'stylized_executed_error_mm': stats('stylized_executed_error', 1e3),
        'ccd_error_mm': stats('ccd_error', 1e3),
        'ccd_executed_error_mm': stats('ccd_executed_error', 1e3),
        'ccd_converged': int(sum(r['ccd_converged'] for r in rows)),
        'adapt_cpu_ms': stats('adapt_cpu_ms'), 'adapt_wall_ms': stats('adapt_wall_ms'),
        'search_ms': stats('search_ms'),
        'segment_s': {'stylized': stats('stylized_seconds'), 'ccd': stats('ccd_seconds')},
        'time_scale': stats('time_scale'),
        'clamps': {m: {'total': int(sum(r[m + '_clamps'] for r in rows)),
                       'max': int(max(r[m + '_clamps'] for r in rows))}
                   for m in ('stylized', 'ccd')},
        'limited_ticks': {'stylized': stats('stylized_limited'), 'ccd': stats('ccd_limited')},
        'change_per_cm_rad': {'stylized': stats('stylized_change_per_cm'),
                              'ccd': stats('ccd_change_per_cm')},
        'nearby': nearby,
        'rows': rows,
    }

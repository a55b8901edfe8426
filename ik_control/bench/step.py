"""
Microseconds per control update, ours next to a plain numpy version and pink, in one run.

One update = forward kinematics, Jacobians, pose error, DLS with adaptive damping and the
joint-centering nullspace term (SAM eq. 16-18), for the WAM (tool, 6-D task, 7 joints)
and SIMON (both hands, 12-D task, 16 joints) by default, or for any robot written as a
DH file (``config/robots/sam9.yaml``: its tool, 6-D task, all joints, at the middle of
the limits; :func:`ik_control.robots.load`), or an arm of example-robot-data by name
(``panda``, ``kinova``, ...: its chain, at ``ik_control setup``'s start pose). With the
URDF's collision shapes, the update followed by the collision stage too; where they are
meshes, once with the meshes and once with their convex hulls
(``collision.convex_meshes``). Peers on the same robot, configuration and target in the
same process:

* ``numpy+pinocchio``: ``computeFrameJacobian`` and placements through pinocchio's Python
  API, ``log3``, then the same DLS and nullspace in numpy -- the obvious implementation;
* ``pink``: ``Configuration.update`` + ``solve_ik`` (QP with daqp) on FrameTasks plus a
  PostureTask, pink's way of using redundancy, on a model with the same joints.

Each call is timed separately (``perf_counter_ns``); median and 99th percentile reported.
"""

import os
import time

from ik_control import arm_setup, robots
from ik_control.bench import arms, eq19_geometry
from ik_control.ik.solver import SolverConfig, VelocitySolver
from ik_control.validation import InputError
import numpy as np
import pinocchio as pin


def _targets(model, q):
    """Targets 5 cm and 0.1 rad away from the placements at ``q``."""
    T = model.frame_placements(q)
    T[:, :3, 3] += 0.05
    c, s = np.cos(0.1), np.sin(0.1)
    T[:, :3, :3] = T[:, :3, :3] @ np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
    return T


def _time(fn, samples):
    fn()
    out = np.empty(samples)
    clock = time.perf_counter_ns
    for i in range(samples):
        t0 = clock()
        fn()
        out[i] = clock() - t0
    return out / 1e3


def _stats(us):
    return {'median_us': float(np.median(us)), 'p99_us': float(np.percentile(us, 99)),
            'mean_us': float(np.mean(us))}


def ours(model, q, T, samples):
    """Our compiled update."""
    solver = VelocitySolver(model, SolverConfig(centering_gain=0.01))
    return _time(lambda: solver.step(q, T), samples)


def numpy_pinocchio(model, q, T, samples):
    """Time the straightforward version: pinocchio's Python API + numpy linear algebra."""
    pm, pd = model.pin_model, model.pin_model.createData()
    fids = model.frame_ids
    qt = model.tree_configuration(q)
    cols = np.flatnonzero(model.ctrl_index >= 0)
    cols = cols[np.argsort(model.ctrl_index[cols])][:model.nq]
    lam2 = 0.01 ** 2
    center = model.center
    half = 0.5 * (model.upper - model.lower)
    targets = [pin.SE3(t[:3, :3], t[:3, 3]) for t in T]
    eye = np.eye(model.nq)

    def update():
        pin.framesForwardKinematics(pm, pd, qt)
        pin.computeJointJacobians(pm, pd, qt)
        rows_J, rows_e = [], []
        for fid, target in zip(fids, targets):
            J = pin.getFrameJacobian(pm, pd, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
            M = pd.oMf[fid]
            rows_J.append(J[:, cols])
            rows_e.append(np.concatenate([target.translation - M.translation,
                                          pin.log3(target.rotation @ M.rotation.T)]))
        J = np.vstack(rows_J)
        e = np.concatenate(rows_e)
        A = J @ J.T + lam2 * np.eye(J.shape[0])
        Jp = J.T @ np.linalg.inv(A)
        z = -0.01 * 2 * (q - center) / half ** 2
        return Jp @ e + (eye - Jp @ J) @ z

    return _time(update, samples)


def pink_update(model, q, T, samples):
    """Time pink's ``solve_ik`` on a reduced model with exactly our controlled joints."""
    import pink
    from pink.tasks import FrameTask, PostureTask

    full = model.pin_model
    keep = set(model.joint_names)
    lock = [full.getJointId(n) for n in model.tree_joint_names if n not in keep]
    reduced = pin.buildReducedModel(full, lock, model.tree_configuration(q))
    q_red = np.array([q[model.joint_names.index(reduced.names[i])]
                      for i in range(1, reduced.njoints)])
    data = reduced.createData()
    configuration = pink.Configuration(reduced, data, q_red)
    tasks = []
    for ee, t in zip(model.end_effectors, T):
        task = FrameTask(ee.frame, position_cost=1.0, orientation_cost=0.3)
        task.set_target(pin.SE3(model.base_placement[:3, :3] @ t[:3, :3],
                                model.base_placement[:3, :3] @ t[:3, 3]
                                + model.base_placement[:3, 3]))
        tasks.append(task)
    posture = PostureTask(cost=1e-3)
    posture.set_target(q_red)
    tasks.append(posture)

    def update():
        configuration.update(q_red)
        return pink.solve_ik(configuration, tasks, 1e-3, solver='daqp')

    return _time(update, samples)


def with_collision(model, q, T, samples, convex=False):
    """
    Time our update followed by the collision stage.

    Self pairs (the shipped SRDF; another arm's computed from 100 samples, as
    ``ik_control collision-matrix`` does) and three spheres of 10 cm diameter, centred 20
    cm from the hand frames (near the fingers, not touching them), the desired velocity
    toward them. ``convex``: meshes measured as their convex hulls.
    """
    from ik_control.collision import acm
    from ik_control.collision.model import CollisionModel
    from ik_control.control.collision_stage import CollisionStage

    solver = VelocitySolver(model, SolverConfig(centering_gain=0.01))
    if model.name in robots.SETUPS:
        with open(robots.data_path('config', f'{model.name}.srdf'), encoding='utf-8') as f:
            srdf = f.read()
    else:
        srdf = acm.srdf_text(acm.compute(model, samples=100, pose=q, convex=convex))
    cm = CollisionModel(model, srdf=srdf, convex=convex)
    hands = model.frame_placements(q)[:, :3, 3]
    spheres = []
    for k in range(3):
        pose = np.eye(4)
        pose[:3, 3] = hands[k % len(hands)] + 0.2 * np.roll([1.0, 0.0, 0.0], k)
        spheres.append(('sphere', pose, (0.1, 0.1, 0.1)))
    cm.set_scene(spheres)
    stage = CollisionStage(model, cm)
    n = model.nq
    v_max, a_max = model.velocity_limit.copy(), np.full(n, 5.0)
    v_prev = np.zeros(n)
    ws = solver.ws
    v_des = np.zeros(n)

    def update():
        dq = solver.step(q, T)
        np.multiply(dq, 1000.0, out=v_des)
        stage.constrain(ws.joint_T, solver.J, q, v_prev, v_des, v_max, a_max, model.lower,
                        model.upper, 0.02, 0.001)
    return _time(update, samples)


PEERS = (('ik_control', ours), ('numpy+pinocchio', numpy_pinocchio), ('pink', pink_update))


ROBOTS = ('wam', 'simon')


def robot_label(robot):
    """Return the results key of ``robot``: the name, or the stem of a DH file."""
    if robot in robots.SETUPS or robot in arms.EXAMPLE_ARMS:
        return robot
    return os.path.splitext(os.path.basename(robot))[0]


def _load(robot):
    """Return ``(model, q)``: a bundled robot or DH file, or an arm of example-robot-data."""
    if robot in arms.EXAMPLE_ARMS:
        model = arms.load_model(arms.bench_robot(robot))
        return model, arm_setup.start_pose(model)
    return robots.load(robot)


def _collision_peers(model):
    """Return the rows with the collision stage: the URDF's shapes, their hulls if meshes."""
    if getattr(model, 'urdf_xml', None) is None:
        return ()
    from ik_control.collision.model import CollisionModel

    rows = (('ik_control+collision', with_collision),)
    if CollisionModel(model).meshes:
        rows += (('ik_control+collision (hulls)',
                  lambda *args: with_collision(*args, convex=True)),)
    return rows


def run(samples=20000, robot_names=ROBOTS, progress=None):
    """Time every implementation on every robot (bundled, DH file, example arm); a dict."""
    results = {'samples': samples, 'robots': {}}
    for robot in robot_names:
        model, q = _load(robot)
        name = robot_label(robot)
        if name in results['robots']:
            raise InputError(f"robot '{name}' given twice")
        T = _targets(model, q)
        entry = {'joints': model.nq, 'task_rows': model.task_dim, 'implementations': {}}
        peers = PEERS + _collision_peers(model)
        for label, fn in peers:
            n = samples if label == 'ik_control' else max(2000, samples // 10)
            entry['implementations'][label] = _stats(fn(model, q, T, n))
            if progress:
                progress(f'{name}: {label}')
        if getattr(model, 'urdf_xml', None):
            entry['eq19_geometry'] = eq19_geometry.compare(model)
        ours_median = entry['implementations']['ik_control']['median_us']
        for label, stats in entry['implementations'].items():
            stats['speedup_of_ik_control'] = stats['median_us'] / ours_median
        results['robots'][name] = entry
    return results


def table(results):
    """Text table of :func:`run`'s results."""
    w = max([8] + [len(name) + 2 for name in results['robots']])
    lines = [f"{'robot':<{w}}{'implementation':<30}{'median us':>10}{'p99 us':>10}"
             f"{'ik_control faster':>19}"]
    for name, entry in results['robots'].items():
        for label, r in entry['implementations'].items():
            lines.append(f"{name:<{w}}{label:<30}{r['median_us']:>10.2f}{r['p99_us']:>10.2f}"
                         f"{r['speedup_of_ik_control']:>18.1f}x")
    for name, entry in results['robots'].items():
        if 'eq19_geometry' in entry:
            lines += eq19_geometry.lines(name, entry['eq19_geometry'])
    return '\n'.join(lines)

"""
The control tick never compiles: every kernel it calls is ready when the controller is built.

A numba kernel called with argument types it has not seen compiles (tens of ms) or loads
from the cache (ms) in that call. On the 1 kHz tick that is a stall of tens of ticks, so
``ResolvedRateController._compile`` calls every kernel of the tick at construction. This
test runs a fresh interpreter (in this one, earlier tests have called the kernels
already) and, for each configuration, builds a controller, counts the signatures of every
compiled function of the package, drives the tick through its paths and counts again: no
new signature may appear. The paths: a pose goal reached and confirmed on the measured
pose, a twist, an obstacle, a joint trajectory, hold and resume, an unreachable goal
parked (with the collision stage on); the position-IK fallback's joint-space approach and
posture pull; the CCD and HAL joint steps; Parent's control term with desired angles,
weights and psi 4 in the nullspace; Welman's constraints on SIMON; the collision stage's
QP on SIMON.
"""

import json
import os
import subprocess
import sys

SCRIPT = r"""
import json, sys
import numpy as np
from numba.core.registry import CPUDispatcher
from ik_control import robots
from ik_control.bench import reach
from ik_control.control.config import ControllerConfig, FallbackConfig, GoalConfig
from ik_control.control.controller import ResolvedRateController


def signatures():
    out = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith('ik_control'):
            continue
        for attr, value in vars(module).items():
            if isinstance(value, CPUDispatcher):
                out[f'{name}.{attr}'] = len(value.signatures)
    return out


class Rig:
    # a perfect robot at the controller's rate: q follows the command
    def __init__(self, name, config, q=None):
        self.model = robots.robot(name)
        self.c = ResolvedRateController(self.model, config)
        self.q = np.array(robots.ready_pose(name) if q is None else q, dtype=float)
        self.t = 0.0
        self.before = signatures()  # after construction: the tick may add none

    def run(self, seconds, until=lambda c: False):
        c, dt = self.c, self.c.dt
        for _ in range(int(seconds / dt)):
            c.set_joint_state(self.model.joint_names, self.q, self.t)
            command = c.update(self.t)
            if command is not None:
                self.q = command.at(dt)[0]
            self.t += dt
            if until(c):
                return

    def new(self):
        after = signatures()
        return {k: (self.before.get(k, 0), v) for k, v in after.items()
                if v > self.before.get(k, 0)}


cases = {}
# every input of the pose law: a goal reached and confirmed, a twist, an obstacle, a joint
# trajectory, hold and resume, an unreachable goal parked
r = Rig('wam', ControllerConfig(fallback=FallbackConfig(strategy='off'),
                                goal=GoalConfig(unreachable_time=0.3)))
c, ee = r.c, r.model.end_effector_names[0]
r.run(0.05)
goal = c.current_pose(ee)
goal[:3, 3] += (0.05, -0.03, 0.02)
c.set_target_matrix(ee, goal)
r.run(3.0, until=lambda c: c.goals.reached[0])
reached = bool(c.goals.reached[0])
c.set_twist_target(ee, [0.02, 0.0, 0.0], [0.0, 0.0, 0.1], r.t)
r.run(0.3)
c.set_obstacles([c.current_pose(ee)[:3, 3] + (0.1, 0.0, 0.0)], [0.03])
r.run(0.3)
c.set_obstacles(np.zeros((0, 3)), [])
c.set_joint_trajectory(r.model.joint_names, [1.0], [r.q + 0.05], None, r.t)
r.run(1.2)
c.hold()
r.run(0.1)
c.resume()
far = c.current_pose(ee)
far[:3, 3] += (5.0, 0.0, 0.0)
c.set_target_matrix(ee, far)
r.run(3.0, until=lambda c: c.goals.parked[0])
cases['inputs'] = {'ran': reached and bool(c.goals.parked[0]), 'new': r.new()}

# the position-IK fallback, both strategies, on goals the law alone stalls on (goal 8 of
# test_fallback's draw; goal 72 of `bench reach --robot wam`)
model = robots.robot('wam')
config = reach.controller_config('wam')
lo, hi = model.lower + config.limits.position_margin, model.upper - config.limits.position_margin
rng = np.random.default_rng(1)
stall = [(rng.uniform(lo, hi), rng.uniform(lo, hi)) for _ in range(9)][8]
draw, rng = reach._contact_free(model, config), np.random.default_rng(0)
for _ in range(73):
    posture_goal = (draw(rng, lo, hi), draw(rng, lo, hi))
for strategy, (q0, q_goal) in (('joint', stall), ('posture', posture_goal)):
    r = Rig('wam', reach.controller_config('wam', {'fallback.strategy': strategy}), q0)
    done = reach.run_goal(r.c, q0, model.frame_placements(q_goal))[0]
    cases[f'fallback {strategy}'] = {'ran': bool(done and r.c.fallback.uses >= 1),
                                     'new': r.new()}

# the classical joint steps
for method in ('ccd', 'hal'):
    r = Rig('wam', reach.controller_config('wam', {'ik_method': method}))
    r.run(0.05)
    goal = r.c.current_pose(ee)
    goal[:3, 3] += (0.05, -0.03, 0.02)
    r.c.set_target_matrix(ee, goal)
    r.run(3.0, until=lambda c: c.goals.reached[0])
    cases[method] = {'ran': bool(r.c.goals.reached[0]), 'new': r.new()}

# Parent's control term with its settings open (desired angles, weights, psi 4) in the
# nullspace of a pose goal
r = Rig('wam', reach.controller_config('wam', {
    'nullspace.centering_gain': 0.2, 'nullspace.posture_exponent': 4.0,
    'nullspace.posture_target': list(robots.ready_pose('wam') + 0.1),
    'nullspace.posture_weights': [1.0, 0.5, 2.0, 1.0, 1.0, 0.0, 1.0]}))
r.run(0.05)
goal = r.c.current_pose(ee)
goal[:3, 3] += (0.05, -0.03, 0.02)
r.c.set_target_matrix(ee, goal)
r.run(3.0, until=lambda c: c.goals.reached[0])
cases['posture term'] = {'ran': bool(r.c.goals.reached[0]), 'new': r.new()}

# Welman's constraints (the tool on its horizontal plane) while a goal in that plane is
# tracked, on SIMON with both hands and the torso
r = Rig('simon', reach.controller_config('simon', {
    'constraints': '[{type: plane, frame: right_hand, normal: [0, 0, 1]}]',
    'fallback.strategy': 'posture'}))
r.run(0.05)
height = r.c.current_pose('right_hand')[2, 3]
goal = r.c.current_pose('right_hand')
goal[:3, 3] += (0.04, 0.03, 0.0)
r.c.set_target_matrix('right_hand', goal)
r.run(2.0, until=lambda c: c.goals.reached[0])
flat = abs(r.c.current_pose('right_hand')[2, 3] - height) < 1e-4
cases['constraints'] = {'ran': bool(flat and r.c.goals.reached[0]), 'new': r.new()}

# the collision stage's QP (a row the limited velocity would break): SIMON's hands sent to
# random poses (tools/tick_profile.py's first goal), until a tick sets the QP up
r = Rig('simon', reach.controller_config('simon'))
goal = r.model.frame_placements(r.model.random_configurations(1, np.random.default_rng(3))[0])
r.run(0.01)
for i, effector in enumerate(r.model.end_effector_names):
    r.c.set_target_matrix(effector, goal[i])
r.run(2.0, until=lambda c: c.collision.rows > 0)
cases['collision qp'] = {'ran': r.c.collision.rows > 0, 'new': r.new()}
print(json.dumps(cases))
"""


def test_no_kernel_compiles_or_loads_on_the_tick_after_construction():
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env['PYTHONPATH'] = root + os.pathsep + env.get('PYTHONPATH', '')
    done = subprocess.run([sys.executable, '-c', SCRIPT], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    cases = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(cases) == {'inputs', 'fallback joint', 'fallback posture', 'ccd', 'hal',
                          'posture term', 'constraints', 'collision qp'}
    for name, case in cases.items():
        assert case['ran'], f'{name}: its goal was not reached (or parked): the path never ran'
        new = case['new']
        assert new == {}, f'{name}: compiled on the tick (kernel: (before, after)): {new}'

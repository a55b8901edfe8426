"""
The control tick never compiles: every kernel it calls is ready when the controller is built.

A numba kernel called with argument types it has not seen compiles (tens of ms) or loads
from the cache (ms) in that call. On the 1 kHz tick that is a stall of tens of ticks, so
``ResolvedRateController._compile`` calls every kernel of the tick at construction. This
test runs a fresh interpreter (in this one, earlier tests have called the kernels
already), builds the controller, counts the signatures of every compiled function of the
package, drives the tick through its paths (a pose goal reached and confirmed on the
measured pose, a twist, an obstacle, a joint trajectory, hold and resume, an unreachable
goal parked) and counts again: no new signature may appear.
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
from ik_control.control.config import ControllerConfig
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


model = robots.robot('wam')
c = ResolvedRateController(model, ControllerConfig(fallback_strategy='off', unreachable_time=0.3))
q = robots.ready_pose('wam').copy()
before = signatures()
t = 0.0
ee = model.end_effector_names[0]


def run(seconds):
    global t, q
    for _ in range(int(seconds * 500)):
        c.set_joint_state(model.joint_names, q, t)
        command = c.update(t)
        if command is not None:
            q = command.at(0.002)[0]
        t += 0.002


run(0.05)
goal = c.current_pose(ee)
goal[:3, 3] += (0.05, -0.03, 0.02)
c.set_target_matrix(ee, goal)
run(3.0)
reached = bool(c.goal_reached[0])
c.set_twist_target(ee, [0.02, 0.0, 0.0], [0.0, 0.0, 0.1], t)
run(0.3)
c.set_obstacles([c.current_pose(ee)[:3, 3] + (0.1, 0.0, 0.0)], [0.03])
run(0.3)
c.set_obstacles(np.zeros((0, 3)), [])
c.set_joint_trajectory(model.joint_names, [1.0], [q + 0.05], None, t)
run(1.2)
c.hold()
run(0.1)
c.resume()
far = c.current_pose(ee)
far[:3, 3] += (5.0, 0.0, 0.0)
c.set_target_matrix(ee, far)
run(3.0)
after = signatures()
print(json.dumps({'reached': reached, 'parked': bool(c.parked[0]),
                  'new': {k: (before.get(k, 0), v) for k, v in after.items()
                          if v > before.get(k, 0)}}))
"""


def test_no_kernel_compiles_or_loads_on_the_tick_after_construction():
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env['PYTHONPATH'] = root + os.pathsep + env.get('PYTHONPATH', '')
    done = subprocess.run([sys.executable, '-c', SCRIPT], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result['reached'], 'the pose goal was not reached: its confirmation never ran'
    assert result['parked'], 'the far goal was not parked: the park path never ran'
    assert result['new'] == {}, f"compiled on the tick (kernel: (before, after)): {result['new']}"

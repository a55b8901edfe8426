"""
Session set-up shared by the test modules.

Hypothesis runs derandomized by default: every run (CI's included) checks the same
examples, so a red run is reproducible and never a draw. Set ``HYPOTHESIS_PROFILE=explore``
to search new examples (``make test HYPOTHESIS_PROFILE=explore``, several times before a
release); what it finds goes into the tests as ``@example``s or fixes.
"""

import os

from hypothesis import settings
from ik_control import robots
from ik_control.control.controller import ResolvedRateController
import pytest

settings.register_profile('default', derandomize=True)
settings.register_profile('explore', derandomize=False)
settings.load_profile(os.environ.get('HYPOTHESIS_PROFILE', 'default'))


@pytest.fixture(scope='session', autouse=True)
def compiled_kernels():
    """
    Compile (or load) the numba kernels once, in this process, before any node starts.

    Node subprocesses then load them from the cache instead of each compiling them for
    tens of seconds while a test waits for their first message.
    """
    model = robots.robot('wam')
    controller = ResolvedRateController(model)
    controller.set_joint_state(model.joint_names, robots.ready_pose('wam'), 0.0)
    controller.update(0.0)
    from ik_control.ros.cdr import TrajectoryReader
    TrajectoryReader()  # its construction compiles the trajectory writer's kernel too
    from ik_control.planning.collision import CollisionChecker
    checker = CollisionChecker(model, broad_phase=False)   # jt_rrt_planner's checks
    checker.config_free(robots.ready_pose('wam'))

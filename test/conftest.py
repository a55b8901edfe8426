"""
Session set-up shared by the test modules.

Hypothesis runs derandomized by default: every run (CI's included) checks the same
examples, so a red run is reproducible and never a draw. No example has a deadline: tests
don't time things, and ``make test`` runs those that start no node at nice 19, where a
test can wait seconds for a core (for the same reason a time budget whose outcome a test
asserts counts CPU time, or cannot bind: a planner's node limit, a solve that returns at
its solution). Set ``HYPOTHESIS_PROFILE=explore`` to search new examples (``make test
HYPOTHESIS_PROFILE=explore``, several times before a release); what it finds goes into the
tests as ``@example``s or fixes.

Every test of a module that starts nodes or talks DDS is marked ``nodes``
(:data:`NODE_MODULE`, read from the module's source; a module that only runs the command
line or a Python child, with no ROS in it, is not). ``make test`` runs the ``nodes`` tests
one at a time and, beside them at nice 19, the others on two pytest-xdist workers: the
node tests' real-time loops are judged by the robot's own clock, and the niced run only
takes the CPU they leave. With two node modules at once (``make test NODE_WORKERS=2``:
each module on one worker, each worker on a ROS domain of its own) 2 of 8 runs on a
2-core machine failed a timing bound under the other worker's load.
"""

import os
import re

from hypothesis import settings
from ik_control import robots
from ik_control.control.controller import ResolvedRateController
import pytest

settings.register_profile('default', derandomize=True, deadline=None)
settings.register_profile('explore', derandomize=False, deadline=None)
settings.load_profile(os.environ.get('HYPOTHESIS_PROFILE', 'default'))


def pytest_configure(config):
    """
    Give each pytest-xdist worker a ROS_DOMAIN_ID of its own, before any rclpy.init.

    The run's domain (the Makefile draws one in 1..100; unset, one drawn from the run's
    id) is the first worker's; worker k of n takes it plus 100 k / n, wrapped into
    1..100, so no two workers' nodes meet.
    """
    worker = getattr(config, 'workerinput', None)
    if worker is None:
        return
    base = os.environ.get('ROS_DOMAIN_ID', '').strip()
    base = int(base) if base else int(worker['testrunuid'], 16) % 100 + 1
    offset = int(worker['workerid'][2:]) * 100 // max(worker['workercount'], 1)
    os.environ['ROS_DOMAIN_ID'] = str((base - 1 + offset) % 100 + 1)


#: what in a test module's source says it starts nodes or talks DDS
NODE_MODULE = re.compile(r'rclpy|ros_helpers|Bringup|NodeProcess|RosTestContext|'
                         r'test_ik_controller_node')


def pytest_collection_modifyitems(config, items):
    """Mark ``nodes`` every test of a module whose source matches :data:`NODE_MODULE`."""
    starts_nodes = {}
    for item in items:
        path = str(item.path)
        if path not in starts_nodes:
            with open(path, encoding='utf-8') as f:
                starts_nodes[path] = NODE_MODULE.search(f.read()) is not None
        if starts_nodes[path]:
            item.add_marker(pytest.mark.nodes)


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

"""Session set-up shared by the test modules."""

from ik_control import robots
from ik_control.control.controller import ResolvedRateController
import pytest


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

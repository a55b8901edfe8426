"""
Handing the robot back and taking it again (the node's lifecycle), on the controller core.

``release`` in mid-motion: the windows that follow keep every limit and continue the
one before, the robot (a trajectory follower with ros2_control's saturation) never has a
setpoint clipped and comes to rest, and then nothing is commanded; goals are refused
while released; ``engage`` starts again from the robot's measured state, at rest, and a
goal is reached. Properties over random goals and release times (hypothesis).
"""

from control_rig import checks, DT, rig, Run, WAM
from hypothesis import given, HealthCheck, settings, strategies as st
from ik_control import robots
from ik_control.control.status import Status
from ik_control.validation import InputError
import numpy as np
import pytest


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(offset=st.lists(st.floats(-0.6, 0.6), min_size=7, max_size=7),
       ticks=st.integers(1, 400))
def test_release_brakes_within_the_limits_then_commands_nothing(offset, ticks):
    c, robot = rig()
    run = Run(c, robot)
    goal = WAM.frame_placements(robots.ready_pose('wam') + np.array(offset))[0]
    c.set_target_matrix('tool', goal)
    for _ in range(ticks):
        run.tick()
    c.release(run.now)
    for _ in range(2000):  # the braking windows, each within the limits (Run's checks)
        if run.tick()[1] is None:
            break
    assert c.status & Status.INACTIVE
    assert run.clamps == 0
    # nothing more commanded, and the robot comes to rest where the last window ends
    for _ in range(int(2.0 / DT)):
        assert run.tick()[1] is None
    q_rest = robot.q.copy()
    run.tick()
    np.testing.assert_allclose(robot.q, q_rest, atol=0.0)
    np.testing.assert_allclose(c.path.sample(run.now)[1], 0.0, atol=0.0)
    with pytest.raises(InputError, match='inactive'):
        c.set_target_matrix('tool', goal)
    with pytest.raises(InputError, match='inactive'):
        c.set_twist_target('tool', [0.0, 0.0, 0.01], [0.0, 0.0, 0.0], run.now)
    # engaged again: from where the robot is, at rest; a goal is reached
    c.engage()
    run.now += DT
    c.set_joint_state(WAM.joint_names, q_rest, run.now)
    command = c.update(run.now)
    np.testing.assert_allclose(command.positions[0], q_rest, atol=1e-12)
    np.testing.assert_allclose(command.velocities[0], 0.0, atol=1e-12)
    run.previous = command
    c.set_target_matrix('tool', goal)
    for _ in range(int(15.0 / DT)):
        run.tick()
        if c.goals.reached[0]:
            break
    assert c.goals.reached[0] or c.goals.parked[0]
    assert run.clamps == 0


def test_a_release_before_any_state_commands_nothing_and_engage_starts_at_the_state():
    c, robot = rig()
    c2 = type(c)(WAM, c.config)
    c2.release(0.0)
    c2.set_joint_state(WAM.joint_names, robot.q, 0.001)
    assert c2.update(0.001) is None and c2.status & Status.INACTIVE
    c2.engage()
    command = c2.update(0.002)
    np.testing.assert_allclose(command.positions[0], robot.q, atol=1e-12)
    checks(c2, WAM, command, None, False)

"""
ik_controller configurations other than the default, each on its own pair of processes.

sim_robot + ik_controller over real DDS (:class:`test_ik_controller_node.Bringup`); what
the robot does is judged from its own joint_states by pinocchio on the URDF file
(:class:`test_ik_controller_node.PinocchioFK`), not by the package's kinematics. Each
test starts its own pair, as its configuration is fixed at start-up; they run after the
module pair of test_ik_controller_node is gone.
"""

from pathlib import Path

from ik_control import robots
import numpy as np
from ros_helpers import stamp_seconds
from test_ik_controller_node import _errors, _pin_fk, _settled_command, _value, Bringup

READY = robots.ready_pose('wam')
# a finger on the WAM's tool: a joint the controller's model (urdf/wam.urdf) does not have
FINGER = ('<link name="finger"/><joint name="finger_joint" type="prismatic">'
          '<parent link="tool"/><child link="finger"/><axis xyz="0 0 1"/>'
          '<limit lower="0" upper="0.05" velocity="0.1" effort="10"/></joint>')


def _reach(bringup, offset):
    """Send the tool to the pose of ready + ``offset``; return its position, rotation error."""
    fk = _pin_fk(bringup)
    goal = fk.placement(bringup.model.joint_names, READY + np.array(offset), 'tool')
    bringup.send_pose('tool', goal)
    bringup.wait_goal('tool')
    _settled_command(bringup)
    bringup.ctx.spin_for(0.1)
    return _errors(fk.of_state(bringup.states.current(), 'tool'), goal)


def test_wam_on_a_joint_states_loop_ticks_per_state_and_reaches_a_goal():
    """
    ``loop: on_joint_states``: one tick per joint_states message, and goals are reached.

    The robot at 500 Hz, rate_hz 250: the commands' stamps (the tick times) must come a
    state period apart (median under 3 ms), where a loop at rate_hz (synchronized, timer,
    or the parameter ignored) ticks every 4 ms. A goal is then reached within 1 mm and
    10 mrad (pinocchio FK of the robot's joint_states).
    """
    bringup = Bringup('wam', 250.0, extra=['-p', 'loop:=on_joint_states'],
                      ns='/wam_on_states', sim_rate_hz=500.0)
    try:
        since = len(bringup.commands.messages)
        bringup.ctx.spin_for(1.0)
        stamps = [stamp_seconds(m) for m in bringup.commands.messages[since:]]
        interval = float(np.median(np.diff(stamps)))
        print(f'{len(stamps)} commands in 1 s, median interval {interval * 1e3:.2f} ms')
        assert interval < 0.003
        pos, rot = _reach(bringup, [0.2, -0.2, 0.1, -0.2, 0.1, 0.2, 0.3])
        assert pos < 1e-3 and rot < 1e-2, (pos, rot)
    finally:
        bringup.close()


def test_joint_states_with_joints_the_model_lacks_are_accepted_and_followed(tmp_path):
    """
    The robot reports a joint the controller's model does not have, first in its list.

    sim_robot simulates the WAM with a prismatic finger on its tool and lists
    ``finger_joint`` before the arm's joints; the controller has the plain WAM. It must
    take these states (no refusal counted) and follow them: a goal is reached (1 mm,
    10 mrad, pinocchio FK of the robot's joint_states), the finger left where it was. A
    node refusing states with unknown names counts refusals and never commands; one
    reading positions by index instead of by name is off by one joint.
    """
    text = Path(robots.urdf_path('wam')).read_text(encoding='utf-8')
    urdf = tmp_path / 'wam_with_finger.urdf'
    urdf.write_text(text.replace('</robot>', FINGER + '\n</robot>'), encoding='utf-8')
    joints = ['finger_joint', *robots.SETUPS['wam'].joints]
    bringup = Bringup('wam', 500.0, ns='/wam_extra_joint',
                      sim_robot=(str(urdf), joints, [0.02, *READY]))
    try:
        assert list(bringup.states.wait().name) == joints
        pos, rot = _reach(bringup, [0.2, -0.2, 0.1, -0.2, 0.1, 0.2, 0.3])
        assert pos < 1e-3 and rot < 1e-2, (pos, rot)
        last = bringup.states.current()
        assert last.position[0] == 0.02  # the finger: commanded by nobody
        status = bringup.diagnostic(lambda s: True)
        assert _value(status, 'refused_messages') == '0', _value(status, 'last_refusal')
    finally:
        bringup.close()


def test_a_position_mode_effector_reaches_a_position_goal_with_its_orientation_free():
    """
    ``end_effector_modes: [position]``: the tool's task is its position alone (3-D).

    The goal's position is the tool's at another configuration, its orientation that
    configuration's turned 90 degrees about x. goal_reached must come, the tool at the
    position (1 mm, pinocchio FK) with its orientation wherever the motion left it: more
    than 0.5 rad from the one sent. A node tracking the whole pose turns the tool to the
    orientation sent, or, where that is out of reach with the position, never says reached.
    """
    bringup = Bringup('wam', 500.0, extra=['-p', 'end_effector_modes:=[position]'],
                      ns='/wam_position')
    try:
        fk = _pin_fk(bringup)
        goal = fk.placement(bringup.model.joint_names,
                            READY + [0.3, -0.2, 0.2, -0.3, 0.2, 0.3, 0.4], 'tool')
        c, s = np.cos(np.pi / 2), np.sin(np.pi / 2)
        goal[:3, :3] = goal[:3, :3] @ np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])
        bringup.send_pose('tool', goal)
        bringup.wait_goal('tool')
        _settled_command(bringup)
        bringup.ctx.spin_for(0.1)
        pos, rot = _errors(fk.of_state(bringup.states.current(), 'tool'), goal)
        print(f'position error {pos * 1e3:.3f} mm, orientation from the one sent {rot:.3f} rad')
        assert pos < 1e-3
        assert rot > 0.5
    finally:
        bringup.close()


def test_the_statistics_file_times_each_part_of_every_tick_within_its_compute(tmp_path):
    """
    ``statistics_file``: every tick's compute, and its parts (input, update, publish).

    The WAM on the synchronized loop moves to a goal (reached within 1 mm and 10 mrad by
    pinocchio FK of its joint_states); after the node stops, the file holds
    per tick the time to take and parse the inputs, the controller's update and the
    command's publication. They are measured inside the tick, so in every tick their sum
    is at most its compute time; every tick that published a command updated the
    controller first; and while the arm moved, every tick published (update and publish
    both timed: a part timed in other units, outside the tick or not at all fails one of
    these).
    """
    path = tmp_path / 'stats.npz'
    bringup = Bringup('wam', 500.0, ns='/wam_statistics',
                      extra=['-p', 'loop:=synchronized', '-p', f'statistics_file:={path}'])
    try:
        pos, rot = _reach(bringup, [0.2, -0.2, 0.1, -0.2, 0.1, 0.2, 0.3])
    finally:
        bringup.close()
    assert pos < 1e-3 and rot < 1e-2, (pos, rot)  # the robot's own joint_states, by FK
    data = np.load(path)
    compute = data['compute']
    parts = np.stack([data['phase_input'], data['phase_update'], data['phase_publish']])
    print(f'{compute.size} ticks; p50 [us] compute {np.median(compute) * 1e6:.1f}, input, '
          f'update, publish {np.round(np.median(parts, axis=1) * 1e6, 1)}')
    assert compute.size > 500
    assert np.all(parts >= 0.0) and np.all(parts.sum(axis=0) <= compute)
    published = parts[2] > 0.0
    assert np.all(parts[1][published] > 0.0)
    assert published.mean() > 0.5  # a 500 Hz stream of commands while the arm moved

"""
The robot never moves faster than its limits, whatever the transport does.

Real processes over DDS: ``ik_controller`` and ``sim_robot`` on the bundled WAM with
config/wam.yaml, and between them a ``fault_relay`` (ik_control/ros/harness/fault_relay.py) that
delays, bunches, drops and reorders the commands for a few seconds, then delivers them
normally. The arm moves between two far goals all along. The robot's own joint_states
are measured as an oscilloscope would (:class:`ik_control.control.motion_meter.
MotionMeter`: speed between consecutive samples and over 10 ms spans, acceleration over
10 ms spans) against the URDF velocity limits and the acceleration limit (5 rad/s^2 in
wam.yaml, the controller's and the robot's).

* stamped trajectory windows with the robot's own saturation off, so that nothing hides a
  bad stream: within 1.05x of every limit, also while the robot and then the controller
  are stalled (SIGSTOP/SIGCONT, 50 ms), and at the goal afterwards. The run commits
  ``max_expected_latency`` 0.08 s ahead (the bound a transport's worst latency must stay
  within; the default is 0.02 s): the relay delays by up to 20 ms, its own process on a
  loaded 2-core machine adds tens of milliseconds now and then, and a stall of the
  controller that catches a window between its clock reading and the send (most often
  inside ``publish``: there about one stall in eight) delivers it 50 ms late. With 0.05 s,
  as before, 10 of 40 stalls in a row took the robot to 1.06-1.38x its acceleration limit;
* the old one-point, stamp-zero format under the same faults: beyond 1.05x -- the test
  can fail, and this is what it would catch;
* forward position and velocity commands (no stamps: a robot can only saturate them):
  within 1.05x with the robot-side saturation on, and at the goal afterwards (the
  controller keeps some headroom below the robot's limits, as it should for commands that
  arrive unevenly).
"""

import os
import signal
import time

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from ik_control import robots
from ik_control.control.motion_meter import MotionMeter
from ik_control.ros.conversions import pose_stamped
from ik_control.ros.harness import node_rig
from ik_control.ros.harness.node_process import NodeProcess
import numpy as np
import pytest
from ros_helpers import domain_id, RosTestContext, stamp_seconds
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

WAM = robots.robot('wam')
A_MAX = 5.0         # limits.max_acceleration in config/wam.yaml, both nodes [rad/s^2]
FAULT_TIME = 4.0    # seconds of faults [s]
GOAL_PERIOD = 1.0   # a new far goal this often [s]
RATIO = 1.05        # the bound on every measured ratio
LATENCY = 0.08      # max_expected_latency of the stamped windows under faults [s]
MAX_DELAY = 0.02    # the relay's longest delay, and its bunching period [s]
RATE_HZ = 500.0     # rate_hz in config/wam.yaml [Hz]
OFFSETS = np.array([0.9, -0.4, 0.7, -0.6, 0.9, 0.5, 1.2])  # the far goal's joint offsets


def _goals():
    ready = robots.ready_pose('wam')
    far = np.clip(ready + OFFSETS, WAM.lower + 0.2, WAM.upper - 0.2)
    return [WAM.frame_placements(q)[0] for q in (ready, far)]


class FaultRun:
    """Controller, relay and robot in their own namespace; the test's probe."""

    def __init__(self, name, controller_args=(), sim_args=(), relay_args=(),
                 message_type='trajectory'):
        domain_id()
        self.ns = f'/{name}'
        relay = ['-r', f'__ns:={self.ns}', '-p', 'input_topic:=controller_commands',
                 '-p', 'output_topic:=robot_commands', '-p', f'message_type:={message_type}',
                 '-p', f'fault_duration:={FAULT_TIME}', '-p', f'max_delay:={MAX_DELAY}',
                 *relay_args]
        self.pair = node_rig.Pair(
            'wam', self.ns, controller_args=['-p', 'output_topic:=controller_commands',
                                             *controller_args],
            sim_args=['-p', 'command_topic:=robot_commands', *sim_args])
        self.relay = None
        self.ctx = None
        try:
            self.pair.start()
            self.relay = NodeProcess('fault_relay', 'ik_control.ros.harness.fault_relay', relay,
                                     self.pair.env, node_rig.STOP_TIMEOUT)
            self.ctx = RosTestContext(f'{name}_probe')
            self._states = self.ctx.collect(JointState, f'{self.ns}/joint_states', 1000,
                                            raw=True)
            self.robot_status = {}  # sim_robot's diagnostics: its clamp count
            self.ctx.node.create_subscription(DiagnosticArray, f'{self.ns}/diagnostics',
                                              self._on_diagnostics, 10)
            # when each window reached a subscriber of the robot's topic (this probe, which
            # spins all along): a ratio beyond the bound with windows later than
            # max_expected_latency less a period is the transport's doing, by design
            self.lateness = []  # (stamp, reception - stamp) [s]
            if message_type == 'trajectory':
                self.ctx.node.create_subscription(
                    JointTrajectory, f'{self.ns}/robot_commands', self._on_command, 1000)
            self.pose_pub = self.ctx.node.create_publisher(
                PoseStamped, f'{self.ns}/ik_controller/tool/target_pose', 10)
            assert self.ctx.spin_until(lambda: len(self.states) > 10, node_rig.STARTUP_TIMEOUT)
            assert self.ctx.wait_for_subscribers(self.pose_pub, 1, timeout=30.0)
        except BaseException:
            self.close()
            raise

    def _on_command(self, msg, info):
        stamp = stamp_seconds(msg)
        if stamp > 0.0:
            self.lateness.append((stamp, info['received_timestamp'] * 1e-9 - stamp))

    def late_windows(self, since):
        """Describe the windows stamped after ``since`` [s] that came later than the bound."""
        late = [d for t, d in self.lateness if t >= since]
        over = [d for d in late if d > LATENCY - 1.0 / RATE_HZ]
        return (f'{len(over)} of {len(late)} windows reached the robot later than '
                f'max_expected_latency less a period (the latest {max(late, default=0):.4f} s)')

    def _on_diagnostics(self, msg):
        for status in msg.status:
            if status.name.endswith(node_rig.ROBOT_STATUS):
                self.robot_status = {kv.key: kv.value for kv in status.values}

    def clamps(self):
        """Return the robot's clamp count (its diagnostics come once a second)."""
        assert self.ctx.spin_until(lambda: 'clamps' in self.robot_status, 5.0)
        return int(self.robot_status['clamps'])

    def send(self, T):
        self.pose_pub.publish(pose_stamped(T, 'wam_base'))

    def move(self, seconds, stall=None):
        """Alternate far goals for ``seconds``; ``stall``: (process, times [s]) to SIGSTOP."""
        goals = _goals()
        start = time.monotonic()
        k = 0
        stalls = list(stall[1]) if stall else []
        while time.monotonic() - start < seconds:
            elapsed = time.monotonic() - start
            if elapsed >= k * GOAL_PERIOD:
                self.send(goals[k % 2])
                k += 1
            if stalls and elapsed >= stalls[0]:
                stalls.pop(0)
                pid = stall[0].proc.pid
                os.kill(pid, signal.SIGSTOP)
                self.ctx.spin_for(0.05)  # (its reception times stay true)
                os.kill(pid, signal.SIGCONT)
            self.ctx.spin_for(0.01)
        # and every state the robot sent meanwhile: this process takes them up to a second
        # late on a loaded machine (a stall's measure once had 282 samples of the ~600)
        self._states.current(timeout=5.0)
        return goals[(k - 1) % 2]

    @property
    def states(self):
        """Return the robot's joint_states taken so far, oldest first."""
        return self._states.messages

    def measure(self, since=0):
        """Feed the states since index ``since`` to a MotionMeter; return it."""
        meter = MotionMeter(WAM.velocity_limit, np.full(WAM.nq, A_MAX))
        for msg in self.states[since:]:
            index = [list(msg.name).index(n) for n in WAM.joint_names]
            meter.add(msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec,
                      np.asarray(msg.position)[index])
        return meter

    def reaches(self, goal, timeout=10.0):
        """Wait until the measured tool pose is within 1 mm and 10 mrad of ``goal``."""
        def close():
            msg = self.states[-1]
            index = [list(msg.name).index(n) for n in WAM.joint_names]
            T = WAM.frame_placements(np.asarray(msg.position)[index])[0]
            rot = np.arccos(np.clip((np.trace(goal[:3, :3].T @ T[:3, :3]) - 1) / 2, -1, 1))
            return np.linalg.norm(T[:3, 3] - goal[:3, 3]) < 1e-3 and rot < 1e-2
        return self.ctx.spin_until(close, timeout)

    def close(self):
        if self.relay is not None:
            self.relay.stop()
        if self.ctx is not None:
            self.ctx.close()
        return self.pair.stop()


def _run(name, **kwargs):
    run = FaultRun(name, **kwargs)
    try:
        run.since = stamp_seconds(run.states[-1])  # (the probe spins from here on)
        goal = run.move(FAULT_TIME + 0.5)
        meter = run.measure()
        print(name, meter.summary(), 'clamps', run.clamps(), run.late_windows(run.since))
        return run, goal, meter
    except BaseException:
        run.close()
        raise


def _assert_within(meter, min_samples=1000, run=None, since=0.0):
    summary = meter.summary()
    assert summary['samples'] > min_samples, summary
    late = run.late_windows(since) if run is not None else ''
    for key in ('step_speed_ratio', 'span_speed_ratio', 'span_acceleration_ratio'):
        assert summary[key] <= RATIO, (key, summary, meter.worst, late)


def test_stamped_windows_keep_the_robot_within_its_limits_under_faults_and_stalls():
    run, goal, meter = _run('faults_window', sim_args=['-p', 'enforce_limits:=false'],
                            controller_args=['-p', f'max_expected_latency:={LATENCY}'])
    try:
        _assert_within(meter, run=run, since=run.since)
        # the arm is still moving between goals, near full speed: the faults were exercised
        # (0.49 of the limit on a VM whose MuJoCo step took 62 us, the controller starved;
        # 0.2987 once in a full suite on a 2-core machine: the bound is 0.25)
        assert meter.span_speed_ratio > 0.25
        assert run.reaches(goal)
        # stalls: the robot (no joint_states, then a step in time), then the controller
        # (its next tick comes after the committed knots ran out: the path it sends
        # brakes on the last window's tail for as long, and goes on from there)
        for process in (run.pair.sim, run.pair.controller):
            n = len(run.states)
            since = stamp_seconds(run.states[-1])
            run.move(1.2, stall=(process, [0.2, 0.6, 1.0]))
            stalled = run.measure(n)
            print(f'{process.name} stalled', stalled.summary(), run.late_windows(since))
            _assert_within(stalled, min_samples=300, run=run, since=since)
        assert not run.close()
    except BaseException:
        run.close()
        raise


def test_the_old_stamp_zero_format_overspeeds_under_the_same_faults():
    run, _, meter = _run('faults_stamp_zero', controller_args=[
        '-p', 'max_expected_latency:=0.0'], sim_args=['-p', 'enforce_limits:=false'])
    assert not run.close()
    assert meter.step_speed_ratio > RATIO, meter.summary()


@pytest.mark.parametrize('interface', ['position', 'velocity'])
def test_forward_commands_are_saturated_by_the_robot_and_recover(interface):
    args = ['-p', f'command_interface:={interface}']
    # commands without time arrive unevenly: the controller keeps below the robot's limits
    # (90 % of its speed, 4 of its 5 rad/s^2) so that the robot's saturation need not
    # trim the ones that come close together, and the robot keeps up
    headroom = ['-p', 'limits.velocity_scale:=0.9', '-p', 'limits.max_acceleration:=[4.0]']
    run, goal, meter = _run(f'faults_{interface}', controller_args=args + headroom,
                            sim_args=args, message_type='array')
    try:
        _assert_within(meter)
        # delivery is normal again: the robot gets there, though re-seeds after the faults
        # (the robot lagging its unevenly arriving commands) may take a few seconds
        assert run.reaches(goal, timeout=25.0)
        assert not run.close()
    except BaseException:
        run.close()
        raise

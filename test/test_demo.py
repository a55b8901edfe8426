"""
``ik_control demo --robot wam`` end to end: nodes as processes, real DDS, summary and plot.

SIMON's demo runs in ``make demo``; here only the WAM, to keep the suite short.
"""

import importlib
import os
from pathlib import Path
import re
import signal
import struct
import subprocess
import sys
import time

from ik_control import robots
from ik_control.control.goal_state import GoalState
from ik_control.ros.harness import demo
import numpy as np
import pytest
from rclpy.serialization import deserialize_message
from ros_helpers import REPO_ROOT, ros_env, RosTestContext
from sensor_msgs.msg import JointState

DEMO_TIMEOUT = 120.0  # the demo takes ~30 s; the bound only catches a hang [s]
PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'


def _demo_command(plot, bag):
    return [sys.executable, '-m', 'ik_control.cli', 'demo', '--robot', 'wam', '--plot', plot,
            '--bag', bag]


def _parse_summary(stdout):
    """Return the rows of the summary table as dicts keyed by the column headers."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('goal '))
    header = re.split(r'\s{2,}', lines[start].strip())
    assert set(lines[start + 1].replace(' ', '')) == {'-'}
    rows = []
    for line in lines[start + 2:]:
        if not line.strip() or line.startswith(('joints inside', 'plot:')):
            break
        cells = re.split(r'\s{2,}', line.strip())
        assert len(cells) == len(header), line
        rows.append(dict(zip(header, cells)))
    return rows


def _demo_nodes():
    """Return the PIDs of demo nodes (namespace /ik_control_demo) on this test's domain."""
    found = []
    domain = 'ROS_DOMAIN_ID=' + ros_env()['ROS_DOMAIN_ID']
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open(f'/proc/{pid}/cmdline', 'rb') as f:
                cmdline = f.read().decode(errors='replace')
            with open(f'/proc/{pid}/environ', 'rb') as f:
                environ = f.read().decode(errors='replace').split('\0')
        except OSError:
            continue
        if f'__ns:={demo.NAMESPACE}' in cmdline and domain in environ:
            found.append(int(pid))
    return found


@pytest.fixture(scope='module')
def wam_demo(tmp_path_factory):
    """
    Run the demo; meanwhile record its robot's joint_states here, over DDS.

    Returns the demo's result (``returncode``, ``stdout``, ``stderr``), the plot's path,
    the run's duration [s] and the joint_states this process received: the robot's
    motion as a user's own subscriber sees it, judged without the demo's own report.
    """
    folder = tmp_path_factory.mktemp('demo')
    plot, bag = str(folder / 'wam.png'), str(folder / 'bag')
    start = time.monotonic()
    with RosTestContext('demo_observer') as ctx, open(folder / 'out.txt', 'w+') as out, \
            open(folder / 'err.txt', 'w+') as err:
        states = ctx.collect(JointState, f'{demo.NAMESPACE}/joint_states', 1000)
        proc = subprocess.Popen(_demo_command(plot, bag), env=ros_env(), cwd=REPO_ROOT,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err, text=True)
        try:
            ctx.spin_until(lambda: proc.poll() is not None, DEMO_TIMEOUT)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        out.seek(0)
        err.seek(0)
        result = subprocess.CompletedProcess(proc.args, proc.returncode, out.read(), err.read())
    return result, plot, time.monotonic() - start, states.messages, bag


def test_the_demos_bag_reads_back_with_every_goal_and_the_robots_motion(wam_demo):
    """``ik_control demo --bag``: a rosbag2 that rosbags reads, holding what the run did."""
    from rosbags.rosbag2 import Reader

    result, _, _, observed, bag = wam_demo
    assert result.returncode == 0, result.stderr[-3000:]
    ns, ctl = demo.NAMESPACE, f'{demo.NAMESPACE}/ik_controller'
    messages = {}
    with Reader(Path(bag)) as reader:
        for connection, stamp, raw in reader.messages():
            # the CDR as DDS carried it (Fast-CDR's trailing padding included, which
            # rosbags' own decoder refuses): decoded by rclpy, as ros2 bag play would
            package, _, name = connection.msgtype.split('/')
            cls = getattr(importlib.import_module(f'{package}.msg'), name)
            messages.setdefault(connection.topic, []).append(deserialize_message(raw, cls))
    steps = demo.wam_steps(robots.robot('wam'))
    poses = [s for s in steps if s.targets and not s.twist]
    assert len(messages[f'{ctl}/tool/target_pose']) == len(poses)
    reached = [m.data for m in messages[f'{ctl}/tool/goal_reached']]
    converged = sum(row['result'] == 'converged' for row in _parse_summary(result.stdout))
    assert reached.count(True) >= converged > 0
    assert GoalState.REACHED in [m.data for m in messages[f'{ctl}/tool/goal_state']]
    # the robot's motion: about as many joint_states as this process saw over DDS
    states = messages[f'{ns}/joint_states']
    assert len(states) > 0.9 * len(observed) > 1000
    assert len(messages[f'{ns}/joint_trajectory_controller/joint_trajectory']) > 1000


def test_demo_exits_0_and_every_goal_behaves_as_expected(wam_demo):
    result = wam_demo[0]
    assert result.returncode == 0, result.stderr[-3000:]
    rows = _parse_summary(result.stdout)
    steps = demo.wam_steps(robots.robot('wam'))
    assert [r['goal'] for r in rows] == [s.name for s in steps]
    for step, row in zip(steps, rows):
        if step.twist:
            assert row['result'].startswith('twist'), row
            continue
        expected = step.expect['tool']
        assert row['result'] == expected, row
        if expected == demo.CONVERGED:
            assert float(row['position error [mm]']) < 1.0, row
            assert float(row['orientation error [mrad]']) < 10.0, row
            assert float(row['time [s]']) < demo.GOAL_TIMEOUT, row
    unreachable = [r for r in rows if r['goal'].startswith('out of reach')]
    assert len(unreachable) == 1
    assert unreachable[0]['result'] == 'unreachable (holding closest pose)'
    assert float(unreachable[0]['position error [mm]']) > 500.0  # it really is out of reach
    assert 'joints inside their limits throughout: yes' in result.stdout


def test_the_robot_stays_inside_its_urdf_limits_as_measured_by_another_subscriber(wam_demo):
    """
    The demo's robot, judged from its joint_states as this process received them.

    Positions inside the URDF's limits (pinocchio's model of urdf/wam.urdf, not the
    package's), speeds over 10 ms spans within 1.05x its velocity limits
    (MotionMeter), and the motion real: hundreds of samples, the arm moved over 1 rad.
    A demo whose own check were wrong (or skipped) could print 'yes' over a robot that
    left its limits; this test would see it.
    """
    import pinocchio as pin
    from ik_control.control.motion_meter import MotionMeter
    model = pin.buildModelFromUrdf(robots.urdf_path('wam'))
    names = [model.names[j] for j in range(1, model.njoints)]
    lower, upper = model.lowerPositionLimit, model.upperPositionLimit
    msgs = wam_demo[3]
    assert len(msgs) > 1000, f'{len(msgs)} joint_states received'
    q = np.array([[dict(zip(m.name, m.position))[n] for n in names] for m in msgs])
    t = np.array([m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in msgs])
    assert np.all(q >= lower) and np.all(q <= upper), (
        f'closest to a bound: {np.min(np.minimum(q - lower, upper - q)):.3g} rad')
    assert np.max(np.ptp(q, axis=0)) > 1.0
    meter = MotionMeter(model.velocityLimit, np.full(len(names), np.inf))
    for stamp, positions in zip(t, q):
        meter.add(stamp, positions)
    print(f'{len(msgs)} joint_states: span speed {meter.span_speed_ratio:.3f} of the limit')
    assert meter.span_speed_ratio <= 1.05


def test_demo_writes_a_png_plot(wam_demo):
    plot = wam_demo[1]
    with open(plot, 'rb') as f:
        data = f.read()
    assert data[:8] == PNG_SIGNATURE
    assert data[12:16] == b'IHDR'
    width, height = struct.unpack('>II', data[16:24])
    assert width >= 800 and height >= 800
    assert 30_000 < len(data) < 5_000_000


def test_demo_leaves_no_node_running(wam_demo):
    assert _demo_nodes() == []


def test_demo_ctrl_c_stops_the_nodes(tmp_path):
    err = open(tmp_path / 'stderr.txt', 'w+')
    proc = subprocess.Popen(_demo_command(str(tmp_path / 'x.png'), str(tmp_path / 'bag')),
                            env=ros_env(), cwd=REPO_ROOT, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + DEMO_TIMEOUT
        while 'nodes up' not in (tmp_path / 'stderr.txt').read_text():
            assert proc.poll() is None, (tmp_path / 'stderr.txt').read_text()
            assert time.monotonic() < deadline, 'the demo did not start its nodes'
            time.sleep(0.2)
        assert len(_demo_nodes()) == 2
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=30.0)
        assert code == demo.EXIT_INTERRUPTED, (tmp_path / 'stderr.txt').read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        err.close()
    assert _demo_nodes() == []
    assert not (tmp_path / 'x.png').exists()


def test_the_demos_twist_speed_reads_the_speed_kept_through_one_stall_and_catch_up():
    """A 0.15 s stall and its catch-up leave the reading at the speed the arm keeps."""
    rng = np.random.default_rng(3)
    t = np.cumsum(rng.uniform(0.002, 0.006, 200))  # joint_states stamps, jittered [s]
    speed = 0.1  # [m/s]
    x = speed * t
    stall = (t > 0.3) & (t < 0.45)
    x[stall] = speed * 0.3  # the arm stands, then catches up at once
    P = np.column_stack([np.zeros_like(t), x, np.zeros_like(t)])
    v = demo.chord_velocity(t, P, demo.TWIST_CHORD)
    assert v[1] == pytest.approx(speed, rel=0.05)
    # an arm moving twice as fast reads twice; samples spanning less than a chord: NaN
    assert demo.chord_velocity(t, 2.0 * P, demo.TWIST_CHORD)[1] == pytest.approx(2 * speed,
                                                                                 rel=0.05)
    assert np.isnan(demo.chord_velocity(t[:5], P[:5], demo.TWIST_CHORD)).all()

"""
``ik_control demo --robot wam`` end to end: nodes as processes, real DDS, summary and plot.

SIMON's demo runs in ``make demo``; here only the WAM, to keep the suite short.
"""

import os
import re
import signal
import struct
import subprocess
import sys
import time

from ik_control import robots
from ik_control.ros import demo
import pytest
from ros_helpers import REPO_ROOT, ros_env

DEMO_TIMEOUT = 120.0  # the demo takes ~30 s; the bound only catches a hang [s]
PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'


def _demo_command(plot):
    return [sys.executable, '-m', 'ik_control.cli', 'demo', '--robot', 'wam', '--plot', plot]


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
    plot = str(tmp_path_factory.mktemp('demo') / 'wam.png')
    start = time.monotonic()
    result = subprocess.run(_demo_command(plot), env=ros_env(), cwd=REPO_ROOT,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=DEMO_TIMEOUT)
    return result, plot, time.monotonic() - start


def test_demo_exits_0_and_every_goal_behaves_as_expected(wam_demo):
    result, _, _ = wam_demo
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


def test_demo_writes_a_png_plot(wam_demo):
    _, plot, _ = wam_demo
    with open(plot, 'rb') as f:
        data = f.read()
    assert data[:8] == PNG_SIGNATURE
    assert data[12:16] == b'IHDR'
    width, height = struct.unpack('>II', data[16:24])
    assert width >= 800 and height >= 800
    assert 30_000 < len(data) < 5_000_000


def test_demo_leaves_no_node_running(wam_demo):
    if not os.path.isdir('/proc'):
        pytest.skip('needs /proc')
    assert _demo_nodes() == []


def test_demo_ctrl_c_stops_the_nodes(tmp_path):
    if not os.path.isdir('/proc'):
        pytest.skip('needs /proc')
    err = open(tmp_path / 'stderr.txt', 'w+')
    proc = subprocess.Popen(_demo_command(str(tmp_path / 'x.png')), env=ros_env(),
                            cwd=REPO_ROOT, stdin=subprocess.DEVNULL,
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

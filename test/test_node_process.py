"""The harness's view of a node process: the CPU time it has used (bench loop's CPU share)."""

import os
import subprocess
import sys
import time

from ik_control.ros.harness.node_process import cpu_seconds

BURN = 0.5  # CPU time the child spends before it sleeps [s]
TICK = 0.02  # two clock ticks of /proc/<pid>/stat (100 Hz) [s]


def test_cpu_seconds_of_this_process_is_its_process_time():
    for _ in range(200000):  # use some CPU, so that a zero cannot pass
        pass
    before = time.process_time()
    measured = cpu_seconds(os.getpid())
    after = time.process_time()
    assert before > 0.0
    assert before - TICK <= measured <= after + TICK, (before, measured, after)


def test_cpu_seconds_counts_a_child_that_burns_then_sleeps_and_none_when_it_is_gone():
    code = ('import time\n'
            f'while time.process_time() < {BURN}:\n'
            '    pass\n'
            'time.sleep(30)\n')
    child = subprocess.Popen([sys.executable, '-c', code])
    try:
        deadline = time.monotonic() + 30.0
        used = 0.0
        while time.monotonic() < deadline:
            used = cpu_seconds(child.pid)
            if used >= BURN - TICK:
                break
            time.sleep(0.05)
        assert used >= BURN - TICK, used
        time.sleep(0.3)  # asleep now: its CPU time stays where it stopped
        assert cpu_seconds(child.pid) <= BURN + 0.2
    finally:
        child.kill()
        child.wait()
    assert cpu_seconds(child.pid) is None

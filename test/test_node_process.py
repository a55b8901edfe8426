"""
The harness's view of node processes: CPU time, and the environment they start in.

The CPU time a node has used gives bench loop's CPU share; the environment keeps them on
this host without Fast DDS shared memory.
"""

import os
import subprocess
import sys
import time

from ik_control import robots
from ik_control.ros.harness.node_process import cpu_seconds, discovery_summary, \
    node_environment
import pytest

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


@pytest.fixture
def bare_environment(monkeypatch):
    """Give the environment of a user who set none of the DDS variables."""
    for name in ('ROS_AUTOMATIC_DISCOVERY_RANGE', 'RMW_IMPLEMENTATION',
                 'FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE'):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_nodes_on_this_host_get_the_udp_loopback_profile_instead_of_shared_memory(
        bare_environment):
    env = node_environment()
    # rmw_fastrtps's LOCALHOST adds the shared-memory transport whatever the profile says:
    # the nodes run at SUBNET, kept on this host by the profile's loopback-only transport
    assert env['FASTDDS_DEFAULT_PROFILES_FILE'] == robots.data_path(
        'config', 'fastdds_udp_loopback.xml')
    assert env['ROS_AUTOMATIC_DISCOVERY_RANGE'] == 'SUBNET'
    assert os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] == 'LOCALHOST'  # this process's own
    with open(env['FASTDDS_DEFAULT_PROFILES_FILE'], encoding='utf-8') as stream:
        profile = stream.read()
    assert '<useBuiltinTransports>false</useBuiltinTransports>' in profile
    assert '<address>127.0.0.1</address></interfaceWhiteList>' in profile
    assert 'UDP loopback' in discovery_summary(env)


@pytest.mark.parametrize('name, value', [
    ('FASTDDS_DEFAULT_PROFILES_FILE', '/etc/my_profile.xml'),
    ('FASTRTPS_DEFAULT_PROFILES_FILE', '/etc/my_profile.xml'),
    ('RMW_IMPLEMENTATION', 'rmw_cyclonedds_cpp'),
    ('ROS_AUTOMATIC_DISCOVERY_RANGE', 'SUBNET'),
])
def test_a_users_own_dds_choice_is_left_alone(bare_environment, name, value):
    bare_environment.setenv(name, value)
    env = node_environment()
    assert env.get('FASTDDS_DEFAULT_PROFILES_FILE') == os.environ.get(
        'FASTDDS_DEFAULT_PROFILES_FILE')
    assert env['ROS_AUTOMATIC_DISCOVERY_RANGE'] == os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE']
    assert env[name] == value
    assert 'UDP loopback' not in discovery_summary(env)

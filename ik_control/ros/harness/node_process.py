"""Nodes as child processes (demo, fuzz and soak benchmarks): start, watch, stop."""

import os
import signal
import socket
import subprocess
import sys
import tempfile

from ik_control import robots


def _die_with_parent():
    """Ask Linux to send SIGINT to this child when its parent dies (no orphaned nodes)."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGINT)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


#: the Fast DDS profile of the nodes started here: this host only, UDP, no shared memory
LOOPBACK_PROFILE = ('config', 'fastdds_udp_loopback.xml')
_FAST_DDS = ('', 'rmw_fastrtps_cpp', 'rmw_fastrtps_dynamic_cpp')
_PROFILE_VARIABLES = ('FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE')


def node_environment():
    """
    Return the nodes' environment: the user's, discovery on localhost, faulthandler on.

    Discovery stays on this host unless ``ROS_AUTOMATIC_DISCOVERY_RANGE`` says otherwise
    (this process too is set to LOCALHOST). Under Fast DDS, for which rmw_fastrtps's
    LOCALHOST always adds the shared-memory transport, the nodes instead get
    :data:`LOOPBACK_PROFILE` with range SUBNET: the same reach over UDP on 127.0.0.1. A
    node SIGKILLed while it held a shared-memory port's lock blocks every later writer into
    that port for good (the controller's command publisher, stuck for over 30 s after the
    robot was killed; docs/command_stream.md). A profile of the user's own
    (``FASTDDS_DEFAULT_PROFILES_FILE``) or another ``RMW_IMPLEMENTATION`` is left alone.
    """
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    env = dict(os.environ)
    env.setdefault('RCUTILS_LOGGING_BUFFERED_STREAM', '0')
    env.setdefault('PYTHONFAULTHANDLER', '1')  # a fatal signal prints every thread's stack
    if (env['ROS_AUTOMATIC_DISCOVERY_RANGE'] == 'LOCALHOST'
            and env.get('RMW_IMPLEMENTATION', '') in _FAST_DDS
            and not any(env.get(name) for name in _PROFILE_VARIABLES)):
        env['FASTDDS_DEFAULT_PROFILES_FILE'] = robots.data_path(*LOOPBACK_PROFILE)
        env['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'SUBNET'  # the profile keeps it on this host
    return env


def discovery_summary(env):
    """Say in words how nodes started with ``env`` find their peers (for a start-up line)."""
    if env.get('FASTDDS_DEFAULT_PROFILES_FILE', '').endswith(LOOPBACK_PROFILE[-1]):
        return 'discovery on this host, UDP loopback without shared memory'
    return f"discovery {env['ROS_AUTOMATIC_DISCOVERY_RANGE']}"


def free_port(host='127.0.0.1'):
    """Return a TCP port of ``host`` that nothing listens on now (the system's choice)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def rss_kib(pid):
    """Resident set size [KiB] of process ``pid`` from ``/proc/<pid>/status`` (None if gone)."""
    try:
        with open(f'/proc/{pid}/status', encoding='ascii') as stream:
            for line in stream:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def cpu_seconds(pid):
    """
    CPU time [s] process ``pid`` has used, every thread, user and system (None if gone).

    ``utime + stime`` of ``/proc/<pid>/stat`` (fields 14 and 15, in clock ticks).
    """
    try:
        with open(f'/proc/{pid}/stat', encoding='ascii') as stream:
            fields = stream.read().rpartition(')')[2].split()  # after the command name
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def _read(stream):
    stream.flush()
    stream.seek(0)
    return stream.read()


class NodeProcess:
    """
    A node started as ``sys.executable -m module --ros-args ...``; output to temp files.

    No pipe can fill up; :meth:`stop` sends SIGINT, then SIGKILL after ``stop_timeout``
    [s]. The one way the harnesses and the tests start nodes (the tests' ``ros_helpers``
    only fill in their domain and directory).
    """

    def __init__(self, name, module, ros_args, env, stop_timeout=5.0, cwd=None):
        """Start the process (in ``cwd``, default this one's) with environment ``env``."""
        self.name = name
        self.stop_timeout = stop_timeout
        self.args = [sys.executable, '-m', module, '--ros-args', *ros_args]
        self._err = tempfile.TemporaryFile(mode='w+')
        self._out = tempfile.TemporaryFile(mode='w+')
        self.proc = subprocess.Popen(
            self.args, env=env, cwd=cwd,
            stdin=subprocess.DEVNULL, stdout=self._out, stderr=self._err,
            preexec_fn=_die_with_parent if sys.platform.startswith('linux') else None)

    def __enter__(self):
        """Return self."""
        return self

    def __exit__(self, *exc):
        """Stop the process."""
        self.stop()

    @property
    def returncode(self):
        """Exit code, or None while running."""
        return self.proc.poll()

    @property
    def stdout(self):
        """Everything written to stdout so far."""
        return _read(self._out)

    @property
    def stderr(self):
        """Everything written to stderr so far."""
        return _read(self._err)

    def wait(self, timeout=10.0):
        """
        Wait for the process to exit by itself; return its exit code.

        Still running after ``timeout`` [s]: it is aborted (SIGABRT: with
        ``PYTHONFAULTHANDLER`` set it prints where every thread was) and an
        AssertionError carries its stderr.
        """
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._end(signal.SIGABRT, 5.0)
            raise AssertionError(f'{" ".join(self.args)} still running after {timeout} s; '
                                 f'its stderr, and its stacks when aborted:\n'
                                 f'{self.stderr[-6000:]}') from None

    @property
    def pid(self):
        """Process id."""
        return self.proc.pid

    def alive(self):
        """Return True while the process runs."""
        return self.proc.poll() is None

    def rss_kib(self):
        """Resident set size [KiB], or None when the process is gone."""
        return rss_kib(self.proc.pid) if self.alive() else None

    def cpu_seconds(self):
        """CPU time [s] used so far (:func:`cpu_seconds`), or None when the process is gone."""
        return cpu_seconds(self.proc.pid) if self.alive() else None

    def output_tail(self, lines=20):
        """Return the last ``lines`` lines of the process's stderr and stdout."""
        text = self.stderr.splitlines() + self.stdout.splitlines()
        return '\n'.join(text[-lines:])

    def kill(self):
        """SIGKILL (a crash, as far as the other nodes can tell); return the exit code."""
        if self.alive():
            self.proc.kill()
        return self.proc.wait()

    def stop(self, grace=0.0):
        """Wait ``grace`` [s] for an exit, send SIGINT, then SIGKILL; return the exit code."""
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
        if self.alive():
            self._end(signal.SIGINT, self.stop_timeout)
        return self.proc.returncode

    def _end(self, sig, timeout):
        """Send ``sig``, wait up to ``timeout`` [s] for the exit, then SIGKILL."""
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

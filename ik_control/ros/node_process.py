"""Nodes as child processes (demo, fuzz and soak benchmarks): start, watch, stop."""

import os
import signal
import subprocess
import sys
import tempfile


def _die_with_parent():
    """Ask Linux to send SIGINT to this child when its parent dies (no orphaned nodes)."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGINT)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def node_environment():
    """Return the environment of the nodes: the user's, discovery on localhost by default."""
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    env = dict(os.environ)
    env.setdefault('RCUTILS_LOGGING_BUFFERED_STREAM', '0')
    return env


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


class NodeProcess:
    """
    A node started as ``sys.executable -m module --ros-args ...``; output to temp files.

    :meth:`stop` sends SIGINT, then SIGKILL after ``stop_timeout`` [s].
    """

    def __init__(self, name, module, ros_args, env, stop_timeout=5.0):
        """Start the process."""
        self.name = name
        self.stop_timeout = stop_timeout
        self._err = tempfile.TemporaryFile(mode='w+')
        self._out = tempfile.TemporaryFile(mode='w+')
        self.proc = subprocess.Popen(
            [sys.executable, '-m', module, '--ros-args', *ros_args], env=env,
            stdin=subprocess.DEVNULL, stdout=self._out, stderr=self._err,
            preexec_fn=_die_with_parent if sys.platform.startswith('linux') else None)

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

    def output_tail(self, lines=20):
        """Return the last ``lines`` lines of the process's stderr and stdout."""
        text = []
        for f in (self._err, self._out):
            f.flush()
            f.seek(0)
            text += f.read().splitlines()
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
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

"""
A control loop for 1 kHz in Python: absolute deadlines, polled subscriptions, RT priority.

rclpy's executors spend several hundred microseconds per callback and wake timers late
under load (measured on this project's 2-core machines: a 1 kHz timer in a
SingleThreadedExecutor reached 340-620 Hz beside two other nodes; the EventsExecutor's
timers stalled beside subscriptions). :class:`RealtimeLoop` therefore runs the tick in the
main thread itself:

* the hot subscriptions belong to a :class:`PolledGroup` that executors never serve; the
  loop takes their messages directly (``take_message``, ~4 us when empty);
* ticks start at absolute deadlines ``t0 + k period`` (sleep, then poll the clock for the
  last ``spin_margin`` seconds: sleep wakes 60-220 us late on these machines). With a
  ``trigger`` subscription and ``synchronize``, the deadlines are phase-locked to the
  trigger's messages (:class:`~ik_control.control.phase_lock.PhaseLock`), so a tick comes
  just after the state it uses arrived, while its period stays steady. With a
  ``trigger`` and no ``synchronize``, each message starts a tick instead, or the deadline
  ``last tick + 1.5 period`` if none comes (so a silent robot is noticed);
* everything else (services, parameters, low-rate timers) is served by the executor in a
  second thread, which waits in ``rcl_wait`` without the GIL; when it runs Python, the
  GIL's switch interval (:data:`SWITCH_INTERVAL`) bounds how long the loop waits. (An
  ``executor.spin_once(0)`` in the loop cost ~200 us every time: the p99 jitter.);
* the objects that exist at start-up are frozen out of the garbage collector
  (``gc.freeze``): a full collection over them stalled the loop for milliseconds;
* with ``priority > 0`` the loop's thread asks for SCHED_FIFO at that priority; if the
  OS refuses, it says so and runs on;
* a watchdog thread says once when a tick has not returned for :data:`STUCK_TICK` (a
  DDS write that never returns: a peer killed while it held a Fast DDS shared-memory
  port's lock blocks every writer into that port for good), and once when ticks resume.
  Nothing else can run meanwhile (the tick holds the node's lock), so it logs to the
  console; a robot on trajectory commands follows the last window to rest.

Each tick's start time, compute time and the age of the state it used are kept in ring
buffers for the diagnostics and the ``bench loop`` figures.
"""

import gc
import os
import sys
import threading
import time

from ik_control.control.phase_lock import PhaseLock
import numpy as np
from rclpy.callback_groups import CallbackGroup
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy

STATS_SIZE = 1 << 16
#: the parts of a controller tick timed in its LoopStats (statistics_file, bench loop):
#: taking and parsing goals and joint_states, the controller's update, publishing the
#: command; their indices in LoopStats.phase
TICK_PHASES = ('input', 'update', 'publish')
INPUT_PHASE, UPDATE_PHASE, PUBLISH_PHASE = range(len(TICK_PHASES))
CLOCK_CHECK_PERIOD = 1.0  # [s] how often the system clock offset is measured again
SWITCH_INTERVAL = 1e-4  # [s] the longest the loop waits for the GIL (Python's default 5 ms)
#: A loop triggered by joint_states ticks on its own this many periods [-] after its last
#: tick when no message came (a lost or late message must not stop the commands, nor a
#: message a little late make two ticks): between one period and two.
TRIGGER_DEADLINE_PERIODS = 1.5
STUCK_TICK = 0.5  # [s] a tick running this long is reported as stuck (the watchdog)
WATCHDOG_PERIOD = 0.1  # [s] how often the watchdog looks


class PolledGroup(CallbackGroup):
    """A callback group no executor serves: its subscriptions are read with :func:`take_all`."""

    def can_execute(self, entity):
        """Never: the loop takes these messages itself."""
        return False

    def beginning_execution(self, entity):
        """Never start an execution."""
        return False

    def ending_execution(self, entity):
        """Nothing to release."""


def take_all(subscription, with_info=False):
    """
    Return every message waiting on ``subscription`` (oldest first), without blocking.

    With ``with_info``, (message, info) pairs: info is rclpy's MessageInfo dict, whose
    ``source_timestamp`` [ns, system clock] says when the publisher sent the message.
    """
    messages = []
    with subscription.handle:
        while True:
            taken = subscription.handle.take_message(subscription.msg_type, subscription.raw)
            if taken is None:
                return messages
            messages.append(taken if with_info else taken[0])


def take_latest(subscription):
    """Return the newest message waiting on ``subscription`` (older ones dropped), or None."""
    latest = None
    with subscription.handle:
        while True:
            taken = subscription.handle.take_message(subscription.msg_type, subscription.raw)
            if taken is None:
                return latest
            latest = taken[0]


class LoopStats:
    """
    Ring buffers of tick start [s], compute [s] and trigger-message age [s].

    ``phases``: names of the parts of a tick's compute whose durations [s] the tick
    writes to :attr:`phase` (one value each) before it is recorded: a profile of every
    tick as it runs, at the cost of a clock reading per part.
    """

    def __init__(self, size=STATS_SIZE, phases=()):
        """Allocate the buffers."""
        self.start = np.zeros(size)
        self.compute = np.zeros(size)
        self.age = np.full(size, np.nan)
        self.phase_names = tuple(phases)
        self.phase = np.zeros(len(self.phase_names))  # this tick's, filled by the tick
        self.phases = np.zeros((size, len(self.phase_names)))
        self.count = 0

    declined = False  # the caller declined this call (a refused state): not a tick

    def record(self, start, compute, age):
        """Store one tick (and its :attr:`phase` durations, then zeroed), unless declined."""
        if self.declined:
            self.declined = False
            return
        i = self.count % self.start.size
        self.start[i] = start
        self.compute[i] = compute
        self.age[i] = age
        self.phases[i] = self.phase
        self.phase[:] = 0.0
        self.count += 1

    def arrays(self, last=None):
        """Return the buffered ticks (``last`` ones only) in time order: start, compute, age."""
        order = self._order(last)
        return self.start[order], self.compute[order], self.age[order]

    def _order(self, last):
        size = self.start.size
        n = min(self.count, size if last is None else min(last, size))
        return np.arange(self.count - n, self.count) % size

    def save(self, path):
        """Write the buffered ticks to ``path`` (.npz: start, compute, age, phase [s])."""
        start, compute, age = self.arrays()
        phases = self.phases[self._order(None)]
        np.savez(path, start=start, compute=compute, age=age,
                 **{f'phase_{name}': phases[:, k] for k, name in enumerate(self.phase_names)})

    def summary(self, period, last=None):
        """Return :func:`summarize` of the buffered ticks (the ``last`` ones only)."""
        start, compute, age = self.arrays(last)
        return summarize(start, compute, age, period)


def summarize(start, compute, age, period, phases=None):
    """
    Return rate [Hz], period jitter, compute and age percentiles [us] of ticks (in s).

    ``phases``: optional ``{name: durations [s] per tick}`` (:class:`LoopStats`), whose
    percentiles are given as ``<name>_us_p50`` and so on.
    """
    if start.size < 3:
        return {}
    jitter = np.abs(np.diff(start) - period) * 1e6
    compute = compute * 1e6
    age = age[~np.isnan(age)] * 1e6
    out = {'ticks': int(start.size),
           'rate_hz': float((start.size - 1) / (start[-1] - start[0]))}
    parts = [(name, values * 1e6) for name, values in (phases or {}).items()]
    for name, values in [('jitter', jitter), ('compute', compute), ('latency', age)] + parts:
        if values.size:
            p50, p99, p999 = np.percentile(values, [50, 99, 99.9])
            out.update({f'{name}_us_p50': float(p50), f'{name}_us_p99': float(p99),
                        f'{name}_us_p999': float(p999), f'{name}_us_max': float(values.max())})
    return out


def set_realtime_priority(priority, logger):
    """Ask for SCHED_FIFO at ``priority`` (1-98); log and carry on if refused."""
    if priority <= 0:
        return False
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        return True
    except (AttributeError, OSError) as exc:
        logger.warn(f'realtime priority {priority} refused ({exc}); running with normal '
                    'scheduling: expect more jitter (see README, real-time set-up)')
        return False


class RealtimeLoop:
    """
    Run ``tick(message)`` every ``period`` seconds (see module docstring).

    ``trigger`` is a subscription in a :class:`PolledGroup` (or None: fixed-rate ticks
    with no message); ``tick`` receives the newest message taken from it (or None when
    none came since the last tick) and returns the age [s] of the data it used (or None).
    With ``synchronize`` the ticks keep a fixed period whose phase follows the trigger's
    messages (:class:`~ik_control.control.phase_lock.PhaseLock`); without it, each
    message starts a tick. Scheduling uses ``time.perf_counter``.
    """

    def __init__(self, node, executor, period, tick, trigger=None, priority=0,
                 spin_margin=2e-4, stats=None, synchronize=False):
        """Store the loop's parts; nothing runs until :meth:`run`."""
        self.node = node
        self.executor = executor
        self.period = period
        self.tick = tick
        self.trigger = trigger
        self.priority = priority
        self.spin_margin = spin_margin
        self.stats = LoopStats() if stats is None else stats
        self.phase_lock = PhaseLock(period) if synchronize and trigger is not None else None
        self._stop = False
        self._error = None
        self._tick_start = None  # perf_counter time the running tick began; None between

    def stop(self):
        """Make :meth:`run` return after the current tick."""
        self._stop = True

    def _wait_trigger(self, wait_set, context, deadline):
        """Block until the trigger has a message or ``deadline`` (perf_counter seconds)."""
        timeout = max(0.0, deadline - time.perf_counter())
        with self.trigger.handle, context.handle:
            wait_set.clear_entities()
            wait_set.add_subscription(self.trigger.handle)
            wait_set.wait(int(timeout * 1e9))

    def _sleep_until(self, deadline):
        remaining = deadline - time.perf_counter() - self.spin_margin
        if remaining > 0:
            time.sleep(remaining)
        while time.perf_counter() < deadline:
            pass

    def run(self):
        """Loop until rclpy shuts down or :meth:`stop` is called."""
        # the objects of start-up (rclpy, numba, pinocchio: ~10^6) leave the collector's
        # reach: a full collection over them stalled the loop for tens of milliseconds
        gc.collect()
        gc.freeze()
        # the executor serves everything else from a thread that mostly waits in rcl_wait
        # (no GIL); when it runs Python, the loop gets the GIL back within 100 us
        sys.setswitchinterval(SWITCH_INTERVAL)
        server = threading.Thread(target=self._serve, name='executor', daemon=True)
        server.start()  # before the priority: threads inherit it
        threading.Thread(target=self._watch, name='watchdog', daemon=True).start()
        set_realtime_priority(self.priority, self.node.get_logger())
        try:
            self._run()
        finally:
            self._stop = True
            server.join(timeout=2.0)

    def _run(self):
        context = self.node.context
        triggered = self.trigger is not None and self.phase_lock is None
        wait_set = _rclpy.WaitSet(1, 0, 0, 0, 0, 0, context.handle) if triggered else None
        period = self.period
        next_tick = time.perf_counter() + period
        next_clock_check = time.perf_counter() + CLOCK_CHECK_PERIOD
        clock_offset = time.time() - time.perf_counter()  # system clock - perf_counter [s]
        while context.ok() and not self._stop:
            info = None
            if triggered:
                self._wait_trigger(wait_set, context, next_tick)
                message = take_latest(self.trigger)
            else:
                self._sleep_until(next_tick)
                message = None
                if self.trigger is not None:
                    taken = take_all(self.trigger, with_info=True)
                    if taken:
                        message, info = taken[-1]
                        for _, older in taken[:-1]:  # overtaken: their delays count too
                            self.phase_lock.delay(1e-9 * older['source_timestamp'],
                                                  1e-9 * older['received_timestamp'])
            start = self._tick_start = time.perf_counter()
            try:
                age = self.tick(message)
            except Exception:  # noqa: B902 - a shutdown mid-tick invalidates the publishers
                if context.ok():
                    raise
                return
            end = time.perf_counter()
            self._tick_start = None
            self.stats.record(start, end - start, np.nan if age is None else age)
            if triggered:
                next_tick = start + TRIGGER_DEADLINE_PERIODS * period
            else:
                shift = 0.0
                if info is not None:
                    shift = self.phase_lock.observe(next_tick + clock_offset,
                                                    1e-9 * info['source_timestamp'],
                                                    1e-9 * info['received_timestamp'])
                next_tick += period + shift
                if end - next_tick > period:  # far behind: resynchronise, don't burst
                    next_tick = end + period
            if end >= next_clock_check:  # the system clock may be slewed (NTP)
                next_clock_check = end + CLOCK_CHECK_PERIOD
                clock_offset = time.time() - time.perf_counter()
        # the executor thread stops the loop when a callback raised: raise it here
        if self._error is not None and context.ok():
            raise self._error

    def _watch(self):
        """Log once when a tick has run :data:`STUCK_TICK`, once when ticks resume."""
        logger = self.node.get_logger()
        stuck = None  # start of the tick reported stuck
        while not self._stop:
            time.sleep(WATCHDOG_PERIOD)
            start = self._tick_start
            if start is not None and start != stuck and time.perf_counter() - start > STUCK_TICK:
                stuck = start
                logger.error(
                    f'the control tick has not returned for {STUCK_TICK:g} s: nothing it '
                    'publishes goes out (a publish that never returns: a peer killed while '
                    'it held a Fast DDS shared-memory lock blocks it for good; use UDP, '
                    'see docs/command_stream.md "Crashed peers"); a robot on trajectory '
                    'commands follows the last window to rest')
            elif stuck is not None and start != stuck:
                logger.info(f'control ticks resumed (the stuck tick ran up to '
                            f'{time.perf_counter() - stuck:.1f} s)')
                stuck = None

    def _serve(self):
        """Run the executor (services, parameters, timers) until the loop ends."""
        context = self.node.context
        try:
            while context.ok() and not self._stop:
                self.executor.spin_once(timeout_sec=0.5)  # returns at once on any event
        except Exception as exc:  # noqa: B902 - handed to the loop, which raises it
            if context.ok():
                self._error = exc
            self._stop = True

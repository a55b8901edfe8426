"""
The inbox of a control loop: inputs from any thread, applied by the tick at its own time.

Inputs (goal topics, an action's goals and cancels, services) arrive on the executor's
thread while the tick runs on another. Instead of each handler taking the tick's lock and
reading the clock, every handler *posts* what it wants done, ``entry(now)``, and the tick
*drains* the inbox at its start: the entries run one after the other, in the order they
were posted, each given the tick's own time ``now`` [s]. So

* the controller's goal methods are only called from the tick (the other callers, the
  lifecycle, parameter changes and reads, hold the node's lock and change no goal);
* every time an input hands the controller is the tick's clock reading: inputs can no
  longer give it readings out of order (which it would take for a backward clock jump);
* an entry posted under a ``key`` replaces the one still waiting under that key and
  moves to the end of the queue: a stream of targets for one end effector costs one
  entry per tick, whatever its rate, and the newest wins, as it would have anyway.

An entry that raises does not stop the others: the exception goes to ``on_error(exc,
now)`` (the node refuses the input), and the drain goes on.
"""

from collections import OrderedDict
import itertools
import threading

__all__ = ['Inbox']


class Inbox:
    """Entries ``entry(now)`` posted from any thread, drained in order by one (module doc)."""

    def __init__(self):
        self._entries = OrderedDict()
        self._lock = threading.Lock()  # held only to add or swap out entries
        self._unkeyed = itertools.count()

    def __len__(self):
        """Return how many entries wait."""
        return len(self._entries)

    def post(self, entry, key=None):
        """
        Queue ``entry`` (a callable taking the tick's time [s]) for the next drain.

        With a ``key`` (any hashable), the entry waiting under that key, if any, is
        dropped, and this one goes to the end of the queue.
        """
        with self._lock:
            if key is None:
                key = ('unkeyed', next(self._unkeyed))
            else:
                self._entries.pop(key, None)
            self._entries[key] = entry

    def clear(self):
        """Drop every waiting entry (the controller they were meant for is gone)."""
        with self._lock:
            self._entries = OrderedDict()

    def drain(self, now, on_error):
        """
        Run every waiting entry at ``now`` [s], oldest first; return how many ran.

        An exception of an entry goes to ``on_error(exc, now)`` and the next entry runs.
        Entries posted meanwhile (by an entry, or another thread) wait for the next drain.
        """
        if not self._entries:  # the usual tick: nothing came (no lock taken)
            return 0
        with self._lock:
            entries, self._entries = self._entries, OrderedDict()
        for entry in entries.values():
            try:
                entry(now)
            except Exception as exc:  # noqa: B902 - one bad input must not stop the tick
                on_error(exc, now)
        return len(entries)

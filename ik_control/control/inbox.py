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
* an entry posted under a ``key`` supersedes the ones still waiting under that key, and
  the key moves to the end of the queue: a stream of targets for one end effector costs
  one applied entry per tick, whatever its rate. The drain runs the newest; only if it
  raises, the one before it, and so on, until one runs: so the newest *valid* input
  wins, as it would have if every one had run in turn (a valid pose followed by a
  malformed one within a tick is not lost). Entries older than the one that ran are
  dropped unrun (what they would have set is overwritten), their faults unreported. At
  most ``KEPT_PER_KEY`` wait under a key; older ones are dropped as they come.

An entry that raises does not stop the others: the exception goes to ``on_error(exc,
now)`` (the node refuses the input), and the drain goes on.
"""

from collections import deque, OrderedDict
import itertools
import threading

__all__ = ['Inbox', 'KEPT_PER_KEY']

#: the most entries that wait under one key: the newest, and the ones it falls back to
KEPT_PER_KEY = 4


class Inbox:
    """Entries ``entry(now)`` posted from any thread, drained in order by one (module doc)."""

    def __init__(self):
        self._entries = OrderedDict()
        self._lock = threading.Lock()  # held only to add or swap out entries
        self._unkeyed = itertools.count()

    def __len__(self):
        """Return how many inputs wait (the entries under one key count once)."""
        return len(self._entries)

    def post(self, entry, key=None):
        """
        Queue ``entry`` (a callable taking the tick's time [s]) for the next drain.

        With a ``key`` (any hashable), this one supersedes the entries waiting under that
        key (they stay as its fallbacks, at most ``KEPT_PER_KEY`` in all), and the key
        goes to the end of the queue.
        """
        with self._lock:
            if key is None:
                self._entries[('unkeyed', next(self._unkeyed))] = (entry,)
                return
            chain = self._entries.pop(key, None)  # oldest first, the oldest dropped beyond
            if chain is None:
                chain = deque(maxlen=KEPT_PER_KEY)
            chain.append(entry)
            self._entries[key] = chain

    def clear(self):
        """Drop every waiting entry (the controller they were meant for is gone)."""
        with self._lock:
            self._entries = OrderedDict()

    def drain(self, now, on_error):
        """
        Run every waiting input at ``now`` [s], oldest first; return how many ran.

        An exception of an entry goes to ``on_error(exc, now)`` and the next entry runs
        (under a key: the one it superseded, if any; module docstring).
        Entries posted meanwhile (by an entry, or another thread) wait for the next drain.
        """
        if not self._entries:  # the usual tick: nothing came (no lock taken)
            return 0
        with self._lock:
            entries, self._entries = self._entries, OrderedDict()
        for chain in entries.values():
            for candidate in reversed(chain):  # the newest first
                try:
                    candidate(now)
                except Exception as exc:  # noqa: B902 - one bad input must not stop the tick
                    on_error(exc, now)
                else:
                    break  # the newest that ran: the older ones are overwritten by it
        return len(entries)

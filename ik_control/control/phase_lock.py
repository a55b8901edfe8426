"""
Phase-lock a fixed-period tick grid to a periodic message stream (a robot's joint_states).

A controller that ticks on its own clock at period ``T`` keeps its tick-period jitter
independent of how the network delivers messages, but the age of the newest state at
a tick is then uniform over a whole period. :class:`PhaseLock` moves the grid so each
tick comes a little after the state it should use is ready:

* the delivery delay of message k is ``a_k = received_k - sent_k`` (DDS source and
  reception timestamps, system clock); the lag ``L`` is the ``quantile`` of ``a`` over the
  last ``window`` messages (all of them, also those a newer one overtook before a tick
  used them) plus ``margin``, refreshed every ``refresh`` messages, and at most
  ``max_lag_fraction * T``;
* a tick at ``t_k`` that uses message k is early or late by the phase error
  ``e_k = wrap(t_k - sent_k - L)``, wrapped into ``[-T/2, T/2)`` (a state that missed its
  tick and is used by the next one gives the same phase);
* the next deadline moves by ``-gain * e_k``, at most ``max_shift`` per tick, so the
  grid period never changes by more than ``max_shift`` (the jitter it adds).

In steady state the tick starts ``L`` after the state was sent: a fraction ``1 - quantile``
of states arrive after their tick and are used one period later.
"""

import numpy as np


class PhaseLock:
    """Grid-shift estimator (module docstring); all times in seconds."""

    def __init__(self, period, quantile=0.99, margin=30e-6, window=2048, refresh=500,
                 gain=0.05, max_shift=10e-6, max_lag_fraction=0.8):
        """Start with the lag at a quarter period until ``refresh`` delays are seen."""
        self.period = float(period)
        self.quantile = quantile
        self.margin = margin
        self.gain = gain
        self.max_shift = max_shift
        self.max_lag = max_lag_fraction * self.period
        self.refresh = refresh
        self.lag = 0.25 * self.period
        self._delays = np.zeros(window)
        self._scratch = np.zeros(window)
        self._count = 0
        self.error = 0.0  # the last phase error [s]

    def observe(self, tick_time, sent, received):
        """
        Take a message used by the tick at ``tick_time``; return the shift of the next deadline.

        ``tick_time``, ``sent`` and ``received`` must be on one clock (the system clock of
        DDS timestamps).
        """
        self.delay(sent, received)
        T = self.period
        e = (tick_time - sent - self.lag + 0.5 * T) % T - 0.5 * T
        self.error = e
        return min(max(-self.gain * e, -self.max_shift), self.max_shift)

    def delay(self, sent, received):
        """
        Record the delivery delay of a message the tick did not use (a newer one came).

        Every message taken must be recorded, or late ones, overtaken by the next, would
        be missing from the quantile, and the lag would settle too short.
        """
        window = self._delays.size
        self._delays[self._count % window] = received - sent
        self._count += 1
        if self._count % self.refresh == 0:
            self._update_lag(min(self._count, window))

    def _update_lag(self, n):
        scratch = self._scratch[:n]
        scratch[:] = self._delays[:n]
        k = min(n - 1, int(self.quantile * n))
        scratch.partition(k)
        self.lag = min(max(scratch[k], 0.0) + self.margin, self.max_lag)

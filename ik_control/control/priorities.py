"""
Dynamically varying priorities: task weights blended over time (SAM sec. V).

Maciejewski & Klein combine "multiple secondary goals which have dynamically varying
priorities", after Ribble's gaits, where the weighting of the goals changes with the
phase of the walking cycle. A :class:`WeightSchedule` holds named weights (e.g.
``primary``, ``secondary``) at knot times; between knots each weight moves with a
smoothstep ``w = w_k + (w_{k+1} - w_k) (3 s^2 - 2 s^3)``, ``s = (t - t_k)/(t_{k+1} - t_k)``,
so it is C1 in time and never leaves the range of its two knots (no overshoot below 0).
Before the first knot and after the last, the end values hold; with ``period`` the
schedule repeats.

The caller applies the weights: e.g. the primary goal's velocity times ``primary`` and
the obstacle-avoidance gain of SAM eq. (19) times ``secondary``.
"""

import math

from ik_control.validation import InputError
import numpy as np


class WeightSchedule:
    """Named weights at knot times [s], smoothstep-blended (module docstring)."""

    def __init__(self, knots, period=None):
        """
        ``knots``: list of ``{'t': time [s], name: weight, ...}`` with increasing times.

        Every knot must give the same names; weights must be finite and >= 0.
        """
        if not isinstance(knots, (list, tuple)) or not knots:
            raise InputError('priorities must be a non-empty list of {t: ..., name: weight}')
        names = None
        times, values = [], []
        for i, knot in enumerate(knots):
            if not isinstance(knot, dict) or 't' not in knot:
                raise InputError(f'priority knot {i} must be a mapping with a time t')
            keys = sorted(k for k in knot if k != 't')
            if names is None:
                names = keys
            elif keys != names:
                raise InputError(f'priority knot {i} names {keys}, the first names {names}')
            try:
                row = [float(knot['t'])] + [float(knot[k]) for k in names]
            except (TypeError, ValueError):
                raise InputError(f'priority knot {i} must hold numbers') from None
            if not all(math.isfinite(v) for v in row) or min(row[1:], default=0.0) < 0.0:
                raise InputError(f'priority knot {i}: times and weights must be finite, '
                                 'weights >= 0')
            times.append(row[0])
            values.append(row[1:])
        if not names:
            raise InputError('priority knots name no weight')
        if np.any(np.diff(times) <= 0):
            raise InputError('priority knot times must increase')
        if period is not None and not (math.isfinite(period) and period > 0):
            raise InputError(f'priority period must be > 0 s, got {period}')
        self.names = tuple(names)
        self.times = np.array(times)
        self.values = np.array(values)
        self.period = period

    def weights(self, t):
        """Return ``{name: weight}`` at time ``t`` [s] (module docstring)."""
        if self.period is not None:
            t = self.times[0] + (t - self.times[0]) % self.period
        ts = self.times
        if t <= ts[0] or ts.size == 1:
            w = self.values[0]
        elif t >= ts[-1]:
            w = self.values[-1]
        else:
            k = int(np.searchsorted(ts, t, side='right')) - 1
            s = (t - ts[k]) / (ts[k + 1] - ts[k])
            w = self.values[k] + (self.values[k + 1] - self.values[k]) * (s * s * (3 - 2 * s))
        return dict(zip(self.names, (float(v) for v in w)))

    def weight(self, name, t, default=1.0):
        """Weight ``name`` at ``t`` [s], or ``default`` if the schedule does not name it."""
        return self.weights(t).get(name, default)

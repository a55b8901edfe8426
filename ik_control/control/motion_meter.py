"""
The robot's own motion against its limits, measured from its joint_states.

As an oscilloscope would: positions over their stamps.

For each new sample ``(t_i, q_i)``:

* step speed: ``|q_i - q_(i-1)| / (t_i - t_(i-1))``, between consecutive samples;
* span speed: ``v_i = (q_i - q_j) / (t_i - t_j)`` with ``j`` the latest sample at least
  :attr:`MotionMeter.span` (10 ms) before ``i`` -- what a velocity limit means over a
  time a drive or a person could notice;
* span acceleration: ``(v_i - v_k) / (m_i - m_k)`` between two span speeds whose midpoints
  ``m = (t_i + t_j) / 2`` are at least a span apart.

Each is kept as its largest ratio to the limit over all joints. A sample stamped as the
last one is skipped; one stamped before it (a restart, a clock reset) starts the
measurement again.
"""

from collections import deque

import numpy as np

__all__ = ['MotionMeter']


class MotionMeter:
    """Largest measured speed and acceleration ratios to ``v_max`` and ``a_max`` (module doc)."""

    def __init__(self, v_max, a_max, span=0.01, history=4096):
        self.v_max = np.asarray(v_max, dtype=float)
        self.a_max = np.asarray(a_max, dtype=float)
        self.span = float(span)
        self._samples = deque(maxlen=history)  # (t, q)
        self._spans = deque(maxlen=history)    # (midpoint, v)
        self.step_speed_ratio = 0.0
        self.span_speed_ratio = 0.0
        self.span_acceleration_ratio = 0.0
        self.samples = 0
        self.worst = {}  # what gave each ratio: time [s] and joint index

    def add(self, t, q):
        """Take one sample: stamp ``t`` [s] and positions ``q`` (in the limits' joint order)."""
        q = np.array(q, dtype=float)
        samples = self._samples
        if samples and t <= samples[-1][0]:
            if t == samples[-1][0]:
                return  # the same state again
            samples.clear()
            self._spans.clear()
        self.samples += 1
        if samples:
            t0, q0 = samples[-1]
            self._record('step_speed_ratio', np.abs(q - q0) / (t - t0) / self.v_max, t)
            j = None
            for k in range(len(samples) - 1, -1, -1):
                if t - samples[k][0] >= self.span:
                    j = k
                    break
            if j is not None:
                tj, qj = samples[j]
                v = (q - qj) / (t - tj)
                self._record('span_speed_ratio', np.abs(v) / self.v_max, t)
                mid = 0.5 * (t + tj)
                for m0, v0 in reversed(self._spans):
                    if mid - m0 >= self.span:
                        self._record('span_acceleration_ratio',
                                     np.abs(v - v0) / (mid - m0) / self.a_max, t)
                        break
                self._spans.append((mid, v))
        samples.append((t, q))

    def _record(self, name, ratios, t):
        i = int(np.argmax(ratios))
        if ratios[i] > getattr(self, name):
            setattr(self, name, float(ratios[i]))
            self.worst[name] = (t, i)

    def summary(self):
        """Return the ratios and the sample count as a dict."""
        return {'step_speed_ratio': self.step_speed_ratio,
                'span_speed_ratio': self.span_speed_ratio,
                'span_acceleration_ratio': self.span_acceleration_ratio,
                'samples': self.samples}

"""
Velocity profiles: SAM's second way of specifying motion (sec. VI).

"A function which specifies the velocity command for each point in time for the
reference frame under control, which results in a nominal motion" -- e.g. one
six-dimensional profile per foot for walking -- played as the primary goal, "with the
addition of small perturbations to the nominal velocity profiles" to customise it.

A profile file (``config/motions/*.yaml``)::

    name: wave
    frame: base          # twist axes: 'base' (the base frame) or 'effector' (its own axes)
    cycles: 3            # times the cycle plays (the first and last sample must then agree)
    samples:             # linear [m/s] and angular [rad/s] velocity at t [s] from the start
      - {t: 0.0, linear: [0, 0, 0], angular: [0, 0, 0]}
      - ...
    priorities:          # optional, per cycle: WeightSchedule knots (t from the cycle start)
      - {t: 0.0, primary: 1.0, secondary: 0.2}

Between samples each component follows the C2 clamped cubic spline through them with zero
slope at the cycle ends (:func:`~ik_control.control.spline_path.cubic_knot_velocities`),
so a cycle that starts and ends at rest starts and stops without a jump in velocity or
acceleration. Perturbations: a sum of ``PERTURBATION_MODES`` sinusoids of random phase per
component, frequencies between 1 and ``PERTURBATION_MODES`` cycles per profile, scaled to
at most ``amplitude`` [m/s, rad/s] and windowed by ``sin^2(pi t / T)``, so the profile
still starts and ends at its nominal velocity.

:class:`ProfilePlayer` plays one from any start state: ``twist(now, R)`` gives the
base-frame twist to send (controller ``set_twist_target``, the joystick way), and
``advance(now)`` integrates the nominal pose (for ``set_target_matrix``: the error to it
drives the arm, eq. 20, so integration error does not accumulate in the arm).
"""

import math

from ik_control.control.priorities import WeightSchedule
from ik_control.control.spline_path import cubic_knot_velocities, CubicSpline
from ik_control.validation import InputError, read_yaml
import numpy as np
import pinocchio as pin

PERTURBATION_MODES = 3
MAX_SPEED = 10.0  # [m/s, rad/s] larger profile samples are refused as a mistake
TOP_KEYS = {'name', 'frame', 'cycles', 'samples', 'priorities'}


class VelocityProfile:
    """A named profile: twist knots over one cycle, cycles, axes, optional priorities."""

    def __init__(self, name, times, twists, frame='base', cycles=1, priorities=None):
        times = np.asarray(times, dtype=float)
        twists = np.asarray(twists, dtype=float)
        if times.ndim != 1 or times.size < 2 or twists.shape != (times.size, 6):
            raise InputError(f"profile '{name}' needs at least 2 samples of 6 values")
        if not (np.all(np.isfinite(times)) and np.all(np.isfinite(twists))):
            raise InputError(f"profile '{name}': samples must be finite")
        if times[0] != 0.0 or np.any(np.diff(times) <= 0):
            raise InputError(f"profile '{name}': sample times must start at 0 and increase")
        if np.abs(twists).max() > MAX_SPEED:
            raise InputError(f"profile '{name}': speeds above {MAX_SPEED:g} m/s or rad/s")
        if frame not in ('base', 'effector'):
            raise InputError(f"profile '{name}': frame must be 'base' or 'effector'")
        if not (isinstance(cycles, int) and cycles >= 1):
            raise InputError(f"profile '{name}': cycles must be an integer >= 1")
        if cycles > 1 and not np.allclose(twists[0], twists[-1]):
            raise InputError(f"profile '{name}': a repeated cycle must end at its start twist")
        self.name = name
        self.frame = frame
        self.cycles = cycles
        self.period = float(times[-1])
        self.duration = self.period * cycles
        zero = np.zeros(6)
        self.spline = CubicSpline(times, twists, cubic_knot_velocities(times, twists, zero,
                                                                       zero))
        self.priorities = (None if priorities is None
                           else WeightSchedule(priorities, period=self.period))

    def nominal(self, t):
        """Twist (6: linear [m/s], angular [rad/s]) at ``t`` [s] from the start; 0 outside."""
        if t < 0.0 or t > self.duration:
            return np.zeros(6)
        phase = t - self.period * min(math.floor(t / self.period), self.cycles - 1)
        return self.spline.evaluate(phase)[0]


def parse_profile(data, source='profile'):
    """Return the :class:`VelocityProfile` of a parsed profile file (module docstring)."""
    if not isinstance(data, dict) or not isinstance(data.get('samples'), list):
        raise InputError(f'{source}: expected a mapping with a samples list')
    unknown = set(data) - TOP_KEYS
    if unknown:
        raise InputError(f'{source}: unknown keys {sorted(unknown)}; allowed: {sorted(TOP_KEYS)}')
    times, twists = [], []
    for i, s in enumerate(data['samples']):
        if not isinstance(s, dict) or 't' not in s:
            raise InputError(f'{source}: sample {i} needs t, linear and angular')
        try:
            linear = [float(v) for v in s.get('linear', [0.0, 0.0, 0.0])]
            angular = [float(v) for v in s.get('angular', [0.0, 0.0, 0.0])]
            times.append(float(s['t']))
        except (TypeError, ValueError):
            raise InputError(f'{source}: sample {i} must hold numbers') from None
        if len(linear) != 3 or len(angular) != 3:
            raise InputError(f'{source}: sample {i}: linear and angular need 3 values each')
        twists.append(linear + angular)
    return VelocityProfile(str(data.get('name', source)), times, twists,
                           data.get('frame', 'base'), data.get('cycles', 1),
                           data.get('priorities'))


def load_profile(path):
    """Read a velocity profile file (module docstring)."""
    return parse_profile(read_yaml(path, 'profile'), f"profile '{path}'")


class ProfilePlayer:
    """
    One playback of a :class:`VelocityProfile` from a start time and pose (module docstring).

    ``perturbation`` (linear [m/s], angular [rad/s] amplitudes, or one number for both)
    adds the windowed random sinusoids, drawn from ``seed``.
    """

    def __init__(self, profile, start_time, start_pose, perturbation=0.0, seed=None):
        self.profile = profile
        self.start_time = float(start_time)
        self.pose = np.array(start_pose, dtype=float)
        if self.pose.shape != (4, 4) or not np.all(np.isfinite(self.pose)):
            raise InputError('start pose must be a finite 4x4 matrix')
        amp = np.broadcast_to(np.asarray(perturbation, dtype=float), (2,))
        if not np.all(np.isfinite(amp)) or np.any(amp < 0) or np.any(amp > MAX_SPEED):
            raise InputError(f'perturbation amplitudes must be in [0, {MAX_SPEED:g}]')
        rng = np.random.default_rng(seed)
        self._amplitude = np.repeat(amp, 3) / PERTURBATION_MODES
        self._phase = rng.uniform(0.0, 2 * np.pi, (PERTURBATION_MODES, 6))
        self._time = self.start_time

    def body_twist(self, now):
        """Profile twist at ``now`` [s] plus the perturbation, in the profile's axes."""
        t = now - self.start_time
        twist = self.profile.nominal(t)
        T = self.profile.duration
        if np.any(self._amplitude) and 0.0 < t < T:
            window = math.sin(math.pi * t / T) ** 2
            k = np.arange(1, PERTURBATION_MODES + 1)[:, None]
            twist = twist + window * (self._amplitude
                                      * np.sin(2 * np.pi * k * t / T + self._phase)).sum(0)
        return twist

    def twist(self, now, R=None):
        """Base-frame twist at ``now``; ``R`` (3x3) is the effector's orientation if needed."""
        twist = self.body_twist(now)
        if self.profile.frame == 'effector':
            R = self.pose[:3, :3] if R is None else np.asarray(R, dtype=float)
            twist = np.concatenate([R @ twist[:3], R @ twist[3:]])
        return twist

    def advance(self, now, substeps=4):
        """
        Integrate the nominal pose up to ``now`` [s] and return it (4x4, base frame).

        Midpoint rule with ``substeps`` per call: ``p += v dt``, ``R <- exp(w dt) R``.
        """
        dt = (now - self._time) / substeps
        if dt <= 0.0:
            return self.pose.copy()
        for i in range(substeps):
            t = self._time + (i + 0.5) * dt
            twist = self.twist(t, self.pose[:3, :3])
            self.pose[:3, 3] += twist[:3] * dt
            self.pose[:3, :3] = pin.exp3(twist[3:] * dt) @ self.pose[:3, :3]
        self._time = now
        return self.pose.copy()

    def weights(self, now):
        """Priority weights at ``now``, held at the end values after it (``{}``: none)."""
        if self.profile.priorities is None:
            return {}
        t = min(max(now - self.start_time, 0.0), self.profile.duration)
        return self.profile.priorities.weights(t)

    def done(self, now):
        """Return True once the profile has played out."""
        return now - self.start_time >= self.profile.duration


class ProfileMotion:
    """
    A profile played as a moving goal of the controller (``follow_motion``).

    ``sample(t)``: the nominal pose ``t`` [s] after the start, integrated by
    :meth:`ProfilePlayer.advance` (``t`` must not decrease: the controller samples at
    each tick's knot); ``twist(t)``: the profile's base-frame twist there; ``end_time``:
    the profile's duration. After it the pose stays and the twist is zero.
    """

    def __init__(self, profile, start_pose, perturbation=0.0, seed=None):
        self.player = ProfilePlayer(profile, 0.0, start_pose, perturbation, seed)
        self.end_time = profile.duration

    def sample(self, t):
        """Nominal pose (4x4, base frame) at ``t`` [s] after the start."""
        return self.player.advance(min(t, self.end_time))

    def twist(self, t):
        """Linear [m/s] and angular [rad/s] velocity at ``t``, base axes (zero after the end)."""
        if not 0.0 <= t < self.end_time:
            return np.zeros(6)
        return self.player.twist(t)

    def weights(self, t):
        """Priority weights at ``t`` from the profile's ``priorities`` (``{}``: none)."""
        return self.player.weights(t)

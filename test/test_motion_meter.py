"""MotionMeter: the robot's measured speed and acceleration against its limits."""

from hypothesis import given, settings, strategies as st
from ik_control.control.motion_meter import MotionMeter
import numpy as np


@settings(max_examples=20, deadline=None)
@given(st.floats(0.1, 2.0), st.floats(1.0, 20.0), st.integers(0, 2 ** 32 - 1))
def test_a_sinusoid_reads_its_peak_speed_and_acceleration(amplitude, omega, seed):
    """Read A w and A w^2 from q = A sin(w t) at ~1 kHz with jittered stamps (10 ms spans)."""
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.uniform(0.0008, 0.0012, 1500))
    meter = MotionMeter(np.ones(2), np.ones(2))
    for ti in t:
        meter.add(ti, [amplitude * np.sin(omega * ti), 0.0])
    speed, accel = amplitude * omega, amplitude * omega ** 2
    assert abs(meter.step_speed_ratio - speed) <= 0.01 * speed
    assert abs(meter.span_speed_ratio - speed) <= 0.02 * speed
    # a 10 ms span smooths the second difference by at most (w * 20 ms)^2 / 12
    assert accel * (1 - (omega * 0.02) ** 2 / 8 - 0.02) <= meter.span_acceleration_ratio
    assert meter.span_acceleration_ratio <= accel * 1.02


def test_a_jump_between_two_samples_shows_as_overspeed():
    meter = MotionMeter([1.0], [10.0])
    for k in range(100):
        meter.add(k * 1e-3, [0.5 * k * 1e-3 + (0.01 if k >= 50 else 0.0)])  # 1 cm step
    assert meter.step_speed_ratio >= 10.0  # 1 cm in 1 ms: 10 m/s
    assert meter.span_speed_ratio >= 1.0
    assert meter.worst['step_speed_ratio'] == (0.05, 0)


def test_repeated_stamps_are_skipped_and_a_clock_reset_restarts():
    meter = MotionMeter([1.0], [1.0])
    meter.add(0.0, [0.0])
    meter.add(0.001, [0.0005])
    meter.add(0.001, [0.5])  # the same stamp again: not a sample
    assert abs(meter.step_speed_ratio - 0.5) < 1e-9 and meter.samples == 2
    meter.add(0.0005, [3.0])  # backwards: a restart, nothing measured across it
    meter.add(0.0015, [3.0005])
    assert abs(meter.step_speed_ratio - 0.5) < 1e-9

"""
RealtimeLoop's watchdog: a tick that does not return is said once, and so is its end.

A publish that never returns (a peer killed while it held a Fast DDS shared-memory port's
lock) holds the tick, and with it the node's lock: only the watchdog thread can say so.
"""

import gc
import re
import sys
import threading
import time

from ik_control.ros.realtime_loop import RealtimeLoop, STUCK_TICK
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions

PERIOD = 0.005  # [s]
STUCK = 2.0 * STUCK_TICK  # how long the one stuck tick blocks [s]


def test_a_stuck_tick_is_reported_once_and_its_end_once(capfd):
    context = rclpy.Context()
    rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node('realtime_loop_watchdog', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    switch_interval = sys.getswitchinterval()
    ticks = []

    def tick(message):
        ticks.append(time.perf_counter())
        if len(ticks) == 20:
            time.sleep(STUCK)  # as a DDS write that does not return
        if len(ticks) == 60:
            loop.stop()

    loop = RealtimeLoop(node, executor, PERIOD, tick)
    runner = threading.Thread(target=loop.run)
    try:
        runner.start()
        runner.join(timeout=30.0)
        assert not runner.is_alive()
    finally:
        loop.stop()
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        sys.setswitchinterval(switch_interval)  # run() sets both for the whole process
        gc.unfreeze()
    err = capfd.readouterr().err
    assert len(ticks) == 60
    assert err.count('the control tick has not returned for') == 1, err
    resumed = re.findall(r'control ticks resumed \(the stuck tick ran up to ([0-9.]+) s\)', err)
    assert len(resumed) == 1, err
    assert STUCK <= float(resumed[0]) <= STUCK + 0.3, err

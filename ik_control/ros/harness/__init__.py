"""
Harnesses that start, drive and measure the nodes: not nodes themselves.

``demo`` (the README's main job), ``fuzz`` (the bad-input campaign and its rig, shared
with the tests), ``soak`` (the long run), ``bench_loop`` (loop designs timed),
``node_process`` (one node in a subprocess) and ``fault_relay`` (a relay that delays,
bunches, drops and reorders commands, for the fault tests). The nodes they run are in
:mod:`ik_control.ros`.
"""

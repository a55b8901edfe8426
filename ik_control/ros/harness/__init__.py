"""
Harnesses that start, drive and measure the nodes: not nodes themselves.

``demo`` (the README's main job), ``node_rig`` (the two nodes as processes and a probe
node beside them, shared with the tests), ``checks`` (every command and the robot's own
motion against the limits), ``fuzz`` (the bad-input campaign), ``soak`` (the long run),
``bench_loop`` (loop designs timed), ``node_process`` (one node in a subprocess) and
``fault_relay`` (a relay that delays, bunches, drops and reorders commands, for the fault
tests). The nodes they run are in
:mod:`ik_control.ros`.
"""

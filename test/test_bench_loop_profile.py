"""bench loop --profile: each function's share of the tick, from py-spy's raw stacks."""

from ik_control.ros.harness.bench_loop import profile_shares

STACKS = [
    'main (run.py:1);Node.realtime_tick (/x/node.py:20);f (/x/law.py:3);g (/x/fk.py:4) 3',
    'main (run.py:1);Node.realtime_tick (/x/node.py:21);f (/x/law.py:5) 1',
    'main (run.py:1);Loop.sleep (/x/loop.py:9) 10',  # outside the tick: not counted
    'main (run.py:1);Node.realtime_tick (/x/node.py:20);h (/x/h.py:7);h (/x/h.py:8) 2',
    'not a stack line',
]


def test_shares_count_only_the_tick_and_each_function_once_per_sample():
    shares = profile_shares(STACKS, rows=10)
    assert shares['samples'] == 6
    got = {name: (incl, own) for name, incl, own in shares['functions']}
    assert got == {'Node.realtime_tick (node.py)': (100.0, 0.0),
                   'f (law.py)': (66.7, 16.7),
                   'g (fk.py)': (50.0, 50.0),
                   'h (h.py)': (33.3, 33.3)}  # recursion counted once
    assert [name for name, _, _ in shares['functions']][:2] == [
        'Node.realtime_tick (node.py)', 'f (law.py)']


def test_rows_keep_the_largest_inclusive_shares():
    shares = profile_shares(STACKS, rows=2)
    assert [name for name, _, _ in shares['functions']] == [
        'Node.realtime_tick (node.py)', 'f (law.py)']


def test_the_rclpy_floor_times_each_call_of_a_tick_over_dds():
    """The floor of bench loop: a bare node takes real 1 kHz joint_states and publishes."""
    from ik_control.ros.harness import bench_loop
    from ros_helpers import domain_id

    domain_id()  # this run's ROS_DOMAIN_ID exported: the node processes inherit it
    floor = bench_loop.run_floor(1.0)
    assert set(floor) == {'take_state', 'take_goals', 'publish', 'total'}
    for part, (p50, p99) in floor.items():
        assert 0.0 < p50 <= p99, (part, p50, p99)
    # the parts add up, tick by tick, to the total
    assert floor['total'][0] >= max(p50 for p, (p50, _) in floor.items() if p != 'total')


def test_the_floor_publishes_the_longest_window_simons_controller_publishes():
    """
    ``window_points``: the floor's message has as many points as the controller's.

    SIMON's controller, in process with the shipped settings at 1 kHz, moving both hands
    to a random goal for 0.6 s: its longest command window (point 0, the committed knots,
    a braking knot per joint) has exactly the floor's points.
    """
    import numpy as np
    from ik_control import robots
    from ik_control.bench.reach import controller_config
    from ik_control.control.controller import ResolvedRateController
    from ik_control.ros.harness.bench_loop import window_points

    model = robots.robot('simon')
    c = ResolvedRateController(model, controller_config('simon'))
    q = np.array(robots.ready_pose('simon'), dtype=float)
    goal = model.frame_placements(model.random_configurations(1, np.random.default_rng(1))[0])
    longest = 0
    for k in range(600):
        if k == 5:
            for i, effector in enumerate(model.end_effectors):
                c.set_target_matrix(effector.frame, goal[i])
        c.set_joint_state(model.joint_names, q, k * 1e-3)
        command = c.update(k * 1e-3)
        if command is not None:
            longest = max(longest, len(command.times))
            q = command.at(1e-3)[0].copy()
    assert longest == window_points(model, 1000.0)

"""
``ik_control bench loop``: the control loop at 1 kHz, simulated robot in another process.

SIMON (both hands, 16 joints) with ``config/simon.yaml``: ``sim_robot`` publishes
joint_states at 1 kHz and ``ik_controller`` answers each with a command, while this
process sends a new pair of hand goals every 0.5 s. Both nodes write their loop
statistics (tick start, compute time and joint_states age, from
:class:`~ik_control.ros.realtime_loop.LoopStats`) at shutdown; the ticks of the
measurement window give:

* the achieved rate [Hz] and the tick-period jitter ``|t_k+1 - t_k - T|`` p50/p99/p99.9/max;
* the compute time of a tick (take messages, solve, limit, publish) [us], and of each of
  its parts as the node times them in every tick (``realtime_loop.TICK_PHASES``: taking and parsing
  goals and joint_states, the controller's update, publishing the command);
* the latency from a joint_states message's stamp to the command published for it [us];
* rclpy's floor (:mod:`.rclpy_floor`): the same rclpy calls by a bare node (take the
  state, take the empty goal subscriptions, publish a command of the same size), so the
  rest of the compute is shown as ours.

With ``action_client``, the chosen design is measured twice instead, once with the goals
sent on the ``target_pose`` topics and once as ``~/move_to_pose`` action goals (each
preempting the last, feedback streaming at 10 Hz to this process): the action server
works in the executor thread and must not slow the loop.

The same is measured for the loop designs not chosen (an rclpy timer in a
SingleThreadedExecutor; the joint_states-triggered loop at normal priority), shorter, so
the choice is visible in one run. Goals (issues 3 and 18): rate >= 999.5 Hz, p99 jitter
<= 100 us, p99 latency <= 500 us, compute p50 <= 60 us and p99 <= 200 us, the controller
process's CPU <= 25 % of one core (``cpu_percent``: every thread, from ``/proc``).

With ``profile``, py-spy samples the chosen design's controller process over the
measurement (``PROFILE_RATE``, without stopping it) and :func:`profile_shares` gives each
function's share of the samples taken inside the tick (``realtime_tick``): inclusive
(the function and what it calls) and self.
"""

import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from geometry_msgs.msg import PoseStamped
from ik_control import robots
from ik_control.bench.reach import controller_config
from ik_control.ros.conversions import pose_stamped
from ik_control.ros.harness.node_process import free_port, node_environment, NodeProcess
from ik_control.ros.realtime_loop import summarize, TICK_PHASES
import numpy as np
import rclpy
from rclpy.node import Node
from trajectory_msgs.msg import JointTrajectory

GOALS = {'rate_hz': 999.5, 'jitter_us_p99': 100.0, 'latency_us_p99': 500.0,
         'compute_us_p50': 60.0, 'compute_us_p99': 200.0, 'cpu_percent': 25.0}
STOP_TIMEOUT = 10.0  # SIGINT to SIGKILL [s]: the controller writes its statistics first
PROFILE_RATE = 1000  # py-spy samples per second [Hz]
PROFILE_ROOT = 'realtime_tick'  # the profile counts the samples inside this function
PROFILE_ROWS = 16  # functions shown, by inclusive share


def profile_shares(collapsed_lines, root=PROFILE_ROOT, rows=PROFILE_ROWS):
    """
    Each function's share [%] of the samples inside ``root``, from py-spy's raw output.

    ``collapsed_lines``: ``frame;frame;...;frame count`` per line, outermost frame first,
    each frame ``function (file:line)``. A function counts once per sample however deep
    it recurses (inclusive) and as the innermost frame (self). Returns ``{'samples': n,
    'functions': [[function (file), inclusive %, self %], ...]}``, largest inclusive
    first, ``rows`` of them.
    """
    inclusive, own = collections.Counter(), collections.Counter()
    total = 0
    for line in collapsed_lines:
        stack, _, count = line.rstrip().rpartition(' ')
        if not stack or not count.isdigit():
            continue
        # 'f (dir/file.py:12)' -> 'f (file.py)'
        frames = [re.sub(r' \((?:.*/)?([^/:]+)(?::\d+)?\)$', r' (\1)', f)
                  for f in stack.split(';')]
        start = next((k for k, f in enumerate(frames) if f.split(' ')[0].endswith(root)), None)
        if start is None:
            continue
        n = int(count)
        total += n
        for name in set(frames[start:]):
            inclusive[name] += n
        own[frames[-1]] += n
    scale = 100.0 / max(total, 1)
    return {'samples': total,
            'functions': [[name, round(scale * n, 1), round(scale * own[name], 1)]
                          for name, n in inclusive.most_common(rows)]}


def _start_profiler(pid, seconds, output):
    """Start ``py-spy record`` on process ``pid`` for ``seconds``; raw stacks to ``output``."""
    spy = (shutil.which('py-spy')
           or os.path.join(os.path.dirname(sys.executable), 'py-spy'))
    if not os.path.isfile(spy):
        raise RuntimeError('py-spy is not installed (pip install py-spy; make venv does)')
    return subprocess.Popen([spy, 'record', '--pid', str(pid), '--rate', str(PROFILE_RATE),
                             '--nonblocking', '--duration', str(max(1, int(seconds))),
                             '--format', 'raw', '--output', output],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _goal_poses(model, rng, count):
    """Reachable hand poses around the ready pose (both hands per goal)."""
    ready = robots.ready_pose('simon')
    out = []
    for _ in range(count):
        q = np.clip(ready + rng.normal(0, 0.2, model.nq), model.lower, model.upper)
        out.append(model.frame_placements(q))
    return out


def run_config(label, loop, priority, seconds, rate_hz=1000.0, warmup=3.0, progress=None,
               goals='topic', profile=False, extra=(), viewer=False):
    """
    Run sim + controller with one loop design; return the measured figures.

    ``goals``: 'topic' (``target_pose`` messages) or 'action' (MoveToPose goals);
    ``profile``: also sample the controller with py-spy (module docstring); ``extra``:
    more controller arguments (``-p collision.enabled:=false``); ``viewer``: the browser
    view (``ik_viewer``) runs beside them, subscribed to the same topics.
    """
    model = robots.robot('simon')
    params = robots.data_path('config', 'simon.yaml')
    ns = f'/bench_loop_{os.getpid()}_{label}'
    tmp = tempfile.mkdtemp(prefix='ik_control_bench_loop_')
    ctl_stats = os.path.join(tmp, 'controller.npz')
    stacks = os.path.join(tmp, 'controller_stacks.txt')
    spy = None
    common = ['--params-file', params, '-r', f'__ns:={ns}', '-p', f'rate_hz:={rate_hz}',
              '-p', f'urdf_path:={robots.urdf_path("simon")}']
    env = node_environment()
    sim = NodeProcess('sim_robot', 'ik_control.ros.sim_robot_node',
                      common + ['-p', f'realtime_priority:={priority}'], env, STOP_TIMEOUT)
    ctl = NodeProcess('ik_controller', 'ik_control.ros.ik_controller_node',
                      common + ['-p', f'loop:={loop}', '-p', f'realtime_priority:={priority}',
                                '-p', f'statistics_file:={ctl_stats}', *extra], env,
                      STOP_TIMEOUT)
    view = None
    if viewer:
        from ik_control.ros.viewer_node import robot_arguments
        view = NodeProcess('ik_viewer', 'ik_control.ros.viewer_node',
                           robot_arguments('simon') + ['-r', f'__ns:={ns}',
                                                       '-p', f'port:={free_port()}'],
                           env, STOP_TIMEOUT)
    node = Node(f'bench_loop_{label}', namespace=ns)
    pubs = [node.create_publisher(PoseStamped, f'ik_controller/{ee}/target_pose', 10)
            for ee in model.end_effector_names]
    poses = _goal_poses(model, np.random.default_rng(0), 64)
    client = _ActionGoals(node, model) if goals == 'action' else None
    try:
        first = []
        probe = node.create_subscription(JointTrajectory, 'joint_trajectory_controller/'
                                         'joint_trajectory', first.append, 1)
        deadline = time.monotonic() + 120.0
        while not first or any(p.get_subscription_count() == 0 for p in pubs):
            rclpy.spin_once(node, timeout_sec=0.1)
            if time.monotonic() > deadline or not ctl.alive() or not sim.alive():
                raise RuntimeError(f'nodes did not come up:\n{sim.output_tail(20)}\n'
                                   f'{ctl.output_tail(20)}')
        node.destroy_subscription(probe)  # this process stays out of the 1 kHz traffic
        if client is not None:
            client.wait_for_server()
        t_start = time.perf_counter() + warmup
        t_end = t_start + seconds
        k = 0
        cpu = []  # (time, controller CPU seconds) when the measurement starts and ends
        while time.perf_counter() < t_end:
            if not cpu and time.perf_counter() >= t_start:
                cpu.append((time.perf_counter(), ctl.cpu_seconds()))
                if profile:
                    spy = _start_profiler(ctl.pid, t_end - time.perf_counter(), stacks)
            T = poses[k % len(poses)]
            if client is None:
                for i, pub in enumerate(pubs):
                    pub.publish(pose_stamped(T[i], model.base_frame))
                time.sleep(0.5)
            else:
                client.send(T)
                client.spin(0.5)
            k += 1
            if progress:
                progress(f'{label}: {max(0.0, time.perf_counter() - t_start):.0f} / '
                         f'{seconds:.0f} s')
        cpu.append((time.perf_counter(), ctl.cpu_seconds()))
        if spy is not None:
            _, err = spy.communicate(timeout=60.0)
            if spy.returncode != 0:
                raise RuntimeError(f'py-spy failed: {err[-2000:]}')
    finally:
        if spy is not None and spy.poll() is None:
            spy.kill()
        node.destroy_node()
        if view is not None:
            view.stop()
        ctl.stop()
        sim.stop()
    data = np.load(ctl_stats)
    keep = (data['start'] >= t_start) & (data['start'] <= t_end)
    phases = {name[len('phase_'):]: data[name][keep] for name in data.files
              if name.startswith('phase_')}
    figures = summarize(data['start'][keep], data['compute'][keep], data['age'][keep],
                        1.0 / rate_hz, phases)
    figures.update({'label': label, 'loop': loop, 'priority': priority, 'seconds': seconds,
                    'goals': goals})
    if len(cpu) == 2 and None not in (cpu[0][1], cpu[1][1]):
        # the controller process's CPU share over the measured span, all its threads
        # (the loop, the executor, DDS): 100 = one core
        figures['cpu_percent'] = 100.0 * (cpu[1][1] - cpu[0][1]) / (cpu[1][0] - cpu[0][0])
    if client is not None:
        figures.update(client.counts)
    if spy is not None:
        with open(stacks, encoding='utf-8') as stream:
            figures['profile'] = profile_shares(stream)
    return figures


class _ActionGoals:
    """MoveToPose goals for both hands from the bench's node, counting what comes back."""

    def __init__(self, node, model):
        from ik_control.ros.move_to_pose_server import load_action_type
        from rclpy.action import ActionClient

        self.action = load_action_type()
        if self.action is None:
            raise RuntimeError('ik_control_interfaces is not installed: run make venv')
        self.node = node
        self.model = model
        self.client = ActionClient(node, self.action, 'ik_controller/move_to_pose')
        self.counts = {'action_goals': 0, 'feedback_messages': 0, 'results': 0}

    def wait_for_server(self, timeout=60.0):
        """Spin until the controller's action server is discovered."""
        deadline = time.monotonic() + timeout
        while not self.client.server_is_ready():
            if time.monotonic() > deadline:
                raise RuntimeError('no ~/move_to_pose action server')
            rclpy.spin_once(self.node, timeout_sec=0.1)

    def send(self, T):
        """Send one goal for both hands (placements ``T``, base frame)."""
        goal = self.action.Goal()
        goal.end_effectors = list(self.model.end_effector_names)
        goal.targets = [pose_stamped(T[i], self.model.base_frame)
                        for i in range(len(goal.end_effectors))]
        future = self.client.send_goal_async(goal, feedback_callback=self._feedback)
        future.add_done_callback(self._accepted)
        self.counts['action_goals'] += 1

    def spin(self, seconds):
        """Serve feedback and results for ``seconds``."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            rclpy.spin_once(self.node, timeout_sec=max(0.0, end - time.monotonic()))

    def _feedback(self, msg):
        self.counts['feedback_messages'] += 1

    def _accepted(self, future):
        future.result().get_result_async().add_done_callback(self._result)

    def _result(self, future):
        self.counts['results'] += 1


CONFIGS = (
    ('timer', 'timer', 0),                  # rclpy timer in a SingleThreadedExecutor
    ('triggered', 'on_joint_states', 0),    # joint_states-triggered loop, normal priority
    ('triggered_rt', 'on_joint_states', 80),  # the same with SCHED_FIFO priority 80
    ('synchronized', 'synchronized', 0),    # own clock, phase-locked to joint_states
    ('synchronized_rt', 'synchronized', 80),  # the same with SCHED_FIFO priority 80
)
CHOSEN = 'synchronized_rt'


def window_points(model, rate_hz):
    """
    Return the points of SIMON's command window in a steady tick at ``rate_hz`` [Hz].

    Point 0, the knots committed ``max_expected_latency`` ahead (one a period), and a
    braking knot per joint (:attr:`CommandWindow.max_points
    <ik_control.control.command_window.CommandWindow.max_points>` without late ticks):
    37 at 1 kHz with the shipped settings. ``model``: SIMON's RobotModel.
    """
    lead = max(controller_config('simon').max_expected_latency, 1.0 / rate_hz)
    return 1 + round(lead * rate_hz) + model.nq


def run_floor(seconds, rate_hz=1000.0, progress=None):
    """
    Measure rclpy's own calls of a tick (:mod:`.rclpy_floor`) beside a 1 kHz sim_robot.

    Returns ``{part: (p50, p99) [us]}`` for taking joint_states, taking the empty goal
    subscriptions and publishing the command, and their sum per tick.
    """
    model = robots.robot('simon')
    ns = f'/bench_loop_{os.getpid()}_floor'
    tmp = tempfile.mkdtemp(prefix='ik_control_bench_floor_')
    stats = os.path.join(tmp, 'floor.npz')
    env = node_environment()
    common = ['-r', f'__ns:={ns}', '-p', f'rate_hz:={rate_hz}']
    sim = NodeProcess('sim_robot', 'ik_control.ros.sim_robot_node',
                      ['--params-file', robots.data_path('config', 'simon.yaml'), *common,
                       '-p', f'urdf_path:={robots.urdf_path("simon")}'], env, STOP_TIMEOUT)
    floor = NodeProcess('rclpy_floor', 'ik_control.ros.harness.rclpy_floor',
                        [*common, '-p', f'seconds:={seconds + 3.0}', '-p',
                         f'joints:={model.nq}', '-p',
                         f'points:={window_points(model, rate_hz)}',
                         '-p', f'statistics_file:={stats}',
                         '-p', 'effectors:=[' + ', '.join(model.end_effector_names) + ']'],
                        env, STOP_TIMEOUT)
    try:
        deadline = time.monotonic() + seconds + 120.0
        while floor.alive() and time.monotonic() < deadline:
            if progress:
                progress('rclpy floor: measuring')
            time.sleep(1.0)
        if floor.alive() or not os.path.exists(stats):
            raise RuntimeError(f'the rclpy floor did not finish:\n{floor.output_tail(20)}')
    finally:
        floor.stop()
        sim.stop()
    data = np.load(stats)
    parts = {part: data[part][len(data[part]) // 4:] for part in data.files}  # warmed up
    parts['total'] = sum(parts.values())
    return {part: (float(np.percentile(v, 50) * 1e6), float(np.percentile(v, 99) * 1e6))
            for part, v in parts.items() if v.size}


def run(seconds=60.0, compare_seconds=15.0, progress=None, action_client=False,
        profile=False, view=False):
    """
    Measure the chosen design for ``seconds`` and the alternatives for ``compare_seconds``.

    With ``action_client``: the chosen design, with topic goals and with action goals.
    With ``profile``: the chosen design's controller is sampled by py-spy. With ``view``:
    the chosen design again with the browser view attached (``<chosen>_viewer``).
    """
    rclpy.init()
    try:
        results = []
        if action_client:
            _, loop, priority = next(c for c in CONFIGS if c[0] == CHOSEN)
            for goals in ('topic', 'action'):
                results.append(run_config(f'{CHOSEN}_{goals}', loop, priority, seconds,
                                          progress=progress, goals=goals))
        for label, loop, priority in () if action_client else CONFIGS:
            duration = seconds if label == CHOSEN else compare_seconds
            results.append(run_config(label, loop, priority, duration, progress=progress,
                                      profile=profile and label == CHOSEN))
        if not action_client:  # the chosen design without the collision stage (#30)
            _, loop, priority = next(c for c in CONFIGS if c[0] == CHOSEN)
            results.append(run_config(f'{CHOSEN}_no_collision', loop, priority,
                                      compare_seconds, progress=progress,
                                      extra=('-p', 'collision.enabled:=false')))
        if view:
            _, loop, priority = next(c for c in CONFIGS if c[0] == CHOSEN)
            results.append(run_config(f'{CHOSEN}_viewer', loop, priority, compare_seconds,
                                      progress=progress, viewer=True))
        floor = run_floor(compare_seconds, progress=progress)
        return {'robot': 'simon', 'rate_hz_set': 1000.0, 'goals': GOALS, 'configs': results,
                'rclpy_floor_us': floor}
    finally:
        rclpy.try_shutdown()


def table(results):
    """Text table of :func:`run`'s results."""
    cols = ('rate_hz', 'jitter_us_p50', 'jitter_us_p99', 'jitter_us_p999', 'jitter_us_max',
            'compute_us_p50', 'compute_us_p99', 'latency_us_p50', 'latency_us_p99',
            'latency_us_p999', 'cpu_percent')
    head = ['design', 'secs'] + [c.replace('_us', '') for c in cols]
    lines = ['  '.join(f'{h:>13}' for h in head)]
    for r in results['configs']:
        row = [r['label'], f"{r['seconds']:.0f}"] + [
            f'{r[c]:.1f}' if c in r else '-' for c in cols]
        lines.append('  '.join(f'{v:>13}' for v in row))
    # where the compute goes: the node's own timing of each part of every tick ('-': not
    # part of that design's tick, e.g. the timer's inputs, taken by the executor)
    parts = [p for p in TICK_PHASES if any(f'{p}_us_p50' in r for r in results['configs'])]
    if parts:
        lines += ['', 'compute by part of the tick (us, p50 / p99): '
                  + ', '.join(f'{p}' for p in parts)]
        for r in results['configs']:
            cells = [f"{r[f'{p}_us_p50']:.1f} / {r[f'{p}_us_p99']:.1f}"
                     if r.get(f'{p}_us_p99', 0.0) > 0.0 else '-' for p in parts]
            lines.append('  '.join(f'{v:>15}' for v in [r['label']] + cells))
    floor = results.get('rclpy_floor_us')
    if floor:
        lines += ['', "rclpy's floor (a bare node making the tick's rclpy calls beside a 1 kHz "
                  'sim_robot; us, p50 / p99): '
                  + ', '.join(f'{part} {p50:.1f} / {p99:.1f}'
                              for part, (p50, p99) in floor.items())]
    for r in results['configs']:
        if 'profile' in r:
            lines += ['', f"where {r['label']}'s tick spends its time (py-spy, "
                      f"{r['profile']['samples']} samples at {PROFILE_RATE} Hz inside "
                      f'{PROFILE_ROOT}; % of them; its figures above were measured while '
                      'py-spy sampled it)', f"{'inclusive':>10} {'self':>7}  function"]
            lines += [f'{incl:>9.1f}% {own:>6.1f}%  {name}'
                      for name, incl, own in r['profile']['functions']]
    for r in results['configs']:
        if 'action_goals' in r:
            lines.append(f"{r['label']}: {r['action_goals']} MoveToPose goals, "
                         f"{r['feedback_messages']} feedback messages, {r['results']} results")
    return '\n'.join(lines)

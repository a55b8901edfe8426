"""
The nodes under attack: fuzzed over real DDS, their interfaces, their parameters, SROS2.

* ``ik_control bench fuzz`` with a few thousand messages: no crash, no command outside
  the limits, no command changed by a refused message, refusals counted;
* the nodes' interfaces read from the ROS graph are exactly the ones that
  ``docs/security.md`` documents and ``security/ik_control_policy.xml`` allows;
* every parameter that could make the arm faster is range-checked by
  ``set_parameters``;
* the policy is well-formed XML with the structure of the sros2 schema (sros2 itself
  cannot be installed here).
"""

import os
import re
import xml.etree.ElementTree as ElementTree

from ik_control import robots
from ik_control.ros.move_to_pose_server import load_action_type
import pytest
from ros_helpers import domain_id, REPO_ROOT

POLICY = os.path.join(REPO_ROOT, 'security', 'ik_control_policy.xml')
DOC = os.path.join(REPO_ROOT, 'docs', 'security.md')
OPTIONAL = {'/clock', '/tf', '/tf_static'}  # only with use_sim_time, or tf2 lookups
STARTUP = 120.0
ACTION_SERVICES = ('send_goal', 'cancel_goal', 'get_result')
ACTION_TOPICS = ('feedback', 'status')
NAME = re.compile(r'^(~/|/)?[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*$')


def test_fuzzing_a_running_pair_commands_nothing_unsafe():
    from ik_control.ros.harness import fuzz

    domain_id()
    results = fuzz.run(messages=3000, rate=2000.0, cycle=1000, quiet=500, seed=5,
                       namespace='/fuzz_nodes_test')
    print(fuzz.table(results))
    assert results['crashes'] == 0, results['crash_details']
    assert all(results['alive_at_end'].values())
    assert results['violations'] == 0, results['violation_examples']
    assert results['quiet_windows']['checked'] >= 1
    assert results['quiet_windows']['commands'] > 0
    # a malformed message superseded on its topic before a tick is not counted, so the
    # total only bounds; each kind is counted on its own in the test below
    assert 0 < results['refused_counted_by_node'] <= results['malformed_sent']
    assert results['commands_checked'] > 500
    # the robot itself (its own joint_states, positions over stamps) never moved faster
    # than its limits: bench soak's goal (issue #9), 5 % for stamp rounding
    motion = results['measured_motion']
    assert motion['samples'] > 500
    assert max(motion['step_speed_ratio'], motion['span_speed_ratio']) <= 1.05, motion
    # one tick per joint_states message at most: refused states trigger no tick
    assert results['commands_per_state'] < 1.1
    assert 'BAD_INPUT' in results['status_codes_seen']


# ---------------------------------------------------------------------- the policy
def _policy():
    return ElementTree.parse(POLICY).getroot()


def _profile(node):
    found = [p for p in _policy().iter('profile') if p.get('node') == node]
    assert len(found) == 1, node
    return found[0]


def _rules(profile, kind, permission):
    """Names a profile allows for ``kind`` ('topics'/'services') and ``permission``."""
    child = kind[:-1]
    return {e.text.strip() for group in profile.findall(kind)
            if group.get(permission) == 'ALLOW' for e in group.findall(child)}


def _resolve(name, ns, node):
    if name.startswith('/'):
        return name
    if name.startswith('~/'):
        return f"{ns.rstrip('/')}/{node}/{name[2:]}"
    return f"{ns.rstrip('/')}/{name}"


def test_the_policy_has_the_sros2_structure():
    root = _policy()
    assert root.tag == 'policy' and root.get('version') == '0.2.0'
    assert [c.tag for c in root] == ['enclaves']
    paths = [e.get('path') for e in root.find('enclaves')]
    assert paths == ['/ik_control/ik_controller', '/ik_control/sim_robot',
                     '/ik_control/operator', '/ik_control/admin']
    for enclave in root.find('enclaves'):
        assert enclave.tag == 'enclave' and [c.tag for c in enclave] == ['profiles']
        for profile in enclave.find('profiles'):
            assert profile.tag == 'profile'
            assert profile.get('ns') == '/' and NAME.match(profile.get('node'))
            for group in profile:
                assert group.tag in ('topics', 'services', 'actions')
                permissions = {'topics': ('publish', 'subscribe'),
                               'services': ('reply', 'request'),
                               'actions': ('call', 'execute')}[group.tag]
                assert set(group.attrib) <= set(permissions) and group.attrib
                assert set(group.attrib.values()) <= {'ALLOW', 'DENY'}
                assert len(group) > 0
                for entry in group:
                    assert entry.tag == group.tag[:-1]
                    assert NAME.match(entry.text.strip()), entry.text


def test_the_policy_names_the_effectors_of_every_bundled_robot():
    ctl = _profile('ik_controller')
    for setup in robots.SETUPS.values():
        for ee in setup.end_effectors:
            assert {f'~/{ee}/target_pose', f'~/{ee}/target_twist'} <= _rules(
                ctl, 'topics', 'subscribe')
            assert f'~/{ee}/goal_reached' in _rules(ctl, 'topics', 'publish')
            for user in ('ik_control_operator', 'ik_control_admin'):
                assert f'ik_controller/{ee}/target_pose' in _rules(_profile(user), 'topics',
                                                                   'publish')


def test_operators_may_send_move_to_pose_goals():
    assert _rules(_profile('ik_controller'), 'actions', 'execute') == {'~/move_to_pose'}
    for user in ('ik_control_operator', 'ik_control_admin'):
        assert _rules(_profile(user), 'actions', 'call') == {'ik_controller/move_to_pose'}


def test_only_the_admin_may_change_parameters():
    operator, admin = _profile('ik_control_operator'), _profile('ik_control_admin')
    setters = {'ik_controller/set_parameters', 'ik_controller/set_parameters_atomically'}
    assert not setters & _rules(operator, 'services', 'request')
    denied = {e.text.strip() for g in operator.findall('services')
              if g.get('request') == 'DENY' for e in g}
    assert setters <= denied
    assert setters <= _rules(admin, 'services', 'request')
    for user in (operator, admin):  # nobody but the robot publishes joint_states
        assert 'joint_states' not in _rules(user, 'topics', 'publish')


# ---------------------------------------------------------------------- the live graph
@pytest.fixture(scope='module')
def pair():
    from ik_control.ros.harness import node_rig

    domain_id()
    ns = '/security_test'
    nodes = node_rig.Pair('wam', ns)
    probe = None
    try:
        nodes.start()
        probe = node_rig.Probe(robots.robot('wam'), ns, name='security_probe')
        probe.wait_ready(timeout=STARTUP, pair=nodes)
        yield ns, probe
    finally:
        if probe is not None:
            probe.close()
        crashes = nodes.stop()
    assert not crashes, crashes


def _expected(node, ns, effectors):
    """Return what the policy allows ``node`` in namespace ``ns``, for ``effectors`` only."""
    profile = _profile(node)
    others = {ee for s in robots.SETUPS.values() for ee in s.end_effectors} - set(effectors)
    remap = {'/diagnostics': f'{ns}/diagnostics'}  # node_rig.Pair remaps it into the namespace

    def names(kind, permission):
        out = set()
        for name in _rules(profile, kind, permission):
            if name in OPTIONAL or any(f'/{ee}/' in name for ee in others):
                continue
            resolved = _resolve(name, ns, node)
            out.add(remap.get(resolved, resolved))
        return out
    expected = {'subscriptions': names('topics', 'subscribe'),
                'publications': names('topics', 'publish'),
                'services': names('services', 'reply')}
    # an action server is three services and two topics in the graph (where the node
    # serves it: ik_controller without ik_control_interfaces has none)
    if load_action_type() is not None:
        for action in names('actions', 'execute'):
            expected['services'] |= {f'{action}/_action/{s}' for s in ACTION_SERVICES}
            expected['publications'] |= {f'{action}/_action/{t}' for t in ACTION_TOPICS}
    return expected


def _graph(probe, node, ns):
    n = probe.node
    return {'subscriptions': {t for t, _ in n.get_subscriber_names_and_types_by_node(node, ns)},
            'publications': {t for t, _ in n.get_publisher_names_and_types_by_node(node, ns)},
            'services': {s for s, _ in n.get_service_names_and_types_by_node(node, ns)},
            'clients': {s for s, _ in n.get_client_names_and_types_by_node(node, ns)}}


@pytest.mark.parametrize('node', ['ik_controller', 'sim_robot'])
def test_nodes_have_exactly_the_documented_and_allowed_interfaces(pair, node):
    ns, probe = pair
    expected = _expected(node, ns, robots.SETUPS['wam'].end_effectors)
    graph = {}

    def complete():
        try:
            graph.update(_graph(probe, node, ns))
        except RuntimeError:  # NodeNameNonExistentError: not in the probe's graph yet
            return False
        return all(graph[k] >= expected[k] for k in expected)
    probe.spin_until(complete, 10.0)
    for kind in ('subscriptions', 'publications', 'services'):
        assert graph[kind] == expected[kind], kind
    assert graph['clients'] == set()  # it calls nobody
    # and the page documents every one of them, as the node declares it
    with open(DOC, encoding='utf-8') as stream:
        doc = stream.read()
    profile = _profile(node)
    for kind, permission in (('topics', 'subscribe'), ('topics', 'publish'),
                             ('services', 'reply'), ('actions', 'execute')):
        for name in _rules(profile, kind, permission):
            shown = re.sub(r'^~/(tool|right_hand|left_hand)/', '~/E/', name)
            assert f'`{shown}`' in doc, name


SPEED_PARAMETERS = [
    ('limits.velocity_scale', 1.01),
    ('limits.velocity_scale', 0.0),
    ('limits.max_velocity', [100.0]),
    ('limits.max_velocity', [-1.0]),
    ('limits.max_acceleration', [0.0]),
    ('limits.max_acceleration', [float('inf')]),
    ('limits.position_margin', -0.01),
    ('solver.gain', 1001.0),
    ('solver.gain', 501.0),  # more than rate_hz (500)
    ('solver.clamp_error', 11.0),
    ('solver.clamp_error_rotation', 4.0),
    ('joint_state_timeout', 11.0),
    ('twist_timeout', 11.0),
    ('reseed_tolerance', 4.0),
    ('rate_hz', 5000.0),  # read-only
    ('use_sim_time', True),
]


def test_parameters_that_could_move_the_arm_faster_are_range_checked(pair):
    from rcl_interfaces.srv import SetParameters
    from rclpy.parameter import Parameter

    ns, probe = pair
    names = sorted({name for name, _ in SPEED_PARAMETERS} - {'use_sim_time'})
    before = probe.controller_parameters(names)
    for name, value in SPEED_PARAMETERS:
        request = SetParameters.Request(
            parameters=[Parameter(name, value=value).to_parameter_msg()])
        result = probe.call(SetParameters, f'{ns}/ik_controller/set_parameters',
                            request).results[0]
        assert not result.successful and result.reason, (name, value)
    assert probe.controller_parameters(names) == before


# what the controller's refusal of each malformed kind says (its last_refusal)
REFUSALS = {
    'joint_states': {'length_mismatch': 'names but', 'missing_joint': 'lacks controlled joints',
                     'duplicate_joint': 'twice', 'unknown_joints': 'lacks controlled joints',
                     'nan_position': 'positions contain NaN or infinite',
                     'inf_position': 'positions contain NaN or infinite',
                     'huge_position': 'outside its limits', 'outside_limits': 'outside its limits',
                     'empty': 'lacks controlled joints'},
    'pose': {'nan_position': 'position contains NaN or infinite',
             'inf_position': 'position contains NaN or infinite',
             'zero_quaternion': 'orientation is not normalised (norm 0)',
             'unnormalised_quaternion': 'orientation is not normalised',
             'nan_quaternion': 'orientation contains NaN or infinite',
             'unknown_frame': "'no_such_frame'"},
    'twist': {'nan_linear': 'twist linear contains NaN or infinite',
              'inf_angular': 'twist angular contains NaN or infinite',
              'huge': 'twist components must be within', 'unknown_frame': "'no_such_frame'",
              'stamp_far_past': 'stamp is', 'stamp_far_future': 'stamp is'},
    'obstacles': {'nan_position': 'position contains NaN or infinite',
                  'zero_size': 'must be finite and > 0', 'negative_size': 'must be finite and > 0',
                  'inf_size': 'must be finite and > 0', 'huge_size': 'exceeds',
                  'zero_quaternion': 'orientation is not normalised (norm 0)',
                  'unnormalised_quaternion': 'orientation is not normalised',
                  'unknown_frame': "'no_such_frame'", 'unsupported_type': 'not an obstacle shape',
                  'unknown_action': 'unknown marker action',
                  'too_many_markers': 'markers in one message'},
}


def _malformed(factory, kind):
    """(ee, message) of malformed ``kind`` (topic, fault), made now (a fresh stamp)."""
    while True:
        topic, ee, msg, fault = factory.malformed()
        if (topic, fault) == kind:
            return ee, msg


def test_every_kind_of_malformed_message_is_refused_and_counted_on_its_own(pair):
    """
    The fuzzer's malformed kinds one at a time, the refusal counter read between them.

    A goal or obstacle message is sent once: it must add exactly one refusal, for its own
    reason (a newer message that could supersede it is not sent until it is counted). A
    joint_states message competes with the simulated robot's at 500 Hz, and the
    controller reads the newest per tick: it is published every 10 ms until the counter
    moves (at most 5 s), i.e. until a tick has read it. Throughout, every command must be
    the steady one: a kind taken instead of refused (a state re-seeds the command, an
    obstacle beside the arm pushes it, a goal moves it) changes it.
    """
    from ik_control.ros.harness import fuzz
    import numpy as np
    from ros_helpers import SCHEDULING_SLACK

    ns, probe = pair
    factory = fuzz.MessageFactory(robots.robot('wam'), np.random.default_rng(7))
    kinds = sorted(factory.faults)
    assert {(t, f) for t in REFUSALS for f in REFUSALS[t]} == set(kinds)
    steady = fuzz._settle(probe, None)
    assert steady is not None, 'the command did not settle'
    seen = {'commands': 0, 'changed': set()}

    def on_command(msg, t):
        point = msg.points[0]
        seen['commands'] += 1
        if max(np.max(np.abs(np.array(point.positions) - steady[0])),
               np.max(np.abs(np.array(point.velocities) - steady[1]))) > \
                fuzz.IDENTICAL_TOLERANCE:
            seen['changed'].add(kind)

    def refusals():
        probe.spin_for(SCHEDULING_SLACK)  # what is in flight reaches a tick
        values = probe.fresh_diagnostics()  # then a status published after it
        return int(values['refused_messages']), values['last_refusal']

    kind = None
    counted = {}
    probe.on_command = on_command
    try:
        refused, _ = refusals()
        for kind in kinds:
            topic = kind[0]
            published = 0
            if topic == 'joint_states':
                while probe.refused() <= refused and published < 500:
                    fuzz._publish(probe, topic, *_malformed(factory, kind))
                    published += 1
                    probe.spin_for(0.01)
            else:
                fuzz._publish(probe, topic, *_malformed(factory, kind))
                published = 1
            count, reason = refusals()
            counted[kind] = (count - refused, published, reason)
            refused = count
    finally:
        probe.on_command = None
    for (topic, fault), (n, published, reason) in counted.items():
        print(f'{topic}.{fault}: {n} refused of {published} sent: {reason}')
    for (topic, fault), (n, published, reason) in counted.items():
        assert n >= 1 if topic == 'joint_states' else n == 1, (topic, fault, n, published)
        assert REFUSALS[topic][fault] in reason, (topic, fault, reason)
    assert seen['commands'] > 100
    assert not seen['changed'], sorted(seen['changed'])

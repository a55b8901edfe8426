"""
Checks of launch/*.launch.py and config/{wam,simon}.yaml that run without ROS launch.

``launch`` and ``launch_ros`` are not installable in the plain virtual environment, so:

* the launch files are parsed (``ast``): each defines ``generate_launch_description``,
  names only executables that setup.py installs (or known ROS packages provide), and
  files that exist in the package and are installed;
* each launch file is run against a small stand-in of the launch API (only the names
  ik_control uses; an unknown name fails the import) to check the nodes it starts for
  each argument value;
* every parameter in config/wam.yaml and config/simon.yaml is declared by its node, with
  the declared type and range, and the robot set-up is the one of ``ik_control.robots``;
* both nodes really start with each parameter file (real rclpy and DDS) and the
  controller publishes a JointTrajectory.

The real launch system is exercised by ``launch_tests/`` on machines with ROS.
"""

import ast
from fnmatch import fnmatch
import glob
import importlib.util
import os
import sys
import types
from xml.etree import ElementTree

from ik_control import launch_util, robots
from ik_control.ik.pose_error import ERROR_MODES
from ik_control.ik.solver import METHODS
from ik_control.kinematics import RobotModel
from ik_control.kinematics.dh_file import load_dh_file
from ik_control.ros import ik_controller_parameters, sim_robot_node
from ik_control.ros.parameters import Param
import numpy as np
import pinocchio as pin
import pytest
from rclpy.parameter import Parameter
from ros_helpers import NodeProcess, REPO_ROOT, RosTestContext
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory
import yaml

LAUNCH_DIR = os.path.join(REPO_ROOT, 'launch')
LAUNCH_FILES = sorted(glob.glob(os.path.join(LAUNCH_DIR, '*.launch.py')))
# Python files that build the launch descriptions (the launch files delegate to it).
LAUNCH_SOURCES = LAUNCH_FILES + [os.path.join(REPO_ROOT, 'ik_control', 'launch_util.py')]
INSTALLED = {'launch': '*.launch.py', 'config': '*.yaml', 'urdf': '*.urdf'}
# Executables of other ROS packages that the launch files may start.
EXTERNAL_EXECUTABLES = {
    ('robot_state_publisher', 'robot_state_publisher'),
    ('ros_gz_sim', 'create'),
    ('ros_gz_bridge', 'parameter_bridge'),
    ('controller_manager', 'spawner'),
    ('rviz2', 'rviz2'),
}
ROBOTS = {
    'wam': {'params': 'config/wam.yaml', 'urdf': 'urdf/wam.urdf', 'rate_hz': 500.0,
            'controllers': 'config/wam_controllers.yaml'},
    'simon': {'params': 'config/simon.yaml', 'urdf': 'urdf/simon.urdf', 'rate_hz': 1000.0,
              'controllers': 'config/simon_controllers.yaml'},
}
CONTROLLER = 'ik_controller'
SIM = 'sim_robot'
SECTIONS = {'/**/' + CONTROLLER: CONTROLLER, '/**/' + SIM: SIM}
# Controller parameters that a parameter file leaves unset on purpose (commented out).
UNSET_ON_PURPOSE = {'limits.max_velocity'}
ENUMS = {
    (CONTROLLER, 'solver.method'): set(METHODS),
    (CONTROLLER, 'solver.error_mode'): set(ERROR_MODES),
    (CONTROLLER, 'loop'): set(ik_controller_parameters.LOOP_MODES),
    (SIM, 'loop'): {'fixed_rate', 'timer'},
    (SIM, 'backend'): set(sim_robot_node.BACKENDS),
}


def repo_path(relative):
    """Return the absolute path of ``relative`` in the source tree."""
    return os.path.join(REPO_ROOT, *relative.split('/'))


# ---------------------------------------------------------------- declared parameters
def declared(node):
    """Return ``{name: (default, lo, hi)}`` declared by ``node`` (either table format)."""
    table = (ik_controller_parameters.PARAMETERS if node == CONTROLLER
             else sim_robot_node.PARAMETERS)
    out = {}
    for name, entry in table.items():
        if isinstance(entry, Param):
            out[name] = (entry.default, entry.lo, entry.hi)
        else:
            default, _, rng = entry
            out[name] = (default,) + (tuple(rng) if rng else (None, None))
    return out


def type_error(default, value):
    """Return why ``value`` does not have the type that ``default`` declares ('' if it has)."""
    if isinstance(default, Parameter.Type):
        item = {Parameter.Type.STRING_ARRAY: str, Parameter.Type.DOUBLE_ARRAY: float,
                Parameter.Type.INTEGER_ARRAY: int, Parameter.Type.BOOL_ARRAY: bool}[default]
        ok = isinstance(value, list) and all(type(v) is item for v in value)
        return '' if ok else f'expected a list of {item.__name__}, got {value!r}'
    if isinstance(default, list):
        item = type(default[0])
        ok = isinstance(value, list) and all(type(v) is item for v in value)
        return '' if ok else f'expected a list of {item.__name__}, got {value!r}'
    # ROS parameters are strictly typed: 500 (integer) is not a double, true is not 1.
    if type(value) is not type(default):
        return f'expected {type(default).__name__}, got {type(value).__name__} {value!r}'
    return ''


def load_yaml(robot):
    """Return the parsed parameter file of ``robot``."""
    with open(repo_path(ROBOTS[robot]['params']), encoding='utf-8') as f:
        return yaml.safe_load(f)


def flat(section):
    """Return the dotted-name parameters of one node section of a parameter file."""
    out = {}

    def walk(prefix, value):
        if isinstance(value, dict):
            for key, item in value.items():
                walk(f'{prefix}.{key}' if prefix else key, item)
        else:
            out[prefix] = value
    walk('', section['ros__parameters'])
    return out


@pytest.fixture(scope='module', params=sorted(ROBOTS))
def robot(request):
    """Name of the robot under test."""
    return request.param


@pytest.fixture(scope='module')
def params(robot):
    """``{node: {name: value}}`` of the robot's parameter file."""
    document = load_yaml(robot)
    assert set(document) == set(SECTIONS), 'one section per node, valid in any namespace'
    for section in document.values():
        assert set(section) == {'ros__parameters'}
    out = {node: flat(document[key]) for key, node in SECTIONS.items()}
    for node in (CONTROLLER, SIM):  # the launch helper reads the file the same way
        assert launch_util.node_parameters(repo_path(ROBOTS[robot]['params']), node) == \
            out[node]
    return out


# ---------------------------------------------------------------- static launch-file checks
def _console_scripts():
    tree = ast.parse(open(os.path.join(REPO_ROOT, 'setup.py'), encoding='utf-8').read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == 'console_scripts':
                    entries = [ast.literal_eval(e) for e in value.elts]
                    return {e.split('=')[0].strip(): e.split('=')[1].strip() for e in entries}
    raise AssertionError('setup.py declares no console_scripts')


def _calls_with_executable(path):
    tree = ast.parse(open(path, encoding='utf-8').read(), filename=path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            kwargs = {k.arg: k.value for k in node.keywords if k.arg}
            if 'executable' in kwargs:
                yield {k: ast.literal_eval(v) for k, v in kwargs.items()
                       if k in ('package', 'executable')
                       and isinstance(v, ast.Constant)}, node.lineno


def _string_constants(path):
    tree = ast.parse(open(path, encoding='utf-8').read(), filename=path)
    return [n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def test_launch_files_present():
    names = {os.path.basename(p) for p in LAUNCH_FILES}
    assert {'wam.launch.py', 'simon.launch.py', 'gazebo.launch.py'} <= names


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=os.path.basename)
def test_launch_file_parses_and_defines_generate_launch_description(path):
    tree = ast.parse(open(path, encoding='utf-8').read(), filename=path)
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert 'generate_launch_description' in [f.name for f in functions]
    assert ast.get_docstring(tree), 'the launch file documents how to run it'


def _delegated_calls(path):
    """Names the file imports from ik_control.launch_util and calls."""
    tree = ast.parse(open(path, encoding='utf-8').read(), filename=path)
    imported = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                and n.module == 'ik_control.launch_util' for a in n.names}
    return {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name) and n.func.id in imported}


@pytest.mark.parametrize('path', LAUNCH_SOURCES, ids=os.path.basename)
def test_executables_are_installed(path):
    scripts = _console_scripts()
    calls = list(_calls_with_executable(path))
    if not calls:  # a launch file that delegates: the nodes are started by launch_util
        delegated = _delegated_calls(path)
        assert delegated, f'{path} starts no node and calls no ik_control.launch_util function'
        util = LAUNCH_SOURCES[-1]
        assert list(_calls_with_executable(util)) and all(
            callable(getattr(importlib.import_module('ik_control.launch_util'), name))
            for name in delegated), delegated
    for kwargs, line in calls:
        assert 'executable' in kwargs and 'package' in kwargs, \
            f'{path}:{line}: package and executable must be literal strings'
        if kwargs['package'] == robots.PACKAGE:
            assert kwargs['executable'] in scripts, \
                f"{path}:{line}: '{kwargs['executable']}' is not a console script of setup.py"
            module, function = scripts[kwargs['executable']].split(':')
            assert callable(getattr(importlib.import_module(module), function))
        else:
            assert (kwargs['package'], kwargs['executable']) in EXTERNAL_EXECUTABLES, \
                f'{path}:{line}: unexpected executable {kwargs}'


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=os.path.basename)
def test_referenced_package_files_exist_and_are_installed(path):
    referenced = [s for s in _string_constants(path)
                  if s.split('/')[0] in INSTALLED and '.' in s and ' ' not in s]
    assert referenced, 'the launch file names its config and URDF files'
    for relative in referenced:
        subdir, _, name = relative.partition('/')
        assert os.path.isfile(repo_path(relative)), f'{relative} does not exist'
        assert '/' not in name and fnmatch(name, INSTALLED[subdir]), \
            f'{relative} is not installed by setup.py ({subdir}/{INSTALLED[subdir]})'


# ---------------------------------------------------------------- launch API stand-in
class Recorded:
    """An action or substitution of the stand-in launch API: keeps its arguments."""

    def __init__(self, *args, **kwargs):
        """Record ``args`` and ``kwargs``."""
        self.args = args
        self.kwargs = kwargs


class LaunchConfiguration(Recorded):
    """Stand-in of launch.substitutions.LaunchConfiguration."""

    def perform(self, context):
        """Return the argument's value in ``context``."""
        return context.launch_configurations[self.args[0]]


STANDIN = {
    'launch': ['LaunchDescription'],
    'launch.actions': ['DeclareLaunchArgument', 'IncludeLaunchDescription', 'OpaqueFunction',
                       'RegisterEventHandler'],
    'launch.event_handlers': ['OnProcessExit'],
    'launch.launch_description_sources': ['PythonLaunchDescriptionSource'],
    'launch.substitutions': ['LaunchConfiguration', 'PathJoinSubstitution'],
    'launch_ros': [],
    'launch_ros.actions': ['Node'],
    'launch_ros.parameter_descriptions': ['ParameterValue'],
    'launch_ros.substitutions': ['FindPackageShare'],
}


@pytest.fixture
def launch_api(monkeypatch):
    """Install the stand-in ``launch`` and ``launch_ros`` modules for one test."""
    modules = {}
    for name, classes in STANDIN.items():
        module = types.ModuleType(name)
        for cls in classes:
            setattr(module, cls, LaunchConfiguration if cls == 'LaunchConfiguration'
                    else type(cls, (Recorded,), {}))
        modules[name] = module
        monkeypatch.setitem(sys.modules, name, module)
    for name, module in modules.items():
        parent, _, child = name.rpartition('.')
        if parent:
            setattr(modules[parent], child, module)
    return modules


def run_launch_file(name, **arguments):
    """Run ``launch/<name>`` against the stand-in API; return (declared args, actions)."""
    spec = importlib.util.spec_from_file_location(name.replace('.', '_'),
                                                  os.path.join(LAUNCH_DIR, name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    description = module.generate_launch_description()
    assert type(description).__name__ == 'LaunchDescription'
    entities = description.args[0]
    declared_args = {e.args[0]: e.kwargs for e in entities
                     if type(e).__name__ == 'DeclareLaunchArgument'}
    values = {k: v.get('default_value', '') for k, v in declared_args.items()}
    unknown = set(arguments) - set(values)
    assert not unknown, f'{name} has no arguments {unknown}'
    values.update(arguments)
    for key, value in values.items():
        choices = declared_args[key].get('choices')
        assert choices is None or value in choices, (key, value, choices)
    context = types.SimpleNamespace(launch_configurations=values)
    actions = []
    for entity in entities:
        if type(entity).__name__ == 'OpaqueFunction':
            function = entity.kwargs['function']
            actions += function(context, *entity.kwargs.get('args', []))
        elif type(entity).__name__ != 'DeclareLaunchArgument':
            actions.append(entity)
    return declared_args, actions


def nodes_of(actions):
    """Return the Node actions among ``actions`` and behind their event handlers."""
    found = []
    for action in actions:
        kind = type(action).__name__
        if kind == 'Node':
            found.append(action)
        elif kind == 'RegisterEventHandler':
            found += nodes_of(action.args[0].kwargs['on_exit'])
    return found


def node_by_executable(actions, executable):
    """Return the single Node running ``executable``."""
    matches = [n for n in nodes_of(actions) if n.kwargs['executable'] == executable]
    assert len(matches) == 1, f'{len(matches)} nodes run {executable}'
    return matches[0]


def parameter_dict(node):
    """Return the parameter files and the merged dict overrides of a Node."""
    files, overrides = [], {}
    for item in node.kwargs.get('parameters', []):
        if isinstance(item, dict):
            overrides.update(item)
        else:
            files.append(item)
    return files, overrides


def string_value(value):
    """Return the text of a robot_description parameter (must be a str ParameterValue)."""
    assert type(value).__name__ == 'ParameterValue' and value.kwargs == {'value_type': str}, \
        'robot_description must be ParameterValue(text, value_type=str)'
    return value.args[0]


@pytest.mark.parametrize('robot_name', sorted(ROBOTS))
@pytest.mark.parametrize('sim', ['true', 'false'])
def test_bringup_launch_nodes(launch_api, robot_name, sim):
    files = ROBOTS[robot_name]
    declared_args, actions = run_launch_file(f'{robot_name}.launch.py', sim=sim)
    assert set(declared_args) == {'urdf', 'sim', 'backend', 'rate_hz', 'params_file',
                                  'namespace', 'use_sim_time', 'log_level', 'rviz', 'view',
                                  'view_port'}
    assert declared_args['urdf']['default_value'] == files['urdf']
    assert declared_args['sim']['default_value'] == 'true'
    assert declared_args['backend']['default_value'] == 'kinematic'
    assert float(declared_args['rate_hz']['default_value']) == files['rate_hz']
    assert all(a.get('description') for a in declared_args.values())

    urdf_text = open(repo_path(files['urdf']), encoding='utf-8').read()
    params_file = launch_util.package_file(files['params'])
    assert os.path.samefile(params_file, repo_path(files['params']))

    rsp = node_by_executable(actions, 'robot_state_publisher')
    assert string_value(parameter_dict(rsp)[1]['robot_description']) == urdf_text

    controller = node_by_executable(actions, 'ik_controller')
    assert controller.kwargs['package'] == robots.PACKAGE
    assert controller.kwargs['name'] == CONTROLLER
    file_list, overrides = parameter_dict(controller)
    assert file_list == [params_file]
    assert string_value(overrides.pop('robot_description')) == urdf_text
    assert overrides == {'rate_hz': files['rate_hz']}

    sims = [n for n in nodes_of(actions) if n.kwargs['executable'] == 'sim_robot']
    if sim == 'false':
        assert sims == [], 'sim:=false must not start the simulated robot'
        assert len(nodes_of(actions)) == 2
        return
    assert len(sims) == 1 and sims[0].kwargs['name'] == SIM
    file_list, overrides = parameter_dict(sims[0])
    assert file_list == [params_file]
    assert string_value(overrides.pop('robot_description')) == urdf_text
    assert overrides == {'backend': 'kinematic'}


def test_bringup_params_file_namespace_sim_time_and_log_level(launch_api, tmp_path):
    # a user's parameter file: its own rate and backend, unless rate_hz/backend are given
    mine = tmp_path / 'my_wam.yaml'
    mine.write_text('ik_controller:\n  ros__parameters:\n    rate_hz: 250.0\n')
    _, actions = run_launch_file('wam.launch.py', params_file=str(mine), namespace='arm1',
                                 use_sim_time='true', log_level='debug')
    for node in nodes_of(actions):
        assert node.kwargs['namespace'] == 'arm1'
        assert node.kwargs['arguments'] == ['--ros-args', '--log-level', 'debug']
        assert {'use_sim_time': True} in node.kwargs['parameters']
    controller = node_by_executable(actions, 'ik_controller')
    files, overrides = parameter_dict(controller)
    assert files == [str(mine)] and 'rate_hz' not in overrides
    files, overrides = parameter_dict(node_by_executable(actions, 'sim_robot'))
    assert files == [str(mine)] and 'backend' not in overrides
    _, actions = run_launch_file('wam.launch.py', params_file=str(mine), rate_hz='100')
    assert parameter_dict(node_by_executable(actions, 'ik_controller'))[1]['rate_hz'] == 100.0
    for node in nodes_of(actions):  # the defaults: no namespace, wall clock, info
        assert node.kwargs['namespace'] == ''
        assert node.kwargs['arguments'] == ['--ros-args', '--log-level', 'info']
        assert {'use_sim_time': True} not in node.kwargs['parameters']
    with pytest.raises(ValueError, match="launch argument params_file: 'nope.yaml'"):
        run_launch_file('wam.launch.py', params_file='nope.yaml')


@pytest.mark.parametrize('robot_name', sorted(ROBOTS))
def test_view_true_starts_the_browser_view_of_the_controllers_robot(launch_api, robot_name):
    from ik_control.ros.viewer_node import PARAMETERS as VIEWER

    _, actions = run_launch_file(f'{robot_name}.launch.py')
    assert not [n for n in nodes_of(actions) if n.kwargs['executable'] == 'ik_viewer']
    _, actions = run_launch_file(f'{robot_name}.launch.py', view='true', view_port='8090')
    viewer = node_by_executable(actions, 'ik_viewer')
    robot, port = viewer.kwargs['parameters'][:2]
    assert port == {'port': 8090}
    assert set(robot) | set(port) <= set(VIEWER)  # only parameters the viewer declares
    params = launch_util.package_file(ROBOTS[robot_name]['params'])
    controller = launch_util.node_parameters(params, CONTROLLER)
    for name in ('base_frame', 'end_effectors', 'joints'):
        assert robot[name] == controller[name]
    urdf_text = open(repo_path(ROBOTS[robot_name]['urdf']), encoding='utf-8').read()
    assert string_value(robot['robot_description']) == urdf_text


@pytest.mark.parametrize('robot_name, base', [('wam', 'wam_base'), ('simon', 'simon_base')])
def test_rviz_true_starts_rviz_on_the_shipped_view_at_the_robots_base(launch_api, robot_name,
                                                                      base):
    _, actions = run_launch_file(f'{robot_name}.launch.py')
    assert not [n for n in nodes_of(actions) if n.kwargs['executable'] == 'rviz2']
    _, actions = run_launch_file(f'{robot_name}.launch.py', rviz='true')
    rviz = node_by_executable(actions, 'rviz2')
    view = launch_util.package_file(launch_util.RVIZ_CONFIG)
    assert rviz.kwargs['arguments'] == ['-d', view, '-f', base]
    with open(view, encoding='utf-8') as f:
        config = yaml.safe_load(f)
    displays = {d['Class']: d for d in config['Visualization Manager']['Displays']}
    assert displays['rviz_default_plugins/MarkerArray']['Topic']['Value'] == \
        '/ik_controller/markers'
    assert displays['rviz_default_plugins/RobotModel']['Description Topic']['Value'] == \
        '/robot_description'


def test_bringup_launch_arguments_override(launch_api):
    _, actions = run_launch_file('simon.launch.py', backend='mujoco', rate_hz='250')
    assert parameter_dict(node_by_executable(actions, 'ik_controller'))[1]['rate_hz'] == 250.0
    assert parameter_dict(node_by_executable(actions, 'sim_robot'))[1]['backend'] == 'mujoco'
    with pytest.raises(ValueError, match='rate_hz must be a number'):
        run_launch_file('wam.launch.py', rate_hz='fast')


# A DH file given as launch argument urdf, and the bringup whose parameter file it replaces
# the robot of: sam9 (9 joints, limits +-pi) and the WAM's DH table (asymmetric limits).
DH_BRINGUPS = [('wam.launch.py', 'config/robots/sam9.yaml'),
               ('simon.launch.py', 'config/robots/wam_dh.yaml')]


def _reference_tool(urdf_text, base, tip, joint_names, q):
    """Placement of ``tip`` in ``base`` at joint values ``q`` by a fresh pinocchio model."""
    model = pin.buildModelFromXML(urdf_text)
    data = model.createData()
    config = pin.neutral(model)
    assert model.nq == len(joint_names)
    for name, value in zip(joint_names, q):
        config[model.joints[model.getJointId(name)].idx_q] = value
    pin.framesForwardKinematics(model, data, config)
    T = data.oMf[model.getFrameId(base)].inverse() * data.oMf[model.getFrameId(tip)]
    return T.homogeneous


@pytest.mark.parametrize('launch_file, dh_file', DH_BRINGUPS)
@pytest.mark.parametrize('sim', ['true', 'false'])
def test_bringup_with_a_dh_file(launch_api, launch_file, dh_file, sim):
    dh = load_dh_file(repo_path(dh_file))
    joints = list(dh.joint_names)
    _, actions = run_launch_file(launch_file, urdf=dh_file, sim=sim)
    params_file = launch_util.package_file(ROBOTS[launch_file.split('.')[0]]['params'])

    # robot_state_publisher: the URDF text generated from the DH file
    rsp = node_by_executable(actions, 'robot_state_publisher')
    text = string_value(parameter_dict(rsp)[1]['robot_description'])
    assert text == dh.urdf()
    urdf_joints = [j.get('name') for j in ElementTree.fromstring(text).findall('joint')
                   if j.get('type') in ('revolute', 'prismatic', 'continuous')]
    assert urdf_joints == joints and len(joints) == (9 if 'sam9' in dh_file else 7)

    # the same kinematics as the DH table (SAM eq. 2), by pinocchio from the text
    rng = np.random.default_rng(17)
    lower = np.array([r.lower for r in dh.rows])
    upper = np.array([r.upper for r in dh.rows])
    for q in rng.uniform(lower, upper, size=(3, len(joints))):
        T = _reference_tool(text, dh.base_link, dh.tool_link, joints, q)
        assert np.allclose(T, dh.forward(q), atol=1e-9)

    # ik_controller: the DH robot's set-up replaces the parameter file's, and it loads
    controller = node_by_executable(actions, 'ik_controller')
    file_list, overrides = parameter_dict(controller)
    assert file_list == [params_file]
    overrides['robot_description'] = string_value(overrides['robot_description'])
    assert overrides['robot_description'] == text
    assert overrides['base_frame'] == dh.base_link
    assert overrides['end_effectors'] == [dh.tool_link]
    assert overrides['end_effector_modes'] == ['pose']
    assert overrides['joints'] == joints
    values = launch_util.node_parameters(params_file, CONTROLLER)
    values.update(overrides)
    model = ik_controller_parameters.load_model(values)
    assert list(model.joint_names) == joints
    q = rng.uniform(lower, upper)
    assert np.allclose(model.frame_placements(q)[0], dh.forward(q), atol=1e-9)
    reference, start = robots.load(repo_path(dh_file))   # as bench and play load it
    assert np.allclose(reference.frame_placements(q), model.frame_placements(q))

    sims = [n for n in nodes_of(actions) if n.kwargs['executable'] == 'sim_robot']
    if sim == 'false':
        assert sims == [] and len(nodes_of(actions)) == 2
        return
    # sim_robot: the DH robot's joints, from the middle of its limits
    sim_node, = sims
    file_list, overrides = parameter_dict(sim_node)
    assert file_list == [params_file]
    overrides['robot_description'] = string_value(overrides['robot_description'])
    assert overrides['robot_description'] == text
    assert overrides['joints'] == joints
    assert np.allclose(overrides['initial_positions'], 0.5 * (lower + upper))
    assert np.allclose(overrides['initial_positions'], start)
    values = launch_util.node_parameters(params_file, SIM)
    values.update(overrides)
    simulated = sim_robot_node.make_sim(values, 0.0)
    assert list(simulated.joint_names) == joints
    assert np.allclose(simulated.position, 0.5 * (lower + upper))


def test_bringup_urdf_argument_paths(launch_api, tmp_path, monkeypatch):
    # a URDF by absolute path: its text, with the parameter file's set-up
    urdf = tmp_path / 'my_wam.urdf'
    urdf.write_text(open(repo_path('urdf/wam.urdf'), encoding='utf-8').read()
                    .replace('<robot name="wam"', '<robot name="my_wam"'))
    _, actions = run_launch_file('wam.launch.py', urdf=str(urdf))
    file_list, overrides = parameter_dict(node_by_executable(actions, 'ik_controller'))
    assert string_value(overrides.pop('robot_description')) == urdf.read_text()
    assert overrides == {'rate_hz': 500.0}
    # a relative path: the current directory first, then the package share
    monkeypatch.chdir(tmp_path)
    assert os.path.samefile(launch_util.robot_file('my_wam.urdf'), urdf)
    assert os.path.samefile(launch_util.robot_file('config/robots/sam9.yaml'),
                            repo_path('config/robots/sam9.yaml'))
    for bad in ('missing.yaml', str(tmp_path / 'missing.urdf'), ' '):
        with pytest.raises(ValueError, match='launch argument urdf'):
            run_launch_file('wam.launch.py', urdf=bad)
    broken = tmp_path / 'broken.yaml'
    broken.write_text('joints: []\n')
    with pytest.raises(ValueError, match='joints must be a non-empty list'):
        run_launch_file('wam.launch.py', urdf=str(broken))


def test_the_generic_bringup_runs_an_arm_from_the_files_ik_control_setup_writes(
        launch_api, tmp_path):
    from ik_control.bench.arms import EXAMPLE_ARMS, example_robot_urdf
    from ik_control.cli import main as cli_main

    relative, base, tip = EXAMPLE_ARMS['ur5']
    urdf = example_robot_urdf(relative)
    assert cli_main(['setup', urdf, '--tip', tip, '--base', base, '--out', str(tmp_path),
                     '--name', 'ur5', '--samples', '20']) == 0
    params = str(tmp_path / 'ur5.yaml')
    _, actions = run_launch_file('ik_control.launch.py', urdf=urdf, params_file=params)
    for executable in ('ik_controller', 'sim_robot'):
        files, overrides = parameter_dict(node_by_executable(actions, executable))
        assert files == [params]
        assert string_value(overrides['robot_description']) == open(urdf).read()
        assert 'rate_hz' not in overrides     # the file's (500 Hz, as the bundled default)
    defaults = launch_util.node_parameters(params, launch_util.CONTROLLER)
    assert defaults['base_frame'] == base and defaults['end_effectors'] == [tip]


@pytest.mark.parametrize('robot_name', sorted(ROBOTS))
def test_gazebo_launch(launch_api, robot_name):
    files = ROBOTS[robot_name]
    declared_args, actions = run_launch_file('gazebo.launch.py', robot=robot_name)
    assert set(declared_args) == {'robot'}
    assert sorted(declared_args['robot']['choices']) == sorted(ROBOTS)

    kinds = [type(a).__name__ for a in actions]
    assert kinds.count('IncludeLaunchDescription') == 1  # gz_sim.launch.py
    include = actions[kinds.index('IncludeLaunchDescription')]
    source_path = include.args[0].args[0].args[0]
    assert source_path[1:] == ['launch', 'gz_sim.launch.py']
    assert source_path[0].args == ('ros_gz_sim',)
    assert '-r' in dict(include.kwargs['launch_arguments'])['gz_args'].split()

    # the event chain: spawn -> joint_state_broadcaster -> JTC -> ik_controller
    handlers = {a.args[0].kwargs['target_action']: a.args[0].kwargs['on_exit']
                for a in actions if type(a).__name__ == 'RegisterEventHandler'}
    spawn = node_by_executable(actions, 'create')
    assert spawn in actions and '-topic' in spawn.kwargs['arguments']
    broadcaster, = handlers[spawn]
    assert broadcaster.kwargs['arguments'] == ['joint_state_broadcaster']
    trajectory, = handlers[broadcaster]
    jtc_args = trajectory.kwargs['arguments']
    assert jtc_args[0] == 'joint_trajectory_controller'
    param_file = jtc_args[jtc_args.index('--param-file') + 1]
    assert os.path.samefile(param_file, repo_path(files['controllers']))
    controller, = handlers[trajectory]
    assert controller.kwargs['executable'] == 'ik_controller'

    file_list, overrides = parameter_dict(controller)
    assert [os.path.realpath(f) for f in file_list] == \
        [os.path.realpath(repo_path(files['params']))]
    assert overrides['use_sim_time'] is True
    description = string_value(overrides['robot_description'])
    rsp = node_by_executable(actions, 'robot_state_publisher')
    assert string_value(parameter_dict(rsp)[1]['robot_description']) == description
    assert parameter_dict(rsp)[1]['use_sim_time'] is True
    bridge = node_by_executable(actions, 'parameter_bridge')
    assert bridge.kwargs['arguments'] == ['/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock']

    # the URDF Gazebo gets: controllers file resolved and installed, base bolted down
    assert '$(find' not in description
    share = robots.share_directory()
    assert f'<parameters>{share}/{files["controllers"]}</parameters>' in description
    assert launch_util.root_link(description) == 'world'
    setup = robots.SETUPS[robot_name]
    model = RobotModel.from_urdf(description, joints=setup.joints,
                                 base_frame=setup.base_frame,
                                 end_effectors=setup.end_effectors)
    reference = robots.robot(robot_name)
    q = robots.ready_pose(robot_name)
    assert np.allclose(model.frame_placements(q), reference.frame_placements(q))


def test_fix_to_world_keeps_a_world_root():
    urdf = '<robot name="r"><link name="world"/><link name="b"/>' \
           '<joint name="j" type="fixed"><parent link="world"/><child link="b"/></joint></robot>'
    assert launch_util.fix_to_world(urdf) == urdf
    assert launch_util.resolve_find('$(find ik_control)/x', '/opt/share') == '/opt/share/x'


# ---------------------------------------------------------------- parameter files
def test_parameter_names_types_and_ranges(robot, params):
    for node, values in params.items():
        table = declared(node)
        for name, value in values.items():
            assert name in table, f"{node} does not declare parameter '{name}'"
            default, lo, hi = table[name]
            problem = type_error(default, value)
            assert not problem, f'{node} {name}: {problem}'
            if lo is not None:
                assert lo <= value <= hi, f'{node} {name} = {value} outside [{lo}, {hi}]'
            if (node, name) in ENUMS:
                assert value in ENUMS[node, name], f'{node} {name} = {value!r}'


def test_every_parameter_written_out(robot, params):
    text = open(repo_path(ROBOTS[robot]['params']), encoding='utf-8').read()
    for node, values in params.items():
        missing = set(declared(node)) - set(values)
        if node == CONTROLLER:
            assert missing <= UNSET_ON_PURPOSE, f'{node}: {sorted(missing)} not in the file'
        else:
            assert not missing, f'{node}: {sorted(missing)} not in the file'
        for name in missing:  # documented as a comment instead
            assert f'# {name.split(".")[-1]}:' in text, name
    for line_no, line in enumerate(text.splitlines(), 1):
        assert len(line) <= 99, f'line {line_no} is longer than 99 characters'


def test_robot_setup_matches_robots_module(robot, params):
    setup = robots.SETUPS[robot]
    ctrl, sim = params[CONTROLLER], params[SIM]
    assert ctrl['base_frame'] == setup.base_frame
    assert ctrl['end_effectors'] == list(setup.end_effectors)
    assert ctrl['end_effector_modes'] == ['pose'] * len(setup.end_effectors)
    assert ctrl['joints'] == list(setup.joints)
    assert ctrl['rate_hz'] == ROBOTS[robot]['rate_hz']
    assert ctrl['robot_description'] == '' and ctrl['urdf_path'] == ''
    assert sim['joints'] == list(setup.joints)
    assert sim['initial_positions'] == list(setup.ready)
    assert sim['backend'] == 'kinematic'
    assert sim['command_interface'] == ctrl['command_interface']
    assert sim['command_topic'] == ctrl['output_topic']
    with open(repo_path(ROBOTS[robot]['controllers']), encoding='utf-8') as f:
        jtc = yaml.safe_load(f)['joint_trajectory_controller']['ros__parameters']
    assert jtc['joints'] == ctrl['joints'], 'Gazebo JTC and ik_controller joints differ'


def test_frames_and_joints_exist_in_urdf(robot, params):
    ctrl, sim = params[CONTROLLER], params[SIM]
    urdf = repo_path(ROBOTS[robot]['urdf'])
    model = RobotModel.from_urdf(urdf, joints=ctrl['joints'], base_frame=ctrl['base_frame'],
                                 end_effectors=list(zip(ctrl['end_effectors'],
                                                        ctrl['end_effector_modes'])))
    assert model.end_effector_names == tuple(ctrl['end_effectors'])
    sim_model = RobotModel.from_urdf(urdf, joints=sim['joints'])
    q0 = np.array(sim['initial_positions'])
    assert list(sim_model.joint_names) == sim['joints']
    assert np.all((sim_model.lower <= q0) & (q0 <= sim_model.upper)), \
        'ready pose outside the joint limits'


# ---------------------------------------------------------------- both nodes, for real
@pytest.fixture(scope='module')
def ros():
    """Test node on the run's ROS domain."""
    with RosTestContext('launch_files_test') as context:
        yield context


@pytest.fixture(scope='module')
def started_nodes(ros, tmp_path_factory):
    """
    Start ik_controller and sim_robot with each parameter file (all at once).

    The WAM gets its URDF as the launch files give it, the text in ``robot_description``
    from a second parameter file (what launch writes for a parameter dict); SIMON by
    ``urdf_path``.
    """
    procs = {}
    try:
        for robot_name, files in ROBOTS.items():
            ns = f'/launch_check_{robot_name}'
            args = ['--params-file', repo_path(files['params']), '-r', f'__ns:={ns}']
            if robot_name == 'wam':
                description = tmp_path_factory.mktemp('description') / 'robot.yaml'
                xml = open(repo_path(files['urdf']), encoding='utf-8').read()
                description.write_text(yaml.safe_dump(
                    {'/**': {'ros__parameters': {'robot_description': xml}}}))
                args += ['--params-file', str(description)]
            else:
                args += ['-p', 'urdf_path:=' + repo_path(files['urdf'])]
            procs[robot_name] = {
                'ns': ns,
                'states': ros.collect(JointState, f'{ns}/joint_states'),
                'commands': ros.collect(JointTrajectory,
                                        f'{ns}/joint_trajectory_controller/joint_trajectory'),
                'controller': NodeProcess('ik_control.ros.ik_controller_node', args),
                'sim': NodeProcess('ik_control.ros.sim_robot_node', args),
            }
        yield procs
    finally:
        for entry in procs.values():
            entry['controller'].stop()
            entry['sim'].stop()


def _output(entry):
    return '\n'.join(f'--- {k} stderr:\n{entry[k].stderr}' for k in ('controller', 'sim'))


@pytest.mark.parametrize('robot_name', sorted(ROBOTS))
def test_nodes_start_with_parameter_file(ros, started_nodes, robot_name):
    entry = started_nodes[robot_name]
    setup = robots.SETUPS[robot_name]
    try:
        state = entry['states'].wait(timeout=20.0)
        command = entry['commands'].wait(timeout=10.0)
    except TimeoutError as exc:
        pytest.fail(f'{robot_name}: {exc}\n{_output(entry)}')
    assert list(state.name) == list(setup.joints)
    assert np.allclose(state.position, setup.ready)
    assert list(command.joint_names) == list(setup.joints)
    assert len(command.points) >= 1
    assert np.all(np.isfinite(command.points[0].positions))
    for key in ('controller', 'sim'):
        assert entry[key].returncode is None, f'{key} exited\n{_output(entry)}'
        assert 'startup failed' not in entry[key].stderr
        assert 'invalid configuration' not in entry[key].stderr


def test_the_wam_given_its_urdf_text_in_robot_description_reaches_a_goal(ros, started_nodes):
    """
    The WAM's controller, started as the launch files start it, follows a pose goal.

    Its URDF is the text in ``robot_description`` (a string parameter from a parameter
    file, what launch writes for ``ParameterValue(text, value_type=str)``; urdf_path is
    empty in config/wam.yaml). The goal, the tool's pose at another configuration, must
    be reached within 1 mm and 10 mrad, measured from the robot's joint_states by
    pinocchio on urdf/wam.urdf. A node that read its model from urdf_path alone does not
    start; one that took the text for YAML or lost part of it does not reach the goal.
    """
    from geometry_msgs.msg import PoseStamped
    from ik_control.ros.conversions import pose_stamped
    from std_msgs.msg import Bool
    from test_ik_controller_node import _errors, LATCHED, PinocchioFK

    entry = started_nodes['wam']
    ns = entry['ns']
    reached = ros.collect(Bool, f'{ns}/{CONTROLLER}/tool/goal_reached', LATCHED)
    pub = ros.node.create_publisher(PoseStamped, f'{ns}/{CONTROLLER}/tool/target_pose', 10)
    assert ros.wait_for_subscribers(pub, 1, timeout=30.0), _output(entry)
    entry['states'].wait(timeout=20.0)
    fk = PinocchioFK(repo_path(ROBOTS['wam']['urdf']), 'wam_base')
    goal = fk.placement(robots.SETUPS['wam'].joints,
                        robots.ready_pose('wam') + [0.2, -0.2, 0.1, -0.2, 0.1, 0.2, 0.3],
                        'tool')
    msg = pose_stamped(goal, 'wam_base')
    ros.spin_until(lambda: reached.messages, 5.0)  # the latched False of the start
    reached.clear()
    pub.publish(msg)
    reached.wait(lambda m: m.data, timeout=20.0)
    ros.spin_for(0.3)  # the robot follows the command a window behind
    pos, rot = _errors(fk.of_state(entry['states'].last, 'tool'), goal)
    assert pos < 1e-3 and rot < 1e-2, (pos, rot)

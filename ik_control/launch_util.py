"""
Builders of the launch descriptions in ``launch/``, shared by the bringup launch files.

Why here and not in a ``launch/_common.py``: a launch file is executed from the
installed ``share/ik_control/launch`` directory, where a sibling module could only be
imported by editing ``sys.path``; ``ik_control`` itself is installed on the Python path
(``colcon build`` with or without ``--symlink-install``, or ``pip install -e .``), so
``from ik_control.launch_util import ...`` works wherever the launch files do.

``launch`` and ``launch_ros`` exist only in a ROS installation: they are imported inside
the functions that build launch actions, never at module import, so the rest of this
module (URDF and parameter-file helpers) works, and is tested, without them.

* :func:`bringup_description`: ``wam.launch.py`` and ``simon.launch.py`` (arguments
  ``urdf``, ``sim``, ``backend``, ``rate_hz``); ``urdf`` may be a DH file
  (``urdf:=config/robots/sam9.yaml``), whose URDF :func:`bringup_robot` writes.
* :func:`gazebo_description`: ``gazebo.launch.py`` (argument ``robot``).
"""

import os
from xml.etree import ElementTree

from ik_control.kinematics.dh_file import is_dh_file, load_dh_file
from ik_control.robots import data_path, PACKAGE, share_directory
from ik_control.validation import ModelError

FIND_PACKAGE = '$(find ' + PACKAGE + ')'
CONTROLLER = 'ik_controller'
SIM_ROBOT = 'sim_robot'
TRUE_VALUES = ('true', '1', 'yes', 'on')
FALSE_VALUES = ('false', '0', 'no', 'off')

# ros_gz_sim's world, started running (-r) with little console output (-v 1).
GZ_ARGS = '-r -v 1 empty.sdf'
# Gazebo clock -> ROS /clock, for use_sim_time (ros_gz_bridge syntax ROS_TYPE[GZ_TYPE).
CLOCK_BRIDGE = '/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock'


# ---------------------------------------------------------------------- plain helpers
def package_file(relative):
    """Return the path of ``relative`` (e.g. ``config/wam.yaml``) in the package share."""
    return data_path(*relative.split('/'))


def read_text(path):
    """Return the contents of the text file ``path``."""
    with open(path, encoding='utf-8') as f:
        return f.read()


def resolve_find(urdf_xml, share=None):
    """
    Return ``urdf_xml`` with ``$(find ik_control)`` replaced by the package share path.

    The URDFs are plain URDF, not xacro; their only xacro-style text is the
    ``<parameters>$(find ik_control)/config/..._controllers.yaml</parameters>`` of the
    gz_ros2_control plugin, which gz_ros2_control passes on verbatim as a file name.
    Replacing it here is what ``xacro`` would do for this expression, without making
    xacro a run-time dependency. robot_state_publisher ignores the ``<gazebo>`` block,
    so the bringups give it the file unchanged.
    """
    return urdf_xml.replace(FIND_PACKAGE, share or share_directory())


def root_link(urdf_xml):
    """Return the name of the root link of ``urdf_xml`` (the link that is no joint's child)."""
    robot = ElementTree.fromstring(urdf_xml)
    children = {j.find('child').get('link') for j in robot.findall('joint')}
    roots = [link.get('name') for link in robot.findall('link')
             if link.get('name') not in children]
    if len(roots) != 1:
        raise ValueError(f'the URDF must have exactly one root link, not {roots}')
    return roots[0]


def fix_to_world(urdf_xml, world='world'):
    """
    Return ``urdf_xml`` with its root link bolted to a ``world`` link by a fixed joint.

    Gazebo treats a URDF whose root link is ``world`` as fixed to the ground; without
    it the base of the arm would be a free body that tips over when the arm swings.
    A URDF that already has a ``world`` link is returned unchanged.
    """
    root = root_link(urdf_xml)
    if root == world:
        return urdf_xml
    end = urdf_xml.rfind('</robot>')
    if end < 0:
        raise ValueError('the URDF has no closing </robot> tag')
    joint = (f'  <link name="{world}"/>\n'
             f'  <joint name="{world}_to_{root}" type="fixed">\n'
             f'    <parent link="{world}"/>\n'
             f'    <child link="{root}"/>\n'
             '  </joint>\n')
    return urdf_xml[:end] + joint + urdf_xml[end:]


def gazebo_urdf(urdf_path, share=None):
    """Return the URDF of ``urdf_path`` prepared for Gazebo (paths resolved, base fixed)."""
    return fix_to_world(resolve_find(read_text(urdf_path), share))


def _flatten(prefix, value, out):
    if isinstance(value, dict):
        for key, item in value.items():
            _flatten(f'{prefix}.{key}' if prefix else str(key), item, out)
    else:
        out[prefix] = value
    return out


def node_parameters(yaml_path, node_name):
    """
    Return ``{name: value}`` of the ROS parameter file ``yaml_path`` for node ``node_name``.

    Sections apply as rcl applies them to a node of that name in the root namespace or
    any other: ``node_name``, ``/node_name``, ``/**/node_name`` and ``/**``; later
    sections override earlier ones. Nested maps become dotted names (``solver.gain``).
    """
    import yaml

    with open(yaml_path, encoding='utf-8') as f:
        document = yaml.safe_load(f) or {}
    keys = (node_name, '/' + node_name, '/**/' + node_name, '/**')
    values = {}
    for key, section in document.items():
        if key in keys and isinstance(section, dict):
            _flatten('', section.get('ros__parameters') or {}, values)
    return values


def parse_bool(text, name):
    """Return the boolean value of launch argument ``name`` (``true``/``false``...)."""
    value = str(text).strip().lower()
    if value in TRUE_VALUES:
        return True
    if value in FALSE_VALUES:
        return False
    raise ValueError(f"launch argument {name} must be true or false, not '{text}'")


def parse_rate(text):
    """Return launch argument ``rate_hz`` as a float [Hz] (the node checks its range)."""
    try:
        rate = float(text)
    except ValueError:
        raise ValueError(f"launch argument rate_hz must be a number [Hz], not '{text}'") \
            from None
    if not rate > 0.0:
        raise ValueError(f'launch argument rate_hz must be positive, not {text}')
    return rate


def argument_file(value, argument, what):
    """
    Return the path of a file given as launch ``argument`` (``what`` it must be, for errors).

    An absolute path is taken as it is; a relative one is looked up in the current
    directory, then in the package share directory (``urdf/wam.urdf``,
    ``config/robots/sam9.yaml``).
    """
    path = os.path.expanduser(str(value).strip())
    if not path:
        raise ValueError(f'launch argument {argument} must name {what}')
    if os.path.isfile(path):
        return os.path.abspath(path)
    if not os.path.isabs(path):
        try:
            return package_file(path)
        except ModelError:
            pass
    raise ValueError(f"launch argument {argument}: '{value}' is neither a file nor a file of "
                     f'the package ({share_directory()})')


def robot_file(value):
    """Return the path of launch argument ``urdf``: a URDF file or a DH file (``.yaml``)."""
    return argument_file(value, 'urdf', 'a URDF file or a DH file (.yaml)')


def bringup_robot(path):
    """
    Return ``(URDF text, ik_controller overrides, sim_robot overrides)`` of a robot file.

    A URDF file is read as it is, and the parameter file's robot set-up applies (no
    overrides). A DH file (:mod:`ik_control.kinematics.dh_file`) becomes the URDF text
    ``load_dh_file(path).urdf()``, and brings its own set-up, which replaces the parameter
    file's: base frame its ``base_link``, one 6-D pose task at its ``tool_link``, all its
    joints controlled and simulated, the simulated robot starting at the middle of the
    joint limits [rad or m].
    """
    if not is_dh_file(path):
        return read_text(path), {}, {}
    dh = load_dh_file(path)
    joints = list(dh.joint_names)
    controller = {'base_frame': dh.base_link, 'end_effectors': [dh.tool_link],
                  'end_effector_modes': ['pose'], 'joints': joints}
    sim = {'joints': joints,
           'initial_positions': [0.5 * (row.lower + row.upper) for row in dh.rows]}
    return dh.urdf(), controller, sim


def _string_parameter(text):
    """Return a parameter value that launch_ros passes on as a string, never as YAML."""
    from launch_ros.parameter_descriptions import ParameterValue

    # A plain str would be parsed as YAML by launch_ros, which fails on some URDF text.
    return ParameterValue(text, value_type=str)


RVIZ_CONFIG = 'config/ik_control.rviz'  # the robot and ik_controller's ~/markers
#: the robot's parameters the viewer shares with the controller (ros/viewer_node.py)
VIEWER_ROBOT = ('robot_description', 'urdf_path', 'base_frame', 'end_effectors',
                'end_effector_modes', 'joints')


# ---------------------------------------------------------------------- wam / simon
def bringup_description(urdf, params):
    """
    Return the LaunchDescription of a bringup (``wam.launch.py``, ``simon.launch.py``).

    ``urdf`` and ``params`` are paths relative to the package share directory (e.g.
    ``urdf/wam.urdf``, ``config/wam.yaml``); ``urdf`` is the default of the ``urdf``
    argument. Arguments:

    * ``urdf`` (the robot's URDF): the robot, a URDF file or a DH file (``.yaml``), as
      :func:`robot_file` finds it. A DH file's URDF is generated
      (``load_dh_file(path).urdf()``) and its set-up replaces the parameter file's
      (:func:`bringup_robot`); a URDF goes with the parameter file's set-up.
    * ``sim`` (``true``): also start ``sim_robot``, the embedded simulated robot. With
      ``false`` the controller drives the real robot: its ``output_topic``
      (``joint_trajectory_controller/joint_trajectory``) is the topic of the robot's
      ros2_control joint_trajectory_controller, and ``joint_states`` comes from the
      robot's joint_state_broadcaster; both must be running (config/*_controllers.yaml
      lists the JTC settings a streaming source needs).
    * ``backend`` (``kinematic`` or ``mujoco``; default from the parameter file): the
      sim_robot backend.
    * ``rate_hz`` (default from the parameter file): the controller's rate [Hz].
    * ``params_file`` (default: the robot's own, ``params``): the nodes' parameter file,
      a path as for ``urdf``; ``rate_hz`` and ``backend`` then default to its values.
    * ``namespace`` (default none): the namespace of every node.
    * ``use_sim_time`` (``false``): every node on ``/clock``.
    * ``log_level`` (``info``): the nodes' log level.
    * ``rviz`` (``false``): also start RViz 2 with :data:`RVIZ_CONFIG`, its fixed frame the
      robot's base.
    * ``view`` (``false``): also start ``ik_viewer``, the live browser view, on
      ``http://127.0.0.1:<view_port>/`` (``view_port``, default 8080).

    Always started: robot_state_publisher (TF of the robot from ``joint_states``) and
    ``ik_controller``, both given the URDF text as ``robot_description`` (as is
    ``sim_robot``).
    """
    from launch import LaunchDescription
    from launch.actions import DeclareLaunchArgument, OpaqueFunction

    defaults_controller = node_parameters(package_file(params), CONTROLLER)
    defaults_sim = node_parameters(package_file(params), SIM_ROBOT)
    return LaunchDescription([
        DeclareLaunchArgument(
            'urdf', default_value=urdf,
            description='Robot: a URDF file or a DH file (.yaml, e.g. '
                        'config/robots/sam9.yaml: its URDF is generated); relative paths: '
                        'the current directory, then the package share.'),
        DeclareLaunchArgument(
            'sim', default_value='true', choices=['true', 'false'],
            description='true: start the simulated robot (sim_robot); false: command the '
                        "real robot's joint_trajectory_controller."),
        DeclareLaunchArgument(
            'backend', default_value=str(defaults_sim.get('backend', 'kinematic')),
            choices=['kinematic', 'mujoco'],
            description='sim_robot backend: kinematic (ideal tracking) or mujoco (physics).'),
        DeclareLaunchArgument(
            'rate_hz', default_value=str(defaults_controller.get('rate_hz', '')),
            description='Control rate of ik_controller [Hz].'),
        DeclareLaunchArgument(
            'params_file', default_value='',
            description=f'Parameter file of the nodes (default: {params}); rate_hz and '
                        'backend default to its values.'),
        DeclareLaunchArgument('namespace', default_value='',
                              description='Namespace of every node (default: none).'),
        DeclareLaunchArgument(
            'use_sim_time', default_value='false', choices=['true', 'false'],
            description='true: every node takes its time from /clock.'),
        DeclareLaunchArgument(
            'log_level', default_value='info',
            choices=['debug', 'info', 'warn', 'error', 'fatal'],
            description='Log level of the nodes.'),
        DeclareLaunchArgument(
            'rviz', default_value='false', choices=['true', 'false'],
            description='true: also start RViz 2 with config/ik_control.rviz (the robot, '
                        "ik_controller's ~/markers), fixed frame the robot's base."),
        DeclareLaunchArgument(
            'view', default_value='false', choices=['true', 'false'],
            description='true: also serve the live browser view (ik_viewer) on '
                        'http://127.0.0.1:<view_port>/.'),
        DeclareLaunchArgument('view_port', default_value='8080',
                              description='TCP port of the browser view.'),
        OpaqueFunction(function=bringup_actions, args=[params]),
    ])


def bringup_actions(context, params):
    """Return the nodes of a bringup for the launch arguments in ``context``."""
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node

    def argument(name):
        return LaunchConfiguration(name).perform(context).strip()

    sim = parse_bool(argument('sim'), 'sim')
    backend, rate_text = argument('backend'), argument('rate_hz')
    params_file = package_file(params)
    if argument('params_file'):  # a user's file: its rate and backend unless given
        params_file = argument_file(argument('params_file'), 'params_file',
                                    'a parameter file (.yaml)')
        own_controller = node_parameters(package_file(params), CONTROLLER)
        own_sim = node_parameters(package_file(params), SIM_ROBOT)
        if rate_text == str(own_controller.get('rate_hz', '')):
            rate_text = ''
        if backend == str(own_sim.get('backend', 'kinematic')):
            backend = ''
    urdf_text, robot_controller, robot_sim = bringup_robot(robot_file(argument('urdf')))
    description = _string_parameter(urdf_text)
    overrides = {'robot_description': description, **robot_controller}
    if rate_text:  # empty: the parameter file's rate
        overrides['rate_hz'] = parse_rate(rate_text)
    sim_overrides = {'robot_description': description, **robot_sim}
    if backend:  # empty: the parameter file's backend
        sim_overrides['backend'] = backend
    common = {'namespace': argument('namespace'), 'output': 'screen',
              'arguments': ['--ros-args', '--log-level', argument('log_level')]}
    clock = ([{'use_sim_time': True}] if parse_bool(argument('use_sim_time'), 'use_sim_time')
             else [])

    actions = [
        Node(package='robot_state_publisher', executable='robot_state_publisher',
             parameters=[{'robot_description': description}, *clock], **common),
        Node(package='ik_control', executable='ik_controller', name=CONTROLLER,
             parameters=[params_file, overrides, *clock], **common),
    ]
    if sim:
        actions.append(
            Node(package='ik_control', executable='sim_robot', name=SIM_ROBOT,
                 parameters=[params_file, sim_overrides, *clock], **common))
    if parse_bool(argument('view'), 'view'):
        shown = dict(node_parameters(params_file, CONTROLLER), **overrides)
        robot = {k: shown[k] for k in VIEWER_ROBOT if k in shown}
        actions.append(
            Node(package='ik_control', executable='ik_viewer', name='ik_viewer',
                 parameters=[robot, {'port': int(argument('view_port'))}, *clock], **common))
    if parse_bool(argument('rviz'), 'rviz'):
        base = overrides.get('base_frame') or node_parameters(params_file, CONTROLLER).get(
            'base_frame', 'base_link')
        actions.append(
            Node(package='rviz2', executable='rviz2', namespace=argument('namespace'),
                 arguments=['-d', package_file(RVIZ_CONFIG), '-f', str(base)],
                 parameters=clock, output='screen'))
    return actions


# ---------------------------------------------------------------------- gazebo
def gazebo_description(robots, default):
    """
    Return the LaunchDescription of ``gazebo.launch.py``.

    ``robots`` maps each robot name to its files relative to the share directory:
    ``{'urdf': ..., 'params': ..., 'controllers': ...}``; ``default`` is the default of
    the ``robot`` argument.
    """
    from launch import LaunchDescription
    from launch.actions import DeclareLaunchArgument, OpaqueFunction

    return LaunchDescription([
        DeclareLaunchArgument('robot', default_value=default, choices=sorted(robots),
                              description='Robot to spawn in Gazebo.'),
        OpaqueFunction(function=gazebo_actions, args=[robots]),
    ])


def gazebo_actions(context, robots):
    """
    Return Gazebo, the spawned robot, its controllers and ik_controller for ``robot``.

    Order: Gazebo (empty world, running), the /clock bridge and robot_state_publisher
    start at once; ``ros_gz_sim create`` spawns the model from ``/robot_description``;
    when it has exited, the joint_state_broadcaster is spawned, then the
    joint_trajectory_controller (with ``--param-file``: since Jazzy controllers no longer
    read their parameters from the controller manager's file alone), then ik_controller.
    Every ROS node uses the simulation clock.
    """
    from launch.actions import IncludeLaunchDescription, RegisterEventHandler
    from launch.event_handlers import OnProcessExit
    from launch.launch_description_sources import PythonLaunchDescriptionSource
    from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
    from launch_ros.actions import Node
    from launch_ros.substitutions import FindPackageShare

    robot = LaunchConfiguration('robot').perform(context)
    if robot not in robots:
        raise ValueError(f"unknown robot '{robot}'; choose one of {sorted(robots)}")
    files = robots[robot]
    description = _string_parameter(gazebo_urdf(package_file(files['urdf'])))
    sim_time = {'use_sim_time': True}

    gazebo = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(
            PathJoinSubstitution([FindPackageShare('ros_gz_sim'), 'launch', 'gz_sim.launch.py'])),
        launch_arguments={'gz_args': GZ_ARGS}.items())
    clock = Node(package='ros_gz_bridge', executable='parameter_bridge',
                 arguments=[CLOCK_BRIDGE], output='screen')
    state_publisher = Node(package='robot_state_publisher', executable='robot_state_publisher',
                           parameters=[{'robot_description': description}, sim_time],
                           output='screen')
    spawn = Node(package='ros_gz_sim', executable='create', output='screen',
                 arguments=['-topic', 'robot_description', '-name', robot,
                            '-allow_renaming', 'true'])
    broadcaster = Node(package='controller_manager', executable='spawner',
                       arguments=['joint_state_broadcaster'], output='screen')
    trajectory = Node(package='controller_manager', executable='spawner',
                      arguments=['joint_trajectory_controller',
                                 '--param-file', package_file(files['controllers'])],
                      output='screen')
    controller = Node(package='ik_control', executable='ik_controller', name=CONTROLLER,
                      parameters=[package_file(files['params']),
                                  {'robot_description': description}, sim_time],
                      output='screen')
    return [
        gazebo, clock, state_publisher, spawn,
        RegisterEventHandler(OnProcessExit(target_action=spawn, on_exit=[broadcaster])),
        RegisterEventHandler(OnProcessExit(target_action=broadcaster, on_exit=[trajectory])),
        RegisterEventHandler(OnProcessExit(target_action=trajectory, on_exit=[controller])),
    ]

"""
Run ik_control on a WAM or SIMON simulated in Gazebo through gz_ros2_control.

Needs, besides ik_control: Gazebo with ros_gz (``ros_gz_sim``, ``ros_gz_bridge``) and
ros2_control (``gz_ros2_control``, ``controller_manager``,
``joint_state_broadcaster``, ``joint_trajectory_controller``), e.g. on Jazzy::

    sudo apt install ros-jazzy-ros-gz ros-jazzy-gz-ros2-control ros-jazzy-ros2-controllers

Run::

    ros2 launch ik_control gazebo.launch.py robot:=wam
    ros2 launch ik_control gazebo.launch.py robot:=simon

Started: Gazebo (``ros_gz_sim`` ``gz_sim.launch.py``, empty world, running), a /clock
bridge, robot_state_publisher, the robot spawned from ``/robot_description``
(``ros_gz_sim create``), then in turn the spawners of ``joint_state_broadcaster`` and
``joint_trajectory_controller`` (its parameters from the robot's controllers file,
passed with ``--param-file`` as Jazzy and newer require), then ``ik_controller`` with
the robot's parameter file and ``use_sim_time: true``.

The URDF is given to robot_state_publisher (and through it to Gazebo and
gz_ros2_control) with ``$(find ik_control)`` replaced by the installed share directory:
the URDFs are plain URDF whose only xacro-style text is that path of the controllers
file in the ``<gazebo>`` plugin block, and gz_ros2_control does not resolve it itself.
Doing the substitution in Python is what ``xacro`` would do here, without needing xacro.
A fixed joint from a ``world`` link to the robot's base is added so that Gazebo bolts the
base to the ground. See :func:`ik_control.launch_util.gazebo_description`.

Humble/Iron: the controllers files use the Jazzy+ JTC parameter
``interpolate_from_desired_state``; see the note at the top of those files.
"""

from ik_control.launch_util import gazebo_description

ROBOTS = {
    'wam': {'urdf': 'urdf/wam.urdf', 'params': 'config/wam.yaml',
            'controllers': 'config/wam_controllers.yaml'},
    'simon': {'urdf': 'urdf/simon.urdf', 'params': 'config/simon.yaml',
              'controllers': 'config/simon_controllers.yaml'},
}


def generate_launch_description():
    """Return Gazebo with the robot chosen by argument ``robot`` (wam or simon)."""
    return gazebo_description(ROBOTS, default='wam')

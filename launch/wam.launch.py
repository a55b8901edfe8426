"""
Bring up ik_control for the Barrett WAM: controller, robot_state_publisher, simulated arm.

Run::

    ros2 launch ik_control wam.launch.py                      # embedded simulated WAM
    ros2 launch ik_control wam.launch.py backend:=mujoco      # ... with MuJoCo physics
    ros2 launch ik_control wam.launch.py sim:=false           # the real WAM
    ros2 launch ik_control wam.launch.py rate_hz:=250.0
    ros2 launch ik_control wam.launch.py urdf:=config/robots/sam9.yaml   # a DH-file robot

Arguments: ``urdf`` (URDF or DH file, default urdf/wam.urdf), ``sim`` (true|false,
default true), ``backend`` (kinematic|mujoco, default from config/wam.yaml), ``rate_hz``
(controller rate [Hz], default from config/wam.yaml), ``params_file`` (default
config/wam.yaml), ``namespace``, ``use_sim_time`` (false), ``log_level`` (info).
Parameters: config/wam.yaml (end effector ``tool``, base ``wam_base``, 7 joints, 500 Hz).
A DH file (``.yaml``) is turned into URDF text for every node, and brings its own set-up
(base ``base_link``, end effector its ``tool_link``, all its joints); the rest of
config/wam.yaml still applies.

With ``sim:=false`` nothing simulated is started: ik_controller publishes
trajectory_msgs/JointTrajectory on ``/joint_trajectory_controller/joint_trajectory``,
the topic of the joint_trajectory_controller of the WAM's ros2_control driver, and reads
``/joint_states`` from its joint_state_broadcaster; start the driver first
(config/wam_controllers.yaml shows the JTC settings a streaming source needs).

The nodes are built by :func:`ik_control.launch_util.bringup_description`, shared with
simon.launch.py.
"""

from ik_control.launch_util import bringup_description


def generate_launch_description():
    """Return the WAM bringup."""
    return bringup_description(urdf='urdf/wam.urdf', params='config/wam.yaml')

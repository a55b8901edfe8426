"""
Bring up ik_control for SIMON: two-handed controller at 1 kHz, robot_state_publisher, sim.

Run::

    ros2 launch ik_control simon.launch.py                    # embedded simulated SIMON
    ros2 launch ik_control simon.launch.py backend:=mujoco    # ... with MuJoCo physics
    ros2 launch ik_control simon.launch.py sim:=false         # the real SIMON

Arguments: ``urdf`` (URDF or DH file, default urdf/simon.urdf; a DH file brings its own
base, end effector and joints, as in wam.launch.py), ``sim`` (true|false, default true),
``backend`` (kinematic|mujoco, default from config/simon.yaml), ``rate_hz`` (controller
rate [Hz], default from config/simon.yaml), ``params_file`` (default config/simon.yaml),
``namespace``, ``use_sim_time`` (false), ``log_level`` (info). Parameters:
config/simon.yaml (end effectors ``right_hand`` and ``left_hand``, base ``simon_base``,
torso and both arms = 16 joints, 1000 Hz).

With ``sim:=false`` nothing simulated is started: ik_controller publishes
trajectory_msgs/JointTrajectory on ``/joint_trajectory_controller/joint_trajectory``,
the topic of the joint_trajectory_controller of SIMON's ros2_control driver, and reads
``/joint_states`` from its joint_state_broadcaster; start the driver first
(config/simon_controllers.yaml shows the JTC settings a streaming source needs).

The nodes are built by :func:`ik_control.launch_util.bringup_description`, shared with
wam.launch.py.
"""

from ik_control.launch_util import bringup_description


def generate_launch_description():
    """Return the SIMON bringup."""
    return bringup_description(urdf='urdf/simon.urdf', params='config/simon.yaml')

r"""
Bring up ik_control for any configured arm: controller, robot_state_publisher, simulated arm.

Run, with the files ``ik_control setup`` writes for your arm::

    ik_control setup my_arm.urdf --tip tool0 --out my_arm/
    ros2 launch ik_control ik_control.launch.py urdf:=my_arm.urdf \\
        params_file:=my_arm/my_arm.yaml
    ros2 launch ik_control ik_control.launch.py urdf:=my_arm.urdf \\
        params_file:=my_arm/my_arm.yaml sim:=false      # the real arm's JTC

Arguments as for wam.launch.py (``urdf``, ``params_file``, ``sim``, ``backend``,
``rate_hz``, ``namespace``, ``use_sim_time``, ``log_level``, ``rviz``); without
``urdf`` and ``params_file`` it brings up the WAM (urdf/wam.urdf, config/wam.yaml).
wam.launch.py and simon.launch.py are this bringup with their robot's files as defaults.
The nodes are built by :func:`ik_control.launch_util.bringup_description`.
"""

from ik_control.launch_util import bringup_description


def generate_launch_description():
    """Return the bringup of the arm given by ``urdf`` and ``params_file``."""
    return bringup_description(urdf='urdf/wam.urdf', params='config/wam.yaml')

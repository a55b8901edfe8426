"""Build script for the ik_control ament_python package."""

from glob import glob
import os

from setuptools import find_packages
from setuptools import setup

package_name = 'ik_control'


def share_files(subdir, pattern):
    """Return a data_files entry installing subdir/pattern into share/<package>/subdir."""
    files = sorted(f for f in glob(os.path.join(subdir, pattern)) if os.path.isfile(f))
    return (os.path.join('share', package_name, subdir), files)


setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        share_files('launch', '*.launch.py'),
        share_files('config', '*.yaml'),
        share_files('config', '*.xml'),
        share_files('config', '*.srdf'),
        share_files('config', '*.rviz'),
        share_files('config/robots', '*.yaml'),
        share_files('config/motions', '*.yaml'),
        share_files('urdf', '*.urdf'),
        share_files('security', '*.xml'),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='ik_control maintainers',
    maintainer_email='ik_control@example.com',
    description='Resolved-motion-rate inverse kinematics control for ROS 2.',
    license='Apache-2.0',
    extras_require={'test': ['pytest'], 'view': ['viser']},
    entry_points={
        'console_scripts': [
            'ik_control = ik_control.cli:main',
            'ik_controller = ik_control.ros.ik_controller_node:main',
            'sim_robot = ik_control.ros.sim_robot_node:main',
            'jt_rrt_planner = ik_control.ros.jt_rrt_planner_node:main',
            'style_adapter = ik_control.ros.style_adapter_node:main',
            'ik_viewer = ik_control.ros.viewer_node:main',
        ],
    },
)

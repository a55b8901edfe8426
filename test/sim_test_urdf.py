"""
A small URDF for the simulator tests: a 3-joint arm, optionally with a mimic gripper.

Built as a string so the tests do not depend on the robot files in ``urdf/``.
Joints: ``j1`` (revolute about z, +-2 rad), ``j2`` and ``j3`` (revolute about
y, loaded by gravity); gripper: ``finger_left`` (prismatic 0..0.04 m) and
``finger_right`` mimicking it (multiplier, offset given).
"""

import os

WAM_URDF_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             'urdf', 'wam.urdf')


def _inertial(mass, xyz):
    return ('<inertial><mass value="%g"/><origin xyz="%s"/>'
            '<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/>'
            '</inertial>' % (mass, xyz))


def three_joint_urdf(gripper: bool = False, multiplier: float = 1.0,
                     offset: float = 0.0) -> str:
    """Return the URDF XML of the test arm (with a visual box to check stripping)."""
    parts = [
        '<?xml version="1.0"?>',
        '<robot name="three">',
        '<link name="base">%s</link>' % _inertial(2.0, '0 0 0'),
        '<link name="l1">%s<visual><geometry><mesh filename="package://nope/l1.stl"/>'
        '</geometry></visual></link>' % _inertial(1.0, '0 0 0.2'),
        '<link name="l2">%s<collision><geometry><box size="0.4 0.05 0.05"/>'
        '</geometry></collision></link>' % _inertial(1.0, '0.2 0 0'),
        '<link name="l3">%s</link>' % _inertial(0.5, '0.1 0 0'),
        '<link name="tool"/>',
        '<joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>'
        '<axis xyz="0 0 1"/><limit lower="-2" upper="2" effort="100" velocity="2"/></joint>',
        '<joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/>'
        '<origin xyz="0 0 0.4"/><axis xyz="0 1 0"/>'
        '<limit lower="-1.5" upper="1.5" effort="100" velocity="2"/></joint>',
        '<joint name="j3" type="revolute"><parent link="l2"/><child link="l3"/>'
        '<origin xyz="0.4 0 0"/><axis xyz="0 1 0"/>'
        '<limit lower="-2" upper="2" effort="100" velocity="2"/></joint>',
        '<joint name="tool_joint" type="fixed"><parent link="l3"/><child link="tool"/>'
        '<origin xyz="0.2 0 0"/></joint>',
    ]
    if gripper:
        parts += [
            '<link name="fl">%s</link>' % _inertial(0.05, '0 0 0'),
            '<link name="fr">%s</link>' % _inertial(0.05, '0 0 0'),
            '<joint name="finger_left" type="prismatic"><parent link="tool"/>'
            '<child link="fl"/><axis xyz="0 1 0"/>'
            '<limit lower="0" upper="0.04" effort="20" velocity="0.1"/></joint>',
            '<joint name="finger_right" type="prismatic"><parent link="tool"/>'
            '<child link="fr"/><axis xyz="0 -1 0"/>'
            '<limit lower="0" upper="0.1" effort="20" velocity="0.1"/>'
            '<mimic joint="finger_left" multiplier="%g" offset="%g"/></joint>'
            % (multiplier, offset),
        ]
    parts.append('</robot>')
    return '\n'.join(parts)

"""
The motions the viewer's selector offers: what ``config/motions`` holds for a robot.

* velocity profiles (SAM's velocity-profile specification: files with ``samples``),
  for any end effector: played by name on ``~/E/velocity_profile``;
* key-pose paths (SAM's position-error specification: files with ``key_poses`` whose
  ``effector`` is one of the robot's): sent as a nav_msgs/Path on ``~/E/target_path``.

Exemplar motions of the style adapter (joint space) and files for other robots are left
out.
"""

import glob
import os

from ik_control import robots
from ik_control.control.path_file import load_key_pose_file
from ik_control.validation import IkControlError, read_yaml

__all__ = ['motion_catalogue']


def motion_catalogue(effectors, folder=None):
    """
    Return ``{name: ('profile', None) or ('path', KeyPoseFile)}`` for ``effectors``.

    ``folder``: where to look (default the package's ``config/motions``).
    """
    folder = folder or robots.data_path('config', 'motions')
    out = {}
    for path in sorted(glob.glob(os.path.join(folder, '*.yaml'))):
        name = os.path.splitext(os.path.basename(path))[0]
        try:
            data = read_yaml(path, 'motion')
            if isinstance(data, dict) and 'samples' in data:
                out[name] = ('profile', None)
            elif isinstance(data, dict) and data.get('effector') in effectors:
                out[name] = ('path', load_key_pose_file(path))
        except IkControlError:
            continue  # another kind of file (a robot's, the painting's)
    return out

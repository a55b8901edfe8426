"""
Authoring of the exemplars in ``config/motions/`` (``python -m ik_control.style.authoring``).

An animator's curves, approximated: per joint a list of keyframes ``(t [s], value [rad])``
joined by a shape-preserving cubic (PCHIP: zero slope at every local extremum, so each
reversal eases in and out, and no overshoot between keys), sampled every ``dt``. The style
lives in the keys:

* **pick_and_place** (SIMON's right arm and torso; the left arm rests): home, an
  *anticipation* (torso and arm draw back before the reach), reach and grasp low in front,
  lift (the torso straightens while the elbow folds), an arc out to the bin on the right
  with the torso leaning into it, the *follow-through* past the release (the arm overshoots
  and settles) and the return home. Instants: ``pick`` (grasp), ``place`` (release).
* **baseball_swing** (both arms and the torso; a bat held in the right hand, a line along the
  hand frame's x axis from 0.1 to 0.9 m): stance with the hands at the right shoulder, a
  small load (*anticipation*), the swing across the front, contact, and a *follow-through*
  that wraps the bat round to the left. Instant: ``contact``.
"""

import os
import sys

from ik_control.robots import SIMON_ARM, SIMON_JOINTS
from ik_control.style.exemplar import Exemplar
import numpy as np
from scipy.interpolate import PchipInterpolator
import yaml

DT = 0.01
RIGHT = {j: f'right_{j}' for j in SIMON_ARM}
LEFT = {j: f'left_{j}' for j in SIMON_ARM}
BAT_GRIP = 0.2
REST = {'shoulder_x': -0.4, 'shoulder_z': 0.15, 'shoulder_y': -0.3, 'elbow_x': 1.4,
        'wrist_y': 0.0, 'wrist_x': 0.0, 'wrist_z': 0.0}


def keyframe_curves(keys, duration, dt=DT, joint_names=SIMON_JOINTS, rest=None):
    """
    Sample per-joint keyframes ``{joint: [(t, value), ...]}`` every ``dt`` over ``duration``.

    Joints without keys hold ``rest[joint]`` (default 0) [rad]. Returns (samples, joints).
    """
    t = np.arange(int(round(duration / dt)) + 1) * dt
    out = np.zeros((len(t), len(joint_names)))
    for k, name in enumerate(joint_names):
        if name in keys:
            times, values = np.array(keys[name], dtype=float).T
            out[:, k] = PchipInterpolator(times, values)(np.clip(t, times[0], times[-1]))
        else:
            out[:, k] = (rest or {}).get(name, 0.0)
    return out


def pick_and_place():
    """Return the stylized pick-and-place of the right arm and torso (module docstring)."""
    T = {'home': 0.0, 'anticipate': 0.4, 'pick': 1.5, 'grip': 1.7, 'lift': 2.1, 'place': 3.1,
         'through': 3.4, 'settle': 3.7, 'end': 5.0}
    keys = {
        'torso_y': [(0, 0.0), (0.15, 0.0), (T['anticipate'], -0.06), (T['pick'], 0.25),
                    (T['grip'], 0.26), (T['lift'], 0.16), (T['place'], 0.1),
                    (T['through'], 0.06), (T['settle'], 0.09), (T['end'] - 0.2, 0.0),
                    (T['end'], 0.0)],
        'torso_x': [(0, 0.0), (0.15, 0.0), (T['anticipate'], -0.03), (T['pick'], 0.05),
                    (T['grip'], 0.05), (T['lift'], 0.02), (T['place'], 0.13),
                    (T['through'], 0.16), (T['settle'], 0.12), (T['end'] - 0.2, 0.0),
                    (T['end'], 0.0)],
        RIGHT['shoulder_x']: [(0, -0.4), (0.15, -0.4), (T['anticipate'], -0.25),
                              (T['pick'], -0.7), (T['grip'], -0.7), (T['lift'], -0.86),
                              (T['place'], -0.95), (T['through'], -1.0), (T['settle'], -0.96),
                              (T['end'] - 0.2, -0.4), (T['end'], -0.4)],
        RIGHT['shoulder_z']: [(0, 0.15), (0.15, 0.15), (T['anticipate'], 0.08),
                              (T['pick'], 0.1), (T['grip'], 0.1), (T['lift'], 0.22),
                              (T['place'], 0.6), (T['through'], 0.7), (T['settle'], 0.62),
                              (T['end'] - 0.2, 0.15), (T['end'], 0.15)],
        RIGHT['shoulder_y']: [(0, -0.3), (0.15, -0.3), (T['anticipate'], -0.35),
                              (T['pick'], -0.2), (T['grip'], -0.2), (T['lift'], -0.05),
                              (T['place'], 0.3), (T['through'], 0.38), (T['settle'], 0.32),
                              (T['end'] - 0.2, -0.3), (T['end'], -0.3)],
        RIGHT['elbow_x']: [(0, 1.4), (0.15, 1.4), (T['anticipate'], 1.6), (T['pick'], 0.9),
                           (T['grip'], 0.92), (T['lift'], 1.1), (T['place'], 0.8),
                           (T['through'], 0.7), (T['settle'], 0.76), (T['end'] - 0.2, 1.4),
                           (T['end'], 1.4)],
        RIGHT['wrist_y']: [(0, 0.0), (0.15, 0.0), (T['pick'], 0.1), (T['place'], -0.2),
                           (T['end'] - 0.2, 0.0), (T['end'], 0.0)],
        RIGHT['wrist_x']: [(0, 0.0), (0.15, 0.0), (T['anticipate'], -0.05), (T['pick'], 0.1),
                           (T['grip'], 0.1), (T['lift'], 0.05), (T['place'], -0.15),
                           (T['through'], -0.2), (T['settle'], -0.15), (T['end'] - 0.2, 0.0),
                           (T['end'], 0.0)],
        RIGHT['wrist_z']: [(0, 0.0), (0.15, 0.0), (T['anticipate'], -0.1), (T['pick'], 0.3),
                           (T['grip'], 0.32), (T['lift'], 0.15), (T['place'], -0.2),
                           (T['through'], -0.3), (T['settle'], -0.22), (T['end'] - 0.2, 0.0),
                           (T['end'], 0.0)],
    }
    rest = {LEFT[j]: v for j, v in REST.items()}
    torso_arm = ('torso_y', 'torso_x') + tuple(RIGHT[j] for j in
                                               ('shoulder_x', 'shoulder_z', 'shoulder_y',
                                                'elbow_x'))
    return Exemplar(
        name='pick_and_place', robot='simon', dt=DT, joint_names=SIMON_JOINTS,
        positions=keyframe_curves(keys, T['end'], rest=rest),
        instants={'pick': T['pick'], 'place': T['place']}, end_effector='right_hand',
        search_joints=torso_arm,
        modulated_joints=torso_arm + (RIGHT['wrist_x'], RIGHT['wrist_z']),
        description='Stylized pick-and-place, right arm and torso: anticipation before the '
                    'reach, an arc to the bin, follow-through past the release '
                    '(ik_control.style.authoring).')


def baseball_swing():
    """Return the two-handed baseball swing, a bat in the right hand (module docstring)."""
    from ik_control import robots
    from ik_control.style.tsfks import Tsfks

    times = (0.0, 0.2, 0.5, 1.05, 1.5, 2.2)     # stance, hold, load, contact, through, end
    torso = ((0.0, 0.15), (0.0, 0.15), (-0.03, 0.17), (0.05, 0.0), (0.05, -0.15),
             (0.03, -0.12))
    right = ((-1.3, -0.5, 0.5, 2.4, 0.0, 0.0, 0.3), (-1.3, -0.5, 0.5, 2.4, 0.0, 0.0, 0.3),
             (-1.4, -0.55, 0.6, 2.45, 0.0, 0.0, 0.4), (-0.6, 0.05, 0.1, 1.5, 0.0, 0.0, 0.0),
             (-0.8, 0.0, -0.9, 1.4, 0.0, 0.0, -0.5), (-0.75, 0.05, -0.85, 1.5, 0.0, 0.0, -0.4))
    bat = (np.array([0.0, 0.05, 0.0]), np.array([0.0, 0.85, 0.0]))
    grip = np.array([0.0, BAT_GRIP, 0.0])       # the left hand on the bat [m, hand frame]
    model = robots.robot('simon')
    left_search = tuple(LEFT[j] for j in ('shoulder_x', 'shoulder_z', 'shoulder_y', 'elbow_x'))
    keys = {name: [] for name in SIMON_JOINTS}
    for t, tq, rq in zip(times, torso, right):
        fixed = dict(zip(('torso_y', 'torso_x') + tuple(RIGHT[j] for j in SIMON_ARM),
                         tq + rq))
        q = np.array([fixed.get(n, 0.0) for n in SIMON_JOINTS])
        T = model.frame_placements(q)[0]
        search = Tsfks(model, 'left_hand', left_search, fine_fraction=0.02, buffer=0.05,
                       fixed=fixed)
        q = search.search(T[:3, :3] @ grip + T[:3, 3]).q
        for k, name in enumerate(SIMON_JOINTS):
            keys[name].append((t, q[k]))
    torso_arm = ('torso_y', 'torso_x') + tuple(RIGHT[j] for j in
                                               ('shoulder_x', 'shoulder_z', 'shoulder_y',
                                                'elbow_x'))
    return Exemplar(
        name='baseball_swing', robot='simon', dt=DT, joint_names=SIMON_JOINTS,
        positions=keyframe_curves(keys, times[-1]),
        instants={'contact': times[3]}, end_effector='right_hand',
        search_joints=torso_arm,
        modulated_joints=torso_arm + (RIGHT['wrist_z'],) + left_search, segment=bat,
        description='Two-handed baseball swing, bat along the right hand frame y axis '
                    f'(0.05-0.85 m), left hand on the bat {BAT_GRIP} m from the right: '
                    'stance, load, swing, contact, follow-through (ik_control.style.authoring).',
        extra={'search_window': 0.5,
               'follower': {'end_effector': 'left_hand', 'attach': grip.tolist(),
                            'search_joints': list(left_search), 'buffer': 0.05}})


MOTIONS = {'pick_and_place': pick_and_place, 'baseball_swing': baseball_swing}


def write(directory):
    """Write every motion of :data:`MOTIONS` as ``<directory>/<name>.yaml``; return paths."""
    os.makedirs(directory, exist_ok=True)
    paths = []
    for name, make in MOTIONS.items():
        path = os.path.join(directory, f'{name}.yaml')
        with open(path, 'w', encoding='utf-8') as stream:
            stream.write(f'# Exemplar motion {name!r}: generated by '
                         'python -m ik_control.style.authoring config/motions\n')
            yaml.safe_dump(make().to_dict(), stream, sort_keys=False, width=100,
                           default_flow_style=None)
        paths.append(path)
    return paths


if __name__ == '__main__':
    for p in write(sys.argv[1] if len(sys.argv) > 1 else os.path.join('config', 'motions')):
        print(p)

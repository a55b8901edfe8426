"""
Authoring of the exemplars in ``config/motions/`` (``python -m ik_control.style.authoring``).

An animator's curves, approximated: per joint a list of keyframes ``(t [s], value [rad])``
joined by a shape-preserving cubic (PCHIP: zero slope at every local extremum, so each
reversal eases in and out, and no overshoot between keys), sampled every ``dt``. The style
lives in the keys:

* **pick_and_place** (SIMON's right arm and torso; the left arm rests): home, an
  *anticipation* (torso and arm draw back before the reach), reach and grasp low in front,
  one eased move to the bin (the torso straightens while the arm rises, folds and swings
  out; each joint eases out of the grip and into the release, without reversals), a pause
  at the release, the *follow-through* (the arm recoils off the bin and settles) and the
  return home. Instants: ``pick`` (grasp), ``place`` (release).
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
    """
    Return the stylized pick-and-place of the right arm and torso (module docstring).

    From the grasp to the release every joint makes one move: it eases out of the grip and
    eases into the release pose, with no reversal and no second acceleration between (a
    slow in and a slow out, the animator's rule for a deliberate move; the earlier keys
    lifted the box first and then swung it out, and their Shoulder X, Elbow X and Torso Y
    accelerated two or three times on the way, which eq. 2 then amplified). The release is
    a pause: the joints arrive at rest. The character is in the anticipation before the
    reach and in the follow-through after the release, which is the arm's recoil: the hand
    lifts off the bin a little, settles, and goes home.
    """
    T = {'home': 0.0, 'anticipate': 0.4, 'pick': 1.5, 'grip': 1.6, 'place': 3.1,
         'through': 3.4, 'settle': 3.7, 'end': 5.0}
    # joint: (home, anticipation, pick, place) [rad]
    poses = {
        'torso_y': (0.0, -0.06, 0.25, 0.05),
        'torso_x': (0.0, -0.03, 0.05, 0.0),
        RIGHT['shoulder_x']: (-0.4, -0.25, -0.7, -0.8),
        RIGHT['shoulder_z']: (0.15, 0.08, 0.1, 0.35),
        RIGHT['shoulder_y']: (-0.3, -0.35, -0.2, -0.3),
        RIGHT['elbow_x']: (1.4, 1.6, 0.9, 1.2),
        RIGHT['wrist_x']: (0.0, -0.05, 0.1, -0.15),
        RIGHT['wrist_z']: (0.0, -0.1, 0.3, -0.2),
    }
    keys = {}
    for name, (home, anticipation, pick, place) in poses.items():
        keys[name] = [(0, home), (0.15, home), (T['anticipate'], anticipation),
                      (T['pick'], pick), (T['grip'], pick), (T['place'], place),
                      (T['through'], place + 0.15 * (pick - place)),     # recoil
                      (T['settle'], place + 0.05 * (pick - place)),
                      (T['end'] - 0.2, home), (T['end'], home)]
    keys[RIGHT['wrist_y']] = [(0, 0.0), (0.15, 0.0), (T['pick'], 0.1), (T['grip'], 0.1),
                              (T['place'], -0.2), (T['end'] - 0.2, 0.0), (T['end'], 0.0)]
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
                    'reach, one eased move from the grasp to the release, a recoil after it '
                    '(follow-through) (ik_control.style.authoring).')


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

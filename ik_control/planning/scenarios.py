"""
Planning scenarios from a YAML file (``config/jtrrt_scenarios.yaml``): start, obstacles, goal.

File layout: ``robot``, ``end_effector``, ``start`` [rad], ``environment`` (obstacles
shared by every scenario) and ``scenarios``, each with ``name``, ``description``,
``obstacles`` and ``goal: {position [m], rpy [rad]}``; obstacles as in
:func:`ik_control.planning.obstacles.obstacle_from_dict`.
"""

from dataclasses import dataclass

from ik_control import robots
from ik_control.planning.obstacles import obstacle_from_dict, pose_from
from ik_control.validation import finite_vector, InputError
import numpy as np
import yaml

DEFAULT_FILE = ('config', 'jtrrt_scenarios.yaml')


@dataclass(frozen=True)
class Scenario:
    """One planning problem in the robot's base frame."""

    name: str
    description: str
    robot: str
    end_effector: str
    start: np.ndarray
    obstacles: tuple
    goal_position: np.ndarray
    goal_rotation: np.ndarray


def load_scenarios(path=None):
    """Read the scenarios of ``path`` (default: the bundled file); errors name the entry."""
    path = path or robots.data_path(*DEFAULT_FILE)
    with open(path, encoding='utf-8') as stream:
        data = yaml.safe_load(stream)
    if not isinstance(data, dict) or 'scenarios' not in data:
        raise InputError(f"'{path}' has no 'scenarios' list")
    robot = str(data.get('robot', 'wam'))
    ee = str(data.get('end_effector', 'tool'))
    start = finite_vector(data.get('start', ()), len(robots.SETUPS[robot].joints), 'start')
    shared = tuple(obstacle_from_dict(o) for o in data.get('environment', ()))
    out = []
    for k, entry in enumerate(data['scenarios']):
        name = str(entry.get('name', f'scenario_{k + 1}'))
        goal = entry.get('goal') or {}
        if 'position' not in goal:
            raise InputError(f"scenario '{name}': goal.position is missing")
        own = tuple(obstacle_from_dict(o) for o in entry.get('obstacles', ()))
        R = pose_from(goal['position'], goal.get('rpy', (0.0, 0.0, 0.0)))
        out.append(Scenario(name, str(entry.get('description', '')), robot, ee,
                            finite_vector(entry.get('start', start), start.size, 'start'),
                            shared + own, R[:3, 3].copy(), R[:3, :3].copy()))
    return out

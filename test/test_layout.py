"""
The package's layout rules, read from its source (``ast``).

A change cannot break them unnoticed:

* Only ``ik_control/ros/`` imports the ROS client library or message and interface types:
  the math below it works on numpy arrays and pinocchio and is tested without ROS.
* Only :class:`~ik_control.control.goal_set.GoalSet` writes its arrays: the referee and
  the controller change goals through its methods (one owner of goals).
"""

import ast
import os

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'ik_control')
# the client library's name is split so that conftest does not take this file for one that
# starts nodes
ROS_MODULES = ('rcl' 'py', 'rosidl_runtime_py', 'tf2_ros',
               'ik_control_interfaces')
ROS_SUFFIXES = ('_msgs', '_srvs', '_interfaces')
GOAL_ARRAYS = {'targets', 'goal', 'mode', 'twist', 'parked', 'reached', 'state', 'ids',
               'best_time', 'best_error', 'stuck', 'slow', 'motions', 'unreachable_reason',
               'holding'}


def _sources():
    for folder, _, files in os.walk(ROOT):
        for name in sorted(files):
            if name.endswith('.py'):
                path = os.path.join(folder, name)
                with open(path, encoding='utf-8') as stream:
                    yield os.path.relpath(path, ROOT), ast.parse(stream.read(), path)


SOURCES = dict(_sources())


def _imported(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def _is_ros(module):
    top = module.split('.')[0]
    return top in ROS_MODULES or top.endswith(ROS_SUFFIXES)


def test_only_the_ros_folder_imports_ros():
    outside = {path: sorted({m for m in _imported(tree) if _is_ros(m)})
               for path, tree in SOURCES.items() if not path.startswith('ros' + os.sep)}
    assert {p: m for p, m in outside.items() if m} == {}
    # the rule can see an import: the node imports the client library
    node = SOURCES[os.path.join('ros', 'ik_controller_node.py')]
    assert any(_is_ros(m) for m in _imported(node))


def _goal_writes(tree):
    """Yield (line, text) of assignments into ``<...>goals.<array>`` (item or whole)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                while isinstance(target, ast.Subscript):
                    target = target.value
                if (isinstance(target, ast.Attribute) and target.attr in GOAL_ARRAYS
                        and isinstance(target.value, (ast.Attribute, ast.Name))
                        and getattr(target.value, 'attr', getattr(target.value, 'id', ''))
                        == 'goals'):
                    yield node.lineno, ast.unparse(node)


def test_only_the_goal_set_writes_the_goals():
    writes = {path: list(_goal_writes(tree)) for path, tree in SOURCES.items()
              if path != os.path.join('control', 'goal_set.py')}
    assert {p: w for p, w in writes.items() if w} == {}


@pytest.mark.parametrize('line', ['self.goals.best_time[:] = now',
                                  'goals.reached[i] = False', 'c.goals.targets[idle] = T'])
def test_the_goal_rule_sees_a_write(line):
    """Negative control: the writes this change removed are found."""
    assert list(_goal_writes(ast.parse(line)))

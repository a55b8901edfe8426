"""
The README's ik_controller parameter table says what the node declares (one source).

The node's PARAMETERS table (ik_control/ros/ik_controller_parameters.py, defaults from the
ControllerConfig and SolverConfig dataclasses) is what runs; the README documents it row
by row: every declared parameter has a row and every row a parameter, with the node's
default, description, range and run-time flag. (test_launch_files.py checks the same
names against config/wam.yaml and config/simon.yaml.)
"""

import math
import os
import re

from ik_control.ros import ik_controller_parameters as node
import pytest

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'README.md')


def _readme_rows():
    """Return {name: [default, yaml values, description, range, run time]} of the table."""
    with open(README, encoding='utf-8') as f:
        text = f.read()
    section = text.split('## ik_controller parameters', 1)[1].split('\n## ', 1)[0]
    rows = {}
    for line in section.splitlines():
        match = re.match(r'\| `([^`]+)` \| (.*) \|$', line)
        if match:
            cells = [c.strip() for c in match.group(2).split(' | ')]
            rows[match.group(1)] = cells
    return rows


ROWS = _readme_rows()


def _shown(value):
    """Return the default as the table shows it (YAML-like)."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, list):
        return '[' + ', '.join(str(v) for v in value) + ']'
    if type(value) in (int, float):
        return repr(value)
    return '[]'  # an array declared by type, without a default


def test_every_declared_parameter_has_a_row_and_every_row_a_parameter():
    assert set(ROWS) == set(node.PARAMETERS), (
        f'missing rows: {sorted(set(node.PARAMETERS) - set(ROWS))}; rows of no parameter: '
        f'{sorted(set(ROWS) - set(node.PARAMETERS))}')


@pytest.mark.parametrize('name', sorted(node.PARAMETERS))
def test_the_row_gives_the_nodes_default_description_range_and_run_time(name):
    p = node.PARAMETERS[name]
    default, _, description, value_range, run_time = ROWS[name]
    assert default == f'`{_shown(p.default)}`'
    assert description == p.description
    assert run_time == ('yes' if p.dynamic else 'no')
    if p.lo is None:
        assert value_range == ''
    else:
        lo, hi = (float(x) for x in value_range.split(' .. '))
        assert math.isclose(lo, p.lo) and math.isclose(hi, p.hi)

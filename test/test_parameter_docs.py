"""
The README's ik_controller parameter table says what the node declares (one source).

The node's PARAMETERS table (ik_control/ros/ik_controller_parameters.py, defaults from the
ControllerConfig and SolverConfig dataclasses) is what runs; the README's table is what
``ik_control params`` writes from it and the bundled robots' files
(ik_control/ros/parameter_table.py): every declared parameter has a row and every row a
parameter, with the node's default, description, range and run-time flag.
(test_launch_files.py checks the same names against config/wam.yaml and config/simon.yaml.)
"""

import math
import os
import re

from ik_control.ros import ik_controller_parameters as node
from ik_control.ros import parameter_table
from ik_control.validation import InputError
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


def test_the_readme_table_is_the_one_written_from_the_declarations():
    """A changed parameter without ``ik_control params --write-readme README.md`` fails."""
    with open(README, encoding='utf-8') as f:
        text = f.read()
    start, end = parameter_table.readme_table(text)
    assert text[start:end].rstrip('\n') == parameter_table.markdown_table(), (
        'README.md: run `ik_control params --write-readme README.md`')


def test_every_declared_parameter_has_a_row_and_every_row_a_parameter():
    assert set(ROWS) == set(node.PARAMETERS), (
        f'missing rows: {sorted(set(node.PARAMETERS) - set(ROWS))}; rows of no parameter: '
        f'{sorted(set(ROWS) - set(node.PARAMETERS))}')


@pytest.mark.parametrize('name', sorted(node.PARAMETERS))
def test_the_row_gives_the_nodes_default_description_range_and_run_time(name):
    p = node.PARAMETERS[name]
    default, _, description, value_range, run_time = ROWS[name]
    assert default == f'`{parameter_table.shown(p.default)}`'
    assert description == p.description
    assert run_time == ('yes' if p.dynamic else 'no')
    if p.lo is None:
        assert value_range == ''
    else:
        lo, hi = (float(x) for x in value_range.split(' .. '))
        assert math.isclose(lo, p.lo) and math.isclose(hi, p.hi)


#: configuration fields no parameter sets: the node's own unreachable rule, the solver's
#: per-update gain (solver.gain is the controller's rate K), and the solver's settings
#: that only the benchmarks and the command line reach
NOT_PARAMETERS = {'goal.unreachable_time', 'solver.gain', 'solver.pinv_threshold',
                  'solver.sdls_gamma_max', 'solver.max_joint_step'}
#: the parameters whose name is not their field's (control/config.py says why)
RENAMED = {'solver.gain': 'gain', 'collision.srdf_path': 'collision.srdf',
           **{f'nullspace.{n}': f'solver.{n}' for n in (
               'centering_gain', 'posture_target', 'posture_weights', 'posture_exponent',
               'manipulability_gain')}}


def _setting_names():
    """Every leaf of the configuration, by its dotted name (``limits.position_margin``)."""
    from dataclasses import fields

    from ik_control.control.config import ControllerConfig, GROUPS

    config = ControllerConfig()
    names = {f.name for f in fields(config) if f.name not in GROUPS}
    for group in GROUPS:
        names |= {f'{group}.{f.name}' for f in fields(getattr(config, group))}
    return names


def _other_value(param):
    """Return a value of ``param``'s type, inside its range, unlike its default."""
    if isinstance(param.default, bool):
        return not param.default
    if isinstance(param.default, (int, float)) and param.lo is not None:
        value = param.lo + 0.37 * (param.hi - param.lo)
        return type(param.default)(value if value != param.default else param.hi)
    if isinstance(param.default, str):
        return param.default + '_other'
    return [0.25, 0.5]


def _declared_values():
    """Return ``{name: default}`` as the node reads them (an array declared by type: [])."""
    return {name: ([] if p.default.__class__.__name__ == 'Type' else p.default)
            for name, p in node.PARAMETERS.items()}


def test_each_setting_is_one_parameter_whose_value_reaches_its_field():
    """Every configuration field is one parameter's (or named here); its value lands there."""
    declared = [p.field for p in node.PARAMETERS.values() if p.field]
    assert len(declared) == len(set(declared))
    assert set(declared) | NOT_PARAMETERS == _setting_names()
    defaults = _declared_values()
    for name, param in node.PARAMETERS.items():
        if param.field is None or param.convert is not None:
            continue
        values = dict(defaults, **{name: _other_value(param)})
        config = node.controller_config(values)
        group, _, leaf = param.field.rpartition('.')
        got = getattr(getattr(config, group) if group else config, leaf)
        want = values[name]
        assert got == (tuple(want) if isinstance(want, list) else want), name


def test_the_configuration_is_nested_as_the_parameters_are_named():
    """``limits.position_margin`` sets ``config.limits.position_margin``; three differ."""
    for name, param in node.PARAMETERS.items():
        if param.field is not None:
            assert param.field == RENAMED.get(name, name), name
    assert set(RENAMED) <= set(node.PARAMETERS)


def test_a_value_outside_a_parameters_range_is_refused_by_the_configuration_too():
    """The range a parameter is declared with is the field's: Python users meet it too."""
    defaults = _declared_values()
    ranged = {name: p for name, p in node.PARAMETERS.items() if p.field and p.lo is not None}
    assert len(ranged) >= 25  # every numeric setting of the controller has its range
    for name, param in ranged.items():
        margin = max(abs(param.lo), abs(param.hi), 1.0) * 1e-3
        for value in (param.lo - margin, param.hi + margin):
            with pytest.raises(InputError, match=rf'^{re.escape(param.field)} must be a '
                                                 rf'number in \[{param.lo:g}, {param.hi:g}\]'):
                node.controller_config(dict(defaults, **{name: value})).validate(7)
        for value in (param.lo, param.hi):  # the ends are in the range (other checks aside)
            try:
                node.controller_config(dict(defaults, **{name: value})).validate(7)
            except InputError as exc:
                assert 'must be a number in' not in str(exc), (name, value)

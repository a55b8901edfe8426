"""
The README's table of ``ik_controller``'s parameters, written from the one declaration.

:data:`~ik_control.ros.ik_controller_parameters.PARAMETERS` declares each parameter once
(default, description with its unit, range, whether it may change at run time);
``config/wam.yaml`` and ``config/simon.yaml`` set the bundled robots' values. This module
writes the Markdown table from those two sources, so the README never says anything the
node does not do: ``ik_control params`` prints it, ``ik_control params
--write-readme README.md`` puts it in place of the README's table, and the test suite
fails when the README's table is not what they print (test_parameter_docs).
"""

from ik_control import robots
from ik_control.launch_util import node_parameters
from ik_control.ros.ik_controller_parameters import PARAMETERS

__all__ = ['markdown_table', 'shown', 'write_readme']

HEADER = ('| parameter | default | wam.yaml / simon.yaml | description [unit] | range | '
          'run time |\n|---|---|---|---|---|---|')
#: the bundled robots' parameter files, in the table's order
ROBOT_FILES = ('wam', 'simon')
#: lists longer than this are shown by their length ("7 names")
LONGEST_LIST = 4
#: a robot file that does not set the parameter (the node's default applies)
UNSET = '(unset)'


def shown(value):
    """Return a parameter value as the table shows it (YAML-like)."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, list):
        return '[' + ', '.join(str(v) for v in value) + ']'
    if type(value) in (int, float):
        return repr(value)
    return '[]'  # an array declared by type, without a default


def _robot_value(value):
    """Return a value of a robot's file as the table shows it."""
    if isinstance(value, list) and len(value) > LONGEST_LIST:
        return f'{len(value)} names'
    return f'`{shown(value)}`' if not isinstance(value, list) or value else '`[]`'


def _robot_values():
    """Return ``{name: value}`` of ``ik_controller`` in each bundled robot's file."""
    return [node_parameters(robots.data_path('config', f'{robot}.yaml'), 'ik_controller')
            for robot in ROBOT_FILES]


def markdown_table():
    """Return the table (header and one row per declared parameter, declaration order)."""
    files = _robot_values()
    lines = [HEADER]
    for name, p in PARAMETERS.items():
        default = f'`{shown(p.default)}`'
        cells = [_robot_value(f[name]) if name in f else UNSET for f in files]
        robot_cell = cells[0] if len(set(cells)) == 1 else ' / '.join(cells)
        value_range = '' if p.lo is None else f'{p.lo!r} .. {p.hi!r}'
        lines.append(f'| `{name}` | {default} | {robot_cell} | {p.description} | '
                     f"{value_range} | {'yes' if p.dynamic else 'no'} |")
    return '\n'.join(lines)


def readme_table(text):
    """Return ``(start, end)`` of the table in the README's text (its header to its last row)."""
    start = text.index(HEADER)
    end = start
    for line in text[start:].splitlines(keepends=True):
        if not line.startswith('|'):
            break
        end += len(line)
    return start, end


def write_readme(path):
    """Put :func:`markdown_table` in place of the README's table; return whether it changed."""
    with open(path, encoding='utf-8') as f:
        text = f.read()
    start, end = readme_table(text)
    new = text[:start] + markdown_table() + '\n' + text[end:]
    if new != text:
        with open(path, 'w', encoding='utf-8') as f:
            f.write(new)
    return new != text

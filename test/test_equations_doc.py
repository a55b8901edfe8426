"""
docs/equations.md names, per equation, the function that runs it (issue #19).

Every table row gives a dotted path (``ik_control.x.y.func`` or
``ik_control.x.y.Class.method``) and a file. The path must resolve (import the module the
file names, then the attributes), the object must be defined in that file (not imported
into it), and the package must use it: a function that only the tests call is not the
one that runs.

How "used" is decided, statically: every ``.py`` file under ``ik_control/`` is parsed
and its identifiers are collected -- names, attribute names (``laws.dls_apply``,
``self.obstacles.step``) and imported names -- skipping comments and docstrings. A
function is used when its name occurs outside its own definition (so recursion does not
count); for ``Class.method`` the method's name must occur outside the method and the
class's name outside the class. A public entry point that nothing calls by name counts
when setup.py's ``console_scripts`` names it (that is how the CLI and the nodes start).
The check cannot tell two methods of the same name apart, so a method named like a
common one (``step``) passes on its name once its class is used; a module-level function
that only the tests call fails it.

The "Duplicates still to merge" section is checked the same way: each path after
"runs in" must be used, each path after "test-only:" must not be (once the copy is
merged or wired in, the section is out of date), and every ``ik_control.*`` path the
page mentions must resolve.
"""

import ast
import importlib
import inspect
import os
import re

import ik_control
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, 'docs', 'equations.md')
PACKAGE = os.path.dirname(os.path.realpath(ik_control.__file__))  # the code imported
ROW = re.compile(r'^\| (.+) \| `(ik_control\.[\w.]+)` \| `(ik_control/[\w/]+\.py)` \|$')
DUPLICATES = '## Duplicates still to merge'


def _doc():
    """Return the text of docs/equations.md."""
    with open(DOC, encoding='utf-8') as f:
        return f.read()


def _rows():
    """Return ``(section, equation and what it computes, dotted path, file)`` of each row."""
    rows = []
    section = ''
    for line in _doc().splitlines():
        if line.startswith('## '):
            section = line[3:]
        match = ROW.match(line)
        if match:
            rows.append((section, match.group(1), match.group(2), match.group(3)))
    return rows


def _duplicates_section():
    """Return the text of the page's duplicates section."""
    return _doc().split(DUPLICATES, 1)[1].split('\n## ', 1)[0]


def _duplicates(marker):
    """Return the paths after ``marker`` (``runs in``, ``test-only:``) in the duplicates."""
    return re.findall(marker + r'\s+`(ik_control\.[\w.]+)`', _duplicates_section())


def _resolve(path):
    """Return the object at dotted ``path``: modules imported as needed, then attributes."""
    parts = path.split('.')
    obj = importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], 2):
        if inspect.ismodule(obj) and not hasattr(obj, part):
            obj = importlib.import_module('.'.join(parts[:i]))  # a submodule not yet loaded
        else:
            obj = getattr(obj, part)
    return obj


def _row_object(path, file):
    """Return the object of a table row; raise AssertionError if path and file disagree."""
    module = file[:-len('.py')].replace('/', '.')
    assert path.startswith(module + '.'), f'{path} is not in {file}'
    obj = importlib.import_module(module)
    for attr in path[len(module) + 1:].split('.'):
        obj = getattr(obj, attr)
    source = inspect.getsourcefile(getattr(obj, 'py_func', obj))  # numba: the Python function
    where = os.path.relpath(os.path.realpath(source), os.path.dirname(PACKAGE))
    assert where == file, f'{path} is defined in {where}, not {file}'
    return obj


def _identifiers():
    """Return ``{name: [(file, line)]}`` of the identifiers of the package's code."""
    found = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if not name.endswith('.py'):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding='utf-8') as f:
                tree = ast.parse(f.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.Name):
                    ids = [(node.id, node.lineno)]
                elif isinstance(node, ast.Attribute):
                    ids = [(node.attr, node.lineno)]
                elif isinstance(node, ast.ImportFrom):
                    ids = [(a.name, node.lineno) for a in node.names]
                else:
                    continue
                for ident, line in ids:
                    found.setdefault(ident, []).append((os.path.realpath(path), line))
    return found


IDENTIFIERS = _identifiers()


def _entry_points():
    """Return the dotted paths that setup.py's ``console_scripts`` start."""
    with open(os.path.join(ROOT, 'setup.py'), encoding='utf-8') as f:
        text = f.read()
    return {f'{m}.{fn}' for m, fn in re.findall(r"'[\w-]+ = ([\w.]+):(\w+)'", text)}


ENTRY_POINTS = _entry_points()


def _used_outside(obj, name):
    """Return whether ``name`` occurs in the package outside the definition of ``obj``."""
    code = getattr(obj, 'py_func', obj)
    source = os.path.realpath(inspect.getsourcefile(code))
    lines, first = inspect.getsourcelines(code)
    own = range(first, first + len(lines))
    return any(not (f == source and line in own) for f, line in IDENTIFIERS.get(name, []))


def _used(path):
    """Return whether the package uses the function or method at ``path`` (module docstring)."""
    if path in ENTRY_POINTS:
        return True
    owner_path, name = path.rsplit('.', 1)
    owner = _resolve(owner_path)
    used = _used_outside(getattr(owner, name), name)
    if inspect.isclass(owner):
        used = used and _used_outside(owner, owner.__name__)
    return used


ROWS = _rows()
PATHS = sorted({(path, file) for _, _, path, file in ROWS})


def test_every_seed_document_has_a_table_with_rows():
    sections = {section for section, _, _, _ in ROWS}
    seeds = {s for s in sections if 'seed document `00' in s}
    assert len(seeds) == 5, f'sections with rows: {sorted(sections)}'
    # the only others: what the package adds beyond the documents (collision, #30)
    assert all(s in seeds or s.startswith('Beyond the seed documents') for s in sections)


@pytest.mark.parametrize('path,file', PATHS)
def test_the_function_exists_in_the_file_the_row_names(path, file):
    assert callable(_row_object(path, file))


@pytest.mark.parametrize('path,file', PATHS)
def test_the_function_is_used_by_the_package_not_only_by_tests(path, file):
    assert _used(path), f'{path}: nothing under ik_control/ uses it'


def test_every_path_the_page_mentions_resolves():
    for path in sorted(set(re.findall(r'`(ik_control\.[\w.]+)`', _doc()))):
        _resolve(path)


def test_each_duplicate_names_the_running_copy_and_it_is_used():
    running = _duplicates('runs in')
    assert running
    for path in running:
        assert _used(path), f'{path} is listed as the running copy but nothing uses it'


def test_the_copies_called_test_only_are_used_by_no_package_code():
    test_only = _duplicates('test-only:')
    assert len(test_only) == _duplicates_section().count('test-only:')  # none unparsed
    for path in test_only:
        assert not _used(path), f'{path} is used now: update the duplicates section'


def test_a_wrong_file_a_missing_function_or_an_import_is_refused():
    with pytest.raises(AssertionError):
        _row_object('ik_control.ik.laws.clamp_max_abs', 'ik_control/ik/solver.py')
    with pytest.raises(AttributeError):
        _row_object('ik_control.ik.laws.no_such_law', 'ik_control/ik/laws.py')
    # solver.py imports pose_error, which is defined in pose_error.py
    with pytest.raises(AssertionError):
        _row_object('ik_control.ik.solver.pose_error', 'ik_control/ik/solver.py')

"""
The package builds with colcon the way a ROS 2 workspace builds it.

The source tree (without virtual environments, caches and build trees) is
copied into a scratch workspace and built with ``colcon build``, with and
without ``--symlink-install``. The install tree must hold what ``ros2 run``,
``ros2 launch`` and the ament index look for: the console scripts in
``lib/ik_control``, ``package.xml``, the ament resource marker, and every
launch, config and URDF file of the source tree under ``share/ik_control``.

The interface package nested in the repository, ``ik_control_interfaces``, is built
beside it with the README's workspace command (colcon does not look inside a package
for another, so its path is named), and its action imports from the install space.
"""

import configparser
import glob
import os
import shutil
import subprocess
import sys

import pytest

PACKAGE = 'ik_control'
INTERFACES = 'ik_control_interfaces'
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = [('launch', '*.launch.py'), ('config', '*.yaml'), ('config', '*.xml'),
          ('urdf', '*.urdf')]
SKIP_AT_ROOT = {'build', 'install', 'log', 'venv', 'bench_results'}


def _colcon():
    """Return the colcon executable next to this interpreter, or on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), 'colcon')
    if os.access(here, os.X_OK):
        return here
    return shutil.which('colcon')


def _ignore(directory, names):
    skipped = {n for n in names
               if n.startswith('.') or n == '__pycache__' or n.endswith('.egg-info')}
    if os.path.abspath(directory) == ROOT:
        skipped |= SKIP_AT_ROOT & set(names)
    return skipped


def _python_files(top):
    return sorted(os.path.relpath(os.path.join(d, f), top)
                  for d, _, files in os.walk(top) for f in files if f.endswith('.py'))


@pytest.fixture(scope='module')
def workspace(tmp_path_factory):
    assert _colcon() is not None, 'colcon is missing: it is in requirements.txt'
    ws = tmp_path_factory.mktemp('colcon_ws')
    shutil.copytree(ROOT, ws / 'src' / PACKAGE, ignore=_ignore)
    return ws


def _build(ws, symlink):
    env = dict(os.environ, COLCON_HOME=str(ws / 'colcon_home'), PYTHONDONTWRITEBYTECODE='1')
    base = ws / ('symlink' if symlink else 'copy')
    cmd = [_colcon(), '--log-base', str(base / 'log'), 'build',
           '--base-paths', str(ws / 'src'), '--packages-select', PACKAGE,
           '--build-base', str(base / 'build'), '--install-base', str(base / 'install')]
    if symlink:
        cmd.append('--symlink-install')
    proc = subprocess.run(cmd, cwd=str(ws), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stdout
    assert 'Finished <<< %s' % PACKAGE in proc.stdout, proc.stdout
    return base / 'install' / PACKAGE, base / 'build' / PACKAGE


def _console_scripts(build_dir):
    entry_points = glob.glob(str(build_dir / '*.egg-info' / 'entry_points.txt'))
    assert entry_points, 'colcon build left no egg-info in %s' % build_dir
    parser = configparser.ConfigParser()
    parser.read(entry_points[0])
    return sorted(parser['console_scripts']) if 'console_scripts' in parser else []


@pytest.mark.parametrize('symlink', [False, True], ids=['copy', 'symlink-install'])
def test_colcon_build_install_tree(workspace, symlink):
    prefix, build_dir = _build(workspace, symlink)

    scripts = _console_scripts(build_dir)
    assert PACKAGE in scripts
    for name in scripts:
        path = prefix / 'lib' / PACKAGE / name
        assert os.access(str(path), os.X_OK), 'console script %s not installed' % name

    share = prefix / 'share' / PACKAGE
    assert (share / 'package.xml').is_file()
    assert (prefix / 'share' / 'ament_index' / 'resource_index' / 'packages' / PACKAGE).is_file()
    for subdir, pattern in SHARED:
        for source in glob.glob(os.path.join(ROOT, subdir, pattern)):
            name = os.path.basename(source)
            assert (share / subdir / name).is_file(), '%s/%s not installed' % (subdir, name)

    if not symlink:
        # Every module of the source tree is installed: a directory without
        # __init__.py would be left out by find_packages().
        site = glob.glob(str(prefix / 'lib' / 'python3*' / 'site-packages' / PACKAGE))
        assert site, 'no %s package in the install tree' % PACKAGE
        assert _python_files(site[0]) == _python_files(os.path.join(ROOT, PACKAGE))


def test_colcon_builds_both_packages(workspace):
    """The README's workspace steps: both packages build, the action imports from install."""
    base = workspace / 'both'
    # without a sourced ROS installation, the wheels of the venv are the underlay
    prefix = os.environ.get('AMENT_PREFIX_PATH') or sys.prefix
    env = dict(os.environ, COLCON_HOME=str(workspace / 'colcon_home'),
               PYTHONDONTWRITEBYTECODE='1', AMENT_PREFIX_PATH=prefix,
               CMAKE_PREFIX_PATH=os.environ.get('CMAKE_PREFIX_PATH') or prefix,
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ['PATH'])
    cmd = [_colcon(), '--log-base', str(base / 'log'), 'build',
           '--base-paths', 'src', 'src/%s/%s' % (PACKAGE, INTERFACES),
           '--build-base', str(base / 'build'), '--install-base', str(base / 'install'),
           '--cmake-args', '-DBUILD_TESTING=OFF']
    proc = subprocess.run(cmd, cwd=str(workspace), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-5000:]
    for name in (PACKAGE, INTERFACES):
        assert 'Finished <<< %s' % name in proc.stdout, proc.stdout[-5000:]
    # ik_control's package.xml names the interfaces: colcon orders and sources them first
    deps = (base / 'install' / PACKAGE / 'share' / 'colcon-core' / 'packages' / PACKAGE)
    assert INTERFACES in deps.read_text().split(':')
    check = ('import ik_control_interfaces; print(ik_control_interfaces.__file__); '
             'from ik_control_interfaces.action import MoveToPose; '
             'print(MoveToPose.Result.SUCCEEDED, MoveToPose.Goal().end_effectors)')
    proc = subprocess.run(['sh', '-c', '. "$0/setup.sh" && exec "$1" -c "$2"',
                           str(base / 'install'), sys.executable, check],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=120)
    assert proc.returncode == 0, proc.stdout
    lines = proc.stdout.split('\n')
    assert lines[0].startswith(str(base / 'install' / INTERFACES)), proc.stdout
    assert lines[1] == '0 []', proc.stdout

"""ik_control: resolved-motion-rate control of redundant arms with damped least squares."""

import hashlib
import os

__version__ = '0.1.0'


def _numba_cache_dir():
    """
    Return a numba cache directory keyed by the content of every module of this package.

    numba's own cache is checked against the source file of each compiled function only, so
    a function compiled before a change in another module it calls would be reused stale.
    Keying the whole cache by the package's content rules that out, and also gives
    read-only installations (a colcon install under /opt) a writable cache.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    digest = hashlib.sha1(__version__.encode())
    for root, dirs, files in os.walk(here):
        dirs.sort()
        for name in sorted(files):
            if name.endswith('.py'):
                with open(os.path.join(root, name), 'rb') as stream:
                    digest.update(name.encode() + stream.read())
    base = os.environ.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache')
    return os.path.join(base, 'ik_control', 'numba-' + digest.hexdigest()[:16])


os.environ.setdefault('NUMBA_CACHE_DIR', _numba_cache_dir())

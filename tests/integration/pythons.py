"""The interpreters the integration tests run on, with stable ids.

Supported (3.8 - 3.14): pyenv's shared-libpython builds py38 ... py313, Debian's stripped static
/usr/bin/python3.11 (debian311) and Debian unstable's stripped static 3.13 / 3.14 started through
their own loader by the launchers tests/setup-pythons.sh writes (debian313, debian314).
Unsupported, for the error tests: pyenv's 2.7, 3.6, 3.7 (py27, py36, py37).

`python3 tests/integration/pythons.py` lists them and whether each is installed here.
"""
import os
import shutil
import subprocess
import sys

# id -> (version as the interpreter reports it, how to find it)
_PYENV = {
    'py27': '2.7.18', 'py36': '3.6.15', 'py37': '3.7.16',
    'py38': '3.8.18', 'py39': '3.9.18', 'py310': '3.10.13', 'py311': '3.11.7',
    'py312': '3.12.1', 'py313': '3.13.0',
}
_DEBIAN_LAUNCHERS = {'debian313': '3.13', 'debian314': '3.14'}

SUPPORTED = ['py38', 'py39', 'py310', 'py311', 'py312', 'py313',
             'debian311', 'debian313', 'debian314']
UNSUPPORTED = ['py27', 'py36', 'py37']


class Missing(Exception):
    """The interpreter is not installed here; str() says why and how to get it."""


class Interpreter:
    def __init__(self, ident, argv, version):
        self.id = ident
        self.argv = argv              # how to start it: argv + [script, args...]
        self.version = version        # (major, minor)

    def __repr__(self):
        return 'Interpreter(%s, %s, %d.%d)' % (self.id, self.argv, *self.version)

    @property
    def has_qualname_frames(self):
        """3.11+ code objects carry co_qualname, so a method shows as Class.method."""
        return self.version >= (3, 11)


def pyenv_root():
    exe = shutil.which('pyenv') or os.path.expanduser('~/.pyenv/bin/pyenv')
    if os.access(exe, os.X_OK):
        try:
            out = subprocess.run([exe, 'root'], capture_output=True, text=True, timeout=30,
                                 stdin=subprocess.DEVNULL)
            if out.returncode == 0 and out.stdout.strip():
                return out.stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            pass
    return os.environ.get('PYENV_ROOT') or os.path.expanduser('~/.pyenv')


def get(ident, source_root):
    """Interpreter for `ident`, or raise Missing (the caller then skips with exit 77)."""
    if ident in _PYENV:
        full = _PYENV[ident]
        short = '.'.join(full.split('.')[:2])
        root = pyenv_root()
        exe = os.path.join(root, 'versions', full, 'bin', 'python' + short)
        if not os.access(exe, os.X_OK):
            raise Missing('%s: pyenv Python %s is not installed (%s missing; `pyenv install %s`)'
                          % (ident, full, exe, full))
        return Interpreter(ident, [exe], tuple(int(x) for x in short.split('.')))
    if ident == 'debian311':
        exe = '/usr/bin/python3.11'
        if not os.access(exe, os.X_OK):
            raise Missing('debian311: %s missing (apt-get install python3.11)' % exe)
        return Interpreter(ident, [exe], (3, 11))
    if ident in _DEBIAN_LAUNCHERS:
        short = _DEBIAN_LAUNCHERS[ident]
        exe = os.path.join(source_root, 'deps', 'debian', 'python' + short)
        if not os.access(exe, os.X_OK):
            raise Missing('%s: launcher %s missing (run tests/setup-pythons.sh)' % (ident, exe))
        return Interpreter(ident, [exe], tuple(int(x) for x in short.split('.')))
    raise ValueError('unknown interpreter id %r' % ident)


def full_version(ident):
    """The exact version string an unsupported pyenv interpreter reports (for messages)."""
    return _PYENV[ident]


if __name__ == '__main__':
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for i in SUPPORTED + UNSUPPORTED:
        try:
            print('%-10s %s' % (i, ' '.join(get(i, src).argv)))
        except Missing as e:
            print('%-10s MISSING: %s' % (i, e))
    sys.exit(0)

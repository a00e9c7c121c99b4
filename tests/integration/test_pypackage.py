#!/usr/bin/env python3
"""The Python package hwspy as people get it and use it (issue 22): installed with pip, in a
Jupyter kernel, and the README's numpy example as written.

    test_pypackage.py --hwspy H --source-root S --pythonpath BUILD/python --case C

install: a venv of /usr/bin/python3 (--system-site-packages, so that Debian's python3-mesonpy
is visible) and `pip install --no-build-isolation .` from a copy of the source tree (as the
README says; the build is meson-python's own, nothing of BUILD reused: about 15 s), then, from
another directory and without PYTHONPATH, `import hwspy` is the venv's and counts the page
faults of touching 1000 fresh pages (within 10%). Skipped where venv, pip or mesonpy are
missing.
jupyter: a real kernel (jupyter_client's start_new_kernel, the python3 kernel of ipykernel,
PYTHONPATH=BUILD/python) runs a cell with hwspy.count (page faults of 1000 fresh pages, within
10%) and one with hwspy.profile(None) around a spinning function (p.top(3): it first, with most
of the weight); the results are read back from the execute_result messages. Skipped where
ipykernel or jupyter_client is missing.
readme: the README's "## Python" section's ```python block run as written with /usr/bin/python3
(numpy) and PYTHONPATH=BUILD/python in an empty directory, then its `hwspy diff` line with this
build's hwspy: both profiles written, the diff exits 0 and the changed step costs less CPU.
"""
import ast
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

import harness
from harness import Fail, Skip, check, log

N_PAGES = 1000
COUNT_PAGES = '''
import mmap, hwspy
n = %d
with hwspy.count(["page-faults"]) as c:
    m = mmap.mmap(-1, n * 4096)
    for i in range(0, n * 4096, 4096):
        m[i] = 1
''' % N_PAGES


def run(argv, timeout, **kw):
    log('$ %s' % ' '.join(shlex.quote(a) for a in argv))
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL, **kw)
    except subprocess.TimeoutExpired:
        raise Fail('%s did not finish within %d s' % (' '.join(argv[:3]), timeout))
    log('exit %d after %.1f s' % (p.returncode, time.monotonic() - t0))
    return p


def clean_env(**extra):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE='1')
    env.pop('PYTHONPATH', None)
    env.update(extra)
    return env


def check_faults(value, where):
    log('%s: %s page faults for %d pages' % (where, value, N_PAGES))
    check(abs(value - N_PAGES) <= N_PAGES * 0.1,
          '%s: %s page faults counted for %d fresh pages (not within 10%%)'
          % (where, value, N_PAGES))


# ---------------------------------------------------------------------------- install

def case_install(opts):
    system = '/usr/bin/python3'
    probe = run([system, '-c', 'import venv, ensurepip, mesonpy'], 30, env=clean_env())
    if probe.returncode:
        raise Skip('%s lacks venv, ensurepip or mesonpy (python3-venv, python3-mesonpy): %s'
                   % (system, probe.stderr.strip()[-200:]))
    src = os.path.join(opts.tmp, 'src')
    root = os.path.realpath(opts.source_root)
    shutil.copytree(root, src, symlinks=True, ignore=lambda d, names: [
        n for n in names if d == root and (n.startswith('build') or n in ('deps', '.git') or
                                           n.startswith('.mesonpy'))])
    venv = os.path.join(opts.tmp, 'V')
    p = run([system, '-m', 'venv', '--system-site-packages', venv], 60, env=clean_env())
    check(p.returncode == 0, 'python3 -m venv failed: %s' % p.stderr[-500:])
    p = run([os.path.join(venv, 'bin', 'pip'), 'install', '--no-build-isolation',
             '--no-cache-dir', '--no-index', '.'], 300, cwd=src,
            env=clean_env(PIP_DISABLE_PIP_VERSION_CHECK='1'))
    log(p.stdout[-3000:] + p.stderr[-3000:])
    check(p.returncode == 0, 'pip install --no-build-isolation . failed (above)')
    site = run([os.path.join(venv, 'bin', 'python'), '-c',
                'import sysconfig; print(sysconfig.get_paths()["platlib"])'], 30,
               env=clean_env()).stdout.strip()
    files = sorted(os.path.relpath(os.path.join(d, f), site)
                   for d, _, fs in os.walk(site) for f in fs
                   if not f.endswith('.pyc') and 'hwspy' in os.path.relpath(d, site))
    log('installed: %s' % files)
    check('hwspy/_hwspy.abi3.so' in files and 'hwspy/__init__.py' in files,
          'the venv has no hwspy/_hwspy.abi3.so and hwspy/__init__.py: %s' % files)
    # the package alone: no hwspy command, libhwspy or header went into the venv
    strays = [os.path.join(d, f) for d, _, fs in os.walk(venv) for f in fs
              if f in ('hwspy', 'hwspy.h', 'hwspy.1') or f.startswith('libhwspy')]
    check(not strays, 'pip installed more than the package: %s' % strays)
    away = os.path.join(opts.tmp, 'elsewhere')
    os.mkdir(away)
    code = COUNT_PAGES + 'print(hwspy.__file__)\nprint(c.counts["page-faults"])\n'
    p = run([os.path.join(venv, 'bin', 'python'), '-c', code], 60, cwd=away, env=clean_env())
    log(p.stdout + p.stderr)
    check(p.returncode == 0, 'import hwspy from %s failed (above)' % away)
    path, faults = p.stdout.split()[-2:]
    check(path.startswith(site), 'hwspy came from %s, not the venv (%s)' % (path, site))
    check_faults(float(faults), 'the installed package')


# ---------------------------------------------------------------------------- jupyter

CELL_PROFILE = '''
def spin(n):
    s = 0
    for i in range(n):
        s += i * i
    return s

with hwspy.profile(None, rate=1000) as p:
    spin(3000000)
[(f.function, f.share) for f in p.top(3)], p.stats['samples']
'''


def case_jupyter(opts):
    try:
        import ipykernel  # noqa: F401
        from jupyter_client.manager import start_new_kernel
    except ImportError as e:
        raise Skip('ipykernel or jupyter_client missing (python3-ipykernel, '
                   'python3-jupyter-client): %s' % e)
    env = clean_env(PYTHONPATH=os.path.realpath(opts.pythonpath),
                    PYDEVD_DISABLE_FILE_VALIDATION='1')
    t0 = time.monotonic()
    km, kc = start_new_kernel(kernel_name='python3', env=env, startup_timeout=60,
                              cwd=opts.tmp)
    log('kernel started in %.1f s' % (time.monotonic() - t0))
    try:
        def cell(code):
            msgs = []
            reply = kc.execute_interactive(code, timeout=60,
                                           output_hook=lambda m: msgs.append(m))
            status = reply['content']['status']
            texts = [m['content'].get('text', '') for m in msgs if m['msg_type'] == 'stream']
            errors = [m['content'] for m in msgs if m['msg_type'] == 'error']
            results = [m['content']['data']['text/plain'] for m in msgs
                       if m['msg_type'] == 'execute_result']
            log('cell: %s; stream %r; errors %r; result %r' % (status, texts, errors, results))
            check(status == 'ok' and results, 'the cell failed in the kernel: %s'
                  % (errors or reply['content']))
            return ast.literal_eval(results[-1])

        faults = cell(COUNT_PAGES + 'c.counts["page-faults"]\n')
        check_faults(faults, 'a Jupyter cell')
        top, samples = cell('import hwspy\n' + CELL_PROFILE)
        check(samples > 0 and top, 'the profile in the kernel took no sample')
        check(top[0][0] == 'spin' and top[0][1] >= 0.8,
              'spin is not the profile\'s top function with >= 80%% of it: %r' % top)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    log('both cells ran in a kernel; %.1f s in all' % (time.monotonic() - t0))


# ---------------------------------------------------------------------------- readme

def readme_blocks(opts):
    with open(os.path.join(opts.source_root, 'README.md'), encoding='utf-8') as f:
        text = f.read()
    at = text.find('\n## Python\n')
    check(at >= 0, 'README.md has no "## Python" section')
    section = text[at + 1:]
    section = section[:section.find('\n## ', 1)]
    blocks, block, lang = [], None, None       # (language, lines) of each fenced block
    for line in section.splitlines():
        if line.startswith('```'):
            if block is None:
                block, lang = [], line[3:].strip()
            else:
                blocks.append((lang, block))
                block = None
        elif block is not None:
            block.append(line)
    code = [b for lang, b in blocks if lang == 'python']
    check(code, 'no ```python block in the README\'s Python section')
    diff = [line.split('#', 1)[0].strip() for lang, b in blocks if lang == ''
            for line in b if line.startswith('hwspy diff ')]
    check(len(diff) == 1, 'the Python section has no one `hwspy diff` line: %s' % diff)
    return '\n'.join(code[0]) + '\n', shlex.split(diff[0])


def case_readme(opts):
    system = '/usr/bin/python3'
    if run([system, '-c', 'import numpy'], 30, env=clean_env()).returncode:
        raise Skip('%s has no numpy (python3-numpy)' % system)
    code, diff = readme_blocks(opts)
    cwd = os.path.join(opts.tmp, 'readme')
    os.mkdir(cwd)
    with open(os.path.join(cwd, 'train.py'), 'w') as f:
        f.write(code)
    p = run([system, 'train.py'], 60, cwd=cwd,
            env=clean_env(PYTHONPATH=os.path.realpath(opts.pythonpath)))
    log(p.stdout + p.stderr)
    check(p.returncode == 0, 'the README\'s example exited %d (above)' % p.returncode)
    check('Traceback' not in p.stderr, 'a traceback on stderr')
    for name in diff[1:]:
        if name.endswith('.folded'):
            check(os.path.getsize(os.path.join(cwd, name)) > 0, 'no profile %s written' % name)
    p = run([os.path.abspath(opts.hwspy)] + diff[1:], 30, cwd=cwd)
    log(p.stdout + p.stderr)
    check(p.returncode == 0, '`%s` exited %d' % (' '.join(diff), p.returncode))
    m = re.search(r'^cpu-clock: ([\d.]+) (\w+) -> ([\d.]+) (\w+) of CPU', p.stdout, re.M)
    check(m, 'no cpu-clock headline in the diff')
    unit = {'s': 1.0, 'ms': 1e-3, 'us': 1e-6}
    before = float(m.group(1)) * unit.get(m.group(2), 1)
    after = float(m.group(3)) * unit.get(m.group(4), 1)
    check(after < before, 'the changed step did not cost less CPU: %s' % m.group(0))
    check(re.search(r'^.*gradient_fast .*$', p.stdout, re.M),
          'gradient_fast is not among the diff\'s functions')


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--pythonpath', required=True, help='the build\'s python/ folder')
    p.add_argument('--case', required=True, choices=['install', 'jupyter', 'readme'])
    harness.main(lambda opts: globals()['case_' + opts.case](opts), p)

#!/usr/bin/env python3
"""hwspy.profile / hwspy.Profiler from Python: one interpreter start per case, the case's
checks in pyprofile_cases.py (run by the interpreter under test, the package on PYTHONPATH).

Cases: shares (two functions spinning 2:1 within 5 points, exact as root), threads (a thread
started in the block is in the profile, the recorder's own thread never), outputs (each format
written at the block's end, output=None and folded(), write(), Profiler start/stop and
enable/disable, a KeyboardInterrupt in the block), errors (unknown event, an event this machine
cannot sample, bad options: ValueError), nobody (as an unprivileged user at
kernel.perf_event_paranoid 2: samples itself in user space, stats say the mode).
"""
import os
import shutil
import subprocess
import sys

import harness
from harness import Fail, Skip, check, log

HERE = os.path.dirname(os.path.abspath(__file__))


def run_case(opts):
    check(os.path.isfile(os.path.join(opts.pypath, 'hwspy', '__init__.py')),
          'the package is not built in %s' % opts.pypath)
    prefix, pypath, script = [], opts.pypath, os.path.join(HERE, 'pyprofile_cases.py')
    outdir = os.path.join(opts.tmp, 'out')
    os.mkdir(outdir)
    if opts.case == 'nobody':
        if os.geteuid() != 0:
            raise Skip('needs root, to run the case as nobody')
        with open('/proc/sys/kernel/perf_event_paranoid') as f:
            paranoid = int(f.read())
        if paranoid > 2:
            raise Skip('kernel.perf_event_paranoid is %d here: no process may sample itself'
                       % paranoid)
        prefix, _ = harness.as_nobody(opts)
        # the package and the cases where nobody may read them (the build may be under /root)
        pypath = os.path.join(opts.tmp, 'pkg')
        shutil.copytree(os.path.join(opts.pypath, 'hwspy'), os.path.join(pypath, 'hwspy'),
                        ignore=shutil.ignore_patterns('*.p', '__pycache__'))
        shutil.copy(script, pypath)
        script = os.path.join(pypath, 'pyprofile_cases.py')
        for root, dirs, files in os.walk(opts.tmp):
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o755)
            for f in files:
                os.chmod(os.path.join(root, f), 0o755)
        os.chmod(outdir, 0o777)
        if subprocess.run(prefix + opts.py.argv + ['-c', 'pass'], capture_output=True,
                          stdin=subprocess.DEVNULL).returncode:
            raise Skip('nobody cannot run %s' % opts.py.argv[0])
    env = dict(os.environ, PYTHONPATH=pypath, PYTHONDONTWRITEBYTECODE='1')
    argv = prefix + opts.py.argv + [script, opts.case, outdir]
    log('$ PYTHONPATH=%s %s' % (pypath, ' '.join(argv)))
    try:
        p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, timeout=opts.timeout, cwd=outdir)
    except subprocess.TimeoutExpired as e:
        log((e.stdout or b'').decode('utf-8', 'replace'))
        raise Fail('the case did not end within %d s' % opts.timeout)
    log(p.stdout.decode('utf-8', 'replace').rstrip())
    if p.returncode == 77:
        raise Skip('the case skipped (above)')
    check(p.returncode == 0, 'the case failed (exit %d%s)' % (
        p.returncode, ', killed by signal %d: the interpreter crashed' % -p.returncode
        if p.returncode < 0 else ''))


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--case', required=True,
                   choices=['shares', 'threads', 'outputs', 'errors', 'nobody'])
    p.add_argument('--pypath', required=True, help='the directory holding the built package')
    p.add_argument('--timeout', type=int, default=40)
    harness.main(run_case, p)

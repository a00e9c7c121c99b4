#!/usr/bin/env python3
"""hwspy.count from Python (issue 22): one case of pycount_cases.py run in the interpreter under
test, in a child with PYTHONPATH=<build>/python; the case prints what it measured.

    test_pycount.py --hwspy H --source-root S --pythonpath BUILD/python --python py312 --case C

count (every interpreter): import, and touching N fresh pages counts N page faults (within 10%,
and of getrusage's). block: disable()/enable() leave paused work out, a thread started in the
block and alive at its end is counted, nested blocks add up, Ctrl-C inside a block, the
decorator. errors: unknown event (ValueError), an unavailable hardware event (a warning and
c.unavailable; strict=True raises; part skipped where a PMU exists), pid=/duration= on a busy
child, no such pid. nobody: the child as nobody (setpriv/runuser) counts itself, and pid 1 is a
PermissionError naming the privilege. paranoid3: the same child as nobody with
kernel.perf_event_paranoid set to 3 for its run (machine-wide: the test is serial, and puts the
value back whatever happens): counting and profiling itself work in user space, or are a
PermissionError naming the sysctl (Debian's kernels refuse everything at 3, upstream's take 3
as 2).
"""
import os
import subprocess

import harness
from harness import Skip, check, log


def test(opts):
    case = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'pycount_cases.py')
    env = dict(os.environ, PYTHONPATH=os.path.realpath(opts.pythonpath),
               PYTHONDONTWRITEBYTECODE='1')
    prefix = []
    if opts.case in ('nobody', 'paranoid3'):
        if os.geteuid() != 0:
            raise Skip('needs root, to run the case as nobody')
        prefix, _ = harness.as_nobody(opts)
        probe = subprocess.run(prefix + opts.py.argv + ['-c', 'import hwspy'], env=env,
                               capture_output=True, text=True, timeout=60)
        if probe.returncode:
            raise Skip('nobody cannot run %s with the package here: %s'
                       % (' '.join(opts.py.argv), probe.stderr.strip()[-300:]))
    argv = prefix + opts.py.argv + [case, opts.case]
    log('running: %s' % ' '.join(argv))
    sysctl = '/proc/sys/kernel/perf_event_paranoid'
    if opts.case == 'paranoid3':
        with open(sysctl) as f:
            was = f.read().strip()
        try:
            with open(sysctl, 'w') as f:
                f.write('3')
        except OSError as e:
            raise Skip('cannot set %s to 3: %s' % (sysctl, e))
    try:
        p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60,
                           cwd=opts.tmp)
    finally:
        if opts.case == 'paranoid3':
            with open(sysctl, 'w') as f:
                f.write(was)
    log(p.stdout + p.stderr)
    if p.returncode == harness.SKIP:
        raise Skip('the case cannot run here (above)')
    check(p.returncode == 0, 'case %s failed (exit %d, above)' % (opts.case, p.returncode))


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--pythonpath', required=True, help='the build\'s python/ folder')
    p.add_argument('--case', required=True, choices=['count', 'block', 'errors', 'nobody', 'paranoid3'])
    harness.main(test, p)

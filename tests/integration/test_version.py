"""The version hwspy names for a launched interpreter: LAUNCHES launches of a script that ends
at once (so that the interpreter is found early, before 3.8-3.10 have written their version
string), each summary naming the interpreter's own platform.python_version() (3.8-3.10 were
named X.Y.0 in about a third of runs, the micro version read before the interpreter set it)."""
import os
import re
import subprocess

import harness
from harness import check, log

LAUNCHES = 20


def test(opts):
    got = subprocess.run(opts.py.argv + ['-c', 'import platform; print(platform.python_version())'],
                         capture_output=True, text=True, timeout=60).stdout.strip()
    want = re.match(r'\d+\.\d+\.\d+', got).group(0)
    script = os.path.join(opts.tmp, 'short.py')
    with open(script, 'w') as f:
        f.write('x = sum(range(3000000))\n')
    named = {}
    for i in range(LAUNCHES):
        run = harness.record(opts, ['--', *opts.py.argv, script], name='v%d' % i)
        m = re.search(r'sampled .* Python (\S+) for ', run.stderr)
        v = m.group(1) if m else None
        named[v] = named.get(v, 0) + 1
    log('named: %s (the interpreter: %s)' % (named, want))
    check(named == {want: LAUNCHES}, 'the version named %s, not %s in every launch'
          % (named, want))


if __name__ == '__main__':
    harness.main(test, harness.parser(__doc__))

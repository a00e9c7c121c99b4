"""A newly started interpreter, as hwspy finds it.

--case version: LAUNCHES launches of a script that ends at once (so that the interpreter is
  found early, before 3.8-3.10 have written their version string), each summary naming the
  interpreter's own platform.python_version() (3.8-3.10 were named X.Y.0 in about a third of
  runs, the micro version read before the interpreter set it). Every other run without -v: its
  summary at most 4 lines (sampled, the "wrote" line with its totals, the command's end, one
  loss), none of -v's; the -v runs say more.
--case spawn: SPAWNS times, `hwspy dump -p` and `hwspy record --wall -p` the moment a
  Python process was spawned (its interpreter still loading): each finds its interpreter and
  succeeds, never "not a Python process" (it is looked at again until it is 2 s old)."""
import os
import re
import subprocess

import harness
from harness import check, log

LAUNCHES = 20
SPAWNS = 8


def case_spawn(opts):
    fails = []
    for i in range(SPAWNS):
        for cmd in (['dump'], ['record', '--wall', '-d', '0.3', '-o',
                                os.path.join(opts.tmp, 's%d.folded' % i)]):
            target = subprocess.Popen(opts.py.argv + ['-c', 'import time; time.sleep(3)'])
            try:
                p = subprocess.run([opts.hwspy] + cmd + ['-p', str(target.pid)],
                                   capture_output=True, text=True, timeout=60)
            finally:
                target.kill()
                target.wait()
            if p.returncode != 0:
                fails.append('%s: exit %d: %s' % (cmd[0], p.returncode, p.stderr.strip()))
            elif cmd[0] == 'dump' and not re.search(r'^Python v\d', p.stdout, re.M):
                fails.append('dump: no interpreter named: %s' % p.stdout)
    log('\n'.join(fails))
    check(not fails, '%d of %d attaches at a spawn failed' % (len(fails), 2 * SPAWNS))


def case_version(opts):
    got = subprocess.run(opts.py.argv + ['-c', 'import platform; print(platform.python_version())'],
                         capture_output=True, text=True, timeout=60).stdout.strip()
    want = re.match(r'\d+\.\d+\.\d+', got).group(0)
    script = os.path.join(opts.tmp, 'short.py')
    with open(script, 'w') as f:
        f.write('x = sum(range(3000000))\n')
    named, lines = {}, {False: [], True: []}
    for i in range(LAUNCHES):
        # every other run plain: its summary is short (issue 21); -v says the whole of it
        verbose = i % 2 == 0
        run = harness.record(opts, ['--', *opts.py.argv, script], name='v%d' % i,
                             verbose=verbose)
        m = re.search(r'sampled .* Python (\S+) for ', run.stderr)
        v = m.group(1) if m else None
        named[v] = named.get(v, 0) + 1
        said = run.stderr.splitlines()
        lines[verbose].append(len(said))
        if verbose:
            check('samples, weight' in run.stderr, '-v: no counts line in the summary')
            continue
        check(all(l.startswith('hwspy: ') for l in said), 'a summary line without "hwspy: "')
        check(len(said) <= 4, 'a plain record said %d lines (at most 4)' % len(said))
        check(said and said[0].startswith("hwspy: sampled '"), 'the first line is not "sampled"')
        check(any(re.match(r"hwspy: wrote '%s' \(\d+ samples in \d+ stacks, " %
                           re.escape(run.out_path), l) for l in said),
              'no "wrote \'%s\' (N samples in M stacks, ...)" line' % run.out_path)
        check(any(l.endswith('exited with status 0') for l in said), "no line on the command's end")
        for words in ('samples, weight', 'exact:', 'gil:', 'late by median', 'no hardware PMU'):
            check(words not in run.stderr, 'a plain record says %r (-v\'s)' % words)
    log('named: %s (the interpreter: %s)' % (named, want))
    check(named == {want: LAUNCHES}, 'the version named %s, not %s in every launch'
          % (named, want))
    log('summary lines: plain %s, -v %s' % (lines[False], lines[True]))
    check(sum(lines[True]) > sum(lines[False]) + len(lines[True]),
          '-v said not even a line more than a plain record, on average')


def test(opts):
    {'version': case_version, 'spawn': case_spawn}[opts.case](opts)


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--case', choices=['version', 'spawn'], required=True)
    harness.main(test, p)

"""Torn stacks: a stack read after its sample, while its thread runs on, is checked and dropped
(counted) when the thread changed it under the read; the stacks kept are ones it had.

tests/targets/recurse.py recurses to depth 30-60 and back, fast: every stack of recurse() is
<module>;main;loop;recurse x (1..61)[;leaf]. A stack read while the thread pops and pushes those
frames can lose its root (3.8-3.10: recurse;recurse with no caller, frames read after they were
freed) or get frames the thread never had together (3.11+: leaf() called from a recurse() frame
that a recurse() frame calls). The target and hwspy run on a CPU each, so that the reads run
while the target does. Sampled at 500 Hz:

  --mode nonblocking  attach with --nonblocking: every stack is read after its sample
  --mode ptrace       attach with --ptrace --stop-budget 1: past the budget, samples are read late
  --mode launch       hwspy record --nonblocking -- PYTHON recurse.py run: the first samples,
                      of the start-up phase in libz, wait while hwspy finds the interpreter and
                      are read up to hundreds of ms late, once the recursion runs: their Python
                      stack read then is never paired with their native leaf
  --load              a CPU burner runs beside, so that reads go later
  --measure           print the numbers, assert nothing

Asserted: of the kept stacks that hold recurse(), at most 1% are torn (another shape than the
one above, or a libz function at their leaf), and the stacks dropped as torn are counted in the
summary and kept as [unknown].
"""
import os
import re
import shutil
import sys

import harness
from harness import check, log, py_frames

RATE = 500
MAX_TORN = 0.01
# modules whose code the recursion never runs: the start-up phase's zlib
STARTUP_MODULES = ('[libz.so',)


def shape_ok(frames, script):
    """Whether a stack holding recurse() is one the workload has: its Python frames exactly
    <module>;main;loop;recurse x (1..61)[;leaf], all in the script, then at most the native
    function the sample was in (a libc one: memset of a new frame ...), never one of libz, which
    only the start-up phase (zlib.compress) runs."""
    pf = py_frames(frames)
    if list(frames[:len(pf)]) != [fr for fr in frames if harness.PY_FRAME.match(fr)]:
        return False
    native = frames[len(pf):]
    if len(native) > 1 or any(m in fr for fr in native for m in STARTUP_MODULES):
        return False
    names = [n for n, f, _ in pf]
    if any(f != script for _, f, _ in pf):
        return False
    if names[:3] != ['<module>', 'main', 'loop']:
        return False
    rest = names[3:]
    if rest and rest[-1] == 'leaf':
        rest = rest[:-1]
    return 1 <= len(rest) <= 61 and all(n == 'recurse' for n in rest)


def analyse(opts, run):
    script = os.path.join(opts.targets, 'recurse.py')
    profile = run.expect_profile()
    total = rec = bad = rootless = 0
    shown = 0
    for frames, c in profile.stacks:
        total += c
        if not any(n == 'recurse' for n, _, _ in py_frames(frames)):
            continue
        rec += c
        if shape_ok(frames, script):
            continue
        bad += c
        pf = py_frames(frames)
        if not pf or pf[0][0] != '<module>':
            rootless += c
        if shown < 5:
            shown += 1
            log('torn stack kept (%d): %s' % (c, ';'.join(frames)))
    m = re.search(r'dropped: (\d+) torn Python stacks.*, (\d+) unreadable', run.stderr)
    dropped, unreadable = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    torn = 100.0 * bad / rec if rec else 0.0
    log('RESULT python=%s mode=%s load=%s: weight %d, %d with recurse(), %d torn kept (%.2f%%), '
        '%d of them rootless (%.2f%%); %d dropped as torn'
        % (opts.python, opts.mode, opts.load, total, rec, bad, torn, rootless,
           100.0 * rootless / rec if rec else 0.0, dropped))
    if opts.measure:
        return
    check(rec >= 100, 'only %d samples hold recurse()' % rec)
    check(bad <= MAX_TORN * rec,
          '%d of %d kept stacks of recurse() (%.2f%%) are torn (over %g%%); one is shown above'
          % (bad, rec, torn, 100 * MAX_TORN))
    unknown = profile.weight(lambda f: f == ('[unknown]',))
    check((dropped + unreadable > 0) == (unknown > 0),
          'the summary says %d stacks were dropped (%d torn), the profile has %d of weight in '
          '[unknown]' % (dropped + unreadable, dropped, unknown))


def burner():
    """A CPU burner beside the target (one process, as busy as it can be)."""
    return harness.Process([sys.executable, '-c',
                            'import sys\nsys.stdout.write("ready\\n"); sys.stdout.flush()\n'
                            'while True: pass'])


def pinned(cpu):
    """A command prefix that runs on CPU cpu alone (the target on one, hwspy on another: its
    reads then run while the target runs, which is where stacks tear), or none with one CPU."""
    if len(os.sched_getaffinity(0)) < 2 or not shutil.which('taskset'):
        return []
    return ['taskset', '-c', str(sorted(os.sched_getaffinity(0))[cpu])]


def test(opts):
    script = os.path.join(opts.targets, 'recurse.py')
    if opts.load:
        burner().expect_ready()
    if opts.mode == 'launch':
        run = harness.record(opts, ['-e', 'cpu-clock', '-F', str(RATE), '--nonblocking', '--'] +
                             pinned(0) + opts.py.argv + [script, 'run', '1.5'],
                             prefix=pinned(1))
        lines = run.stdout.splitlines()
        check(lines and lines[0] == 'ready' and lines[-1].startswith('{'),
              'the workload did not run to its end under hwspy (stdout %r)' % run.stdout)
    else:
        w = harness.Process(pinned(0) + opts.py.argv + [script, 'serve'])
        w.expect_ready()
        args = ['-p', str(w.pid), '-e', 'cpu-clock', '-F', str(RATE), '-d', '3']
        if opts.mode == 'nonblocking':
            args += ['--nonblocking']
        else:
            args += ['--ptrace', '--stop-budget', '1']
        run = harness.record(opts, args, prefix=pinned(1))
        harness.check_untouched(w.pid)
        w.quit()
        if opts.mode == 'ptrace':
            check(opts.measure or re.search(r'read late|late by', run.stderr),
                  'no sample was read past the stop budget: nothing late to check')
    analyse(opts, run)


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--mode', choices=['nonblocking', 'ptrace', 'launch'], required=True)
    p.add_argument('--load', action='store_true')
    p.add_argument('--measure', action='store_true')
    harness.main(test, p)

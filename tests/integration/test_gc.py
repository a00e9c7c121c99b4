"""hwspy record: the [gc] frame of a sample taken while the interpreter's cyclic GC collected.
Target: tests/targets/gc_work.py (launched, 2 s after 0.4 s of settle(), which the checks leave
out: a launched command's first samples are read late, before the capture starts, and a flag
read late says nothing): collect_now() spends its time in gc.collect() over a large live graph
and a few thousand garbage cycles; alloc_only() allocates as much with the collector disabled.

Checks, cpu-clock every 2.5 ms: at least 70% of the samples whose stack runs collect_now end
in [gc], under 5% of alloc_only's do, [gc] is only ever a stack's last frame, and collect_now
and alloc_only each have 30 samples at least.

--mode capture (the default exact mode: the BPF capture reads the flag at the overflow;
measured 99-100% of collect_now's samples in [gc] on the nine interpreters, 0 of
alloc_only's), ptrace (--stop-budget 100: read in every stop), nonblocking (read after the
sample with its stack, taken up to 10 ms late; the reads come 5 ms apart with -c);
--native: the same with native frames (Debian's stripped builds name none of the collector's
own functions: the [gc] frame says it). The old build showed no [gc] at all.
"""
import os

import harness
from harness import check, log

PERIOD = 2500000         # cpu-clock, ns: every sample weighs this


def test(opts):
    period = PERIOD
    args = ['-c', str(period)]
    if opts.mode == 'ptrace':
        args += ['--ptrace', '--stop-budget', '100']      # every sample read in its stop
    elif opts.mode == 'nonblocking':
        args.append('--nonblocking')
    if opts.native:
        args.append('--native')
    run = harness.record(opts, args + ['--', *opts.py.argv,
                                       os.path.join(opts.targets, 'gc_work.py'), '2'])
    profile = run.expect_profile()
    if opts.mode == 'capture':
        harness.check_exact(run, 'capture')
    elif opts.mode == 'ptrace':
        harness.check_exact(run, 'ptrace')
    under = {'collect_now': [0, 0], 'alloc_only': [0, 0]}
    for frames, c in profile.stacks:
        check(c % period == 0, 'a stack weighs %d, not a multiple of the period %d' % (c, period))
        c //= period
        check('[gc]' not in frames[:-1], 'a [gc] frame that does not end its stack: %s'
              % ';'.join(frames))
        names = {name for name, _, _ in harness.py_frames(frames)}
        for fn, n in under.items():
            if fn in names:
                n[0] += c
                n[1] += c if frames[-1] == '[gc]' else 0
    gc_total = profile.weight(lambda f: f[-1] == '[gc]') // period
    log('samples: %d end in [gc] of %d; collect_now %d (%d in [gc]), alloc_only %d (%d in [gc])'
        % (gc_total, profile.total // period, under['collect_now'][0], under['collect_now'][1],
           under['alloc_only'][0], under['alloc_only'][1]))
    for fn, (n, _) in under.items():
        check(n >= 30, '%s has %d samples, too few to judge' % (fn, n))
    n, in_gc = under['collect_now']
    check(in_gc >= 0.7 * n, 'only %d of collect_now\'s %d samples end in [gc], expected 70%% or '
          'more' % (in_gc, n))
    n, in_gc = under['alloc_only']
    check(in_gc < 0.05 * n, '%d of alloc_only\'s %d samples end in [gc] (no collection runs '
          'there), expected under 5%%' % (in_gc, n))


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--mode', choices=['capture', 'ptrace', 'nonblocking'], default='capture')
    p.add_argument('--native', action='store_true')
    harness.main(test, p)

"""hwspy record: whether each sample's thread held the GIL, --gil, and the summary's GIL lines.
Target: tests/targets/gil_share.py (launched): spin_0 and spin_1 run Python code (holding the
GIL whenever they run), hash runs hashlib with the GIL let go, sleeper sleeps.

--case held   cpu-clock at a fixed period, --threads. The summary's per-thread lines: spin_0,
              spin_1 and MainThread held the GIL in at least 80% of their samples (measured
              97-100% on py38, py312, debian314: a CPU sample of a thread is mostly one of it
              running Python code), hash in at most 30% (measured 1-3%), sleeper in none or
              almost no samples (at most 5). Then with --gil: for each thread, the samples
              left in the profile are exactly those the summary says held the GIL, and the
              summary's drop count is every other sample.
--case wait   --off-cpu: each thread's line says as much time waiting for the GIL as its
              [wait: GIL] leaves weigh in the profile (to the ms it prints), as does the total;
              spin_0, spin_1 and hash span the 1.5 s they ran, none waited over 90% of it,
              and one waited at least 20% (measured 33-77%: three threads want the GIL; on
              debian314 wait.c names only hash's waits [wait: GIL], the spin threads' are
              [wait: futex (lock)], in main's build too).
"""
import os
import re

import harness
from harness import check, log

PERIOD = 2000000        # cpu-clock, ns: every sample weighs this
HELD = re.compile(r'^hwspy: gil: thread (\d+)(?: (\S+))?: held the GIL in \d+% of its samples '
                  r'\((\d+) of (\d+); (\d+) more not known\)$', re.M)
DROPPED = re.compile(r'^hwspy: --gil: (\d+) samples dropped, their thread not holding the GIL, '
                     r'(\d+) not known whether it did', re.M)
WAITED = re.compile(r'^hwspy: gil: thread (\d+) (\S+): waited (\d+\.\d+) s for the GIL '
                    r'\((\d+)% of its (\d+\.\d+) s from', re.M)
WAITED_ALL = re.compile(r'^hwspy: gil: threads waited (\d+\.\d+) s in all for the GIL$', re.M)


def target(opts):
    return [*opts.py.argv, os.path.join(opts.targets, 'gil_share.py'), '1.5']


def held_lines(run):
    # a thread with no name (gone before hwspy read it) is keyed by its tid
    got = {name or tid: (int(held), int(known), int(unknown))
           for tid, name, held, known, unknown in HELD.findall(run.stderr)}
    for name in ('spin_0', 'spin_1', 'hash', 'MainThread'):
        check(name in got, 'the summary has no GIL line for thread %s' % name)
    return got


def per_thread_samples(profile):
    n = {}
    for frames, c in profile.stacks:
        m = harness.THREAD_FRAME.match(frames[0])
        check(m, 'with --threads, a stack without a [thread TID NAME] root: %s' % frames[0])
        check(c % PERIOD == 0, 'a stack weighs %d, not a multiple of the period %d' % (c, PERIOD))
        n[m.group('name')] = n.get(m.group('name'), 0) + c // PERIOD
    return n


def case_held(opts):
    run = harness.record(opts, ['-c', str(PERIOD), '--threads', '--', *target(opts)])
    run.expect_profile()
    harness.check_exact(run, 'capture')
    got = held_lines(run)
    for name, (held, known, unknown) in sorted(got.items()):
        log('%s: held the GIL in %d of %d samples (%d unknown)' % (name, held, known, unknown))
    for name in ('spin_0', 'spin_1', 'MainThread'):
        held, known, _ = got[name]
        check(known >= 50 and held >= 0.8 * known, '%s held the GIL in %d of %d samples, '
              'expected 80%% or more' % (name, held, known))
    held, known, _ = got['hash']
    check(known >= 30 and held <= 0.3 * known, 'hash (hashlib, the GIL let go) held it in %d of '
          '%d samples, expected 30%% at most' % (held, known))
    held, known, unknown = got.get('sleeper', (0, 0, 0))
    check(known + unknown <= 5, 'the sleeping thread has %d samples' % (known + unknown))

    run = harness.record(opts, ['-c', str(PERIOD), '--threads', '--gil', '--', *target(opts)],
                         name='gil')
    profile = run.expect_profile()
    got = held_lines(run)
    kept = per_thread_samples(profile)
    log('--gil: kept per thread %s; the summary: %s' % (kept, got))
    for name, (held, known, unknown) in got.items():
        check(kept.get(name, 0) == held, '--gil kept %d samples of %s, the summary says it held '
              'the GIL in %d' % (kept.get(name, 0), name, held))
    for name in kept:
        check(name in got, '--gil kept samples of %s, which has no GIL line' % name)
    m = DROPPED.search(run.stderr)
    check(m, 'with --gil, the summary does not say how many samples were dropped')
    free = sum(k - h for h, k, _ in got.values())
    unknown = sum(u for _, _, u in got.values())
    check((int(m.group(1)), int(m.group(2))) == (free, unknown),
          '--gil dropped %s + %s samples, the threads\' lines add up to %d + %d'
          % (m.group(1), m.group(2), free, unknown))
    check(got['hash'][1] - got['hash'][0] >= 30, 'hash kept nearly all its samples with --gil')


def case_wait(opts):
    run = harness.record(opts, ['--off-cpu', '--threads', '--', *target(opts)])
    profile = run.expect_profile()
    # keyed by thread: two may share a name (3.14 names its threads only once they run)
    waited = {(int(tid), name): (float(s), int(pct), float(span))
              for tid, name, s, pct, span in WAITED.findall(run.stderr)}
    log('waited for the GIL (s, %% of its span, span): %s' % waited)
    leaves = {}
    for frames, c in profile.stacks:
        m = harness.THREAD_FRAME.match(frames[0])
        if m and frames[-1] == '[wait: GIL]':
            tid = int(m.group('tid'))
            leaves[tid] = leaves.get(tid, 0) + c
    by_name = {name: w for (_, name), w in waited.items()}
    for name in ('spin_0', 'spin_1', 'hash'):
        check(name in by_name, 'the summary has no GIL wait line for %s' % name)
        check(by_name[name][2] >= 1.0, '%s: a span of %.3f s, it ran 1.5 s'
              % (name, by_name[name][2]))
    # each thread's line is its [wait: GIL] leaves' weight, to the ms it prints
    for (tid, name), (s, pct, span) in waited.items():
        got = leaves.get(tid, 0) / 1e9
        check(abs(got - s) <= 0.0005 + 1e-9, 'thread %d %s: the summary says it waited %.3f s '
              'for the GIL, its [wait: GIL] leaves weigh %.4f s' % (tid, name, s, got))
        check(pct <= 90, 'thread %d %s waited for the GIL %d%% of its span' % (tid, name, pct))
    # three threads want the GIL at once: the one whose waits are named [wait: GIL] (wait.c)
    # waits a third to a half of its time
    check(any(20 <= by_name[name][1] for name in ('spin_0', 'spin_1', 'hash')),
          'no thread that wants the GIL waited 20%% of its time for it: %s' % waited)
    m = WAITED_ALL.search(run.stderr)
    check(m, 'the summary does not say how long threads waited for the GIL in all')
    total = sum(leaves.values()) / 1e9
    check(abs(total - float(m.group(1))) <= 0.0005 + 1e-9, 'the summary says threads waited '
          '%s s for the GIL, the profile\'s [wait: GIL] leaves weigh %.4f s'
          % (m.group(1), total))


def test(opts):
    {'held': case_held, 'wait': case_wait}[opts.case](opts)


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--case', choices=['held', 'wait'], required=True)
    harness.main(test, p)

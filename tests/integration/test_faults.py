"""Page faults and exactness, on tests/targets/faults.py (attach mode): touch_pages maps fresh
memory and writes one byte per page, compute only computes; they take turns.

--kind pagefaults (turns of a few ms, 256 pages against ~4 ms of compute; default exact mode):
  -e page-faults -c 50: touch_pages has >= 90% of the weight, at its write line, and the counts
  are page faults (the weight is 75-110% of the faults the workload caused in the window, and
  there is about one sample per 50 faults);
  -e cpu-clock on the same process: the split matches the workload's thread_time split within
  5 points.
--kind exact --mode exact|ptrace|nonblocking (turns of ~100 us: 6 pages against ~100 us of
  compute; exact: the default, a BPF capture where allowed, checked to be one; ptrace: --ptrace)
  -e page-faults -c 50: in exact modes touch_pages has >= 95% of the weight (a late read would smear
  it over compute); with --nonblocking the share is printed, not asserted, and the summary
  says how late the reads were. -e cpu-clock: exact mode matches the time split within 5 points
  (nonblocking: printed only; see exact() for why and for the 5 points)
  (a late read is still an unbiased time sample).
"""
import os

import harness
from harness import check, log, py_frames


def attribute(opts, profile):
    """{'touch_pages': weight, 'compute': weight}, the touch_pages weight at its write line, and
    the weight of impossible stacks (main at the line that calls one function, with the other
    function below it: frames read at different moments)."""
    src = os.path.join(opts.targets, 'faults.py')
    mk = harness.markers(src)
    got = {'touch_pages': 0, 'compute': 0}
    at_line = torn = 0
    for frames, c in profile.stacks:
        pf = py_frames(frames)
        for i, (name, f, line) in enumerate(pf):
            if f != src or name not in got:
                continue
            got[name] += c
            if name == 'touch_pages' and pf[-1] == (name, src, mk['HOT:touch_pages']):
                at_line += c
            if i and pf[i - 1][0] == 'main' and pf[i - 1][2] != mk['CALL:' + name]:
                torn += c
            break
    if torn:
        log('impossible (torn) stacks: %.1f%% of the weight' % (100.0 * torn / profile.total))
    return got, at_line, torn


def window(w, opts, args, name):
    before = w.ask('snap')
    run = harness.record(opts, ['-p', str(w.pid), '-d', opts.secs] + args, name=name)
    after = w.ask('snap')
    harness.check_untouched(w.pid)
    profile = run.expect_profile()
    got, at_line, torn = attribute(opts, profile)
    if opts.mode in ('exact', 'ptrace'):
        check(torn <= 0.005 * profile.total,
              '%.1f%% of the weight is in impossible stacks, although exact mode reads each stack '
              'as it was at its sample' % (100.0 * torn / profile.total))
    measured = harness.delta(after['times'], before['times'])
    return run, profile, got, at_line, measured, after['pages'] - before['pages']


PERIOD = 50     # one sample every 50 faults: ~1000 samples/s of this workload


def fault_run(w, opts, extra):
    # a fixed period: the kernel's frequency mode stalls on bursts of faults (a few samples
    # in a 2 s window, seen once in 9 runs), which is issue 10's to fix
    run, profile, got, at_line, _, pages = window(w, opts, ['-e', 'page-faults', '-c',
                                                            str(PERIOD)] + extra, 'page-faults')
    share = 100.0 * got['touch_pages'] / profile.total
    log('page-faults: touch_pages %.1f%%, compute %.1f%% of %d faults sampled (the workload '
        'caused about %d in the window)' % (share, 100.0 * got['compute'] / profile.total,
                                            profile.total, pages))
    check(profile.total <= 1.1 * pages + 2000,
          'the profile weighs %d page faults, but the workload caused only about %d in the '
          'window: page-fault counts must be faults' % (profile.total, pages))
    # the window is the workload's, around hwspy's whole run (attach included): a little more
    check(profile.total >= 0.75 * pages,
          'the profile weighs %d page faults, the workload caused about %d in the window'
          % (profile.total, pages))
    # the period is honoured: a software event sampled with PERF_SAMPLE_PERIOD at a fixed
    # period gives a sample at every fault (weight 1 each) whatever the period asked
    n = run.samples()
    log('%d samples for %d faults at -c %d' % (n, profile.total, PERIOD))
    check(n <= 1.2 * profile.total / PERIOD + 10,
          '%d samples for %d page faults at -c %d: the period was not honoured'
          % (n, profile.total, PERIOD))
    return run, share, got, at_line


def clock_run(w, opts, extra, rate, tolerance, enforce=True):
    run, profile, got, _, measured, _ = window(w, opts, ['-e', 'cpu-clock', '-F', str(rate)] +
                                               extra, 'cpu-clock')
    covered = sum(got.values())
    check(covered >= 0.8 * profile.total,
          'only %.1f%% of the cpu-clock weight is in touch_pages and compute'
          % (100.0 * covered / profile.total))
    harness.compare_shares(measured, got, tolerance, 'cpu-clock', enforce)
    return run


def pagefaults(opts):
    pages = 256
    opts.secs = '2'
    w = harness.Process(opts.py.argv + [os.path.join(opts.targets, 'faults.py'), str(pages),
                                        '4000'])
    w.expect_ready()
    _, share, got, at_line = fault_run(w, opts, [])
    check(share >= 90.0, 'touch_pages has %.1f%% of the page faults, expected >= 90%%' % share)
    check(at_line >= 0.9 * got['touch_pages'],
          'only %.1f%% of touch_pages\'s faults are at its write line'
          % (100.0 * at_line / got['touch_pages']))
    clock_run(w, opts, [], 999, 5.0)
    w.quit()


def exact(opts):
    pages = 6
    opts.secs = '3'
    extra = {'exact': [], 'ptrace': ['--ptrace'], 'nonblocking': ['--nonblocking']}[opts.mode]
    w = harness.Process(opts.py.argv + [os.path.join(opts.targets, 'faults.py'), str(pages),
                                        '100'])
    w.expect_ready()
    run, share, _, _ = fault_run(w, opts, extra)
    if opts.mode != 'nonblocking':
        harness.check_exact(run, 'capture' if opts.mode == 'exact' else 'ptrace', 0.01)
        check(share >= 95.0, '%s mode gave touch_pages %.1f%% of the page faults, expected '
              '>= 95%% (it causes all of them)' % (opts.mode, share))
    else:
        log('nonblocking mode gave touch_pages %.1f%% of the page faults (not asserted; exact '
            'mode must give >= 95%%)' % share)
        check('late by' in run.stderr, '--nonblocking summary has no "late by" line')
    # A late read is an unbiased time sample only if its lateness does not depend on what the
    # target is doing. Here it does: process_vm_readv waits for the target's mmap lock, which
    # touch_pages holds in mmap/munmap, so nonblocking reads of touch_pages come late more
    # often and land in compute (seen: 3-8 points in 1 run of 9). Printed, not asserted; the
    # nonblocking time split is asserted on a compute-only workload (test_shares.py
    # --nonblocking).
    #
    # The time split is checked within 5 points. The kernel's cpu-clock sampling itself gives
    # touch_pages (mmap, faults, munmap: kernel time) fewer samples than its thread_time, and
    # more so on a busy machine: under load (load average 5-60), touch_pages came out 1.5-4.5
    # points low in every mode alike (BPF capture, --ptrace, --nonblocking), and perf record -e
    # cpu-clock on a C program doing the same showed it too (0.6-2.3 points low against the
    # program's own CLOCK_THREAD_CPUTIME_ID split). A per-call task-clock counter in the target
    # agrees with thread_time, so the reference is right; stops that landed late would show in
    # --ptrace alone.
    run = clock_run(w, opts, extra, 1999, 5.0, enforce=opts.mode != 'nonblocking')
    if opts.mode == 'nonblocking':
        check('late by' in run.stderr, '--nonblocking summary has no "late by" line')
    w.quit()


def test(opts):
    {'pagefaults': pagefaults, 'exact': exact}[opts.kind](opts)


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--kind', choices=['pagefaults', 'exact'], required=True)
    p.add_argument('--mode', choices=['exact', 'ptrace', 'nonblocking'], default='exact')
    harness.main(test, p)

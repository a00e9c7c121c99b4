"""Page faults and exactness, on tests/targets/faults.py (attach mode): touch_pages maps fresh
memory and writes one byte per page, compute only computes; they take turns.

--kind pagefaults (turns of a few ms, 256 pages against ~4 ms of compute; default exact mode):
  -e page-faults -c 50: touch_pages has >= 90% of the weight, at its write line, and the counts
  are page faults (the weight is 75-110% of the faults the workload caused in the window, and
  there is about one sample per 50 faults);
  -e cpu-clock on the same process: the split matches the workload's thread_time split within
  5 points.
--kind exact --mode exact|ptrace|nonblocking (turns of ~100 us: 6 pages against ~100 us of
  compute; exact: the default, a BPF capture where allowed, checked to be one; ptrace: --ptrace
  --stop-budget 100: ~1000 stops/s of 100-400 us each on this VM would pass the default stop
  budget, and the samples past it would be read late, which is not what this checks)
  -e page-faults -c 50: in exact modes touch_pages has >= 95% of the weight (a late read would smear
  it over compute); with --nonblocking the share is printed, not asserted, and the summary
  says how late the reads were. -e cpu-clock: exact mode matches the time split within 5 points
  (nonblocking: printed only; see exact() for why and for the 5 points)
  (a late read is still an unbiased time sample).
--kind totals (launch; tests/targets/bursts.py: 20 bursts of 2000 fresh pages, 50 ms quiet
  between them): -e page-faults with its default (a fixed period, -c 100) and with -c 1000,
  in each mode (BPF capture, --ptrace, --nonblocking): the profile's weight is the faults the
  target counted itself (getrusage: minflt + majflt) within 5% (what is lost: the faults after
  the last sample, less than a period); the default gives one sample per 100 faults. -F with
  a count event is refused (exit 2, one line naming -c). Before, the default was -F 100, and
  a burst stalled the kernel's rate control: 185 faults weighed for 41,976.
--kind budget (launch; tests/targets/startup.py: imports, a table, 0.5 s of compute): --ptrace
  -e page-faults -c 1 finishes within 2x of the program's unprofiled time (median of 3 runs,
  measured here), and the summary says how many samples were read late, without a stop,
  because of the stop budget. Before, each stop caused the next fault (our pending signal makes
  the kernel retry a fault) and the program did not finish in 60 s (seen here: 1.1-1.8x).
  --ptrace -e cpu-clock -F 10000 must not livelock either: within 5x (seen: 1.6-3.2x; reading
  10,000 stacks a second late, hwspy competes with the target for the 2 vCPUs).
"""
import json
import os
import re
import statistics
import subprocess

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


def fault_run(w, opts, extra, period=PERIOD):
    # a fixed period: the kernel's frequency mode stalls on bursts of faults (a few samples
    # in a 2 s window, seen once in 9 runs), which is issue 10's to fix
    run, profile, got, at_line, _, pages = window(w, opts, ['-e', 'page-faults', '-c',
                                                            str(period)] + extra, 'page-faults')
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
    log('%d samples for %d faults at -c %d' % (n, profile.total, period))
    check(n <= 1.2 * profile.total / period + 10,
          '%d samples for %d page faults at -c %d: the period was not honoured'
          % (n, profile.total, period))
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
    extra = {'exact': [], 'ptrace': ['--ptrace', '--stop-budget', '100'],
             'nonblocking': ['--nonblocking']}[opts.mode]
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


MODE_ARGS = {'exact': [], 'ptrace': ['--ptrace'], 'nonblocking': ['--nonblocking']}


def launched(opts, target, args, record_args, name, timeout=120):
    """hwspy record RECORD_ARGS -- PYTHON TARGET OUT ARGS: (run, the JSON the target wrote)."""
    out = os.path.join(opts.tmp, name + '.json')
    run = harness.record(opts, record_args + ['--'] + opts.py.argv +
                         [os.path.join(opts.targets, target), out] + args, name=name,
                         timeout=timeout)
    check(run.rc == 0, 'hwspy exited %s, expected 0' % run.rc)
    check(os.path.exists(out), 'the target did not run to its end under hwspy')
    with open(out) as f:
        return run, json.load(f)


def totals(opts):
    for mode in opts.modes.split(','):
        for period in (None, 1000):
            args = ['-e', 'page-faults'] + MODE_ARGS[mode] + (['-c', str(period)] if period else [])
            run, ru = launched(opts, 'bursts.py', ['20', '2000'], args,
                               'totals-%s-%s' % (mode, period or 'default'))
            faults = ru['minflt'] + ru['majflt']
            profile = run.expect_profile()
            log('%s, %s: profile %d faults, the target counted %d (%.1f%%)'
                % (mode, '-c %d' % period if period else 'default', profile.total, faults,
                   100.0 * profile.total / faults))
            check(abs(profile.total - faults) <= 0.05 * faults,
                  '%s mode, %s: the profile weighs %d page faults, the target counted %d '
                  '(getrusage): not within 5%%' % (mode, '-c %d' % period if period
                                                   else 'the default period', profile.total,
                                                   faults))
            if not period:
                check("'page-faults' at every 100 events" in run.stderr,
                      'the summary does not say the default period (every 100 events)')
                n = run.samples()
                check(0.8 * faults / 100 <= n <= 1.2 * faults / 100 + 10,
                      '%d samples for %d faults at the default period 100' % (n, faults))
    r = harness.record(opts, ['-e', 'page-faults', '-F', '100', '--'] + opts.py.argv +
                       ['-c', 'pass'], name='refused')
    lines = r.stderr.strip().splitlines()
    check(r.rc == 2 and len(lines) == 1 and "'-c N'" in lines[0],
          'page-faults with -F: exit %s, stderr %r; expected exit 2 and one line that says '
          'to give -c' % (r.rc, r.stderr))
    check(not os.path.exists(r.out_path), 'a refused run wrote its output')


def budget(opts):
    secs = '0.5'
    plain = []
    for i in range(3):
        out = os.path.join(opts.tmp, 'plain.json')
        subprocess.run(opts.py.argv + [os.path.join(opts.targets, 'startup.py'), out, secs],
                       check=True, timeout=60)
        with open(out) as f:
            plain.append(json.load(f)['elapsed'])
    base = statistics.median(plain)
    log('unprofiled: %s s (median %.3f s)' % (', '.join('%.3f' % t for t in plain), base))
    run, got = launched(opts, 'startup.py', [secs],
                        ['--ptrace', '-e', 'page-faults', '-c', '1'], 'budget', timeout=60)
    log('--ptrace -e page-faults -c 1: %.3f s, %.2fx' % (got['elapsed'], got['elapsed'] / base))
    check(got['elapsed'] <= 2 * base,
          'under --ptrace -e page-faults -c 1 the program took %.3f s, unprofiled %.3f s: over '
          '2x (the stops are not bounded)' % (got['elapsed'], base))
    m = re.search(r'(\d+) samples read late, without a stop: their thread had spent over '
                  r'\d+% of its time stopped', run.stderr)
    check(m and int(m.group(1)) > 0,
          'the summary does not say how many samples were read late because of the stop budget')
    run, got = launched(opts, 'startup.py', [secs],
                        ['--ptrace', '-e', 'cpu-clock', '-F', '10000'], 'budget-clock', timeout=60)
    log('--ptrace -e cpu-clock -F 10000: %.3f s, %.2fx' % (got['elapsed'], got['elapsed'] / base))
    check(got['elapsed'] <= 5 * base,
          'under --ptrace -e cpu-clock -F 10000 the program took %.3f s, unprofiled %.3f s'
          % (got['elapsed'], base))


def test(opts):
    {'pagefaults': pagefaults, 'exact': exact, 'totals': totals, 'budget': budget}[opts.kind](opts)


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--kind', choices=['pagefaults', 'exact', 'totals', 'budget'],
                   required=True)
    p.add_argument('--modes', default='exact,ptrace,nonblocking',
                   help='totals: the modes to check, comma-separated')
    p.add_argument('--mode', choices=['exact', 'ptrace', 'nonblocking'], default='exact')
    harness.main(test, p)

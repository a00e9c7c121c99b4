"""hwspy record --off-cpu: where threads wait, for how long, and why.

--case waits  tests/targets/wait_phases.py (launched): the main thread sleeps (nap), blocks on
              a pipe read (pipe_wait) and on a threading.Lock another thread holds
              (lock_wait), 50 ms each, in rounds. Under each waiting function, its own reason
              is the leaf of at least 90% of the weight ([wait: sleep], [wait: read fd N
              (pipe)], [wait: futex (lock)]), and the weight under the three is within 5% of
              the time the target itself measured in them (the switch-out sample weighs the
              nanoseconds until its thread ran again). The summary says how long threads
              waited; the folded file reads back (convert) with the wait frames kept.
--case wall   the same workload with --wall -F 997: on the main thread, the time under burn
              (on the CPU: cpu-clock), nap, pipe_wait and lock_wait (off it) is within 5
              percentage points of each one's share of the wall time the target measured in
              them (25% each on a quiet machine; burn's CPU time is fixed, so a busy one makes
              it longer), each wait frame under them its reason
              (or the GIL, taken back after it); and the
              main thread's time adds up to the recording's length, within 10%.
--case kinds  tests/targets/wait_kinds.py: waits in recv on a socket, poll, select and epoll,
              30 ms each, 5 rounds: under each function, at least 90% of the weight has its
              reason as the leaf ([wait: recv socket], [wait: poll/epoll/select]), and the
              weight is 5 x 30 ms within 20%.
--case kinds-attach  the same waits, attached (-p) with the capture: each switch's reason read
              from the registers the thread entered the kernel with, not its kernel stack
              (the -v summary says so, every one found), under --off-cpu and --wall; at least
              90% of each function's weight its reason, the helper thread's in its sleeps and
              pipe reads.
--case faults tests/targets/wait_faults.py: a 32 MiB file read through mmap a page at a time,
              its pages dropped before each pass (major faults that wait for the disk; the
              file in the test's directory: skipped, saying so, where that is tmpfs):
              --off-cpu -v, the reasons from the registers (the fault's entry code), and
              --nonblocking, from the kernel's callchain: under touch_pages at least 90% of
              the weight is [wait: page fault (I/O)], over 0.2 s of it (~1.4 s of 2 here).
--case diff   two --off-cpu runs of it, the second sleeping 3 times as long in nap: hwspy diff
              ranks [wait: sleep] first among the functions that grew.
--case attach tests/targets/blocked.py's threads, each blocked in its own function before hwspy
              attaches (accept, a queue, a lock, a sleep(1) loop; the main thread on stdin):
              --wall -p for 2 s: each thread's time is the recording's length within 2%, its
              wait under its function with the reason `hwspy dump` gives the same thread;
              --off-cpu the same for the waiting part (not with --wall-only). The summary
              counts them as waiting at the start.
--case tree   blocked.py tree: the same, with two forked children sleeping in child_nap from
              before the attach: --wall --subprocesses -p for 2 s: each child's time is the
              recording's length within 2%, under child_nap and [wait: sleep].
--case launch blocked.py launch: a script that sleeps 2 s in nap_once from its first line,
              before hwspy's capture is ready: in --wall, >= 95% of the weight of
              [wait: sleep] leaves, and of 2 s, is under nap_once (not [unknown]); the rest
              of the run is the interpreter's start-up.
--case gil    tests/targets/gil_threads.py: two threads running Python code for 1.5 s each:
              with a GIL each waits for it ([wait: GIL] under its spin function) for 20% to
              80% of its measured wall time (half, on an idle machine: the rest of a busy
              machine's time shows as [preempted]). (No free-threaded build is installed
              here to show that one without a GIL has none.)
"""
import json
import os
import re
import subprocess
import time

import harness
from harness import Skip, check, log, py_frames

WAITED = re.compile(r'^waited (.*)$', re.M)
WALL = re.compile(r'^wall (.*)$', re.M)
BURNED = re.compile(r'^burned (.*)$', re.M)
REASONS = {'nap': re.compile(r'^\[wait: sleep\]$'),
           'pipe_wait': re.compile(r'^\[wait: read fd \d+ \(pipe\)\]$'),
           'lock_wait': re.compile(r'^\[wait: futex \(lock\)\]$')}


def measured(pattern, stderr):
    m = pattern.search(stderr)
    check(m, 'the target did not print its measured times (%s)' % pattern.pattern)
    return {k: int(v) for k, v in (kv.split('=') for kv in m.group(1).split())}


def case_waits(opts):
    target = os.path.join(opts.targets, 'wait_phases.py')
    run = harness.record(opts, ['--off-cpu', '--threads', '--', *opts.py.argv, target,
                                '0.05', '8'])
    profile = run.expect_profile()
    harness.check_exact(run, 'capture')
    check(re.search(r'off-cpu: threads waited \d+\.\d+ s in all', run.stderr),
          'the summary does not say how long the threads waited')
    waited = measured(WAITED, run.stderr)
    by_func = {f: {} for f in REASONS}
    for frames, c in profile.stacks:
        m = harness.THREAD_FRAME.match(frames[0])
        check(m, 'with --threads, a stack without a [thread TID NAME] root: %s' % frames[0])
        if m.group('name') != 'MainThread':
            continue
        names = [f[0] for f in py_frames(frames)]
        for func in REASONS:
            if func in names:
                by_func[func][frames[-1]] = by_func[func].get(frames[-1], 0) + c
    for func, leaves in by_func.items():
        total = sum(leaves.values())
        log('%s: measured %.1f ms, profile %.1f ms: %s' % (
            func, waited[func] / 1e6, total / 1e6,
            {k: round(v / 1e6, 1) for k, v in sorted(leaves.items(), key=lambda x: -x[1])}))
        check(total > 0, 'no off-CPU weight under %s' % func)
        right = sum(v for k, v in leaves.items() if REASONS[func].match(k))
        check(right >= 0.9 * total, 'under %s only %.0f%% of the weight has the reason %s: %s'
              % (func, 100.0 * right / total, REASONS[func].pattern, leaves))
    got, want = sum(sum(v.values()) for v in by_func.values()), sum(waited.values())
    check(abs(got - want) <= 0.05 * want, 'the waits weigh %.1f ms in the profile, the target '
          'measured %.1f ms in them (over 5%% apart)' % (got / 1e6, want / 1e6))
    # the wait frames read back as wait frames, through another format
    out = os.path.join(opts.tmp, 'back.pb.gz')
    back = os.path.join(opts.tmp, 'back.folded')
    for src, dst in ((run.out_path, out), (out, back)):
        conv = subprocess.run([opts.hwspy, 'convert', src, '-o', dst], capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, timeout=60)
        check(conv.returncode == 0, 'hwspy convert %s failed: %s' % (src, conv.stderr))
    leaves = {frames[-1] for frames, _ in harness.Profile.read(back).stacks}
    check(any(REASONS['pipe_wait'].match(f) for f in leaves),
          'the pipe wait frame did not survive folded -> pprof -> folded: %s' % sorted(leaves))


def case_wall(opts):
    target = os.path.join(opts.targets, 'wait_phases.py')
    run = harness.record(opts, ['--wall', '-F', '997', '--threads', '--', *opts.py.argv,
                                target, '0.05', '8'])
    profile = run.expect_profile()
    harness.check_exact(run, 'capture')
    m = re.search(r' for (\d+\.\d+) s: .wall. at 997 Hz on the CPU and every switch off it',
                  run.stderr)
    check(m, 'the summary does not say it sampled wall time at 997 Hz')
    length = float(m.group(1)) * 1e9
    phases = {'burn': 0, 'nap': 0, 'pipe_wait': 0, 'lock_wait': 0}
    main_total = 0
    for frames, c in profile.stacks:
        m = harness.THREAD_FRAME.match(frames[0])
        if not m or m.group('name') != 'MainThread':
            continue
        main_total += c
        names = [f[0] for f in py_frames(frames)]
        for func in phases:
            if func in names:
                phases[func] += c
                # off the CPU, it waited for its reason, or for the GIL back after it (on
                # it: its own code runs)
                if (func in REASONS and frames[-1].startswith('[wait: ') and
                        frames[-1] != '[wait: GIL]'):
                    check(REASONS[func].match(frames[-1]), 'under %s, the wait %s is not its '
                          'reason' % (func, frames[-1]))
    log('main thread: %.0f ms of the recording\'s %.0f ms; phases %s' % (
        main_total / 1e6, length / 1e6, {k: round(v / 1e6, 1) for k, v in phases.items()}))
    check(abs(main_total - length) <= 0.1 * length, 'the main thread\'s time, %.0f ms, is not '
          'the recording\'s length, %.0f ms' % (main_total / 1e6, length / 1e6))
    # each phase's wall time as the target measured it (burn's is longer than its CPU time on
    # a busy machine: a loaded one gave it 36%, not a quarter, and the profile said 36.2%)
    spent = dict(measured(WAITED, run.stderr), **measured(BURNED, run.stderr))
    harness.compare_shares(spent, phases, 5, 'the main thread\'s phases')


KINDS = {'sock_recv': '[wait: recv socket]', 'poll_wait': '[wait: poll/epoll/select]',
         'select_wait': '[wait: poll/epoll/select]', 'epoll_wait_': '[wait: poll/epoll/select]'}


def case_kinds(opts):
    target = os.path.join(opts.targets, 'wait_kinds.py')
    run = harness.record(opts, ['--off-cpu', '--', *opts.py.argv, target, '5'])
    profile = run.expect_profile()
    by_func = {f: {} for f in KINDS}
    for frames, c in profile.stacks:
        names = [f[0] for f in py_frames(frames)]
        for func in KINDS:
            if func in names:
                by_func[func][frames[-1]] = by_func[func].get(frames[-1], 0) + c
    for func, leaves in by_func.items():
        total = sum(leaves.values())
        log('%s: %.1f ms: %s' % (func, total / 1e6, {k: round(v / 1e6, 1)
                                                      for k, v in leaves.items()}))
        check(leaves.get(KINDS[func], 0) >= 0.9 * total > 0, 'under %s, %s is not the reason '
              'of 90%% of the weight: %s' % (func, KINDS[func], leaves))
        check(abs(total - 5 * 30e6) <= 0.2 * 5 * 30e6, 'under %s %.1f ms, expected 5 x 30 ms'
              % (func, total / 1e6))


REGS = re.compile(r"off-cpu: (\d+) switches' waits named from the registers their thread "
                  r"entered the kernel with, no kernel stack walked \((\d+) unknown: none "
                  r"found there, or the sample's record lost\)")


def case_kinds_attach(opts):
    """Attached with the capture, a switch's reason is read from the registers the thread
    entered the kernel with (no kernel callchain): the same words as case_kinds', and the
    helper thread's sleeps and pipe reads, under --off-cpu and --wall."""
    target = os.path.join(opts.targets, 'wait_kinds.py')
    proc = harness.Process(opts.py.argv + [target, '60'])
    time.sleep(0.6)     # past its warm-up
    for flag in ('--off-cpu', '--wall'):
        run = harness.record(opts, [flag, '-v', '-p', str(proc.pid), '-d', '1.5'],
                             name=flag[2:])
        profile = run.expect_profile()
        m = REGS.search(run.stderr)
        check(m and int(m.group(1)) > 100 and int(m.group(2)) == 0, '%s: the summary does '
              'not say the waits were named from the registers, all found: %s' % (
                  flag, m and m.group(0)))
        by_func = {f: {} for f in list(KINDS) + ['helper']}
        for frames, c in profile.stacks:
            names = [f[0] for f in py_frames(frames)]
            for func in by_func:
                if func in names and frames[-1].startswith('[wait: '):
                    by_func[func][frames[-1]] = by_func[func].get(frames[-1], 0) + c
        for func, leaves in by_func.items():
            total = sum(leaves.values())
            log('%s %s: %.1f ms: %s' % (flag, func, total / 1e6,
                                        {k: round(v / 1e6, 1) for k, v in leaves.items()}))
            if func == 'helper':
                right = sum(v for k, v in leaves.items() if k == '[wait: sleep]' or
                            REASONS['pipe_wait'].match(k))
                check(leaves.get('[wait: sleep]') and right >= 0.9 * total, '%s: the helper '
                      'does not wait in its sleeps and pipe reads: %s' % (flag, leaves))
                continue
            # a quarter of each 120 ms round, ~12 rounds
            check(leaves.get(KINDS[func], 0) >= 0.9 * total >= 0.9 * 0.25 * 1.5e9 * 0.6,
                  '%s: under %s, %s is not the reason of 90%% of the weight: %s' % (
                      flag, func, KINDS[func], leaves))
    proc.quit()


def fs_type(path):
    """The file system type of the mount that holds path (/proc/mounts' longest match)."""
    best, kind = '', '?'
    with open('/proc/mounts') as f:
        for line in f:
            fields = line.split()
            if len(fields) > 2 and (path + '/').startswith(fields[1].rstrip('/') + '/') and \
                    len(fields[1]) >= len(best):
                best, kind = fields[1], fields[2]
    return kind


def case_faults(opts):
    kind = fs_type(opts.tmp)
    if kind in ('tmpfs', 'ramfs'):
        raise Skip('the test directory %s is on %s: its pages are memory, no fault waits '
                   'for a disk' % (opts.tmp, kind))
    target = os.path.join(opts.targets, 'wait_faults.py')
    data = os.path.join(opts.tmp, 'faults.data')
    for flags in (['--off-cpu', '-v'], ['--off-cpu', '--nonblocking']):
        run = harness.record(opts, flags + ['--', *opts.py.argv, target, data, '2'],
                             name=flags[-1][2:])
        profile = run.expect_profile()
        if '-v' in flags:
            m = REGS.search(run.stderr)
            check(m and int(m.group(2)) == 0, 'the summary does not say the waits were named '
                  'from the registers, all found: %s' % (m and m.group(0)))
        leaves = {}
        for frames, c in profile.stacks:
            if 'touch_pages' in [f[0] for f in py_frames(frames)]:
                leaves[frames[-1]] = leaves.get(frames[-1], 0) + c
        total = sum(leaves.values())
        fault = leaves.get('[wait: page fault (I/O)]', 0)
        log('%s: under touch_pages %.1f ms: %s' % (' '.join(flags), total / 1e6, {
            k: round(v / 1e6, 1) for k, v in leaves.items()}))
        check(fault >= 0.9 * total and fault >= 0.2e9, '%s: under touch_pages, [wait: page '
              'fault (I/O)] is not 90%% of the weight, nor 0.2 s: %s' % (' '.join(flags),
                                                                        leaves))


def case_diff(opts):
    target = os.path.join(opts.targets, 'wait_phases.py')
    runs = []
    for name, nap in (('before', '1'), ('after', '3')):
        run = harness.record(opts, ['--off-cpu', '--', *opts.py.argv, target, '0.05', '4', nap],
                             name=name)
        run.expect_profile()
        runs.append(run.out_path)
    d = subprocess.run([opts.hwspy, 'diff', *runs], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=60)
    log(d.stdout)
    check(d.returncode == 0, 'hwspy diff failed: %s' % d.stderr)
    grew = [line.split(None, 8)[8] for line in d.stdout.splitlines()
            if re.match(r'^ +[0-9.]+ +[0-9.]+ +\+[0-9.]+ ', line)]
    check(grew and grew[0] == '[wait: sleep]', 'the first function that grew is %s, expected '
          '[wait: sleep]: %s' % (grew[:1], grew))


def case_gil(opts):
    target = os.path.join(opts.targets, 'gil_threads.py')
    run = harness.record(opts, ['--off-cpu', '--threads', '--', *opts.py.argv, target, '1.5'])
    profile = run.expect_profile()
    walls = measured(WALL, run.stderr)
    gil = {name: 0 for name in walls}
    for frames, c in profile.stacks:
        m = harness.THREAD_FRAME.match(frames[0])
        if not m or m.group('name') not in gil or frames[-1] != '[wait: GIL]':
            continue
        pys = py_frames(frames)
        names = [f[0] for f in pys]
        # a thread starting (no Python frame yet) takes the GIL too, and one ending: in
        # threading.py's own frames alone (Thread.run's `del self._target` on 3.8, where
        # names carry no class, Thread._delete on 3.14)
        ending = pys and all(os.path.basename(f[1]) == 'threading.py' for f in pys)
        check('spin' in names or not names or ending,
              'a GIL wait under Python code other than spin: '
              '%s' % ';'.join(frames))
        gil[m.group('name')] += c if 'spin' in names else 0
    for name, wall in sorted(walls.items()):
        share = gil[name] / wall
        log('%s: waited for the GIL %.0f ms of %.0f ms (%.0f%%)' % (name, gil[name] / 1e6,
                                                                  wall / 1e6, 100 * share))
        check(0.2 <= share <= 0.8, '%s waited for the GIL %.0f%% of its time, expected '
              '20-80%%' % (name, 100 * share))


BLOCKED = {'server': 'serve', 'worker': 'work', 'locker': 'lock_wait', 'napper': 'nap',
           'MainThread': 'main'}


def dump_waits(opts, pid):
    """{thread name: (its functions, wait words)} as `hwspy dump` gives them."""
    p = subprocess.run([opts.hwspy, 'dump', '--json', '-p', str(pid)], capture_output=True,
                       text=True, timeout=60)
    check(p.returncode == 0, 'hwspy dump: exit %d: %s' % (p.returncode, p.stderr))
    return {t['name']: ([f['function'] for f in t['frames']], t['wait'])
            for t in json.loads(p.stdout)['threads']}


def per_thread(profile):
    """{thread name: {'total': ns, 'funcs': {innermost BLOCKED function: {leaf: ns}}}}"""
    threads = {}
    for frames, c in profile.stacks:
        m = harness.THREAD_FRAME.match(frames[0])
        check(m, 'with --threads, a stack without a [thread TID NAME] root: %s' % frames[0])
        t = threads.setdefault(m.group('name'), {'total': 0, 'funcs': {}})
        t['total'] += c
        names = [f[0] for f in py_frames(frames)]
        fn = BLOCKED.get(m.group('name'))
        if fn in names:
            leaves = t['funcs'].setdefault(fn, {})
            leaves[frames[-1]] = leaves.get(frames[-1], 0) + c
    return threads


def case_attach(opts):
    target = os.path.join(opts.targets, 'blocked.py')
    proc = harness.Process(opts.py.argv + [target])
    proc.expect_ready()
    time.sleep(0.3)     # the main thread back in its read of stdin
    waits = dump_waits(opts, proc.pid)
    log('dump: %s' % waits)
    for name, fn in BLOCKED.items():
        check(fn in waits.get(name, ([],))[0], 'dump: %s is not in %s: %s' % (name, fn,
                                                                                waits.get(name)))
    for flag in ('--wall',) if opts.wall_only else ('--wall', '--off-cpu'):
        run = harness.record(opts, [flag, '--threads', '-p', str(proc.pid), '-d', '2'],
                             name=flag[2:])
        profile = run.expect_profile()
        m = re.search(r' for (\d+\.\d+) s: ', run.stderr)
        check(m, 'the summary does not say how long it sampled')
        length = float(m.group(1)) * 1e9
        m = re.search(r'off-cpu: (\d+) threads already waiting at the start', run.stderr)
        check(m and int(m.group(1)) >= 4, '%s: the summary does not count the threads '
              'waiting at the start' % flag)
        threads = per_thread(profile)
        for name, fn in BLOCKED.items():
            t = threads.get(name)
            check(t, '%s: no stack of thread %s in the profile' % (flag, name))
            log('%s %s: %.1f ms of %.1f ms, %s' % (flag, name, t['total'] / 1e6, length / 1e6,
                                                  t['funcs']))
            check(abs(t['total'] - length) <= 0.02 * length, '%s: thread %s weighs %.1f ms, '
                  'not the recording\'s %.1f ms (2%%)' % (flag, name, t['total'] / 1e6,
                                                         length / 1e6))
            leaves = t['funcs'].get(fn, {})
            want = '[wait: %s]' % waits[name][1]
            under = sum(leaves.values())
            check(under >= 0.98 * t['total'], '%s: %s: %.1f of %.1f ms under %s' % (
                flag, name, under / 1e6, t['total'] / 1e6, fn))
            check(leaves.get(want, 0) >= 0.98 * under, '%s: %s waits on %s, not %s as dump '
                  'says' % (flag, name, leaves, want))
    proc.quit()


def case_tree(opts):
    target = os.path.join(opts.targets, 'blocked.py')
    proc = harness.Process(opts.py.argv + [target, 'tree'])
    proc.expect_ready()
    kids = [int(k) for k in proc.readline().split()]
    time.sleep(0.3)
    run = harness.record(opts, ['--wall', '--subprocesses', '-p', str(proc.pid), '-d', '2'])
    profile = run.expect_profile()
    m = re.search(r' for (\d+\.\d+) s: ', run.stderr)
    check(m, 'the summary does not say how long it sampled')
    length = float(m.group(1)) * 1e9
    for kid in kids:
        mine = [(frames, c) for frames, c in profile.stacks
                if frames[0].startswith('[process %d ' % kid) or frames[0] == '[process %d]' % kid]
        total = sum(c for _, c in mine)
        napping = sum(c for frames, c in mine if frames[-1] == '[wait: sleep]' and
                      'child_nap' in [f[0] for f in py_frames(frames)])
        log('child %d: %.1f ms of %.1f ms, %.1f ms in child_nap' % (kid, total / 1e6,
                                                                   length / 1e6, napping / 1e6))
        check(abs(total - length) <= 0.02 * length and napping >= 0.98 * total,
              'child %d weighs %.1f ms (%.1f ms asleep in child_nap), not the recording\'s '
              '%.1f ms' % (kid, total / 1e6, napping / 1e6, length / 1e6))
    proc.quit()


def case_launch(opts):
    target = os.path.join(opts.targets, 'blocked.py')
    run = harness.record(opts, ['--wall', '--', *opts.py.argv, target, 'launch'])
    profile = run.expect_profile()
    sleeps = [(frames, c) for frames, c in profile.stacks if frames[-1] == '[wait: sleep]']
    total = sum(c for _, c in sleeps)
    under = sum(c for frames, c in sleeps if 'nap_once' in [f[0] for f in py_frames(frames)])
    log('[wait: sleep]: %.1f ms, %.1f ms of it under nap_once; all: %.1f ms' % (
        total / 1e6, under / 1e6, sum(c for _, c in profile.stacks) / 1e6))
    check(under >= 0.95 * total and under >= 0.95 * 2e9, 'only %.1f of %.1f ms of sleep (2 s '
          'slept) under nap_once' % (under / 1e6, total / 1e6))


def test(opts):
    {'waits': case_waits, 'wall': case_wall, 'kinds': case_kinds,
     'kinds-attach': case_kinds_attach, 'faults': case_faults, 'diff': case_diff,
     'gil': case_gil, 'attach': case_attach, 'launch': case_launch,
     'tree': case_tree}[opts.case](opts)


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--case', choices=['waits', 'wall', 'kinds', 'kinds-attach', 'faults',
                                      'diff', 'gil', 'attach', 'launch', 'tree'],
                   required=True)
    p.add_argument('--wall-only', action='store_true', help='--case attach: not --off-cpu')
    harness.main(test, p)

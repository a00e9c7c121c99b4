"""The child side of test_pycount.py: one case of hwspy.count, run in the interpreter under
test with PYTHONPATH=<build>/python. Prints what it measured; exits 0 (passed), 1 (a check
failed: AssertionError's words), 77 (a case that cannot run here, with the reason).

    python pycount_cases.py CASE          CASE: count, block, errors, nobody
"""
import hashlib
import mmap
import os
import resource
import signal
import sys
import threading
import time
import warnings

import hwspy

PAGE = mmap.PAGESIZE
N = 4000                        # fresh pages touched per check (16 MiB)


def touch(n=N):
    m = mmap.mmap(-1, n * PAGE)
    for i in range(0, n * PAGE, PAGE):
        m[i] = 1
    m.close()
    return n


def minflt():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def near(value, expected, what, tolerance=0.10):
    print('%s: %s (expected %s +- %d%%)' % (what, value, expected, tolerance * 100))
    assert abs(value - expected) <= tolerance * expected, \
        '%s: %s, not within %d%% of %s' % (what, value, tolerance * 100, expected)


def case_count():
    """Import, then the faults of touching N fresh pages: within 10% of N and of getrusage."""
    print('hwspy %s in Python %s' % (hwspy.__version__, sys.version.split()[0]))
    touch(100)                                  # warm the code path up
    r0 = minflt()
    with hwspy.count(['page-faults', 'task-clock']) as c:
        touch()
    r1 = minflt()
    near(c.counts['page-faults'], N, 'page-faults of touching %d pages' % N)
    near(c.counts['page-faults'], r1 - r0, 'page-faults against getrusage minflt')
    assert c.counts['task-clock'] > 0 and c.enabled['task-clock'] > 0, c.enabled
    assert 'cpus' in c.metrics and c.metrics['cpus'] > 0, c.metrics
    assert c.unavailable == {}, c.unavailable
    assert isinstance(c.findings, list) and c.threads, (c.findings, c.threads)
    print('user space only: %s; wall %.3f s; metrics %s' % (c.user_only, c.wall, c.metrics))


def idle_threads():
    """Threads idle between blocks are not read (their watch), yet counted when they run: one
    woken in a block; one that an idle thread started in an earlier block (counted through its
    creator's inherited counters: the creator stays unread-able for good); one running all
    along outside Python's lock (its CPU time from its own clock, around each block); one that
    exits in a block."""
    events = ['page-faults', 'minor-faults', 'task-clock']   # a session of its own: opened
    wake = [threading.Event() for _ in range(5)]                 # on the threads there now
    done = threading.Event()
    quit_ = threading.Event()
    started = []

    def parked(k):
        while not quit_.is_set():
            wake[k].wait()
            wake[k].clear()
            if quit_.is_set():
                break
            if k == 3:                  # the creator: starts a thread, and parks again
                b = threading.Thread(target=parked, args=(2,), daemon=True)
                b.start()
                started.append(b)
            else:
                touch()
            done.set()
            if k == 4:                  # touches, then exits
                break
    threads = [threading.Thread(target=parked, args=(k,), daemon=True) for k in (0, 1, 3, 4)]
    for t in threads:
        t.start()
    time.sleep(0.05)
    c = hwspy.count(events)
    for _ in range(4):                  # the counters open; every thread read twice, idle
        with c:
            pass

    def woken(k, what):
        done.clear()
        with hwspy.count(events) as c:
            wake[k].set()
            assert done.wait(10), 'thread %d did not answer' % k
        near(c.counts['page-faults'], N, what)
    before = c._session.reads()
    woken(0, 'page-faults of an idle thread woken in the block')
    woken(1, 'page-faults of another')
    after = c._session.reads()
    print('readings: %s, then %s' % (before, after))
    assert after['watched'] >= 5, after
    assert after['skipped'] > before['skipped'], 'no idle thread was skipped: %s' % after
    done.clear()
    with hwspy.count(events):
        wake[3].set()                   # the creator starts thread 2, and parks
        assert done.wait(10)
    for _ in range(3):
        with hwspy.count(events):
            pass
    woken(2, 'page-faults of a thread started by an idle thread, in an earlier block')
    woken(4, 'page-faults of a thread that exits in the block')
    threads[3].join(10)
    for _ in range(3):
        with hwspy.count(events) as c:
            pass
        assert c.counts['page-faults'] < N / 10, 'a thread gone counts on: %s' % c.counts

    spin_stop = threading.Event()

    def spin(data=bytes(1 << 22)):
        while not spin_stop.is_set():
            hashlib.sha256(data).digest()      # Python's lock released while it hashes
    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    time.sleep(0.05)
    s_clock = time.pthread_getcpuclockid(spinner.ident)
    count_ns = ref_ns = 0
    for _ in range(10):
        time.sleep(0.02)                # between blocks: counted by none
        t0 = time.clock_gettime_ns(s_clock) + time.thread_time_ns()
        with hwspy.count(events) as c:
            time.sleep(0.02)
        ref_ns += time.clock_gettime_ns(s_clock) + time.thread_time_ns() - t0
        count_ns += c.counts['task-clock']
    spin_stop.set()
    spinner.join()
    print('task-clock of a thread running all along: %.1f ms in blocks, its clocks %.1f ms'
          % (count_ns / 1e6, ref_ns / 1e6))
    # the two clocks differ by up to ~5% under load (block by block, with or without the
    # watch); a thread skipped while it ran would miss or gain a whole block (20 ms)
    assert 0.85 * ref_ns <= count_ns <= 1.1 * ref_ns + 2e6, (count_ns, ref_ns)
    quit_.set()
    for w in wake:
        w.set()
    for t in threads + started:
        t.join()


def case_block():
    """disable()/enable(), a live thread started in the block, nesting, Ctrl-C, decorator;
    threads idle between blocks."""
    idle_threads()
    with hwspy.count(['page-faults']) as c:
        touch()
        c.disable()
        touch(2 * N)                            # paused: not counted
        c.enable()
        touch()
    near(c.counts['page-faults'], 2 * N, 'page-faults with %d paused pages left out' % (2 * N))

    done, touched = threading.Event(), threading.Event()

    def worker():
        touch()
        touched.set()
        done.wait(10)
    with hwspy.count(['page-faults']) as c:
        t = threading.Thread(target=worker)
        t.start()
        touched.wait(10)
        assert t.is_alive()
    done.set()
    t.join()
    near(c.counts['page-faults'], N, 'page-faults of a thread started in the block, alive at '
         'its end')
    assert sum(x['counts']['page-faults'] for x in c.threads) >= N * 0.9, c.threads

    with hwspy.count(['page-faults']) as outer:
        touch()
        with hwspy.count(['page-faults']) as inner:
            touch()
    near(inner.counts['page-faults'], N, 'inner block')
    near(outer.counts['page-faults'], 2 * N, 'outer block (the inner one\'s work included)')

    c = hwspy.count(['page-faults'])
    try:
        with c:
            touch()
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
            raise AssertionError('no KeyboardInterrupt')
    except KeyboardInterrupt:
        pass
    near(c.counts['page-faults'], N, 'a block stopped by Ctrl-C')
    with hwspy.count(['page-faults']) as c:
        touch()
    near(c.counts['page-faults'], N, 'a block after it')

    @hwspy.count(['page-faults'])
    def step(n):
        return touch(n)
    step(N)
    step(N // 2)
    near(step.last.counts['page-faults'], N // 2, 'decorator: the last call')
    near(step.total.counts['page-faults'], N + N // 2, 'decorator: every call')
    assert step.total.calls == 2, step.total.calls


def case_errors():
    """Unknown and unavailable events, strict=True, pid=/duration=, no such pid."""
    try:
        hwspy.count(['page-faults', 'no-such-event'])
        raise AssertionError('no ValueError')
    except ValueError as e:
        print('unknown event: %s' % e)
        assert "'no-such-event'" in str(e) and 'page-faults' in str(e), str(e)
    ev = hwspy.events()
    names = {e['name']: e for e in ev}
    assert names['page-faults']['available'], names['page-faults']
    if names['cycles']['available']:
        print('SKIP-PART: this machine counts cycles (a hardware PMU): no unavailable event')
    else:
        print('cycles: %s' % names['cycles']['reason'])
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter('always')
            with hwspy.count(['cycles', 'page-faults']) as c:
                touch()
        assert [x for x in w if issubclass(x.category, hwspy.UnavailableEventWarning)], w
        print('unavailable: %s' % c.unavailable)
        assert 'cycles' in c.unavailable and 'PMU' in c.unavailable['cycles'], c.unavailable
        near(c.counts['page-faults'], N, 'page-faults beside an unavailable event')
        assert 'cycles' not in c.counts, c.counts
        try:
            with hwspy.count(['cycles', 'page-faults'], strict=True):
                pass
            raise AssertionError('strict=True did not raise')
        except hwspy.UnavailableEventError as e:
            assert isinstance(e, OSError) and 'cycles' in str(e), e
            # one definition (module.c's), which hwspy.profile raises too
            assert type(e) is hwspy.UnavailableEventError is hwspy._hwspy.UnavailableEventError
            assert not isinstance(e, ValueError), type(e).__mro__
            print('strict: %s' % e)

    pid = os.fork()
    if pid == 0:                                # a busy child, counted from here
        try:
            end = time.monotonic() + 5
            while time.monotonic() < end:
                pass
        finally:
            os._exit(0)
    try:
        t0 = time.monotonic()
        c = hwspy.count(['task-clock', 'page-faults'], pid=pid, duration=0.3)
        took = time.monotonic() - t0
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    print('pid=%d for 0.3 s (took %.2f s): %s' % (pid, took, c.counts))
    assert 0.25 < took < 2, took
    assert c.counts['task-clock'] > 0.1e9, c.counts

    try:
        hwspy.count(['task-clock'], pid=pid, duration=0.1)     # reaped above: gone
        raise AssertionError('no ProcessLookupError')
    except ProcessLookupError as e:
        print('no such pid: %s' % e)


def case_nobody():
    """As an unprivileged user: counting itself works (user space only where the sysctl asks),
    another user's process is a PermissionError naming the privilege."""
    assert os.geteuid() != 0, 'run this case as an unprivileged user'
    with hwspy.count(['page-faults', 'task-clock']) as c:
        touch()
    near(c.counts['page-faults'], N, 'page-faults counted by an unprivileged process')
    print('user space only: %s' % c.user_only)
    with open('/proc/sys/kernel/perf_event_paranoid') as f:
        paranoid = int(f.read())
    if paranoid >= 2:
        assert c.user_only, 'kernel mode was not excluded at perf_event_paranoid %d' % paranoid
    try:
        hwspy.count(['task-clock'], pid=1, duration=0.1)
        raise AssertionError('no PermissionError counting pid 1')
    except PermissionError as e:
        print('pid 1: %s' % e)
        assert 'perf_event_paranoid' in str(e) and 'CAP_PERFMON' in str(e), str(e)
        assert 'this process' in str(e), str(e)


def case_paranoid3():
    """As an unprivileged user with kernel.perf_event_paranoid at 3 (set by the test, machine-wide,
    for this serial test only): Debian's kernels refuse every perf event to unprivileged users
    there, upstream ones treat 3 as 2. Either counting itself works in user space only, or it is
    a PermissionError that names the sysctl and CAP_PERFMON; the same for a profile."""
    assert os.geteuid() != 0, 'run this case as an unprivileged user'
    try:
        with hwspy.count(['page-faults']) as c:
            touch()
        assert c.user_only, 'kernel mode was not excluded at perf_event_paranoid 3'
        near(c.counts['page-faults'], N, 'page-faults at perf_event_paranoid 3')
        print('paranoid 3: this kernel lets a process count itself in user space (3 is 2 here)')
    except PermissionError as e:
        print('paranoid 3: %s' % e)
        assert 'perf_event_paranoid' in str(e) and 'CAP_PERFMON' in str(e), str(e)
    try:
        with hwspy.profile(None, event='cpu-clock') as p:
            touch()
        print('paranoid 3: profile in mode %s, %d samples' % (p.stats['mode'], p.stats['samples']))
    except PermissionError as e:
        print('paranoid 3: profile: %s' % e)
        assert 'perf_event_paranoid' in str(e), str(e)


if __name__ == '__main__':
    case = sys.argv[1]
    try:
        globals()['case_' + case]()
    except AssertionError as e:
        print('FAILED: %s' % e)
        sys.exit(1)
    print('ok')

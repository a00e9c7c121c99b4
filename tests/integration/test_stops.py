"""Exact mode by ptrace stops has no side effects on the target, one --case each.

The target is tests/targets/native/stops.c, built with `cc` at run time: threads blocked again
and again in calls the kernel does not restart after a stop (epoll_wait, recv with
SO_RCVTIMEO, sigtimedwait, semtimedop; nanosleep and select notice a handler), and a spinner
that gets the samples. It counts the EINTRs it sees and the runs of its signal handlers.
hwspy runs with --ptrace --native -e cpu-clock (the target is not Python).
  eintr     3 attaches of 1 s at 1000 Hz to a target without any signal handler: no call
            failed with EINTR (hwspy's detach interrupted every thread: 3-4 EINTRs a run).
  handler   a target catching SIGURG and SIGWINCH (and ignoring SIGPIPE, as CPython does):
            its handlers never run, over 2 runs to their end and 4 in which hwspy gets SIGKILL
            mid-run at 1000 Hz (a signal of hwspy's left pending reached them), nor in 2 where
            the target installs them mid-run, 1 s before hwspy is killed (hwspy moves to
            SIGPIPE, which it ignores); a target that catches both and ignores nothing: hwspy
            falls back to --nonblocking and says why.
  tstp      SIGTSTP to hwspy mid-run (Ctrl-Z): while hwspy is stopped the target runs on,
            untraced; after SIGCONT sampling goes on and the profile is written.
  nobody    as user nobody, hwspy profiles a process of nobody's (-e cpu-clock: refused in
            kernel mode, retried user space only): a profile, not "not allowed" (the
            first try left a thread seized that the retry could not seize again).
  asleep    --ptrace with an event that samples threads as they go to sleep (-e
            context-switches): refused at once (exit 2, one line), the target untouched and
            without EINTR (a stop there woke epoll_wait, recv, sigtimedwait and semtimedop
            early: each failed with EINTR at nearly every sample).
  churn     15 --ptrace attaches of 0.3 s to a process that creates a short thread every
            ~1 ms: none falls back to --nonblocking blaming another tracer (seizing an exiting
            thread, or one already ours through its parent's clone, fails with EPERM).
"""
import json
import os
import shutil
import signal
import subprocess
import time

import harness
from harness import Skip, check, log

CASES = {}
RATE = '1000'


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def build(opts):
    cc = shutil.which('cc') or shutil.which('gcc')
    if not cc:
        raise Skip('no C compiler (cc) to build tests/targets/native/stops.c')
    out = os.path.join(opts.tmp, 'stops')
    argv = [cc, '-O1', '-pthread', '-o', out, os.path.join(opts.targets, 'native', 'stops.c')]
    log('$ %s' % ' '.join(argv))
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, 'cc failed: %s' % r.stderr)
    os.chmod(out, 0o755)
    return out


def start(opts, mode, spinners=1, prefix=()):
    w = harness.Process(list(prefix) + [build(opts), mode, str(spinners)])
    w.expect_ready()
    return w


def report(w):
    r = w.ask('report')
    log('target: %s' % json.dumps(r))
    return r


def check_clean(w, what):
    r = report(w)
    bad = {k: v for k, v in r['eintr'].items() if v}
    check(not bad, '%s: calls in the target failed with EINTR: %s' % (what, bad))
    check(r['handled'] == 0, '%s: the target\'s signal handlers ran %d times'
          % (what, r['handled']))
    return r


def args(w, *extra):
    return ['--ptrace', '--native', '-e', 'cpu-clock', '-F', RATE, '-p', str(w.pid)] + list(extra)


@case
def eintr(opts):
    w = start(opts, 'plain')
    for i in range(3):
        run = harness.record(opts, args(w, '-d', '1'), name='run%d' % i, timeout=60)
        run.expect_profile()
        check('read with its thread stopped' in run.stderr, 'hwspy did not stop the threads '
              '(no "read with its thread stopped" in its summary)')
        harness.check_untouched(w.pid)
        check_clean(w, 'run %d' % i)
    w.quit()


@case
def handler(opts):
    w = start(opts, 'catch')
    for i in range(2):
        run = harness.record(opts, args(w, '-d', '0.5'), name='run%d' % i, timeout=60)
        run.expect_profile()
        check('read with its thread stopped' in run.stderr, 'hwspy did not stop the threads')
        harness.check_untouched(w.pid)
        check_clean(w, 'run %d' % i)
    for i in range(4):
        p = harness.start_record(opts, args(w, '-d', '20'), name='killed%d' % i)
        check(harness.wait_attached(p.pid, w.pid), 'hwspy did not attach within 15 s')
        time.sleep(0.3 + 0.1 * i)
        check(p.poll() is None, 'hwspy ended early (exit %s)' % p.returncode)
        p.kill()
        p.wait()
        log('killed hwspy (pid %d) with SIGKILL' % p.pid)
        harness.check_untouched(w.pid)
        check_clean(w, 'killed run %d' % i)
    w.quit()

    log('--- a target that begins to catch SIGURG and SIGWINCH while hwspy stops it')
    for i in range(2):
        w = start(opts, 'plain')
        p = harness.start_record(opts, args(w, '-d', '20'), name='late%d' % i)
        check(harness.wait_attached(p.pid, w.pid), 'hwspy did not attach within 15 s')
        time.sleep(0.3)
        w.send('catch')
        check(w.readline() == 'ok', 'the target did not install its handlers')
        time.sleep(1 + 0.1 * i)       # hwspy looks at the target's handlers every 0.1 s
        check(p.poll() is None, 'hwspy ended early (exit %s)' % p.returncode)
        p.kill()
        p.wait()
        log('killed hwspy (pid %d) with SIGKILL' % p.pid)
        harness.check_untouched(w.pid)
        check_clean(w, 'late handlers, killed run %d' % i)
        w.quit()

    log('--- a target that catches SIGURG and SIGWINCH and ignores no signal')
    w = start(opts, 'catchall')
    run = harness.record(opts, args(w, '-d', '1'), name='catchall', timeout=60)
    run.expect_profile()
    check('nonblocking' in run.stderr and 'SIGURG' in run.stderr,
          'hwspy did not say it falls back to --nonblocking for want of a harmless signal')
    harness.check_untouched(w.pid)
    check_clean(w, 'catchall')
    w.quit()


@case
def tstp(opts):
    w = start(opts, 'plain')
    p = harness.start_record(opts, args(w, '-d', '4'))
    check(harness.wait_attached(p.pid, w.pid), 'hwspy did not attach within 15 s')
    time.sleep(0.7)
    os.kill(p.pid, signal.SIGTSTP)
    end = time.monotonic() + 5
    while harness.proc_status(p.pid).get('State', 'T')[0] != 'T':
        check(time.monotonic() < end, 'hwspy did not stop within 5 s of SIGTSTP')
        time.sleep(0.02)
    log('hwspy stopped: %s' % harness.proc_status(p.pid).get('State'))
    harness.check_untouched(w.pid)
    before = report(w)['spins']
    time.sleep(1.5)
    after = report(w)['spins']
    log('the spinner ran %d rounds in 1.5 s while hwspy was stopped' % (after - before))
    check(after - before > 20, 'the target did not run while hwspy was stopped (%d spinner '
          'rounds in 1.5 s)' % (after - before))
    harness.check_untouched(w.pid)
    os.kill(p.pid, signal.SIGCONT)
    time.sleep(0.5)
    check(p.poll() is None, 'hwspy ended right after SIGCONT (exit %s)' % p.returncode)
    check(harness.proc_status(w.pid).get('TracerPid') not in (None, '0'),
          'hwspy did not trace the target again after SIGCONT')
    run = harness.finish_record(p)
    profile = run.expect_profile()
    check('read with its thread stopped' in run.stderr, 'hwspy did not stop the threads')
    # ~2 s sampled at 1000 Hz: a busy machine gives far fewer, never none
    check(run.samples() >= 20, 'only %d samples in 4 s at %s Hz' % (run.samples(), RATE))
    check(profile.total > 0, 'empty profile')
    harness.check_untouched(w.pid)
    check_clean(w, 'after Ctrl-Z')
    w.quit()


@case
def nobody(opts):
    if os.geteuid() != 0:
        raise Skip('needs root, to run hwspy and its target as nobody')
    prefix, exe = harness.as_nobody(opts)
    w = start(opts, 'plain', prefix=prefix)
    check(os.stat('/proc/%d' % w.pid).st_uid != 0, 'the target runs as root')
    for extra in ([], ['--ptrace']):
        run = harness.record(opts, ['--native', '-e', 'cpu-clock', '-p', str(w.pid), '-d', '1']
                             + extra, name='nobody/out', timeout=60, prefix=prefix, hwspy=exe)
        run.expect_profile()
        harness.check_untouched(w.pid)
        check_clean(w, 'as nobody %s' % ' '.join(extra))
    w.quit()


@case
def asleep(opts):
    w = start(opts, 'plain')
    for ev in ('context-switches', 'cs'):
        argv = [opts.hwspy, 'record', '--ptrace', '--native', '-e', ev, '-c', '1', '-d', '1',
                '-p', str(w.pid), '-o', os.path.join(opts.tmp, 'asleep.folded')]
        log('$ %s' % ' '.join(argv))
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        log('exit %d; stderr:\n%s' % (r.returncode, r.stderr.rstrip()))
        check(r.returncode == 2, 'hwspy --ptrace -e %s exited %d, expected 2 (refused)'
              % (ev, r.returncode))
        lines = r.stderr.strip().splitlines()
        check(len(lines) == 1 and 'go to sleep' in lines[0],
              'expected one line saying why --ptrace is refused for %s' % ev)
        check(not os.path.exists(os.path.join(opts.tmp, 'asleep.folded')), 'a profile was written')
        harness.check_untouched(w.pid)
        check_clean(w, ev)
    w.quit()


@case
def churn(opts):
    w = start(opts, 'plain,churn', spinners=3)
    bad = 0
    for i in range(15):
        run = harness.record(opts, args(w, '-d', '0.3'), name='run%d' % i, timeout=60)
        run.expect_profile()
        if 'nonblocking' in run.stderr:
            bad += 1
    harness.check_untouched(w.pid)
    check(bad == 0, '%d of 15 attaches fell back to --nonblocking' % bad)
    check_clean(w, 'churn')
    w.quit()


def test(opts):
    CASES[opts.case](opts)


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--case', choices=sorted(CASES), required=True)
    harness.main(test, p)

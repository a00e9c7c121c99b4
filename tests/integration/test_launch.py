"""Launch mode's end and hwspy record's exit status, one --case each.

After -d a launched command still running gets SIGTERM (Python prints no KeyboardInterrupt
traceback), SIGKILL after --grace, and hwspy exits 0: the command ended as asked; with its
process group, so that what it started ends too (hwspy run from a script, not its group's
leader). After a signal to hwspy the command gets SIGINT, SIGTERM after --grace, then SIGKILL; a
second signal to hwspy kills it at once; --keep-running leaves it; a command that ends by itself
gives hwspy its status (128+N for signal N); hwspy exits 1 where it wrote no profile (not a
Python process, no sample: an idle target attached with -p).
"""
import os
import re
import shlex
import shutil
import signal
import subprocess
import time

import harness
from harness import Fail, check, log

CASES = {}


def case(fn):
    CASES[fn.__name__.replace('_', '-')] = fn
    return fn


def sleeper(opts, marker, *args):
    return opts.py.argv + [os.path.join(opts.targets, 'sleeper.py'), marker] + list(args)


def marks(path):
    try:
        with open(path) as f:
            return f.read().split()
    except FileNotFoundError:
        return []


def wait_mark(path, what, timeout=30):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if what in marks(path):
            return
        time.sleep(0.05)
    raise Fail('the command wrote no %r to its marker within %d s (it has %s)'
               % (what, timeout, marks(path)))


def gone(pid, timeout=5):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        st = harness.proc_status(pid)
        if not st or st['State'].startswith('Z'):
            return True
        time.sleep(0.05)
    return False


def command_pid(run):
    m = re.search(r"'[^']*' \(pid (\d+)\)", run.stderr)
    check(m, "the summary names no \"'COMMAND' (pid N)\"")
    return int(m.group(1))


@case
def end_at_d(opts):
    # ends on the SIGTERM at the end of -d (no SIGINT: no traceback), well within the grace
    # period (5 s), and hwspy exits 0 (and with --ptrace, where the tracer thread held the
    # command until sampling ended)
    for extra in ([], ['--ptrace']):
        m = os.path.join(opts.tmp, 'marker%s' % ''.join(extra))
        run = harness.record(opts, extra + ['-e', 'cpu-clock', '-d', '1', '--'] +
                             sleeper(opts, m), name='out%s' % ''.join(extra), timeout=30)
        log('marker: %s' % marks(m))
        check(marks(m) == ['started', 'SIGTERM'], 'the command got no SIGTERM alone: %s'
              % marks(m))
        check(run.elapsed < 8, 'hwspy took %.1f s: -d 1 and a command that ends at SIGTERM'
              % run.elapsed)
        check(run.rc == 0, 'hwspy exited %s, not 0 (the command ended at -d, as asked)'
              % run.rc)
        check('Traceback' not in run.stderr and 'KeyboardInterrupt' not in run.stderr,
              'a traceback on stderr')
        check('was ended by SIGTERM as sampling ended' in run.stderr,
              'the summary does not say how the command ended')
        check(run.samples() and os.path.exists(run.out_path), 'no profile written')


@case
def kill_at_d(opts):
    # a command that ignores SIGTERM gets SIGKILL after the grace period, not before; still
    # ended as asked: exit 0
    m = os.path.join(opts.tmp, 'marker')
    run = harness.record(opts, ['-e', 'cpu-clock', '-d', '1', '--grace', '1.5', '--'] +
                         sleeper(opts, m, '--ignore-term'), timeout=30)
    log('marker: %s' % marks(m))
    check(marks(m) == ['started', 'SIGTERM'],
          'the command did not get SIGTERM alone: %s' % marks(m))
    check(run.rc == 0, 'hwspy exited %s, not 0 (the command ended at -d, as asked)' % run.rc)
    check(2.5 <= run.elapsed < 9, 'hwspy took %.1f s: -d 1 then a grace of 1.5 s' % run.elapsed)
    check('was ended by SIGKILL as sampling ended' in run.stderr,
          'the summary does not say SIGKILL ended the command')


@case
def group(opts):
    # hwspy run from a script (a shell leads the group, hwspy does not): -d ends the command's
    # own child too, not the script
    m = os.path.join(opts.tmp, 'marker')
    prefix = ['setsid', 'sh', '-c', '"$@"; echo "script lives on: $?" >&2', 'sh']
    run = harness.record(opts, ['-e', 'cpu-clock', '-d', '1', '--'] +
                         sleeper(opts, m, '--child'), prefix=prefix, timeout=30)
    log('marker: %s' % marks(m))
    kids = [int(x.split('=')[1]) for x in marks(m) if x.startswith('child=')]
    check(kids, 'the command started no child: %s' % marks(m))
    harness.Process.live.append(_Pid(kids[0]))
    check(gone(kids[0], 3), "the command's child (pid %d) still runs after -d" % kids[0])
    check('SIGTERM' in marks(m), 'the command got no SIGTERM: %s' % marks(m))
    check('script lives on: 0' in run.stderr, 'the script did not go on after hwspy exited 0')


@case
def status(opts):
    m = os.path.join(opts.tmp, 'marker')
    run = harness.record(opts, ['-e', 'cpu-clock', '--'] + sleeper(opts, m, '--exit', '3'),
                         name='exit3', timeout=60)
    check(run.rc == 3, 'hwspy exited %s, not the command\'s 3' % run.rc)
    check(run.samples() and os.path.exists(run.out_path), 'a failed command lost its profile')
    check('exited with status 3' in run.stderr, 'the summary does not say the command exited 3')
    run = harness.record(opts, ['-e', 'cpu-clock', '--'] +
                         sleeper(opts, m, '--kill-self', str(int(signal.SIGKILL))),
                         name='killed', timeout=60)
    check(run.rc == 128 + signal.SIGKILL, 'hwspy exited %s, not 137 (SIGKILL)' % run.rc)
    check('killed by SIGKILL' in run.stderr, 'the summary does not say SIGKILL ended it')
    check(run.samples() and os.path.exists(run.out_path), 'no profile written')


@case
def keep_running(opts):
    m = os.path.join(opts.tmp, 'marker')
    p = harness.start_record(opts, ['-e', 'cpu-clock', '-d', '1', '--keep-running', '--'] +
                             sleeper(opts, m, '--sleep', '20'))
    # the command keeps hwspy's stdout and stderr open: wait for hwspy itself, not for them
    try:
        rc = p.wait(timeout=15)
    except subprocess.TimeoutExpired:
        raise Fail('hwspy did not end within 15 s with --keep-running')
    elapsed = time.monotonic() - p.t0
    os.set_blocking(p.stderr.fileno(), False)
    err = (p.stderr.read() or b'').decode('utf-8', 'replace')
    log('hwspy exit %s after %.1fs; stderr:\n%s' % (rc, elapsed, err.rstrip()))
    run = harness.Run(p.argv, rc, '', err, p.out, elapsed)
    pid = command_pid(run)
    harness.Process.live.append(_Pid(pid))
    check(run.rc == 0, 'hwspy exited %s, expected 0' % run.rc)
    check(run.elapsed < 8, 'hwspy took %.1f s with --keep-running' % run.elapsed)
    check('keeps running' in run.stderr, 'the summary does not say the command keeps running')
    time.sleep(0.5)
    harness.check_untouched(pid, 'the command')
    check(marks(m) == ['started'], 'the command got a signal: %s' % marks(m))
    os.kill(pid, signal.SIGKILL)


class _Pid:
    """A process of the test's to kill at its end (harness.Process.kill_all)."""

    def __init__(self, pid):
        self.pid = pid

    def kill(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass


@case
def second_sigint(opts):
    # SIGINT to hwspy: sampling ends and the command gets SIGINT (it ignores it); a second one
    # kills it at once, long before the grace period ends
    m = os.path.join(opts.tmp, 'marker')
    p = harness.start_record(opts, ['-e', 'cpu-clock', '--grace', '30', '--'] +
                             sleeper(opts, m, '--ignore-int'))
    wait_mark(m, 'started')
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    wait_mark(m, 'SIGINT', 15)
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    run = harness.finish_record(p, timeout=30)
    took = time.monotonic() - t0
    log('hwspy ended %.2f s after the second SIGINT' % took)
    check(took < 3, 'hwspy took %.1f s after a second SIGINT' % took)
    check(run.rc == 128 + signal.SIGKILL, 'hwspy exited %s, not 137 (the command killed)' % run.rc)
    check('interrupted again' in run.stderr, 'hwspy did not say it killed the command')
    check(os.path.exists(run.out_path), 'the profile was not written')
    check('SIGTERM' not in marks(m), 'the command got SIGTERM: %s' % marks(m))


@case
def not_python(opts):
    run = harness.record(opts, ['-e', 'cpu-clock', '-d', '1', '--', 'sleep', '30'],
                         timeout=30)
    check(run.elapsed < 8, 'hwspy took %.1f s for -d 1 and a sleep' % run.elapsed)
    check('not a Python process' in run.stderr, 'hwspy did not say sleep is not Python')
    check(run.rc == 1, 'hwspy exited %s, expected 1 (no profile)' % run.rc)
    check("'sleep' (pid" in run.stderr and "SIGTERM" in run.stderr,
          'hwspy did not say how sleep ended')
    check(not os.path.exists(run.out_path), 'an output was written')


SPIN = ('import time\ndef shim_spin():\n    end = time.monotonic() + 6\n'
        '    while time.monotonic() < end:\n        sum(i * i for i in range(1000))\nshim_spin()')


def shim(opts, delay):
    """A fake pyenv shim: sh, 'pyenv' in its argv, that execs Python after delay seconds."""
    py = ' '.join(shlex.quote(a) for a in opts.py.argv + ['-c', SPIN])
    return harness.Process(['sh', '-c', 'sleep %s; exec %s' % (delay, py), 'pyenv-exec'])


@case
def shim_attach(opts):
    # attached while still a shell: the Python it execs is recorded, and said to be
    shell = harness.Process(['sh', '-c', 'sleep 30; exit 0'])   # ages meanwhile (below)
    for delay, after in ((0.5, 0.05), (2.4, 2.1)):
        w = shim(opts, delay)
        time.sleep(after)   # 2.1: older than the 2 s a young process is given to load Python
        st = harness.proc_status(w.pid)
        check(st and st['Name'] in ('sh', 'dash', 'bash'), 'the shim is no shell: %s' % st)
        run = harness.record(opts, ['-e', 'cpu-clock', '-p', str(w.pid), '-d', '1'],
                             name='shim%s' % delay, timeout=30)
        check(run.rc == 0, 'hwspy exited %s attached to a shim' % run.rc)
        check('became Python' in run.stderr and 'pyenv shim' in run.stderr,
              'hwspy did not say the shim became Python')
        prof = run.expect_profile()
        check(prof.weight(lambda fr: any('shim_spin' in f for f in fr)) > 0,
              "no sample in the Python's shim_spin")
        w.kill()
    # not Python: named by its executable, in one line; --native advised only with native code
    sleeper_ = harness.Process(['sleep', '30'])
    time.sleep(0.2)
    for w, exe, native in ((sleeper_, os.path.realpath(shutil.which('sleep')), True),
                           (shell, os.path.realpath(shutil.which('sh')), False)):
        run = harness.record(opts, ['-e', 'cpu-clock', '-p', str(w.pid), '-d', '1'],
                             name='not', timeout=30)
        lines = run.stderr.strip().splitlines()
        check(run.rc == 1, 'hwspy exited %s, expected 1' % run.rc)
        check(len(lines) == 1, 'not one line: %s' % lines)
        check('pid %d (%s) is not a Python process' % (w.pid, exe) in lines[0],
              'the line does not name %s: %s' % (exe, lines[0]))
        check(('--native' in lines[0]) == native and (native or 'shim' in lines[0]),
              '--native advised%s: %s' % ('' if native else ' to a shell', lines[0]))
        w.kill()


@case
def idle_attach(opts):
    w = harness.Process(opts.py.argv + ['-c', 'import sys, time\nprint("ready", flush=True)\n'
                                        'time.sleep(120)'])
    w.expect_ready()
    time.sleep(0.3)
    run = harness.record(opts, ['-e', 'cpu-clock', '-p', str(w.pid), '-d', '1'], timeout=30)
    errs = [l for l in run.stderr.splitlines() if 'no samples' in l]
    check(len(errs) == 1, 'not one "no samples" line')
    check('pid %d did not run on a CPU' % w.pid in errs[0] and '--wall' in errs[0] and
          '--off-cpu' in errs[0],
          'the line does not say the target did not run and what to use: %s' % errs[0])
    check(run.rc == 1, 'hwspy exited %s, expected 1 (nothing written)' % run.rc)
    check(not os.path.exists(run.out_path), 'an empty output was written')
    harness.check_untouched(w.pid)
    w.kill()


def test(opts):
    if opts.case != 'not-python' and not getattr(opts, 'py', None):
        opts.py = harness.any_python(opts)
    CASES[opts.case](opts)


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--case', choices=sorted(CASES), required=True)
    harness.main(test, p)

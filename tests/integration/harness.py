"""Shared helpers of the integration tests: run hwspy, read its folded output, drive workloads.

A test is a function taking the parsed options; `main(test)` runs it and maps the outcome to
meson's exit codes: 0 pass, 77 skip (the reason is printed), 1 fail (the reason is printed,
after everything the test logged, so `meson test --print-errorlogs` shows why).
Standard library only: this runs on the Python that runs meson (/usr/bin/python3).
"""
import argparse
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

import pythons

SKIP = 77
PY_FRAME = re.compile(r'^(?P<name>.+) \((?P<file>.+):(?P<line>\d+)\)$')
THREAD_FRAME = re.compile(r'^\[thread (?P<tid>\d+) (?P<name>.*)\]$')
SAMPLES = re.compile(r'(\d+) samples')


class Skip(Exception):
    pass


class Fail(Exception):
    pass


def log(*args):
    print(*args, flush=True)


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def any_python(opts):
    """The first supported interpreter installed here (debian311 is always present on CI);
    Skip if there is none."""
    for ident in ['debian311'] + pythons.SUPPORTED:
        try:
            return pythons.get(ident, os.path.realpath(opts.source_root))
        except pythons.Missing:
            pass
    raise Skip('no supported Python installed')


def steal_seconds():
    """CPU time this VM's vCPUs were ready to run but the host ran something else (steal, all
    CPUs, from /proc/stat), in seconds. cpu-clock counts it in the task that was "running";
    thread_time does not."""
    with open('/proc/stat') as f:
        fields = f.readline().split()
    return int(fields[8]) / os.sysconf('SC_CLK_TCK') if len(fields) > 8 else 0.0


# ---------------------------------------------------------------------------- running a test

def parser(description):
    p = argparse.ArgumentParser(description=description,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--hwspy', required=True, help='path of the hwspy binary')
    p.add_argument('--source-root', required=True, help='the repository root')
    p.add_argument('--python', help='interpreter id (see pythons.py)')
    return p


def main(test, p):
    opts = p.parse_args()
    opts.targets = os.path.join(os.path.realpath(opts.source_root), 'tests', 'targets')
    opts.tmp = tempfile.mkdtemp(prefix='hwspy-it-')
    os.chmod(opts.tmp, 0o755)
    code = 1
    try:
        if not os.access(opts.hwspy, os.X_OK):
            raise Fail('hwspy binary %s missing or not executable' % opts.hwspy)
        if opts.python:
            try:
                opts.py = pythons.get(opts.python, os.path.realpath(opts.source_root))
            except pythons.Missing as e:
                raise Skip(str(e))
            log('interpreter: %r' % opts.py)
        test(opts)
        log('PASS')
        code = 0
    except Skip as e:
        log('SKIP: %s' % e)
        code = SKIP
    except Fail as e:
        log('FAIL: %s' % e)
    except Exception:
        traceback.print_exc()
        log('FAIL: the test itself raised (above)')
    finally:
        Process.kill_all()
        shutil.rmtree(opts.tmp, ignore_errors=True)
    sys.exit(code)


# ---------------------------------------------------------------------------- workloads

class Process:
    """A workload started with pipes on stdin/stdout; killed at the latest when the test ends
    (as are the hwspy runs still going then)."""
    live = []
    profilers = []

    def __init__(self, argv, env=None, **kw):
        self.argv = argv
        log('$ %s' % ' '.join(argv))
        e = dict(os.environ)
        e['PYTHONDONTWRITEBYTECODE'] = '1'
        e.pop('PYTHONPATH', None)
        e.update(env or {})
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=e,
                                  start_new_session=True, **kw)
        self.pid = self.p.pid
        Process.live.append(self)

    def readline(self, timeout=60):
        """One line of the workload's stdout (str), or Fail after `timeout` seconds."""
        fd = self.p.stdout.fileno()
        end = time.monotonic() + timeout
        buf = getattr(self, '_buf', b'')
        while b'\n' not in buf:
            left = end - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise Fail('workload %s printed no line within %ds' % (self.argv[-1], timeout))
            data = os.read(fd, 65536)
            if not data:
                rc = self.p.wait()
                raise Fail('workload %s ended (exit %s) before printing a line'
                           % (' '.join(self.argv), rc))
            buf += data
        line, self._buf = buf.split(b'\n', 1)
        return line.decode('utf-8')

    def expect_ready(self, timeout=60):
        line = self.readline(timeout)
        check(line == 'ready', 'workload printed %r instead of "ready"' % line)

    def send(self, line):
        self.p.stdin.write(line.encode() + b'\n')
        self.p.stdin.flush()

    def ask(self, line, timeout=30):
        """Send a command, return the JSON line it answers with."""
        self.send(line)
        return json.loads(self.readline(timeout))

    def alive(self):
        return self.p.poll() is None

    def quit(self, timeout=10):
        if self.alive():
            try:
                self.send('quit')
                self.p.stdin.close()
            except OSError:
                pass
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        return self.p.returncode

    def kill(self):
        if self.p.poll() is None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except OSError:
                pass
            self.p.wait()

    @classmethod
    def kill_all(cls):
        for p in cls.profilers:
            if p.poll() is None:
                p.kill()
                p.wait()
        for proc in cls.live:
            proc.kill()
        cls.profilers, cls.live = [], []


def proc_status(pid):
    """{'State': ..., 'TracerPid': ...} of a live process, {} if it is gone."""
    try:
        with open('/proc/%d/status' % pid) as f:
            return dict(l.rstrip('\n').split(':\t', 1) for l in f if ':\t' in l)
    except OSError:
        return {}


def bpf_capture_allowed():
    """Whether hwspy's default exact mode can use its BPF capture here (CAP_BPF + CAP_PERFMON:
    root, on this project's machines)."""
    return os.geteuid() == 0


def check_exact(run, how, max_uncaptured=None):
    """The summary of an exact-mode run says it was exact the way asked: 'capture' (the default:
    the BPF capture where allowed, else ptrace stops) or 'ptrace' (--ptrace). With
    max_uncaptured, at most that share of the Python stacks was read without a capture."""
    if how == 'capture' and bpf_capture_allowed():
        m = re.search(r'exact: (\d+) Python stacks captured at their sample by BPF, (\d+) read '
                      r'after it', run.stderr)
        check(m, 'the summary does not say the stacks were captured by BPF')
        got, late = int(m.group(1)), int(m.group(2))
        check(got > 0, 'no Python stack was captured by BPF')
        log('captured by BPF: %d stacks, %d read after their sample' % (got, late))
        if max_uncaptured is not None:
            check(late <= max_uncaptured * (got + late) + 2,
                  '%d of %d stacks were read without a capture' % (late, got + late))
    else:
        check('read with its thread stopped' in run.stderr,
              'the summary does not say the samples were read with their thread stopped')


def check_untouched(pid, what='the target'):
    """The target is alive, not stopped and not traced: hwspy left nothing behind."""
    time.sleep(0.2)
    threads = os.listdir('/proc/%d/task' % pid) if os.path.isdir('/proc/%d' % pid) else []
    check(threads, '%s (pid %d) is gone after hwspy ran' % (what, pid))
    for tid in threads:
        st = proc_status(int(tid))
        if not st:
            continue
        check(not st['State'].startswith(('T', 't')),
              '%s thread %s left stopped: State %s' % (what, tid, st['State']))
        check(st['TracerPid'] == '0',
              '%s thread %s still traced by pid %s' % (what, tid, st['TracerPid']))


def perf_fds(pid):
    """How many perf_event file descriptors process `pid` holds."""
    n = 0
    try:
        for fd in os.listdir('/proc/%d/fd' % pid):
            try:
                if os.readlink('/proc/%d/fd/%s' % (pid, fd)) == 'anon_inode:[perf_event]':
                    n += 1
            except OSError:
                pass
    except OSError:
        pass
    return n


def wait_attached(hwspy_pid, target_pid, timeout=15):
    """Wait until hwspy holds at least one perf event per target thread (it has attached)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            nthreads = len(os.listdir('/proc/%d/task' % target_pid))
        except OSError:
            nthreads = 1
        if perf_fds(hwspy_pid) >= nthreads:
            return True
        time.sleep(0.05)
    return False


def markers(path):
    """{'HOT:name': line, 'CALL:name': line, 'def:name': line} from the source's comments."""
    out = {}
    with open(path, encoding='utf-8') as f:
        for no, text in enumerate(f, 1):
            for m in re.finditer(r'# ((?:HOT|CALL):\S+)', text):
                out[m.group(1)] = no
            m = re.match(r'\s*def (\w+)\(', text)
            if m:
                out['def:' + m.group(1)] = no
    return out


# ---------------------------------------------------------------------------- hwspy runs

class Profile:
    """A folded profile: a list of (frames tuple, count)."""

    def __init__(self, stacks):
        self.stacks = stacks
        self.total = sum(c for _, c in stacks)

    @classmethod
    def read(cls, path):
        with open(path, 'rb') as f:
            raw = f.read()
        try:
            text = raw.decode('utf-8')
        except UnicodeDecodeError as e:
            raise Fail('%s is not valid UTF-8: %s' % (path, e))
        stacks = []
        for no, line in enumerate(text.split('\n'), 1):
            if not line:
                continue
            if no == 1 and line.startswith('# hwspy '):
                # the header: the event (and its unit) and the recording's length
                check(re.fullmatch(r'# hwspy( event=[^ ;=]+)?( duration_ns=[0-9]+)?', line),
                      '%s:1: malformed header %r' % (path, line))
                continue
            stack, sep, count = line.rpartition(' ')
            check(sep and count.isdigit() and stack,
                  '%s:%d: not "frame;...;leaf COUNT": %r' % (path, no, line))
            frames = tuple(stack.split(';'))
            check(all(frames), '%s:%d: empty frame in %r' % (path, no, line))
            check(int(count) > 0, '%s:%d: count 0 in %r' % (path, no, line))
            stacks.append((frames, int(count)))
        check(text == '' or text.endswith('\n'), '%s: last line not terminated' % path)
        return cls(stacks)

    def weight(self, pred):
        return sum(c for f, c in self.stacks if pred(f))

    def top(self, n=15):
        lines = []
        for frames, c in sorted(self.stacks, key=lambda s: -s[1])[:n]:
            share = 100.0 * c / self.total if self.total else 0
            lines.append('  %5.1f%%  %s' % (share, ';'.join(frames)))
        return '\n'.join(lines)


def py_frames(frames):
    """The Python frames of a stack, root first, as (qualname, file, line)."""
    out = []
    for fr in frames:
        m = PY_FRAME.match(fr)
        if m:
            out.append((m.group('name'), m.group('file'), int(m.group('line'))))
    return out


class Run:
    def __init__(self, argv, rc, stdout, stderr, out_path, elapsed):
        self.argv, self.rc, self.stdout, self.stderr = argv, rc, stdout, stderr
        self.out_path, self.elapsed = out_path, elapsed
        self.profile = None

    def samples(self):
        m = SAMPLES.search(self.stderr)
        return int(m.group(1)) if m else None

    def expect_profile(self):
        """Checks every successful run must pass; reads the profile."""
        check(self.rc == 0, 'hwspy exited %s, expected 0' % self.rc)
        n = self.samples()
        check(n is not None, 'no "N samples" in the summary on stderr')
        check(self.out_path in self.stderr,
              'the summary on stderr does not name the output %s' % self.out_path)
        check(os.path.exists(self.out_path), 'no output file %s' % self.out_path)
        self.profile = Profile.read(self.out_path)
        check(n > 0 and self.profile.stacks, 'empty profile (%s samples)' % n)
        log('%d samples, %d stacks, total weight %d; heaviest stacks:\n%s'
            % (n, len(self.profile.stacks), self.profile.total, self.profile.top()))
        return self.profile


def start_record(opts, args, name='out', prefix=(), hwspy=None, verbose=True):
    """Start `[PREFIX] hwspy record -v -o TMP/name.folded ARGS` (HWSPY instead of opts.hwspy if
    given; -v: the whole summary, which the tests read, unless not verbose) in the background;
    finish_record() waits for it."""
    out = os.path.join(opts.tmp, name + '.folded')
    argv = (list(prefix) + [hwspy or opts.hwspy, 'record'] + (['-v'] if verbose else []) +
            ['-o', out] + list(args))
    log('$ %s' % ' '.join(argv))
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=dict(os.environ, PYTHONDONTWRITEBYTECODE='1'))
    p.t0, p.out, p.argv = time.monotonic(), out, argv
    Process.profilers.append(p)
    return p


def finish_record(p, timeout=60):
    try:
        so, se = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        so, se = p.communicate()
        log(se.decode('utf-8', 'replace'))
        raise Fail('hwspy did not finish within %ds' % timeout)
    run = Run(p.argv, p.returncode, so.decode('utf-8', 'replace'),
              se.decode('utf-8', 'replace'), p.out, time.monotonic() - p.t0)
    log('hwspy exit %s after %.1fs; stderr:\n%s' % (run.rc, run.elapsed, run.stderr.rstrip()))
    return run


def record(opts, args, name='out', timeout=120, prefix=(), hwspy=None, verbose=True):
    """Run hwspy record to completion (see start_record)."""
    return finish_record(start_record(opts, args, name, prefix, hwspy, verbose), timeout)


# ---------------------------------------------------------------------------- shares

def as_nobody(opts):
    """(prefix, exe): a command prefix that runs as nobody, and a copy of hwspy nobody may run;
    opts.tmp/nobody is created world-writable for the outputs (record name='nobody/...')."""
    if shutil.which('setpriv'):
        prefix = ['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups']
    elif shutil.which('runuser'):
        prefix = ['runuser', '-u', 'nobody', '--']
    else:
        raise Skip('neither setpriv nor runuser is installed')
    exe = os.path.join(opts.tmp, 'hwspy')
    shutil.copy(opts.hwspy, exe)
    os.chmod(exe, 0o755)
    outdir = os.path.join(opts.tmp, 'nobody')
    os.mkdir(outdir)
    os.chmod(outdir, 0o777)
    return prefix, exe


def go_pprof(opts, *args):
    """`go tool pprof ARGS`'s output (Fail if it exits non-zero); Skip without go."""
    if not shutil.which('go'):
        raise Skip("no 'go' here (apt-get install golang-go; .ci/run installs it)")
    home = os.path.join(opts.tmp, 'home')
    os.makedirs(home, exist_ok=True)
    r = subprocess.run(['go', 'tool', 'pprof'] + list(args), capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, HOME=home))
    check(r.returncode == 0, 'go tool pprof %s exited %d:\n%s' % (' '.join(args), r.returncode,
                                                                  r.stderr))
    return r.stdout


def compare_shares(expected, got, tolerance, what, enforce=True):
    """expected/got: {task: weight}; each normalised to its sum; Fail if any differs by more
    than `tolerance` percentage points (enforce=False: only print the comparison)."""
    te, tg = sum(expected.values()), sum(got.values())
    check(te > 0, 'the workload measured no time for %s' % what)
    check(tg > 0, 'the profile has no weight in any of %s' % sorted(expected))
    bad = []
    log('%-14s %9s %9s' % (what, 'measured', 'profile'))
    for k in expected:
        e, g = 100.0 * expected[k] / te, 100.0 * got.get(k, 0) / tg
        log('%-14s %8.1f%% %8.1f%%%s' % (k, e, g, '   <-- off by %.1f points' % abs(e - g)
                                          if abs(e - g) > tolerance else ''))
        if abs(e - g) > tolerance:
            bad.append('%s: measured %.1f%%, profile %.1f%%' % (k, e, g))
    if enforce:
        check(not bad, 'shares off by more than %g points: %s' % (tolerance, '; '.join(bad)))
    elif bad:
        log('(not asserted) shares off by more than %g points: %s' % (tolerance, '; '.join(bad)))


def delta(after, before):
    return {k: after[k] - before.get(k, 0.0) for k in after}

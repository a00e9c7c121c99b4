"""Per-thread resources running out: no thread may be left out silently.

tests/targets/many_threads.py starts 300 waiting threads (301 with its main thread). hwspy
attaches to it (or launches it) under a low limit; afterwards every thread must be accounted
for: the "T threads" of the summary plus the K of "K of M threads not profiled: WHY" make the
target's thread count (M is that count too), WHY names the limit, and the pprof output keeps the
same in its comments ("threads: T", "threads not profiled: K", "threads not profiled, why: WHY").
--case:
  nofile        prlimit --nofile=256 (soft and hard): threads beyond the fds are counted, "out of
                file descriptors (ulimit -n 256)"; --mode capture (default), nonblocking, ptrace
  nofile-raise  prlimit --nofile=256:4096: hwspy raises its soft limit to the hard one and
                profiles every thread
  memlock       as root without CAP_IPC_LOCK (setpriv --bounding-set=-ipc_lock), prlimit
                --memlock=2 MiB: with a ring per thread (--ptrace), threads whose ring does not
                fit are counted, "over the locked-memory limit (RLIMIT_MEMLOCK 2048 KiB ...
                kernel.perf_event_mlock_kb ...)"; with a ring per CPU (the BPF capture,
                --nonblocking) every thread is profiled
  memlock-user  as a user of its own (uid 47235, so that no other process shares its
                kernel.perf_event_mlock_kb allowance), a helper process of that user first fills
                the allowance; then hwspy launches the workload (10 threads) with --memlock=0:
                it fails, naming RLIMIT_MEMLOCK and kernel.perf_event_mlock_kb (it used to say
                "run hwspy as root"); with --memlock=128 KiB and --ptrace (a ring per thread):
                rings are shrunk ("threads got a smaller ring") and the threads that still do
                not fit are counted; with --nonblocking (a ring per CPU): the per-CPU rings are
                shrunk and every thread is profiled
"""
import gzip
import json
import os
import re
import shutil
import sys

import harness
from harness import Skip, check, log

N_THREADS = 300
USER_ID = 47235
SUMMARY = re.compile(r'(\d+) samples, weight \d+, \d+ lost, \d+ dropped, (\d+) threads')
MISSED = re.compile(r'^hwspy: (\d+) of (\d+) threads not profiled: (.*?)(; raise the limit to '
                    r'profile them)?$', re.M)
SHRUNK = re.compile(r'^hwspy: (\d+) threads got a smaller ring, down to (\d+) KiB \(not (\d+) '
                    r'KiB\)', re.M)

# Holds perf rings (a dummy event on itself) until their size is twice the per-user allowance
# (kernel.perf_event_mlock_kb per online CPU) or its own RLIMIT_MEMLOCK refuses one more (the
# allowance is used up then too), prints "full BYTES", then waits for stdin to end.
HOLDER = r'''
import ctypes, mmap, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
with open('/proc/sys/kernel/perf_event_mlock_kb') as f:
    kb = int(f.read())
want = 2 * kb * 1024 * os.cpu_count()
# perf_event_attr: type SOFTWARE, size, config DUMMY, then disabled, exclude_kernel, exclude_hv
attr = struct.pack('IIQQQQQ', 1, 128, 9, 0, 0, 0, 1 | 1 << 5 | 1 << 6).ljust(128, b'\0')
keep, have = [], 0
while have < want:
    fd = libc.syscall(298, attr, 0, -1, -1, 0)
    if fd < 0:
        print('noperf %s' % os.strerror(ctypes.get_errno()), flush=True)
        sys.exit(0)
    try:
        keep.append(mmap.mmap(fd, 129 * 4096, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE))
    except PermissionError:
        break
    have += 129 * 4096
print('full %d' % have, flush=True)
sys.stdin.read()
'''


def pprof_comments(path):
    """The comments of a gzipped pprof file, decoded here (string_table 6, comment 13)."""
    with open(path, 'rb') as f:
        data = gzip.decompress(f.read())
    strs, comments, i = [], [], 0

    def varint(buf, i):
        v = shift = 0
        while True:
            b = buf[i]
            i += 1
            v |= (b & 0x7f) << shift
            shift += 7
            if not b & 0x80:
                return v, i
    while i < len(data):
        key, i = varint(data, i)
        if key & 7 == 0:
            v, i = varint(data, i)
            if key >> 3 == 13:
                comments.append(v)
        elif key & 7 == 2:
            n, i = varint(data, i)
            v, i = data[i:i + n], i + n
            if key >> 3 == 6:
                strs.append(v.decode('utf-8'))
            elif key >> 3 == 13:
                j = 0
                while j < len(v):
                    c, j = varint(v, j)
                    comments.append(c)
        else:
            raise harness.Fail('pprof: unexpected wire type %d' % (key & 7))
    return [strs[c] for c in comments]


def accounted(run, n_threads, why_words):
    """Every one of the target's n_threads threads is profiled or counted with its reason in
    the summary and in the profile; returns (profiled, left out)."""
    check(run.rc == 0, 'hwspy exited %s, expected 0 (a profile of the threads it could get)'
          % run.rc)
    m = SUMMARY.search(run.stderr)
    check(m, 'no "N samples, ..., T threads" line in the summary')
    seen = int(m.group(2))
    missed = MISSED.search(run.stderr)
    comments = pprof_comments(run.out_path)
    log('pprof comments: %s' % comments)
    check('threads: %d' % seen in comments, 'no "threads: %d" comment in the profile' % seen)
    if not missed:
        check(seen == n_threads, '%d threads profiled, none said to be left out, but the target '
              'has %d' % (seen, n_threads))
        check(not any(c.startswith('threads not profiled') for c in comments),
              'every thread profiled, yet the profile says some were not')
        return seen, 0
    k, total, why = int(missed.group(1)), int(missed.group(2)), missed.group(3)
    log('profiled %d, not profiled %d of %d: %s' % (seen, k, total, why))
    check(total == n_threads, 'the summary counts %d threads, the target has %d'
          % (total, n_threads))
    check(seen + k == n_threads, '%d profiled + %d not profiled != the target\'s %d threads'
          % (seen, k, n_threads))
    for w in why_words:
        check(w in why, 'the reason "%s" does not say %r' % (why, w))
    check('threads not profiled: %d' % k in comments,
          'no "threads not profiled: %d" comment in the profile' % k)
    check('threads not profiled, why: %s' % why in comments,
          'no "threads not profiled, why: %s" comment in the profile' % why)
    return seen, k


def start_target(opts):
    w = harness.Process(opts.py.argv + [os.path.join(opts.targets, 'many_threads.py'),
                                        str(N_THREADS)])
    n = json.loads(w.readline())['threads']
    log('workload pid %d: %d threads' % (w.pid, n))
    return w, n


def record_pprof(opts, args, name, prefix, hwspy=None):
    """hwspy record ARGS writing TMP/name.pb.gz (the last -o given wins)."""
    out = os.path.join(opts.tmp, name + '.pb.gz')
    run = harness.record(opts, ['-o', out] + args, name=name, prefix=prefix, hwspy=hwspy)
    run.out_path = out
    return run


def record_attached(opts, w, n, prefix, args, name):
    run = record_pprof(opts, ['-p', str(w.pid), '-d', '1.5'] + args, name, prefix)
    now = len(os.listdir('/proc/%d/task' % w.pid))
    check(now == n, 'the workload has %d threads now, %d before: the count is not fixed' % (now, n))
    harness.check_untouched(w.pid)
    return run


def mode_args(opts):
    return {'capture': [], 'nonblocking': ['--nonblocking'], 'ptrace': ['--ptrace']}[opts.mode]


def need_root():
    if os.geteuid() != 0:
        raise Skip('needs root (prlimit beyond the hard limits, setpriv)')
    for tool in ('prlimit', 'setpriv'):
        if not shutil.which(tool):
            raise Skip('%s (util-linux) is not installed' % tool)


def case_nofile(opts):
    need_root()
    w, n = start_target(opts)
    run = record_attached(opts, w, n, ['prlimit', '--nofile=256'], mode_args(opts), 'nofile')
    seen, k = accounted(run, n, ['out of file descriptors (ulimit -n 256)'])
    check(seen > 0, 'no thread profiled at all')


def case_nofile_raise(opts):
    need_root()
    w, n = start_target(opts)
    run = record_attached(opts, w, n, ['prlimit', '--nofile=256:4096'], mode_args(opts),
                          'nofile-raise')
    seen, k = accounted(run, n, [])
    check(k == 0, '%d threads not profiled: the soft fd limit was not raised to the hard one' % k)


def case_memlock(opts):
    need_root()
    w, n = start_target(opts)
    run = record_attached(opts, w, n, ['prlimit', '--memlock=%d' % (2 << 20), 'setpriv',
                                       '--bounding-set=-ipc_lock'], mode_args(opts), 'memlock')
    seen, k = accounted(run, n, ['over the locked-memory limit', 'RLIMIT_MEMLOCK 2048 KiB',
                                 'kernel.perf_event_mlock_kb'])
    if opts.mode != 'ptrace':
        check(k == 0, '%d threads not profiled with a ring per CPU' % k)
    else:
        check(k > 0, 'every thread got a ring within 2 MiB of locked memory: raise N_THREADS')
    check('run hwspy as root' not in run.stderr, 'hwspy, as root, says to run it as root')


def case_memlock_user(opts):
    need_root()
    user = ['setpriv', '--reuid=%d' % USER_ID, '--regid=%d' % USER_ID, '--clear-groups']
    exe = os.path.join(opts.tmp, 'hwspy')
    shutil.copy(opts.hwspy, exe)
    os.chmod(exe, 0o755)
    target = os.path.join(opts.tmp, 'many_threads.py')
    shutil.copy(os.path.join(opts.targets, 'many_threads.py'), target)
    os.chmod(target, 0o644)
    os.chmod(opts.tmp, 0o777)
    holder = harness.Process(user + [sys.executable, '-c', HOLDER])
    line = holder.readline()
    if line.startswith('noperf '):
        raise Skip('a user without privileges cannot open perf events here (%s; '
                   'kernel.perf_event_paranoid > 2?)' % line[7:])
    check(line.startswith('full '), 'the ring holder printed %r' % line)
    log('uid %d holds %s bytes of perf rings: its kernel.perf_event_mlock_kb allowance is used up'
        % (USER_ID, line.split()[1]))
    cmd = ['--', sys.executable, target, '10', '2']

    run = record_pprof(opts, ['--nonblocking'] + cmd, 'zero', ['prlimit', '--memlock=0'] + user,
                       exe)
    check(run.rc != 0, 'hwspy got a ring with RLIMIT_MEMLOCK 0 and no allowance left')
    check('run hwspy as root' not in run.stderr,
          'a low RLIMIT_MEMLOCK is reported as "run hwspy as root"')
    check(re.search(r'^hwspy: .*RLIMIT_MEMLOCK 0 KiB.*kernel\.perf_event_mlock_kb', run.stderr,
                    re.M), 'the error does not name RLIMIT_MEMLOCK (0 KiB) and '
          'kernel.perf_event_mlock_kb')

    run = record_pprof(opts, ['--ptrace'] + cmd, 'small',
                       ['prlimit', '--memlock=%d' % (128 << 10)] + user, exe)
    m = re.search(r'\{"threads": (\d+)\}', run.stdout)
    check(m, 'the launched workload did not print its thread count')
    seen, k = accounted(run, int(m.group(1)), ['over the locked-memory limit',
                                              'RLIMIT_MEMLOCK 128 KiB'])
    s = SHRUNK.search(run.stderr)
    check(s, 'no "threads got a smaller ring" line: no ring was shrunk to fit 128 KiB')
    log('%s threads got rings down to %s KiB, not %s KiB' % s.groups())
    check(int(s.group(2)) < int(s.group(3)) and int(s.group(2)) <= 128,
          'the rings were not made smaller than asked')
    check(seen >= 1 and k >= 1, 'expected some threads profiled and some left out in 128 KiB')

    run = record_pprof(opts, ['--nonblocking'] + cmd, 'percpu',
                       ['prlimit', '--memlock=%d' % (128 << 10)] + user, exe)
    m = re.search(r'\{"threads": (\d+)\}', run.stdout)
    check(m, 'the launched workload did not print its thread count')
    seen, k = accounted(run, int(m.group(1)), [])
    check(k == 0, '%d threads not profiled with a ring per CPU' % k)
    check(re.search(r'^hwspy: \d+ of \d+ per-CPU rings are smaller', run.stderr, re.M),
          'no "per-CPU rings are smaller" line: the rings were not shrunk to fit 128 KiB')
    holder.quit()


CASES = {'nofile': case_nofile, 'nofile-raise': case_nofile_raise, 'memlock': case_memlock,
         'memlock-user': case_memlock_user}


def test(opts):
    CASES[opts.case](opts)


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--case', required=True, choices=sorted(CASES))
    p.add_argument('--mode', default='capture', choices=['capture', 'nonblocking', 'ptrace'])
    harness.main(test, p)

#!/usr/bin/env python3
"""hwspy's own cost, case by case, beside perf's on the same target in the same run (issue 24's
table). Each profiler attaches to a fresh bench/deep_target.py (a 3.12 target spinning at the
bottom of DEPTH distinct frames), and


  per sample   the profiler's CPU (schedstat of its threads, read every 0.1 s) from 1 s after it
               started to 0.2 s before it ended, over the samples it took meanwhile; a 0.1 s
               interval in which its RSS grew by over 2 MB is left out as a one-off load (a
               library's DWARF read at its first sample there: 0.3-0.5 s of CPU for libc's),
               and the row says how many were
  fixed part   F in CPU/s = F + c x samples/s, fitted over the 100 Hz and the 1 kHz cases
  interpreters the 1 kHz case again on 3.11 and Debian's 3.13 and 3.14 (their shims and code
               words differ from 3.12's), each where it runs here, with the target's stall
               and the BPF program's time per sample from the same runs
  start-up     the whole CPU of a 0.2 s recording
  RSS          the profiler's peak resident set (VmHWM) on a 128-thread target
  in target    what each sample costs the target's own time at 1 kHz: the time its spin loop
               was held up (gaps of over 5 us between two looks at the clock, bench/overhead.py's
               method) per second while sampled, less the same in the lead before (paired, so
               the VM's drift cancels), per sample; perf's own sampling interrupt is in it
  BPF program  of that, hwspy's capture program alone: the kernel's run_time_ns over run_cnt
               of hwspy's programs (kernel.bpf_stats_enabled on for the run, /proc/PID/fdinfo
               read while it runs), in the same runs; and at depth 60 on stacks of one
               function's recursion and of a wrapper at every other frame (deep_target.py's
               shapes), whose code the program reads once a sample
  --off-cpu    bench/offcpu.py's pipe ping-pong: the target's slowdown under hwspy --off-cpu
               and under perf record -e sched:sched_switch -g, both pinned as there

Figures are medians of --repeat runs; the VM's noise is a few percent, so the 100 Hz in-target
figures are left out (a 10 us sample is 0.1% there). Usage:

    /usr/bin/python3 bench/table.py [--repeat 3] [--long 10] [--quick]

It takes about 13 minutes at the defaults (--quick: one run each of 4 s, about 4)."""
import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import offcpu  # noqa: E402
import procstat  # noqa: E402

LEAD = 1.0              # seconds of the target alone before the profiler attaches
TRIM_NS = 200_000_000   # cut at each end of a window
WARM_NS = 1_000_000_000 # the profiler's start-up, left out of its steady CPU
POLL = 0.1              # seconds between readings of the profiler's CPU and RSS
HWM_POLL = 0.01         # seconds between readings of its peak RSS (VmHWM)
ONE_OFF_KB = 2048       # RSS growth in one reading that marks a one-off load
SAMPLES_HWSPY = re.compile(r"wrote .*\(([\d,]+) samples")
SAMPLES_PERF = re.compile(r"\((\d+) samples\)")


def run_one(args, argv_of, depth, seconds, threads=1, shape='distinct'):
    """One recording of seconds by the command argv_of(pid, seconds, out) on a fresh target:
    (samples, CPU s, peak RSS KB, target's stall ns/s before, the same while sampled, the
    recording's seconds, steady CPU s/s, intervals left out as one-off loads).

    The peak is the profiler's VmHWM, read every HWM_POLL s (what it reaches in its last
    ~10 ms is missed), not wait4()'s ru_maxrss: Python starts a child by vfork(), and exec
    carries the high-water mark of the memory it replaces, the parent's (this script's
    ~14-16 MB), into the child's ru_maxrss."""
    with tempfile.TemporaryDirectory() as tmp:
        target = subprocess.Popen([args.python, os.path.join(HERE, 'deep_target.py'),
                                   str(depth), str(LEAD + seconds + 2), str(threads), shape],
                                  stdout=subprocess.PIPE, text=True)
        pid = int(target.stdout.readline().split()[1])
        time.sleep(LEAD)
        t0 = time.monotonic_ns()
        prof = subprocess.Popen(argv_of(pid, seconds, os.path.join(tmp, 'x')),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        readings = []
        progs = (0, 0)
        peak, next_ns = 0, 0
        while True:
            now = time.monotonic_ns()
            if now >= next_ns:
                next_ns = now + int(POLL * 1e9)
                cpu, rss = procstat.task_cpu_ns(prof.pid), vm_kb(prof.pid, 'VmRSS')
                progs = bpf_prog_stats(prof.pid) or progs
            else:
                cpu = rss = None
            peak = max(peak, vm_kb(prof.pid, 'VmHWM') or 0)
            done, status, ru = os.wait4(prof.pid, os.WNOHANG)
            if done:
                break
            if cpu is not None and rss is not None:
                readings.append((time.monotonic_ns(), cpu, rss))
            time.sleep(HWM_POLL)
        err = prof.stderr.read()
        prof.returncode = os.waitstatus_to_exitcode(status)
        t1 = time.monotonic_ns()
        target.kill()
        points = [tuple(map(int, line.split())) for line in target.stdout]
        target.wait()
    m = SAMPLES_HWSPY.search(err) or SAMPLES_PERF.search(err)
    if prof.returncode != 0 or not m:
        raise RuntimeError('%s failed (%d): %s' % (' '.join(argv_of(pid, seconds, 'x')),
                                                    prof.returncode, err.strip()[-300:]))

    def stall(a, b):
        inside = [p for p in points if a <= p[0] <= b]
        if len(inside) < 2:
            return None
        return (inside[-1][2] - inside[0][2]) / ((inside[-1][0] - inside[0][0]) / 1e9)

    return (int(m.group(1).replace(',', '')), ru.ru_utime + ru.ru_stime, peak,
            stall(t0 - int(LEAD * 1e9) + TRIM_NS, t0), stall(t0 + TRIM_NS, t1 - TRIM_NS),
            (t1 - t0) / 1e9) + steady_cpu(readings, t0 + WARM_NS, t1 - TRIM_NS) + progs


def bpf_prog_stats(pid):
    """The run_time_ns and run_cnt of pid's BPF programs, summed (a program reached by a tail
    call counts in its caller's), or None where it has none (yet)."""
    ns = cnt = 0
    try:
        fds = os.listdir('/proc/%d/fdinfo' % pid)
    except OSError:
        return None
    for fd in fds:
        try:
            with open('/proc/%d/fdinfo/%s' % (pid, fd)) as f:
                info = dict(line.split(':', 1) for line in f if ':' in line)
        except OSError:
            continue
        if 'run_cnt' in info:
            ns += int(info['run_time_ns'])
            cnt += int(info['run_cnt'])
    return (ns, cnt) if cnt else None


class BpfStats:
    """kernel.bpf_stats_enabled on inside the block (the programs' run times), as it was after."""
    PATH = '/proc/sys/kernel/bpf_stats_enabled'

    def __enter__(self):
        try:
            with open(self.PATH) as f:
                self.was = f.read().strip()
            with open(self.PATH, 'w') as f:
                f.write('1')
        except OSError:
            self.was = None
        return self

    def __exit__(self, *exc):
        if self.was is not None:
            with open(self.PATH, 'w') as f:
                f.write(self.was)


def vm_kb(pid, field):
    """/proc/PID/status's field ('VmRSS', 'VmHWM') in KB, or None."""
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith(field + ':'):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def steady_cpu(readings, a, b):
    """CPU s per s between readings inside [a, b], without the intervals of one-off loads:
    (CPU s/s or None, intervals left out)."""
    cpu = wall = 0
    left_out = 0
    for (ta, ca, ra), (tb, cb, rb) in zip(readings, readings[1:]):
        if ta < a or tb > b:
            continue
        if rb - ra > ONE_OFF_KB:
            left_out += 1
            continue
        cpu += cb - ca
        wall += tb - ta
    return (cpu / wall if wall else None), left_out


def target_us(r):
    """What a sample of run r cost the target (us), or None."""
    if r[3] is None or r[4] is None or not r[0]:
        return None
    return (r[4] - r[3]) / 1e3 / (r[0] / r[5])


def profilers(args):
    """name -> (argv_of(rate, native) -> argv_of(pid, seconds, out))."""
    hw = args.hwspy

    def hwspy(rate, native=False):
        return lambda pid, s, out: [hw, 'record', '-p', str(pid), '-e', 'cpu-clock', '-F',
                                    str(rate), '-d', str(s), '-o', out + '.folded'] + \
            (['--native'] if native else [])

    def perf(rate, native=False):
        return lambda pid, s, out: ['perf', 'record', '-e', 'cpu-clock', '-F', str(rate)] + \
            (['--call-graph', 'dwarf'] if native else ['-g']) + \
            ['-p', str(pid), '-o', out + '.data', '--', 'sleep', str(s)]

    p = {'hwspy': hwspy}
    if args.perf and shutil.which('perf'):
        p['perf'] = perf
    return p


def other_pythons():
    """(label, interpreter) of 3.11 (pyenv's) and Debian's 3.13 and 3.14 (tests/setup-pythons.sh),
    those that run here."""
    found = []
    for label, path in [('3.11', '/root/.pyenv/versions/3.11.7/bin/python3.11'),
                        ('Debian 3.13', os.path.join(HERE, '..', 'deps', 'debian', 'python3.13')),
                        ('Debian 3.14', os.path.join(HERE, '..', 'deps', 'debian', 'python3.14'))]:
        if os.access(path, os.X_OK) and \
                subprocess.run([path, '-c', 'pass'], capture_output=True).returncode == 0:
            found.append((label, path))
    return found


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def steady(args, make, depth, rate, native=False):
    """Per-sample steady CPU (us), CPU/s, samples/s, in-target us per sample (medians), and the
    intervals left out as one-off loads (all runs)."""
    per, cpu_s, smp_s, tgt, left_out = [], [], [], [], 0
    for _ in range(args.repeat):
        r = run_one(args, make(rate, native), depth, args.long)
        left_out += r[7]
        if r[6] is None or not r[0]:
            continue
        cpu_s.append(r[6])
        smp_s.append(r[0] / r[5])
        per.append(1e6 * r[6] / (r[0] / r[5]))
        tgt.append(target_us(r))
    return med(per), med(cpu_s), med(smp_s), med(tgt), left_out


def in_target(args, make, depth, shape='distinct'):
    """What a sample at 1 kHz costs the target's own time (us), from long runs alone, and of
    that the profiler's BPF programs (us a run; None: it has none)."""
    tgt, prog = [], []
    with BpfStats():
        for _ in range(args.repeat):
            r = run_one(args, make(1000), depth, args.long / 2, shape=shape)
            tgt.append(target_us(r))
            prog.append(r[8] / r[9] / 1e3 if r[9] else None)
    return med(tgt), med(prog)


def interpreter_case(args, make):
    """At 1 kHz, depth 60: the profiler's steady CPU per sample, what a sample costs the
    target, and of that the BPF programs (us, medians; None: none), from the same runs."""
    per, tgt, prog = [], [], []
    with BpfStats():
        for _ in range(args.repeat):
            r = run_one(args, make(1000), 60, args.long)
            if r[6] is not None and r[0]:
                per.append(1e6 * r[6] / (r[0] / r[5]))
            tgt.append(target_us(r))
            prog.append(r[8] / r[9] / 1e3 if r[9] else None)
    return med(per), med(tgt), med(prog)


def fmt(v, unit='us', digits=1):
    return '-' if v is None else '%.*f %s' % (digits, v, unit)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--repeat', type=int, default=3)
    ap.add_argument('--long', type=float, default=10.0)
    ap.add_argument('--quick', action='store_true', help='--repeat 1 --long 4')
    ap.add_argument('--python', default='/root/.pyenv/versions/3.12.1/bin/python3.12')
    ap.add_argument('--hwspy', default=os.path.join(HERE, '..', 'build', 'cli', 'hwspy'))
    ap.add_argument('--perf', default='perf', help="'' leaves perf out")
    args = ap.parse_args()
    if args.quick:
        args.repeat, args.long = 1, 4.0
    profs = profilers(args)
    rows = []

    def row(case, goal, cells):
        rows.append((case, goal, cells))
        print('  %-34s %s' % (case, '   '.join('%s %s' % (n, c) for n, c in cells.items())),
              flush=True)

    fits = {}
    for depth, rate, native, case, goal in [
            (60, 100, False, 'exact, 100 Hz, depth 60', '<= 10 us'),
            (60, 1000, False, 'exact, 1 kHz, depth 60', '<= 5 us'),
            (300, 100, False, 'exact, 100 Hz, depth 300', '<= 30 us'),
            (60, 100, True, '--native, 100 Hz, depth 60', '<= 60 us')]:
        cells = {}
        for name, make in profs.items():
            per, cpu_s, smp_s, tgt, left_out = steady(args, make, depth, rate, native)
            cells[name] = fmt(per) + ('' if rate < 1000 else ' (in target %s)' % fmt(tgt)) + \
                ('' if not left_out else ' [%d one-off loads left out]' % left_out)
            if depth == 60 and not native:
                fits.setdefault(name, []).append((smp_s, cpu_s))
        row(case, goal, cells)
    cells = {}
    for name, pts in fits.items():
        if len(pts) == 2 and None not in pts[0] + pts[1] and pts[1][0] != pts[0][0]:
            c = (pts[1][1] - pts[0][1]) / (pts[1][0] - pts[0][0])
            cells[name] = 'F %.1f ms/s, c %.1f us' % (1e3 * (pts[0][1] - c * pts[0][0]), 1e6 * c)
    row('fixed part (F + c x rate)', 'F <= 1 ms/s', cells)

    # the 1 kHz row on the other interpreters that differ most (3.13+: shims, the code's
    # generation word), where they are here
    for label, python in other_pythons():
        cells = {}
        pargs = argparse.Namespace(**vars(args))
        pargs.python = python
        for name, make in profs.items():
            per, tgt, prog = interpreter_case(pargs, make)
            cells[name] = fmt(per) + ' (in target %s%s)' % (
                fmt(tgt), '' if prog is None else ', BPF %s' % fmt(prog))
        row('exact, 1 kHz, depth 60, %s' % label, '<= 5 us', cells)

    cells = {}
    for name, make in profs.items():
        cpu = med(run_one(args, make(100), 60, 0.2)[1] for _ in range(args.repeat))
        cells[name] = fmt(1e3 * cpu, 'ms')
    row('start-up (0.2 s recording, all CPU)', '<= 30 ms', cells)

    cells = {}
    for name, make in profs.items():
        rss = med(run_one(args, make(100), 60, 2, threads=128)[2] for _ in range(args.repeat))
        cells[name] = fmt(rss / 1024, 'MB')
    row('RSS, 128 threads', '<= 16 MB', cells)

    cells, prog_cells = {}, {}
    for name, make in profs.items():
        figures = [in_target(args, make, depth) for depth in (5, 60, 200)]
        cells[name] = ' / '.join(fmt(f[0]) for f in figures)
        prog_cells[name] = ' / '.join(fmt(f[1]) for f in figures)
    row('in target at 1 kHz, depth 5/60/200', "near perf's", cells)
    row('BPF capture alone, depth 5/60/200', '<= 5/10/25 us', prog_cells)
    cells = {}
    if 'hwspy' in profs:                # perf has no program
        figures = [in_target(args, profs['hwspy'], 60, shape)
                   for shape in ('recursion', 'wrapper')]
        cells['hwspy'] = ' / '.join(fmt(f[1]) for f in figures)
    row('BPF capture alone, depth 60: recursion / wrapper', '<= 10 us', cells)

    oargs = argparse.Namespace(hwspy=args.hwspy, python=args.python, lead=1.5, window=3.0,
                               work=0, target_cpu=0, profiler_cpu=1)
    with tempfile.TemporaryDirectory() as tmp:
        cells = {}
        for name, cmd in offcpu.configs(oargs, tmp):
            if name not in ('hwspy --off-cpu', 'perf sched_switch -g'):
                continue
            runs = [offcpu.one(oargs, cmd) for _ in range(args.repeat)]
            slow = med(1 - r[2] / r[1] for r in runs if r[1] and r[2])
            cells[name.split()[0]] = fmt(None if slow is None else 100 * slow, '%')
        row('--off-cpu ping-pong slowdown', "<= perf's", cells)

    print('\n| case | goal | %s |' % ' | '.join(profs))
    print('|---|---|%s' % ('---|' * len(profs)))
    for case, goal, cells in rows:
        print('| %s | %s | %s |' % (case, goal, ' | '.join(cells.get(n, '-') for n in profs)))
    return 0


if __name__ == '__main__':
    sys.exit(main())

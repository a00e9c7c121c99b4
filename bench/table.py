#!/usr/bin/env python3
"""hwspy's own cost, case by case, beside perf's on the same target in the same run (issue 24's
table). Each profiler attaches to a fresh bench/deep_target.py (a 3.12 target spinning at the
bottom of DEPTH distinct frames) for a long and a short recording; the difference cancels
start-up, so that

  per sample   (CPU long - CPU short) / (samples long - samples short), the profiler's own
               rusage (perf's includes the work it defers to its exit)
  fixed part   F in CPU/s = F + c x samples/s, fitted over the 100 Hz and the 1 kHz cases
  start-up     the whole CPU of a 0.2 s recording
  RSS          the profiler's max resident set on a 128-thread target
  in target    what each sample costs the target's own time at 1 kHz: its spin loop's rate
               while sampled against its rate in the lead before (paired, so the VM's drift
               cancels), as (1 - rate sampled / rate before) / samples per second
  --off-cpu    bench/offcpu.py's pipe ping-pong: the target's slowdown under hwspy --off-cpu
               and under perf record -e sched:sched_switch -g, both pinned as there

Figures are medians of --repeat runs; the VM's noise is a few percent, so the 100 Hz in-target
figures are left out (a 10 us sample is 0.1% there). Usage:

    /usr/bin/python3 bench/table.py [--repeat 3] [--long 10] [--short 2] [--quick]

It takes about 15 minutes at the defaults (--quick: one run each, 4 s and 1 s, about 3)."""
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

LEAD = 1.0              # seconds of the target alone before the profiler attaches
TRIM_NS = 200_000_000   # cut at each end of a window
SAMPLES_HWSPY = re.compile(r"wrote .*\(([\d,]+) samples")
SAMPLES_PERF = re.compile(r"\((\d+) samples\)")


def run_one(args, argv_of, depth, seconds, threads=1):
    """One recording of seconds by the command argv_of(pid, seconds, out) on a fresh target:
    (samples, CPU s, max RSS KB, target rate before, target rate while sampled)."""
    with tempfile.TemporaryDirectory() as tmp:
        target = subprocess.Popen([args.python, os.path.join(HERE, 'deep_target.py'),
                                   str(depth), str(LEAD + seconds + 2), str(threads)],
                                  stdout=subprocess.PIPE, text=True)
        pid = int(target.stdout.readline().split()[1])
        time.sleep(LEAD)
        t0 = time.monotonic_ns()
        prof = subprocess.Popen(argv_of(pid, seconds, os.path.join(tmp, 'x')),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        err = prof.stderr.read()
        _, status, ru = os.wait4(prof.pid, 0)
        prof.returncode = os.waitstatus_to_exitcode(status)
        t1 = time.monotonic_ns()
        target.kill()
        points = [tuple(map(int, line.split())) for line in target.stdout]
        target.wait()
    m = SAMPLES_HWSPY.search(err) or SAMPLES_PERF.search(err)
    if prof.returncode != 0 or not m:
        raise RuntimeError('%s failed (%d): %s' % (' '.join(argv_of(pid, seconds, 'x')),
                                                    prof.returncode, err.strip()[-300:]))

    def rate(a, b):
        inside = [p for p in points if a <= p[0] <= b]
        if len(inside) < 2:
            return None
        return (inside[-1][1] - inside[0][1]) / ((inside[-1][0] - inside[0][0]) / 1e9)

    return (int(m.group(1).replace(',', '')), ru.ru_utime + ru.ru_stime, ru.ru_maxrss,
            rate(t0 - int(LEAD * 1e9) + TRIM_NS, t0), rate(t0 + TRIM_NS, t1 - TRIM_NS),
            (t1 - t0) / 1e9)


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


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def steady(args, make, depth, rate, native=False):
    """Per-sample CPU (us), CPU/s and samples/s of the long runs, in-target us per sample."""
    per, cpu_s, smp_s, tgt = [], [], [], []
    for _ in range(args.repeat):
        lg = run_one(args, make(rate, native), depth, args.long)
        sh = run_one(args, make(rate, native), depth, args.short)
        if lg[0] > sh[0]:
            per.append(1e6 * (lg[1] - sh[1]) / (lg[0] - sh[0]))
        cpu_s.append((lg[1] - sh[1]) / (lg[5] - sh[5]))
        smp_s.append((lg[0] - sh[0]) / (lg[5] - sh[5]))
        if lg[3] and lg[4] and lg[0]:
            tgt.append(1e6 * (1 - lg[4] / lg[3]) / (lg[0] / lg[5]))
    return med(per), med(cpu_s), med(smp_s), med(tgt)


def in_target(args, make, depth):
    """What a sample at 1 kHz costs the target's own time (us), from long runs alone."""
    tgt = []
    for _ in range(args.repeat):
        r = run_one(args, make(1000), depth, args.long / 2)
        if r[3] and r[4] and r[0]:
            tgt.append(1e6 * (1 - r[4] / r[3]) / (r[0] / r[5]))
    return med(tgt)


def fmt(v, unit='us', digits=1):
    return '-' if v is None else '%.*f %s' % (digits, v, unit)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--repeat', type=int, default=3)
    ap.add_argument('--long', type=float, default=10.0)
    ap.add_argument('--short', type=float, default=2.0)
    ap.add_argument('--quick', action='store_true', help='--repeat 1 --long 4 --short 1')
    ap.add_argument('--python', default='/root/.pyenv/versions/3.12.1/bin/python3.12')
    ap.add_argument('--hwspy', default=os.path.join(HERE, '..', 'build', 'cli', 'hwspy'))
    ap.add_argument('--perf', default='perf', help="'' leaves perf out")
    args = ap.parse_args()
    if args.quick:
        args.repeat, args.long, args.short = 1, 4.0, 1.0
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
            per, cpu_s, smp_s, tgt = steady(args, make, depth, rate, native)
            cells[name] = fmt(per) + ('' if rate < 1000 else ' (in target %s)' % fmt(tgt))
            if depth == 60 and not native:
                fits.setdefault(name, []).append((smp_s, cpu_s))
        row(case, goal, cells)
    cells = {}
    for name, pts in fits.items():
        if len(pts) == 2 and None not in pts[0] + pts[1] and pts[1][0] != pts[0][0]:
            c = (pts[1][1] - pts[0][1]) / (pts[1][0] - pts[0][0])
            cells[name] = 'F %.1f ms/s, c %.1f us' % (1e3 * (pts[0][1] - c * pts[0][0]), 1e6 * c)
    row('fixed part (F + c x rate)', 'F <= 1 ms/s', cells)

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

    cells = {}
    for name, make in profs.items():
        cells[name] = ' / '.join(fmt(in_target(args, make, depth)) for depth in (5, 60, 200))
    row('in target at 1 kHz, depth 5/60/200', '<= 5/10/25 us', cells)

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

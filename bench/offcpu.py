#!/usr/bin/python3
"""What --off-cpu costs a switch-heavy target, beside perf and BPF tools on the same workload.

bench/pingpong_target.py passes a byte between two Python threads over two pipes (each round
trip blocks each thread once in a read: two switches off the CPU, what --off-cpu samples),
printing its round trips every 0.1 s. For
each configuration a fresh target runs --seconds; the profiler attaches after --lead seconds and
samples --window seconds. The target runs on --target-cpu (0), the profiler on --profiler-cpu (1). The target's rate
inside the profiler's window (less 0.3 s at each end) is compared with its own rate in the
--lead seconds before (paired baseline: the VM's drift cancels):

  switches/s   the target's switches off the CPU per second unprofiled: 2 x round trips/s
  slowdown     1 - rate profiled / rate before
  cpu/switch   the profiler's CPU time (its rusage) / switches sampled in the window

Configurations, interleaved run by run, --repeat times each:
  none                      a sleep stands in for the profiler
  hwspy --off-cpu           hwspy record --off-cpu -p PID -d WINDOW (BPF capture)
  hwspy --off-cpu --nonblocking
  perf sched_switch -g      perf record -e sched:sched_switch -g -p PID -- sleep WINDOW
                            (needs tracefs: mounted here if it is not; skipped if that fails)
  perf context-switches -g  perf record -e context-switches -c 1 -g -p PID -- sleep WINDOW
                            (the software event hwspy samples, with perf's own unwinding)
  offcputime                bcc's offcputime-bpfcc -p PID WINDOW, where installed

    /usr/bin/python3 bench/offcpu.py [--repeat 3] [--window 3] [--work N] [--python PY]
                                     [--hwspy PATH]
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TRIM_NS = 300_000_000


def tracefs_ok():
    if os.path.isdir('/sys/kernel/tracing/events'):
        return True
    r = subprocess.run(['mount', '-t', 'tracefs', 'nodev', '/sys/kernel/tracing'],
                       capture_output=True)
    return r.returncode == 0 and os.path.isdir('/sys/kernel/tracing/events')


def configs(args, tmp):
    hw = args.hwspy
    out = os.path.join(tmp, 'x')
    c = [('none', lambda pid, w: ['sleep', str(w)]),
         ('hwspy --off-cpu', lambda pid, w: [hw, 'record', '--off-cpu', '-q', '-p', str(pid),
                                             '-d', str(w), '-o', out + '.folded']),
         ('hwspy --off-cpu --nonblocking',
          lambda pid, w: [hw, 'record', '--off-cpu', '--nonblocking', '-q', '-p', str(pid),
                          '-d', str(w), '-o', out + '.folded'])]
    if shutil.which('perf'):
        if tracefs_ok():
            c.append(('perf sched_switch -g', lambda pid, w: [
                'perf', 'record', '-q', '-e', 'sched:sched_switch', '-g', '-p', str(pid),
                '-o', out + '.data', '--', 'sleep', str(w)]))
        else:
            print('perf sched_switch: skipped (no tracefs, and it would not mount)')
        c.append(('perf context-switches -g', lambda pid, w: [
            'perf', 'record', '-q', '-e', 'context-switches', '-c', '1', '-g', '-p', str(pid),
            '-o', out + '.data', '--', 'sleep', str(w)]))
    tool = shutil.which('offcputime-bpfcc') or shutil.which('offcputime')
    if tool:
        c.append(('offcputime', lambda pid, w: [tool, '-p', str(pid), str(int(w))]))
    else:
        print('offcputime (bcc): not installed here, skipped')
    return c


def one(args, cmd):
    # the target on one CPU, the profiler on the other: what the switches cost the target in
    # the kernel (its events, the program, the records), not how a busy CPU next to it wakes
    # it sooner (unpinned, the ping-pong ran twice as fast under every profiler: an idle
    # vCPU's wakeup latency gone)
    target = subprocess.Popen(['taskset', '-c', str(args.target_cpu), args.python,
                               os.path.join(HERE, 'pingpong_target.py'),
                               str(args.lead + args.window + 1.5), str(args.work)],
                              stdout=subprocess.PIPE, text=True)
    pid = int(target.stdout.readline().split()[1])
    time.sleep(args.lead)
    t0 = time.monotonic_ns()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    prof = subprocess.run(['taskset', '-c', str(args.profiler_cpu)] + cmd(pid, args.window),
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t1 = time.monotonic_ns()
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    points = [tuple(map(int, line.split())) for line in target.stdout]
    target.wait()

    def rate(a, b):
        inside = [p for p in points if a <= p[0] <= b]
        if len(inside) < 2:
            return None
        return (inside[-1][1] - inside[0][1]) / ((inside[-1][0] - inside[0][0]) / 1e9)

    before = rate(t0 - int(args.lead * 1e9) + TRIM_NS, t0)
    during = rate(t0 + TRIM_NS, t1 - TRIM_NS)
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    return prof.returncode, before, during, cpu, (t1 - t0) / 1e9


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--repeat', type=int, default=3)
    p.add_argument('--window', type=float, default=3.0)
    p.add_argument('--lead', type=float, default=1.5)
    p.add_argument('--work', type=int, default=0,
                   help='loop iterations per round trip (fewer switches per second)')
    p.add_argument('--target-cpu', type=int, default=0)
    p.add_argument('--profiler-cpu', type=int, default=1)
    p.add_argument('--python', default='/root/.pyenv/versions/3.12.1/bin/python3.12')
    p.add_argument('--hwspy', default=os.path.join(HERE, '..', 'build', 'cli', 'hwspy'))
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cs = configs(args, tmp)
        res = {name: [] for name, _ in cs}
        for _ in range(args.repeat):
            for name, cmd in cs:
                res[name].append(one(args, cmd))
    print('%-30s %12s %10s %14s %s' % ('configuration', 'switches/s', 'slowdown',
                                       'cpu/switch', 'runs'))
    for name, runs in res.items():
        ok = [r for r in runs if r[1] and r[2]]
        if not ok:
            print('%-30s %12s %10s %14s %s' % (name, '-', '-', '-', 'no rate measured'))
            continue
        sw = statistics.median(2 * r[1] for r in ok)
        slow = statistics.median(1 - r[2] / r[1] for r in ok)
        during = statistics.median(2 * r[2] for r in ok)
        cpu = statistics.median(r[3] / (2 * r[2] * r[4]) for r in ok) if name != 'none' else 0
        print('%-30s %12.0f %9.1f%% %11.1f us  rc %s, profiled %.0f switches/s' % (
            name, sw, 100 * slow, 1e6 * cpu, ','.join(str(r[0]) for r in runs), during))


if __name__ == '__main__':
    sys.exit(main())

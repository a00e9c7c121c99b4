#!/usr/bin/python3
"""hwspy top's own CPU beside hwspy record's: both attached to the same target at the same time.

The target is tests/targets/top_work.py (two threads, about 1.2 CPUs busy). `hwspy top -p PID`
runs in a tmux pane of its own (200x50, a private server: it needs a terminal) and
`hwspy record -p PID -o FILE -q` runs beside it, both at the same rate (-F, default 100 Hz) and
event (cpu-clock: no PMU on these VMs). After --warmup seconds (start-up: attaching, loading
symbols) each one's CPU time (schedstat of /proc/PID/task/*, nanoseconds) is read, again
--seconds later; the difference per second of wall time is its steady CPU use. The table gives
that for both, in percent of a CPU and in microseconds per target sample (the samples taken
meanwhile: the target's CPU time x the rate), --repeat times (medians, [min..max]).

  bench/top.py [--hwspy build/cli/hwspy] [--seconds 10] [--warmup 3] [--rate 100] [--repeat 1]

What top adds over record is its refresh (once a second: a view of the table sorted, the
screen drawn, /proc read) and reading keys every slice; its sampling is record's.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_s(pid):
    """Seconds on a CPU of every live thread of pid (schedstat: nanoseconds, not ticks)."""
    total = 0
    for tid in os.listdir('/proc/%d/task' % pid):
        try:
            with open('/proc/%d/task/%s/schedstat' % (pid, tid)) as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total / 1e9


def one(args, tmp):
    target = subprocess.Popen([sys.executable, os.path.join(ROOT, 'tests/targets/top_work.py')],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    target.stdout.readline()
    sock = 'hwspy-bench-top-%d' % os.getpid()
    rate = ['-e', 'cpu-clock', '-F', str(args.rate)]
    try:
        subprocess.run(['tmux', '-L', sock, 'new-session', '-d', '-x', '200', '-y', '50', '-s',
                        'b', ' '.join([os.path.abspath(args.hwspy), 'top', '-p',
                                       str(target.pid)] + rate) + ' 2>/dev/null'], check=True)
        pane = int(subprocess.run(['tmux', '-L', sock, 'display-message', '-p', '-t', 'b',
                                   '#{pane_pid}'], stdout=subprocess.PIPE, text=True,
                                  check=True).stdout)
        out = os.path.join(tmp, 'record.folded')
        record = subprocess.Popen([args.hwspy, 'record', '-p', str(target.pid), '-o', out,
                                   '-q'] + rate, stderr=subprocess.DEVNULL)
        time.sleep(args.warmup)
        kids = subprocess.run(['pgrep', '-P', str(pane)], stdout=subprocess.PIPE,
                              text=True).stdout.split()
        top = int(kids[0]) if kids else pane    # sh -c execs the last command itself
        t0, top0, rec0, tg0 = time.monotonic(), cpu_s(top), cpu_s(record.pid), cpu_s(target.pid)
        time.sleep(args.seconds)
        t1, top1, rec1, tg1 = time.monotonic(), cpu_s(top), cpu_s(record.pid), cpu_s(target.pid)
        record.send_signal(2)
        record.wait(30)
    finally:
        subprocess.run(['tmux', '-L', sock, 'kill-server'], stderr=subprocess.DEVNULL)
        path = os.path.join(os.environ.get('TMUX_TMPDIR', '/tmp'), 'tmux-%d' % os.getuid(), sock)
        if os.path.exists(path):
            os.unlink(path)
        target.kill()
        target.wait()
    wall = t1 - t0
    samples = (tg1 - tg0) * args.rate
    return {'top': (top1 - top0) / wall, 'record': (rec1 - rec0) / wall,
            'top_us': (top1 - top0) / samples * 1e6, 'record_us': (rec1 - rec0) / samples * 1e6,
            'target': (tg1 - tg0) / wall}


def fmt(xs, scale, unit):
    m = statistics.median(xs) * scale
    if len(xs) == 1:
        return '%.1f%s' % (m, unit)
    return '%.1f%s [%.1f..%.1f]' % (m, unit, min(xs) * scale, max(xs) * scale)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--hwspy', default=os.path.join(ROOT, 'build/cli/hwspy'))
    p.add_argument('--seconds', type=float, default=10)
    p.add_argument('--warmup', type=float, default=3)
    p.add_argument('--rate', type=int, default=100)
    p.add_argument('--repeat', type=int, default=1)
    args = p.parse_args()
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):
            runs.append(one(args, tmp))
    col = lambda k: [r[k] for r in runs]
    print('target: %s of a CPU; %d Hz, %g s after %g s of warm-up, %d run(s)'
          % (fmt(col('target'), 100, '%'), args.rate, args.seconds, args.warmup, len(runs)))
    print('%-14s %-22s %s' % ('', 'CPU (of one CPU)', 'per target sample'))
    for k in ['top', 'record']:
        print('%-14s %-22s %s' % ('hwspy ' + k, fmt(col(k), 100, '%'),
                                  fmt(col(k + '_us'), 1, ' us')))


if __name__ == '__main__':
    main()

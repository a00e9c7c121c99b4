#!/usr/bin/python3
"""What `hwspy stat` costs the target, beside `perf stat`, on a spinning target.

    /usr/bin/python3 bench/stat.py [--seconds 4] [--repeat 3] [--hwspy build/cli/hwspy]

bench/spin_target.py (pyenv's 3.11.7 by default) spins on time.perf_counter_ns() and records
every gap over 5 us. Each tool is attached to a fresh target for --seconds:

  unprofiled      `sleep SECS`
  stat            `hwspy stat -p PID -d SECS --no-profile` (the counters alone)
  stat+profile    `hwspy stat -p PID -d SECS` (the counters and the 100 Hz sampling run)
  perf stat       `perf stat -p PID -- sleep SECS` (its default events)

and the stall per second of running is the median, over 0.25 s slices of the window in which
the tool ran (less 0.3 s at each end), of the gap time in the slice: the extra stall per second
over the unprofiled runs' median is the tool's cost, printed in us/s and as a share of the
time; also the tool's own CPU (its rusage) per second. Counters cost the target nothing per
event (the kernel counts in hardware or at the context switch); what shows is the sampling
run's interrupts and the kernel's work at each switch.
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def default_python():
    root = subprocess.run(['pyenv', 'root'], capture_output=True, text=True).stdout.strip() \
        if shutil.which('pyenv') else os.path.expanduser('~/.pyenv')
    exe = os.path.join(root, 'versions', '3.11.7', 'bin', 'python3.11')
    return exe if os.access(exe, os.X_OK) else sys.executable


def stall_per_s(gaps, w0, w1, slice_ns=250_000_000):
    slices = {}
    for i in range(0, len(gaps), 3):
        if w0 <= gaps[i] < w1:
            k = (gaps[i] - w0) // slice_ns
            slices[k] = slices.get(k, 0) + gaps[i + 1]
    n = max(1, (w1 - w0) // slice_ns)
    # gap ns per slice -> us of stall per second
    return statistics.median([slices.get(k, 0) for k in range(n)]) * 1e6 / slice_ns


def run_once(a, tmp, mode, n):
    out = os.path.join(tmp, 'gaps-%d.json' % n)
    t = subprocess.Popen([a.python, os.path.join(HERE, 'spin_target.py'), out,
                          '--max-seconds', str(a.seconds * 4 + 30)], stdout=subprocess.PIPE,
                         text=True)
    t.stdout.readline()
    time.sleep(0.5)
    pid, secs = str(t.pid), str(a.seconds)
    cmd = {'unprofiled': ['sleep', secs],
           'stat': [a.hwspy, 'stat', '-q', '-p', pid, '-d', secs, '--no-profile'],
           'stat+profile': [a.hwspy, 'stat', '-q', '-p', pid, '-d', secs],
           'perf stat': ['perf', 'stat', '-p', pid, '--', 'sleep', secs]}[mode]
    t0 = time.monotonic_ns()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    t1 = time.monotonic_ns()
    t.send_signal(signal.SIGUSR1)
    t.wait(30)
    with open(out) as f:
        g = json.load(f)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit('%s failed: %s' % (mode, ' '.join(cmd)))
    trim = 300_000_000
    return (stall_per_s(g['gaps'], t0 + trim, t1 - trim),
            (ru.ru_utime + ru.ru_stime) / ((t1 - t0) / 1e9))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--seconds', type=float, default=4)
    ap.add_argument('--repeat', type=int, default=3)
    ap.add_argument('--python', default=default_python())
    ap.add_argument('--hwspy', default=os.path.join(ROOT, 'build', 'cli', 'hwspy'))
    a = ap.parse_args()
    modes = ['unprofiled', 'stat', 'stat+profile'] + (['perf stat'] if shutil.which('perf')
                                                      else [])
    res = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as tmp:
        n = 0
        for _ in range(a.repeat):           # modes interleaved: drift hits all alike
            for m in modes:
                n += 1
                res[m].append(run_once(a, tmp, m, n))
    base = statistics.median(s for s, _ in res['unprofiled'])
    print('%-14s %22s %20s %12s' % ('mode', 'stall us/s med [min..max]', 'extra us/s (share)',
                                     'tool CPU'))
    for m in modes:
        v = [x for x, _ in res[m]]
        s = statistics.median(v)
        cpu = statistics.median(c for _, c in res[m])
        print('%-14s %8.0f [%5.0f..%5.0f] %10.0f (%5.2f%%) %11.2f%%' % (
            m, s, min(v), max(v), s - base, (s - base) / 1e4, 100 * cpu))


if __name__ == '__main__':
    main()

#!/usr/bin/env python3
"""What an in-process hwspy.profile costs the block it profiles: a CPU-bound block (pure
Python arithmetic, ~0.5 s) run unprofiled and inside `hwspy.profile(rate=100)`, in pairs whose
order alternates; the median of the pairs' ratios, and the slowdown in %. Also what start() and
stop() take (outside the block: the wait for the events to open, and for the last samples).

    PYTHONPATH=build/python python3 bench/pyprofile.py [--runs 9] [--seconds 0.5] [--rate 100]

CPU time of the calling thread (time.thread_time) is what is compared, so that the machine's
other load does not decide the figure; wall time is printed beside it. The recorder's own
thread runs beside the block: on a machine with a free CPU its time is not the block's.

cProfile's cost on the same block is printed beside (pyinstrument's too where it is installed).
On these VMs a block's CPU time varies by several % from run to run, more than the cost at
100 Hz: the comparison resolves the cost only at high rates. Where the profile is exact by a
signal (no BPF: an unprivileged user), the handler times its own work in the block's thread,
and that is printed too, per sample and as a share of the block at the rate asked: the cost
but for the kernel's delivery of the signal (a few us a sample).
"""
import argparse
import cProfile
import statistics
import time

import hwspy


def block(n):
    x = 0
    for i in range(n):
        x += i * i % 7
    return x


def calibrate(seconds):
    n = 50000
    while True:
        t = time.thread_time()
        block(n)
        dt = time.thread_time() - t
        if dt > 0.05:
            return int(n * seconds / dt)
        n *= 4


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--runs', type=int, default=9)
    ap.add_argument('--seconds', type=float, default=0.5)
    ap.add_argument('--rate', type=int, default=100)
    o = ap.parse_args()
    n = calibrate(o.seconds)
    block(n)                                    # warm
    base_cpu, base_wall, prof_cpu, prof_wall, starts, stops, samples = [], [], [], [], [], [], []
    handler_ns, signals, ratios = 0, 0, []
    modes = set()

    def unprofiled():
        w, c = time.perf_counter(), time.thread_time()
        block(n)
        base_cpu.append(time.thread_time() - c)
        base_wall.append(time.perf_counter() - w)

    def profiled():
        nonlocal handler_ns, signals
        p = hwspy.Profiler(rate=o.rate)
        t = time.perf_counter()
        p.start()
        starts.append(time.perf_counter() - t)
        w, c = time.perf_counter(), time.thread_time()
        block(n)
        prof_cpu.append(time.thread_time() - c)
        prof_wall.append(time.perf_counter() - w)
        t = time.perf_counter()
        p.stop()
        stops.append(time.perf_counter() - t)
        samples.append(p.stats['samples'])
        modes.add(p.stats['mode'])
        handler_ns += p.stats.get('handler_ns', 0)
        signals += p.stats.get('signal_records', 0)
    others = {}                 # name -> [CPU time of the block under it]
    try:
        import pyinstrument
    except ImportError:
        pyinstrument = None

    def under(name, start, stop):
        c = time.thread_time()
        start()
        block(n)
        stop()
        others.setdefault(name, []).append(time.thread_time() - c)
    for i in range(o.runs):
        for f in ((unprofiled, profiled) if i % 2 == 0 else (profiled, unprofiled)):
            f()
        ratios.append(prof_cpu[-1] / base_cpu[-1])
        cp = cProfile.Profile()
        under('cProfile', cp.enable, cp.disable)
        if pyinstrument:
            pi = pyinstrument.Profiler()
            under('pyinstrument', pi.start, pi.stop)
    bc, pc = statistics.median(base_cpu), statistics.median(prof_cpu)
    bw, pw = statistics.median(base_wall), statistics.median(prof_wall)
    print('block: %.3f s CPU unprofiled, %.3f s profiled at %d Hz (%s): slowdown %+.2f%% '
          '(median of %d pairs; wall %.3f -> %.3f s)' % (
              bc, pc, o.rate, '/'.join(sorted(modes)), 100 * (statistics.median(ratios) - 1),
              o.runs, bw, pw))
    print('samples per block: %s; start %.1f ms, stop %.1f ms (medians)' % (
        samples, 1e3 * statistics.median(starts), 1e3 * statistics.median(stops)))
    for name, cpu in others.items():
        print('beside it, %s: %+.1f%% (the same block, median of %d)' % (
            name, 100 * (statistics.median(cpu) / bc - 1), len(cpu)))
    if signals:
        per = handler_ns / signals
        print('signal handler: %.1f us per sample in the block\'s thread (%d samples): %.2f%% '
              'of a thread sampled at %d Hz' % (per / 1e3, signals, per * o.rate / 1e7, o.rate))


if __name__ == '__main__':
    main()

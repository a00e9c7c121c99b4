#!/usr/bin/env python3
"""The cost of entering and leaving a `with hwspy.count(...)` block (issue 22: under 20 us), with
1 and 16 threads in the process (a block reads each counter of each thread counted: one read
per event group per thread), and of reading its counts afterwards (c.counts: the totals made).

    PYTHONPATH=build/python python3 bench/pycount.py [EVENTS]     (default task-clock,page-faults)

Measured (2-vCPU Firecracker VM, no PMU, shared and noisy; min of 3 runs of 2000 blocks):
  software events each in a group of their own (a read() per event per thread at each end):
     1 thread,  2 events: enter+exit 5.7-7.4 us
    16 threads, 3 events: enter+exit 66-70 us   (4 events: 89 us)
  the calling process's software events in ONE group (analysis stat_groups_self(): a read()
  per thread at each end):
     1 thread,  2 events: enter+exit 6.1-7.1 us
    16 threads, 3 events: enter+exit 35-37 us   (4 events: 34 us)
  What is left with 16 threads is ~1 us per read() of a thread's group here, two per block (its
  start and end): over the 20 us target from ~8 threads up on this VM.
"""
import sys
import threading
import time

import hwspy


def per_block(events, n, read):
    c = hwspy.count(events)
    with c:                                 # the first block opens the counters
        pass
    t0 = time.perf_counter_ns()
    for _ in range(n):
        with c:
            pass
        if read:
            c.counts
    return (time.perf_counter_ns() - t0) / n / 1e3


def main():
    events = (sys.argv[1] if len(sys.argv) > 1 else 'task-clock,page-faults').split(',')
    stop = threading.Event()
    for threads in (1, 16):
        started = [threading.Thread(target=stop.wait) for _ in range(threads - 1)]
        for t in started:
            t.start()
        # a fresh event set per thread count (the counters open on the threads there now)
        evs = events if threads == 1 else events + ['minor-faults']
        t0 = time.perf_counter_ns()
        with hwspy.count(evs):
            pass
        first = (time.perf_counter_ns() - t0) / 1e3
        enter_exit = min(per_block(evs, 2000, False) for _ in range(3))
        with_read = min(per_block(evs, 300, True) for _ in range(3))
        print('%2d threads, %d events: first block (opens the counters) %.0f us; then enter+exit '
              '%.1f us; enter+exit+c.counts %.1f us' % (threads, len(evs), first, enter_exit,
                                                        with_read))
        stop.set()
        for t in started:
            t.join()
        stop.clear()


if __name__ == '__main__':
    main()

#!/usr/bin/env python3
"""The cost of entering and leaving a `with hwspy.count(...)` block (issue 22: under 20 us), with
1, 16 and 64 threads in the process (idle ones, waiting on an Event), and of reading its counts
afterwards (c.counts: the totals made).

    PYTHONPATH=build/python python3 bench/pycount.py [EVENTS]     (default task-clock,page-faults)

A block reads each thread's counters at its start and end (one read() of its event group,
about a microsecond each here), except the threads that have not run since their last reading:
each thread's watch (sampler/count.c) tells that from a page the kernel rewrites each time the
thread is switched in, without a system call.

Measured (2-vCPU Firecracker VM, no PMU, shared and noisy; min of 3 runs of 2000 blocks):
  before the watch (every thread read at both ends):
     1 thread,  2 events: enter+exit 5.7-7.4 us
    16 threads, 3 events: enter+exit 35-44 us
  with the watch (idle threads skipped):
     1 thread,  2 events: enter+exit 5.2 us
    16 threads, 3 events: enter+exit 6.7 us
    64 threads, 3 events: enter+exit ~9 us
  A thread that runs between two readings is read (busy threads cost a read each, as before).
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
    for threads in (1, 16, 64):
        started = [threading.Thread(target=stop.wait) for _ in range(threads - 1)]
        for t in started:
            t.start()
        # a fresh event set per thread count (the counters open on the threads there now)
        evs = events + ['minor-faults', 'context-switches'][:[1, 16, 64].index(threads)]
        t0 = time.perf_counter_ns()
        with hwspy.count(evs):
            pass
        first = (time.perf_counter_ns() - t0) / 1e3
        enter_exit = min(per_block(evs, 2000, False) for _ in range(3))
        with_read = min(per_block(evs, 300, True) for _ in range(3))
        reads = hwspy.count(evs)._open().reads()
        print('%2d threads, %d events: first block (opens the counters) %.0f us; then enter+exit '
              '%.1f us; enter+exit+c.counts %.1f us; threads read %d, skipped as idle %d'
              % (threads, len(evs), first, enter_exit, with_read, reads['reads'],
                 reads['skipped']))
        stop.set()
        for t in started:
            t.join()
        stop.clear()


if __name__ == '__main__':
    main()

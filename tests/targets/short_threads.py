"""Workload for the short-threads test: many short-lived threads, each burning a little CPU.

usage: short_threads.py run [N] [MS] [AT_ONCE]   (launch: starts after a short pause, exits)
       short_threads.py serve [N] [MS] [AT_ONCE] (attach: prints "ready", runs when stdin says
                                                  "go", then waits for "quit")
Starts N threads (default 60), AT_ONCE (default 3) at a time; each runs short_worker, which
burns MS milliseconds (default 30) of its own CPU time (time.thread_time()) and then exits.
When all have ended it prints {"threads": N, "cpu_ns": SUM, "tids": [...]}: the CPU time the
workers measured themselves, in nanoseconds, and their native thread ids.
"""
import json
import os
import sys
import threading
import time


def short_worker(ms, out, lock):
    start = time.thread_time_ns()
    end = start + ms * 1000000
    acc = 0
    while time.thread_time_ns() < end:
        for i in range(500): acc += i % 7  # HOT:short_worker
    used = time.thread_time_ns() - start
    with lock:
        out.append((threading.get_native_id(), used))
    return acc


def batch(n, ms, at_once):
    out, lock = [], threading.Lock()
    started = 0
    while started < n:
        group = []
        for _ in range(min(at_once, n - started)):
            t = threading.Thread(target=short_worker, args=(ms, out, lock))
            t.start()
            group.append(t)
            started += 1
        for t in group:
            t.join()
    return {'threads': len(out), 'cpu_ns': sum(u for _, u in out),
            'tids': sorted({tid for tid, _ in out})}


def main():
    mode = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    ms = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    at_once = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    if mode == 'run':
        time.sleep(0.3)         # let the profiler find the interpreter first
        print(json.dumps(batch(n, ms, at_once)), flush=True)
        return
    print('ready', flush=True)
    for line in sys.stdin:
        if line.strip() == 'go':
            print(json.dumps(batch(n, ms, at_once)), flush=True)
        elif line.strip() == 'quit':
            return


if __name__ == '__main__':
    main()

"""Workload for the limits test: N threads that wait (on an event, taking no CPU) and a main
thread that works, so that a profiler's per-thread resources (file descriptors, locked ring
memory) run out while every thread stays alive.

usage: many_threads.py N [SECONDS]
Starts N threads, then prints {"threads": COUNT} (the process's thread count, from
/proc/self/task) on stdout. Without SECONDS it works until stdin says "quit" or ends; with
SECONDS it works that long and exits (stdin unread: for a command launched by the profiler).
"""
import json
import os
import select
import sys
import threading
import time


def work():
    acc = 0
    for i in range(20000): acc += i % 7  # HOT:work
    return acc


def main():
    n = int(sys.argv[1])
    life = float(sys.argv[2]) if len(sys.argv) > 2 else None
    done = threading.Event()
    for _ in range(n):
        threading.Thread(target=done.wait, daemon=True).start()
    print(json.dumps({'threads': len(os.listdir('/proc/self/task'))}), flush=True)
    end = time.monotonic() + (life if life is not None else 600)
    poll = 0.0
    while time.monotonic() < end:
        work()
        if life is not None or time.monotonic() < poll:
            continue
        poll = time.monotonic() + 0.05
        if select.select([0], [], [], 0)[0]:
            data = os.read(0, 4096)
            if not data or b'quit' in data:
                break
    done.set()


if __name__ == '__main__':
    main()

"""Workload for the shares tests: functions that burn known CPU shares.

Each task is called round-robin with a calibrated amount of work (per round about 6, 5, 4, 3
and 2 ms, so 30/25/20/15/10 %), and every call is timed with time.thread_time(); the shares of
any window of many rounds are therefore the overall shares. The test finds the hot lines by
the `# HOT:<function>` and `# CALL:<callee>` marker comments.

  shares.py run SECONDS   print "ready", run for SECONDS of CPU time, print the JSON times, exit
  shares.py serve         print "ready", run until stdin says "quit"; "snap" prints the JSON
                          times so far (cumulative seconds per task)
"""
import json
import os
import select
import sys
import time

import données

RECURSION_DEPTH = 12


class Matrix:
    def __init__(self):
        self.scale = 3

    def multiply(self, n):
        acc = 0
        for i in range(n): acc += i * self.scale % 7  # HOT:multiply
        return acc


def nested_outer(n):
    return nested_middle(n) + 1  # CALL:nested_middle


def nested_middle(n):
    return nested_inner(n) + 1  # CALL:nested_inner


def nested_inner(n):
    acc = 0
    for i in range(n): acc ^= i << 1  # HOT:nested_inner
    return acc


def recurse(depth, n):
    if depth > 0:
        return recurse(depth - 1, n) + 1  # CALL:recurse
    acc = 0
    for i in range(n): acc += i & 5  # HOT:recurse
    return acc


def squares(n):
    for i in range(n): yield i * i  # HOT:squares


def generator_task(n):
    return sum(squares(n))  # CALL:squares


MATRIX = Matrix()
# task name -> (callable taking a work size, milliseconds per round)
TASKS = {
    'multiply': (MATRIX.multiply, 6.0),
    'nested': (nested_outer, 5.0),
    'recursion': (lambda n: recurse(RECURSION_DEPTH, n), 4.0),
    'generator': (generator_task, 3.0),
    'calculé': (données.calculé, 2.0),
}

times = {name: 0.0 for name in TASKS}
sizes = {}


def timed(name, n):
    t0 = time.thread_time()
    TASKS[name][0](n)
    times[name] += time.thread_time() - t0


def calibrate():
    for name, (fn, ms) in TASKS.items():
        n = 2000
        while True:
            t0 = time.thread_time()
            timed(name, n)
            took = time.thread_time() - t0
            if took > 0.004 or n > 10**8:
                break
            n *= 4
        sizes[name] = max(1, int(n * (ms / 1000.0) / max(took, 1e-6)))


def run_round():
    for name in TASKS:
        timed(name, sizes[name])


def report():
    print(json.dumps({'times': times, 'sizes': sizes, 'pid': os.getpid()}, ensure_ascii=False),
          flush=True)


def serve():
    pending = b''
    deadline = time.monotonic() + 600  # never outlive a crashed test by long
    while time.monotonic() < deadline:
        run_round()
        if select.select([0], [], [], 0)[0]:
            data = os.read(0, 4096)
            if not data:
                return
            pending += data
            while b'\n' in pending:
                line, pending = pending.split(b'\n', 1)
                if line == b'snap':
                    report()
                elif line == b'quit':
                    return


def main():
    calibrate()
    print('ready', flush=True)
    if sys.argv[1] == 'run':
        end = time.thread_time() + float(sys.argv[2])
        while time.thread_time() < end:
            run_round()
        report()
    else:
        serve()


if __name__ == '__main__':
    main()

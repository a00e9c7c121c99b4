"""Deep target for bench/table.py: THREADS threads (default 1, the main thread among them) each
spin at the bottom of DEPTH nested calls of distinct functions (each its own code object, as a
framework's stack has) for SECONDS; every 0.1 s the main thread prints to stdout 'T ITERS STALL'
(CLOCK_MONOTONIC ns, its spin loop's iterations so far, and the ns it spent in gaps of over
5 us between two looks at the clock: a sample's interrupt, a stop, a preemption), so that what
it ran at, and how much it was held up, in any window can be read off (bench/overhead.py's
method). SHAPE (default distinct) makes the stack of other frames: recursion, one function
calling itself; wrapper, every other frame one function that calls the next (as a framework's
wrapper between its callbacks: nn.Module's _call_impl). Usage: deep_target.py DEPTH SECONDS
[THREADS [SHAPE]]"""
import os
import sys
import threading
import time

DEPTH = int(sys.argv[1]) if len(sys.argv) > 1 else 60
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
THREADS = int(sys.argv[3]) if len(sys.argv) > 3 else 1
SHAPE = sys.argv[4] if len(sys.argv) > 4 else 'distinct'


GAP_NS = 5000


def spin(report):
    clock = time.perf_counter_ns
    start = clock()
    end = start + int(SECONDS * 1e9)
    iters, stall, last, next_report = 0, 0, start, start
    while True:
        for _ in range(20):
            iters += 1
        now = clock()
        if now - last > GAP_NS:
            stall += now - last
        last = now
        if report and now >= next_report:
            print('%d %d %d' % (time.monotonic_ns(), iters, stall), flush=True)
            next_report = now + 100_000_000
            last = clock()
        if now >= end:
            return


def call(fn, report):
    return fn(report)


if SHAPE == 'recursion':
    # f0 calls itself DEPTH - 2 times, then spins: one code object
    def f0(report, n=DEPTH - 2):
        return f0(report, n - 1) if n > 0 else spin(report)
elif SHAPE == 'wrapper':
    # f0 calls call(f1), f1 call(f2) ...: every other frame the one wrapper
    exec(''.join('def f%d(report):\n    return %s\n'
                 % (i, 'call(f%d, report)' % (i + 1) if i + 1 < DEPTH // 2 else 'spin(report)')
                 for i in range(max(DEPTH // 2, 1))))
else:
    # f0 calls f1 ... f{DEPTH-2}, whose callee spins: DEPTH frames of distinct code objects
    exec(''.join('def f%d(report):\n    return %s(report)\n'
                 % (i, 'f%d' % (i + 1) if i + 2 < DEPTH else 'spin')
                 for i in range(max(DEPTH - 1, 1))))


def main():
    print('pid %d' % os.getpid(), flush=True)
    threads = [threading.Thread(target=f0, args=(False,)) for _ in range(THREADS - 1)]
    for t in threads:
        t.start()
    f0(True)
    for t in threads:
        t.join()


if __name__ == '__main__':
    main()

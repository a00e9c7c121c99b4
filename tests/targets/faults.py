"""Workload for the page-fault and exactness tests: two functions taking turns, one causing
(nearly) every page fault of the process, one only computing.

touch_pages maps fresh anonymous memory, writes one byte per page (one fault each) and unmaps
it; compute does integer arithmetic for a calibrated time. Every call is timed with
time.thread_time(), so the test knows the time split of any window of many turns. The amount
of work varies from turn to turn (50-150% of the mean, a fixed pseudo-random sequence), so that
the turns do not keep step with a periodic sampler (aliasing would make the split it sees
noisier than its sample count suggests).

  faults.py PAGES COMPUTE_US   print "ready", then alternate touch_pages (PAGES pages on
                               average) and compute (COMPUTE_US microseconds on average) until
                               stdin says "quit";
                               "snap" prints the JSON times so far (cumulative seconds)
"""
import json
import mmap
import os
import random
import select
import sys
import time

PAGE = mmap.PAGESIZE


def touch_pages(npages):
    m = mmap.mmap(-1, npages * PAGE)
    for off in range(0, npages * PAGE, PAGE): m[off] = 1  # HOT:touch_pages
    m.close()


def compute(n):
    acc = 0
    for i in range(n): acc += i * 7 % 11  # HOT:compute
    return acc


def calibrate(target_us):
    n = 1000
    while True:
        t0 = time.thread_time()
        for _ in range(10):
            compute(n)
        took = (time.thread_time() - t0) / 10
        if took > 0.002:
            break
        n *= 4
    return max(1, int(n * target_us * 1e-6 / took))


def main():
    npages = int(sys.argv[1])
    n = calibrate(float(sys.argv[2]))
    rng = random.Random(1)
    plan = [(max(1, round(npages * rng.uniform(0.5, 1.5))), max(1, int(n * rng.uniform(0.5, 1.5))))
            for _ in range(251)]
    times = {'touch_pages': 0.0, 'compute': 0.0}
    for pages, work in plan[:20]:  # warm up the allocator: in steady state only touch_pages faults
        touch_pages(pages)
        compute(work)
    print('ready', flush=True)
    pending = b''
    deadline = time.monotonic() + 600  # never outlive a crashed test by long
    tt = time.thread_time
    turn = pages_touched = 0
    t = tt()
    while True:
        pages, work = plan[turn % len(plan)]
        touch_pages(pages)  # CALL:touch_pages
        u = tt()
        times['touch_pages'] += u - t
        compute(work)  # CALL:compute
        t = tt()
        times['compute'] += t - u
        turn += 1
        pages_touched += pages
        if turn % 32:
            continue
        if time.monotonic() > deadline:
            return
        if select.select([0], [], [], 0)[0]:
            data = os.read(0, 4096)
            if not data:
                return
            pending += data
            while b'\n' in pending:
                line, pending = pending.split(b'\n', 1)
                if line == b'snap':
                    print(json.dumps({'times': times, 'turns': turn, 'pages': pages_touched,
                                      'compute_n': n}), flush=True)
                elif line == b'quit':
                    return
        t = tt()


if __name__ == '__main__':
    main()

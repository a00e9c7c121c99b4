"""Workloads for hwspy stat's tests (tests/integration/test_stat.py), each with a known kind of
finding, in functions with known names:

  stat_work.py cpu SECS     burn the CPU in spin(): ~1 CPU used, nothing waits
  stat_work.py sleep SECS   sleep in nap() 20 ms at a time: almost no CPU used
  stat_work.py lock SECS    two threads hand a lock to each other in ping() and pong():
                            thousands of context switches a second
  stat_work.py touch SECS   map fresh memory and write a byte per page in touch_pages():
                            tens of thousands of page faults a second
  stat_work.py alloc SECS   turns of alloc() (maps 192 fresh pages and writes a byte per page:
                            every page fault, ~1 ms) and inner() (pure compute on small
                            ints, nothing allocated, ~2.5 ms): a fault counter read at the
                            CPU's ticks credits most faults to inner(), where the tick came
  stat_work.py gil SECS     the main thread and worker-1 run Python code in compute() (each
                            waits for the GIL about half the time), idler waits on an event

Prints "ready" once started, then works for SECS seconds (or until killed) and exits 0,
printing "minflt N" (its own getrusage minor faults, since its start) last.
"""
import mmap
import resource
import sys
import threading
import time

PAGE = mmap.PAGESIZE


def spin(end):
    n = 0
    while time.monotonic() < end:
        n += 1
    return n


def nap(end):
    while time.monotonic() < end:
        time.sleep(0.02)


def ping(a, b, end):
    while time.monotonic() < end:
        a.acquire()             # waits for pong to hand it over
        b.release()


def pong(a, b, end):
    while time.monotonic() < end:
        b.acquire()
        a.release()


def locks(end):
    a, b = threading.Lock(), threading.Lock()
    b.acquire()
    t = threading.Thread(target=pong, args=(a, b, end + 0.1), name='pong')
    a.acquire()
    t.start()
    a.release()
    ping(a, b, end)
    t.join(1)


def touch_pages(end):
    while time.monotonic() < end:
        m = mmap.mmap(-1, 256 * PAGE)
        for off in range(0, 256 * PAGE, PAGE):
            m[off] = 1
        m.close()


def alloc():
    m = mmap.mmap(-1, 192 * PAGE)
    for off in range(0, 192 * PAGE, PAGE):
        m[off] = 1
    m.close()


def inner():
    s = 0
    for _ in range(200):
        for i in range(200):    # small ints: cached, nothing allocated
            s = (s + i) & 255
    return s


def alloc_compute(end):
    while time.monotonic() < end:
        alloc()
        inner()


def compute(end):
    s = 0
    while time.monotonic() < end:
        for i in range(1000):
            s = (s + i) & 255


def gil(end):
    idle = threading.Event()
    idler = threading.Thread(target=idle.wait, name='idler')
    worker = threading.Thread(target=compute, args=(end,), name='worker-1')
    idler.start()
    worker.start()
    compute(end)
    worker.join()
    idle.set()
    idler.join()


def main():
    mode, secs = sys.argv[1], float(sys.argv[2])
    work = {'cpu': spin, 'sleep': nap, 'lock': locks, 'touch': touch_pages,
            'alloc': alloc_compute, 'gil': gil}[mode]
    print('ready', flush=True)
    work(time.monotonic() + secs)
    print('minflt %d' % resource.getrusage(resource.RUSAGE_SELF).ru_minflt, flush=True)


if __name__ == '__main__':
    main()

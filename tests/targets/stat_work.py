"""Workloads for hwspy stat's tests (tests/integration/test_stat.py), each with a known kind of
finding, in functions with known names:

  stat_work.py cpu SECS     burn the CPU in spin(): ~1 CPU used, nothing waits
  stat_work.py sleep SECS   sleep in nap() 20 ms at a time: almost no CPU used
  stat_work.py lock SECS    two threads hand a lock to each other in ping() and pong():
                            thousands of context switches a second
  stat_work.py touch SECS   map fresh memory and write a byte per page in touch_pages():
                            tens of thousands of page faults a second

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


def main():
    mode, secs = sys.argv[1], float(sys.argv[2])
    work = {'cpu': spin, 'sleep': nap, 'lock': locks, 'touch': touch_pages}[mode]
    print('ready', flush=True)
    work(time.monotonic() + secs)
    print('minflt %d' % resource.getrusage(resource.RUSAGE_SELF).ru_minflt, flush=True)


if __name__ == '__main__':
    main()

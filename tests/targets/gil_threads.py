"""Workload for test_offcpu.py (gil): after 0.3 s of CPU on the main thread (hwspy finds the
interpreter and starts its capture meanwhile), two threads (spin_0, spin_1) run Python code
for argv[1] wall seconds (default 1.5) each, so that with a GIL each waits for it about half
the time.
Prints each thread's measured wall time to stderr: 'wall spin_0=NS spin_1=NS'."""
import sys
import threading
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 1.5
walls = {}


def spin(name):
    t0 = time.monotonic_ns()
    end = time.monotonic() + SECONDS
    s = 0
    while time.monotonic() < end:
        for i in range(1000): s += i  # HOT:spin
    walls[name] = time.monotonic_ns() - t0


def main():
    end = time.thread_time() + 0.3
    while time.thread_time() < end:
        pass
    threads = [threading.Thread(target=spin, args=('spin_%d' % k,), name='spin_%d' % k)
               for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print('wall ' + ' '.join('%s=%d' % kv for kv in sorted(walls.items())), file=sys.stderr)


if __name__ == '__main__':
    main()

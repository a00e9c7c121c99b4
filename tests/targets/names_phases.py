"""Workload for test_names.py (order): phase_a for argv[1] CPU seconds, then phase_b, then
phase_a again, on the main thread; a thread named CustomThreadNameLong runs phase_c for the
first half of the run and exits."""
import sys
import threading
import time


def phase_a():
    s = 0
    for i in range(10000): s += i  # HOT:phase_a
    return s


def phase_b():
    s = 1
    for i in range(10000): s ^= i  # HOT:phase_b
    return s


def phase_c(end):
    s = 0
    while time.monotonic() < end:
        for i in range(10000): s -= i  # HOT:phase_c
    return s


def run(work, seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        work()


def main():
    seconds = float(sys.argv[1])
    t = threading.Thread(target=phase_c, args=(time.monotonic() + 1.5 * seconds,),
                         name='CustomThreadNameLong')
    t.start()
    run(phase_a, seconds)
    run(phase_b, seconds)
    t.join()
    run(phase_a, seconds)


if __name__ == '__main__':
    main()

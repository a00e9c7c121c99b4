"""A service for hwspy monitor's test: a thread that faults pages at a steady rate (a fresh
anonymous mapping touched page by page, then dropped), one that spins in hot_loop, one that
waits on a lock and one that sleeps. Prints "ready"; on "info" answers one JSON line with its
own page faults (getrusage: minor + major) and the monotonic time they were read at; "quit"
ends it."""
import json
import mmap
import resource
import sys
import threading
import time

PAGES = 256


def fault_pages():
    while True:
        m = mmap.mmap(-1, PAGES * mmap.PAGESIZE)
        for i in range(0, PAGES * mmap.PAGESIZE, mmap.PAGESIZE):
            m[i] = 1
        m.close()
        time.sleep(0.01)


def hot_loop():
    x = 0
    while True:
        for i in range(20000):
            x += i * i
        time.sleep(0.001)


def wait_lock(lock):
    lock.acquire()


def main():
    lock = threading.Lock()
    lock.acquire()
    for target, args in ((fault_pages, ()), (hot_loop, ()), (wait_lock, (lock,)),
                         (time.sleep, (3600,))):
        threading.Thread(target=target, args=args, daemon=True).start()
    print('ready', flush=True)
    for line in sys.stdin:
        if line.strip() == 'info':
            ru = resource.getrusage(resource.RUSAGE_SELF)
            print(json.dumps({'faults': ru.ru_minflt + ru.ru_majflt, 't': time.monotonic()}),
                  flush=True)
        elif line.strip() == 'quit':
            break


if __name__ == '__main__':
    main()

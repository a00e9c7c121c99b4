"""Workload for test_offcpu.py: the main thread alternates argv[2] rounds (default 10) of
argv[1] seconds (default 0.05) each of CPU (burn), time.sleep (nap), a read blocked on a pipe
that a helper thread writes to after that time (pipe_wait) and a threading.Lock held by the
helper for that time (lock_wait). Prints the measured blocked time of the waits, in ns, to
stderr at the end: 'blocked_ns N'."""
import os
import sys
import threading
import time

PHASE = float(sys.argv[1]) if len(sys.argv) > 1 else 0.05
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 10


def burn():
    end = time.thread_time() + PHASE
    s = 0
    while time.thread_time() < end:
        for i in range(500): s += i  # HOT:burn
    return s


def nap():
    time.sleep(PHASE)  # WAIT:nap


def pipe_wait(r):
    return os.read(r, 1)  # WAIT:pipe


def lock_wait(lock):
    with lock:  # WAIT:lock
        pass


def helper(r_go, w_data, lock, held):
    while True:
        cmd = os.read(r_go, 1)
        if not cmd or cmd == b'q':
            return
        if cmd == b'p':
            time.sleep(PHASE)
            os.write(w_data, b'x')
        elif cmd == b'l':
            with lock:
                held.set()
                time.sleep(PHASE)


def main():
    r_go, w_go = os.pipe()
    r_data, w_data = os.pipe()
    lock = threading.Lock()
    held = threading.Event()
    t = threading.Thread(target=helper, args=(r_go, w_data, lock, held), name='helper')
    t.start()
    blocked = 0
    for _ in range(ROUNDS):
        burn()
        t0 = time.monotonic_ns()
        nap()
        os.write(w_go, b'p')
        pipe_wait(r_data)
        held.clear()
        os.write(w_go, b'l')
        held.wait()
        lock_wait(lock)
        blocked += time.monotonic_ns() - t0
    os.write(w_go, b'q')
    t.join()
    print('blocked_ns %d' % blocked, file=sys.stderr)


if __name__ == '__main__':
    main()

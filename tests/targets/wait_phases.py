"""Workload for test_offcpu.py: after 0.5 s of CPU (warm_up: hwspy finds the interpreter and
starts its capture meanwhile; for a static 3.14 started through its loader that took up to
0.3 s here, and samples before it are read late), the main thread runs argv[2] rounds
(default 10) of argv[1] seconds (default 0.05) each of CPU (burn), time.sleep (nap), a read
blocked on a pipe that a helper thread writes to after that time (pipe_wait) and a
threading.Lock held by the helper for that time (lock_wait); nap sleeps argv[3] (default 1)
times as long. Prints to stderr at the end the time spent in each waiting function, as the
target measured it: 'waited nap=NS pipe_wait=NS lock_wait=NS', and the wall time burn took
(its CPU time is fixed, its wall time longer on a busy machine): 'burned burn=NS'."""
import os
import sys
import threading
import time

PHASE = float(sys.argv[1]) if len(sys.argv) > 1 else 0.05
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 10
NAP = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0     # nap's time, in phases


def burn():
    end = time.thread_time() + PHASE
    s = 0
    while time.thread_time() < end:
        for i in range(500): s += i  # HOT:burn
    return s


def warm_up():
    end = time.thread_time() + 0.5
    while time.thread_time() < end:
        pass


def nap():
    time.sleep(PHASE * NAP)  # WAIT:nap


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
    waited = {'nap': 0, 'pipe_wait': 0, 'lock_wait': 0}

    def timed(name, f, *args):
        t0 = time.monotonic_ns()
        f(*args)
        waited[name] += time.monotonic_ns() - t0

    warm_up()
    burned = 0
    for _ in range(ROUNDS):
        t0 = time.monotonic_ns()
        burn()
        burned += time.monotonic_ns() - t0
        timed('nap', nap)
        os.write(w_go, b'p')
        timed('pipe_wait', pipe_wait, r_data)
        held.clear()
        os.write(w_go, b'l')
        held.wait()
        timed('lock_wait', lock_wait, lock)
    os.write(w_go, b'q')
    t.join()
    print('waited ' + ' '.join('%s=%d' % kv for kv in waited.items()), file=sys.stderr)
    print('burned burn=%d' % burned, file=sys.stderr)


if __name__ == '__main__':
    main()

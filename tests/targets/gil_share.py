"""Workload for test_gil.py: after 0.3 s of CPU on the main thread (hwspy finds the interpreter
and starts its capture meanwhile), for argv[1] wall seconds (default 1.5) two threads run Python
code (spin_0, spin_1: they hold the GIL whenever they run), one hashes a large buffer (hash:
hashlib lets the GIL go while it hashes, so it runs mostly without it) and one sleeps (sleeper).
"""
import hashlib
import sys
import threading
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 1.5


def spin():
    end = time.monotonic() + SECONDS
    s = 0
    while time.monotonic() < end:
        for i in range(1000): s += i  # HOT:spin


def hash_loop():
    data = b'x' * (1 << 22)
    end = time.monotonic() + SECONDS
    while time.monotonic() < end:
        hashlib.sha256(data).digest()  # HOT:hash


def sleeper():
    time.sleep(SECONDS)


def main():
    end = time.thread_time() + 0.3
    while time.thread_time() < end:
        pass
    work = [('spin_0', spin), ('spin_1', spin), ('hash', hash_loop), ('sleeper', sleeper)]
    threads = [threading.Thread(target=f, name=name) for name, f in work]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == '__main__':
    main()

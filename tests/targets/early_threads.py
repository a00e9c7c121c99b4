"""Threads started before hwspy finds the interpreter, for test_capture.py (early-threads):
two threads start at the first line, before the imports, and each spins in its own function
(spin_a, spin_b) while the main thread spins in spin_main, each for argv[1] CPU seconds
(time.thread_time, so that a loaded machine gives as many samples)."""
import threading
import time


def spin(seconds):
    end = time.thread_time() + seconds
    s = 0
    while time.thread_time() < end:
        for i in range(2000): s += i  # HOT:spin
    return s


def spin_a(seconds):
    return spin(seconds)


def spin_b(seconds):
    return spin(seconds)


def spin_main(seconds):
    return spin(seconds)


if __name__ == '__main__':
    import sys
    seconds = float(sys.argv[1])
    threads = [threading.Thread(target=f, args=(seconds,), name=f.__name__)
               for f in (spin_a, spin_b)]
    for t in threads:
        t.start()
    spin_main(seconds)
    for t in threads:
        t.join()

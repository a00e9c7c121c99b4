# Workload for test_errors.py's leader-exit case: a process whose main thread has exited while
# another thread runs on. leader_exit.py [SECONDS]: starts a thread that burns CPU in work()
# for SECONDS (default 60) and then ends the process (exit 0); the main thread prints "ready"
# and calls libc's pthread_exit (through ctypes, which lets the GIL go for the call): the main
# thread is then a zombie (/proc/PID/maps empty, /proc/PID/mem unreadable), the process alive.
import ctypes
import os
import sys
import threading
import time


def work(seconds):
    end = time.time() + seconds
    n = 0
    while time.time() < end: n += 1  # HOT:work
    os._exit(0)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    threading.Thread(target=work, args=(seconds,), name='worker').start()
    sys.stdout.write('ready\n')
    sys.stdout.flush()
    ctypes.CDLL(None).pthread_exit(None)


if __name__ == '__main__':
    main()

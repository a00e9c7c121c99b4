"""Workload for test_names.py (shim): a class whose __init__ does the CPU work, instantiated in
a loop for argv[1] seconds. 3.13+ runs such a call through CPython's _Py_InitCleanup shim frame
(code named __init__ in file __init__), which tracebacks never show."""
import sys
import time


class A:
    def __init__(self):
        self.x = work()  # CALL:work


def work():
    s = 0
    for i in range(20000): s += i  # HOT:work
    return s


def main():
    end = time.monotonic() + float(sys.argv[1])
    while time.monotonic() < end:
        A()  # CALL:A


if __name__ == '__main__':
    main()

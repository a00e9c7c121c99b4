"""Workload for the threads test: three threads doing different work.

The main thread runs main_work, thread "alpha" runs alpha_work from the start, and thread
"late" runs late_work once stdin says "late" (the test sends that after the profiler has
attached). Lines on stdout (JSON): at start {"main": TID, "alpha": TID}, after "late"
{"late": TID} (native thread ids). "quit" (or end of stdin) exits.
"""
import json
import os
import select
import threading
import time


def main_work():
    acc = 0
    for i in range(20000): acc += i % 13  # HOT:main_work
    return acc


def alpha_work():
    acc = 1.0
    for i in range(20000): acc = acc * 1.0000001 + 1  # HOT:alpha_work
    return acc


def late_work():
    s = []
    for i in range(20000): s.append(i ^ 0x55)  # HOT:late_work
    return len(s)


def forever(work, tids, key, started):
    tids[key] = threading.get_native_id()
    started.set()
    while True:
        work()


def start(name, work, tids):
    started = threading.Event()
    t = threading.Thread(target=forever, args=(work, tids, name, started), name=name,
                         daemon=True)
    t.start()
    started.wait()


def main():
    tids = {'main': threading.get_native_id()}
    start('alpha', alpha_work, tids)
    print(json.dumps(tids), flush=True)
    pending = b''
    deadline = time.monotonic() + 600  # never outlive a crashed test by long
    poll = 0.0
    while time.monotonic() < deadline:
        main_work()
        # look at stdin only every 50 ms: each select() releases the GIL and takes it straight
        # back, which would starve the other threads
        if time.monotonic() < poll:
            continue
        poll = time.monotonic() + 0.05
        if not select.select([0], [], [], 0)[0]:
            continue
        data = os.read(0, 4096)
        if not data:
            return
        pending += data
        while b'\n' in pending:
            line, pending = pending.split(b'\n', 1)
            if line == b'late':
                start('late', late_work, tids)
                print(json.dumps({'late': tids['late']}), flush=True)
            elif line == b'quit':
                return


if __name__ == '__main__':
    main()

"""Workload for the `hwspy top` tests (tests/integration/test_top.py): two threads running
different functions, with one clearly hottest function overall.

The main thread runs hot_main and warm_main in turn (about 3:1 of its CPU); thread "side"
runs side_work about a fifth of the time (2 ms of work, then 8 ms asleep). So hot_main is
the hottest function of the process, side_work the only one of thread "side". Prints the
native thread ids as JSON ({"main": TID, "side": TID}), then runs until stdin says "quit" or
ends (at most 300 s); `top_work.py run SECONDS` runs SECONDS without reading stdin (a command
`hwspy top` launches reads /dev/null).
"""
import json
import os
import select
import sys
import threading
import time


def hot_main():
    acc = 0
    for i in range(30000): acc += i % 7  # HOT:hot_main
    return acc


def warm_main():
    acc = 0
    for i in range(10000): acc ^= i << 1  # HOT:warm_main
    return acc


def side_work():
    end = time.thread_time() + 0.002
    acc = 1.0
    while time.thread_time() < end:
        for i in range(500): acc = acc * 1.0000001 + 1  # HOT:side_work
    return acc


def side(tids, started):
    tids['side'] = threading.get_native_id()
    started.set()
    while True:
        side_work()
        time.sleep(0.008)


def main():
    tids = {'main': threading.get_native_id()}
    started = threading.Event()
    threading.Thread(target=side, args=(tids, started), name='side', daemon=True).start()
    started.wait()
    print(json.dumps(tids), flush=True)
    deadline = time.monotonic() + 300  # never outlive a crashed test by long
    run = len(sys.argv) > 2 and sys.argv[1] == 'run'
    if run:
        deadline = time.monotonic() + float(sys.argv[2])
    poll = 0.0
    while time.monotonic() < deadline:
        hot_main()
        warm_main()
        if run or time.monotonic() < poll:
            continue
        poll = time.monotonic() + 0.05
        if select.select([0], [], [], 0)[0]:
            data = os.read(0, 4096)
            if not data or b'quit' in data:
                return


if __name__ == '__main__':
    main()

"""Switch-heavy target for bench/offcpu.py: two threads pass a byte back and forth over two
pipes, each blocking in os.read until the other writes, for argv[1] seconds, the main thread
doing argv[2] (default 0) iterations of a small loop per round trip; every 0.1 s the
main thread prints to stdout 'T ROUNDS' (CLOCK_MONOTONIC ns, round trips so far), so that the
rate in any window can be read off."""
import os
import sys
import threading
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 6.0
WORK = int(sys.argv[2]) if len(sys.argv) > 2 else 0


def echo(r, w):
    while True:
        b = os.read(r, 1)
        if b == b'q':
            return
        os.write(w, b)


def main():
    r1, w1 = os.pipe()
    r2, w2 = os.pipe()
    t = threading.Thread(target=echo, args=(r1, w2), name='echo')
    t.start()
    rounds, end = 0, time.monotonic() + SECONDS
    next_report = time.monotonic()
    print('pid %d' % os.getpid(), flush=True)
    while True:
        now = time.monotonic()
        if now >= next_report:
            print('%d %d' % (time.monotonic_ns(), rounds), flush=True)
            next_report = now + 0.1
            if now >= end:
                break
        for _ in range(WORK):
            pass
        os.write(w1, b'x')
        os.read(r2, 1)
        rounds += 1
    os.write(w1, b'q')
    t.join()


if __name__ == '__main__':
    main()

# -*- coding: utf-8 -*-
"""The program whose profiles are tests/golden/inputs/ (recorded once by hand, see regen.sh's
opening comment): threads with hostile and non-ASCII names, each in functions of its own:

  MainThread        calculé()   CPU (pure Python), then joins the others
  'pf<&"\'>ø'       touch()     page faults (mmap, a byte per page)
  'dormir ☾'        nap()       sleeps 5 ms at a time (off-CPU: sleep)
  'verrou'          wait_lock() a lock the main thread hands over every 10 ms (futex)
  'tuyau'           read_pipe() reads a pipe the main thread writes every 10 ms

argv[1]: seconds to run (default 0.6); argv[2]: 'after' makes calculé do half the work (the
"after" side of a diff).
"""
import mmap
import os
import sys
import threading
import time

SECS = float(sys.argv[1]) if len(sys.argv) > 1 else 0.6
AFTER = len(sys.argv) > 2 and sys.argv[2] == 'after'
PAGE = mmap.PAGESIZE
lock = threading.Lock()
pipe_r, pipe_w = os.pipe()


def calculé(end):
    n = 0
    while time.monotonic() < end:
        for i in range(500 if AFTER else 1000):
            n += i % 7
        if AFTER:
            time.sleep(0.001)
    return n


def touch(end):
    while time.monotonic() < end:
        m = mmap.mmap(-1, 64 * PAGE)
        for off in range(0, 64 * PAGE, PAGE):
            m[off] = 1
        m.close()


def nap(end):
    while time.monotonic() < end:
        time.sleep(0.005)


def wait_lock(end):
    while time.monotonic() < end:
        with lock:
            pass


def read_pipe(end):
    while os.read(pipe_r, 1) != b'q':
        pass


def feeder(end):
    while time.monotonic() < end:
        with lock:
            time.sleep(0.01)
        os.write(pipe_w, b'x')
    os.write(pipe_w, b'q')


def main():
    end = time.monotonic() + SECS
    threads = [threading.Thread(target=f, args=(end,), name=n) for n, f in
               (('pf<&"\'>ø', touch), ('dormir ☾', nap), ('verrou', wait_lock),
                ('tuyau', read_pipe), ('feeder', feeder))]
    for t in threads:
        t.start()
    calculé(end)
    for t in threads:
        t.join()


if __name__ == '__main__':
    main()

# Workload for test_errors.py's lost-switches case: two threads that hand one byte back and forth
# through two pipes as fast as they can, so each goes off the CPU at every turn (on one CPU
# ~10^5 round trips a second here: more switches than hwspy reads). pingpong.py SECONDS: prints
# "ready", runs for SECONDS, exits 0.
import os
import sys
import threading
import time


def pong(r, w):
    while True:
        os.read(r, 1)  # HOT:pong
        os.write(w, b'x')


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    r1, w1 = os.pipe()
    r2, w2 = os.pipe()
    threading.Thread(target=pong, args=(r1, w2), daemon=True).start()
    sys.stdout.write('ready\n')
    sys.stdout.flush()
    end = time.time() + seconds
    while time.time() < end:
        os.write(w1, b'x')
        os.read(r2, 1)  # HOT:ping


if __name__ == '__main__':
    main()

# Workload for the error tests; also runs on Python 2.7 and 3.6/3.7 (unsupported versions).
# spin.py [SECONDS]: print "ready", burn CPU in spin() for SECONDS (default 120), exit 0.
import sys
import time


def spin(seconds):
    end = time.time() + seconds
    n = 0
    while time.time() < end: n += 1  # HOT:spin
    return n


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 120.0
    sys.stdout.write('ready\n')
    sys.stdout.flush()
    spin(seconds)


if __name__ == '__main__':
    main()

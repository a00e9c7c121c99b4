# Workload for the torn-stack tests (test_torn.py): a recursion that returns and re-enters fast,
# so a stack read while the thread runs on sees frames popped and pushed under the read.
#   recurse.py run SECONDS   print "ready", compress for 0.05 s (zlib: start-up work in a native
#                            library, libz), recurse for SECONDS, print a JSON line, exit 0
#   recurse.py serve         print "ready", recurse until stdin says "quit" (or closes)
# Every stack of recurse() is <module>;main;loop;recurse x (1..MAX_DEPTH+1)[;leaf], nothing else.
import json
import sys
import threading
import time
import zlib

MIN_DEPTH = 30
MAX_DEPTH = 60


def leaf():
    x = 0
    for i in range(40): x += i  # HOT:leaf
    return x


def recurse(n):
    if n == 0:
        return leaf()  # CALL:leaf
    return recurse(n - 1) + 1  # CALL:recurse


def startup():
    data = bytes(range(256)) * 4096
    end = time.monotonic() + 0.05
    while time.monotonic() < end:
        zlib.compress(data, 9)  # CALL:compress


def loop(stop):
    calls = 0
    depth = MIN_DEPTH
    while not stop():
        recurse(depth)  # CALL:loop
        calls += 1
        depth = MIN_DEPTH + (depth - MIN_DEPTH + 7) % (MAX_DEPTH - MIN_DEPTH + 1)
    return calls


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else 'run'
    sys.stdout.write('ready\n')
    sys.stdout.flush()
    if mode == 'run':
        startup()
        end = time.monotonic() + float(sys.argv[2] if len(sys.argv) > 2 else 3)
        calls = loop(lambda: time.monotonic() >= end)
    else:
        done = threading.Event()

        def wait_quit():
            for line in sys.stdin:
                if line.strip() == 'quit':
                    break
            done.set()

        threading.Thread(target=wait_quit, daemon=True).start()
        calls = loop(done.is_set)
    sys.stdout.write(json.dumps({'calls': calls}) + '\n')
    sys.stdout.flush()


main()  # CALL:main

# The cyclic garbage collector at work (tests/integration/test_gc.py).
# gc_work.py [SECONDS]: with automatic collection off (gc.disable()), builds a large live graph
# of cycles (every full collection walks all of it), prints "ready", spins 0.4 s in settle()
# (while a profiler that launched it loads its symbols and starts its capture), then for
# SECONDS (default 2.5) alternates three phases of about 50 ms each: make_garbage() drops
# cycles for the collector to find, collect_now() calls gc.collect() again and again (its time
# is the collector's, nearly all of it), alloc_only() allocates and frees as fast as it can
# with no collection at all. Prints how many collections ran and exits 0.
import gc
import sys
import time


class Node:
    def __init__(self, peer=None):
        self.peer = peer
        self.items = [self]             # a cycle of its own


def build_live(n):
    first = prev = Node()
    for _ in range(n):
        prev = Node(prev)
    first.peer = prev                   # one long cycle through all of them
    return first


def make_garbage(n):
    for _ in range(n):
        a = Node()
        a.peer = Node(a)                # unreachable once the loop moves on: cyclic garbage


def collect_now(seconds):
    n = 0
    end = time.time() + seconds
    while time.time() < end:
        gc.collect()  # HOT:collect_now
        n += 1
    return n


def alloc_only(seconds):
    end = time.time() + seconds
    while time.time() < end:
        junk = [[i, str(i)] for i in range(500)]  # HOT:alloc_only
        del junk


def settle(seconds):
    end = time.time() + seconds
    while time.time() < end:
        pass


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.5
    gc.disable()
    live = build_live(60000)
    sys.stdout.write('ready\n')
    sys.stdout.flush()
    settle(0.4)
    collections = 0
    end = time.time() + seconds
    while time.time() < end:
        make_garbage(2000)
        collections += collect_now(0.05)
        alloc_only(0.05)
    sys.stdout.write('%d collections of %s\n' % (collections, type(live).__name__))


if __name__ == '__main__':
    main()

"""Page faults in bursts, for the fault-totals test: BURSTS times, map PAGES fresh pages and
write one byte in each (one fault each), then compute for 50 ms (no faults), so that a sampler
in frequency mode sees quiet spells and sudden bursts.

  bursts.py OUT BURSTS PAGES   then writes {"minflt": .., "majflt": ..} (its own getrusage,
                               whole life) as JSON to OUT
"""
import json
import mmap
import resource
import sys
import time


def touch(npages):
    m = mmap.mmap(-1, npages * mmap.PAGESIZE)
    for off in range(0, npages * mmap.PAGESIZE, mmap.PAGESIZE):
        m[off] = 1
    m.close()


def quiet(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def main():
    out, bursts, pages = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    for _ in range(bursts):
        touch(pages)
        quiet(0.05)
    ru = resource.getrusage(resource.RUSAGE_SELF)
    with open(out, 'w') as f:
        json.dump({'minflt': ru.ru_minflt, 'majflt': ru.ru_majflt}, f)


main()

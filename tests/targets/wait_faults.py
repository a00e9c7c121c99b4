"""Workload for test_offcpu.py (faults): the main thread reads a 32 MiB file (argv[1], on a
disk-backed file system) through mmap a page at a time (touch_pages), the file's pages
dropped from memory before each pass (madvise MADV_DONTNEED on the mapping, posix_fadvise
POSIX_FADV_DONTNEED on the clean file), so that touching a page not in memory is a major
fault that waits for the disk. Prints 'ready' once the file is written and synced, then makes
passes for argv[2] seconds (default 3)."""
import mmap
import os
import sys
import time

SIZE = 32 << 20


def touch_pages(m):
    total = 0
    for off in range(0, SIZE, mmap.PAGESIZE):
        total += m[off]  # WAIT:fault
    return total


def main():
    path = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
    with open(path, 'wb') as f:
        for _ in range(SIZE >> 20):
            f.write(os.urandom(1 << 20))
        f.flush()
        os.fsync(f.fileno())
    fd = os.open(path, os.O_RDONLY)
    m = mmap.mmap(fd, SIZE, mmap.MAP_SHARED, mmap.PROT_READ)
    print('ready', flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        m.madvise(mmap.MADV_DONTNEED)
        os.posix_fadvise(fd, 0, SIZE, os.POSIX_FADV_DONTNEED)
        touch_pages(m)
    m.close()
    os.close(fd)


if __name__ == '__main__':
    main()

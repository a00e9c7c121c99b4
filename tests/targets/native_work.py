"""Workload for the --native integration tests (tests/integration/test_native.py): Python code
that calls into C, and C that calls back into Python. Runs on Python 3.8 - 3.14.
The test finds the lines by the `# HOT:<function>` and `# CALL:<callee>` marker comments.

  native_work.py run TASK SECONDS [ARG]   print "ready", run TASK for SECONDS, print the JSON
                                          result, exit 0
  native_work.py serve                    print "ready", then run one "TASK SECONDS [ARG]" line
                                          of stdin after another, each answered with its JSON
                                          result; "maps" answers the mapped files; "quit" ends

Tasks:
  callback   sort_with_callback(): ctypes calls libc's qsort with cmp() as the comparison
             function; cmp() burns CPU in Python, so most time is Python called back from C
  cwork      hash_work() (hashlib.sha256 of a 16 MB buffer: OpenSSL's libcrypto) and
             zlib_work() (zlib.compress of 400 kB: libz), about half the CPU time each
             (measured with thread_time())
  late ARG   ctypes.CDLL(ARG).late_spin() from late_work(), and bz2.compress() from bz2_work(),
             about half the CPU time each: ARG and bz2 (libbz2) are loaded only now (nothing imports them before)
  syscalls   read_zero(): os.read of /dev/zero, 1 MiB at a time (time in the kernel)
"""
import ctypes
import json
import os
import sys
import time

BURN = 200


# ---------------------------------------------------------------------------- callback

def cmp(pa, pb):
    x = 0
    for i in range(BURN): x += i  # HOT:cmp
    return pa[0] - pb[0]


CMPFUNC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                           ctypes.POINTER(ctypes.c_int))
CMP = CMPFUNC(cmp)
LIBC = ctypes.CDLL(None)   # the global scope: qsort is libc's
LIBC.qsort.restype = None
LIBC.qsort.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, CMPFUNC]


def sort_with_callback(n, seed):
    arr = (ctypes.c_int * n)(*[(i * 7919 + seed) % 1009 for i in range(n)])
    LIBC.qsort(arr, n, ctypes.sizeof(ctypes.c_int), CMP)  # CALL:qsort
    return arr[0]


def task_callback(seconds, arg):
    end = time.monotonic() + seconds
    rounds = 0
    while time.monotonic() < end:
        sort_with_callback(200, rounds)  # CALL:sort_with_callback
        rounds += 1
    return {'rounds': rounds}


# ---------------------------------------------------------------------------- C work

HASH_DATA = None
ZLIB_DATA = None


def hash_work():
    import hashlib
    return hashlib.sha256(HASH_DATA).digest()  # CALL:sha256


def zlib_work():
    import zlib
    return len(zlib.compress(ZLIB_DATA, 6))  # CALL:compress


def task_cwork(seconds, arg):
    global HASH_DATA, ZLIB_DATA
    if HASH_DATA is None:
        HASH_DATA = bytes(range(256)) * 65536
        ZLIB_DATA = b''.join(b'%d,' % (i * i % 100003) for i in range(60000))
    times = {'hash': 0.0, 'zlib': 0.0}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        name = min(times, key=times.get)    # the one with less time so far: about 50/50
        t0 = time.thread_time()
        (hash_work if name == 'hash' else zlib_work)()
        times[name] += time.thread_time() - t0
    import hashlib
    return {'times': times, 'sha256': getattr(hashlib.sha256, '__name__', '?')}


# ---------------------------------------------------------------------------- late loading

LATE = None
BZ2_DATA = None


def late_work():
    return LATE.late_spin(20)  # CALL:late_spin


def bz2_work():
    import bz2
    return len(bz2.compress(BZ2_DATA, 9))  # CALL:bz2_compress


def task_late(seconds, arg):
    global LATE, BZ2_DATA
    if LATE is None:
        LATE = ctypes.CDLL(arg)
        LATE.late_spin.restype = ctypes.c_uint64
        LATE.late_spin.argtypes = [ctypes.c_int]
        BZ2_DATA = b''.join(b'%d;' % (i * 2654435761 % 1000003) for i in range(60000))
    times = {'late': 0.0, 'bz2': 0.0}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        name = min(times, key=times.get)    # the one with less time so far: about 50/50
        t0 = time.thread_time()
        (late_work if name == 'late' else bz2_work)()
        times[name] += time.thread_time() - t0
    return {'times': times}


# ---------------------------------------------------------------------------- syscalls

def read_zero(fd):
    n = 0
    for _ in range(50): n += len(os.read(fd, 1 << 20))  # HOT:read_zero
    return n


def task_syscalls(seconds, arg):
    fd = os.open('/dev/zero', os.O_RDONLY)
    end = time.monotonic() + seconds
    total = 0
    while time.monotonic() < end:
        total += read_zero(fd)
    os.close(fd)
    return {'bytes': total}


# ---------------------------------------------------------------------------- driver

TASKS = {'callback': task_callback, 'cwork': task_cwork, 'late': task_late,
         'syscalls': task_syscalls}


def maps():
    with open('/proc/self/maps') as f:
        return sorted({l.split(None, 5)[5].strip() for l in f if len(l.split(None, 5)) == 6})


def answer(obj):
    sys.stdout.write(json.dumps(obj) + '\n')
    sys.stdout.flush()


def run_line(words):
    return TASKS[words[0]](float(words[1]), words[2] if len(words) > 2 else None)


def serve():
    deadline = time.monotonic() + 600  # never outlive a crashed test by long
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == 'quit' or time.monotonic() > deadline:
            return
        if words[0] == 'maps':
            answer({'maps': maps()})
        else:
            answer(run_line(words))


def main():
    sys.stdout.write('ready\n')
    sys.stdout.flush()
    if sys.argv[1] == 'run':
        answer(run_line(sys.argv[2:]))
    else:
        serve()


if __name__ == '__main__':
    main()

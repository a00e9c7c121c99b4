"""A target that notices what a profiler's stops do to it (tests/integration/test_dump.py, case
harm): threads in raw system calls that fail with EINTR when interrupted and that the kernel
does not restart (called through ctypes, so Python's own retry on EINTR hides nothing), each
checking every result and timing every call; then 'ready'.

threads (each blocks SIGUSR1, so the test's signals reach the main thread alone):
  epoll-N:  epoll_wait(1000 ms) on a pipe no one writes          (3 of them)
  recv-N:   recv on a socket with SO_RCVTIMEO 1 s                (3)
  accept-N: accept on a listening socket with SO_RCVTIMEO 1 s    (2)
  sigwait-N: sigtimedwait(SIGUSR2, 1 s)                          (2)
  quick-N:  epoll_wait(2 ms) in a loop: often between two calls  (4)
  poll-N:   poll(1000 ms) on a pipe no one writes, and
  nap-N:    clock_nanosleep(1 s): calls the kernel restarts after a stop, with what is left
            of their timeout (a stop of them must not lengthen it)       (1 each)
  spin-N:   a CPU loop                                           (2)
A call that fails with EINTR, or fails otherwise, or returns after more than its timeout plus
LATE_S, or before it, is counted against its thread. The main thread waits in Python's
epoll().poll() on stdin with a SIGUSR1 handler that notes when it ran (CLOCK_MONOTONIC).

commands on stdin, one JSON line each in answer: 'stats' -> {"threads": {name: {"calls": N,
"eintr": N, "errors": [...], "late": N, "early": N, "max_s": S}}, "usr1": [times]}; 'quit'.
"""
import ctypes
import errno
import json
import os
import select
import signal
import socket
import struct
import sys
import threading
import time

LATE_S = 0.5
libc = ctypes.CDLL(None, use_errno=True)
libc.epoll_wait.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
libc.recv.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
libc.accept.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
libc.sigtimedwait.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
libc.poll.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int]
libc.clock_nanosleep.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
stats = {}
usr1 = []
keep = []       # the fds' objects, alive


class Timespec(ctypes.Structure):
    _fields_ = [('tv_sec', ctypes.c_long), ('tv_nsec', ctypes.c_long)]


def account(name, rc, expect_errno, timeout_s, t0):
    """One call's result: rc -1 with expect_errno (or 0 for epoll) after timeout_s is right."""
    e = ctypes.get_errno()
    took = time.monotonic() - t0
    s = stats[name]
    s['calls'] += 1
    s['max_s'] = max(s['max_s'], took)
    if took > timeout_s + LATE_S:
        s['late'] += 1
    if rc == -1 and e == errno.EINTR:
        s['eintr'] += 1
        return
    if rc == -1 and e != expect_errno or rc not in (-1, 0):
        if len(s['errors']) < 5:
            s['errors'].append('rc %d errno %s' % (rc, errno.errorcode.get(e, e)))
        return
    if took < timeout_s * 0.9:
        s['early'] += 1


def epoll_loop(name, timeout_ms):
    ep = select.epoll()
    r, w = os.pipe()
    keep.extend([ep, r, w])
    ep.register(r, select.EPOLLIN)
    events = ctypes.create_string_buffer(64)
    while True:
        t0 = time.monotonic()
        rc = libc.epoll_wait(ep.fileno(), events, 1, timeout_ms)
        account(name, rc, 0, timeout_ms / 1000, t0)


def recv_loop(name):
    a, b = socket.socketpair()
    keep.extend([a, b])
    a.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack('ll', 1, 0))
    buf = ctypes.create_string_buffer(16)
    while True:
        t0 = time.monotonic()
        rc = libc.recv(a.fileno(), buf, 1, 0)
        account(name, rc, errno.EAGAIN, 1.0, t0)


def accept_loop(name):
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    s.listen()
    keep.append(s)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack('ll', 1, 0))
    while True:
        t0 = time.monotonic()
        rc = libc.accept(s.fileno(), None, None)
        account(name, rc, errno.EAGAIN, 1.0, t0)


def sigwait_loop(name):
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})
    sigset = ctypes.create_string_buffer(128)
    struct.pack_into('Q', sigset, 0, 1 << (signal.SIGUSR2 - 1))
    ts = Timespec(1, 0)
    while True:
        t0 = time.monotonic()
        rc = libc.sigtimedwait(sigset, None, ctypes.byref(ts))
        account(name, rc, errno.EAGAIN, 1.0, t0)


def poll_loop(name):
    r, w = os.pipe()
    keep.extend([r, w])
    pfd = ctypes.create_string_buffer(struct.pack('ihh', r, select.POLLIN, 0))
    while True:
        t0 = time.monotonic()
        rc = libc.poll(pfd, 1, 1000)
        account(name, rc, 0, 1.0, t0)


def nap_loop(name):
    ts = Timespec(1, 0)
    while True:
        t0 = time.monotonic()
        rc = libc.clock_nanosleep(time.CLOCK_MONOTONIC, 0, ctypes.byref(ts), None)
        # clock_nanosleep returns the error itself, not -1 and errno
        if rc:
            ctypes.set_errno(rc)
            rc = -1
        account(name, rc, 0, 1.0, t0)


def spin_loop(name):
    n = 0
    while True:
        n += 1
        if n % 100000 == 0:
            stats[name]['calls'] += 1


def start(name, fn, *args):
    stats[name] = {'calls': 0, 'eintr': 0, 'errors': [], 'late': 0, 'early': 0, 'max_s': 0.0}

    def run():
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
        fn(name, *args)
    threading.Thread(target=run, name=name, daemon=True).start()


def main():
    signal.signal(signal.SIGUSR1, lambda *_: usr1.append(time.monotonic()))
    for i in range(3):
        start('epoll-%d' % i, epoll_loop, 1000)
        start('recv-%d' % i, recv_loop)
    for i in range(2):
        start('accept-%d' % i, accept_loop)
        start('sigwait-%d' % i, sigwait_loop)
        start('spin-%d' % i, spin_loop)
    for i in range(4):
        start('quick-%d' % i, epoll_loop, 2)
    start('poll-0', poll_loop)
    start('nap-0', nap_loop)
    time.sleep(0.3)
    print('ready', flush=True)
    ep = select.epoll()
    ep.register(0, select.EPOLLIN)
    buf = b''
    while True:
        ep.poll(60)
        data = os.read(0, 4096)
        if not data:
            break
        buf += data
        while b'\n' in buf:
            line, buf = buf.split(b'\n', 1)
            cmd = line.decode().strip()
            if cmd == 'quit':
                os._exit(0)
            if cmd == 'stats':
                print(json.dumps({'threads': stats, 'usr1': usr1}), flush=True)
    os._exit(0)


if __name__ == '__main__':
    main()

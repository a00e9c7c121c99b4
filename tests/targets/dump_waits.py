"""A target for tests/integration/test_dump.py (case waits): six threads blocked for good, each in
a function of its own, then 'ready'; 'quit' on stdin exits.

threads (name: function, wait):
  acceptor: accept_wait  accept on a listening socket no one connects to
  receiver: recv_wait    recv on a socket pair's end no one writes to
  piper:    pipe_wait    os.read on a pipe no one writes to
  locker:   lock_wait    acquiring a threading.Lock the main thread holds
  sleeper:  sleep_wait   time.sleep(3600)
  reaper:   child_wait   os.waitpid on a forked child that sleeps until the target exits
the main thread waits in os.read on stdin.
"""
import os
import socket
import threading
import time

held = threading.Lock()


def accept_wait(s):
    s.accept()


def recv_wait(s):
    s.recv(1)


def pipe_wait(r):
    os.read(r, 1)


def lock_wait():
    held.acquire()


def sleep_wait():
    time.sleep(3600)


def child_wait(pid):
    os.waitpid(pid, 0)


def main():
    held.acquire()
    listener = socket.socket()
    listener.bind(('127.0.0.1', 0))
    listener.listen(1)
    a, b = socket.socketpair()
    r, w = os.pipe()
    # forked before any thread starts; it sleeps until its parent is gone, then exits
    kid = os.fork()
    if kid == 0:
        ppid = os.getppid()
        while os.getppid() == ppid:
            time.sleep(0.2)
        os._exit(0)
    threads = [('acceptor', accept_wait, (listener,)), ('receiver', recv_wait, (a,)),
               ('piper', pipe_wait, (r,)), ('locker', lock_wait, ()),
               ('sleeper', sleep_wait, ()), ('reaper', child_wait, (kid,))]
    for name, fn, args in threads:
        threading.Thread(target=fn, args=args, name=name, daemon=True).start()
    time.sleep(0.3)     # every thread in its wait
    print('ready', flush=True)
    while True:
        line = os.read(0, 4096)
        if not line or line.strip() == b'quit':
            os._exit(0)


if __name__ == '__main__':
    main()

"""A target whose threads wait for the whole of a recording (tests/integration/test_offcpu.py,
cases attach and attach-off): each blocked before hwspy attaches, in a function of its own,
then 'ready'.

threads (name: function, wait):
  server:  serve      accept on a listening socket no one connects to
  worker:  work       queue.Queue.get on a queue no one fills
  locker:  lock_wait  acquiring a threading.Lock the main thread holds
  napper:  nap        time.sleep(1) in a loop (runs for a moment each second)
the main thread waits in os.read on stdin, for commands: 'quit' exits.
With 'tree' as its argument it forks two children first, each sleeping in child_nap for good,
then runs as above (their pids on the line after 'ready').
With 'launch' as its argument it starts no thread: its main thread sleeps in nap_once for 2 s
from its first line (a wait that begins before hwspy's capture is ready), then exits.
"""
import os
import queue
import socket
import sys
import threading
import time

held = threading.Lock()
jobs = queue.Queue()


def serve(s):
    s.accept()


def work():
    jobs.get()


def lock_wait():
    held.acquire()


def nap():
    while True:
        time.sleep(1)


def child_nap():
    while True:
        time.sleep(3600)


def nap_once():
    time.sleep(2)


def main():
    if sys.argv[1:] == ['launch']:
        nap_once()
        return
    kids = []
    if sys.argv[1:] == ['tree']:
        for _ in range(2):
            pid = os.fork()
            if pid == 0:
                child_nap()
            kids.append(pid)
    held.acquire()
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    s.listen()
    for name, fn, args in [('server', serve, (s,)), ('worker', work, ()),
                           ('locker', lock_wait, ()), ('napper', nap, ())]:
        threading.Thread(target=fn, args=args, name=name, daemon=True).start()
    time.sleep(0.3)
    print('ready', flush=True)
    if kids:
        print(' '.join(map(str, kids)), flush=True)
    while True:
        data = os.read(0, 4096)
        if not data or b'quit' in data:
            for pid in kids:
                os.kill(pid, 9)
            os._exit(0)


if __name__ == '__main__':
    main()

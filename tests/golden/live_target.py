# -*- coding: utf-8 -*-
"""The live target of tests/integration/test_golden.py (hwspy dump --json and stat --json).

live_target.py dump: a child process (wait_child waits for it), then threads each blocked in a
  known call in a function of its own, then 'ready'; the main thread waits in os.read on stdin
  (it exits at EOF or 'quit'):
    'dormir ☾'    sleep_long   time.sleep
    'verrou'      wait_lock    acquiring a threading.Lock the main thread holds
    'tuyau'       read_pipe    os.read on a pipe no one writes
    'accept'      accept_conn  accept on a listening TCP socket no one connects to
    'recv'        recv_sock    recv on a socketpair no one writes
    'enfant'      wait_child   os.waitpid on the child (which sleeps)
    '<&"\'>'      wait_event   threading.Event().wait()
live_target.py stat: every 20 ms touches 1,000 fresh pages in touch_pages() (~50,000 page
  faults a second, 10 times stat's threshold, at a fifth of a CPU or less: under the 0.5 CPUs
  of the waiting finding), then sleeps in nap(); 'ready' after the first round; until killed.
"""
import mmap
import os
import signal
import socket
import sys
import threading
import time


def sleep_long():
    while True:
        time.sleep(3600)


def wait_lock(lock):
    lock.acquire()


def read_pipe(fd):
    os.read(fd, 1)


def accept_conn(s):
    s.accept()


def recv_sock(s):
    s.recv(1)


def wait_child(pid):
    os.waitpid(pid, 0)


def wait_event(ev):
    ev.wait()


def dump():
    child = os.fork()
    if child == 0:
        time.sleep(3600)
        os._exit(0)
    lock = threading.Lock()
    lock.acquire()
    pipe_r, pipe_w = os.pipe()
    listener = socket.socket()
    listener.bind(('127.0.0.1', 0))
    listener.listen(1)
    a, b = socket.socketpair()
    targets = [('dormir ☾', sleep_long, ()), ('verrou', wait_lock, (lock,)),
               ('tuyau', read_pipe, (pipe_r,)), ('accept', accept_conn, (listener,)),
               ('recv', recv_sock, (a,)), ('enfant', wait_child, (child,)),
               ('<&"\'>', wait_event, (threading.Event(),))]
    for name, fn, args in targets:
        threading.Thread(target=fn, args=args, name=name, daemon=True).start()
    time.sleep(0.3)         # every thread in its call
    print('ready', flush=True)
    while True:
        data = os.read(0, 4096)
        if not data or b'quit' in data:
            break
    os.kill(child, signal.SIGKILL)
    os._exit(0)


def touch_pages(n):
    page = mmap.PAGESIZE
    m = mmap.mmap(-1, n * page)
    for off in range(0, n * page, page):
        m[off] = 1
    m.close()


def nap():
    time.sleep(0.02)


def stat():
    touch_pages(1000)
    nap()
    print('ready', flush=True)
    while True:
        touch_pages(1000)
        nap()


if __name__ == '__main__':
    {'dump': dump, 'stat': stat}[sys.argv[1]]()

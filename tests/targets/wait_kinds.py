"""Workload for test_offcpu.py (kinds): after 0.3 s of CPU (warm_up: hwspy finds the
interpreter and starts its capture meanwhile), the main thread blocks argv[1] times (default 5)
for 30 ms each in each of: recv on a socket (sock_recv), poll on a pipe (poll_wait),
select.select on a pipe (select_wait) and epoll on a pipe (epoll_wait_); a helper thread makes
each ready."""
import os
import select
import socket
import sys
import threading
import time

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
PHASE = 0.03


def warm_up():
    end = time.thread_time() + 0.3
    while time.thread_time() < end:
        pass


def sock_recv(s):
    return s.recv(1)  # WAIT:recv


def poll_wait(r):
    p = select.poll()
    p.register(r, select.POLLIN)
    p.poll()  # WAIT:poll
    return os.read(r, 1)


def select_wait(r):
    select.select([r], [], [])  # WAIT:select
    return os.read(r, 1)


def epoll_wait_(r):
    ep = select.epoll()
    ep.register(r, select.EPOLLIN)
    ep.poll()  # WAIT:epoll
    ep.close()
    return os.read(r, 1)


def helper(go_r, sock, w):
    while True:
        cmd = os.read(go_r, 1)
        if cmd == b'q':
            return
        time.sleep(PHASE)
        if cmd == b's':
            sock.send(b'x')
        else:
            os.write(w, b'x')


def main():
    a, b = socket.socketpair()
    r, w = os.pipe()
    go_r, go_w = os.pipe()
    t = threading.Thread(target=helper, args=(go_r, b, w), name='helper')
    t.start()
    warm_up()
    for _ in range(ROUNDS):
        os.write(go_w, b's')
        sock_recv(a)
        os.write(go_w, b'p')
        poll_wait(r)
        os.write(go_w, b'p')
        select_wait(r)
        os.write(go_w, b'p')
        epoll_wait_(r)
    os.write(go_w, b'q')
    t.join()


if __name__ == '__main__':
    main()

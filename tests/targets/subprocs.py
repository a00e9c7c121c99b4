"""Workload for test_subprocesses.py.

  pool           after 0.3 s of CPU (hwspy finds the interpreter meanwhile), a
                 multiprocessing Pool of 4 workers runs work_a, work_b, work_c and work_d, one
                 each, for 0.6 s of CPU each, each held back until all four are running, so
                 that each function runs in its own worker. Workers are forked (3.14's default,
                 forkserver, starts sys.executable, which Debian's 3.13/3.14 here cannot run
                 without the loader tests/setup-pythons.sh puts before it)
  many N         after 0.3 s of CPU, forks 8 children that sleep 0.5 s (no CPU, so no samples
                 of theirs), then the same as pool with a Pool of N workers (more processes
                 live at once than hwspy first makes room for), each running work_n, held
                 back until all N run, then 0.1 s of CPU; each prints 'worker PID' to stderr
                 once it runs
  exec PYTHON    runs PYTHON (another interpreter) on this file with 'child': child_spin burns
                 0.6 s of CPU there, in a process of its own
  pipe           a forked child makes a pipe of its own, past 20 fds it opens first (an fd
                 the parent does not have; it prints 'child pipe fd N' to stderr) and
                 blocks reading it in child_read, 5 times for 50 ms, a thread of its own writing;
                 a first read of 0.3 s before them (first_read) gives hwspy time to set the
                 child's thread state, which its switch-outs until then, read late (the rings
                 are read in batches), are without ([unknown]); and it lives 0.3 s after them,
                 as hwspy names an fd from /proc when it reads the sample
"""
import multiprocessing
import os
import subprocess
import sys
import threading
import time


def spin(seconds):
    end = time.thread_time() + seconds
    s = 0
    while time.thread_time() < end:
        for i in range(1000): s += i  # HOT:spin
    return s


def work_a(barrier):
    barrier.wait()
    return spin(0.6)


def work_b(barrier):
    barrier.wait()
    return spin(0.6)


def work_c(barrier):
    barrier.wait()
    return spin(0.6)


def work_d(barrier):
    barrier.wait()
    return spin(0.6)


def work_n(barrier):
    barrier.wait()
    os.write(2, b'worker %d\n' % os.getpid())      # one write: lines of twelve, whole
    return spin(0.1)


def child_spin():
    return spin(0.6)


def child_read(r):
    return os.read(r, 1)  # WAIT:child_read


def first_read(r):
    return os.read(r, 1)


def pipe_child():
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(20)]
    r, w = os.pipe()
    print('child pipe fd %d' % r, file=sys.stderr, flush=True)

    def writer():
        time.sleep(0.3)
        os.write(w, b'x')
        for _ in range(5):
            time.sleep(0.05)
            os.write(w, b'x')

    t = threading.Thread(target=writer)
    t.start()
    first_read(r)
    for _ in range(5):
        child_read(r)
    t.join()
    time.sleep(0.3)
    for fd in held:
        os.close(fd)


def pool():
    spin(0.3)
    ctx = multiprocessing.get_context('fork')
    with ctx.Manager() as m:
        barrier = m.Barrier(4)
        with ctx.Pool(4) as p:
            results = [p.apply_async(f, (barrier,)) for f in (work_a, work_b, work_c, work_d)]
            for r in results:
                r.get(timeout=60)


def many(n):
    spin(0.3)
    sleepers = []
    for _ in range(8):
        pid = os.fork()
        if pid == 0:
            time.sleep(0.5)
            os._exit(0)
        sleepers.append(pid)
    ctx = multiprocessing.get_context('fork')
    with ctx.Manager() as m:
        barrier = m.Barrier(n)
        with ctx.Pool(n) as p:
            results = [p.apply_async(work_n, (barrier,)) for _ in range(n)]
            for r in results:
                r.get(timeout=60)
    for pid in sleepers:
        os.waitpid(pid, 0)


if __name__ == '__main__':
    if sys.argv[1] == 'pool':
        pool()
    elif sys.argv[1] == 'many':
        many(int(sys.argv[2]))
    elif sys.argv[1] == 'exec':
        spin(0.3)
        subprocess.run([sys.argv[2], __file__, 'child'], check=True)
    elif sys.argv[1] == 'child':
        child_spin()
    elif sys.argv[1] == 'pipe':
        spin(0.3)
        p = multiprocessing.get_context('fork').Process(target=pipe_child)
        p.start()
        p.join()

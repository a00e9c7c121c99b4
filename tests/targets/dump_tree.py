"""A process tree for `hwspy dump --subprocesses` and `record --subprocesses -p` (tests/
integration/test_dump.py case tree): two forked children each spinning in a function of its own
(child_a, child_b), a child running `sleep` (no Python), the parent waiting in parent_wait on
stdin; 'ready' once all run. 'quit' ends them all."""
import os
import signal
import subprocess
import sys
import time


def child_a():
    n = 0
    while True:
        n += 1


def child_b():
    n = 0
    while True:
        n += 1


def parent_wait(kids):
    while True:
        data = os.read(0, 4096)
        if not data or b'quit' in data:
            for pid in kids:
                os.kill(pid, signal.SIGKILL)
            os._exit(0)


def main():
    kids = []
    for fn in (child_a, child_b):
        pid = os.fork()
        if pid == 0:
            fn()
        kids.append(pid)
    kids.append(subprocess.Popen(['sleep', '600']).pid)
    time.sleep(0.3)
    print('ready', flush=True)
    parent_wait(kids)


if __name__ == '__main__':
    main()

"""A target for `hwspy dump` (tests/integration/test_dump.py): threads in known states, each in a
function of its own, then 'ready'; it answers commands on stdin, one JSON line each.

threads (name: function, state):
  running:  spin_running   a CPU loop
  sleeping: sleep_long     time.sleep
  lock:     wait_lock      acquiring a threading.Lock the main thread holds
  pipe:     read_pipe      os.read on a pipe no one writes
  gil-a, gil-b: spin_gil   two more CPU loops: with `running`, three threads want the GIL, so
                           at any time the others wait for it
the main thread waits in os.read on stdin.

commands: 'info' -> {"pipe_fd": N, "counts": {name: loops so far}}; 'quit' -> exits.
"""
import json
import os
import sys
import threading
import time

counts = {'running': 0, 'gil-a': 0, 'gil-b': 0}
held = threading.Lock()
pipe_r, pipe_w = os.pipe()


def spin_running():
    while True:
        counts['running'] += 1


def spin_gil(name):
    while True:
        counts[name] += 1


def sleep_long():
    while True:
        time.sleep(3600)


def wait_lock():
    held.acquire()


def read_pipe():
    os.read(pipe_r, 1)


def main():
    held.acquire()
    targets = [('running', spin_running, ()), ('sleeping', sleep_long, ()),
               ('lock', wait_lock, ()), ('pipe', read_pipe, ()),
               ('gil-a', spin_gil, ('gil-a',)), ('gil-b', spin_gil, ('gil-b',))]
    for name, fn, args in targets:
        threading.Thread(target=fn, args=args, name=name, daemon=True).start()
    # every thread in its function and state before 'ready'
    time.sleep(0.5)
    print('ready', flush=True)
    buf = b''
    while True:
        data = os.read(0, 4096)
        if not data:
            break
        buf += data
        while b'\n' in buf:
            line, buf = buf.split(b'\n', 1)
            cmd = line.decode().strip()
            if cmd == 'quit':
                os._exit(0)
            if cmd == 'info':
                print(json.dumps({'pipe_fd': pipe_r, 'counts': dict(counts)}), flush=True)
    os._exit(0)


if __name__ == '__main__':
    main()

"""A command for the launch-mode tests (tests/integration/test_launch.py): runs on the CPU for a
moment (so that a profile has samples), then sleeps, and appends to MARKER each signal it got.

usage: sleeper.py MARKER [--ignore-int] [--ignore-term] [--child] [--sleep SECS] [--exit N]
                  [--kill-self SIG]
  SIGINT: 'SIGINT' is written, then it exits N (default 7) from its KeyboardInterrupt handler;
          with --ignore-int it writes 'SIGINT' and sleeps on
  SIGTERM: 'SIGTERM' is written, then it dies of SIGTERM; with --ignore-term it sleeps on
  --child: starts `sleep 60` first and writes 'child=PID' (a process of its own to end too)
  --exit N: exits N after the spin instead of sleeping; --kill-self SIG: kills itself with SIG
"""
import argparse
import os
import signal
import subprocess
import sys
import time


def mark(path, text):
    with open(path, 'a') as f:
        f.write(text + '\n')


def spin(seconds):
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
    return n


def main():
    p = argparse.ArgumentParser()
    p.add_argument('marker')
    p.add_argument('--ignore-int', action='store_true')
    p.add_argument('--ignore-term', action='store_true')
    p.add_argument('--child', action='store_true')
    p.add_argument('--sleep', type=float, default=60)
    p.add_argument('--exit', type=int)
    p.add_argument('--kill-self', type=int)
    a = p.parse_args()

    def on_term(sig, frame):
        mark(a.marker, 'SIGTERM')
        if a.ignore_term:
            return
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_term)
    if a.ignore_int:
        signal.signal(signal.SIGINT, lambda sig, frame: mark(a.marker, 'SIGINT'))
    if a.child:
        null = subprocess.DEVNULL
        child = subprocess.Popen(['sleep', '60'], stdin=null, stdout=null, stderr=null)
        mark(a.marker, 'child=%d' % child.pid)
    try:
        spin(0.4)
        if a.kill_self:
            os.kill(os.getpid(), a.kill_self)
        if a.exit is not None:
            sys.exit(a.exit)
        mark(a.marker, 'started')
        end = time.monotonic() + a.sleep
        while time.monotonic() < end:
            time.sleep(end - time.monotonic())
    except KeyboardInterrupt:
        mark(a.marker, 'SIGINT')
        sys.exit(7)


main()

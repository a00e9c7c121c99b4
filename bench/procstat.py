"""CPU-time readings from /proc shared by the bench scripts (overhead.py, native.py)."""
import os
import time


def task_cpu_ns(pid):
    """CPU time (ns) of every thread of pid so far, from schedstat; None once it has gone."""
    total = 0
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return None
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def busy_ns():
    """CPU time (ns) all CPUs together have spent busy so far (/proc/stat, tick resolution)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v[:8]) - v[3] - v[4]) * 1e9 / os.sysconf("SC_CLK_TCK")


def machine_load(seconds=0.5):
    """CPUs busy over the next seconds, less this script."""
    b, c, t = busy_ns(), time.process_time_ns(), time.monotonic_ns()
    time.sleep(seconds)
    return (busy_ns() - b - (time.process_time_ns() - c)) / (time.monotonic_ns() - t)

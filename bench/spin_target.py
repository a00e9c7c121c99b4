"""Spinning target for bench/overhead.py.

Spins on time.perf_counter_ns() and records every gap between two consecutive
reads that is longer than a threshold: whatever stopped or preempted this thread
(a profiler's sample interrupt, a ptrace stop, the scheduler, the hypervisor).

    python spin_target.py OUT.json [--threshold-ns 5000] [--max-seconds 120]

Prints "ready PID PERF_COUNTER_NS CLOCK" on stdout once it starts spinning, spins
until SIGUSR1 (or --max-seconds), then writes OUT.json:
    {"python": "3.11.7", "pid": ..., "clock": "clock_gettime(CLOCK_MONOTONIC)",
     "threshold_ns": ..., "t_start": ns, "t_end": ns, "loops": N,
     "gaps": [start_ns, length_ns, kind, start_ns, length_ns, kind, ...]}
kind says what happened to this thread during the gap (getrusage(RUSAGE_THREAD) context
switch counts, read only after a gap): 0 no context switch (an interrupt: e.g. the sampling
timer writing a sample), 1 a voluntary switch (it was stopped or slept: a ptrace stop),
2 only an involuntary switch (it was preempted: by the profiler or by any other process).
Timestamps are perf_counter_ns(), which is CLOCK_MONOTONIC on Linux (the clock
is reported, and the bench checks it against its own time.monotonic_ns()).
"""
import json
import os
import platform
import resource
import signal
import sys
import time


NO_SWITCH, VOLUNTARY, PREEMPTED = 0, 1, 2


class Stop(Exception):
    pass


def _stop(signum, frame):
    raise Stop


def spin(threshold_ns, max_ns):
    pc = time.perf_counter_ns
    ru = resource.getrusage
    THREAD = resource.RUSAGE_THREAD
    gaps = []
    add = gaps.append
    loops = 0
    r = ru(THREAD)
    nv, niv = r.ru_nvcsw, r.ru_nivcsw
    t_start = prev = pc()
    deadline = t_start + max_ns
    try:
        while True:
            # 256 reads per deadline check keep the loop body tiny
            for _ in range(256):
                t = pc()
                if t - prev > threshold_ns:
                    # what happened in the gap: this thread was stopped or slept (a voluntary
                    # switch: a ptrace stop), preempted (involuntary), or neither (an interrupt)
                    r = ru(THREAD)
                    if r.ru_nvcsw != nv:
                        kind = VOLUNTARY
                    elif r.ru_nivcsw != niv:
                        kind = PREEMPTED
                    else:
                        kind = NO_SWITCH
                    nv, niv = r.ru_nvcsw, r.ru_nivcsw
                    add(prev)
                    add(t - prev)
                    add(kind)
                    t = pc()    # the getrusage call itself is not a gap
                prev = t
            loops += 256
            if prev > deadline:
                break
    except Stop:
        pass
    return t_start, prev, loops, gaps


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    out = args[0]
    threshold_ns = 5000
    max_s = 120.0
    i = 1
    while i < len(args):
        if args[i] == "--threshold-ns":
            threshold_ns = int(args[i + 1])
        elif args[i] == "--max-seconds":
            max_s = float(args[i + 1])
        else:
            sys.exit("unknown option " + args[i])
        i += 2

    signal.signal(signal.SIGUSR1, _stop)
    clock = time.get_clock_info("perf_counter").implementation
    print("ready", os.getpid(), time.perf_counter_ns(), clock.replace(" ", ""), flush=True)
    t_start, t_end, loops, gaps = spin(threshold_ns, int(max_s * 1e9))
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    with open(out + ".tmp", "w") as f:
        json.dump({"python": platform.python_version(), "pid": os.getpid(), "clock": clock,
                   "threshold_ns": threshold_ns, "t_start": t_start, "t_end": t_end,
                   "loops": loops, "gaps": gaps}, f)
    os.rename(out + ".tmp", out)


if __name__ == "__main__":
    main()

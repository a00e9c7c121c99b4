#!/usr/bin/python3
"""Time to write each output format for a big profile: 10^6 samples over 10^5 distinct stacks.

A synthetic folded file stands in for a long recording: --stacks distinct stacks (default 10^5)
of 8-40 frames drawn from a pool of Python, native and kernel frames (a tree-shaped program:
shared roots, diverse leaves), with counts summing to --samples (default 10^6). Then, for each
format, `hwspy convert -v IN -o OUT` runs --repeat times. The figures are medians: the writer's
own elapsed time (what -v prints for writing; reading left out); for the whole conversion
(reading the folded file, then writing) the user + sys CPU time and the elapsed time; the
output's size and hwspy's peak RSS (the largest of the runs, measured by GNU time where it is
installed, "?" otherwise); and -v's reading time over all runs. Where FlameGraph's
flamegraph.pl is installed, it draws the same file for comparison.

    /usr/bin/python3 bench/outputs.py [--stacks N] [--samples N] [--repeat 3] [--hwspy PATH]

Budgets (the issue): folded < 0.5 s, SVG < 1 s, pprof < 1 s. Exit status 1 when the writer
alone is over; the whole conversion is marked against the same budgets.
"""
import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_HWSPY = os.path.join(os.path.dirname(HERE), "build", "cli", "hwspy")
BUDGET_S = {"folded": 0.5, "svg": 1.0, "pprof": 1.0}
VERBOSE_RE = re.compile(r'read [0-9,]+ samples in [0-9,]+ stacks in ([0-9.]+) s; '
                        r'wrote \S+ (?:\([^)]*\) )?in ([0-9.]+) s')
FORMATS = (("folded", "out.folded"), ("svg", "out.svg"), ("pprof", "out.pb.gz"),
           ("speedscope", "out.speedscope.json"))


def make_folded(path, n_stacks, n_samples, seed=1):
    rnd = random.Random(seed)
    files = ["/srv/app/%s.py" % w for w in ("main", "train", "model", "data", "loss", "utils")]
    py = ["%s_%d (%s:%d)" % (rnd.choice(("step", "forward", "load", "collate", "run", "call")),
                             i, rnd.choice(files), rnd.randint(1, 900)) for i in range(3000)]
    native = ["%s_%d [%s]" % (rnd.choice(("memcpy", "deflate", "sgemm", "hash")), i,
                              rnd.choice(("libc.so.6", "libz.so.1", "libopenblas.so.0")))
              for i in range(800)]
    kernel = ["%s_%d_[k]" % (rnd.choice(("do_page_fault", "clear_page", "schedule")), i)
              for i in range(200)]
    roots = py[:20]
    seen = set()
    stacks = []
    while len(stacks) < n_stacks:
        depth = rnd.randint(8, 40)
        frames = [roots[rnd.randrange(3)], roots[3 + rnd.randrange(5)]]
        # shared upper part, diverse lower part
        frames += [py[rnd.randrange(min(len(py), 40 + 60 * d))] for d in range(depth - 4)]
        if rnd.random() < 0.4:
            frames.append(rnd.choice(native))
            if rnd.random() < 0.3:
                frames.append(rnd.choice(kernel))
        key = ";".join(frames)
        if key in seen:
            continue
        seen.add(key)
        stacks.append(key)
    # counts: a long tail, summing to n_samples exactly
    weights = [1.0 / (i + 1) ** 0.8 for i in range(n_stacks)]
    scale = (n_samples - n_stacks) / sum(weights)
    counts = [1 + int(w * scale) for w in weights]
    counts[0] += n_samples - sum(counts)
    with open(path, "w") as f:
        for s, c in zip(stacks, counts):
            f.write("%s %d\n" % (s, c))
    return sum(counts)


# A child's ru_maxrss starts at its parent's peak (Linux keeps it across fork and exec), and
# this script holds the whole input in memory while it writes it: so hwspy runs under GNU
# time, a small process, which reports hwspy's own peak.
GNU_TIME = "/usr/bin/time"
TIME_RE = re.compile(r"^hwspy-bench-rusage ([0-9.]+) ([0-9.]+) ([0-9]+)$", re.M)


def run_timed(cmd, out=None):
    use_time = os.access(GNU_TIME, os.X_OK)
    if use_time:
        cmd = [GNU_TIME, "-f", "hwspy-bench-rusage %U %S %M"] + cmd
    t0 = time.monotonic()
    child = subprocess.Popen(cmd, stdout=out or subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
    err = child.stderr.read()
    _, status, ru = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - t0
    if child.returncode != 0:
        sys.exit("outputs.py: %s failed (%d): %s" % (" ".join(cmd), child.returncode, err))
    cpu, rss = ru.ru_utime + ru.ru_stime, None
    m = TIME_RE.search(err) if use_time else None
    if m:
        cpu, rss = float(m.group(1)) + float(m.group(2)), int(m.group(3))
    m = VERBOSE_RE.search(err)
    read, write = (float(m.group(1)), float(m.group(2))) if m else (None, None)
    return cpu, wall, rss, read, write    # rss in KiB, None when unknown


def verdict(t, budget):
    return "" if budget is None else "%s" % ("ok" if t <= budget else "OVER")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stacks", type=int, default=100000)
    ap.add_argument("--samples", type=int, default=1000000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hwspy", default=DEFAULT_HWSPY)
    a = ap.parse_args()
    if not os.access(a.hwspy, os.X_OK):
        sys.exit("outputs.py: no hwspy at %s (build it, or give --hwspy)" % a.hwspy)
    tmp = tempfile.mkdtemp(prefix="hwspy-bench-out-")
    try:
        src = os.path.join(tmp, "in.folded")
        total = make_folded(src, a.stacks, a.samples)
        print("input: %d distinct stacks, %d samples, %.1f MB of folded text"
              % (a.stacks, total, os.path.getsize(src) / 1e6))
        print("%-11s %-16s | %-26s |" % ("", "writer alone", "whole conversion"))
        print("%-11s %8s %7s | %8s %8s %8s | %9s %9s" % (
            "format", "wall (s)", "budget", "CPU (s)", "wall (s)", "budget", "size (MB)",
            "peak RSS"))
        ok = True
        reads = []
        for name, out in FORMATS:
            path = os.path.join(tmp, out)
            runs = [run_timed([a.hwspy, "convert", "-v", src, "-o", path])
                    for _ in range(a.repeat)]
            if any(r[4] is None for r in runs):
                sys.exit("outputs.py: %s convert -v printed no timing line" % a.hwspy)
            cpu = statistics.median(r[0] for r in runs)
            wall = statistics.median(r[1] for r in runs)
            write = statistics.median(r[4] for r in runs)
            reads += [r[3] for r in runs]
            budget = BUDGET_S.get(name)
            ok = ok and (budget is None or write <= budget)
            rss = max((r[2] for r in runs if r[2] is not None), default=None)
            print("%-11s %8.3f %7s | %8.3f %8.3f %8s | %9.1f %9s" % (
                name, write, verdict(write, budget), cpu, wall, verdict(cpu, budget),
                os.path.getsize(path) / 1e6, "%.0f MB" % (rss / 1024) if rss else "?"))
        print("reading the folded file (-v): median %.3f s over the %d conversions"
              % (statistics.median(reads), len(reads)))
        fg = shutil.which("flamegraph.pl")
        if fg:
            with open(os.path.join(tmp, "fg.svg"), "w") as f:
                cpu, wall = run_timed([fg, src], out=f)[:2]
            print("%-11s %8s %7s | %8.3f %8.3f %8s | %9.1f" % (
                "flamegraph.pl", "", "", cpu, wall, "",
                os.path.getsize(os.path.join(tmp, "fg.svg")) / 1e6))
        else:
            print("flamegraph.pl: not installed, not compared")
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Time to write each output format for a big profile: 10^6 samples over 10^5 distinct stacks.

A synthetic folded file stands in for a long recording: --stacks distinct stacks (default 10^5)
of 8-40 frames drawn from a pool of Python, native and kernel frames (a tree-shaped program:
shared roots, diverse leaves), with counts summing to --samples (default 10^6). Then, for each
format, `hwspy convert IN -o OUT` runs --repeat times; the figure is the median of its user +
sys CPU time (rusage of the child) and wall time, with the output's size and the child's peak
RSS. The conversion reads the folded file as well, so the writer's own time is below what is
printed. Where FlameGraph's flamegraph.pl is installed, it draws the same file for comparison.

    /usr/bin/python3 bench/outputs.py [--stacks N] [--samples N] [--repeat 3] [--hwspy PATH]

Budgets (the issue): folded < 0.5 s, SVG < 1 s, pprof < 1 s. Exit status 1 when over.
"""
import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_HWSPY = os.path.join(os.path.dirname(HERE), "build", "cli", "hwspy")
BUDGET_S = {"folded": 0.5, "svg": 1.0, "pprof": 1.0}
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


def run_timed(cmd, out=None):
    t0 = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(cmd, stdout=out or subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        sys.exit("outputs.py: %s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, after.ru_maxrss   # maxrss: the largest child so far, in KiB


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
        print("%-12s %10s %10s %10s %12s" % ("format", "CPU (s)", "wall (s)", "size (MB)",
                                            "peak RSS*"))
        ok = True
        for name, out in FORMATS:
            path = os.path.join(tmp, out)
            runs = [run_timed([a.hwspy, "convert", src, "-o", path]) for _ in range(a.repeat)]
            cpu = statistics.median(r[0] for r in runs)
            wall = statistics.median(r[1] for r in runs)
            budget = BUDGET_S.get(name)
            verdict = "" if budget is None else ("  (<= %g s) %s" % (
                budget, "ok" if cpu <= budget else "OVER"))
            ok = ok and (budget is None or cpu <= budget)
            print("%-12s %10.3f %10.3f %10.1f %10.0f MB%s" % (
                name, cpu, wall, os.path.getsize(path) / 1e6, runs[-1][2] / 1024, verdict))
        fg = shutil.which("flamegraph.pl")
        if fg:
            with open(os.path.join(tmp, "fg.svg"), "w") as f:
                cpu, wall, _ = run_timed([fg, src], out=f)
            print("%-12s %10.3f %10.3f %10.1f" % ("flamegraph.pl", cpu, wall,
                                                  os.path.getsize(os.path.join(tmp, "fg.svg")) / 1e6))
        else:
            print("flamegraph.pl: not installed, not compared")
        print("* peak RSS of the largest hwspy convert so far (it reads the folded file too)")
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

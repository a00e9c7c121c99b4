#!/usr/bin/python3
"""Profiler CPU per sample with --native, and the cost of getting a folded file, beside perf.

hwspy --native unwinds every sample itself (libdw's DWARF CFI unwinder on a copy of the user
stack) and writes the folded flame-graph file directly. perf record --call-graph dwarf only
stores the copied stacks; the unwinding happens afterwards in `perf script`, and a folded file
needs a stack collapser on top. So the comparison is the CPU each tool spends per sample from
the event to the folded file:

  record CPU/sample   the recording process: total = its rusage (os.wait4: user + sys, so
                      startup, symbol loading and, for perf, its build-id pass at exit are in)
                      / its samples; steady = its CPU time inside the sampling window only
                      (/proc/PID/task/*/schedstat read every 0.1 s, less --trim at each end)
                      / the samples it took in the window (samples/s x window)
  post CPU/sample     perf: `perf script -i X.data > X.txt` (rusage) / samples, and that plus
                      a small stack collapser (this script with --collapse, run as its own
                      process: perf script text -> folded, FlameGraph's stackcollapse-perf.pl
                      in Python); hwspy: 0, its output already is the folded file
  total to folded     record total + post, per sample
  depth               frames per sample in the output: hwspy's folded file (weighted by
                      count), perf script's text (kernel and inlined frames included);
                      hwspy's summary also gives the native frames it unwound per sample

The kernel copies the user stack at each sample (--stack-size / dwarf,SIZE bytes) in the
target's context for both tools: that is target time, not profiler CPU, and is not counted.

Workload: a Python target written by this script to a temp file (pyenv's 3.11.7 by default,
--python to change) that loops over zlib.compress, hashlib.sha256 and libc qsort through
ctypes with a Python comparison callback (Python -> C -> libffi -> qsort -> libffi -> Python),
about 30 native frames deep. A fresh target per run; each profiler attaches with -p for
--seconds at --rate Hz with -e cpu-clock (no PMU on these VMs):

  hwspy --native  hwspy record --native -e cpu-clock -F RATE -d SECS -o X.folded -p PID
  hwspy           the same without --native (Python frames and the leaf native function)
  perf dwarf      perf record -e cpu-clock -F RATE --call-graph dwarf -p PID -o X.data -- sleep SECS
                  then perf script -i X.data > X.txt, then native.py --collapse X.txt X.folded

Configurations are interleaved run by run (rotating order), each --repeat times; figures are
medians, [min..max] the spread. cpu-clock counts the target's CPU time, so a run's sample
count falls below rate x seconds when anything else (exact mode's stops included) takes the
target's CPU. Other work on this 2-CPU VM inflates every CPU figure: the "other load" column
says how busy the rest of the machine was while sampling; --wait SECS waits (up to SECS
before each run) until it is at most --max-load CPUs and reruns (twice at most) a disturbed run.

    /usr/bin/python3 bench/native.py [--repeat 3] [--seconds 5] [--rate 999] [--wait 120]

Budget (hwspy issue 3): hwspy --native <= 100 us of profiler CPU per sample (steady). The
verdict line says whether it holds; the exit status is 0 unless --strict (then 1 when over).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from procstat import busy_ns, machine_load, task_cpu_ns

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_PY = os.path.expanduser("~/.pyenv/versions/3.11.7/bin/python3.11")
DEFAULT_HWSPY = os.path.join(ROOT, "build", "cli", "hwspy")
BUDGET_US = 100.0
MODES = ("native", "python", "perf")
LABEL = {"native": "hwspy --native", "python": "hwspy (no --native)", "perf": "perf dwarf"}

TARGET = r'''
import ctypes, ctypes.util, hashlib, os, sys, time, zlib

libc = ctypes.CDLL(ctypes.util.find_library("c"))
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))
DATA = os.urandom(1 << 14) + bytes(range(256)) * 256
KEYS = [(i * 7919) % 1000 for i in range(300)]


def compare(a, b):
    return a[0] - b[0]


compare_c = CMP(compare)


def do_zlib():
    return len(zlib.compress(DATA, 6))


def do_hash():
    return hashlib.sha256(DATA).digest()


def do_sort():
    arr = (ctypes.c_int * len(KEYS))(*KEYS)
    libc.qsort(arr, len(arr), ctypes.sizeof(ctypes.c_int), compare_c)
    return arr[0]


def work():
    do_zlib()
    do_hash()
    do_sort()


work()
print("ready", os.getpid(), flush=True)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    work()
'''


def die(msg):
    sys.exit("native.py: " + msg)


# --- the stack collapser (perf script text -> folded), run as its own process ---------------

HEADER = re.compile(r"^\S.*?\s(\d+)\s+[0-9.]+:\s+(\d+)\s+\S+:")
FRAME = re.compile(r"^\s+([0-9a-f]+)\s+(.*?)\s+\((.*)\)$")


def collapse(src, dst):
    """FlameGraph's stackcollapse-perf.pl, reduced: one line per distinct stack, root first,
    frames `symbol` (+0x offset removed; `[unknown]` becomes the module's name; kernel frames
    get `_[k]`), weighted by the sample's period. Returns (samples, frames)."""
    stacks = {}
    samples = frames = 0
    stack, period = None, 0

    def flush():
        nonlocal samples, frames
        if stack is not None:
            samples += 1
            frames += len(stack)
            key = ";".join(reversed(stack)) or "[empty]"
            stacks[key] = stacks.get(key, 0) + period

    with open(src, errors="replace") as f:
        for line in f:
            if not line.strip():
                flush()
                stack = None
                continue
            if stack is None:
                m = HEADER.match(line)
                if m:
                    stack, period = [], int(m.group(2))
                continue
            m = FRAME.match(line)
            if not m:
                continue
            sym, mod = m.group(2), m.group(3)
            if sym.startswith("[unknown]"):
                sym = os.path.basename(mod) if mod != "[unknown]" else "[unknown]"
            else:
                sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
            if mod == "[kernel.kallsyms]" or mod.startswith("[kernel"):
                sym += "_[k]"
            stack.append(sym.replace(";", ":"))
    flush()
    with open(dst, "w") as f:
        for k, v in stacks.items():
            f.write("%s %d\n" % (k, v))
    return samples, frames


# --- measuring -----------------------------------------------------------------------------

def sleep_child(pid):
    """perf record's workload child once it has exec'd `sleep`, else None."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            kids = f.read().split()
    except OSError:
        return None
    for k in kids:
        try:
            with open("/proc/%s/comm" % k) as f:
                if f.read().strip() == "sleep":
                    return int(k)
        except OSError:
            pass
    return None


def read_sysctl(name):
    try:
        with open("/proc/sys/kernel/" + name) as f:
            return f.read().strip()
    except OSError:
        return "?"


def timed(cmd, stdout, stderr):
    """Run cmd; (exit code, CPU seconds from its rusage, wall seconds)."""
    t = time.monotonic()
    p = subprocess.Popen(cmd, stdout=stdout, stderr=stderr)
    _, status, ru = os.wait4(p.pid, 0)
    return os.waitstatus_to_exitcode(status), ru.ru_utime + ru.ru_stime, time.monotonic() - t


def folded_depth(path):
    """(weighted average frames per sample, distinct stacks) of a folded file."""
    weight = frames = lines = 0
    with open(path, errors="replace") as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            if not stack or not n.isdigit():
                continue
            weight += int(n)
            frames += int(n) * (stack.count(";") + 1)
            lines += 1
    return (frames / weight if weight else None), lines


class Runner:
    def __init__(self, args, tmp):
        self.a = args
        self.tmp = tmp
        self.n = 0
        self.waited = 0.0
        self.target_py = os.path.join(tmp, "native_target.py")
        with open(self.target_py, "w") as f:
            f.write(TARGET)

    def wait_quiet(self):
        if self.a.wait <= 0:
            return
        t0 = time.monotonic()
        while time.monotonic() - t0 < self.a.wait and machine_load(1.0) > self.a.max_load:
            pass
        self.waited += time.monotonic() - t0

    def run(self, mode):
        best = None
        for attempt in range(3 if self.a.wait > 0 else 1):
            self.wait_quiet()
            r = self.run_once(mode)
            if best is None or (r["other_load"] or 0) < (best["other_load"] or 0):
                best = r
            if (r["other_load"] or 0) <= self.a.max_load:
                break
        return best

    def run_once(self, mode):
        a = self.a
        self.n += 1
        prefix = os.path.join(self.tmp, "run-%d-%s" % (self.n, mode))
        target = subprocess.Popen([a.python, self.target_py, str(a.seconds * 4 + 30)],
                                  stdout=subprocess.PIPE, text=True)
        line = target.stdout.readline().split()
        if len(line) != 2 or line[0] != "ready":
            target.kill()
            die("target did not start (%r)" % line)
        time.sleep(0.3)                       # let it settle into its loop
        pid = str(target.pid)
        if mode == "perf":
            cg = "dwarf" + (",%d" % a.stack_size if a.stack_size else "")
            cmd = [a.perf, "record", "-e", "cpu-clock", "-F", str(a.rate), "--call-graph", cg,
                   "-p", pid, "-o", prefix + ".data", "--", "sleep", str(a.seconds)]
        else:
            cmd = [a.hwspy, "record", "-e", "cpu-clock", "-F", str(a.rate), "-d", str(a.seconds),
                   "-o", prefix + ".folded", "-p", pid]
            if mode == "native":
                cmd.append("--native")
                if a.stack_size:
                    cmd += ["--stack-size", str(a.stack_size)]
        trace = []      # (monotonic ns, profiler CPU, target CPU, machine busy, our CPU)
        t_sleep0 = t_sleep1 = None
        with open(prefix + ".err", "w") as err:
            t_spawn = time.monotonic_ns()
            prof = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
            while True:
                s = (time.monotonic_ns(), task_cpu_ns(prof.pid), task_cpu_ns(target.pid),
                     busy_ns(), time.process_time_ns())
                if mode == "perf":
                    # perf samples from just before it execs `sleep` until the sleep exits
                    kid = sleep_child(prof.pid)
                    if kid and t_sleep0 is None:
                        t_sleep0 = s[0]
                    if t_sleep0 is not None and t_sleep1 is None and not kid:
                        t_sleep1 = s[0]
                wpid, status, ru = os.wait4(prof.pid, os.WNOHANG)
                if wpid:
                    break
                if s[1] is not None:
                    trace.append(s)
                time.sleep(0.1)
            t_exit = time.monotonic_ns()
        target.kill()
        target.wait()
        rc = os.waitstatus_to_exitcode(status)
        with open(prefix + ".err") as f:
            errtext = f.read()
        if rc != 0:
            die("%s failed (exit %d):\n  %s\n%s" % (mode, rc, " ".join(cmd), errtext))
        r = {"mode": mode, "record_cpu_s": ru.ru_utime + ru.ru_stime,
             "record_user_s": ru.ru_utime, "record_sys_s": ru.ru_stime,
             "record_wall_s": (t_exit - t_spawn) / 1e9, "notes": [], "other_load": None}

        if mode == "perf":
            m = re.search(r"\((\d+) samples\)", errtext)
            if not m:
                die("no sample count in perf record's output:\n" + errtext)
            samples, elapsed = int(m.group(1)), float(a.seconds)
            if t_sleep0 is None:
                die("did not see perf record's sleep child")
            if t_sleep1 is None:
                t_sleep1 = t_exit
            w0, w1 = t_sleep0, t_sleep1
            r["perf_tail_wall_s"] = (t_exit - t_sleep1) / 1e9
            if re.search(r"lost \d+ chunks|LOST \d+ events", errtext):
                r["notes"].append("perf record lost events in a run")
            # post-processing: perf script (unwinding, symbols) and the collapser
            with open(prefix + ".txt", "w") as out, open(prefix + ".script.err", "w") as e:
                src, cpu, wall = timed([a.perf, "script", "-i", prefix + ".data"], out, e)
            if src != 0:
                with open(prefix + ".script.err") as f:
                    die("perf script failed (exit %d):\n%s" % (src, f.read()))
            r["script_cpu_s"], r["script_wall_s"] = cpu, wall
            with open(prefix + ".collapse.out", "w") as out:
                crc, cpu, wall = timed([sys.executable, os.path.abspath(__file__), "--collapse",
                                        prefix + ".txt", prefix + ".folded"], out, subprocess.STDOUT)
            with open(prefix + ".collapse.out") as f:
                cout = f.read()
            if crc != 0:
                die("the collapser failed (exit %d):\n%s" % (crc, cout))
            r["collapse_cpu_s"], r["collapse_wall_s"] = cpu, wall
            cs, cf = (int(x) for x in cout.split()[:2])
            r["script_samples"] = cs
            r["depth"] = cf / cs if cs else None
            r["data_bytes"] = os.path.getsize(prefix + ".data")
            r["txt_bytes"] = os.path.getsize(prefix + ".txt")
            if cs != samples:
                r["notes"].append("perf record said %d samples, perf script printed %d"
                                  % (samples, cs))
        else:
            m = re.search(r"(\d+) samples, weight", errtext)
            if not m:
                die("no sample count in hwspy's output:\n" + errtext)
            samples = int(m.group(1))
            m = re.search(r"for ([0-9.]+) s:", errtext)
            elapsed = float(m.group(1)) if m else float(a.seconds)
            # hwspy's -d counts from the start of sampling; it exits right after writing
            w0, w1 = max(t_spawn, t_exit - int(elapsed * 1e9)), t_exit
            r["depth"], r["stacks"] = folded_depth(prefix + ".folded")
            m = re.search(r"native: (\d+) stacks unwound, ([0-9.]+) frames", errtext)
            if m:
                r["unwound"], r["native_frames"] = int(m.group(1)), float(m.group(2))
            m = re.search(r"(\d+) samples whose native and Python stacks could not be merged",
                          errtext)
            r["merge_failed"] = int(m.group(1)) if m else 0
            m = re.search(r"(\d+) dropped", errtext)
            r["dropped"] = int(m.group(1)) if m else 0
            if "falling back to --nonblocking" in errtext:
                r["notes"].append("hwspy exact mode fell back to --nonblocking")
            m = re.search(r"(\d+) samples were lost", errtext)
            if m:
                r["notes"].append("hwspy lost %s samples in a run" % m.group(1))
        r["samples"] = samples
        r["samples_per_s"] = samples / elapsed
        r["window_raw_s"] = (w1 - w0) / 1e9

        trim = int(a.trim * 1e9)
        w0, w1 = w0 + trim, w1 - trim
        inside = [s for s in trace if w0 <= s[0] <= w1 and s[1] is not None and s[2] is not None]
        if len(inside) >= 2 and r["samples_per_s"] > 0:
            x, y = inside[0], inside[-1]
            dt = y[0] - x[0]
            r["steady_cpu_us"] = (y[1] - x[1]) / 1e3 / (r["samples_per_s"] * dt / 1e9)
            other = (y[3] - x[3]) - (y[1] - x[1]) - (y[2] - x[2]) - (y[4] - x[4])
            r["other_load"] = max(other, 0) / dt
            r["target_cpus"] = (y[2] - x[2]) / dt
        else:
            r["notes"].append("a %s run had no steady window (--seconds too short?)" % mode)
        return r


# --- reporting -----------------------------------------------------------------------------

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def spread(xs, spec=".1f"):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    if len(xs) == 1:
        return format(xs[0], spec)
    return "%s [%s..%s]" % (format(statistics.median(xs), spec), format(min(xs), spec),
                            format(max(xs), spec))


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def render(head, rows):
    widths = [max(len(str(x[i])) for x in rows + [head]) for i in range(len(head))]
    out = []
    for row in [head] + rows:
        out.append("  ".join(str(c).ljust(widths[i]) if i == 0 else str(c).rjust(widths[i])
                             for i, c in enumerate(row)).rstrip())
    return "\n".join(out)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--collapse":
        samples, frames = collapse(sys.argv[2], sys.argv[3])
        print(samples, frames)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 1)[1])
    ap.add_argument("--repeat", type=int, default=3, help="runs per configuration (3)")
    ap.add_argument("--seconds", type=float, default=5, help="sampling time per run (5)")
    ap.add_argument("--rate", type=int, default=999, help="samples per second, Hz (999)")
    ap.add_argument("--trim", type=float, default=0.4,
                    help="seconds cut at each end of the steady window (0.4)")
    ap.add_argument("--stack-size", type=int, default=0,
                    help="user stack bytes copied per sample, for both tools (default: each "
                         "tool's own, hwspy 32768, perf 8192)")
    ap.add_argument("--python", default=DEFAULT_PY, help="target interpreter (pyenv's 3.11.7)")
    ap.add_argument("--hwspy", default=DEFAULT_HWSPY, help="hwspy binary (build/cli/hwspy)")
    ap.add_argument("--perf", default="/usr/bin/perf", help="perf binary; '' skips perf")
    ap.add_argument("--modes", default=",".join(MODES),
                    help="configurations: native,python,perf (all)")
    ap.add_argument("--wait", type=float, default=0,
                    help="wait up to SECS before each run for other load <= --max-load, and "
                         "rerun (twice at most) a run that other load disturbed (0: don't)")
    ap.add_argument("--max-load", type=float, default=0.15,
                    help="CPUs of other load that count as quiet (0.15)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when over the budget")
    ap.add_argument("--keep", action="store_true", help="keep the temporary files and say where")
    ap.add_argument("--json", metavar="FILE", help="also write every run's raw figures here")
    a = ap.parse_args()

    if a.seconds < 2 * a.trim + 1:
        die("--seconds must leave >= 1 s after --trim at both ends")
    if not os.access(a.python, os.X_OK):
        die("no target interpreter at %s (give --python)" % a.python)
    modes = [m for m in a.modes.split(",") if m]
    for m in modes:
        if m not in MODES:
            die("unknown configuration %r" % m)
    skipped = []
    if any(m != "perf" for m in modes) and not os.access(a.hwspy, os.X_OK):
        skipped.append("hwspy (no binary at %s)" % a.hwspy)
        modes = [m for m in modes if m == "perf"]
    if "perf" in modes and not (a.perf and os.access(a.perf, os.X_OK)):
        skipped.append("perf (no binary at %r)" % a.perf)
        modes.remove("perf")
    if not modes:
        die("nothing to run: " + "; ".join(skipped))

    tmp = tempfile.mkdtemp(prefix="hwspy-native-")
    runner = Runner(a, tmp)
    max_rate_before = read_sysctl("perf_event_max_sample_rate")
    plan = []
    for i in range(a.repeat):
        k = i % len(modes)
        plan += modes[k:] + modes[:k]
    results = []
    t0 = time.monotonic()
    tty = sys.stderr.isatty()
    try:
        for j, m in enumerate(plan):
            if tty:
                print("\r\033[K[%d/%d] %s" % (j + 1, len(plan), LABEL[m]), end="",
                      file=sys.stderr, flush=True)
            results.append(runner.run(m))
    finally:
        if tty:
            print("\r\033[K", end="", file=sys.stderr, flush=True)
    took = time.monotonic() - t0
    max_rate_after = read_sysctl("perf_event_max_sample_rate")

    def runs(mode):
        return [r for r in results if r["mode"] == mode]

    pyver = subprocess.run([a.python, "-c", "import platform; print(platform.python_version())"],
                           capture_output=True, text=True).stdout.strip()
    print("target: python %s (%s) zlib + sha256 + ctypes qsort callback; -e cpu-clock -F %d, "
          "%d x %g s attached; stack copy %s; kernel %s, %d CPUs"
          % (pyver, a.python, a.rate, a.repeat, a.seconds,
             "%d B both" % a.stack_size if a.stack_size else "hwspy 32768 B, perf 8192 B",
             os.uname().release, os.cpu_count()))
    print("CPU in us per sample; record = total (rusage) | steady (inside the sampling window); "
          "medians [min..max]\n")

    head = ("tool", "samples", "record CPU/sample total | steady", "post CPU/sample",
            "total to folded", "depth", "other load")
    rows = []
    summary = {}
    for mode in modes:
        rs = runs(mode)
        if not rs:
            continue
        samples = [r["samples"] for r in rs]
        rec_t = [r["record_cpu_s"] * 1e6 / r["samples"] for r in rs]
        rec_s = [r.get("steady_cpu_us") for r in rs]
        load = fmt(med(r["other_load"] for r in rs), ".2f")
        depth = fmt(med(r["depth"] for r in rs), ".1f")
        if mode == "perf":
            script = [r["script_cpu_s"] * 1e6 / r["samples"] for r in rs]
            both = [(r["script_cpu_s"] + r["collapse_cpu_s"]) * 1e6 / r["samples"] for r in rs]
            tot_s = [x + y for x, y in zip(rec_t, script)]
            tot_f = [x + y for x, y in zip(rec_t, both)]
            rows.append(("perf record dwarf + perf script", "%.0f" % med(samples),
                         "%s | %s" % (spread(rec_t), spread(rec_s)), spread(script),
                         spread(tot_s) + " (text)", depth, load))
            rows.append(("  + collapse to folded (Python)", "", "", spread(both),
                         spread(tot_f), depth, ""))
            summary[mode] = {"total": med(tot_f), "script": med(tot_s), "steady": med(rec_s)}
        else:
            rows.append((LABEL[mode], "%.0f" % med(samples),
                         "%s | %s" % (spread(rec_t), spread(rec_s)), "0 (writes folded)",
                         spread(rec_t), depth, load))
            summary[mode] = {"total": med(rec_t), "steady": med(rec_s)}
    print(render(head, rows))

    # details
    print()
    if "native" in modes:
        rs = runs("native")
        print("hwspy --native: %s native frames unwound per sample (before merging), %s stacks "
              "unwound of %s samples, %s not merged, %s dropped; %s distinct stacks"
              % (fmt(med(r.get("native_frames") for r in rs), ".1f"),
                 fmt(med(r.get("unwound") for r in rs), ".0f"), fmt(med(r["samples"] for r in rs), ".0f"),
                 fmt(med(r["merge_failed"] for r in rs), ".0f"),
                 fmt(med(r["dropped"] for r in rs), ".0f"), fmt(med(r["stacks"] for r in rs), ".0f")))
    if "perf" in modes:
        rs = runs("perf")
        print("perf: %.1f KB of perf.data and %.1f KB of perf script text per sample; wall after "
              "sampling: perf record's exit (build-ids) %.2f s + perf script %.2f s + collapse "
              "%.2f s (medians)"
              % (med(r["data_bytes"] / r["samples"] for r in rs) / 1024,
                 med(r["txt_bytes"] / r["samples"] for r in rs) / 1024,
                 med(r["perf_tail_wall_s"] for r in rs), med(r["script_wall_s"] for r in rs),
                 med(r["collapse_wall_s"] for r in rs)))
    print("record CPU total split user + sys, us/sample: %s"
          % ", ".join("%s %s + %s" % (LABEL[m],
                                      fmt(med(r["record_user_s"] * 1e6 / r["samples"] for r in runs(m)), ".0f"),
                                      fmt(med(r["record_sys_s"] * 1e6 / r["samples"] for r in runs(m)), ".0f"))
                      for m in modes))
    print("target CPUs while sampling (the rest is stops/preemption): %s"
          % ", ".join("%s %s" % (LABEL[m], fmt(med(r.get("target_cpus") for r in runs(m)), ".2f"))
                      for m in modes))

    notes = sorted({n for r in results for n in r["notes"]})
    loads = [r["other_load"] for r in results if r["other_load"] is not None]
    if loads and max(loads) > a.max_load:
        notes.append("other load above %g CPUs in %d of %d runs (max %.2f): figures are inflated%s"
                     % (a.max_load, sum(x > a.max_load for x in loads), len(loads), max(loads),
                        "" if a.wait else "; --wait 120 waits for a quiet machine"))
    if max_rate_before != max_rate_after:
        notes.append("the kernel lowered perf_event_max_sample_rate from %s to %s"
                     % (max_rate_before, max_rate_after))
    for s in skipped:
        print("skipped: " + s)
    for n in notes:
        print("note: " + n)

    ok = True
    if "native" in summary:
        s = summary["native"]
        cpu = s["steady"] if s["steady"] is not None else s["total"]
        ok = cpu <= BUDGET_US
        line = ("verdict: hwspy --native %s: %.1f us of profiler CPU per sample steady (%.1f total "
                "with startup) against the %g us budget"
                % ("PASS" if ok else "OVER", cpu, s["total"], BUDGET_US))
        if "perf" in summary:
            p = summary["perf"]
            line += ("; to a folded file hwspy --native takes %.1f us/sample, perf dwarf %.1f "
                     "(%.1f to perf script's text)" % (s["total"], p["total"], p["script"]))
        print("\n" + line)
    else:
        print("\nverdict: none, no hwspy --native figures")
    sys.stdout.flush()
    print("(took %.0f s%s)" % (took, ", %.0f s of it waiting for quiet" % runner.waited
                                if runner.waited else ""), file=sys.stderr)

    if a.json:
        with open(a.json, "w") as f:
            json.dump({"args": vars(a), "runs": results}, f, indent=1)
    if a.keep:
        print("files kept in " + tmp, file=sys.stderr)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if a.strict and not ok else 0


if __name__ == "__main__":
    sys.exit(main())

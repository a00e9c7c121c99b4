#!/usr/bin/python3
"""Per-sample overhead of hwspy (exact and --nonblocking) and of perf, on a spinning target.

Whole-runtime ratios cannot show a 1% cost on these VMs (the same unprofiled run varies by
6-14%), so this measures what each sample costs the target: bench/spin_target.py spins on
time.perf_counter_ns() and records every gap longer than a few microseconds. For each run:

  window              the time the profiler was sampling, less --trim seconds at each end
  stall/s             the gap time per second inside the window: the median over --slice
                      (0.25 s) slices, so that a burst of other activity on the VM moves it little
  extra stall/sample  (stall/s profiled - stall/s unprofiled) / samples per second, where
                      unprofiled is either the median of the unprofiled runs (the first
                      column) or the same target's --baseline seconds just before the profiler
                      started and just after it exited (the second column, which cancels
                      drift between runs; the slowdown and the verdict use it)
  slowdown            extra stall/sample x rate
  profiler CPU/sample total: the profiler's rusage (os.wait4) / its samples;
                      steady: its CPU time inside the window (schedstat of /proc/PID/task/*),
                      less one-off bursts (a ~0.1 s interval over 10% of a CPU and 5 x the
                      median counts at the median), / the samples it took inside the window
  other load          CPUs kept busy by everything else on the machine during the window
                      (/proc/stat less the target, the profiler and this script)
A last line gives the plain figure too: the window's total gap time against the unprofiled
runs' total, without slices.

The target also says what happened to it in each gap (getrusage context-switch counts read
after the gap), which the breakdown table splits the extra stall by: no switch (interrupt:
the sampling timer itself), stopped (a voluntary switch: exact mode's ptrace stop), preempted
(an involuntary switch: the profiler or another process ran on the target's CPU).

Configurations, interleaved run by run, each repeated --repeat times: unprofiled (a `sleep`
stands in for the profiler), `hwspy record` (exact mode: a BPF capture where allowed),
`hwspy record --ptrace` (exact mode by stopping each sampled thread), `hwspy record --nonblocking`,
`perf record -g`, all with -e cpu-clock (no PMU on these VMs), first at --rate (default 100 Hz,
where the budgets apply) and then at --high-rate (default 1000 Hz, where the per-sample cost
stands out of the noise). Figures are medians over the repeats; [min..max] shows the spread.

Other work on the machine shows up as stall in every configuration and swamps a 1% effect:
the "other load" column says how busy the machine was. --wait SECS waits (up to SECS before
each run) until the machine is quiet and reruns a run that other load disturbed.

    /usr/bin/python3 bench/overhead.py [--repeat 3] [--seconds 8] [--python PY] [--hwspy PATH]

Budgets (shared/DESIGN.md): at 100 Hz exact <= 1% (<= 100 us/sample), nonblocking <= 0.5%;
profiler CPU (Python-only stacks) <= 30 us per sample. Exit status 1 when over a budget.
"""
import argparse
import json
import os
import re
import shutil
import signal
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

BUDGET_SLOWDOWN = {"exact": 1.0, "nonblocking": 0.5}   # percent at 100 samples/s
BUDGET_CPU_US = 30.0                                  # profiler CPU per sample, Python-only
KINDS = ("no switch", "stopped", "preempted")          # spin_target.py's gap kinds 0, 1, 2
LABEL = {"unprofiled": "unprofiled", "exact": "hwspy exact", "ptrace": "hwspy exact --ptrace",
         "nonblocking": "hwspy nonblocking", "perf": "perf -g"}


def die(msg):
    sys.exit("overhead.py: " + msg)


def read_sysctl(name):
    try:
        with open("/proc/sys/kernel/" + name) as f:
            return f.read().strip()
    except OSError:
        return "?"


class Runner:
    def __init__(self, args, tmp):
        self.a = args
        self.tmp = tmp
        self.n = 0
        self.waited = 0.0

    def start_target(self):
        self.n += 1
        out = os.path.join(self.tmp, "gaps-%d.json" % self.n)
        p = subprocess.Popen([self.a.python, os.path.join(HERE, "spin_target.py"), out,
                              "--threshold-ns", str(int(self.a.threshold_us * 1000)),
                              "--max-seconds", str(max(self.a.seconds, self.a.high_seconds) * 4 + 30)],
                             stdout=subprocess.PIPE, text=True)
        line = p.stdout.readline().split()
        now = time.monotonic_ns()
        if len(line) != 4 or line[0] != "ready":
            p.kill()
            die("target did not start (%r)" % line)
        # perf_counter_ns (target) and monotonic_ns (this script) must be the same clock
        skew = now - int(line[2])
        if not 0 <= skew < 500_000_000:
            p.kill()
            die("target clock %s is not this script's CLOCK_MONOTONIC (skew %d ns)"
                % (line[3], skew))
        return p, out

    def wait_quiet(self):
        if self.a.wait <= 0:
            return
        t0 = time.monotonic()
        while time.monotonic() - t0 < self.a.wait and machine_load(1.0) > self.a.max_load:
            pass
        self.waited += time.monotonic() - t0

    def run(self, mode, rate):
        """One run of one configuration (rerun while other load disturbs it, with --wait)."""
        best = None
        for attempt in range(3 if self.a.wait > 0 else 1):
            self.wait_quiet()
            r = self.run_once(mode, rate)
            if best is None or r["other_load"] < best["other_load"]:
                best = r
            if r["other_load"] <= self.a.max_load:
                break
        return best

    def run_once(self, mode, rate):
        target, out = self.start_target()
        time.sleep(0.2)                        # let the target settle into its loop
        t_before = time.monotonic_ns()         # unprofiled stretch before the profiler starts
        time.sleep(self.a.baseline)
        secs = self.a.seconds if rate == self.a.rate else self.a.high_seconds
        prefix = os.path.join(self.tmp, "run-%d" % self.n)
        pid = str(target.pid)
        if mode == "unprofiled":
            cmd = ["sleep", str(secs)]
        elif mode == "perf":
            cmd = [self.a.perf, "record", "-e", "cpu-clock", "-F", str(rate), "-g", "-p", pid,
                   "-o", prefix + ".perf.data", "--", "sleep", str(secs)]
        else:
            cmd = [self.a.hwspy, "record", "-p", pid, "-e", "cpu-clock", "-F", str(rate),
                   "-d", str(secs), "-o", prefix + ".folded"]
            if mode == "nonblocking":
                cmd.append("--nonblocking")
            if mode == "ptrace":
                cmd.append("--ptrace")
        trace = []          # (monotonic ns, profiler CPU, target CPU, machine busy, our CPU)
        with open(prefix + ".err", "w") as err:
            t_spawn = time.monotonic_ns()
            prof = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
            while True:
                sample = (time.monotonic_ns(), task_cpu_ns(prof.pid), task_cpu_ns(target.pid),
                          busy_ns(), time.process_time_ns())
                wpid, status, ru = os.wait4(prof.pid, os.WNOHANG)
                if wpid:
                    break
                if sample[1] is not None:
                    trace.append(sample)
                time.sleep(0.1)
            t_exit = time.monotonic_ns()
        prof.returncode = os.waitstatus_to_exitcode(status)
        time.sleep(0.1)
        t_after = time.monotonic_ns()          # and after it has gone
        time.sleep(self.a.baseline)
        t_after_end = time.monotonic_ns()
        target.send_signal(signal.SIGUSR1)
        target.wait(timeout=30)
        with open(out) as f:
            g = json.load(f)
        with open(prefix + ".err") as f:
            errtext = f.read()
        if prof.returncode != 0:
            die("%s failed (exit %d):\n  %s\n%s" % (mode, prof.returncode, " ".join(cmd), errtext))

        # samples and the length of the sampling period
        samples, elapsed, notes = None, float(secs), []
        if mode == "perf":
            m = re.search(r"\((\d+) samples\)", errtext)
            if m:
                samples = int(m.group(1))
        elif mode != "unprofiled":
            m = re.search(r"(\d+) samples, weight", errtext) or re.search(r"(\d+) samples", errtext)
            if m:
                samples = int(m.group(1))
            m = re.search(r"for ([0-9.]+) s:", errtext)
            if m:
                elapsed = float(m.group(1))
            if mode in ("exact", "ptrace") and "falling back to --nonblocking" in errtext:
                notes.append("hwspy exact mode fell back to --nonblocking")
            if mode == "exact" and "captured at their sample by BPF" not in errtext:
                notes.append("hwspy exact mode did not capture with BPF (stopped threads instead)")
            m = re.search(r"(\d+) samples were lost", errtext)
            if m:
                notes.append("hwspy lost %s samples in one run" % m.group(1))
        if mode != "unprofiled" and samples is None:
            die("no sample count in the output of %s:\n%s" % (" ".join(cmd), errtext))

        # the sampling period ends (nearly) when the profiler exits
        trim = int(self.a.trim * 1e9)
        w0 = max(t_spawn, t_exit - int(elapsed * 1e9)) + trim
        w1 = min(t_exit - trim, g["t_end"])
        if w1 - w0 < 1e9:
            die("window of %s too short (%.2f s)" % (mode, (w1 - w0) / 1e9))
        wlen = (w1 - w0) / 1e9
        gaps = g["gaps"]
        stall = [0, 0, 0]
        count = [0, 0, 0]
        for i in range(0, len(gaps), 3):
            if w0 <= gaps[i] < w1:
                stall[gaps[i + 2]] += gaps[i + 1]
                count[gaps[i + 2]] += 1
        sl = int(self.a.slice * 1e9)
        win = slices(gaps, [(w0, w1)], sl)
        around = slices(gaps, [(t_before, t_spawn - 50_000_000), (t_after, min(t_after_end, g["t_end"]))], sl)
        # the longest single gap in the whole time the profiler was attached, trims included
        longest = max([gaps[i + 1] for i in range(0, len(gaps), 3)
                       if t_exit - int(elapsed * 1e9) <= gaps[i] < t_exit] or [0])
        r = {"mode": mode, "rate": rate, "python": g["python"], "window_s": wlen,
             "longest_gap_ms": longest / 1e6,
             # plain: the window's total stall / its length
             "stall_us_per_s": sum(stall) / 1e3 / wlen, "gaps_per_s": sum(count) / wlen,
             "kind_stall_us_per_s": [x / 1e3 / wlen for x in stall],
             "kind_gaps_per_s": [x / wlen for x in count],
             # robust: median over --slice slices (a burst of other activity moves it little)
             "slice_stall_us_per_s": win[0], "slice_kind_stall_us_per_s": win[1],
             # the same target's unprofiled stretches just before and after the profiler
             "around_stall_us_per_s": around[0], "around_kind_stall_us_per_s": around[1],
             "notes": notes, "other_load": None, "window": [w0, w1],
             "trace": [list(x) for x in trace]}

        inside = [s for s in trace if w0 <= s[0] <= w1 and s[2] is not None]
        if len(inside) >= 2:
            a, b = inside[0], inside[-1]
            dt = b[0] - a[0]
            other = (b[3] - a[3]) - (b[1] - a[1]) - (b[2] - a[2]) - (b[4] - a[4])
            r["other_load"] = max(other, 0) / dt
        if samples is not None:
            sps = samples / elapsed
            r["samples"] = samples
            r["samples_per_s"] = sps
            r["cpu_total_us"] = (ru.ru_utime + ru.ru_stime) * 1e6 / max(samples, 1)
            if len(inside) >= 2 and sps > 0:
                # CPU over the window, less one-off bursts: a ~0.1 s polling interval in which
                # the profiler used over 10% of a CPU and 5 x its median rate (lazy loading of
                # symbols at the first sample in a new module, say) counts at the median rate
                iv = [(y[1] - x[1], y[0] - x[0]) for x, y in zip(inside, inside[1:])]
                mrate = statistics.median(c / t for c, t in iv)
                limit = max(0.1, 5 * mrate)
                cpu = burst = 0
                for c, t in iv:
                    if c / t > limit:
                        burst += c - mrate * t
                        c = mrate * t
                    cpu += c
                r["cpu_steady_us"] = cpu / sum(t for c, t in iv) * 1e6 / sps
                r["cpu_burst_ms"] = burst / 1e6
        return r


def slices(gaps, ranges, slice_ns):
    """Median stall (us per s) over the whole slices of slice_ns that fit in the ranges:
    (total, [per gap kind])."""
    edges = []
    for a, b in ranges:
        n = int((b - a) // slice_ns)
        edges += [(a + i * slice_ns, a + (i + 1) * slice_ns) for i in range(n)]
    if not edges:
        return None, [None, None, None]
    per = [[0, 0, 0] for _ in edges]
    j = 0
    for i in range(0, len(gaps), 3):
        t = gaps[i]
        while j < len(edges) and t >= edges[j][1]:
            j += 1
        if j == len(edges):
            break
        if t >= edges[j][0]:
            per[j][gaps[i + 2]] += gaps[i + 1]
    scale = 1e3 * slice_ns / 1e9      # ns per slice -> us per s
    return (statistics.median(sum(p) for p in per) / scale,
            [statistics.median(p[k] for p in per) / scale for k in range(3)])


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def render(head, rows):
    widths = [max(len(str(x[i])) for x in rows + [head]) for i in range(len(head))]
    lines = []
    for row in [head] + rows:
        cells = [str(c).ljust(widths[i]) if i == 0 else str(c).rjust(widths[i])
                 for i, c in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def spread(xs):
    xs = [x for x in xs if x is not None]
    return "%.1f [%.1f..%.1f]" % (statistics.median(xs), min(xs), max(xs)) if xs else "-"


def main_table(runs, modes, rate, base):
    head = ("mode", "samples/s", "stall/s (us)", "extra us/sample: vs unprofiled runs",
            "vs before+after", "slowdown", "CPU us/sample total|steady", "other load")
    rows, summary = [], {}
    for mode in modes:
        rs = runs(mode, rate)
        if not rs:
            continue
        stall = med(r["slice_stall_us_per_s"] for r in rs)
        load = fmt(med(r["other_load"] for r in rs), ".2f")
        paired = [r["slice_stall_us_per_s"] - r["around_stall_us_per_s"] for r in rs]
        if mode == "unprofiled":
            # no samples: what the paired comparison finds without a profiler is its noise
            rows.append((LABEL[mode], "-", fmt(stall, ".0f"), "-", spread(paired) + "/s",
                         "-", "-", load))
            continue
        sps = [r["samples_per_s"] for r in rs]
        per_runs = [(r["slice_stall_us_per_s"] - base) / n for r, n in zip(rs, sps)]
        per_pair = [p / n for p, n in zip(paired, sps)]
        plain = med((r["stall_us_per_s"] - pb) / n for r, n, pb in
                    zip(rs, sps, [base_plain(runs, rate)] * len(rs)))
        p = med(per_pair)
        cpu_t = med(r["cpu_total_us"] for r in rs)
        cpu_s = med(r.get("cpu_steady_us") for r in rs)
        summary[mode] = (p, med(per_runs), plain, cpu_t, cpu_s)
        rows.append((LABEL[mode], fmt(med(sps), ".0f"), fmt(stall, ".0f"), spread(per_runs),
                     spread(per_pair), "%.2f%%" % (p * rate / 1e4),
                     "%s | %s" % (fmt(cpu_t, ".1f"), fmt(cpu_s, ".1f")), load))
    return render(head, rows), summary


def base_plain(runs, rate):
    return med(r["stall_us_per_s"] for r in runs("unprofiled", rate))


def breakdown_table(runs, modes, rates):
    """Extra stall per sample (against the same run's before+after) split by gap kind."""
    head = ("mode", "rate") + tuple("%s us|gaps" % k for k in KINDS) + (
        "longest gap (ms)", "profiler CPU bursts (ms)")
    base_runs = runs("unprofiled", None)
    bgaps = [med(r["kind_gaps_per_s"][k] for r in base_runs) for k in range(3)]
    rows = [("unprofiled (per s)", "-") +
            tuple("%.0f|%.0f" % (med(r["slice_kind_stall_us_per_s"][k] for r in base_runs),
                                 bgaps[k]) for k in range(3)) +
            ("%.1f" % max(r["longest_gap_ms"] for r in base_runs), "-")]
    for rate in rates:
        for mode in modes:
            rs = runs(mode, rate)
            if not rs:
                continue
            cells = []
            for k in range(3):
                us = med((r["slice_kind_stall_us_per_s"][k] - r["around_kind_stall_us_per_s"][k])
                         / r["samples_per_s"] for r in rs)
                n = med((r["kind_gaps_per_s"][k] - bgaps[k]) / r["samples_per_s"] for r in rs)
                cells.append("%.1f|%.2f" % (us, n))
            rows.append((LABEL[mode], str(rate)) + tuple(cells) +
                        ("%.1f" % max(r["longest_gap_ms"] for r in rs),
                         fmt(max((r.get("cpu_burst_ms") or 0) for r in rs), ".1f")))
    return render(head, rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 1)[1])
    ap.add_argument("--repeat", type=int, default=3, help="runs per configuration (3)")
    ap.add_argument("--seconds", type=float, default=8, help="sampling time per run at --rate (8)")
    ap.add_argument("--rate", type=int, default=100, help="default-rate runs, Hz (100)")
    ap.add_argument("--high-rate", type=int, default=1000, help="high-rate runs, Hz; 0 skips (1000)")
    ap.add_argument("--high-seconds", type=float, default=3, help="sampling time per high-rate run (3)")
    ap.add_argument("--threshold-us", type=float, default=5, help="gaps longer than this count (5)")
    ap.add_argument("--trim", type=float, default=0.3, help="seconds cut at each end of the window (0.3)")
    ap.add_argument("--slice", type=float, default=0.25,
                    help="slice length for the robust (median over slices) stall, s (0.25)")
    ap.add_argument("--baseline", type=float, default=0.75,
                    help="unprofiled seconds of the same target before and after each profiler (0.75)")
    ap.add_argument("--python", default=DEFAULT_PY, help="target interpreter (pyenv's 3.11.7)")
    ap.add_argument("--hwspy", default=DEFAULT_HWSPY, help="hwspy binary (build/cli/hwspy)")
    ap.add_argument("--perf", default="/usr/bin/perf", help="perf binary; '' skips perf")
    ap.add_argument("--modes", default="exact,ptrace,nonblocking,perf",
                    help="profiled configurations (exact,ptrace,nonblocking,perf)")
    ap.add_argument("--wait", type=float, default=0,
                    help="wait up to SECS before each run for other load <= --max-load, and rerun "
                         "(twice at most) a run that other load disturbed (0: don't)")
    ap.add_argument("--max-load", type=float, default=0.1,
                    help="CPUs of other load that count as quiet (0.1)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary files and say where")
    ap.add_argument("--json", metavar="FILE", help="also write every run's raw figures here")
    a = ap.parse_args()

    if a.seconds < 2 or a.high_seconds < 2 or a.trim * 2 >= min(a.seconds, a.high_seconds) - 1:
        die("--seconds and --high-seconds must be >= 2 and leave >= 1 s after --trim")
    if not os.access(a.python, os.X_OK):
        die("no target interpreter at %s (give --python)" % a.python)
    modes = [m for m in a.modes.split(",") if m]
    for m in modes:
        if m not in ("exact", "ptrace", "nonblocking", "perf"):
            die("unknown mode %r" % m)
    skipped = []
    if any(m in ("exact", "ptrace", "nonblocking") for m in modes) and not os.access(a.hwspy, os.X_OK):
        skipped.append("hwspy (no binary at %s)" % a.hwspy)
        modes = [m for m in modes if m == "perf"]
    if "perf" in modes and not (a.perf and os.access(a.perf, os.X_OK)):
        skipped.append("perf (no binary at %r)" % a.perf)
        modes.remove("perf")

    tmp = tempfile.mkdtemp(prefix="hwspy-bench-")
    runner = Runner(a, tmp)
    max_rate_before = read_sysctl("perf_event_max_sample_rate")
    plan = []
    for i in range(a.repeat):
        # rotate the order so that no configuration always runs first or last
        ms = ["unprofiled"] + modes
        k = i % len(ms)
        plan += [(m, a.rate) for m in ms[k:] + ms[:k]]
    if a.high_rate and a.high_rate != a.rate:
        for i in range(a.repeat):
            k = i % max(len(modes), 1)
            plan += [(m, a.high_rate) for m in modes[k:] + modes[:k]]
    results = []
    t0 = time.monotonic()
    tty = sys.stderr.isatty()
    try:
        for j, (m, rate) in enumerate(plan):
            if tty:
                print("\r\033[K[%d/%d] %s at %d Hz" % (j + 1, len(plan), m, rate),
                      end="", file=sys.stderr, flush=True)
            results.append(runner.run(m, rate))
    finally:
        if tty:
            print("\r\033[K", end="", file=sys.stderr, flush=True)
    took = time.monotonic() - t0
    max_rate_after = read_sysctl("perf_event_max_sample_rate")

    def runs(mode, rate):
        return [r for r in results if r["mode"] == mode and (mode == "unprofiled" or r["rate"] == rate)]

    base_runs = runs("unprofiled", a.rate)
    base = med(r["slice_stall_us_per_s"] for r in base_runs)
    print("target: python %s (%s), event cpu-clock, gaps > %g us, trim %g s, kernel %s, %d CPUs"
          % (results[0]["python"], a.python, a.threshold_us, a.trim, os.uname().release,
             os.cpu_count()))
    summaries = {}
    rates = [a.rate] + ([a.high_rate] if a.high_rate and a.high_rate != a.rate and modes else [])
    for rate in rates:
        secs = a.seconds if rate == a.rate else a.high_seconds
        text, summaries[rate] = main_table(runs, (["unprofiled"] if rate == a.rate else []) + modes,
                                           rate, base)
        print("\n%d Hz, %d x %g s%s:" % (rate, a.repeat, secs, "" if rate == a.rate else
                                         " (against the unprofiled runs above)"))
        print(text)
    if modes:
        print("\nextra stall per sample (vs before+after) by what the target went through in the "
              "gap (us per sample | gaps per sample),\nthe longest single gap while attached "
              "(startup included) and the profiler's CPU in one-off bursts in the window "
              "(max over the runs):")
        print(breakdown_table(runs, modes, rates))

    notes = sorted({n for r in results for n in r["notes"]})
    loads = [r["other_load"] for r in results if r["other_load"] is not None]
    if loads and max(loads) > a.max_load:
        notes.append("other load above %g CPUs in %d of %d runs (max %.2f): figures are noisy%s"
                     % (a.max_load, sum(x > a.max_load for x in loads), len(loads), max(loads),
                        "" if a.wait else "; --wait 120 waits for a quiet machine"))
    if max_rate_before != max_rate_after:
        notes.append("the kernel lowered perf_event_max_sample_rate from %s to %s"
                     % (max_rate_before, max_rate_after))
    for s in skipped:
        print("skipped: " + s)
    for n in notes:
        print("note: " + n)

    # verdict against the budgets (stated for 100 samples/s), from the --rate runs
    s = summaries.get(a.rate, {})
    parts, ok = [], True
    for mode in ("exact", "nonblocking"):
        if mode in s:
            p, p_runs, p_plain, cpu_t, cpu_s = s[mode]
            slow = p * 100 / 1e4
            cpu = cpu_s if cpu_s is not None else cpu_t
            good, cgood = slow <= BUDGET_SLOWDOWN[mode], cpu <= BUDGET_CPU_US
            ok = ok and good and cgood
            parts.append("%s %.2f%% (<= %g%%) %s, CPU %.1f us/sample (<= %g) %s"
                         % (mode, slow, BUDGET_SLOWDOWN[mode], "ok" if good else "OVER",
                            cpu, BUDGET_CPU_US, "ok" if cgood else "OVER"))
    if s:
        print("\nextra stall/sample (us) at %d Hz by the plain definition (window total vs the "
              "unprofiled runs' total, no slices): %s" % (a.rate, ", ".join(
                  "%s %.1f" % (LABEL[m], v[2]) for m, v in s.items())))
    if parts:
        if "perf" in s:
            parts.append("perf -g %.1f us/sample" % s["perf"][0])
        print("\nverdict at 100 Hz (from the %d Hz runs): %s: %s"
              % (a.rate, "PASS" if ok else "FAIL", "; ".join(parts)))
    else:
        print("\nverdict: none, no hwspy figures")
    print("(took %.0f s%s)" % (took, ", %.0f s of it waiting for quiet" % runner.waited
                                if runner.waited else ""), file=sys.stderr)

    if a.json:
        with open(a.json, "w") as f:
            json.dump({"args": vars(a), "baseline_stall_us_per_s": base, "runs": results},
                      f, indent=1)
    if a.keep:
        print("files kept in " + tmp, file=sys.stderr)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""hwspy monitor's own cost and memory over time, beside perf on the same services.

  bench/monitor.py [--hwspy build/cli/hwspy] [--services 10] [--seconds 60] [--churn S]
                   [--every 10] [--rate 10] [--no-perf]

Starts --services copies of tests/targets/monitor_service.py (each: a thread faulting pages
at a steady rate, one spinning in hot_loop, one waiting on a lock, one asleep; about 0.1 CPU
each), each through a link named mbenchN so that `--name ^mbench` matches them, and runs
`hwspy monitor --name ^mbench --profiles TMP --every E --keep 50 -q` on them at its defaults
for --seconds, scraping /metrics every 5 s as Prometheus would. Every 10 s it reads the
monitor's CPU time (schedstat of its threads, nanoseconds) and its resident memory (VmRSS),
and prints both; at the end: its CPU in % of one CPU over the steady part (after the first
10 s), RSS at 10 s and at the end (and its largest), profiles written.

--churn S: every S seconds one service is killed and a new one started (a new pid: picked up,
the old one's series dropped), for the soak: memory must stay flat across hundreds of
processes coming and going.

Beside it (unless --no-perf), in the same run and on the same services for 20 s, the cost of
what perf would need for the sampling part alone: `perf record -F RATE -g -p PIDS` (no
counting, no HTTP, no profiles), its CPU in % of one CPU.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

import procstat

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.path.join(ROOT, 'tests/targets/monitor_service.py')


def cpu_s(pid):
    """Seconds on a CPU of every thread of pid (0 once it has gone)."""
    return (procstat.task_cpu_ns(pid) or 0) / 1e9


def rss_kb(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return 0


def start_service(tmp, i):
    link = os.path.join(tmp, 'mbench%d' % i)
    if not os.path.exists(link):
        os.symlink(sys.executable, link)
    p = subprocess.Popen([link, TARGET], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    p.stdout.readline()
    return p


def perf_cost(pids, rate, seconds, tmp):
    out = os.path.join(tmp, 'perf.data')
    p = subprocess.Popen(['perf', 'record', '-q', '-F', str(rate), '-g', '-o', out, '-p',
                          ','.join(map(str, pids)), '--', 'sleep', str(seconds)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(2)
    a, t = cpu_s(p.pid), time.monotonic()
    time.sleep(seconds - 4)
    b = cpu_s(p.pid)
    took = time.monotonic() - t
    p.wait()
    return 100 * (b - a) / took


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--hwspy', default=os.path.join(ROOT, 'build/cli/hwspy'))
    ap.add_argument('--services', type=int, default=10)
    ap.add_argument('--seconds', type=float, default=60)
    ap.add_argument('--churn', type=float, default=0)
    ap.add_argument('--every', type=int, default=10)
    ap.add_argument('--rate', type=int, default=10)
    ap.add_argument('--no-perf', action='store_true')
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix='hwspy-bench-monitor-')
    os.chmod(tmp, 0o755)
    pdir = os.path.join(tmp, 'profiles')
    os.mkdir(pdir, 0o755)
    services = [start_service(tmp, i) for i in range(args.services)]
    serial = args.services
    mon = subprocess.Popen([args.hwspy, 'monitor', '--name', '^mbench', '--listen', '127.0.0.1:0',
                            '--profiles', pdir, '--every', str(args.every), '--keep', '50',
                            '--rate', str(args.rate)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    port = int(mon.stderr.readline().split('(port ')[1].split(')')[0])
    start = time.monotonic()
    next_read, next_scrape, next_churn = start + 10, start, start + (args.churn or 1e18)
    base_cpu = base_t = base_rss = None
    max_rss, scrapes, started, lines = 0, 0, args.services, []
    print('%8s %10s %10s %10s %8s' % ('t (s)', 'CPU (%)', 'RSS (MB)', 'watched', 'churned'))
    while time.monotonic() - start < args.seconds:
        now = time.monotonic()
        if now >= next_scrape:
            with urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port, timeout=10) as r:
                lines = r.read().decode().splitlines()
            scrapes += 1
            next_scrape += 5
        if now >= next_churn:
            victim = services.pop(0)
            victim.kill()
            victim.wait()
            services.append(start_service(tmp, serial))
            serial += 1
            started += 1
            next_churn += args.churn
        if now >= next_read:
            c, r = cpu_s(mon.pid), rss_kb(mon.pid)
            max_rss = max(max_rss, r)
            if base_cpu is None:
                base_cpu, base_t, base_rss = c, now, r
            watched = [l for l in lines if l.startswith('hwspy_watched_processes')]
            pct = 100 * (c - base_cpu) / (now - base_t) if now > base_t else float('nan')
            print('%8.0f %10.2f %10.1f %10s %8d' % (now - start, pct, r / 1024,
                                                    watched[0].split()[-1] if watched else '?',
                                                    started - args.services), flush=True)
            next_read += 10
        time.sleep(0.2)
    end_cpu, end_t, end_rss = cpu_s(mon.pid), time.monotonic(), rss_kb(mon.pid)
    mon.terminate()
    mon.wait(10)
    perf = None
    if not args.no_perf:
        perf = perf_cost([s.pid for s in services], args.rate, 20, tmp)
    for s in services:
        s.kill()
        s.wait()
    print('hwspy monitor, %d services (%d started in all), --rate %d, --every %d, %d scrapes:'
          % (args.services, started, args.rate, args.every, scrapes))
    print('  CPU %.2f%% of one CPU (steady, after the first 10 s); RSS %.1f MB at 10 s, %.1f MB '
          'at the end, %.1f MB at most; %d profiles in the directory'
          % (100 * (end_cpu - base_cpu) / (end_t - base_t), base_rss / 1024, end_rss / 1024,
             max_rss / 1024, len(os.listdir(pdir))))
    if perf is not None:
        print('  perf record -F %d -g -p (the same services, sampling alone): CPU %.2f%% of one CPU'
              % (args.rate, perf))


if __name__ == '__main__':
    main()

"""hwspy monitor, one --case each.

prometheus (--python ID): a real Prometheus (Debian's package: started here on 127.0.0.1 with a
  1 s scrape interval and a data directory of its own) scrapes `hwspy monitor --name REGEX`
  watching two copies of tests/targets/monitor_service.py (each run through a link whose name
  is its process name), the second started after the monitor. Through Prometheus' HTTP API:
  both processes' series, with the --label; the page-fault rate Prometheus computes
  (rate(hwspy_events_total{event="page-faults"})) within FAULT_TOLERANCE of the target's own
  getrusage rate over the same seconds. /metrics passes `promtool check metrics`, OpenMetrics
  when asked for (its content type, "# EOF" last); off-CPU seconds by reason where the
  service's threads wait (sleep, futex (lock)); its hottest function is hot_loop; the last
  interval's CPUs utilized, and with a hardware PMU its IPC (else said and not checked); a request
  naming another host than the loopback (DNS rebinding) is refused (403). The second
  service killed: its series leave /metrics within 3 s. The profile directory moved away and
  SIGHUP sent: it is made again and the next profiles go there. The profiles (--every 2 --keep 3): at
  most 3, each read by `go tool pprof` with the labels (-tags). SIGTERM mid-interval: the
  monitor ends within 1 s, exit 0, the interval's profile written, no partial or temporary
  file left. No service was ever stopped or traced.
all-python: `hwspy monitor --all-python` with services on 3.8 (pyenv, shared libpython), Debian's
  static 3.14 (through its loader) and 3.7 (unsupported), and a `sleep`: within ALL_PYTHON_S
  each Python is in /metrics, the supported ones counted and sampled (target_info's python is
  their version, mode capture where BPF is allowed), 3.7 counted with its sampling error said,
  the sleep absent.
unreadable: run as nobody on root's process: it runs on, says so in one line, and serves
  hwspy_target_up 0 with the reason in hwspy_target_info.
errors: nothing to watch (exit 2), no such pid, a regex that does not compile, a label Prometheus refuses,
  a port in use (exit 1): one line each on stderr, nothing left running.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import harness
from harness import Skip, check, log

FAULT_TOLERANCE = 0.20
SERIES_GONE_S = 3.0


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def get(url, accept=None, timeout=10):
    req = urllib.request.Request(url, headers={'Accept': accept} if accept else {})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.headers.get('Content-Type', ''), r.read().decode('utf-8')


def query(prom, q):
    url = 'http://127.0.0.1:%d/api/v1/query?%s' % (prom, urllib.parse.urlencode({'query': q}))
    d = json.loads(get(url)[1])
    check(d.get('status') == 'success', 'prometheus query %r: %r' % (q, d))
    return d['data']['result']


def start_monitor(opts, args):
    argv = [opts.hwspy, 'monitor'] + args
    log('$ %s' % ' '.join(argv))
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    harness.Process.profilers.append(p)
    line = p.stderr.readline()
    log(line.rstrip())
    m = re.search(r'\(port (\d+)\)', line)
    check(m, 'hwspy monitor said no port: %r' % line)
    return p, int(m.group(1))


def start_service(opts, name):
    link = os.path.join(opts.tmp, name)
    os.symlink(opts.py.argv[0], link)
    proc = harness.Process([link] + opts.py.argv[1:] +
                           [os.path.join(opts.targets, 'monitor_service.py')])
    proc.expect_ready()
    return proc


def start_prometheus(opts, target_port):
    prom = shutil.which('prometheus')
    if not prom:
        raise Skip("no 'prometheus' here (apt-get install prometheus; .ci/run installs it)")
    port = free_port()
    conf = os.path.join(opts.tmp, 'prometheus.yml')
    with open(conf, 'w') as f:
        f.write('global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n'
                'scrape_configs:\n  - job_name: hwspy\n    static_configs:\n'
                '      - targets: ["127.0.0.1:%d"]\n' % target_port)
    argv = [prom, '--config.file=' + conf, '--storage.tsdb.path=' + os.path.join(opts.tmp, 'tsdb'),
            '--web.listen-address=127.0.0.1:%d' % port]
    log('$ %s' % ' '.join(argv))
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=open(os.path.join(opts.tmp, 'prometheus.log'), 'w'))
    harness.Process.profilers.append(p)
    end = time.monotonic() + 30
    while time.monotonic() < end:
        try:
            if get('http://127.0.0.1:%d/-/ready' % port, timeout=2):
                return p, port
        except OSError:
            time.sleep(0.2)
    raise harness.Fail('prometheus did not become ready in 30 s')


def pids_in(result):
    return {int(s['metric']['pid']) for s in result}


def wait_for(what, fn, timeout):
    end = time.monotonic() + timeout
    while True:
        v = fn()
        if v or time.monotonic() > end:
            check(v, what)
            return v
        time.sleep(0.3)


def check_metrics_text(opts, port, a):
    ctype, text = get('http://127.0.0.1:%d/metrics' % port)
    check(ctype.startswith('text/plain; version=0.0.4'), 'content type %r' % ctype)
    promtool = shutil.which('promtool')
    if promtool:
        r = subprocess.run([promtool, 'check', 'metrics'], input=text, capture_output=True,
                           text=True, timeout=30)
        check(r.returncode == 0, 'promtool check metrics: %s%s' % (r.stdout, r.stderr))
    ctype, om = get('http://127.0.0.1:%d/metrics' % port,
                    accept='application/openmetrics-text; version=1.0.0,text/plain;q=0.5')
    check(ctype.startswith('application/openmetrics-text'), 'OpenMetrics content type %r' % ctype)
    check(om.endswith('# EOF\n'), 'OpenMetrics text does not end in # EOF')
    # a web page whose name resolves to 127.0.0.1 (DNS rebinding) is refused
    req = urllib.request.Request('http://127.0.0.1:%d/metrics' % port,
                                 headers={'Host': 'rebind.example:%d' % port})
    try:
        urllib.request.urlopen(req, timeout=10)
        check(False, 'a request for Host rebind.example was answered')
    except urllib.error.HTTPError as e:
        check(e.code == 403, 'Host rebind.example: HTTP %d' % e.code)
    # waits by reason, and the hottest function, of the first service
    lines = [l for l in text.splitlines() if 'pid="%d"' % a.pid in l]
    reasons = {m.group(1) for l in lines if l.startswith('hwspy_off_cpu_seconds_total')
               for m in [re.search(r'reason="([^"]*)"', l)] if m}
    check({'sleep', 'futex (lock)'} <= reasons, 'off-CPU reasons %s' % sorted(reasons))
    # the last interval's ratios: CPUs from task-clock here; IPC and MPKI need a hardware PMU
    cpus = [float(l.split()[-1]) for l in lines if l.startswith('hwspy_cpus_utilized{')]
    check(len(cpus) == 1 and 0 < cpus[0] < os.cpu_count(), 'hwspy_cpus_utilized %s' % cpus)
    ipc = [l for l in lines if l.startswith('hwspy_instructions_per_cycle{')]
    if os.path.isdir('/sys/bus/event_source/devices/cpu'):
        check(ipc, 'a hardware PMU, and no hwspy_instructions_per_cycle')
    else:
        log('no hardware PMU here (/sys/bus/event_source/devices/cpu): '
            'hwspy_instructions_per_cycle and hwspy_misses_per_kilo_instructions not checked')
    top = [l for l in lines if l.startswith('hwspy_top_function_ratio')]
    check(any('function="hot_loop"' in l for l in top), 'hot_loop not among\n%s' % '\n'.join(top))
    return text


def fault_rate(prom, svc, window=5.0):
    """The service's getrusage fault rate over window seconds, and Prometheus' rate() of
    hwspy_events_total{event="page-faults"} over the same seconds."""
    a = svc.ask('info')
    time.sleep(window)
    b = svc.ask('info')
    time.sleep(1.5)     # the last scrape of the window in
    own = (b['faults'] - a['faults']) / (b['t'] - a['t'])
    res = query(prom, 'rate(hwspy_events_total{event="page-faults",pid="%d"}[%ds])'
                % (svc.pid, int(window)))
    check(res, 'no page-fault rate for pid %d in prometheus' % svc.pid)
    return own, float(res[0]['value'][1])


def check_profiles(opts, pdir, pids):
    files = sorted(os.listdir(pdir))
    log('profiles: %s' % files)
    check(0 < len(files) <= 3, '%d files in the profile directory (--keep 3)' % len(files))
    for f in files:
        check(re.match(r'hwspy-\d{8}T\d{6}Z-.+-\d+\.pb\.gz$', f), 'a file %r not named so' % f)
        tags = go_pprof(opts, '-tags', os.path.join(pdir, f))
        # "team: Total 1.7s\n       1.7s (  100%): ml": every sample carries each label
        for key, values in (('team', ['ml']), ('pid', pids), ('process', None),
                            ('hostname', [socket.gethostname()])):
            m = re.search(r'^ *%s: Total .*\n *\S+ \( *100%%\): (\S+)$' % key, tags, re.M)
            check(m and (values is None or m.group(1) in map(str, values)),
                  '%s: no label %s on all samples in go tool pprof -tags:\n%s' % (f, key, tags))
    return files


go_pprof = harness.go_pprof


def case_prometheus(opts):
    if not opts.python:
        raise Skip('--case prometheus needs --python')
    if not shutil.which('prometheus'):
        raise Skip("no 'prometheus' here (apt-get install prometheus; .ci/run installs it)")
    tag = 'svc%d' % os.getpid()
    pdir = os.path.join(opts.tmp, 'profiles')
    os.mkdir(pdir)
    a = start_service(opts, tag + 'a')
    mon, port = start_monitor(opts, ['--name', '^%s[ab]$' % tag, '--listen', '127.0.0.1:0',
                                     '--label', 'team=ml', '--profiles', pdir, '--every', '2',
                                     '--keep', '3', '-v'])
    prom, prom_port = start_prometheus(opts, port)
    b = start_service(opts, tag + 'b')
    up = wait_for('both services in prometheus', lambda: (
        pids_in(query(prom_port, 'hwspy_target_up{team="ml"} == 1')) >= {a.pid, b.pid}), 20)
    log('in prometheus: %s' % up)
    own, prom_rate = fault_rate(prom_port, a)
    log('page faults/s: the service %.0f, prometheus %.0f' % (own, prom_rate))
    check(abs(prom_rate - own) <= FAULT_TOLERANCE * own,
          'prometheus rate %.0f/s against the service own %.0f/s' % (prom_rate, own))
    check_metrics_text(opts, port, a)
    b.kill()
    t = time.monotonic()
    wait_for('pid %d still in /metrics %.0f s after it exited' % (b.pid, SERIES_GONE_S),
             lambda: 'pid="%d"' % b.pid not in get('http://127.0.0.1:%d/metrics' % port)[1],
             SERIES_GONE_S)
    log('series of the killed service gone after %.1f s' % (time.monotonic() - t))
    harness.check_untouched(a.pid)
    # SIGHUP after the directory was moved away (a rotation of the logs, say): the directory
    # is made and opened again, and the next intervals are written there
    moved = pdir + '.old'
    os.rename(pdir, moved)
    mon.send_signal(signal.SIGHUP)
    wait_for('no profile in the directory made again after SIGHUP', lambda: os.path.isdir(pdir)
             and os.listdir(pdir), 6)
    shutil.rmtree(moved)
    time.sleep(1.0)     # mid-interval
    before = {f: os.stat(os.path.join(pdir, f)).st_mtime for f in os.listdir(pdir)}
    t = time.monotonic()
    mon.send_signal(signal.SIGTERM)
    rc = mon.wait(10)
    took = time.monotonic() - t
    log(mon.stderr.read().rstrip())
    log('SIGTERM: exit %d after %.2f s' % (rc, took))
    check(rc == 0 and took <= 1.0, 'SIGTERM: exit %d after %.2f s' % (rc, took))
    files = check_profiles(opts, pdir, [a.pid, b.pid])
    check(set(files) != set(before) or any(os.stat(os.path.join(pdir, f)).st_mtime > before[f]
                                           for f in files),
          'no profile written at SIGTERM (before %s, after %s)' % (sorted(before), files))
    harness.check_untouched(a.pid)
    prom.terminate()


ALL_PYTHON_S = 6


def case_all_python(opts):
    import pythons
    procs = {}
    for ident in ('py38', 'debian314', 'py37'):
        try:
            py = pythons.get(ident, os.path.realpath(opts.source_root))
        except pythons.Missing as e:
            raise Skip(str(e))
        procs[ident] = harness.Process(py.argv + [os.path.join(opts.targets, 'monitor_service.py')])
        procs[ident].expect_ready()
    sleeper = harness.Process(['sleep', '60'])
    mon, port = start_monitor(opts, ['--all-python', '--listen', '127.0.0.1:0', '--every', '1'])
    capture = harness.bpf_capture_allowed()

    def info():
        text = get('http://127.0.0.1:%d/metrics' % port)[1]
        got = {}
        for l in text.splitlines():
            m = re.match(r'hwspy_target_info\{.*pid="(\d+)".*python="([^"]*)",mode="([^"]*)",'
                         r'error="([^"]*)"\} 1$', l)
            if m:
                got[int(m.group(1))] = m.groups()[1:]
        return got

    def ready():
        got = info()
        return (all(p.pid in got for p in procs.values()) and
                all(got[procs[i].pid][0] for i in ('py38', 'debian314')) and got)
    got = wait_for('not every Python in /metrics within %d s' % ALL_PYTHON_S, ready, ALL_PYTHON_S)
    for ident, p in procs.items():
        log('%s pid %d: %s' % (ident, p.pid, got[p.pid]))
    for ident, version in (('py38', '3.8.'), ('debian314', '3.14.')):
        python, mode, error = got[procs[ident].pid]
        check(python.startswith(version) and (mode == 'capture' or not capture) and not error,
              '%s: python %r mode %r error %r' % (ident, python, mode, error))
    python, mode, error = got[procs['py37'].pid]
    check(mode == 'counting' and '3.7' in error, 'py37: mode %r error %r' % (mode, error))
    check(sleeper.pid not in got, 'the sleep is watched')
    mon.send_signal(signal.SIGTERM)
    check(mon.wait(10) == 0, 'exit %r' % mon.returncode)
    for p in procs.values():
        harness.check_untouched(p.pid)


def run_error(opts, args, code):
    p = subprocess.run([opts.hwspy, 'monitor'] + args, capture_output=True, text=True,
                       timeout=30, stdin=subprocess.DEVNULL)
    lines = p.stderr.strip().splitlines()
    log('$ hwspy monitor %s -> %d: %s' % (' '.join(args), p.returncode, lines))
    check(p.returncode == code and len(lines) == 1, 'hwspy monitor %s: exit %d, %d lines'
          % (' '.join(args), p.returncode, len(lines)))
    return lines[0]


def case_unreadable(opts):
    """hwspy monitor run as nobody, given root's process: it runs on, and the process's
    series say it cannot be read and why."""
    if os.geteuid() != 0:
        raise Skip('needs root (a process nobody cannot read)')
    prefix, exe = harness.as_nobody(opts)
    svc = harness.Process(['sleep', '60'])
    argv = prefix + [exe, 'monitor', '-p', str(svc.pid), '--listen', '127.0.0.1:0']
    log('$ %s' % ' '.join(argv))
    mon = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    harness.Process.profilers.append(mon)
    port = int(re.search(r'\(port (\d+)\)', mon.stderr.readline()).group(1))
    line = mon.stderr.readline().rstrip()
    log(line)
    check('cannot watch pid %d' % svc.pid in line, 'the line said: %r' % line)
    text = get('http://127.0.0.1:%d/metrics' % port)[1]
    up = [l for l in text.splitlines() if l.startswith('hwspy_target_up{')]
    info = [l for l in text.splitlines() if l.startswith('hwspy_target_info{')]
    log('\n'.join(up + info))
    check(up == ['hwspy_target_up{pid="%d",process="sleep"} 0' % svc.pid] and len(info) == 1
          and 'error=""' not in info[0], 'series %s %s' % (up, info))
    mon.send_signal(signal.SIGTERM)
    check(mon.wait(10) == 0, 'exit %r' % mon.returncode)


def case_errors(opts):
    line = run_error(opts, ['--listen', '127.0.0.1:0'], 2)
    check('--name' in line, 'nothing to watch: %r' % line)
    line = run_error(opts, ['-p', '999999', '--listen', '127.0.0.1:0'], 1)
    check('no process with pid 999999' in line, 'no such pid: %r' % line)
    line = run_error(opts, ['--name', '(unclosed', '--listen', '127.0.0.1:0'], 1)
    check('regular expression' in line, 'a bad regex: %r' % line)
    line = run_error(opts, ['--name', 'x', '--label', '__x=1', '--listen', '127.0.0.1:0'], 1)
    check('label' in line, 'a bad label: %r' % line)
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        s.listen(1)
        line = run_error(opts, ['--name', 'x', '--listen', '127.0.0.1:%d' % s.getsockname()[1]], 1)
    check('listen' in line, 'a port in use: %r' % line)


def main():
    p = harness.parser(__doc__)
    cases = {'prometheus': case_prometheus, 'all-python': case_all_python, 'errors': case_errors,
             'unreadable': case_unreadable}
    p.add_argument('--case', required=True, choices=sorted(cases))
    harness.main(lambda opts: cases[opts.case](opts), p)


if __name__ == '__main__':
    main()

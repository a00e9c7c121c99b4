"""hwspy dump, one --case each.

states (--python ID): tests/targets/dump_states.py's threads in known states, dumped DUMPS
  times as text and once each as --json, --nonblocking and --native (those two modes on the
  variants' Pythons only: --default-mode leaves them out): each thread's name and
  innermost function; sleeping waits on "sleep", lock on "futex (lock)", pipe on "read fd N
  (pipe)" (N the target's own fd), the main thread on "read fd 0 (pipe)" (stdin; or "GIL", just
  back from answering a command, or, on a loaded machine, still running there, holding it);
  the three CPU loops (running, gil-a, gil-b) either run or wait on "GIL"; at most one thread
  holds the GIL in every dump, and exactly one in at least DUMPS - 1 of them (a dump can land
  as the GIL changes hands: none held it in 1 of 30 dumps measured on 3.12 here); the one that
  holds it runs. Text files by their module-relative paths (dump_states.py, threading.py), the
  last text dump's, --full-paths, by their full paths. --json parses and every field has its
  type. After every dump no thread of the target is stopped or traced and its CPU loops went
  on.
harm: tests/targets/dump_eintr.py's threads in raw system calls that fail with EINTR when
  interrupted (epoll_wait, recv and accept with SO_RCVTIMEO, sigtimedwait), others in calls the
  kernel restarts after a stop (poll, clock_nanosleep: stopped with the running threads), others
  between two short waits, others running, each checking every result and timing every call,
  under a CPU
  load: DUMPS_FAST dumps 150 ms apart, then KILLS dumps each SIGKILLed at a random moment of its
  run, SIGUSR1 sent to the target meanwhile. Then no call failed with EINTR or returned later
  than its 1 s timeout plus 0.5 s, every SIGUSR1 ran the target's handler within 0.3 s, every
  dump that finished shows the waiting threads as waiting, and no thread is left stopped or
  traced.
tree: tests/targets/dump_tree.py, a parent waiting on stdin with two forked children spinning
  in child_a and child_b and a `sleep` child: `dump --subprocesses` shows four processes, the
  parent in parent_wait, each Python child in its own function, the sleep as no Python
  process (text and --json); without --subprocesses the parent alone.
errors: no such pid, a process that is not Python (sleep 30), --native with --nonblocking, no
  -p: exit 1 (2 for the usage errors), one line on stderr saying what; the sleep left untouched.
waits (--python ID): tests/targets/dump_waits.py's six threads blocked in accept, recv, a pipe's
  read, a lock, a sleep and a child's wait: dump --json gives each the words of the one wait
  table ("accept socket", "recv socket", "read fd N (pipe)", "futex (lock)", "sleep", "wait
  child"), and `record --off-cpu --threads` of the same threads puts WAITS_SHARE of each one's
  time under a [wait: ...] frame with dump's words.
"""
import json
import os
import random
import re
import signal
import subprocess
import sys
import time

import harness
from harness import Skip, check, log

DUMPS = 3
CPU = {'running': 'spin_running', 'gil-a': 'spin_gil', 'gil-b': 'spin_gil'}
WAITING = {'sleeping': ('sleep_long', 'sleep'), 'lock': ('wait_lock', 'futex (lock)'),
           'pipe': ('read_pipe', None)}
THREAD = re.compile(r'^Thread (?P<tid>\d+) \((?P<name>.*)\)(?P<gil> holds the GIL,)? '
                    r'(?:running|waiting: (?P<wait>.*)):$')
FRAME = re.compile(r'^    (?P<fn>.+) \((?P<file>.+):(?P<line>\d+)\)$')
# dump_waits.py's threads: (function, the words of their wait)
WAITS = {'acceptor': ('accept_wait', r'accept socket'), 'receiver': ('recv_wait', r'recv socket'),
         'piper': ('pipe_wait', r'read fd \d+ \(pipe\)'), 'locker': ('lock_wait', r'futex \(lock\)'),
         'sleeper': ('sleep_wait', r'sleep'), 'reaper': ('child_wait', r'wait child')}
WAITS_SHARE = 0.9


def run_dump(opts, args, timeout=60):
    argv = [opts.hwspy, 'dump'] + args
    log('$ %s' % ' '.join(argv))
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    if p.stderr:
        log(p.stderr.rstrip())
    return p


def parse_text(out):
    """[{tid, name, gil, wait, frames: [function names], files: [their files]}] from the text
    dump."""
    threads = []
    for line in out.splitlines():
        m = THREAD.match(line)
        if m:
            threads.append({'tid': int(m['tid']), 'name': m['name'], 'gil': bool(m['gil']),
                            'wait': m['wait'], 'frames': [], 'files': []})
            continue
        m = FRAME.match(line)
        if m and threads:
            threads[-1]['frames'].append(m['fn'])
            threads[-1]['files'].append(m['file'])
    return threads


def check_threads(threads, pipe_fd, main_pid, has_gil, what):
    """The states of dump_states.py's threads; how many hold the GIL."""
    by_name = {t['name']: t for t in threads}
    for name in list(CPU) + list(WAITING) + ['MainThread']:
        check(name in by_name, '%s: no thread named %r in %s' % (what, name, sorted(by_name)))
    main = by_name['MainThread']
    check(main['tid'] == main_pid, '%s: MainThread is tid %d, not the pid %d'
          % (what, main['tid'], main_pid))
    check(main['frames'][:1] == ['main'], '%s: MainThread innermost %r' % (what, main['frames']))
    # back from answering 'info', it may still wait for the GIL to go back into its read, or
    # (a loaded machine) still run there, holding it, or still be in the answer's write
    check(main['wait'] in ('read fd 0 (pipe)', 'write fd 1 (pipe)', 'GIL', None),
          '%s: MainThread waits on %r'
          % (what, main['wait']))
    for name, fn in CPU.items():
        t = by_name[name]
        check(t['frames'][:1] == [fn], '%s: %s innermost %r, not %s' % (what, name, t['frames'], fn))
        check(t['wait'] in (None, 'GIL'), '%s: CPU loop %s waits on %r' % (what, name, t['wait']))
    for name, (fn, wait) in WAITING.items():
        t = by_name[name]
        wait = wait or 'read fd %d (pipe)' % pipe_fd
        check(t['frames'][:1] == [fn], '%s: %s innermost %r, not %s' % (what, name, t['frames'], fn))
        check(t['wait'] == wait, '%s: %s waits on %r, not %r' % (what, name, t['wait'], wait))
        check(not t['gil'], '%s: %s holds the GIL while it waits' % (what, name))
    holders = [t for t in threads if t['gil']]
    check(has_gil or not holders, '%s: %d threads hold a GIL this build has not' % (what, len(holders)))
    check(len(holders) <= 1, '%s: %d threads hold the GIL' % (what, len(holders)))
    for t in holders:
        check(t['name'] in list(CPU) + ['MainThread'] and t['wait'] is None,
              '%s: the GIL holder %s (%s) is no running CPU loop' % (what, t['name'], t['wait']))
    cpu_gil = [t for t in threads if t['name'] in CPU and (t['gil'] or t['wait'] == 'GIL')]
    check(not has_gil or cpu_gil, '%s: none of the CPU loops holds or waits for the GIL' % what)
    return len(holders)


def check_json(text, what):
    d = json.loads(text)
    check(isinstance(d['pid'], int) and isinstance(d['command'], str), '%s: pid/command' % what)
    check(isinstance(d['python']['version'], str) and isinstance(d['python']['path'], str),
          '%s: python' % what)
    check(isinstance(d['threads'], list) and d['threads'], '%s: no threads' % what)
    threads = []
    for t in d['threads']:
        check(isinstance(t['tid'], int) and isinstance(t['name'], str), '%s: tid/name' % what)
        check(t['gil'] in (True, False, None), '%s: gil %r' % (what, t['gil']))
        check(t['state'] in ('running', 'waiting'), '%s: state %r' % (what, t['state']))
        check((t['wait'] is None) == (t['state'] == 'running') and
              (t['wait'] is None or isinstance(t['wait'], str)), '%s: wait %r' % (what, t['wait']))
        for f in t['frames']:
            check(isinstance(f['function'], str) and isinstance(f['file'], str) and
                  isinstance(f['line'], int) and f['line'] > 0, '%s: frame %r' % (what, f))
        threads.append({'tid': t['tid'], 'name': t['name'], 'gil': t['gil'] is True,
                        'wait': t['wait'], 'frames': [f['function'] for f in t['frames']],
                        'native': t.get('native')})
    return d, threads


def still_runs(proc, before, what):
    time.sleep(0.3)
    info = proc.ask('info')
    for name in CPU:
        check(info['counts'][name] > before['counts'][name],
              '%s: the CPU loop %s made no progress after the dump' % (what, name))
    time.sleep(0.2)     # the main thread back in its read
    return info


def case_states(opts):
    if not opts.python:
        raise Skip('--case states needs --python')
    proc = harness.Process(opts.py.argv + [os.path.join(opts.targets, 'dump_states.py')])
    proc.expect_ready()
    info = proc.ask('info')
    has_gil = True      # every supported build here has one (no free-threaded build installed)
    exact_one = 0
    script = os.path.join(opts.targets, 'dump_states.py')
    for i in range(DUMPS):
        full = i == DUMPS - 1
        what = 'dump %d%s' % (i + 1, ' --full-paths' if full else '')
        p = run_dump(opts, ['-p', str(proc.pid)] + (['--full-paths'] if full else []))
        check(p.returncode == 0, '%s: exit %d' % (what, p.returncode))
        log(p.stdout.rstrip())
        harness.check_untouched(proc.pid)
        threads = parse_text(p.stdout)
        exact_one += check_threads(threads, info['pipe_fd'], proc.pid, has_gil, what) == 1
        # the script's files below its folder, the stdlib's below lib/pythonX.Y: no '/' left
        files = {f for t in threads for f in t['files']}
        main = [t for t in threads if t['name'] == 'MainThread'][0]
        check(main['files'][:1] == [script if full else 'dump_states.py'] and
              'threading.py' in {os.path.basename(f) for f in files} and
              all(f.startswith('/') == full for f in files if not f.startswith('<')),
              '%s: files %s, MainThread in %r' % (what, sorted(files), main['files'][:1]))
        info = still_runs(proc, info, what)
    check(exact_one >= DUMPS - 1, 'exactly one thread held the GIL in only %d of %d dumps'
          % (exact_one, DUMPS))
    modes = [['--json']] + ([] if opts.default_mode else
                            [['--json', '--nonblocking'], ['--json', '--native']])
    for extra in modes:
        what = 'dump %s' % ' '.join(extra)
        p = run_dump(opts, ['-p', str(proc.pid)] + extra)
        check(p.returncode == 0, '%s: exit %d' % (what, p.returncode))
        d, threads = check_json(p.stdout, what)
        check(d['pid'] == proc.pid and d['python']['version'].startswith(
            '%d.%d.' % opts.py.version), '%s: pid %r version %r' % (what, d['pid'],
                                                                   d['python']['version']))
        # the running threads are stopped, and those waiting in calls the kernel restarts
        # after a stop (sleep, a lock, a pipe); none with --nonblocking
        check(d['stopped'] == (d['read']['stopped'] > 0) and
              ('--nonblocking' not in extra or not d['stopped']) and
              sum(d['read'].values()) == len(d['threads']) and
              all(t['read'] in ('waiting', 'stopped', 'running') for t in d['threads']),
              '%s: stopped %r, read %r' % (what, d['stopped'], d['read']))
        harness.check_untouched(proc.pid)
        # --nonblocking reads threads as they run: a CPU loop may be between functions
        if '--nonblocking' not in extra:
            check_threads(threads, info['pipe_fd'], proc.pid, has_gil, what)
        if '--native' in extra:
            sleeper = [t for t in threads if t['name'] == 'sleeping'][0]
            names = [f['function'] for f in sleeper['native'] or []]
            check(any('sleep' in n or 'select' in n for n in names),
                  '%s: the sleeping thread has no sleep in its native frames %r' % (what, names))
        info = still_runs(proc, info, what)
    # -o: written whole
    out = os.path.join(opts.tmp, 'dump.json')
    p = run_dump(opts, ['-p', str(proc.pid), '--json', '-o', out])
    check(p.returncode == 0 and not p.stdout, '-o: exit %d, stdout %r' % (p.returncode, p.stdout))
    with open(out) as f:
        check_json(f.read(), '-o')
    harness.check_untouched(proc.pid)
    proc.quit()


def case_errors(opts):
    dead = subprocess.Popen(['true'])
    dead.wait()
    p = run_dump(opts, ['-p', str(dead.pid)])
    check(p.returncode == 1 and 'no process with pid %d' % dead.pid in p.stderr,
          'no such pid: exit %d, %r' % (p.returncode, p.stderr))
    sleeper = harness.Process(['sleep', '30'])
    p = run_dump(opts, ['-p', str(sleeper.pid)])
    check(p.returncode == 1 and 'not a Python process' in p.stderr and not p.stdout,
          'not python: exit %d, %r' % (p.returncode, p.stderr))
    check(len(p.stderr.strip().splitlines()) == 1, 'not python: more than one line')
    harness.check_untouched(sleeper.pid, 'sleep')
    p = run_dump(opts, ['-p', str(sleeper.pid), '--native', '--nonblocking'])
    check(p.returncode == 2 and '--nonblocking' in p.stderr, '--native --nonblocking: exit %d, %r'
          % (p.returncode, p.stderr))
    p = run_dump(opts, [])
    check(p.returncode == 2 and '-p PID' in p.stderr, 'no -p: exit %d, %r'
          % (p.returncode, p.stderr))
    sleeper.kill()


PROCESS = re.compile(r'^Process (?P<pid>\d+): (?P<command>.*)$')


def case_tree(opts):
    if not opts.python:
        raise Skip('--case tree needs --python')
    proc = harness.Process(opts.py.argv + [os.path.join(opts.targets, 'dump_tree.py')])
    proc.expect_ready()
    want = {'child_a', 'child_b', 'parent_wait'}
    p = run_dump(opts, ['-p', str(proc.pid), '--subprocesses'])
    log(p.stdout)
    check(p.returncode == 0, 'dump --subprocesses: exit %d' % p.returncode)
    procs = []
    for line in p.stdout.splitlines():
        m = PROCESS.match(line)
        if m:
            procs.append({'pid': int(m['pid']), 'command': m['command'], 'frames': []})
        elif procs:
            f = FRAME.match(line)
            if f:
                procs[-1]['frames'].append(f['fn'])
            elif line.startswith('(cannot dump it: '):
                procs[-1]['error'] = line
    check(len(procs) == 4 and procs[0]['pid'] == proc.pid, 'dump --subprocesses: %d '
          'processes, the first %r' % (len(procs), procs[:1]))
    seen = {fn for pr in procs for fn in pr['frames'] if fn in want}
    check(seen == want, 'dump --subprocesses: functions %s, not %s' % (sorted(seen), sorted(want)))
    for pr in procs[1:]:
        if pr['command'].startswith('sleep'):
            check('not a Python process' in pr.get('error', ''), 'the sleep child: %r' % pr)
    p = run_dump(opts, ['-p', str(proc.pid), '--subprocesses', '--json'])
    d = json.loads(p.stdout)
    check(p.returncode == 0 and len(d['processes']) == 4, '--json: exit %d, %d processes'
          % (p.returncode, len(d.get('processes', []))))
    seen = {f['function'] for pr in d['processes'] for t in pr.get('threads', [])
            for f in t['frames'] if f['function'] in want}
    check(seen == want, '--json: functions %s' % sorted(seen))
    check(sum('error' in pr for pr in d['processes']) == 1, '--json: not one process in error')
    p = run_dump(opts, ['-p', str(proc.pid)])
    heads = [line for line in p.stdout.splitlines() if PROCESS.match(line)]
    check(p.returncode == 0 and len(heads) == 1 and 'child_a' not in p.stdout,
          'without --subprocesses: %d processes' % len(heads))
    harness.check_untouched(proc.pid)
    proc.quit()


DUMPS_FAST = 16
KILLS = 24


def case_harm(opts):
    if not opts.python:
        raise Skip('--case harm needs --python')
    load = [subprocess.Popen([sys.executable, '-c', 'while True: pass']) for _ in range(2)]
    proc = harness.Process(opts.py.argv + [os.path.join(opts.targets, 'dump_eintr.py')])
    try:
        proc.expect_ready()
        sent = []

        def usr1():
            sent.append(time.monotonic())
            os.kill(proc.pid, signal.SIGUSR1)

        # a 1 s wait interrupted and made again every 150 ms would never return
        seen = running = 0
        for i in range(DUMPS_FAST):
            p = run_dump(opts, ['-p', str(proc.pid)])
            check(p.returncode == 0, 'dump %d: exit %d' % (i + 1, p.returncode))
            for t in parse_text(p.stdout):
                if t['name'].startswith(('epoll-', 'recv-', 'accept-', 'sigwait-')):
                    seen += 1
                    running += t['wait'] is None
            if i % 4 == 0:
                usr1()
            time.sleep(0.15)
        # a thread between two 1 s waits (for microseconds) runs
        check(seen == DUMPS_FAST * 10 and running <= 2, '%d of %d views of the waiting '
              'threads show them running' % (running, seen))
        # the EINTRs so far (dumps that ran to their end), apart from those of the kills below
        # (a rare EINTR in a quick-N thread: which phase it came in says which race it was)
        fast_eintr = {n: s['eintr'] for n, s in proc.ask('stats')['threads'].items()
                      if s['eintr']}
        log('EINTRs after the %d whole dumps: %s' % (DUMPS_FAST, fast_eintr or 'none'))
        # hwspy killed anywhere in its run: nothing of a stop may be left to undo
        rng = random.Random(os.getpid())
        for i in range(KILLS):
            argv = [opts.hwspy, 'dump', '-p', str(proc.pid)]
            d = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0.0, 0.08))
            if i % 3 == 0:
                usr1()
            d.kill()
            d.wait()
        time.sleep(1.6)        # every call under way is over
        st = proc.ask('stats')
        log(json.dumps(st['threads'], sort_keys=True))
        for name, s in st['threads'].items():
            check(s['calls'] > 0, '%s made no call' % name)
            check(s['eintr'] == 0, '%s: %d calls failed with EINTR (%d of them in the whole '
                  'dumps, the rest in the killed ones)' % (name, s['eintr'],
                                                            fast_eintr.get(name, 0)))
            check(not s['errors'], '%s: calls failed: %s' % (name, s['errors']))
            check(s['early'] == 0 or name.startswith(('quick-', 'spin-')),
                  '%s: %d calls returned before their timeout' % (name, s['early']))
            check(s['late'] == 0, '%s: %d calls returned over 0.5 s after their timeout (the '
                  'longest took %.2f s)' % (name, s['late'], s['max_s']))
        handled = st['usr1']
        check(len(handled) == len(sent), '%d SIGUSR1 sent, the handler ran %d times'
              % (len(sent), len(handled)))
        for t_sent in sent:
            ran = [t for t in handled if t >= t_sent]
            check(ran and ran[0] - t_sent < 0.3, 'a SIGUSR1 sent at %.3f was handled %s'
                  % (t_sent, 'at %.3f' % ran[0] if ran else 'never'))
        harness.check_untouched(proc.pid)
        proc.quit()
    finally:
        for p in load:
            p.kill()
            p.wait()


def case_waits(opts):
    if not opts.python:
        raise Skip('--case waits needs --python')
    proc = harness.Process(opts.py.argv + [os.path.join(opts.targets, 'dump_waits.py')])
    proc.expect_ready()
    p = run_dump(opts, ['-p', str(proc.pid), '--json'])
    check(p.returncode == 0, 'dump --json: exit %d' % p.returncode)
    log(p.stdout.rstrip())
    dumped = {t['name']: t for t in json.loads(p.stdout)['threads']}
    for name, (fn, words) in WAITS.items():
        t = dumped.get(name)
        check(t, 'dump: no thread %s in %s' % (name, sorted(dumped)))
        check(fn in [f['function'] for f in t['frames']][:2], 'dump: %s is not in %s: %r'
              % (name, fn, t['frames'][:2]))
        check(t['wait'] is not None and re.fullmatch(words, t['wait']),
              'dump: %s waits on %r, not %r' % (name, t['wait'], words))
    run = harness.record(opts, ['--off-cpu', '--threads', '-p', str(proc.pid), '-d', '1'])
    # every thread waits all along: weighed from the start, with no sample taken
    check(run.rc == 0 and os.path.exists(run.out_path), 'record --off-cpu: exit %s' % run.rc)
    profile = harness.Profile.read(run.out_path)
    for name, (fn, _) in WAITS.items():
        leaves, total = {}, 0
        for frames, c in profile.stacks:
            m = harness.THREAD_FRAME.match(frames[0])
            if not m or m.group('name') != name:
                continue
            total += c
            leaves[frames[-1]] = leaves.get(frames[-1], 0) + c
        want = '[wait: %s]' % dumped[name]['wait']
        log('--off-cpu %s: %s' % (name, leaves))
        check(total and leaves.get(want, 0) >= WAITS_SHARE * total,
              '--off-cpu: %s waits on %s, not %s as dump says' % (name, leaves, want))
    harness.check_untouched(proc.pid)
    proc.quit()


CASES = {'states': case_states, 'errors': case_errors, 'harm': case_harm, 'tree': case_tree,
         'waits': case_waits}


def test(opts):
    CASES[opts.case](opts)


if __name__ == '__main__':
    ap = harness.parser(__doc__)
    ap.add_argument('--case', required=True, choices=sorted(CASES))
    ap.add_argument('--default-mode', action='store_true',
                    help='states: the default mode only (no --nonblocking, --native dumps: '
                         'the variants\' Pythons run those)')
    harness.main(test, ap)

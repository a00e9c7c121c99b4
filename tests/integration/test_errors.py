"""Bad inputs and hard situations, one --case each.

Errors (non-zero exit, not a crash, a line on stderr starting "hwspy: " that says what is wrong,
no profile written, and an attached target left running, neither stopped nor traced):
  no-such-pid, not-python (sleep 100), unsupported (--python py27/py36/py37: "unsupported
  Python X.Y.Z" and "3.8-3.14"), unknown-event (-e cache-mises: suggests cache-misses),
  hardware-event (-e cache-misses on a machine without a PMU: says so and names cpu-clock; the
  command is not run), no-permission (hwspy as nobody against a root python: mentions
  perf_event_paranoid or CAP_PERFMON / CAP_SYS_PTRACE), no-such-command (-- /nonexistent/cmd).
own-stat, own-switches (hwspy as nobody against nobody's own python, perf_event_paranoid 2:
  stat counts user space only and says so; --off-cpu, --wall and -e context-switches say they
  need kernel samples of switches, and what to do; -e context-switches:u counts nothing).
tracepoint (-e sched:sched_switch in a mount namespace without tracefs: as root hwspy mounts
  it, 'hwspy list' says ok and record samples, reading stacks as --nonblocking; as nobody, with
  tracefs unmounted and mounted, list and record give the same reason, never "unknown event").
Still a profile (exit 0):
  target-exits (the target exits 1.5 s into -d 10: hwspy writes what it sampled, promptly),
  ptrace-refused (strace already traces the target: as root the default BPF capture is exact
  regardless; with --ptrace hwspy says it falls back to nonblocking and still writes a profile).
And: profiler-killed (hwspy gets SIGKILL in the middle of an exact-mode run at 999 Hz, BPF
  capture and --ptrace: the target lives on, neither stopped nor traced, and no pending sample
  signal kills it later); idle-profiler (hwspy launches a command that sleeps, -d 2.5 ends it
  with SIGTERM, exit 0, or 1 if it left no sample; with the default
  capture and with --nonblocking: hwspy's own CPU time over 2 s of sampling stays under 0.2 s; a
  SIGCHLD left unread once kept its poll loop spinning a whole CPU); leader-exit (the target's
  main thread called pthread_exit while a thread runs on: record -p and dump -p, with and
  without --nonblocking, read that thread's stack); lost-switches (--off-cpu and --wall lose
  records to a ping-pong pinned to hwspy's CPU: the advice fits the mode, never '-c' under
  --off-cpu); and no thread's time passes the recording's (a wait whose switch-in was lost
  ends where the thread was next seen to run).
"""
import json
import os
import re
import shutil
import subprocess
import time

import harness
import pythons
from harness import Skip, check, log, py_frames

CASES = {}


def case(fn):
    CASES[fn.__name__.replace('_', '-')] = fn
    return fn


def expect_error(run, all_of=(), any_of=()):
    check(run.rc is not None and run.rc > 0,
          'hwspy exited %s, expected a non-zero exit status (and no crash)' % run.rc)
    check(run.rc < 128, 'hwspy exited %d: looks like a crash' % run.rc)
    for bad in ('Traceback', 'AddressSanitizer', 'runtime error:', 'Segmentation', 'Aborted'):
        check(bad not in run.stderr, 'hwspy stderr contains %r' % bad)
    lines = [l for l in run.stderr.splitlines() if l.startswith('hwspy: ')]
    check(lines, 'no line on stderr starts with "hwspy: "')

    def ok(line):
        low = line.lower()
        return (all(w.lower() in low for w in all_of) and
                (not any_of or any(w.lower() in low for w in any_of)))
    good = [l for l in lines if ok(l)]
    want = ' and '.join(repr(w) for w in all_of)
    if any_of:
        want += (' and ' if all_of else '') + 'one of ' + ', '.join(repr(w) for w in any_of)
    check(good, 'no "hwspy: " line on stderr contains %s' % want)
    log('error message: %s' % good[0])
    check(not (os.path.exists(run.out_path) and os.path.getsize(run.out_path) > 0),
          'hwspy failed but wrote a profile %s' % run.out_path)


def spinner(opts, py, seconds=120):
    w = harness.Process(py.argv + [os.path.join(opts.targets, 'spin.py'), str(seconds)])
    w.expect_ready()
    return w


@case
def no_such_pid(opts):
    p = subprocess.Popen(['true'])
    p.wait()
    pid = p.pid
    check(not os.path.exists('/proc/%d' % pid), 'pid %d reused already' % pid)
    run = harness.record(opts, ['-p', str(pid), '-d', '1'], timeout=30)
    expect_error(run, all_of=[str(pid)])


@case
def not_python(opts):
    w = harness.Process(['sleep', '100'])
    time.sleep(0.3)
    run = harness.record(opts, ['-p', str(w.pid), '-d', '2'], timeout=30)
    expect_error(run, all_of=['not a Python process'])
    harness.check_untouched(w.pid, 'sleep')


@case
def unsupported(opts):
    check(opts.python in pythons.UNSUPPORTED, '--python must be one of %s' % pythons.UNSUPPORTED)
    w = spinner(opts, opts.py)
    run = harness.record(opts, ['-p', str(w.pid), '-d', '2'], timeout=30)
    expect_error(run, all_of=['unsupported Python %s' % pythons.full_version(opts.python),
                              '3.8-3.14'])
    harness.check_untouched(w.pid, 'python %s' % opts.python)


def launch_refused(opts, event, **words):
    py = harness.any_python(opts)
    run = harness.record(opts, ['-e', event, '--'] + py.argv +
                         ['-c', 'print("the command ran")'], timeout=30)
    expect_error(run, **words)
    check('the command ran' not in run.stdout,
          'the command ran although no profile could be recorded')


@case
def unknown_event(opts):
    launch_refused(opts, 'cache-mises', all_of=['cache-misses'])


@case
def hardware_event(opts):
    devs = '/sys/bus/event_source/devices'
    pmu = [d for d in ('cpu', 'cpu_core', 'cpu_atom', 'armv8_pmuv3_0')
           if os.path.exists(os.path.join(devs, d))]
    if pmu:
        raise Skip('this machine has a hardware PMU (%s/%s): cache-misses may work here'
                   % (devs, pmu[0]))
    # what to do instead here, in the same line: no software event counts cache misses
    launch_refused(opts, 'cache-misses', all_of=['pmu', 'no software event counts cache',
                                                 "'-e cpu-clock'", "'hwspy stat'"])
    launch_refused(opts, 'cycles', all_of=['pmu', "sample '-e cpu-clock' instead"])


@case
def no_permission(opts):
    if os.geteuid() != 0:
        raise Skip('needs root, to run hwspy as nobody against a root-owned python')
    prefix, exe = harness.as_nobody(opts)
    py = harness.any_python(opts)
    w = spinner(opts, py)
    check(os.stat('/proc/%d' % w.pid).st_uid == 0, 'the target is not owned by root')
    run = harness.record(opts, ['-p', str(w.pid), '-d', '2'], name='nobody/out', timeout=30,
                         prefix=prefix, hwspy=exe)
    expect_error(run, any_of=['perf_event_paranoid', 'CAP_PERFMON', 'CAP_SYS_PTRACE'])
    harness.check_untouched(w.pid)


def own_target(opts):
    """As an unprivileged user against a process of its own, where kernel.perf_event_paranoid is
    2 (user space only): (prefix, hwspy, the target) with the target a spinner started by that
    user; Skip where that cannot be set up."""
    if os.geteuid() != 0:
        raise Skip('needs root, to run hwspy and its target as nobody')
    with open('/proc/sys/kernel/perf_event_paranoid') as f:
        paranoid = int(f.read())
    if paranoid != 2:
        raise Skip('kernel.perf_event_paranoid is %d here: these messages are for 2 (users '
                   'count their own processes in user space only)' % paranoid)
    prefix, exe = harness.as_nobody(opts)
    py = harness.any_python(opts)
    if subprocess.run(prefix + py.argv + ['-c', 'pass'], capture_output=True).returncode:
        raise Skip('nobody cannot run %s' % py.argv[0])
    w = harness.Process(prefix + py.argv + [os.path.join(opts.targets, 'spin.py'), '120'])
    w.expect_ready()
    check(os.stat('/proc/%d' % w.pid).st_uid != 0, 'the target does not run as nobody')
    return prefix, exe, w


@case
def own_stat(opts):
    """stat -p of one's own process with kernel counting refused: counts user space only, as
    record does, says so once and why (it said 'run hwspy as root or as the target's user')."""
    prefix, exe, w = own_target(opts)
    argv = prefix + [exe, 'stat', '--json', '-d', '1', '-p', str(w.pid)]
    log('$ %s' % ' '.join(argv))
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    log('exit %d; stderr:\n%s' % (p.returncode, p.stderr.rstrip()))
    check(p.returncode == 0, 'hwspy stat exited %d, expected 0' % p.returncode)
    said = [l for l in p.stderr.splitlines() if 'user space only' in l]
    check(len(said) == 1, 'not one line says it counts user space only: %s' % said)
    check('perf_event_paranoid=2' in said[0] and 'root' in said[0],
          'the line does not say why (perf_event_paranoid=2) and what to do (root)')
    d = json.loads(p.stdout)
    ev = {e['name']: e for e in d['events']}
    log('user_space_only %s; task-clock %s; context-switches %s' % (
        d.get('user_space_only'), ev['task-clock'].get('value'), ev['context-switches']))
    check(d.get('user_space_only') is True, 'the JSON does not say user_space_only')
    check(ev['task-clock']['counted'] and ev['task-clock']['value'] > 1e7,
          'task-clock did not count the spinning target')
    check(not ev['context-switches']['counted'],
          'context-switches "counted" in user space only, where it counts none')
    harness.check_untouched(w.pid)


@case
def own_switches(opts):
    """Switches sampled from one's own process with kernel mode refused: --off-cpu and --wall
    need kernel samples of the switches, and -e context-switches would count none in user space:
    each says so (they said 'run hwspy as root or as the target's user', to that user, and 'too
    few events'); 'context-switches:u' counts nothing, whoever runs it."""
    prefix, exe, w = own_target(opts)
    for i, args in enumerate((['--off-cpu'], ['--wall'], ['-e', 'context-switches'])):
        run = harness.record(opts, args + ['-p', str(w.pid), '-d', '1'], name='nobody/%d' % i,
                             prefix=prefix, hwspy=exe, timeout=60)
        expect_error(run, all_of=['kernel', 'perf_event_paranoid=2', 'root'])
        check("target's user" not in run.stderr and 'too few' not in run.stderr,
              'a message sends the target\'s own user the wrong way')
        check(run.elapsed < 5, 'hwspy took %.1f s to refuse' % run.elapsed)
    run = harness.record(opts, ['-e', 'context-switches:u', '-p', str(w.pid), '-d', '1'],
                         name='nobody/u', prefix=prefix, hwspy=exe, timeout=60)
    check(run.rc == 2, 'hwspy exited %s, expected 2 (a usage error)' % run.rc)
    expect_error(run, all_of=['counts nothing', 'kernel'])
    harness.check_untouched(w.pid)


@case
def no_such_command(opts):
    run = harness.record(opts, ['--', '/nonexistent/cmd', 'arg'], timeout=30)
    expect_error(run, all_of=['/nonexistent/cmd'])


def spin_weight(opts, profile):
    src = os.path.join(opts.targets, 'spin.py')
    hot = ('spin', src, harness.markers(src)['HOT:spin'])
    w = profile.weight(lambda frames: (py_frames(frames) or [None])[-1] == hot)
    log('spin at its hot line: %.1f%%' % (100.0 * w / profile.total))
    check(w >= 0.5 * profile.total, 'spin() at line %d has only %.1f%% of the weight'
          % (hot[2], 100.0 * w / profile.total))


@case
def target_exits(opts):
    py = harness.any_python(opts)
    w = spinner(opts, py, 1.5)
    run = harness.record(opts, ['-p', str(w.pid), '-e', 'cpu-clock', '-F', '999', '-d', '10'],
                         timeout=60)
    check(w.p.wait(10) == 0, 'the target exited %s, expected 0' % w.p.returncode)
    profile = run.expect_profile()
    check(run.elapsed < 8, 'hwspy took %.1fs: it should end soon after its target (1.5 s)'
          % run.elapsed)
    spin_weight(opts, profile)


@case
def ptrace_refused(opts):
    if not shutil.which('strace'):
        raise Skip('strace is not installed (apt-get install strace)')
    py = harness.any_python(opts)
    w = spinner(opts, py, 60)
    tracer = subprocess.Popen(['strace', '-qq', '-o', '/dev/null', '-p', str(w.pid)],
                              stdin=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 10
        while harness.proc_status(w.pid).get('TracerPid') != str(tracer.pid):
            check(time.monotonic() < end, 'strace did not attach within 10 s')
            time.sleep(0.05)
        log('strace (pid %d) traces the target' % tracer.pid)
        # the BPF capture (default where allowed, as here) needs no ptrace: still exact
        if harness.bpf_capture_allowed():
            run = harness.record(opts, ['-p', str(w.pid), '-e', 'cpu-clock', '-F', '999',
                                        '-d', '1'], timeout=60)
            check('captured at their sample by BPF' in run.stderr,
                  'the default exact mode did not capture with BPF')
            check('nonblocking' not in run.stderr, 'the BPF capture fell back to nonblocking')
            spin_weight(opts, run.expect_profile())
        else:
            log('no BPF capture here (not root): only the ptrace fallback is checked')
        run = harness.record(opts, ['--ptrace', '-p', str(w.pid), '-e', 'cpu-clock', '-F', '999',
                                    '-d', '2'], timeout=60)
        check(harness.proc_status(w.pid).get('TracerPid') == str(tracer.pid),
              'strace no longer traces the target after hwspy ran')
        check(w.alive(), 'the target died')
        profile = run.expect_profile()
        check('nonblocking' in run.stderr, 'hwspy did not say it falls back to nonblocking')
        check('late by' in run.stderr, 'the nonblocking fallback reported no "late by" line')
        spin_weight(opts, profile)
    finally:
        tracer.kill()
        tracer.wait()


@case
def profiler_killed(opts):
    py = harness.any_python(opts)
    # both exact modes: the BPF capture (default where allowed) and ptrace stops
    for extra in ([], ['--ptrace']):
        w = spinner(opts, py, 60)
        p = harness.start_record(opts, extra + ['-p', str(w.pid), '-e', 'cpu-clock', '-F', '999',
                                                '-d', '20'])
        check(harness.wait_attached(p.pid, w.pid), 'hwspy did not attach within 15 s')
        time.sleep(1)
        check(p.poll() is None, 'hwspy ended early (exit %s)' % p.returncode)
        p.kill()
        p.wait()
        log('killed hwspy %s(pid %d) with SIGKILL' % (' '.join(extra) + ' ' if extra else '', p.pid))
        harness.check_untouched(w.pid)
        time.sleep(1)
        check(w.alive(), 'the target died after hwspy was killed (exit %s)' % w.p.returncode)
        harness.check_untouched(w.pid)
        w.kill()


@case
def idle_profiler(opts):
    py = harness.any_python(opts)
    tick = os.sysconf('SC_CLK_TCK')
    for extra in ([], ['--nonblocking']):
        p = harness.start_record(opts, extra + ['-e', 'cpu-clock', '-d', '2.5', '--'] + py.argv +
                                 ['-c', 'import time; time.sleep(4)'])
        time.sleep(2.2)
        try:
            with open('/proc/%d/stat' % p.pid) as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except OSError:
            raise harness.Fail('hwspy %s ended within 2 s (exit %s)' % (extra, p.poll()))
        cpu = (int(fields[11]) + int(fields[12])) / tick     # utime + stime, not the children's
        mode = ' '.join(extra) or '(capture)'
        log('hwspy %s: %.2f s of CPU after 2.2 s' % (mode, cpu))
        run = harness.finish_record(p)
        # -d ends the command (SIGTERM), as asked: 0, or 1 if its start left no sample
        check(run.rc in (0, 1), 'hwspy exited %s, expected 0 (or 1: no sample)' % run.rc)
        check(cpu < 0.2, 'hwspy %s used %.2f s of CPU in 2.2 s against a sleeping command'
              % (mode, cpu))


def in_mount_ns(setup):
    """A prefix that runs a command in a new mount namespace after the shell commands setup."""
    if not shutil.which('unshare'):
        raise Skip('unshare is not installed (util-linux)')
    return ['unshare', '-m', 'sh', '-c', setup + '; exec "$@"', 'sh']


@case
def tracepoint(opts):
    py = harness.any_python(opts)
    unmounted = 'umount /sys/kernel/tracing 2>/dev/null; umount /sys/kernel/debug/tracing 2>/dev/null'
    # as root where no tracefs is mounted: hwspy mounts it, and list and record agree
    ns = in_mount_ns(unmounted)
    lst = subprocess.run(ns + [opts.hwspy, 'list'], capture_output=True, text=True, timeout=60)
    row = [l for l in lst.stdout.splitlines() if l.strip().startswith('subsys:name')]
    log('hwspy list (root, tracefs unmounted): %s' % row)
    check(row and ' ok ' in row[0], 'hwspy list does not say tracepoints work as root')
    run = harness.record(opts, ['-e', 'sched:sched_switch', '-c', '1', '-d', '3', '--'] + py.argv +
                         ['-c', 'import time\nfor i in range(500): time.sleep(0.001)'],
                         prefix=ns, timeout=60)
    profile = run.expect_profile()
    check(any(n == '<module>' for f, _ in profile.stacks for n, _, _ in py_frames(f)),
          'no sched_switch sample in <module>')
    check('nonblocking: reads were late' in run.stderr and 'BPF capture' not in run.stderr
          .replace('no BPF capture attaches', ''),
          'a tracepoint run does not say its stacks were read as --nonblocking')
    # as nobody: the reason, the same in list and record, never "unknown event"
    for setup, words in ((unmounted, 'no tracefs'), ('mount -t tracefs nodev /sys/kernel/tracing',
                                                     'not readable')):
        prefix, exe = harness.as_nobody(opts) if not hasattr(opts, 'nobody') else opts.nobody
        opts.nobody = prefix, exe
        ns = in_mount_ns(setup) + prefix
        lst = subprocess.run(ns + [exe, 'list'], capture_output=True, text=True, timeout=60)
        row = [l for l in lst.stdout.splitlines() if l.strip().startswith('subsys:name')]
        log('hwspy list (nobody, %s): %s' % (setup, row))
        run = harness.record(opts, ['-e', 'sched:sched_switch', '-d', '1', '--', 'true'],
                             name='nobody/tp', prefix=ns, hwspy=exe, timeout=60)
        check(run.rc == 2, 'hwspy exited %s, expected 2 (an event it cannot use)' % run.rc)
        check('unknown event' not in run.stderr, 'a tracepoint said to be an unknown event')
        expect_error(run, ['tracefs', 'root'])
        short = 'unreadable' if words == 'not readable' else words
        check(row and short in row[0] and words in run.stderr,
              'hwspy list and record do not both say %r' % words)


def leader_zombie(pid):
    try:
        return harness.proc_status(pid).get('State', '').startswith('Z')
    except OSError:
        return False


@case
def leader_exit(opts):
    """A process whose main thread called pthread_exit while another runs on: its leader is a
    zombie (no maps, no memory of its own), the process alive. record -p and dump -p profile
    its live thread (they said "no process with pid N")."""
    py = harness.any_python(opts)
    src = os.path.join(opts.targets, 'leader_exit.py')
    hot = ('work', src, harness.markers(src)['HOT:work'])
    w = harness.Process(py.argv + [src, '60'])
    w.expect_ready()
    end = time.monotonic() + 10
    while not leader_zombie(w.pid):
        check(time.monotonic() < end, 'the main thread of pid %d did not exit within 10 s' % w.pid)
        time.sleep(0.05)
    log('pid %d: main thread a zombie, threads %s' % (w.pid, sorted(os.listdir('/proc/%d/task'
                                                                               % w.pid))))
    run = harness.record(opts, ['-p', str(w.pid), '-e', 'cpu-clock', '-F', '199', '-d', '1.5'],
                         timeout=60)
    profile = run.expect_profile()
    share = profile.weight(lambda frames: (py_frames(frames) or [None])[-1] == hot) / profile.total
    log('work() at its hot line: %.0f%%' % (100 * share))
    check(share >= 0.5, 'work() at line %d has only %.0f%% of the weight' % (hot[2], 100 * share))
    # dump reads the same way, its threads stopped or not
    for extra in ([], ['--nonblocking']):
        p = subprocess.run([opts.hwspy, 'dump'] + extra + ['-p', str(w.pid)],
                           capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        log('$ hwspy dump %s-p %d: exit %d\n%s%s' % (''.join(e + ' ' for e in extra), w.pid,
                                                   p.returncode, p.stdout, p.stderr))
        check(p.returncode == 0, 'hwspy dump exited %d, expected 0' % p.returncode)
        # dump's text names the file by its path below the scripts' directory
        check(any(l.strip().startswith('work (%s:' % os.path.basename(src))
                  for l in p.stdout.splitlines()), 'the dump shows no frame of work()')
    check(w.alive(), 'the target died')
    harness.check_untouched(w.pid)


LOST = re.compile(r'^hwspy: (\d+) (?:samples|records) were lost by the kernel', re.M)


@case
def lost_switches(opts):
    """Records lost under --off-cpu and --wall (two threads ping-ponging through pipes, pinned
    with hwspy to one CPU, switch faster than hwspy reads): the advice names what thins the
    switches, never '-c' (which --off-cpu refuses) nor, when the switches were lost, '-F'."""
    if not shutil.which('taskset'):
        raise Skip('taskset is not installed (util-linux)')
    py = harness.any_python(opts)
    cmd = py.argv + [os.path.join(opts.targets, 'pingpong.py'), '10']
    for mode in ('--off-cpu', '--wall'):
        run = harness.record(opts, [mode, '--threads', '-d', '1.5', '--'] + cmd,
                             name=mode[2:], prefix=['taskset', '-c', '0'], timeout=60)
        check(run.rc == 0, 'hwspy exited %s, expected 0 (its -d ends the command, as asked)'
              % run.rc)
        # a wait whose switch-in was lost ends where its thread was next seen to run: no
        # thread's waits pass the recording's time (--wall's samples on the CPU are not held
        # to it: a wait whose true switch-in and the next switch-out were both lost runs on
        # to a later switch-in, over the run between, whose CPU time its samples weigh too:
        # measured 2-3% over in 1 run in ~20 on a busy machine, with 60-90k records lost)
        length = float(re.search(r' for (\d+\.\d+) s: ', run.stderr).group(1)) * 1e9
        per, waits = {}, {}
        for frames, c in harness.Profile.read(run.out_path).stacks:
            per[frames[0]] = per.get(frames[0], 0) + c
            if frames[-1].startswith(('[wait', '[preempted]')):
                waits[frames[0]] = waits.get(frames[0], 0) + c
        log('%s: %s of %.0f ms, waits %s' % (mode, {k: round(v / 1e6) for k, v in per.items()},
                                             length / 1e6,
                                             {k: round(v / 1e6) for k, v in waits.items()}))
        check(all(v <= 1.02 * length for v in waits.values()), '%s: a thread waits longer '
              'than the recording\'s %.0f ms: %s' % (mode, length / 1e6, waits))
        m = LOST.search(run.stderr)
        if not m:
            raise Skip('%s lost nothing here: no advice to check' % mode)
        line = run.stderr[m.start():].splitlines()[0]
        log('%s: %s' % (mode, line))
        check('every switch' in line and "'-e context-switches -c N'" in line,
              'the advice does not say that every switch is taken, and what thins them')
        if mode == '--off-cpu':
            check('a larger -c' not in line and 'lower the rate' not in line,
                  'the advice under --off-cpu names -c or -F, which it refuses')
        else:
            split = re.search(r': (\d+) of the switches off the CPU .*, (\d+) others', line)
            if split:
                sw, other = int(split.group(1)), int(split.group(2))
                check(sw + other == int(m.group(1)), 'the split does not add up')
                check(sw > 0, 'no loss put on the switches, which are most of the records')
                check((sw >= other) == ('lower the rate' not in line),
                      'the advice does not follow the larger part of the loss')
            else:
                check('does not tell which' in line, 'the loss is neither split nor said '
                      'to be unsplit')


def test(opts):
    CASES[opts.case](opts)


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--case', choices=sorted(CASES), required=True)
    harness.main(test, p)

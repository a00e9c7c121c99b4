"""Threads: tests/targets/threads.py runs main_work on the main thread, alpha_work on thread
"alpha", and late_work on thread "late", which starts only after hwspy has attached.

Run 1: hwspy record -p PID --threads -e cpu-clock -F 999 -d 3, "late" started once hwspy holds
its perf events: every thread's function appears, each stack has a root [thread TID NAME] with
exactly the workload's three native thread ids, NAME is the thread's name in Python's threading
module (MainThread, alpha, late), and each thread's stacks hold its own function (at the hot
line).
Run 2: the same without --threads, with --function, all threads running: all three functions
appear, no thread roots, and each function's line is its `def` line (co_firstlineno).
"""
import json
import os

import harness
from harness import THREAD_FRAME, check, log, py_frames

WORK = {'main': 'main_work', 'alpha': 'alpha_work', 'late': 'late_work'}


def comm(pid, tid):
    try:
        with open('/proc/%d/task/%d/comm' % (pid, tid)) as f:
            return f.read().rstrip('\n')
    except OSError:
        return None


def test(opts):
    src = os.path.join(opts.targets, 'threads.py')
    mk = harness.markers(src)
    w = harness.Process(opts.py.argv + [src])
    tids = json.loads(w.readline())
    log('workload threads: %s' % tids)

    p = harness.start_record(opts, ['-p', str(w.pid), '--threads', '-e', 'cpu-clock', '-F', '999',
                                    '-d', '3'], name='threads')
    if harness.wait_attached(p.pid, w.pid):
        log('hwspy holds its perf events; starting the late thread')
    else:
        log('hwspy holds no perf event per thread after 15 s; starting the late thread anyway')
    tids['late'] = w.ask('late')['late']
    names = {'main': 'MainThread', 'alpha': 'alpha', 'late': 'late'}
    log('threads %s, comm %s' % (tids, {k: comm(w.pid, t) for k, t in tids.items()}))
    run = harness.finish_record(p)
    harness.check_untouched(w.pid)
    profile = run.expect_profile()

    by_tid = {}
    for frames, c in profile.stacks:
        m = THREAD_FRAME.match(frames[0])
        check(m, 'with --threads, a stack without a [thread TID NAME] root: %s' % ';'.join(frames))
        tid, name = int(m.group('tid')), m.group('name')
        entry = by_tid.setdefault(tid, {'names': set(), 'weight': 0, 'funcs': {}})
        entry['names'].add(name)
        entry['weight'] += c
        pf = py_frames(frames)
        if pf:
            leaf = pf[-1]
            entry['funcs'][leaf] = entry['funcs'].get(leaf, 0) + c
    log('thread roots: %s' % {t: (sorted(e['names']), e['weight']) for t, e in by_tid.items()})
    check(set(by_tid) == set(tids.values()),
          'thread roots %s, expected the workload\'s threads %s'
          % (sorted(by_tid), sorted(tids.values())))
    for key, tid in tids.items():
        e = by_tid[tid]
        check(e['names'] == {names[key]}, 'thread %d (%s): root names %s, its Python name is %r'
              % (tid, key, sorted(e['names']), names[key]))
        func = WORK[key]
        hot = (func, src, mk['HOT:' + func])
        mine = e['funcs'].get(hot, 0)
        log('thread %s (%d): %s at its hot line has %.1f%% of the thread\'s weight, %.1f%% of '
            'all' % (key, tid, func, 100.0 * mine / e['weight'], 100.0 * mine / profile.total))
        check(mine >= 0.5 * e['weight'],
              'thread %s (%d): %s at line %d has only %.1f%% of the thread\'s weight; its '
              'leaves: %s' % (key, tid, func, hot[2], 100.0 * mine / e['weight'], e['funcs']))
        check(mine >= 0.1 * profile.total,
              '%s has only %.1f%% of all weight' % (func, 100.0 * mine / profile.total))
        for other_key, other in WORK.items():
            if other_key != key:
                check(not any(f[0] == other for f in e['funcs']),
                      'thread %s (%d) shows %s, which runs on thread %s'
                      % (key, tid, other, other_key))

    run = harness.record(opts, ['-p', str(w.pid), '--function', '-e', 'cpu-clock', '-F', '999',
                                '-d', '2'], name='function')
    harness.check_untouched(w.pid)
    w.quit()
    profile = run.expect_profile()
    for key, func in WORK.items():
        want = (func, src, mk['def:' + func])
        weight = profile.weight(lambda frames: want in py_frames(frames))
        check(weight > 0, 'with --function, no frame %s (%s:%d) (the def line)' % want)
        lines = {f[2] for frames, _ in profile.stacks for f in py_frames(frames) if f[0] == func}
        check(lines == {want[2]}, 'with --function, %s shows lines %s, expected only its def '
              'line %d' % (func, sorted(lines), want[2]))
        log('%s: %.1f%% with --function' % (func, 100.0 * weight / profile.total))
    roots = [frames[0] for frames, _ in profile.stacks if THREAD_FRAME.match(frames[0])]
    check(not roots, 'without --threads, thread root frames appear: %s' % roots[:3])


if __name__ == '__main__':
    harness.main(test, harness.parser(__doc__))

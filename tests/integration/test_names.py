"""Names of frames and threads.

shim: tests/targets/names_shim.py calls work() from A.__init__, reached through `A()`. 3.13+
runs that __init__ behind CPython's _Py_InitCleanup shim frame (a code object named __init__ in
file __init__) that CPython's tracebacks leave out, as an incomplete frame: every stack with
work has the chain <module>/main -> A.__init__ -> work, no frame in between, and no frame of
file __init__ anywhere.
firstline: tests/targets/names_firstline.py burns CPU in a profile function on the 'call' event
of a module, whose frame is then at its first instruction: that frame carries its first line
(names_firstline_mod.py:1), as every Python frame carries a line.
order: tests/targets/names_phases.py runs phase_a, phase_b, phase_a on its main thread; the
speedscope file's profile of that thread holds one sample per sample recorded, in time order:
phase_a's, then phase_b's, then phase_a's again; the profiles are named by the threads'
Python names: MainThread, and CustomThreadNameLong (in full) for a thread that exited.
threads: the same workload with --threads: roots [thread TID MainThread] and
[thread TID CustomThreadNameLong], Python's names, not the OS's.
"""
import json
import os

import harness
from harness import PY_FRAME, THREAD_FRAME, check, log, py_frames


def test_shim(opts):
    src = os.path.join(opts.targets, 'names_shim.py')
    mk = harness.markers(src)
    init = 'A.__init__' if opts.py.has_qualname_frames else '__init__'
    run = harness.record(opts, ['-e', 'cpu-clock', '-F', '499', '--', *opts.py.argv, src, '2'])
    profile = run.expect_profile()
    shims = [f for frames, _ in profile.stacks for f in frames if f.endswith(' (__init__)')
             or (PY_FRAME.match(f) and PY_FRAME.match(f).group('file') == '__init__')]
    check(not shims, 'CPython\'s shim frames show: %s' % sorted(set(shims))[:3])
    with_work = 0
    for frames, c in profile.stacks:
        pf = py_frames(frames)
        names = [f[0] for f in pf]
        if 'work' not in names:
            continue
        with_work += c
        i = names.index('work')
        check(i >= 2 and pf[i - 1] == (init, src, mk['CALL:work']) and
              pf[i - 2] == ('main', src, mk['CALL:A']),
              'work not called by %s (line %d) called by main (line %d): %s'
              % (init, mk['CALL:work'], mk['CALL:A'], ';'.join(frames)))
    log('stacks with work: %.1f%% of the weight' % (100.0 * with_work / profile.total))
    check(with_work >= 0.5 * profile.total, 'work has only %.1f%% of the weight'
          % (100.0 * with_work / profile.total))


def test_firstline(opts):
    src = os.path.join(opts.targets, 'names_firstline.py')
    mod = os.path.join(opts.targets, 'names_firstline_mod.py')
    run = harness.record(opts, ['-e', 'cpu-clock', '-F', '499', '--', *opts.py.argv, src, '1'])
    profile = run.expect_profile()
    hot = 'prof (%s:%d)' % (src, harness.markers(src)['HOT:prof'])
    in_prof = 0
    for frames, c in profile.stacks:
        # prof runs for every call; it burns (its hot line) only under the module's frame
        if hot not in frames:
            continue
        in_prof += c
        mods = [f for f in frames if f.startswith('<module> (' + mod)]
        check(mods == ['<module> (%s:1)' % mod],
              'under prof, the module frame is %s, expected <module> (%s:1): %s'
              % (mods, mod, ';'.join(frames)))
    log('stacks at %s: %.1f%% of the weight' % (hot, 100.0 * in_prof / profile.total))
    check(in_prof >= 0.5 * profile.total, 'prof\'s hot line has only %.1f%% of the weight'
          % (100.0 * in_prof / profile.total))


def phases(seq, least=3):
    """The phases of a sequence, each run of one letter once, runs shorter than least left out
    (a stray sample, such as a thread's first read late): 'AAAABAAABBBBAAA' -> 'ABA'."""
    out, i = '', 0
    while i < len(seq):
        j = i
        while j < len(seq) and seq[j] == seq[i]:
            j += 1
        if j - i >= least and (not out or out[-1] != seq[i]):
            out += seq[i]
        i = j
    return out


def test_order(opts):
    src = os.path.join(opts.targets, 'names_phases.py')
    out = os.path.join(opts.tmp, 'order.speedscope.json')
    run = harness.record(opts, ['-e', 'cpu-clock', '-F', '199', '-o', out, '--',
                                *opts.py.argv, src, '0.6'], name='order-unused')
    check(run.rc == 0, 'hwspy exited %s' % run.rc)
    n = run.samples()
    with open(out, encoding='utf-8') as f:
        doc = json.load(f)
    frames = doc['shared']['frames']
    profiles = [p for p in doc['profiles'] if p['name'].startswith('cpu-clock, thread ')]
    log('profiles: %s' % [(p['name'], len(p['samples'])) for p in doc['profiles']])
    total = sum(len(p['samples']) for p in profiles)
    check(n and total >= 0.95 * n, '%d samples in the threads\' profiles, %s recorded: samples '
          'are merged by stack' % (total, n))
    main = None
    for p in profiles:
        names = [frames[s[-1]]['name'] for s in p['samples'] if s]
        seq = ''.join({'phase_a': 'A', 'phase_b': 'B'}.get(x, '') for x in names)
        log('%s: %d samples, phases in order %s' % (p['name'], len(p['samples']), phases(seq)))
        if 'A' in seq:
            main = (p, seq)
    check(main, 'no thread profile has phase_a')
    names = [p['name'] for p in profiles]
    check(main[0]['name'].endswith(' MainThread'), 'the main thread\'s profile is named %r, '
          'expected "cpu-clock, thread TID MainThread"' % main[0]['name'])
    check(any(n.endswith(' CustomThreadNameLong') for n in names),
          'no profile named after the thread CustomThreadNameLong (it exits before the end): %s'
          % names)
    blocks = phases(main[1])
    check(blocks == 'ABA', '%s: phases %s in its samples, expected A then B then A (time order)'
          % (main[0]['name'], blocks))


def test_threads(opts):
    src = os.path.join(opts.targets, 'names_phases.py')
    run = harness.record(opts, ['--threads', '-e', 'cpu-clock', '-F', '199', '--',
                                *opts.py.argv, src, '0.5'])
    profile = run.expect_profile()
    roots = {}
    for frames, c in profile.stacks:
        m = THREAD_FRAME.match(frames[0])
        check(m, 'with --threads, a stack without a [thread TID NAME] root: %s' % ';'.join(frames))
        funcs = {f[0] for f in py_frames(frames)}
        e = roots.setdefault(m.group('name'), {'weight': 0, 'funcs': set()})
        e['weight'] += c
        e['funcs'] |= funcs
    log('thread roots: %s' % {k: (v['weight'], sorted(v['funcs'])) for k, v in roots.items()})
    for name, func in (('MainThread', 'phase_b'), ('CustomThreadNameLong', 'phase_c')):
        check(name in roots and func in roots[name]['funcs'],
              'no thread root named %s holding %s (roots: %s); the second thread exits before '
              'the end' % (name, func, sorted(roots)))


CASES = {'shim': test_shim, 'firstline': test_firstline, 'order': test_order,
         'threads': test_threads}


def test(opts):
    CASES[opts.case](opts)


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--case', required=True, choices=sorted(CASES))
    harness.main(test, p)

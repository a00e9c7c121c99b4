"""hwspy record --subprocesses: the processes a target starts, each under its own root.

--case pool   tests/targets/subprocs.py pool (launched, -e cpu-clock): four Pool workers run
              work_a..work_d, one each; each function's weight is under one [process PID
              COMMAND] root, each in a process of its own, none under the target's, and every
              stack has a process root (the target's pid among them).
--case many   tests/targets/subprocs.py many 12 (launched, -e cpu-clock): twelve Pool workers
              live at once, a Manager, the target and eight sleeping children, more processes
              than hwspy first made room for (it kept each one's memory reader in an array it
              moved as it grew: a crash); every worker that printed its pid has a process root
              with samples, and the summary's count of processes with samples is that of the
              process roots in the profile (it counted every process looked up, the sleepers
              among them)
--case exec   tests/targets/subprocs.py exec OTHER (launched with this Python): a child process
              runs another interpreter (pyenv's 3.8 under 3.12, or the other way round) on the
              same file; child_spin is under the child's [process PID COMMAND] root, named
              with its file and the line of its hot loop (read with the child's own layout).
--case pipe   tests/targets/subprocs.py pipe with --off-cpu: a forked child blocks on a pipe of
              its own, an fd the target does not have; under child_read, in the child's process
              root, the reason is a read of that fd, a pipe (the child's fd table, not the
              target's), 5 x 50 ms within 20%.
"""
import os
import re

import harness
import pythons
from harness import check, log, py_frames

# a process gone before hwspy read its command has none
PROCESS = re.compile(r'^\[process (?P<pid>\d+)(?: (?P<command>.*))?\]$')


def by_process(profile):
    """{pid: {function: weight}} for the process roots of every stack."""
    procs = {}
    for frames, c in profile.stacks:
        m = PROCESS.match(frames[0])
        check(m, 'with --subprocesses, a stack without a [process PID COMMAND] root: %s'
              % ';'.join(frames[:3]))
        funcs = procs.setdefault(int(m.group('pid')), {})
        for name in {f[0] for f in py_frames(frames)}:
            funcs[name] = funcs.get(name, 0) + c
    return procs


def case_pool(opts):
    target = os.path.join(opts.targets, 'subprocs.py')
    run = harness.record(opts, ['--subprocesses', '-e', 'cpu-clock', '-F', '199', '--',
                                *opts.py.argv, target, 'pool'], timeout=120)
    profile = run.expect_profile()
    check(re.search(r'subprocesses: \d+ processes had samples', run.stderr),
          'the summary does not count the processes')
    procs = by_process(profile)
    pid = int(re.search(r"\(pid (\d+)\)", run.stderr).group(1))
    check(pid in procs, 'the target (pid %d) has no process root' % pid)
    where = {}
    for p, funcs in procs.items():
        for f in ('work_a', 'work_b', 'work_c', 'work_d'):
            if funcs.get(f):
                where.setdefault(f, []).append((p, funcs[f]))
    log('functions by process: %s' % where)
    for f in ('work_a', 'work_b', 'work_c', 'work_d'):
        check(f in where, '%s is in no process' % f)
        heaviest = max(where[f], key=lambda x: x[1])[0]
        check(heaviest != pid, '%s runs under the target\'s root, not a worker\'s' % f)
    owners = {max(where[f], key=lambda x: x[1])[0] for f in where}
    check(len(owners) == 4, 'the four functions are under %d processes, expected 4: %s'
          % (len(owners), where))


def case_many(opts):
    target = os.path.join(opts.targets, 'subprocs.py')
    run = harness.record(opts, ['--subprocesses', '-e', 'cpu-clock', '-F', '199', '--',
                                *opts.py.argv, target, 'many', '12'], timeout=120)
    profile = run.expect_profile()
    procs = by_process(profile)
    workers = {int(w) for w in re.findall(r'^worker (\d+)$', run.stderr, re.M)}
    m = re.search(r'subprocesses: (\d+) processes had samples', run.stderr)
    log('workers %s; process roots %s; the summary says %s'
        % (sorted(workers), sorted(procs), m and m.group(1)))
    check(len(workers) == 12, '%d workers printed their pid, expected 12; hwspy\'s stderr:\n%s'
          % (len(workers), run.stderr))
    check(workers <= set(procs), 'workers without a process root: %s'
          % sorted(workers - set(procs)))
    check(m, 'the summary does not count the processes')
    check(int(m.group(1)) == len(procs), 'the summary counts %s processes with samples, the '
          'profile has %d process roots' % (m.group(1), len(procs)))


def case_exec(opts):
    other = 'py38' if opts.py.id != 'py38' else 'py312'
    try:
        child = pythons.get(other, opts.source_root)
    except pythons.Missing as e:
        raise harness.Skip(str(e))
    target = os.path.join(opts.targets, 'subprocs.py')
    mk = harness.markers(target)
    run = harness.record(opts, ['--subprocesses', '-e', 'cpu-clock', '-F', '199', '--',
                                *opts.py.argv, target, 'exec', child.argv[-1]], timeout=120)
    profile = run.expect_profile()
    found = {}
    for frames, c in profile.stacks:
        m = PROCESS.match(frames[0])
        check(m, 'a stack without a [process PID COMMAND] root: %s' % ';'.join(frames[:3]))
        pf = py_frames(frames)
        if any(f[0] == 'child_spin' for f in pf):
            found.setdefault(m.group('command') or '', 0)
            found[m.group('command') or ''] += c
            leaf = pf[-1]
            check(leaf[0] in ('spin', 'child_spin') and leaf[1] == target,
                  'under child_spin, the leaf %s is not in %s' % (leaf, target))
    log('child_spin by process: %s' % found)
    check(found, 'child_spin is in no process')
    check(all(os.path.basename(child.argv[-1]) in cmd for cmd in found),
          'child_spin is under a process that is not %s: %s' % (child.argv[-1], found))


def case_pipe(opts):
    target = os.path.join(opts.targets, 'subprocs.py')
    run = harness.record(opts, ['--subprocesses', '--off-cpu', '--', *opts.py.argv, target,
                                'pipe'], timeout=120)
    profile = run.expect_profile()
    pid = int(re.search(r"\(pid (\d+)\)", run.stderr).group(1))
    leaves = {}
    for frames, c in profile.stacks:
        if any(f[0] == 'child_read' for f in py_frames(frames)):
            m = PROCESS.match(frames[0])
            check(m and int(m.group('pid')) != pid, 'child_read under %s, not a child\'s '
                  'root' % frames[0])
            leaves[frames[-1]] = leaves.get(frames[-1], 0) + c
    log('under child_read: %s' % {k: round(v / 1e6, 1) for k, v in leaves.items()})
    m = re.search(r'^child pipe fd (\d+)$', run.stderr, re.M)
    check(m, 'the child did not print its pipe\'s fd')
    pipe = leaves.get('[wait: read fd %s (pipe)]' % m.group(1), 0)
    check(pipe >= 0.9 * sum(leaves.values()) > 0, 'under child_read, the wait is not a read '
          'of a pipe: %s' % leaves)
    check(abs(pipe - 5 * 50e6) <= 0.2 * 5 * 50e6, 'child_read waited %.1f ms, expected 5 x '
          '50 ms' % (pipe / 1e6))


def test(opts):
    {'pool': case_pool, 'many': case_many, 'exec': case_exec,
     'pipe': case_pipe}[opts.case](opts)


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--case', choices=['pool', 'many', 'exec', 'pipe'], required=True)
    harness.main(test, p)

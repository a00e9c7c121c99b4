"""Short-lived threads: tests/targets/short_threads.py starts 60 threads, 3 at a time, each
burning 30 ms of its own CPU (time.thread_time()) in short_worker and exiting. The cpu-clock
weight of the stacks that hold short_worker must be at least 90% of the CPU the workers
measured themselves: a thread hwspy learns of late, or whose Python stack it cannot name once
it has exited, loses its samples.

  --mode launch: hwspy record -e cpu-clock -F 999 -- PYTHON short_threads.py run
  --mode attach: short_threads.py serve; hwspy record -p PID -e cpu-clock -F 999; the
                 threads start once hwspy holds its events
  --nonblocking, --ptrace: the same in those modes (default: the BPF capture, where allowed)

With --nonblocking a sample read after its thread exited cannot be named: the summary counts
it, and it counts as accounted for. The default mode also checks that the workers' stacks were captured at their samples by BPF
(at most 5% of the Python stacks read after it, those of a launch before the capture started
excepted): a new thread's state is found at its first sample, not when hwspy gets round to it.
"""
import json
import os
import re

import harness
from harness import check, log, py_frames

MIN_SHARE = 0.90
MAX_SHARE = 1.5     # cpu-clock counts the host's steal, thread_time does not
RATE = '999'        # ~1800 samples: sampling noise ~2.5%


def worker_weight(profile, src):
    return profile.weight(lambda frames: any(f[0] == 'short_worker' and f[1] == src
                                             for f in py_frames(frames)))


def test(opts):
    src = os.path.join(opts.targets, 'short_threads.py')
    mode = []
    if opts.nonblocking:
        mode = ['--nonblocking']
    elif opts.ptrace:
        mode = ['--ptrace']
    args = ['-e', 'cpu-clock', '-F', RATE] + mode
    if opts.mode == 'launch':
        run = harness.record(opts, args + ['--'] + opts.py.argv + [src, 'run'], name='launch')
        result = json.loads(run.stdout.strip().splitlines()[-1])
    else:
        w = harness.Process(opts.py.argv + [src, 'serve'])
        w.expect_ready()
        p = harness.start_record(opts, ['-p', str(w.pid), '-d', '120'] + args, name='attach')
        check(harness.wait_attached(p.pid, w.pid), 'hwspy holds no perf event after 15 s')
        result = w.ask('go', timeout=120)
        w.quit()
        run = harness.finish_record(p, timeout=150)
    check(run.rc == 0, 'hwspy exited %s' % run.rc)
    profile = run.expect_profile()
    check(result['threads'] == 60, 'the workload ran %d threads, not 60' % result['threads'])
    measured = result['cpu_ns']
    got = worker_weight(profile, src)
    share = got / measured
    log('short_worker: the workers measured %.0f ms of CPU, the profile has %.0f ms: %.1f%%'
        % (measured / 1e6, got / 1e6, 100 * share))
    m = re.search(r'(\d+) samples read after their thread had exited', run.stderr)
    exited = int(m.group(1)) if m else 0
    if exited:
        log('%d samples were read after their thread had exited (counted, not named)' % exited)
    if opts.nonblocking and exited:
        # a read late enough to find the thread gone cannot name it (the host's steal time
        # makes some reads 100+ ms late here): counted in the summary, it is not lost
        per_sample = profile.total / run.samples()
        share = (got + exited * per_sample) / measured
        log('named and counted: %.1f%%' % (100 * share))
    check(share >= MIN_SHARE, 'the profile accounts for only %.1f%% of the short threads\' CPU '
          '(at least %.0f%% expected)' % (100 * share, 100 * MIN_SHARE))
    check(share <= MAX_SHARE, 'the profile accounts for %.1f%% of the short threads\' CPU'
          % (100 * share))
    if not opts.nonblocking and not opts.ptrace and harness.bpf_capture_allowed():
        m = re.search(r'exact: (\d+) Python stacks captured at their sample by BPF, (\d+) read '
                      r'after it', run.stderr)
        check(m, 'the summary does not say the stacks were captured by BPF')
        got_c, late = int(m.group(1)), int(m.group(2))
        # a launch: the samples before the interpreter was found come uncaptured (the
        # workload sleeps 0.3 s first): up to 0.2 s of samples
        allowed = 0.05 * (got_c + late) + (0.2 * int(RATE) if opts.mode == 'launch' else 0)
        log('captured by BPF: %d stacks, %d read after their sample (at most %d allowed)'
            % (got_c, late, allowed))
        check(late <= allowed, '%d of %d Python stacks were read after their sample, not '
              'captured' % (late, got_c + late))
    elif not opts.nonblocking:
        harness.check_exact(run, 'ptrace')


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--mode', choices=['launch', 'attach'], required=True)
    g = p.add_mutually_exclusive_group()
    g.add_argument('--nonblocking', action='store_true')
    g.add_argument('--ptrace', action='store_true')
    harness.main(test, p)

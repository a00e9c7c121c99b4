"""A hostile 3.13+ target that rewrites its own _Py_DebugOffsets (tests/targets/hostile_offsets.py
--field F): offsets still inside the struct sizes it declares, far past the bytes hwspy copies of
that object. hwspy record -p must refuse it, not crash: a non-zero exit that is no signal death
(nor a sanitizer report, when this runs with the ASan build's hwspy: suite 'hostile'), one
"hwspy: " line naming the field and saying the target's _Py_DebugOffsets is corrupt, no profile,
and the target left running (neither stopped nor traced) to its normal end.
"""
import os

import harness
from harness import Skip, check, log


def test(opts):
    if opts.py.version < (3, 13):
        raise Skip('%s has no _Py_DebugOffsets (3.13+)' % opts.py.id)
    target = os.path.join(opts.targets, 'hostile_offsets.py')
    w = harness.Process(opts.py.argv + [target, opts.field, '5'])
    line = w.readline(30)
    check(line.startswith('ready %s ' % opts.field), 'target printed %r, not "ready"' % line)
    log('target %d: %s' % (w.pid, line))
    run = harness.record(opts, ['-p', str(w.pid), '-d', '2'], timeout=60)
    check(run.rc is not None and run.rc >= 0,
          'hwspy died of signal %s (exit %s): it crashed on the hostile layout'
          % (-run.rc if run.rc is not None else '?', run.rc))
    check(run.rc != 0, 'hwspy exited 0: it accepted the hostile layout')
    check(run.rc < 128, 'hwspy exited %d: looks like a crash' % run.rc)
    for bad in ('AddressSanitizer', 'runtime error:', 'LeakSanitizer', 'Segmentation'):
        check(bad not in run.stderr, 'hwspy stderr contains %r' % bad)
    lines = [l for l in run.stderr.splitlines() if l.startswith('hwspy: ')]
    refused = [l for l in lines if "'%s'" % opts.field in l and
               "_Py_DebugOffsets is corrupt" in l]
    check(len(refused) == 1, 'no single "hwspy: " line names %r and says the target\'s '
          '_Py_DebugOffsets is corrupt' % opts.field)
    check(not (os.path.exists(run.out_path) and os.path.getsize(run.out_path) > 0),
          'hwspy refused the target but wrote a profile %s' % run.out_path)
    harness.check_untouched(w.pid, 'the hostile target')
    line = w.readline(30)
    check(line.startswith('done '), 'target printed %r, not "done N"' % line)
    rc = w.p.wait(30)
    check(rc == 0, 'the target exited %s after hwspy ran' % rc)
    log('refused: %s; the target ran on to its end (%s, exit 0)' % (refused[0], line))


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--field', required=True,
                   help='the _Py_DebugOffsets field the target rewrites (hostile_offsets.py)')
    harness.main(test, p)

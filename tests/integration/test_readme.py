"""The README's commands run as written, read out of README.md.

The build-and-run line's `./build/cli/hwspy record ...` (after the build steps) runs with this
build's hwspy in an empty directory: exit 0, the profile written, and the command ended by
itself inside its -d (hwspy did not have to end it). Then the usage lines that need no running
process, no script and no hardware PMU (`hwspy list`, `hwspy convert ...`, `hwspy diff ...`) run
as written on files made from that profile: each exits 0 and writes what it names.
"""
import os
import re
import shlex
import shutil
import subprocess
import time

import harness
from harness import Fail, check, log

BUILT = './build/cli/hwspy'


def readme(opts):
    with open(os.path.join(opts.source_root, 'README.md'), encoding='utf-8') as f:
        return f.read()


def code_block(text, heading):
    """The first ``` block after the line `heading`: its lines."""
    at = text.find('\n' + heading + '\n')
    check(at >= 0, 'README.md has no %r section' % heading)
    m = re.search(r'```\n(.*?)```', text[at:], re.S)
    check(m, 'no code block under %r' % heading)
    return m.group(1).splitlines()


def run(opts, argv, cwd, timeout=30):
    log('$ %s' % ' '.join(shlex.quote(a) for a in argv))
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise Fail('%s did not finish within %d s' % (' '.join(argv[:3]), timeout))
    took = time.monotonic() - t0
    log('exit %d after %.1f s; stderr:\n%s' % (p.returncode, took, p.stderr.rstrip()))
    return p, took


def first_command(opts, cwd):
    lines = code_block(readme(opts), '## Build and run')
    steps = [s.strip() for line in lines for s in line.split(' && ')]
    ours = [s for s in steps if s.startswith(BUILT + ' ')]
    check(len(ours) == 1, 'the build-and-run line runs no one %s: %s' % (BUILT, steps))
    argv = shlex.split(ours[0])
    argv[0] = opts.hwspy
    d = argv[argv.index('-d') + 1]
    out = argv[argv.index('-o') + 1]
    p, took = run(opts, argv, cwd, timeout=float(d) + 20)
    check(p.returncode == 0, 'the README\'s first command exited %d' % p.returncode)
    check(os.path.getsize(os.path.join(cwd, out)) > 0, 'no profile %s written' % out)
    check('Traceback' not in p.stderr, 'a traceback on stderr')
    # the command ended by itself, inside -d: hwspy did not end it
    check(re.search(r"\(pid \d+\) exited with status 0", p.stderr) and 'as sampling ended'
          not in p.stderr, 'the command did not end by itself inside -d %s (%.1f s)' % (d, took))
    return os.path.join(cwd, out)


def usage_lines(opts):
    """The usage lines that run here as written: no PID, no script, no hardware event."""
    for line in code_block(readme(opts), '## Usage'):
        cmd = line.split('#', 1)[0].strip()
        if not cmd.startswith('hwspy '):
            continue
        argv = shlex.split(cmd)
        if argv[1] in ('list', 'convert', 'diff') and 'PID' not in argv:
            yield argv


def test(opts):
    opts.hwspy = os.path.abspath(opts.hwspy)
    cwd = os.path.join(opts.tmp, 'readme')
    os.mkdir(cwd)
    profile = first_command(opts, cwd)
    # the files the usage lines name, made from that profile (a pprof one by convert)
    for name in ('perf.folded', 'before.folded', 'after.folded'):
        shutil.copy(profile, os.path.join(cwd, name))
    p, _ = run(opts, [opts.hwspy, 'convert', profile, '-o', os.path.join(cwd, 'run.pb.gz')], cwd)
    check(p.returncode == 0, 'convert to pprof exited %d' % p.returncode)
    ran = 0
    for argv in usage_lines(opts):
        p, _ = run(opts, [opts.hwspy] + argv[1:], cwd)
        check(p.returncode == 0, '`%s` exited %d' % (' '.join(argv), p.returncode))
        if '-o' in argv:
            out = os.path.join(cwd, argv[argv.index('-o') + 1])
            check(os.path.exists(out) and os.path.getsize(out) > 0,
                  '`%s` wrote no %s' % (' '.join(argv), out))
        ran += 1
    check(ran >= 5, 'only %d usage lines of list, convert and diff ran' % ran)
    log('the first command and %d usage lines ran as written' % ran)


if __name__ == '__main__':
    harness.main(test, harness.parser(__doc__))

"""hwspy's command line from its one source (doc/options.txt): peer spellings, usage errors, the
man page and the completions, as installed.

  --case usage     each peer spelling hwspy does not take (perf's -a, stat -r, py-spy's -n,
                   dump --locals, 'hwspy report' ...), an unknown option and a misspelt one:
                   exit 2, at most two lines on stderr, the hint named (never the help text)
  --case accept    the spellings taken as ours: record -r 200 -g -s -f speedscope, then --idle
                   -f flamegraph, of a short target: exit 0, the outputs in the formats asked
  --case install   meson install --destdir into a temporary directory: hwspy in bin, hwspy.1 in
                   man1 (rendered by man -l: it names every long option each command's --help
                   lists), the bash completion (it offers them all) and zsh's _hwspy
  --case tab       bash driven in tmux with the installed completion: 'hwspy rec<TAB>' becomes
                   'hwspy record', 'hwspy record --ev<TAB>' 'hwspy record --event'
"""
import os
import re
import shutil
import subprocess
import time

import harness
from harness import Fail, Skip, check, log

COMMANDS = ['record', 'convert', 'diff', 'stat', 'list', 'top', 'dump']

# (argv after hwspy, a piece of the one line said)
REFUSED = [
    (['record', '-a'], '-p PID'),
    (['record', '-n', '-p', '1'], '--native'),
    (['record', '-t'], '--threads'),
    (['record', '--call-graph', 'dwarf'], '--native'),
    (['record', '-x'], "'hwspy record --help'"),
    (['record', '--evnt', 'cycles'], 'did you mean --event?'),
    (['record', '-p'], '-p needs a value'),
    (['record', '--wall=1'], 'takes no value'),
    (['record', '-f', 'chrometrace', '--', 'true'], 'folded, speedscope, svg or pprof'),
    (['stat', '-r', '5'], "perf stat's -r"),
    (['stat', '-a'], '-p PID'),
    (['top', '-a'], '-p PID'),
    (['top', '-s'], '--subprocesses'),
    (['top', '--idle'], '--wall'),
    (['dump', '--locals'], 'local variables'),
    (['dump', '-l', '-p', '1'], 'local variables'),
    (['diff', '--color-by', 'ipc', 'a', 'b'], 'coloured by the change'),
    (['convert', '--bogus', 'a'], "'hwspy convert --help'"),
    (['list', '-x'], "'hwspy list --help'"),
    (['report'], "hwspy convert FILE -o x.svg"),
]

WORK = 'import time\nt = time.time()\nwhile time.time() - t < 0.6:\n    sum(range(1000))\n'


def run(argv, **kw):
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60, **kw)
    return r


def case_usage(opts):
    for args, hint in REFUSED:
        r = run([opts.hwspy] + args)
        lines = r.stderr.rstrip('\n').split('\n')
        log('$ hwspy %s -> %d: %s' % (' '.join(args), r.returncode, r.stderr.rstrip()))
        check(r.returncode == 2, 'hwspy %s exited %d, expected 2 (a usage error)'
              % (' '.join(args), r.returncode))
        check(len(lines) <= 2 and not r.stdout,
              'hwspy %s said %d lines (at most 2 expected), %d on stdout'
              % (' '.join(args), len(lines), len(r.stdout.split('\n')) - 1))
        check(hint in r.stderr, 'hwspy %s does not say %r' % (' '.join(args), hint))


def case_accept(opts):
    py = harness.any_python(opts)
    script = os.path.join(opts.tmp, 'work.py')
    with open(script, 'w') as f:
        f.write(WORK)
    out = os.path.join(opts.tmp, 'a.json')
    argv = [opts.hwspy, 'record', '-r', '200', '-g', '-s', '-f', 'speedscope', '-o', out,
            '--'] + py.argv + [script]
    log('$ %s' % ' '.join(argv))
    r = run(argv)
    log('exit %d; stderr:\n%s' % (r.returncode, r.stderr.rstrip()))
    check(r.returncode == 0, 'record -r 200 -g -s -f speedscope exited %d' % r.returncode)
    with open(out) as f:
        head = f.read(200)
    check('speedscope' in head, '-f speedscope did not write speedscope JSON: %r' % head[:80])
    out = os.path.join(opts.tmp, 'b.out')
    argv = [opts.hwspy, 'record', '--idle', '-f', 'flamegraph', '-o', out, '--'] + py.argv + \
        [script]
    log('$ %s' % ' '.join(argv))
    r = run(argv)
    log('exit %d; stderr:\n%s' % (r.returncode, r.stderr.rstrip()))
    check(r.returncode == 0, 'record --idle -f flamegraph exited %d' % r.returncode)
    with open(out) as f:
        head = f.read(400)
    check('<svg' in head, '-f flamegraph did not write an SVG: %r' % head[:80])


def install(opts):
    """meson install --destdir D: (D, prefix-relative paths found) or Skip."""
    meson = shutil.which('meson')
    if not meson:
        raise Skip('meson is not on PATH')
    build = os.path.dirname(os.path.dirname(os.path.realpath(opts.hwspy)))
    dest = os.path.join(opts.tmp, 'dest')
    r = run([meson, 'install', '-C', build, '--destdir', dest, '--no-rebuild', '--quiet'])
    log('$ meson install -C %s --destdir %s --no-rebuild: %d %s' % (build, dest, r.returncode,
                                                                   r.stderr.strip()[-500:]))
    check(r.returncode == 0, 'meson install failed')
    found = {}
    for d, _, files in os.walk(dest):
        for f in files:
            found[os.path.relpath(os.path.join(d, f), dest)] = os.path.join(d, f)
    want = {'bin': r'/bin/hwspy$', 'man': r'/man/man1/hwspy\.1$',
            'bash': r'/share/bash-completion/completions/hwspy$',
            'zsh': r'/share/zsh/site-functions/_hwspy$'}
    paths = {}
    for k, pat in want.items():
        hits = [v for rel, v in found.items() if re.search(pat, '/' + rel)]
        check(hits, 'meson install put no %s (%s) under %s: %s' % (k, pat, dest, sorted(found)))
        paths[k] = hits[0]
        log('installed %s: %s' % (k, hits[0]))
    return paths


def long_options(opts, command):
    r = run([opts.hwspy, command, '--help'])
    check(r.returncode == 0, 'hwspy %s --help exited %d' % (command, r.returncode))
    return sorted(set(re.findall(r'^\s+(?:-\w, )?(--[a-z][a-z-]*)', r.stdout, re.M)) |
                  set(re.findall(r', (--[a-z][a-z-]*)', r.stdout)))


def complete(bash_file, words):
    """What the completion offers for the words (the last one being completed)."""
    script = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _hwspy; '
              'printf "%s\\n" "${COMPREPLY[@]}"')
    r = run(['bash', '--norc', '--noprofile', '-c', script, '_', bash_file] + words)
    check(r.returncode == 0, 'the bash completion failed: %s' % r.stderr.strip())
    return r.stdout.split()


def case_install(opts):
    paths = install(opts)
    man = shutil.which('man')
    page = None
    if man:
        r = run([man, '-l', paths['man']], env=dict(os.environ, LC_ALL='C', MANWIDTH='200',
                                                      MANPAGER='cat', PAGER='cat'))
        check(r.returncode == 0 and 'warning' not in r.stderr,
              'man -l %s: exit %d, %s' % (paths['man'], r.returncode, r.stderr.strip()))
        page = r.stdout
        log('man -l: %d lines' % len(page.split('\n')))
    else:
        log('SKIPPED PART: man is not installed (apt-get install man-db): the page is not '
            'rendered')
    r = run(['bash', '-n', paths['bash']])
    check(r.returncode == 0, 'bash -n %s: %s' % (paths['bash'], r.stderr.strip()))
    check(set(COMMANDS) <= set(complete(paths['bash'], ['hwspy', ''])),
          'the completion does not offer every command')
    for c in COMMANDS:
        longs = long_options(opts, c)
        check(longs, 'no long option found in hwspy %s --help' % c)
        offered = set(complete(paths['bash'], ['hwspy', c, '--']))
        missing = [o for o in longs if o not in offered]
        check(not missing, 'the bash completion of hwspy %s does not offer %s' % (c, missing))
        if page is not None:
            sect = page.split('hwspy %s\n' % c, 1)
            check(len(sect) == 2, 'the man page has no section for hwspy %s' % c)
            missing = [o for o in longs if o not in sect[1]]
            check(not missing, 'the man page does not name %s of hwspy %s' % (missing, c))
        log('hwspy %s: %d long options, in the man page and the completion' % (c, len(longs)))


def case_tab(opts):
    if not shutil.which('tmux'):
        raise Skip('tmux is not installed (apt-get install tmux)')
    paths = install(opts)
    sock = 'hwspy-opts-%d' % os.getpid()
    rc = os.path.join(opts.tmp, 'bashrc')
    with open(rc, 'w') as f:
        f.write("PS1='$ '\nsource '%s'\n" % paths['bash'])

    def tmux(*args):
        r = run(['tmux', '-L', sock] + list(args))
        check(r.returncode == 0, 'tmux %s: %s' % (' '.join(args), r.stderr.strip()))
        return r.stdout

    def line_after(typed, want):
        tmux('send-keys', '-t', 'tab', typed, 'Tab')
        deadline = time.monotonic() + 5
        while True:
            last = [l for l in tmux('capture-pane', '-p', '-t', 'tab').split('\n') if l.strip()]
            if last and last[-1].rstrip() == ('$ ' + want).rstrip() or \
                    time.monotonic() > deadline:
                break
            time.sleep(0.1)
        log('typed %r + Tab: %r' % (typed, last[-1] if last else ''))
        check(last and last[-1].rstrip() == ('$ ' + want).rstrip(),
              '%r + Tab gave %r, expected %r' % (typed, last[-1] if last else '', '$ ' + want))
        tmux('send-keys', '-t', 'tab', 'C-u')

    try:
        tmux('new-session', '-d', '-x', '120', '-y', '20', '-s', 'tab',
             'bash --noprofile --rcfile %s -i' % rc)
        deadline = time.monotonic() + 5
        while '$' not in tmux('capture-pane', '-p', '-t', 'tab') and time.monotonic() < deadline:
            time.sleep(0.1)
        line_after('hwspy rec', 'hwspy record ')
        line_after('hwspy record --ev', 'hwspy record --event ')
    finally:
        subprocess.run(['tmux', '-L', sock, 'kill-server'], stderr=subprocess.DEVNULL)


def test(opts):
    {'usage': case_usage, 'accept': case_accept, 'install': case_install,
     'tab': case_tab}[opts.case](opts)


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--case', required=True, choices=['usage', 'accept', 'install', 'tab'])
    harness.main(test, p)

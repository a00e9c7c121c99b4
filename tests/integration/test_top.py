"""hwspy top, driven in tmux (a private server, a 200x50 pane), on tests/targets/top_work.py
(hot_main the hottest function; thread "side" runs side_work alone) attached with -p.

Every check waits on the pane (capture-pane, polled every 0.1 s) up to a deadline instead of
sleeping: a busy machine makes things slower, not wrong. top runs as
`sh -c 'trap : INT TERM HUP; hwspy top ...; echo $? > RC; stty -a > STTY; echo TOP-DONE'`, so
its exit status and the terminal's settings after it can be read back.

  --case keys     the hottest function is the first row within 3 s of the first table; 't'
                  sorts by total (header and bar say so, rows in that order); '>' and '<' move
                  the sort column (-e cpu-clock,page-faults: self%, total%, page-faults%); 'T'
                  filters to one thread and then to thread "side" (its rows: side_work, no
                  hot_main); 'z' zeroes (the header says since the last reset); 'h' shows the
                  keys; 'q' quits: exit 0, echo and icanon back, no screen left on the pane
                  (a resize to 40 columns leaves columns out and cuts names, and back)
  --case signals  the same end after Ctrl-C, SIGTERM and SIGHUP to hwspy, and after the target
                  is killed (then: a line saying it exited and the last table, as text); a
                  launched command (-- top_work.py run 60) quit with 'q' ends as record's does (SIGTERM)
  --case once     --once -d 2 to a file: the table as text, hot_main first, its file named
                  by its module-relative path (top_work.py); with --full-paths (-d 1) by
                  its full path; stdout no terminal
                  without --once: one line, exit 2; --once on a target that sleeps: exit 1,
                  "no samples"
  --case native   --native on tests/targets/native_work.py (zlib and hashlib in C): a native
                  row `name [module]` appears; 'n' hides the native rows, 'n' shows them again
"""
import json
import os
import re
import signal
import subprocess
import time

import harness
from harness import Fail, Skip, check, log

WIDTH, HEIGHT = 200, 50
FIRST_ROW = 5           # pane line of the first table row (four header lines, then the bar)
ROW = re.compile(r'^\s*(?P<cols>(?:(?:\d+\.\d+|\d+|-)\s+)+)(?P<name>\S.*?)\s*$')


class Tmux:
    """One tmux server of our own (-L), one session running `cmd` under sh."""

    def __init__(self, opts, name):
        self.sock = 'hwspy-top-%d-%s' % (os.getpid(), name)
        self.dir = os.path.join(opts.tmp, name)
        os.makedirs(self.dir)
        self.rc = os.path.join(self.dir, 'rc')
        self.stty = os.path.join(self.dir, 'stty')

    def tmux(self, *args, check_rc=True):
        r = subprocess.run(['tmux', '-L', self.sock] + list(args), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        if check_rc and r.returncode != 0:
            raise Fail('tmux %s: %s' % (' '.join(args), r.stderr.strip()))
        return r.stdout

    def start(self, top_args, stderr_to_pane=False):
        q = lambda s: "'" + s.replace("'", "'\\''") + "'"
        cmd = ' '.join(q(a) for a in top_args)
        if not stderr_to_pane:
            cmd += ' 2>' + q(os.path.join(self.dir, 'stderr'))
        script = ('trap : INT TERM HUP; %s; echo $? > %s; stty -a > %s; echo TOP-DONE; sleep 120'
                  % (cmd, q(self.rc), q(self.stty)))
        log('$ %s' % script)
        self.tmux('new-session', '-d', '-x', str(WIDTH), '-y', str(HEIGHT), '-s', 'top',
                  'sh -c ' + q(script))
        self.started = time.monotonic()

    def pane(self):
        return self.tmux('capture-pane', '-p', '-t', 'top').split('\n')

    def wait(self, what, pred, timeout=15):
        """The pane once pred(lines) is true, or Fail after timeout seconds."""
        end = time.monotonic() + timeout
        while True:
            lines = self.pane()
            if pred(lines):
                return lines
            if time.monotonic() > end:
                log('pane after %d s:\n%s' % (timeout, '\n'.join(lines)))
                raise Fail('top: %s, not within %d s' % (what, timeout))
            time.sleep(0.1)

    def keys(self, *keys):
        self.tmux('send-keys', '-t', 'top', *keys)

    def top_pid(self):
        sh = int(self.tmux('display-message', '-p', '-t', 'top', '#{pane_pid}').strip())
        kids = subprocess.run(['pgrep', '-P', str(sh)], stdout=subprocess.PIPE, text=True)
        pids = [int(p) for p in kids.stdout.split()]
        check(pids, 'no hwspy process under the pane\'s shell %d' % sh)
        return pids[0]

    def stderr(self):
        try:
            with open(os.path.join(self.dir, 'stderr')) as f:
                return f.read()
        except OSError:
            return ''

    def finished(self, how):
        """After top ended: exit 0, the terminal sane, no screen left."""
        lines = self.wait('ending after %s' % how, lambda l: 'TOP-DONE' in '\n'.join(l))
        with open(self.rc) as f:
            rc = int(f.read())
        with open(self.stty) as f:
            stty = f.read().split()
        log('after %s: exit %d, stderr %r' % (how, rc, self.stderr()))
        no_sanitizer_report(self.stderr() + '\n'.join(lines), how)
        check(rc == 0, 'top exited %d after %s (expected 0)' % (rc, how))
        check('echo' in stty and 'icanon' in stty and '-echo' not in stty and
              '-icanon' not in stty, 'the terminal is not restored after %s: %s'
              % (how, ' '.join(w for w in stty if 'echo' in w or 'icanon' in w)))
        return lines

    def close(self):
        """The pane's processes (sh, its sleep, a hwspy still running) killed, the server and
        its socket gone."""
        out = self.tmux('display-message', '-p', '-t', 'top', '#{pane_pid}', check_rc=False)
        if out.strip().isdigit():
            try:
                os.killpg(int(out), signal.SIGKILL)     # the pane's shell leads its group
            except OSError:
                pass
        self.tmux('kill-server', check_rc=False)
        sock = os.path.join(os.environ.get('TMUX_TMPDIR', '/tmp'), 'tmux-%d' % os.getuid(),
                            self.sock)
        if os.path.exists(sock):
            os.unlink(sock)


def no_sanitizer_report(text, how):
    """The ASan build's hwspy (run-all.sh runs suite 'tui' with it): UBSan's reports change no
    exit status, so they are looked for."""
    check('runtime error:' not in text and 'Sanitizer' not in text,
          'a sanitizer report from hwspy after %s:\n%s' % (how, text))


def rows(lines):
    """The table rows on the screen: (name, [column texts])."""
    out = []
    for l in lines[FIRST_ROW:]:
        m = ROW.match(l)
        if m:
            out.append((m.group('name'), m.group('cols').split()))
    return out


def first_row(lines):
    r = rows(lines)
    return r[0][0] if r else ''


def header(lines):
    return '\n'.join(lines[:FIRST_ROW])


def no_screen_left(lines, how):
    text = '\n'.join(lines)
    check('*self%' not in text and 'hwspy top:' not in text,
          'the screen of top is still on the pane after %s' % how)


def workload(opts):
    w = harness.Process(opts.py.argv + [os.path.join(opts.targets, 'top_work.py')])
    tids = json.loads(w.readline())
    log('workload threads: %s' % tids)
    return w, tids


def top_argv(opts, *args):
    return [opts.hwspy, 'top'] + list(args)


def wait_table(t, timeout=20):
    return t.wait('a table row', lambda l: rows(l), timeout)


def check_keys(opts, t, w, tids):
    lines = wait_table(t)
    shown = time.monotonic()
    lines = t.wait('hot_main the first row within 3 s of the first table',
                   lambda l: first_row(l).startswith('hot_main '), 3 + 0.5)
    log('first table %.1f s after top started; hot_main first %.1f s after that'
        % (shown - t.started, time.monotonic() - shown))
    t.keys('t')
    lines = t.wait("'t': sort by total", lambda l: 'sort: total%' in header(l) and
                   '*total%' in l[FIRST_ROW - 1] and not first_row(l).startswith('hot_main '))
    totals = [float(c[1]) for _, c in rows(lines)]
    check(totals == sorted(totals, reverse=True), 'rows not in total order: %s' % totals)
    t.keys('>')
    t.wait("'>': sort by page-faults%", lambda l: 'sort: page-faults%' in header(l) and
           '*page-faults%' in l[FIRST_ROW - 1])
    t.keys('<', '<')
    t.wait("'<' '<': back to self", lambda l: 'sort: self%' in header(l) and
           first_row(l).startswith('hot_main '))
    t.keys('T')
    t.wait("'T': the main thread", lambda l: 'thread: %d ' % tids['main'] in header(l) and
           not any(n.startswith('side_work ') for n, _ in rows(l)))
    t.keys('T')
    lines = t.wait("'T' again: thread side", lambda l: 'thread: %d side' % tids['side'] in
                   header(l) and first_row(l).startswith('side_work '))
    check(not any(n.startswith('hot_main ') for n, _ in rows(lines)),
          'thread side shows hot_main')
    t.keys('T')
    t.wait("'T' again: all threads", lambda l: 'thread: all' in header(l))
    t.keys('z')
    t.wait("'z': zeroed", lambda l: 'since the last reset' in header(l))
    t.tmux('resize-window', '-t', 'top', '-x', '40')
    t.wait('a resize to 40 columns: page-faults% left out, names cut', lambda l:
           '*self%' in l[FIRST_ROW - 1] and 'page-faults%' not in l[FIRST_ROW - 1] and
           first_row(l).endswith('..') and all(len(x) <= 40 for x in l))
    t.tmux('resize-window', '-t', 'top', '-x', str(WIDTH))
    t.wait('back to %d columns' % WIDTH, lambda l: 'page-faults%' in l[FIRST_ROW - 1])
    t.keys('h')
    t.wait("'h': the keys", lambda l: 'hwspy top: keys' in '\n'.join(l))
    t.keys('x')
    t.wait('a key closes the help', lambda l: 'hwspy top: keys' not in '\n'.join(l))
    t.keys('q')
    no_screen_left(t.finished("'q'"), "'q'")
    harness.check_untouched(w.pid)


def case_keys(opts):
    w, tids = workload(opts)
    t = Tmux(opts, 'keys')
    try:
        t.start(top_argv(opts, '-p', str(w.pid), '-e', 'cpu-clock,page-faults'))
        check_keys(opts, t, w, tids)
    finally:
        t.close()
    w.quit()


def case_signals(opts):
    w, tids = workload(opts)
    for how in ['C-c', 'SIGTERM', 'SIGHUP']:
        t = Tmux(opts, how)
        try:
            t.start(top_argv(opts, '-p', str(w.pid)))
            wait_table(t)
            if how == 'C-c':
                t.keys('C-c')
            else:
                os.kill(t.top_pid(), getattr(signal, how))
            no_screen_left(t.finished(how), how)
            harness.check_untouched(w.pid)
        finally:
            t.close()
    t = Tmux(opts, 'exit')
    try:
        t.start(top_argv(opts, '-p', str(w.pid)), stderr_to_pane=True)
        wait_table(t)
        w.kill()
        lines = t.finished('the target was killed')
        text = '\n'.join(lines)
        check('pid %d exited; the last table:' % w.pid in text,
              'no line saying the target exited:\n%s' % text)
        check(any(n.startswith('hot_main ') for n, _ in rows_anywhere(lines)),
              'no last table with hot_main after the target exited:\n%s' % text)
    finally:
        t.close()


    t = Tmux(opts, 'launch')
    try:
        t.start(top_argv(opts, '--', *opts.py.argv, os.path.join(opts.targets, 'top_work.py'),
                         'run', '60'))
        t.wait('hot_main first, launched', lambda l: first_row(l).startswith('hot_main '), 30)
        t.keys('q')
        no_screen_left(t.finished("'q' (launched)"), "'q' (launched)")
        check('was ended by SIGTERM as sampling ended' in t.stderr(),
              'the launched command did not end by top\'s SIGTERM: %r' % t.stderr())
    finally:
        t.close()


def rows_anywhere(lines):
    return [(m.group('name'), m.group('cols').split()) for m in map(ROW.match, lines) if m]


def case_once(opts):
    w, tids = workload(opts)
    out = os.path.join(opts.tmp, 'once.txt')
    with open(out, 'w') as f:
        r = subprocess.run(top_argv(opts, '-p', str(w.pid), '--once', '-d', '2'), stdout=f,
                           stderr=subprocess.PIPE, text=True, timeout=60)
    with open(out) as f:
        text = f.read()
    log('--once: exit %d, stderr %r\n%s' % (r.returncode, r.stderr, text[:2000]))
    check(r.returncode == 0, '--once exited %d' % r.returncode)
    no_sanitizer_report(r.stderr, '--once')
    table = rows_anywhere(text.split('\n'))
    check(table and table[0][0].startswith('hot_main '), '--once: hot_main is not the first row')
    check(table[0][0].startswith('hot_main (top_work.py:'),
          '--once: the first row %r does not name its file by its module-relative path '
          '(top_work.py)' % table[0][0])
    check('*self%' in text and '\x1b' not in text, '--once: no plain column header')
    r = subprocess.run(top_argv(opts, '-p', str(w.pid), '--once', '-d', '1', '--full-paths'),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    names = [n for n, _ in rows_anywhere(r.stdout.split('\n'))]
    full = 'hot_main (%s:' % os.path.join(opts.targets, 'top_work.py')
    log('--once --full-paths: exit %d, stderr %r, rows %s' % (r.returncode, r.stderr, names[:5]))
    check(r.returncode == 0 and any(n.startswith(full) for n in names),
          '--once --full-paths: no row %r... (its full path)' % full)
    r = subprocess.run(top_argv(opts, '-p', str(w.pid)), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=30)
    log('stdout a pipe: exit %d, stderr %r' % (r.returncode, r.stderr))
    check(r.returncode == 2 and r.stderr.count('\n') == 1 and 'use --once' in r.stderr,
          'stdout not a terminal: expected one line naming --once and exit 2')
    w.quit()
    s = harness.Process(opts.py.argv + ['-c', 'import sys, time; print("ready", flush=True); '
                                        'sys.stdin.read()'])
    s.expect_ready()
    r = subprocess.run(top_argv(opts, '-p', str(s.pid), '--once', '-d', '1'),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)
    log('--once on a sleeper: exit %d, stderr %r' % (r.returncode, r.stderr))
    no_sanitizer_report(r.stderr, '--once on a sleeper')
    check(r.returncode == 1 and 'no samples' in r.stderr and not r.stdout,
          '--once with nothing sampled: expected exit 1 and record\'s "no samples"')
    s.quit()


def native_rows(lines):
    return [n for n, _ in rows(lines) if re.search(r' \[[^\]]+\]$', n)]


def case_native(opts):
    w = harness.Process(opts.py.argv + [os.path.join(opts.targets, 'native_work.py'), 'serve'])
    w.expect_ready()
    w.send('cwork 60')
    t = Tmux(opts, 'native')
    try:
        t.start(top_argv(opts, '-p', str(w.pid), '--native'))
        lines = t.wait('a native row', native_rows, 30)
        log('native rows: %s' % native_rows(lines)[:5])
        t.keys('n')
        t.wait("'n': native rows hidden", lambda l: 'native rows: hidden' in header(l) and
               rows(l) and not native_rows(l))
        t.keys('n')
        t.wait("'n' again: shown", lambda l: 'native rows: shown' in header(l) and
               native_rows(l))
        t.keys('q')
        no_screen_left(t.finished("'q'"), "'q'")
    finally:
        t.close()
    w.kill()


def test(opts):
    if subprocess.run(['which', 'tmux'], stdout=subprocess.DEVNULL).returncode != 0:
        raise Skip('tmux is not installed (apt-get install tmux)')
    {'keys': case_keys, 'signals': case_signals, 'once': case_once,
     'native': case_native}[opts.case](opts)


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--case', required=True, choices=['keys', 'signals', 'once', 'native'])
    harness.main(test, p)

"""Files a target can plant where root's hwspy looks: none may hang it, leak another file into
its output, or be another user's. Read as perf reads a perf map: a regular file of the target's
user or root, not through a link, never waited on.

--case perfmap (--python, 3.12+) tests/targets/spin.py under python -X perf (its trampolines:
          anonymous code named in /tmp/perf-PID.map), and in its map's place, in turn:
            a FIFO: `record --native -d 1` and `dump --native` finish in time (hwspy opened it
              to read and waited for a writer, past -d and SIGINT, for good);
            a link to a root-only file (mode 0600 in a 0700 directory) that names every
              anonymous code mapping of the target hwspy_planted_secret: neither the profile
              nor the dump shows that name (hwspy followed the link as root);
            a file of another user (uid 12345), naming them hwspy_other_user: not shown;
          and tests/targets/native/jit.c run as nobody: its own map, nobody's, is read (jit_spin
          names its code).
--case elf  tests/targets/native/hot.c built with -g, its debug info moved to hot.debug next to
          it (.gnu_debuglink), stripped, run as nobody from a directory of nobody's:
            its file deleted and a FIFO put at the path its mapping now has ('hot (deleted)'):
              `record --native -d 1` finishes, and names hot_leaf from hot.debug (hwspy opened
              the FIFO as the module's file and waited);
            hot.debug a FIFO too: it finishes (libdw's search for the debug file opened it and
              waited).
Needs root (to run the targets as nobody and to give files away): skipped, saying so, without.
"""
import glob
import os
import pwd
import shutil
import stat
import subprocess
import time

import harness
from harness import Skip, check, log

OTHER_UID = 12345          # a user that is neither root, nor nobody (the targets' user)
TIMEOUT = 20               # a run that waits on a FIFO never ends: it is killed after this


def need_root():
    if os.geteuid() != 0:
        raise Skip('needs root, to run targets as nobody and give files away; this runs as uid '
                   '%d' % os.geteuid())


def nobody_prefix():
    if shutil.which('setpriv'):
        return ['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups']
    if shutil.which('runuser'):
        return ['runuser', '-u', 'nobody', '--']
    raise Skip('neither setpriv nor runuser is installed')


def nobody_ids():
    pw = pwd.getpwnam('nobody')
    return pw.pw_uid, pw.pw_gid


def compile_c(opts, src, out, extra=()):
    cc = shutil.which('cc') or shutil.which('gcc')
    if not cc:
        raise Skip('no C compiler (cc) to build tests/targets/native/%s' % src)
    argv = [cc, '-O1', '-o', out] + list(extra) + [os.path.join(opts.targets, 'native', src)]
    log('$ %s' % ' '.join(argv))
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, 'cc failed: %s' % r.stderr)


def nobody_dir(opts):
    d = os.path.join(opts.tmp, 'nobody-dir')
    os.mkdir(d)
    os.chown(d, *nobody_ids())
    return d


def anon_code(pid):
    """[(start, end)] of the target's anonymous executable mappings (its JIT code)."""
    regions = []
    with open('/proc/%d/maps' % pid) as f:
        for line in f:
            fields = line.split()
            if fields[1].startswith('r-x') and len(fields) == 5:
                start, end = (int(x, 16) for x in fields[0].split('-'))
                regions.append((start, end))
    return regions


def map_text(pid, name):
    return ''.join('%x %x %s\n' % (s, e - s, name) for s, e in anon_code(pid))


def replace(path, make):
    """Removes path (if there) and makes what is planted there in its place."""
    if os.path.lexists(path):
        os.unlink(path)
    make(path)


def record(opts, pid, name):
    run = harness.record(opts, ['-p', str(pid), '-e', 'cpu-clock', '-d', '1', '--native'],
                         name=name, timeout=TIMEOUT)
    check(run.rc == 0, 'hwspy record exited %s' % run.rc)
    check(run.elapsed < TIMEOUT / 2, 'hwspy record -d 1 took %.1f s' % run.elapsed)
    return run


def dump(opts, pid):
    argv = [opts.hwspy, 'dump', '--native', '-p', str(pid)]
    log('$ %s' % ' '.join(argv))
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise harness.Fail('hwspy dump --native did not finish within %d s' % TIMEOUT)
    log('dump exit %d after %.1fs; stdout:\n%s\nstderr:\n%s'
        % (p.returncode, time.monotonic() - t0, p.stdout.rstrip(), p.stderr.rstrip()))
    check(p.returncode == 0, 'hwspy dump --native exited %d' % p.returncode)
    return p.stdout + p.stderr


def output_of(run):
    with open(run.out_path) as f:
        return f.read() + run.stderr


def perfmap(opts):
    need_root()
    if opts.py.version < (3, 12):
        raise Skip('perf trampolines (-X perf) exist from Python 3.12 on; this is %d.%d'
                   % opts.py.version)
    prefix = nobody_prefix()
    secret_dir = os.path.join(opts.tmp, 'root-only')
    os.mkdir(secret_dir, 0o700)
    maps_before = set(glob.glob('/tmp/perf-*.map'))
    try:
        w = harness.Process(opts.py.argv + ['-X', 'perf', os.path.join(opts.targets, 'spin.py'),
                                            '60'])
        w.expect_ready()
        path = '/tmp/perf-%d.map' % w.pid
        end = time.monotonic() + 10
        while time.monotonic() < end and not (os.path.exists(path) and anon_code(w.pid)):
            time.sleep(0.05)
        check(os.path.exists(path), 'python -X perf wrote no %s' % path)
        time.sleep(0.3)
        log('target %d: anonymous code %s' % (w.pid, ['%x-%x' % r for r in anon_code(w.pid)]))

        log('--- a FIFO in its map\'s place')
        replace(path, os.mkfifo)
        record(opts, w.pid, 'fifo')
        dump(opts, w.pid)

        log('--- a link to a root-only file')
        secret = os.path.join(secret_dir, 'secret.map')
        with open(secret, 'w') as f:
            f.write(map_text(w.pid, 'hwspy_planted_secret'))
        os.chmod(secret, 0o600)
        replace(path, lambda p: os.symlink(secret, p))
        run = record(opts, w.pid, 'link')
        check('hwspy_planted_secret' not in output_of(run), 'the root-only file\'s text is in '
              'the profile: the link at %s was followed' % path)
        check('hwspy_planted_secret' not in dump(opts, w.pid), 'the root-only file\'s text is '
              'in the dump: the link at %s was followed' % path)

        log('--- a map of another user (uid %d)' % OTHER_UID)

        def other(p):
            with open(p, 'w') as f:
                f.write(map_text(w.pid, 'hwspy_other_user'))
            os.chown(p, OTHER_UID, OTHER_UID)
        replace(path, other)
        run = record(opts, w.pid, 'other')
        check('hwspy_other_user' not in output_of(run), 'a map of uid %d (the target runs as '
              'uid 0) named the target\'s code' % OTHER_UID)
        w.kill()

        log('--- a target of nobody\'s, its own map (nobody\'s): read')
        exe = os.path.join(nobody_dir(opts), 'jit')
        compile_c(opts, 'jit.c', exe)
        j = harness.Process(prefix + [exe, '60'])
        j.expect_ready()
        owner = os.stat('/tmp/perf-%d.map' % j.pid).st_uid
        run = record(opts, j.pid, 'nobody')
        profile = run.expect_profile()
        jit = profile.weight(lambda f: f[-1] == 'jit_spin')
        log('jit_spin is the leaf in %.1f%% of the weight (its map is uid %d\'s)'
            % (100.0 * jit / profile.total, owner))
        check(jit >= 0.5 * profile.total, 'jit_spin is the leaf in only %.1f%% of the weight: '
              'the map of the target\'s own user was not read' % (100.0 * jit / profile.total))
    finally:
        harness.Process.kill_all()
        for p in set(glob.glob('/tmp/perf-*.map')) - maps_before:
            os.unlink(p)


def elf(opts):
    need_root()
    prefix = nobody_prefix()
    tools = [shutil.which(t) for t in ('objcopy', 'strip')]
    if not all(tools):
        raise Skip('needs objcopy and strip (binutils) to build a stripped target')
    d = nobody_dir(opts)
    exe = os.path.join(d, 'hot')
    compile_c(opts, 'hot.c', exe, ['-g'])
    for argv in (['objcopy', '--only-keep-debug', 'hot', 'hot.debug'],
                 ['strip', '--strip-all', 'hot'],
                 ['objcopy', '--add-gnu-debuglink=hot.debug', 'hot']):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=d)
        check(r.returncode == 0, '%s failed: %s' % (' '.join(argv), r.stderr))
    for name in ('hot', 'hot.debug'):
        os.chown(os.path.join(d, name), *nobody_ids())
    w = harness.Process(prefix + [exe, '60'])
    end = time.monotonic() + 10
    while time.monotonic() < end and not any(
            l.rstrip().endswith(exe) for l in open('/proc/%d/maps' % w.pid)):
        time.sleep(0.05)
    time.sleep(0.2)

    log('--- its file deleted, a FIFO at the path its mapping has now')
    os.unlink(exe)
    os.mkfifo(exe + ' (deleted)')
    os.chown(exe + ' (deleted)', *nobody_ids())
    run = record(opts, w.pid, 'module')
    profile = run.expect_profile()
    leaf = profile.weight(lambda f: f[-1] == 'hot_leaf [hot]')
    log('hot_leaf [hot] is the leaf in %.1f%% of the weight' % (100.0 * leaf / profile.total))
    check(leaf >= 0.5 * profile.total, 'hot_leaf [hot] is the leaf in only %.1f%% of the '
          'weight: hot.debug (nobody\'s, next to the target\'s file) was not used'
          % (100.0 * leaf / profile.total))

    log('--- hot.debug a FIFO too')
    replace(os.path.join(d, 'hot.debug'), os.mkfifo)
    os.chown(os.path.join(d, 'hot.debug'), *nobody_ids())
    check(stat.S_ISFIFO(os.stat(os.path.join(d, 'hot.debug')).st_mode), 'no FIFO planted')
    record(opts, w.pid, 'debuglink').expect_profile()


def test(opts):
    check(bool(opts.python) == (opts.case == 'perfmap'),
          '--case %s %s --python' % (opts.case, 'needs' if opts.case == 'perfmap' else
                                     'takes no'))
    {'perfmap': perfmap, 'elf': elf}[opts.case](opts)


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--case', choices=['perfmap', 'elf'], required=True)
    harness.main(test, p)

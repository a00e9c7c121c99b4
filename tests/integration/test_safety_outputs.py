"""Outputs, input limits, option edge cases and refusal messages of a root hwspy, one --case each.

  planted-symlink  a directory another user (nobody) owns holds OUT as a link to a root file:
                   record, convert and diff as root replace the link with the profile and
                   leave the file it pointed to unchanged
  late-usage       an existing profile survives a usage error found after the options were
                   read (--weight nope, --ptrace --nonblocking): exit 2, file unchanged
  sigkill          an existing profile survives SIGKILL in the middle of a record (unchanged),
                   and the next run to the same OUT leaves no temporary file beside it
  sudo-owner       as root with SUDO_UID/SUDO_GID set (as sudo sets them), record's and
                   convert's outputs belong to that user
  gzip-bomb        .pb.gz files of ~1 MB that inflate to 1.1 GB, of zeros ("no protobuf": refused
                   at the first chunk) and of string-table entries (refused at the ratio cap:
                   "gzip bomb"): convert's peak RSS (wait4 of that child) stays under 256 MB
  options          -d 1e-300 / inf / nan / -1, -c -5, -F -5, -c 2^64, --stack-size
                   -18446744073709550592, diff --top -1: each refused at once (exit 2, one line
                   naming the value), nothing written
  kernel-thread    -p 2 (kthreadd) is "a kernel thread, not a Python process"
  root-denied      -p 1 where root may not read pid 1 (a sandbox's init): says what refused it,
                   not "run hwspy as root"
  bpf-userns       as root of a user namespace (unshare -Ur) the BPF-refused notice names the
                   user namespace, not a missing CAP_BPF
  closed-stdout    convert, diff and record -o /dev/stdout (and /proc/self/fd/1) with standard
                   output closed: exit 1, "not open", and /dev/stdout is still a link with
                   nothing created beside it (in `unshare -m` with a tmpfs over /dev: the
                   machine's own /dev/stdout is never at risk)
  dir-link         OUT through a directory link that nobody planted (sticky/evil/link/x.folded,
                   link -> a root directory): convert, diff, record and dump refuse it (exit 1,
                   one line), the root directory's x.folded unchanged and no file added there;
                   the same link owned by root is followed
  full-disk        convert and diff to a full 64 KiB tmpfs and to a /dev/full made with mknod
                   (both in `unshare -m`): "No space left on device", not "Input/output
                   error", exit 1, nothing left on the tmpfs
  pprof-limit      a folded count of 2^64-1, and counts adding up past 2^63-1, converted to
                   .pb.gz: "over pprof's limit" naming the value and the limit, exit 1, nothing
                   written
  not-folded       a speedscope file, an SVG and an ELF given to convert (and diff): "is not a
                   folded file: it looks like speedscope JSON ..." rather than "line 1: no space
                   before a count"; a malformed folded file still gets IN:LINE
"""
import glob
import gzip
import os
import pwd
import resource
import shutil
import subprocess
import time

import harness
import pythons
from harness import Skip, check, log

CASES = {}
OLD = b'the previous profile 1\n'


def case(fn):
    CASES[fn.__name__.replace('_', '-')] = fn
    return fn


def need_root():
    if os.geteuid() != 0:
        raise Skip('needs root (the case is about what a root hwspy does)')


def run(argv, timeout=30, env=None, **kw):
    log('$ %s' % ' '.join(argv))
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
                           env=dict(os.environ, **(env or {})), **kw)
    except subprocess.TimeoutExpired:
        raise harness.Fail('%s did not end within %d s' % (' '.join(argv[:4]), timeout))
    err = p.stderr.decode('utf-8', 'replace')
    log('exit %d; stderr:\n%s' % (p.returncode, err.rstrip()))
    return p.returncode, err


def run_measured(argv, timeout=30):
    """run() for one command, also returning its own peak RSS in KiB (wait4's rusage: that
    child's alone, not the largest of every child so far)."""
    log('$ %s' % ' '.join(argv))
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            p.kill()
            os.wait4(p.pid, 0)
            raise harness.Fail('%s did not end within %d s' % (' '.join(argv[:4]), timeout))
        time.sleep(0.05)
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode('utf-8', 'replace')
    p.stderr.close()
    return p.returncode, err, ru.ru_maxrss


def record_argv(opts, py, out, extra=(), seconds='10'):
    # the command ends by itself, long before -d would end it (hwspy exits with its status 0)
    return ([opts.hwspy, 'record', '-q', '-e', 'cpu-clock', '-d', seconds, '-o', out] +
            list(extra) + ['--'] + py.argv + [os.path.join(opts.targets, 'spin.py'), '1'])


def read(path):
    with open(path, 'rb') as f:
        return f.read()


def write(path, data):
    with open(path, 'wb') as f:
        f.write(data)


def folded_input(opts):
    path = os.path.join(opts.tmp, 'in.folded')
    write(path, b'main (a.py:1);work (a.py:5) 30\nmain (a.py:1);idle (a.py:9) 10\n')
    return path


def temp_files(path):
    d, base = os.path.split(path)
    return glob.glob(os.path.join(d, '.%s.hwspy-*' % glob.escape(base)))


@case
def planted_symlink(opts):
    need_root()
    py = harness.any_python(opts)
    nobody = pwd.getpwnam('nobody')
    victim = os.path.join(opts.tmp, 'victim')
    write(victim, b'precious\n')
    shared = os.path.join(opts.tmp, 'shared')
    os.mkdir(shared)
    os.chown(shared, nobody.pw_uid, nobody.pw_gid)
    inp = folded_input(opts)
    for what, name, argv in [
            ('record', 'r.folded', None),
            ('convert', 'c.folded', [opts.hwspy, 'convert', inp, '-o']),
            ('diff', 'd.folded', [opts.hwspy, 'diff', inp, inp, '-o'])]:
        out = os.path.join(shared, name)
        os.symlink(victim, out)
        os.lchown(out, nobody.pw_uid, nobody.pw_gid)      # planted by nobody
        rc, _ = run(record_argv(opts, py, out) if argv is None else argv + [out])
        check(rc == 0, '%s exited %d' % (what, rc))
        check(read(victim) == b'precious\n',
              '%s -o %s followed the link nobody planted and overwrote %s' % (what, out, victim))
        check(not os.path.islink(out) and os.path.isfile(out),
              '%s: %s is not a regular file now' % (what, out))
        check(os.path.getsize(out) > 0, '%s wrote an empty %s' % (what, out))
        log('%s: the link was replaced by the profile; %s unchanged' % (what, victim))


@case
def late_usage(opts):
    py = harness.any_python(opts)
    out = os.path.join(opts.tmp, 'keep.folded')
    for extra, word in [(['--weight', 'nope'], 'nope'),
                        (['--ptrace', '--nonblocking'], 'nonblocking')]:
        write(out, OLD)
        rc, err = run(record_argv(opts, py, out, extra))
        check(os.path.exists(out) and read(out) == OLD,
              '%s: the existing profile %s was lost or changed' % (' '.join(extra), out))
        check(rc == 2, '%s: exit %d, expected 2 (a usage error)' % (' '.join(extra), rc))
        check(word in err, '%s: the message does not name %r' % (' '.join(extra), word))
        check(not temp_files(out), 'temporary file left: %s' % temp_files(out))


@case
def sigkill(opts):
    py = harness.any_python(opts)
    out = os.path.join(opts.tmp, 'prof.folded')
    write(out, OLD)
    w = harness.Process(py.argv + [os.path.join(opts.targets, 'spin.py'), '60'])
    w.expect_ready()
    argv = [opts.hwspy, 'record', '-q', '-e', 'cpu-clock', '-d', '30', '-p', str(w.pid),
            '-o', out]
    log('$ %s' % ' '.join(argv))
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    harness.Process.profilers.append(p)
    check(harness.wait_attached(p.pid, w.pid), 'hwspy did not attach within 15 s')
    time.sleep(0.5)
    p.kill()
    p.wait()
    log('hwspy SIGKILLed while sampling; left beside the output: %s' % temp_files(out))
    check(read(out) == OLD, 'the previous profile %s was lost or changed (now %d bytes)'
          % (out, os.path.getsize(out)))
    rc, _ = run([opts.hwspy, 'record', '-q', '-e', 'cpu-clock', '-d', '0.5', '-p', str(w.pid),
                 '-o', out])
    check(rc == 0, 'the next record exited %d' % rc)
    check(read(out) != OLD and harness.Profile.read(out).total > 0,
          'the next record did not replace the profile')
    check(not temp_files(out), 'temporary files left after the next run: %s' % temp_files(out))


@case
def sudo_owner(opts):
    need_root()
    py = harness.any_python(opts)
    nobody = pwd.getpwnam('nobody')
    env = {'SUDO_UID': str(nobody.pw_uid), 'SUDO_GID': str(nobody.pw_gid), 'SUDO_USER': 'nobody'}
    out = os.path.join(opts.tmp, 'sudo.folded')
    conv = os.path.join(opts.tmp, 'sudo.svg')
    rc, _ = run(record_argv(opts, py, out), env=env)
    check(rc == 0, 'record exited %d' % rc)
    rc, _ = run([opts.hwspy, 'convert', folded_input(opts), '-o', conv], env=env)
    check(rc == 0, 'convert exited %d' % rc)
    for path in (out, conv):
        st = os.stat(path)
        log('%s: uid %d gid %d' % (path, st.st_uid, st.st_gid))
        check((st.st_uid, st.st_gid) == (nobody.pw_uid, nobody.pw_gid),
              '%s belongs to %d:%d, not to the sudo user %d:%d'
              % (path, st.st_uid, st.st_gid, nobody.pw_uid, nobody.pw_gid))


@case
def gzip_bomb(opts):
    # zeros alone (no protobuf: refused at the first inflated chunk), then bytes that read as a
    # Profile (string-table entries of 1 MiB of zeros: refused at the ratio cap)
    entry = b'\x32\x80\x80\x40' + bytes(1 << 20)
    for name, chunk, says in (('zeros', bytes(1 << 20), 'no protobuf'),
                              ('strings', entry, 'gzip bomb')):
        bomb = os.path.join(opts.tmp, name + '.pb.gz')
        with gzip.open(bomb, 'wb', 9) as f:
            for _ in range(1100):
                f.write(chunk)
        size = os.path.getsize(bomb)
        log('%s bomb: %d bytes, inflating to 1100 MiB' % (name, size))
        out = os.path.join(opts.tmp, name + '.folded')
        rc, err, peak = run_measured([opts.hwspy, 'convert', bomb, '-o', out], timeout=60)
        log('peak RSS of hwspy convert: %d MiB; stderr: %s' % (peak >> 10, err.strip()))
        check(peak < 256 << 10, 'hwspy convert peaked at %d MiB for a %d-byte input'
              % (peak >> 10, size))
        check(rc == 1, 'convert exited %d, expected 1' % rc)
        check(says in err, 'the message does not say "%s"' % says)
        check(not os.path.exists(out), 'an output was written')


@case
def options(opts):
    py = harness.any_python(opts)
    w = harness.Process(py.argv + [os.path.join(opts.targets, 'spin.py'), '120'])
    w.expect_ready()
    out = os.path.join(opts.tmp, 'opt.folded')
    bad = [('-d', '1e-300'), ('-d', 'inf'), ('-d', 'nan'), ('-d', '-1'), ('-c', '-5'),
           ('-F', '-5'), ('-c', '18446744073709551616'),
           ('--stack-size', '-18446744073709550592')]
    for opt, val in bad:
        rc, err = run([opts.hwspy, 'record', '-e', 'cpu-clock', '-p', str(w.pid), '-o', out,
                       opt, val], timeout=15)
        lines = [l for l in err.splitlines() if l.startswith('hwspy: ') and val in l]
        check(rc == 2, '%s %s: exit %d, expected 2 (a usage error)' % (opt, val, rc))
        check(len(lines) == 1, '%s %s: no single "hwspy: " line naming %r' % (opt, val, val))
        check(not os.path.exists(out), '%s %s: a profile was written' % (opt, val))
    inp = folded_input(opts)
    rc, err = run([opts.hwspy, 'diff', inp, inp, '--top', '-18446744073709551615'])
    check(rc == 2, 'diff --top -18446744073709551615: exit %d, expected 2' % rc)
    harness.check_untouched(w.pid)


@case
def kernel_thread(opts):
    st = harness.proc_status(2)
    if st.get('Kthread', '1' if 'VmSize' not in st else '0') != '1':
        raise Skip('pid 2 is not a kernel thread here (%s)' % st.get('Name'))
    rc, err = run([opts.hwspy, 'record', '-e', 'cpu-clock', '-p', '2', '-d', '1', '-o',
                   os.path.join(opts.tmp, 'k.folded')])
    check(rc == 1, 'exit %d, expected 1' % rc)
    check('pid 2 is a kernel thread' in err, 'the message does not say pid 2 is a kernel thread')


@case
def root_denied(opts):
    need_root()
    try:
        with open('/proc/1/maps') as f:
            f.read(1)
        raise Skip('root may read pid 1 here: nothing refuses it')
    except PermissionError:
        pass
    rc, err = run([opts.hwspy, 'record', '-e', 'cpu-clock', '-p', '1', '-d', '1', '-o',
                   os.path.join(opts.tmp, 'p1.folded')])
    check(rc == 1, 'exit %d, expected 1' % rc)
    check('not allowed to profile pid 1' in err, 'no "not allowed to profile pid 1" line')
    check('run hwspy as root' not in err, 'hwspy runs as root and still says "run hwspy as root"')
    check('CAP_SYS_PTRACE' in err or 'ptrace_scope' in err or 'user namespace' in err,
          'the message names no cause')


@case
def bpf_userns(opts):
    need_root()
    if not shutil.which('unshare'):
        raise Skip('unshare (util-linux) is not installed')
    probe = subprocess.run(['unshare', '-Ur', 'true'], capture_output=True)
    if probe.returncode != 0:
        raise Skip('no user namespaces here: %s' % probe.stderr.decode().strip())
    py = harness.any_python(opts)
    rc, err = run(['unshare', '-Ur', opts.hwspy, 'record', '-e', 'cpu-clock', '-d', '0.5',
                   '-o', os.path.join(opts.tmp, 'ns.folded'), '--'] + py.argv +
                  [os.path.join(opts.targets, 'spin.py'), '1'])
    lines = [l for l in err.splitlines() if 'no BPF capture here' in l]
    check(lines, 'no "no BPF capture here" notice in a user namespace (exit %d)' % rc)
    check('user namespace' in lines[0], 'the notice does not name the user namespace: %s'
          % lines[0])


def need_unshare():
    if not shutil.which('unshare'):
        raise Skip('unshare (util-linux) is not installed')
    probe = subprocess.run(['unshare', '-m', '--propagation', 'private', 'true'],
                           capture_output=True)
    if probe.returncode != 0:
        raise Skip('no private mount namespace here: %s' % probe.stderr.decode().strip())


def in_mount_ns(script, argv, timeout=30):
    """run() of sh -c SCRIPT with argv as "$@", in a private mount namespace (what SCRIPT mounts
    goes with it)."""
    return run(['unshare', '-m', '--propagation', 'private', 'sh', '-c', script, 'sh'] + argv,
               timeout=timeout)


def words_after(err, prefix):
    """The words of err's line that starts with prefix (what a namespace script echoed)."""
    lines = [l for l in err.splitlines() if l.startswith(prefix)]
    return lines[-1][len(prefix):].split() if lines else None


def bad_and_said(what, rc, err, says):
    check(rc == 1, '%s: exit %d, expected 1' % (what, rc))
    lines = [l for l in err.splitlines() if l.startswith('hwspy: ')]
    check(lines and all(s in lines[0] for s in says),
          '%s: no "hwspy: " line saying %s' % (what, ' and '.join(repr(s) for s in says)))


@case
def closed_stdout(opts):
    need_root()
    need_unshare()
    py = harness.any_python(opts)
    inp = folded_input(opts)
    # /dev here is a tmpfs of this namespace alone, holding a root-owned /dev/stdout link as
    # the machine's; hwspy runs with fd 1 closed, the link dangling
    script = r"""
set -e
mount -t tmpfs -o mode=755 hwspy-test-dev /dev
ln -s /proc/self/fd/1 /dev/stdout
mknod -m 666 /dev/null c 1 3
set +e
"$@" >&-
echo "hwspy exit $?" >&2
if [ -L /dev/stdout ]; then echo "/dev/stdout: a link" >&2; else echo "/dev/stdout: REPLACED" >&2; fi
echo "in /dev: $(ls -A /dev | tr '\n' ' ')" >&2
"""
    for what, argv in [
            ('convert', [opts.hwspy, 'convert', inp, '-o', '/dev/stdout']),
            ('convert /proc/self/fd/1', [opts.hwspy, 'convert', inp, '-o', '/proc/self/fd/1']),
            ('diff', [opts.hwspy, 'diff', inp, inp, '-o', '/dev/stdout']),
            ('diff without -o', [opts.hwspy, 'diff', inp, inp]),
            ('record', record_argv(opts, py, '/dev/stdout', seconds='2'))]:
        rc, err = in_mount_ns(script, argv)
        check(rc == 0, '%s: the namespace script failed (exit %d)' % (what, rc))
        check('/dev/stdout: a link' in err,
              '%s with standard output closed replaced /dev/stdout by a file' % what)
        check(words_after(err, 'in /dev:') == ['null', 'stdout'],
              '%s created something in /dev: %s' % (what, words_after(err, 'in /dev:')))
        check('hwspy exit 1' in err, '%s: hwspy did not exit 1' % what)
        check('not open' in err or 'closed' in err,
              '%s: the message does not say the descriptor is closed' % what)
        log('%s: refused, /dev/stdout still a link' % what)


@case
def dir_link(opts):
    need_root()
    py = harness.any_python(opts)
    nobody = pwd.getpwnam('nobody')
    sticky = os.path.join(opts.tmp, 'sticky')           # as /tmp
    os.mkdir(sticky)
    os.chmod(sticky, 0o1777)
    evil = os.path.join(sticky, 'evil')
    os.mkdir(evil)
    os.chown(evil, nobody.pw_uid, nobody.pw_gid)
    rootdir = os.path.join(opts.tmp, 'rootdir')
    os.mkdir(rootdir, 0o755)
    link = os.path.join(evil, 'link')
    os.symlink(rootdir, link)
    os.lchown(link, nobody.pw_uid, nobody.pw_gid)      # planted by nobody
    inp = folded_input(opts)
    w = harness.Process(py.argv + [os.path.join(opts.targets, 'spin.py'), '60'])
    w.expect_ready()
    names = ['c.folded', 'd.folded', 'r.folded', 'dump.txt']
    for name in names:
        write(os.path.join(rootdir, name), b'precious\n')
    for what, name, argv in [
            ('convert', 'c.folded', [opts.hwspy, 'convert', inp, '-o']),
            ('diff', 'd.folded', [opts.hwspy, 'diff', inp, inp, '-o']),
            ('record', 'r.folded', None),
            ('dump', 'dump.txt', [opts.hwspy, 'dump', '-p', str(w.pid), '-o'])]:
        out = os.path.join(link, name)
        rc, err = run(record_argv(opts, py, out, seconds='2') if argv is None else argv + [out])
        bad_and_said(what, rc, err, [out, 'symbolic link owned by another user'])
        check(read(os.path.join(rootdir, name)) == b'precious\n',
              '%s -o %s followed the directory link nobody planted and replaced %s'
              % (what, out, os.path.join(rootdir, name)))
        check(sorted(os.listdir(rootdir)) == sorted(names),
              '%s left files in %s: %s' % (what, rootdir, os.listdir(rootdir)))
        log('%s: refused; %s unchanged' % (what, os.path.join(rootdir, name)))
    os.lchown(link, 0, 0)                               # root's own link: followed
    rc, _ = run([opts.hwspy, 'convert', inp, '-o', os.path.join(link, 'c.folded')])
    check(rc == 0, 'convert through root\'s directory link exited %d' % rc)
    check(read(os.path.join(rootdir, 'c.folded')) != b'precious\n',
          'convert through root\'s directory link did not write %s' % rootdir)
    harness.check_untouched(w.pid)


@case
def full_disk(opts):
    need_root()
    need_unshare()
    big = os.path.join(opts.tmp, 'big.folded')
    big2 = os.path.join(opts.tmp, 'big2.folded')
    # ~600 KB of folded output: past stdio's buffer and the writers' own
    lines = ['main (app.py:1);work_%d (app.py:%d);leaf_%d (lib.py:9)' % (i, i, i)
             for i in range(6000)]
    write(big, ''.join('%s %d\n' % (l, i + 1) for i, l in enumerate(lines)).encode())
    write(big2, ''.join('%s %d\n' % (l, 7) for l in lines).encode())
    d = os.path.join(opts.tmp, 'small')
    os.mkdir(d)
    script = r"""
set -e
mount -t tmpfs -o size=64k hwspy-test-full "$D"
mknod -m 666 "$D/full" c 1 7
set +e
"$@" -o "$D/out.folded"; echo "disk: exit $?" >&2
"$@" -o "$D/full"; echo "full: exit $?" >&2
echo "left: $(ls -A "$D" | tr '\n' ' ')" >&2
""".replace('$D', d)
    for what, argv in [('convert', [opts.hwspy, 'convert', big, '--format', 'folded']),
                       ('diff', [opts.hwspy, 'diff', big, big2, '--format', 'folded'])]:
        rc, err = in_mount_ns(script, argv)
        check(rc == 0, '%s: the namespace script failed (exit %d)' % (what, rc))
        said = [l for l in err.splitlines() if l.startswith('hwspy: cannot write')]
        check(len(said) == 2 and all('No space left on device' in l for l in said),
              '%s: a full disk and /dev/full are not both "No space left on device": %s'
              % (what, said))
        check('disk: exit 1' in err and 'full: exit 1' in err, '%s: not exit 1' % what)
        check(words_after(err, 'left:') == ['full'],
              '%s left files on the full disk: %s' % (what, words_after(err, 'left:')))


@case
def pprof_limit(opts):
    for name, text, says in [
            ('one', b'main;a 18446744073709551615\n', '18446744073709551615'),
            ('sum', b'main;a 5000000000000000000\nmain;b 5000000000000000000\n', 'add up')]:
        inp = os.path.join(opts.tmp, name + '.folded')
        write(inp, text)
        out = os.path.join(opts.tmp, name + '.pb.gz')
        rc, err = run([opts.hwspy, 'convert', inp, '-o', out])
        bad_and_said(name, rc, err, ["'%s' is over pprof's limit" % inp, says,
                                     '9223372036854775807'])
        check('Value too large' not in err, '%s: reads as an I/O failure' % name)
        check(not os.path.exists(out) and not temp_files(out), '%s: something was written' % name)


@case
def not_folded(opts):
    inp = folded_input(opts)
    ss = os.path.join(opts.tmp, 'p.speedscope.json')
    svg = os.path.join(opts.tmp, 'p.svg')
    for path in (ss, svg):
        rc, _ = run([opts.hwspy, 'convert', inp, '-o', path])
        check(rc == 0, 'convert to %s exited %d' % (path, rc))
    out = os.path.join(opts.tmp, 'out.folded')
    for path, kind in [(ss, 'speedscope JSON'), (svg, 'an SVG image'),
                       (opts.hwspy, 'an ELF executable')]:
        rc, err = run([opts.hwspy, 'convert', path, '-o', out])
        bad_and_said(path, rc, err, ["'%s' is not a folded file: it looks like %s" % (path, kind),
                                     'hwspy reads folded stacks and pprof'])
        check(not os.path.exists(out), '%s: something was written' % path)
    rc, err = run([opts.hwspy, 'diff', ss, inp])
    bad_and_said('diff', rc, err, ["'%s' is not a folded file: it looks like speedscope JSON"
                                   % ss])
    bad = os.path.join(opts.tmp, 'bad.folded')
    write(bad, b'main;a 1\nmain;b\n')
    rc, err = run([opts.hwspy, 'convert', bad, '-o', out])
    bad_and_said('malformed folded', rc, err, ['%s:2: ' % bad])


def test(opts):
    CASES[opts.case](opts)


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--case', choices=sorted(CASES), required=True)
    harness.main(test, p)

"""Targets in containers: a Python process in a PID namespace of its own knows its threads by
that namespace's ids (native_thread_id, struct pthread), a process in a mount namespace of its
own has its own files. One --case each, in every --mode (capture: the default BPF capture;
ptrace: --ptrace; nonblocking: --nonblocking; native: the default with --native):

  pidns   tests/targets/spin.py under `unshare -p -f --mount-proc` (pid 1 in its namespace);
          hwspy on the host attaches to its host pid.
  rootfs  the same in a PID and a mount namespace of its own, chroot-ed into a root made of bind
          mounts where the interpreter (with its libpython, or its own libc and loader for the
          Debian 3.13/3.14 builds) lives at /opt/hwspy-ct-python and the script at
          /hwspy-ct/spin.py: paths that do not exist on the host, so hwspy must read the
          target's files through /proc/PID/map_files or /proc/PID/root.
  threads tests/targets/threads.py under `unshare -p -f --mount-proc`, attached from the host
          with --threads; its thread "late" starts after hwspy attached: three thread roots,
          each thread's own function (main_work, alpha_work, late_work) at its hot line carries
          >= 50% of its thread's weight and >= 10% of all.
  debuginfo  (no --python, with --native) tests/targets/native/hot.c built with -g, stripped,
          its debug file only in the container's /usr/lib/debug/.build-id (a tmpfs-like bind
          over the bound /usr): run as the rootfs case, its functions (hot_leaf ...) are named
          from the container's debug file, not hot+0x... .
  perfmap  (no --python, with --native) tests/targets/native/jit.c, run as the rootfs case,
          runs code from anonymous memory named in its /tmp/perf-1.map (its pid there is 1, its
          /tmp the container's): jit_spin names >= 80% of the weight.
  inside  hwspy itself under `unshare -p -f --mount-proc`, the target started in the same
          namespace: perf's tids are that namespace's, and the BPF capture must key its
          threads by them (not by the initial namespace's ids).

Every run: the summary says the mode it ran in (BPF captures: at most 20% of the stacks read
late), spin() at its hot line carries >= 80% of the weight, stacks without any Python frame
([native] or [unknown]) <= 10%, and the Python frames name the file as the target sees it.
With --native, the native frames outside the interpreter are named too (libc's, by name).
Needs root (namespaces, mounts, chroot): skipped, saying so, without.
"""
import os
import re
import shlex
import shutil
import subprocess
import time

import harness
from harness import Skip, check, log, py_frames

INNER = '/opt/hwspy-ct-python'      # where the interpreter lives inside the rootfs
SCRIPT_DIR = '/hwspy-ct'             # where the script lives inside the rootfs
SECONDS = '60'                       # how long the workload spins (killed long before)


def need_root():
    if os.geteuid() != 0:
        raise Skip('namespaces, mounts and chroot need root; this runs as uid %d' % os.geteuid())
    if not shutil.which('unshare') or not shutil.which('chroot'):
        raise Skip('unshare or chroot (util-linux, coreutils) is not installed')
    for path in ('/usr', '/etc', '/bin', '/lib', '/lib64'):
        if not os.path.exists(path):
            raise Skip('%s missing: the rootfs layout of this test expects a merged /usr' % path)


def mode_args(mode):
    return {'capture': [], 'ptrace': ['--ptrace'], 'nonblocking': ['--nonblocking'],
            'native': ['--native']}[mode]


def inner_interpreter(opts):
    """(source to bind at INNER, argv inside the rootfs, environment inside)."""
    py, ident = opts.py, opts.py.id
    exe = py.argv[0]
    short = '%d.%d' % py.version
    if ident.startswith('py'):                  # pyenv: bin/pythonX.Y and lib/libpython
        return (os.path.dirname(os.path.dirname(exe)), [INNER + '/bin/python' + short],
                {'LD_LIBRARY_PATH': INNER + '/lib'})
    if ident == 'debian311':                    # a static interpreter: the executable alone
        return exe, [INNER + '/bin/python3.11'], {}
    with open(exe) as f:                        # a launcher: r="ROOT", its loader and libc
        m = re.search(r'^r="([^"]+)"$', f.read(), re.M)
    check(m, 'launcher %s: no r="ROOT" line' % exe)
    return (m.group(1), [INNER + '/usr/lib64/ld-linux-x86-64.so.2', '--library-path',
                         INNER + '/usr/lib/x86_64-linux-gnu:' + INNER + '/lib/x86_64-linux-gnu',
                         INNER + '/usr/bin/python' + short], {})


def rootfs_command(opts):
    """argv that starts spin.py in new PID and mount namespaces, chroot-ed into a bind-mount
    root where the interpreter is at INNER; and the script's path as the target sees it."""
    root = os.path.join(opts.tmp, 'root')
    src, argv, env = inner_interpreter(opts)
    for d in ('usr', 'etc', 'tmp', SCRIPT_DIR.lstrip('/')):
        os.makedirs(os.path.join(root, d))
    for link in ('bin', 'lib', 'lib64', 'sbin'):
        os.symlink('usr/' + link, os.path.join(root, link))
    at = os.path.join(root, INNER.lstrip('/'))
    if os.path.isdir(src):
        os.makedirs(at)
    else:
        os.makedirs(os.path.join(at, 'bin'))
        at = os.path.join(at, 'bin', os.path.basename(argv[0]))
        open(at, 'w').close()
    shutil.copy(os.path.join(opts.targets, 'spin.py'), os.path.join(root, SCRIPT_DIR.lstrip('/')))
    script = SCRIPT_DIR + '/spin.py'
    check(not os.path.exists(argv[-1]) and not os.path.exists(script),
          'the inner paths %s, %s exist on the host: the case would prove nothing'
          % (argv[-1], script))
    sh = ('mount --bind /usr {r}/usr && mount --bind /etc {r}/etc && '
          'mount --bind {src} {at} && exec chroot {r} env {env} {argv} {script} {secs}').format(
        r=shlex.quote(root), src=shlex.quote(src), at=shlex.quote(at),
        env=' '.join(shlex.quote('%s=%s' % kv) for kv in env.items()),
        argv=' '.join(shlex.quote(a) for a in argv), script=script, secs=SECONDS)
    return ['unshare', '-p', '-f', '-m', '--mount-proc', 'sh', '-c', sh], script


def child_of(pid, timeout=10):
    """The one child of pid (unshare -f's: the target, pid 1 of its namespace)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with open('/proc/%d/task/%d/children' % (pid, pid)) as f:
                kids = f.read().split()
        except OSError:
            kids = []
        if len(kids) == 1:
            return int(kids[0])
        time.sleep(0.05)
    raise harness.Fail('unshare (pid %d) has no single child after %ds' % (pid, timeout))


def check_profile(opts, run, mode, script):
    profile = run.expect_profile()
    if mode in ('capture', 'native'):
        harness.check_exact(run, 'capture', max_uncaptured=0.2)
    elif mode == 'ptrace':
        harness.check_exact(run, 'ptrace')
    else:
        check('nonblocking: reads were late' in run.stderr,
              'the summary does not say the run was nonblocking')
    hot = harness.markers(os.path.join(opts.targets, 'spin.py'))['HOT:spin']
    spin = profile.weight(lambda f: any(p[:3] == ('spin', script, hot) for p in py_frames(f)))
    unnamed = profile.weight(lambda f: not py_frames(f))
    log('spin (%s:%d) in %.1f%% of the weight; stacks without a Python frame %.1f%%'
        % (script, hot, 100.0 * spin / profile.total, 100.0 * unnamed / profile.total))
    check(spin >= 0.8 * profile.total,
          'spin() at %s:%d carries only %.1f%% of the weight' % (script, hot,
                                                                100.0 * spin / profile.total))
    check(unnamed <= 0.1 * profile.total,
          '%.1f%% of the weight has no Python frame ([native]/[unknown]): the target\'s '
          'threads were not matched' % (100.0 * unnamed / profile.total))
    if mode == 'native':
        libc = profile.weight(lambda f: any(re.match(r'^\w+ \[libc\.so\.6\]$', x) for x in f))
        unknown = profile.weight(lambda f: any('[unknown]' in x for x in f))
        log('native: libc frames by name in %.1f%%, [unknown] frames in %.1f%% of the weight'
            % (100.0 * libc / profile.total, 100.0 * unknown / profile.total))
        check(libc >= 0.5 * profile.total,
              'with --native, named libc frames (__libc_start_main ...) in only %.1f%% of the '
              'weight: the target\'s own libc was not symbolised' % (100.0 * libc / profile.total))
        check(unknown <= 0.1 * profile.total,
              '[unknown] native frames in %.1f%% of the weight' % (100.0 * unknown / profile.total))


def attach_from_host(opts, argv, script):
    w = harness.Process(argv)
    w.expect_ready()
    pid = child_of(w.pid)
    st = harness.proc_status(pid)
    log('target: host pid %d, NSpid %s' % (pid, st.get('NSpid')))
    check(len(st.get('NSpid', '').split()) == 2, 'the target is not in a PID namespace of its own')
    run = harness.record(opts, ['-p', str(pid), '-e', 'cpu-clock', '-d', '2'] +
                         mode_args(opts.mode), name=opts.case)
    harness.check_untouched(pid)
    check_profile(opts, run, opts.mode, script)


def pidns(opts):
    script = os.path.join(opts.targets, 'spin.py')
    attach_from_host(opts, ['unshare', '-p', '-f', '--mount-proc'] + opts.py.argv +
                     [script, SECONDS], script)


def rootfs(opts):
    argv, script = rootfs_command(opts)
    attach_from_host(opts, argv, script)


def threads(opts):
    src = os.path.join(opts.targets, 'threads.py')
    mk = harness.markers(src)
    w = harness.Process(['unshare', '-p', '-f', '--mount-proc'] + opts.py.argv + [src])
    log('workload threads, as its namespace knows them: %s' % w.readline())
    pid = child_of(w.pid)
    log('target: host pid %d, NSpid %s' % (pid, harness.proc_status(pid).get('NSpid')))
    p = harness.start_record(opts, ['-p', str(pid), '--threads', '-e', 'cpu-clock', '-d', '3'] +
                             mode_args(opts.mode), name='threads')
    check(harness.wait_attached(p.pid, pid), 'hwspy holds no perf event per thread after 15 s')
    log('late thread: %s' % w.ask('late'))
    run = harness.finish_record(p)
    harness.check_untouched(pid)
    profile = run.expect_profile()
    by_root = {}
    for frames, c in profile.stacks:
        m = harness.THREAD_FRAME.match(frames[0])
        check(m, 'with --threads, a stack without a [thread TID NAME] root: %s' % ';'.join(frames))
        e = by_root.setdefault(int(m.group('tid')), {})
        leaf = py_frames(frames)[-1][:3] if py_frames(frames) else None
        e[leaf] = e.get(leaf, 0) + c
    check(len(by_root) == 3, 'thread roots %s, expected three threads' % sorted(by_root))
    for func in ('main_work', 'alpha_work', 'late_work'):
        hot = (func, src, mk['HOT:' + func])
        tids = [t for t, e in by_root.items() if e.get(hot, 0) >= 0.5 * sum(e.values())]
        mine = sum(by_root[t].get(hot, 0) for t in tids)
        log('%s at its hot line: %.1f%% of all, the leaf of threads %s'
            % (func, 100.0 * mine / profile.total, tids))
        check(len(tids) == 1 and mine >= 0.1 * profile.total,
              '%s at line %d is not the main work of exactly one thread with >= 10%% of all: '
              'leaves per thread %s' % (func, hot[2], by_root))


def bare_root(opts, inner):
    """A root under opts.tmp with the host's /usr (bound later), its own /tmp, and the
    directory of inner; returns (root, inner's path on the host side)."""
    root = os.path.join(opts.tmp, 'root')
    for d in ('usr', 'tmp', os.path.dirname(inner).lstrip('/')):
        os.makedirs(os.path.join(root, d))
    for link in ('bin', 'lib', 'lib64', 'sbin'):
        os.symlink('usr/' + link, os.path.join(root, link))
    return root, os.path.join(root, inner.lstrip('/'))


def start_in_root(root, inner, binds=()):
    """Starts inner (SECONDS) chroot-ed into root, in new PID and mount namespaces, with /usr and
    binds ((source, path inside)) mounted; returns (the workload, the target's host pid)."""
    mounts = [('/usr', '/usr')] + list(binds)
    sh = ' && '.join('mount --bind %s %s' % (shlex.quote(src), shlex.quote(root + at))
                     for src, at in mounts)
    sh += ' && exec chroot %s %s %s' % (shlex.quote(root), inner, SECONDS)
    w = harness.Process(['unshare', '-p', '-f', '-m', '--mount-proc', 'sh', '-c', sh])
    return w, child_of(w.pid)


def exe_is(pid, path):
    try:
        return os.readlink('/proc/%d/exe' % pid).endswith(path)   # seen from our root
    except OSError:
        return False


def perfmap(opts):
    inner = '/opt/hwspy-ct-native/jit'
    root, exe = bare_root(opts, inner)
    cc = shutil.which('cc') or shutil.which('gcc')
    if not cc:
        raise Skip('no C compiler (cc) to build tests/targets/native/jit.c')
    r = subprocess.run([cc, '-O1', '-o', exe, os.path.join(opts.targets, 'native', 'jit.c')],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, 'cc failed: %s' % r.stderr)
    w, pid = start_in_root(root, inner)
    w.expect_ready()
    log('target: host pid %d, NSpid %s; its perf maps: %s'
        % (pid, harness.proc_status(pid).get('NSpid'), os.listdir(os.path.join(root, 'tmp'))))
    run = harness.record(opts, ['-p', str(pid), '-e', 'cpu-clock', '-d', '2', '--native'],
                         name='perfmap')
    profile = run.expect_profile()
    jit = profile.weight(lambda f: f[-1] == 'jit_spin')
    log('jit_spin is the leaf in %.1f%% of the weight' % (100.0 * jit / profile.total))
    check(jit >= 0.8 * profile.total, 'jit_spin is the leaf in only %.1f%% of the weight: the '
          'container\'s /tmp/perf-1.map was not read' % (100.0 * jit / profile.total))


def debuginfo(opts):
    cc = shutil.which('cc') or shutil.which('gcc')
    tools = [shutil.which(t) for t in ('objcopy', 'strip', 'readelf')]
    if not cc or not all(tools):
        raise Skip('needs cc, objcopy, strip and readelf (binutils) to build a stripped target')
    inner = '/opt/hwspy-ct-native/hot'
    root, exe = bare_root(opts, inner)
    dbg = os.path.join(opts.tmp, 'debug')
    for argv in ([cc, '-g', '-O1', '-o', exe, os.path.join(opts.targets, 'native', 'hot.c')],
                 ['objcopy', '--only-keep-debug', exe, exe + '.debug'],
                 ['strip', '--strip-all', exe]):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, '%s failed: %s' % (argv[0], r.stderr))
    notes = subprocess.run(['readelf', '-n', exe], capture_output=True, text=True).stdout
    m = re.search(r'Build ID: ([0-9a-f]{4,})', notes)
    check(m, 'cc made no build-id note (readelf -n %s)' % exe)
    bid = m.group(1)
    os.makedirs(os.path.join(dbg, '.build-id', bid[:2]))
    os.rename(exe + '.debug', os.path.join(dbg, '.build-id', bid[:2], bid[2:] + '.debug'))
    w, pid = start_in_root(root, inner, [(dbg, '/usr/lib/debug')])
    end = time.monotonic() + 10
    while time.monotonic() < end and not exe_is(pid, inner):
        time.sleep(0.05)
    check(exe_is(pid, inner), 'the target did not exec %s within 10 s' % inner)
    time.sleep(0.3)
    log('target: host pid %d, NSpid %s, build-id %s'
        % (pid, harness.proc_status(pid).get('NSpid'), bid))
    run = harness.record(opts, ['-p', str(pid), '-e', 'cpu-clock', '-d', '2', '--native'],
                         name='debuginfo')
    profile = run.expect_profile()
    leaf = profile.weight(lambda f: f[-1] == 'hot_leaf [hot]')
    nameless = profile.weight(lambda f: any(x.startswith('hot+0x') for x in f))
    log('hot_leaf [hot] is the leaf in %.1f%%, nameless hot+0x... frames in %.1f%% of the weight'
        % (100.0 * leaf / profile.total, 100.0 * nameless / profile.total))
    check(leaf >= 0.8 * profile.total, 'hot_leaf [hot] is the leaf in only %.1f%% of the weight: '
          'the container\'s debug file was not used' % (100.0 * leaf / profile.total))
    check(nameless <= 0.05 * profile.total, 'nameless hot+0x... frames in %.1f%% of the weight'
          % (100.0 * nameless / profile.total))


def inside(opts):
    script = os.path.join(opts.targets, 'spin.py')
    ready = os.path.join(opts.tmp, 'ready')
    # in the namespace: start the target, wait for its "ready", then hwspy record ... -p PID
    sh = ('{py} {script} {secs} > {ready} & t=$!; n=0; '
          'until grep -q ready {ready} || [ $n -gt 600 ]; do sleep 0.05; n=$((n+1)); done; '
          '"$@" -p $t; rc=$?; kill $t; exit $rc').format(
        py=' '.join(shlex.quote(a) for a in opts.py.argv), script=shlex.quote(script),
        secs=SECONDS, ready=shlex.quote(ready))
    prefix = ['unshare', '-p', '-f', '--mount-proc', 'sh', '-c', sh, 'sh']
    run = harness.record(opts, ['-e', 'cpu-clock', '-d', '2'] + mode_args(opts.mode),
                         name='inside', prefix=prefix)
    check_profile(opts, run, opts.mode, script)


CASES = {'pidns': pidns, 'rootfs': rootfs, 'threads': threads, 'debuginfo': debuginfo,
         'perfmap': perfmap, 'inside': inside}


def test(opts):
    need_root()
    CASES[opts.case](opts)


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--case', choices=sorted(CASES), required=True)
    p.add_argument('--mode', choices=['capture', 'ptrace', 'nonblocking', 'native'],
                   default='capture')
    harness.main(test, p)

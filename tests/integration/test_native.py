"""Native frames (--native, --kernel, the leaf native function without --native), one --case each.
Workloads: tests/targets/native_work.py (Python calling C and C calling Python) and two C files
the test compiles with `cc` at run time, tests/targets/native/split.c (a C program) and
tests/targets/native/late.c (a library loaded after hwspy attached).

  callback  (--python) launch native_work.py run callback under --native -e cpu-clock -F 999:
            ctypes calls libc's qsort, which calls cmp() back in Python. The callback's stacks
            read outer Python (sort_with_callback at its qsort call), then native frames with
            libc's qsort (qsort_r / msort_with_tmp ...), then cmp() as the only Python frame
            below them; no _PyEval_EvalFrameDefault anywhere; few merge failures.
  cwork     (--python) attach twice to native_work.py serve running hashlib.sha256 and
            zlib.compress: with --native the leaf of hash_work()'s stacks is in libcrypto and of
            zlib_work()'s in libz, below the Python frame that called them; without --native
            every stack is Python frames plus at most one native frame, the leaf, and that leaf
            is the libcrypto / libz function.
  late      (--python) attach with --native to native_work.py serve (-S, so nothing loads
            libbz2 early) and only then load liblate.so (ctypes) and bz2: their frames come out
            with names (late_spin/late_outer/late_inner [liblate.so], BZ2_* [libbz2.so.1.0.4];
            a sample in one of liblate.so's PLT stubs, which no symbol names, is logged).
  callback-merge  (--python) the callback workload launched for 1.5 s under --native -e
            cpu-clock -F 999 (again, up to 4 launches, until 300 callback samples), judged per
            callback sample (those whose leaf Python frame is cmp()): the samples the summary
            counts as not merged are under 1% of them, and over 99% of cmp()'s weight reads
            outer Python (sort_with_callback at its qsort call) -> native frames with libc's
            qsort and a libffi frame -> cmp(). A launched command's first samples are read late
            (no capture yet, hwspy busy loading symbols): their Python stack is a later one,
            the callback's, and must not show as cmp() without native frames (3.12 had 8-12%
            of its callback samples so on a busy machine).
  xperf     (--python, 3.12+) the callback case under python -X perf: every Python call goes
            through a perf trampoline in anonymous memory with no CFI, which the unwinder steps
            over (by SP, or by the frame pointer) to reach qsort and the outer frames; the
            target must have written /tmp/perf-PID.map (removed afterwards), and no py::
            trampoline frame shows (hwspy reads the Python frames itself).
  cprog     a C program (split.c: split_heavy 75%, split_light 25% of its CPU, measured by the
            program itself) profiled with --native, launched and attached: the self weights
            match the measured shares within 10 points, under main, with no Python frames and
            no [native] (frameless) samples.
  not-python  the same C program without --native: launched and attached, hwspy fails with a
            message that mentions --native.
  kernel    (root) --kernel, with and without --native, on os.read of /dev/zero: kernel frames
            (`name_[k]`) at the leaf end of read_zero()'s stacks, and only there; with --native
            libc's read between read_zero() and the kernel frames (the user stack of a sample
            taken in the kernel is unwound too).
  kernel-nobody  as nobody, hwspy profiles its own command with -e cpu-clock:u, but --kernel
            (perf_event_paranoid >= 2 forbids kernel samples to unprivileged users) is refused
            with a message that names perf_event_paranoid or CAP_PERFMON (and no "pid 0").
"""
import glob
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import time

import harness
import pythons
from harness import Skip, check, log, py_frames

RATE = '999'
# `name [module]`; the module is a file's basename, or a pseudo-mapping such as [vdso]
NATIVE = re.compile(r'^(?P<name>.+) \[(?P<module>[^\[\]/]+|\[[^\[\]/]+\])\]$')
INTERPRETER_MODULE = re.compile(r'^(lib)?python\d')
# interpreter frames that --native keeps (DESIGN.md: GC and lock waits)
INTERPRETER_KEPT = re.compile(r'gc|collect|lock|sem_|futex|cond|gil|wait', re.I)

CASES = {}


def case(fn):
    CASES[fn.__name__.replace('_', '-')] = fn
    return fn


# ---------------------------------------------------------------------------- frames

def kind(frame):
    """'kernel', 'python', 'special' ([native], [unknown], [thread ...]), 'native' or 'other'."""
    if frame.endswith('_[k]'):
        return 'kernel'
    if harness.PY_FRAME.match(frame):
        return 'python'
    if frame.startswith('[') and frame.endswith(']'):
        return 'special'
    if NATIVE.match(frame):
        return 'native'
    return 'other'


def module_of(frame):
    m = NATIVE.match(frame)
    return m.group('module') if m and kind(frame) == 'native' else None


def name_of(frame):
    m = NATIVE.match(frame)
    return m.group('name') if m else frame


def unnamed(frame):
    """A native frame without a symbol: `module+0xOFFSET [module]`."""
    m = NATIVE.match(frame)
    return bool(m) and m.group('name').startswith(m.group('module') + '+0x')


def plt0_ranges(path):
    """The file offsets [start, end) of the first entry of an ELF64 file's .plt, PLT0 (the lazy
    resolver's, which a first call goes through): no function's, so a frame there has no name,
    as in perf. The other stubs are named by their GOT slot's relocation, `late_inner@plt`."""
    with open(path, 'rb') as f:
        data = f.read()
    if data[:5] != b'\x7fELF\x02':
        return []
    shoff, = struct.unpack_from('<Q', data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', data, 0x3a)
    secs = [struct.unpack_from('<IIQQQQ', data, shoff + k * shentsize) for k in range(shnum)]
    names_at = secs[shstrndx][4]
    ranges = []
    for name, _type, _flags, _addr, off, size in secs:
        end = data.index(b'\0', names_at + name)
        if data[names_at + name:end] == b'.plt':
            ranges.append((off, off + min(size, 16)))
    return ranges


def last_py_index(frames):
    idx = [i for i, f in enumerate(frames) if kind(f) == 'python']
    return idx[-1] if idx else None


def pct(part, whole):
    return 100.0 * part / whole if whole else 0.0


def show(frames):
    return ';'.join(frames)


def check_frames(profile, kernel=False):
    """Properties of every profile: well-formed frames, kernel frames only with --kernel and
    only as the leaf end, modules as basenames, no eval-loop frame, few interpreter internals."""
    other = kernel_bad = 0
    interp = {}
    for frames, c in profile.stacks:
        kinds = [kind(f) for f in frames]
        if 'other' in kinds:
            other += c
            log('frame of no known form: %r' % frames[kinds.index('other')])
        if 'kernel' in kinds:
            check(kernel, 'a kernel frame without --kernel: %s' % show(frames))
            first = kinds.index('kernel')
            if any(k != 'kernel' for k in kinds[first:]):
                kernel_bad += c
                log('kernel frames not at the leaf end: %s' % show(frames))
        for f in frames:
            check(not re.search(r' \[[^\[\]]*/[^\[\]]*\]$', f),
                  'native frame %r: the module must be the file\'s basename' % f)
            mod = module_of(f)
            check(not name_of(f).startswith('_PyEval_EvalFrameDefault'),
                  'an eval-loop frame was not replaced by Python frames: %s' % show(frames))
            if mod and INTERPRETER_MODULE.match(mod) and not INTERPRETER_KEPT.search(name_of(f)):
                interp[f] = interp.get(f, 0) + c
    check(other <= 0.01 * profile.total,
          '%.1f%% of the weight has frames that are neither Python, native nor kernel'
          % pct(other, profile.total))
    check(kernel_bad == 0, 'kernel frames not at the leaf end (shown above)')
    total_interp = sum(interp.values())
    if interp:
        log('interpreter-internal frames kept (%.1f%% of the weight): %s'
            % (pct(total_interp, profile.total),
               ', '.join('%s (%.1f%%)' % (f, pct(c, profile.total))
                         for f, c in sorted(interp.items(), key=lambda kv: -kv[1])[:8])))
    check(total_interp <= 0.05 * profile.total,
          'interpreter-internal frames in %.1f%% of the weight (--native drops them, except GC '
          'and lock waits)' % pct(total_interp, profile.total))


def merge_failures(run):
    """(failed merges, those of them whose Python stack was read after the sample)."""
    m = re.search(r'(\d+) samples? whose native and Python stacks could not be merged'
                  r'(?: \(kept with their Python frames only; (\d+) of them read after)?',
                  run.stderr)
    return (int(m.group(1)), int(m.group(2) or 0)) if m else (0, 0)


def check_merged(run, limit=0.05):
    """At most limit of the samples fail to merge. A stack read after its sample (no capture
    yet: a launched command's first samples, seen at 188 of 739 samples beside a CPU hog) that
    does not fit is a later one: hwspy keeps its native frames and counts it apart, not as a
    failure (older builds counted it as one, "N of them read after their sample")."""
    n, (bad, late) = run.samples(), merge_failures(run)
    log('merge failures: %d of %d samples (%d of them read late)' % (bad, n, late))
    check(bad - late <= limit * n, '%d of %d samples (%.0f%%) read exactly could not be merged '
          '(at most %.0f%% allowed)' % (bad - late, n, pct(bad - late, n), 100 * limit))


def leaf_only_shape(profile):
    """Without --native: Python frames, then at most one native frame (the leaf)."""
    for frames, c in profile.stacks:
        kinds = [k for k in (kind(f) for f in frames) if k != 'special']
        natives = [i for i, k in enumerate(kinds) if k == 'native']
        check(not natives or natives == [len(kinds) - 1],
              'without --native a stack has native frames other than the leaf: %s'
              % show(frames))


# ---------------------------------------------------------------------------- helpers

def workload(opts):
    return os.path.join(opts.targets, 'native_work.py')


def compile_c(opts, name, out, extra=()):
    cc = shutil.which('cc') or shutil.which('gcc')
    if not cc:
        raise Skip('no C compiler (cc) to build tests/targets/native/%s' % name)
    src = os.path.join(opts.targets, 'native', name)
    argv = [cc, '-O1', '-o', os.path.join(opts.tmp, out)] + list(extra) + [src]
    log('$ %s' % ' '.join(argv))
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, 'cc failed: %s' % r.stderr)
    path = os.path.join(opts.tmp, out)
    os.chmod(path, 0o755)
    return path


def run_result(run):
    """The JSON line a `native_work.py run` workload printed last."""
    lines = run.stdout.splitlines()
    log('workload stdout: %s' % run.stdout.strip())
    check(lines and lines[0] == 'ready' and lines[-1].startswith('{'),
          'the workload did not run to its end under hwspy (stdout %r)' % run.stdout)
    return json.loads(lines[-1])


def mapped(w):
    return w.ask('maps')['maps']


def interrupt(p):
    """Stop a hwspy run that has no -d with SIGINT (it still writes the profile)."""
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
    return harness.finish_record(p, timeout=30)


def weights_below(profile, fn, path):
    """Stacks with a Python frame of `fn` in `path`: [(frames, count, index of its last one)]."""
    out = []
    for frames, c in profile.stacks:
        idx = [i for i, f in enumerate(frames)
               if kind(f) == 'python' and py_frames([f])[0][:2] == (fn, path)]
        if idx:
            out.append((frames, c, idx[-1]))
    return out


def weights_by_python_leaf(profile, fn, path):
    """Stacks whose last Python frame is `fn` of `path`: [(frames, count, index of fn)]."""
    out = []
    for frames, c in profile.stacks:
        i = last_py_index(frames)
        if i is not None:
            name, f, _ = py_frames([frames[i]])[0]
            if name == fn and f == path:
                out.append((frames, c, i))
    return out


# ---------------------------------------------------------------------------- callback

@case
def callback(opts, xopts=()):
    src = workload(opts)
    mk = harness.markers(src)
    run = harness.record(opts, ['--native', '-e', 'cpu-clock', '-F', RATE, '--'] + opts.py.argv +
                         list(xopts) + [src, 'run', 'callback', '1.5'])
    run_result(run)
    profile = run.expect_profile()
    check_frames(profile)
    check_merged(run)

    caller = ('sort_with_callback', src, mk['CALL:qsort'])
    # task_callback() calls sort_with_callback() and nothing else: any other Python frame right
    # below it is a wrong name (e.g. a stale code object cache entry)
    wrong = {}
    for frames, c in profile.stacks:
        pf = py_frames(frames)
        for a, b in zip(pf, pf[1:]):
            if a[:2] == ('task_callback', src) and a[2] == mk['CALL:sort_with_callback'] and \
                    b[:2] != ('sort_with_callback', src):
                wrong[b] = wrong.get(b, 0) + c
    if wrong:
        log('Python frames below task_callback() other than sort_with_callback(): %s'
            % ', '.join('%s (%s:%d) %.1f%%' % (k + (pct(c, profile.total),))
                        for k, c in sorted(wrong.items(), key=lambda kv: -kv[1])))
    check(sum(wrong.values()) <= 0.005 * profile.total,
          'wrong Python frames below task_callback() in %.1f%% of the weight (listed above)'
          % pct(sum(wrong.values()), profile.total))
    cb = weights_by_python_leaf(profile, 'cmp', src)
    cb_weight = sum(c for _, c, _ in cb)
    # samples whose Python stack was read too late to be theirs have none ([python] marks it):
    # the share of cmp() is judged among the others (a busy machine left half of a launch's
    # samples so under -X perf, where hwspy's start is slow)
    unknown = sum(c for frames, c in profile.stacks if '[python]' in frames)
    known = profile.total - unknown
    log('cmp() is the leaf Python frame in %.1f%% of the weight, %.1f%% of the weight with '
        'Python frames ([python], read too late, in %.1f%%)'
        % (pct(cb_weight, profile.total), pct(cb_weight, known), pct(unknown, profile.total)))
    check(cb_weight >= 0.5 * known,
          'cmp() is the leaf Python frame in only %.1f%% of the weight with Python frames (it '
          'burns most of the CPU)' % pct(cb_weight, known))
    good = at_hot = 0
    shown = 0
    for frames, c, i in cb:
        pf = py_frames(frames)
        ok = False
        if pf[-1][2] == mk['HOT:cmp']:
            at_hot += c
        # the Python frame before cmp must be the caller at its qsort line; between them only
        # native frames, among them libc's qsort; after cmp no Python frame (it is the last)
        if len(pf) >= 2 and pf[-2] == caller:
            j = max(k for k in range(i) if kind(frames[k]) == 'python')
            between = frames[j + 1:i]
            ok = (between and all(kind(f) == 'native' for f in between) and
                  any(re.search(r'qsort|msort', name_of(f)) and
                      (module_of(f) or '').startswith('libc.so') for f in between))
        if ok:
            good += c
        elif shown < 3:
            shown += 1
            log('callback stack not outer Python -> native qsort -> cmp: %s' % show(frames))
    log('outer Python -> libc qsort -> cmp in %.1f%% of cmp()\'s weight; cmp at its hot line '
        'in %.1f%%' % (pct(good, cb_weight), pct(at_hot, cb_weight)))
    check(at_hot >= 0.9 * cb_weight, 'cmp() at its hot line %d in only %.1f%% of its weight'
          % (mk['HOT:cmp'], pct(at_hot, cb_weight)))
    check(good >= 0.8 * cb_weight,
          'only %.1f%% of the callback\'s weight reads sort_with_callback (line %d) -> native '
          'frames with libc qsort -> cmp (examples above)' % (pct(good, cb_weight), caller[2]))
    return profile


def callback_shape(frames, i, src, caller):
    """The callback stack frames (cmp() at i) reads caller -> native frames with libc's qsort
    and a libffi frame -> cmp()."""
    pf = py_frames(frames)
    if len(pf) < 2 or pf[-2] != caller:
        return False
    j = max(k for k in range(i) if kind(frames[k]) == 'python')
    between = frames[j + 1:i]
    return bool(between) and all(kind(f) == 'native' for f in between) and \
        any(re.search(r'qsort|msort', name_of(f)) and
            (module_of(f) or '').startswith('libc.so') for f in between) and \
        any((module_of(f) or '').startswith('libffi') for f in between)


@case
def callback_merge(opts):
    src = workload(opts)
    mk = harness.markers(src)
    r = subprocess.run(opts.py.argv + ['-c', 'import ctypes'], capture_output=True, text=True,
                       timeout=60)
    if r.returncode != 0:
        raise Skip('ctypes does not import in %r: %s' % (opts.py, r.stderr.strip()[-200:]))
    caller = ('sort_with_callback', src, mk['CALL:qsort'])
    # launches of 1.5 s (each has its start-up samples, which were the failures) until 300
    # callback samples: a busy machine loses most samples of a launch (ring overflow while
    # hwspy loads symbols)
    bad = cb_samples = cb_weight = good = shown = 0
    for attempt in range(4):
        run = harness.record(opts, ['--native', '-e', 'cpu-clock', '-F', RATE, '--'] +
                             opts.py.argv + [src, 'run', 'callback', '1.5'],
                             name='run%d' % attempt)
        run_result(run)
        profile = run.expect_profile()
        check_frames(profile)
        cb = weights_by_python_leaf(profile, 'cmp', src)
        w = sum(c for _, c, _ in cb)
        # cpu-clock at a fixed rate: every sample weighs about the same
        n_cb = run.samples() * w / profile.total if profile.total else 0
        b, late = merge_failures(run)
        m = re.search(r'(\d+) samples whose Python stack, read after the sample', run.stderr)
        log('launch %d: %d merge failures (%d of them read late) against %.0f callback samples; '
            '%s samples read too late to be given a Python stack'
            % (attempt + 1, b, late, n_cb, m.group(1) if m else 0))
        for frames, c, i in cb:
            if callback_shape(frames, i, src, caller):
                good += c
            elif shown < 5:
                shown += 1
                log('callback stack not outer Python -> qsort -> libffi -> cmp: %s'
                    % show(frames))
        bad, cb_samples, cb_weight = bad + b, cb_samples + n_cb, cb_weight + w
        if cb_samples >= 300:
            break
    log('merge failures: %d against %.0f callback samples (%.2f%%)'
        % (bad, cb_samples, pct(bad, cb_samples)))
    log('outer Python -> libc qsort -> libffi -> cmp in %.2f%% of cmp()\'s weight'
        % pct(good, cb_weight))
    check(cb_samples >= 100, 'only %.0f callback samples in 4 launches: too few to judge 1%%'
          % cb_samples)
    check(bad < 0.01 * cb_samples, '%d merge failures, %.1f%% of the %.0f callback samples '
          '(under 1%% allowed)' % (bad, pct(bad, cb_samples), cb_samples))
    check(cb_weight - good < 0.01 * cb_weight,
          '%.1f%% of the callback\'s weight does not read sort_with_callback (line %d) -> native '
          'frames with libc qsort and libffi -> cmp (examples above; under 1%% allowed)'
          % (pct(cb_weight - good, cb_weight), caller[2]))


@case
def xperf(opts):
    if opts.py.version < (3, 12):
        raise harness.Skip('perf trampolines (-X perf) exist from Python 3.12 on; this is %d.%d'
                           % opts.py.version)
    maps = set(glob.glob('/tmp/perf-*.map'))
    try:
        # the callback case again, under -X perf: each Python call goes through a JIT
        # trampoline without CFI, which the unwinder must step over to reach qsort and the
        # outer frames; the trampolines' py:: names must not show (hwspy reads Python itself)
        profile = callback(opts, ['-X', 'perf'])
        new = set(glob.glob('/tmp/perf-*.map')) - maps
        check(new, 'python -X perf wrote no /tmp/perf-PID.map: were the trampolines on?')
        log('perf map written by the target: %s' % ', '.join(sorted(new)))
        py_jit = sum(c for frames, c in profile.stacks
                     if any(name_of(f).startswith('py::') for f in frames))
        check(py_jit == 0, 'py:: trampoline frames in %.1f%% of the weight'
              % pct(py_jit, profile.total))
    finally:
        for path in set(glob.glob('/tmp/perf-*.map')) - maps:
            os.unlink(path)


# ---------------------------------------------------------------------------- C work

def cwork_expect(info):
    """Module patterns: (hash, zlib)."""
    if info.get('sha256') == 'openssl_sha256':
        hash_mod = r'^libcrypto\.so'
    else:
        hash_mod = r'.'   # a builtin _sha256 / _sha2: its module is the interpreter or _sha2
        log('hashlib.sha256 is %s, not OpenSSL: any native leaf module accepted' % info['sha256'])
    return hash_mod, r'^libz\.so\.1'


def cwork_check(opts, profile, hash_mod, zlib_mod, native):
    src = workload(opts)
    mk = harness.markers(src)
    for fn, line, pat in (('hash_work', mk['CALL:sha256'], hash_mod),
                          ('zlib_work', mk['CALL:compress'], zlib_mod)):
        stacks = weights_by_python_leaf(profile, fn, src)
        w = sum(c for _, c, _ in stacks)
        log('%s is the leaf Python frame in %.1f%% of the weight' % (fn, pct(w, profile.total)))
        check(w >= 0.2 * profile.total, '%s() is the leaf Python frame in only %.1f%% of the '
              'weight (it has about half the CPU time)' % (fn, pct(w, profile.total)))
        good = 0
        shown = 0
        leaves = {}
        for frames, c, i in stacks:
            after = frames[i + 1:]
            leaf = after[-1] if after else None
            if leaf:
                leaves[leaf] = leaves.get(leaf, 0) + c
            ok = (py_frames([frames[i]])[0][2] == line and after and
                  all(kind(f) == 'native' for f in after) and
                  re.search(pat, module_of(leaf) or '') is not None)
            if ok and not native:
                ok = len(after) == 1
            if ok:
                good += c
            elif shown < 3:
                shown += 1
                log('%s stack without a %s leaf below %s:%d: %s' % (fn, pat, fn, line,
                                                                    show(frames)))
        log('%s: the leaf is a native %s frame below line %d in %.1f%% of its weight; leaves: %s'
            % (fn, pat, line, pct(good, w), ', '.join(
                '%s (%.0f%%)' % (f, pct(c, w))
                for f, c in sorted(leaves.items(), key=lambda kv: -kv[1])[:5])))
        check(good >= 0.8 * w, '%s(): a native leaf in %s right below its line %d in only '
              '%.1f%% of its weight (examples above)' % (fn, pat, line, pct(good, w)))
        if native:
            named = sum(c for f, c in leaves.items() if not unnamed(f))
            log('%s: a named native leaf in %.1f%% of its weight, %d distinct leaf frames'
                % (fn, pct(named, w), len(leaves)))


@case
def cwork(opts):
    w = harness.Process(opts.py.argv + [workload(opts), 'serve'])
    w.expect_ready()
    w.send('cwork 3.6')
    p = harness.start_record(opts, ['-p', str(w.pid), '--native', '-e', 'cpu-clock', '-F', RATE,
                                    '-d', '1.2'], name='native')
    native = harness.finish_record(p)
    q = harness.start_record(opts, ['-p', str(w.pid), '-e', 'cpu-clock', '-F', RATE,
                                    '-d', '1.2'], name='leaf')
    leaf = harness.finish_record(q)
    info = json.loads(w.readline(30))
    log('workload: %s' % info)
    harness.check_untouched(w.pid)
    w.quit()
    hash_mod, zlib_mod = cwork_expect(info)

    log('--- with --native')
    profile = native.expect_profile()
    check_frames(profile)
    check_merged(native)
    cwork_check(opts, profile, hash_mod, zlib_mod, native=True)

    log('--- without --native: the leaf native function only')
    profile = leaf.expect_profile()
    check_frames(profile)
    check('could not be merged' not in leaf.stderr,
          'without --native the summary talks about merging')
    leaf_only_shape(profile)
    cwork_check(opts, profile, hash_mod, zlib_mod, native=False)


# ---------------------------------------------------------------------------- late loading

@case
def late(opts):
    lib = compile_c(opts, 'late.c', 'liblate.so', ['-shared', '-fPIC'])
    # -S: no site, so no .pth file imports bz2 (through certifi -> importlib.resources) early
    w = harness.Process(opts.py.argv + ['-S', workload(opts), 'serve'])
    w.expect_ready()
    before = mapped(w)
    early = [m for m in before if 'liblate' in m or 'bz2' in m]
    check(not early, 'the workload loaded %s before hwspy attached: nothing to test' % early)
    p = harness.start_record(opts, ['-p', str(w.pid), '--native', '-e', 'cpu-clock', '-F', RATE,
                                    '-d', '30'])
    check(harness.wait_attached(p.pid, w.pid), 'hwspy did not attach within 15 s')
    time.sleep(0.3)
    info = w.ask('late 1.6 %s' % lib, timeout=60)
    log('workload: %s' % info)
    after = mapped(w)
    libbz2 = [os.path.basename(m) for m in after if os.path.basename(m).startswith('libbz2')]
    log('loaded after attaching: %s' % [os.path.basename(m) for m in after if m not in before])
    check(p.poll() is None, 'hwspy ended early (exit %s)' % p.returncode)
    run = interrupt(p)
    harness.check_untouched(w.pid)
    w.quit()
    profile = run.expect_profile()
    check_frames(profile)
    check_merged(run)

    src = workload(opts)
    # liblate.so: built here with its symbols, so every frame in it has a name
    stacks = weights_by_python_leaf(profile, 'late_work', src)
    lw = sum(c for _, c, _ in stacks)
    check(lw >= 0.2 * profile.total, 'late_work() is the leaf Python frame in only %.1f%% of '
          'the weight (it has about half the CPU)' % pct(lw, profile.total))
    good = unnamed_w = stub_w = shown = 0
    want = ['late_spin [liblate.so]', 'late_outer [liblate.so]', 'late_inner [liblate.so]']
    plt = plt0_ranges(lib)

    def in_plt(frame):
        off = int(name_of(frame).rsplit('+0x', 1)[1], 16)
        return any(lo <= off < hi for lo, hi in plt)

    for frames, c, i in stacks:
        after = list(frames[i + 1:])
        nameless = [f for f in after if unnamed(f) and module_of(f) == 'liblate.so']
        if any(not in_plt(f) for f in nameless):
            unnamed_w += c
        elif nameless:
            stub_w += c         # a sample in PLT0 (late_outer's first call of late_inner)
            log('late_work stack in liblate.so\'s PLT0: %s' % show(frames))
        if after[-3:] == want:
            good += c
        elif shown < 3:
            shown += 1
            log('late_work stack not ending in %s: %s' % (' -> '.join(want), show(frames)))
    log('late_work -> late_spin -> late_outer -> late_inner in %.1f%% of its weight; unnamed '
        'liblate.so frames in %.1f%%' % (pct(good, lw), pct(unnamed_w, lw)))
    check(unnamed_w == 0, 'liblate.so (loaded after attaching, with symbols) has frames without '
          'a name in %.1f%% of late_work\'s weight' % pct(unnamed_w, lw))
    check(good >= 0.8 * lw, 'late_work()\'s stacks end in late_spin -> late_outer -> '
          'late_inner [liblate.so] in only %.1f%% of its weight (examples above)' % pct(good, lw))

    # libbz2: a distribution library (.dynsym only); its exported BZ2_* functions have names
    check(libbz2, 'libbz2 is not mapped in the workload after "import bz2"')
    stacks = weights_below(profile, 'bz2_work', src)     # bz2_work -> bz2.compress -> _bz2
    bw = sum(c for _, c, _ in stacks)
    check(bw >= 0.2 * profile.total, 'bz2_work() is in only %.1f%% of the weight (it has about '
          'half the CPU)' % pct(bw, profile.total))
    named = shown = 0
    for frames, c, i in stacks:
        if any((module_of(f) or '').startswith('libbz2') and not unnamed(f)
               for f in frames[i + 1:]):
            named += c
        elif shown < 3:
            shown += 1
            log('bz2_work stack without a named libbz2 frame: %s' % show(frames))
    log('a named libbz2 frame below bz2_work in %.1f%% of its weight' % pct(named, bw))
    check(named >= 0.8 * bw, 'a named %s frame below bz2_work() in only %.1f%% of its weight '
          '(examples above)' % (libbz2[0], pct(named, bw)))


# ---------------------------------------------------------------------------- C programs

def split_check(profile, prog, measured):
    """The leaf (self) weight of split_heavy / split_light against the measured CPU times."""
    base = os.path.basename(prog)
    heavy, light = 'split_heavy [%s]' % base, 'split_light [%s]' % base
    self_w = {}
    under_main = 0
    for frames, c in profile.stacks:
        check(not any(kind(f) == 'python' for f in frames),
              'a Python frame in the profile of a C program: %s' % show(frames))
        self_w[frames[-1]] = self_w.get(frames[-1], 0) + c
        if frames[-1] in (heavy, light) and 'main [%s]' % base in frames[:-1]:
            under_main += c
    top = sorted(self_w.items(), key=lambda kv: -kv[1])
    log('self weights: %s' % ', '.join('%s %.1f%%' % (f, pct(c, profile.total))
                                       for f, c in top[:6]))
    check(top[0][0] == heavy, 'the largest self weight is %r, not %r' % (top[0][0], heavy))
    # every sample of a C program has at least its user IP: [native] (nothing known) is wrong,
    # also for a sample taken in the kernel (the user registers and stack come with it)
    nothing = self_w.get('[native]', 0)
    check(nothing <= 0.005 * profile.total, '[native] (no frame at all) has %.1f%% of the weight '
          'of a C program profiled with --native' % pct(nothing, profile.total))
    both = self_w.get(heavy, 0) + self_w.get(light, 0)
    check(both >= 0.8 * profile.total, 'split_heavy and split_light are the leaf in only '
          '%.1f%% of the weight' % pct(both, profile.total))
    check(under_main >= 0.9 * both, 'main [%s] is above them in only %.1f%% of their weight'
          % (base, pct(under_main, both)))
    harness.compare_shares({'split_heavy': measured[0], 'split_light': measured[1]},
                           {'split_heavy': self_w.get(heavy, 0),
                            'split_light': self_w.get(light, 0)}, 10.0, 'function')


@case
def cprog(opts):
    prog = compile_c(opts, 'split.c', 'split')
    log('--- launched')
    run = harness.record(opts, ['--native', '-e', 'cpu-clock', '-F', RATE, '--', prog, '1.5'])
    out = run.stdout.split()
    check(len(out) == 2, 'the program printed %r, not "heavy_ns light_ns"' % run.stdout)
    profile = run.expect_profile()
    check_frames(profile)
    split_check(profile, prog, [int(x) for x in out])

    log('--- attached')
    w = harness.Process([prog, '1.2', 'wait'])
    w.expect_ready()
    p = harness.start_record(opts, ['-p', str(w.pid), '--native', '-e', 'cpu-clock', '-F', RATE],
                             name='attached')
    check(harness.wait_attached(p.pid, w.pid), 'hwspy did not attach within 15 s')
    w.send('go')
    out = w.readline(30).split()
    check(len(out) == 2, 'the program printed %r, not "heavy_ns light_ns"' % out)
    check(w.p.wait(10) == 0, 'the program exited %s' % w.p.returncode)
    run = harness.finish_record(p, timeout=30)
    profile = run.expect_profile()
    check_frames(profile)
    split_check(profile, prog, [int(x) for x in out])


def expect_error(run, words):
    check(run.rc is not None and 0 < run.rc < 128,
          'hwspy exited %s, expected a non-zero exit status (and no crash)' % run.rc)
    lines = [l for l in run.stderr.splitlines() if l.startswith('hwspy: ')]
    good = [l for l in lines if all(w.lower() in l.lower() for w in words)]
    check(good, 'no "hwspy: " line on stderr contains %s' % ' and '.join(map(repr, words)))
    log('error message: %s' % good[0])
    check(not (os.path.exists(run.out_path) and os.path.getsize(run.out_path) > 0),
          'hwspy failed but wrote a profile %s' % run.out_path)


@case
def not_python(opts):
    prog = compile_c(opts, 'split.c', 'split')
    log('--- launched')
    run = harness.record(opts, ['-e', 'cpu-clock', '--', prog, '0.3'], timeout=30)
    expect_error(run, ['--native'])
    log('--- attached')
    w = harness.Process([prog, '30', 'wait'])
    w.expect_ready()
    run = harness.record(opts, ['-p', str(w.pid), '-d', '1'], name='attached', timeout=30)
    expect_error(run, ['not a Python process', '--native'])
    harness.check_untouched(w.pid, 'the C program')


# ---------------------------------------------------------------------------- kernel frames

def kernel_check(opts, profile, native):
    src = workload(opts)
    stacks = weights_by_python_leaf(profile, 'read_zero', src)
    rw = sum(c for _, c, _ in stacks)
    check(rw >= 0.5 * profile.total, 'read_zero() is the leaf Python frame in only %.1f%% of '
          'the weight' % pct(rw, profile.total))
    kw = sum(c for frames, c, _ in stacks if frames[-1].endswith('_[k]'))
    leaves = {}
    for frames, c, _ in stacks:
        if frames[-1].endswith('_[k]'):
            leaves[frames[-1]] = leaves.get(frames[-1], 0) + c
    log('kernel leaf below read_zero in %.1f%% of its weight: %s' % (pct(kw, rw), ', '.join(
        '%s (%.0f%%)' % (f, pct(c, rw)) for f, c in sorted(leaves.items(),
                                                           key=lambda kv: -kv[1])[:5])))
    check(kw >= 0.3 * rw, 'kernel frames (`name_[k]`) at the leaf of read_zero()\'s stacks in '
          'only %.1f%% of its weight (reading /dev/zero is mostly kernel time)' % pct(kw, rw))
    if native:
        # in a syscall the user stack is still there: read_zero -> libc's read -> kernel
        libc = sum(c for frames, c, i in stacks if frames[-1].endswith('_[k]') and
                   any((module_of(f) or '').startswith('libc.so') for f in frames[i + 1:]))
        log('a libc frame between read_zero and the kernel frames in %.1f%% of the kernel-leaf '
            'weight' % pct(libc, kw))
        if libc < 0.8 * kw:
            log('example: %s' % show(next(f for f, c, i in stacks if f[-1].endswith('_[k]'))))
        check(libc >= 0.8 * kw, 'with --native, libc\'s read frame (user stack) between '
              'read_zero() and the kernel frames in only %.1f%% of the kernel-leaf weight'
              % pct(libc, kw))


@case
def kernel(opts):
    if os.geteuid() != 0:
        raise Skip('needs root (or CAP_PERFMON) for kernel samples')
    py = harness.any_python(opts)
    w = harness.Process(py.argv + [workload(opts), 'serve'])
    w.expect_ready()
    w.send('syscalls 3.6')
    runs = []
    for name, extra in (('native', ['--native']), ('plain', [])):
        p = harness.start_record(opts, ['-p', str(w.pid), '--kernel', '-e', 'cpu-clock', '-F',
                                        RATE, '-d', '1.2'] + extra, name=name)
        runs.append((name, harness.finish_record(p)))
    log('workload: %s' % w.readline(30))
    harness.check_untouched(w.pid)
    w.quit()
    for name, run in runs:
        log('--- --kernel %s' % ('--native' if name == 'native' else 'without --native'))
        profile = run.expect_profile()
        check_frames(profile, kernel=True)
        if name == 'plain':
            for frames, c in profile.stacks:
                user = [f for f in frames if kind(f) not in ('kernel', 'special')]
                natives = [i for i, f in enumerate(user) if kind(f) == 'native']
                check(not natives or natives == [len(user) - 1],
                      'without --native a stack has native frames other than the user leaf: '
                      '%s' % show(frames))
        kernel_check(opts, profile, name == 'native')


@case
def kernel_nobody(opts):
    if os.geteuid() != 0:
        raise Skip('needs root, to run hwspy as nobody')
    with open('/proc/sys/kernel/perf_event_paranoid') as f:
        paranoid = int(f.read())
    if paranoid < 2:
        raise Skip('perf_event_paranoid is %d: unprivileged users may sample the kernel here'
                   % paranoid)
    prefix, exe = harness.as_nobody(opts)
    script = os.path.join(opts.tmp, 'native_work.py')
    shutil.copy(workload(opts), script)
    os.chmod(script, 0o644)
    py = harness.any_python(opts)
    # nobody may profile its own command in user space (cpu-clock:u): hwspy works as nobody
    log('--- as nobody without --kernel (user space only): works')
    run = harness.record(opts, ['-e', 'cpu-clock:u', '--'] + py.argv +
                         [script, 'run', 'syscalls', '0.3'], name='nobody/user', timeout=30,
                         prefix=prefix, hwspy=exe)
    run.expect_profile()
    log('--- as nobody with --kernel: refused, and the message says why')
    run = harness.record(opts, ['--kernel', '-e', 'cpu-clock', '--'] + py.argv +
                         [script, 'run', 'syscalls', '0.3'], name='nobody/out', timeout=30,
                         prefix=prefix, hwspy=exe)
    lines = [l for l in run.stderr.splitlines() if l.startswith('hwspy: ')]
    why = [l for l in lines if re.search(r'perf_event_paranoid|CAP_PERFMON', l)]
    check(why, 'hwspy --kernel as nobody (perf_event_paranoid %d) said nothing about '
          'perf_event_paranoid or CAP_PERFMON (exit %s)' % (paranoid, run.rc))
    log('message: %s' % why[0])
    check(not re.search(r'\bpid 0\b', why[0]), 'the message names "pid 0": a launched command '
          'has a real pid (or name the command)')
    if run.rc == 0:
        # it went on without kernel frames: then the profile must have none
        profile = run.expect_profile()
        check(not any(f.endswith('_[k]') for fr, _ in profile.stacks for f in fr),
              'kernel frames in a profile recorded by nobody under perf_event_paranoid %d'
              % paranoid)
    else:
        check(run.rc < 128, 'hwspy exited %d: looks like a crash' % run.rc)


def test(opts):
    needs_python = opts.case in ('callback', 'callback-merge', 'cwork', 'late', 'xperf')
    check(bool(opts.python) == needs_python,
          '--case %s %s --python' % (opts.case, 'needs' if needs_python else 'takes no'))
    CASES[opts.case](opts)


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--case', choices=sorted(CASES), required=True)
    harness.main(test, p)

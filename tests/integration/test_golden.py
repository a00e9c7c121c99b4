"""Output identity (issue 20: "every command's output stays byte for byte what it is today on the
same input"): the build under test against goldens the build before the change wrote.

Offline, byte for byte (tests/golden/inputs/, recorded once by hwspy record from
tests/golden/work.py, plus other-tools.folded written by hand and hw-events.pb.gz built with
pprof_build.py: threads, several events, Python/native/kernel/[wait: ...]/[gc] frames,
non-ASCII and hostile names `<&"'>`):
  - `hwspy convert` of every input to folded, SVG, speedscope and pprof, and with --weight,
    --title, --icicle, --min-width, --color-by (page-faults/cpu-clock, ipc, mpki), from
    standard input to standard output;
  - `hwspy diff` of two inputs to the table, SVG and folded, with --no-normalize,
    --ignore-lines, --negate, --top, --weight;
  - the refusals' words and exit statuses (a malformed line, a file of another kind, an event
    the input lacks, no shared event), and every case's exit status and stderr, in
    expected/status.txt.
  Each runs in a temporary directory holding copies of the inputs, named relatively, so no
  path of this machine enters an output. Normalized before comparing: `hwspy X.Y.Z` (the build's
  --version: SVG comment, speedscope exporter, pprof comment) reads `hwspy VERSION`. pprof
  outputs are compared gunzipped, decoded field by field (every field number, wire type and
  value in file order, nested messages by profile.proto's schema, packed and unpacked
  repeated fields told apart) into expected/*.pb.txt: equal dumps mean equal protobuf bytes
  up to the version string; the 10-byte gzip header (mtime 0) is the dump's first line.

Live (a target whose state is known; numbers and ids vary from run to run), on Debian's
/usr/bin/python3.11 (always installed on CI), tests/golden/live_target.py:
  - `hwspy dump --json` of threads blocked in known calls: the key tree (every key path, its
    JSON types, array elements merged) and the stable values (command, threads by name: GIL,
    state, error, frames with file and line, how each was read, the raw JSON of each name);
    pid, tids and times masked. Dump's wait WORDS are left out on purpose (their type is in
    the key tree): issue 20's one wait table may change them (dump's words came from syscall
    numbers, --off-cpu's from kernel symbols). The text dump likewise, tids and times masked, each
    thread's wait words replaced by WAIT, its thread blocks sorted by name.
  - `hwspy stat -e page-faults,task-clock -d 1 --json -p PID` of a page toucher: the key tree
    and the stable values (events, counted, split; thread names; finding ids with their
    metric, comparison, threshold, unit, meaning, advice, event, first function; not
    measured), numbers masked.

On a mismatch it prints a unified diff of the first lines that differ, for each output that
differs, and fails. tests/golden/regen.sh rewrites the goldens (for a deliberate change only).
"""
import difflib
import gzip
import json
import os
import re
import shutil
import subprocess
import time

import harness
import pythons
from harness import Fail, Skip, check, log

INPUTS = ['cpu-threads.folded', 'after.folded', 'offcpu-kernel.folded', 'other-tools.folded',
          'faults-native.pb.gz', 'wall.pb.gz', 'hw-events.pb.gz']
FORMATS = {'folded': 'folded', 'svg': 'svg', 'speedscope': 'speedscope.json', 'pprof': 'pb.gz'}


def stem(name):
    return name.split('.')[0]


def cases():
    """[(case name, argv after 'hwspy', output file or None for stdout, stdin file or None)]"""
    out = []
    for inp in INPUTS:
        for fmt, ext in FORMATS.items():
            o = '%s.%s' % (stem(inp), ext)
            out.append(('convert-%s-%s' % (stem(inp), fmt), ['convert', inp, '-o', o], o, None))
    svg_opts = [
        ('cpu-threads', 'title-icicle-minwidth', ['--title', 'T <&> "é" \'x\'', '--icicle',
                                                   '--min-width', '2']),
        ('offcpu-kernel', 'minwidth', ['--min-width', '5']),
        ('faults-native', 'weight', ['--weight', 'cpu-clock']),
        ('faults-native', 'colorby', ['--color-by', 'page-faults/cpu-clock']),
        ('hw-events', 'ipc', ['--color-by', 'ipc']),
        ('hw-events', 'mpki', ['--color-by', 'mpki', '--weight', 'instructions']),
        ('hw-events', 'ratio', ['--color-by', 'cache-misses/instructions', '--icicle']),
    ]
    for s, variant, args in svg_opts:
        inp = [i for i in INPUTS if stem(i) == s][0]
        o = '%s-%s.svg' % (s, variant)
        out.append(('convert-%s-svg-%s' % (s, variant), ['convert', inp, '-o', o] + args, o, None))
    out.append(('convert-faults-native-folded-weight',
                ['convert', 'faults-native.pb.gz', '-o', 'fn-w.folded', '--weight', 'cpu-clock'],
                'fn-w.folded', None))
    out.append(('convert-hw-events-folded-weight',
                ['convert', 'hw-events.pb.gz', '-o', 'hw-w.txt', '--weight', 'cache-misses'],
                'hw-w.txt', None))
    out.append(('convert-stdin-format', ['convert', '-', '-o', '-', '--format', 'speedscope'],
                None, 'other-tools.folded'))
    out.append(('convert-stdin-pprof', ['convert', '-', '-o', '-', '--format', 'folded'],
                None, 'wall.pb.gz'))
    # diff
    ba = ['cpu-threads.folded', 'after.folded']
    out += [
        ('diff-table', ['diff'] + ba, None, None),
        ('diff-table-raw', ['diff'] + ba + ['--no-normalize', '--ignore-lines', '--top', '5'],
         None, None),
        ('diff-svg', ['diff'] + ba + ['-o', 'd.svg'], 'd.svg', None),
        ('diff-svg-negate', ['diff'] + ba + ['-o', 'dn.svg', '--negate', '--title', 'x<y>',
                                             '--icicle'], 'dn.svg', None),
        ('diff-folded', ['diff'] + ba + ['-o', 'd.folded'], 'd.folded', None),
        ('diff-folded-ignore-lines', ['diff'] + ba + ['-o', 'dl.folded', '--ignore-lines'],
         'dl.folded', None),
        ('diff-pprof-table', ['diff', 'hw-events.pb.gz', 'hw-events.pb.gz', '--weight',
                              'instructions'], None, None),
    ]
    # refusals: words and exit status (status.txt)
    with_err = [
        ('error-not-folded', ['convert', 'd.svg', '-o', 'e.folded']),
        ('error-not-folded-json', ['convert', 'cpu-threads.speedscope.json', '-o', 'e.folded']),
        ('error-malformed', ['convert', 'bad.folded', '-o', 'e.folded']),
        ('error-colorby-missing', ['convert', 'cpu-threads.folded', '-o', 'e.svg',
                                   '--color-by', 'ipc']),
        ('error-weight-missing', ['convert', 'wall.pb.gz', '-o', 'e.svg', '--weight', 'cycles']),
        ('error-diff-no-shared', ['diff', 'wall.pb.gz', 'hw-events.pb.gz']),
        ('error-diff-colorby', ['diff'] + ba + ['--color-by', 'ipc', '-o', 'e.svg']),
    ]
    out += [(n, a, None, None) for n, a in with_err]
    return out


# ---------------------------------------------------------------------------- normalizing

def version_of(hwspy):
    p = subprocess.run([hwspy, '--version'], capture_output=True, text=True, timeout=30)
    m = re.match(r'hwspy (\S+)', p.stdout.strip())
    check(p.returncode == 0 and m, 'hwspy --version: %r' % p.stdout)
    return m.group(0)


def norm_text(text, version):
    return text.replace(version, 'hwspy VERSION')


# profile.proto: field number -> nested message type, per message; PACKED: repeated scalars
SCHEMA = {
    'Profile': {1: 'ValueType', 2: 'Sample', 3: 'Mapping', 4: 'Location', 5: 'Function',
                11: 'ValueType'},
    'Sample': {3: 'Label'},
    'Location': {4: 'Line'},
    'ValueType': {}, 'Mapping': {}, 'Function': {}, 'Line': {}, 'Label': {},
}
PACKED = {('Sample', 1), ('Sample', 2), ('Profile', 13)}


def _varint(buf, i):
    n = shift = 0
    while True:
        check(i < len(buf), 'pprof: truncated varint')
        b = buf[i]
        i += 1
        n |= (b & 0x7f) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def _decode(buf, kind, depth, lines, version):
    i = 0
    pad = '  ' * depth
    while i < len(buf):
        key, i = _varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(buf, i)
            lines.append('%s%d:varint %d' % (pad, field, v))
        elif wire == 1 or wire == 5:
            size = 8 if wire == 1 else 4
            lines.append('%s%d:fixed%d %s' % (pad, field, size * 8, buf[i:i + size].hex()))
            i += size
        elif wire == 2:
            n, i = _varint(buf, i)
            body = bytes(buf[i:i + n])
            check(len(body) == n, 'pprof: truncated field %d' % field)
            i += n
            sub = SCHEMA.get(kind, {}).get(field)
            if sub:
                lines.append('%s%d:%s {' % (pad, field, sub))
                _decode(body, sub, depth + 1, lines, version)
                lines.append('%s}' % pad)
            elif (kind, field) in PACKED:
                vals, j = [], 0
                while j < len(body):
                    v, j = _varint(body, j)
                    vals.append(str(v))
                lines.append('%s%d:packed [%s]' % (pad, field, ' '.join(vals)))
            else:
                text = body.decode('utf-8', 'backslashreplace')
                lines.append('%s%d:bytes %s' % (pad, field, json.dumps(norm_text(text, version),
                                                                      ensure_ascii=False)))
        else:
            raise Fail('pprof: wire type %d at field %d' % (wire, field))


def pprof_dump(data, version):
    """The decoded text of a gzipped pprof file (see the module doc)."""
    check(data[:2] == b'\x1f\x8b', 'pprof output is not gzipped')
    lines = ['gzip header %s' % data[:10].hex()]
    _decode(gzip.decompress(data), 'Profile', 0, lines, version)
    return '\n'.join(lines) + '\n'


def expected_name(case, out):
    if out is None:
        return case + '.out'
    if out.endswith('.pb.gz'):
        return case + '.pb.txt'
    return case + '.' + out.split('.', 1)[1]


# ---------------------------------------------------------------------------- offline cases

def run_offline(opts, work, version):
    """{expected file name: text} for every offline case, and status.txt."""
    got, status = {}, []
    for case, argv, out, stdin in cases():
        full = [opts.hwspy] + argv
        with open(os.path.join(work, stdin), 'rb') if stdin else open(os.devnull, 'rb') as f:
            p = subprocess.run(full, cwd=work, stdin=f, capture_output=True, timeout=60)
        err = norm_text(p.stderr.decode('utf-8', 'backslashreplace'), version)
        status.append('%s: hwspy %s -> exit %d\n' % (case, ' '.join(argv), p.returncode) +
                      ''.join('  stderr: %s\n' % l for l in err.splitlines()))
        if case.startswith('error-'):
            continue
        if out is None:
            data = p.stdout
        else:
            path = os.path.join(work, out)
            if not os.path.exists(path):
                got[expected_name(case, out)] = '(no output: exit %d)\n' % p.returncode
                continue
            with open(path, 'rb') as f:
                data = f.read()
        if out and out.endswith('.pb.gz') or data[:2] == b'\x1f\x8b':
            text = pprof_dump(data, version)
        else:
            text = norm_text(data.decode('utf-8', 'backslashreplace'), version)
        got[expected_name(case, out)] = text
    got['status.txt'] = ''.join(status)
    return got


# ---------------------------------------------------------------------------- live cases

def jtype(v):
    if v is None:
        return 'null'
    if isinstance(v, bool):
        return 'bool'
    if isinstance(v, (int, float)):
        return 'number'
    if isinstance(v, str):
        return 'string'
    if isinstance(v, list):
        return 'array'
    return 'object'


def key_tree(v, path, tree):
    """tree: {key path: set of JSON types}; array elements merged under PATH[]."""
    tree.setdefault(path or '.', set()).add(jtype(v))
    if isinstance(v, dict):
        for k, x in v.items():
            key_tree(x, path + '.' + k, tree)
    elif isinstance(v, list):
        for x in v:
            key_tree(x, path + '[]', tree)
    return tree


def tree_text(d):
    tree = key_tree(d, '', {})
    return ''.join('%s %s\n' % (k, '|'.join(sorted(t))) for k, t in sorted(tree.items()))


def raw_names(raw):
    """The raw JSON text of every "name" value, as the build escaped it."""
    return sorted(set(re.findall(r'"name":\s*("(?:[^"\\]|\\.)*")', raw)))


def live_dump(opts, py, src, version):
    proc = harness.Process(py.argv + ['-S', os.path.join(src, 'tests', 'golden',
                                                         'live_target.py'), 'dump'])
    proc.expect_ready()
    # every thread blocked in its call (state S) before the dump: the main thread goes back to
    # its read after 'ready', a loaded machine may be slow to get the others there
    end = time.monotonic() + 10
    while time.monotonic() < end:
        states = []
        for tid in os.listdir('/proc/%d/task' % proc.pid):
            try:
                with open('/proc/%d/task/%s/stat' % (proc.pid, tid)) as f:
                    states.append(f.read().rsplit(')', 1)[1].split()[0])
            except OSError:
                pass
        if len(states) == 8 and all(st == 'S' for st in states):
            break
        time.sleep(0.05)
    else:
        raise Fail('the dump target\'s 8 threads were not all blocked after 10 s: %s' % states)
    time.sleep(0.1)
    norm = lambda s: s.replace(src, '<SRC>')
    p = subprocess.run([opts.hwspy, 'dump', '-p', str(proc.pid), '--json'], capture_output=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    t = subprocess.run([opts.hwspy, 'dump', '-p', str(proc.pid)], capture_output=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    harness.check_untouched(proc.pid)
    proc.quit()
    raw = p.stdout.decode('utf-8', 'backslashreplace')
    try:
        d = json.loads(raw)
    except ValueError:
        raise Fail('hwspy dump --json printed no JSON (exit %d): %r %r'
                   % (p.returncode, raw[:400], p.stderr[:400]))
    values = {
        'exit': p.returncode, 'stderr': norm_text(p.stderr.decode('utf-8', 'replace'), version),
        'command': norm(d.get('command', '')), 'python.path': (d.get('python') or {}).get('path'),
        'stopped': d.get('stopped'), 'read': d.get('read'),
        'raw names': raw_names(raw),
        'threads': sorted(({'name': x.get('name'), 'gil': x.get('gil'), 'state': x.get('state'),
                            'error': x.get('error'), 'frames_cut': x.get('frames_cut'),
                            'read': x.get('read'),
                            'frames': ['%s (%s:%s)' % (f.get('function'), norm(f.get('file', '')),
                                                       f.get('line'))
                                       for f in x.get('frames') or []]}
                           for x in d.get('threads') or []), key=lambda x: str(x['name'])),
    }
    # the text form: tids, pid, times and wait words masked, thread blocks sorted by name
    text = norm(t.stdout.decode('utf-8', 'backslashreplace'))
    head, *blocks = text.split('\n\n')
    head = re.sub(r'^Process \d+:', 'Process PID:', head)
    head = re.sub(r'(Python v\d+\.\d+)\.\d+', r'\1.X', head)
    head = re.sub(r'stopped for [\d.]+ ms', 'stopped for N ms', head)
    blocks = sorted(re.sub(r'^Thread \d+ \((.*)\)( holds the GIL,)? (running|waiting: .*):$',
                           lambda m: 'Thread TID (%s)%s %s:' % (
                               m[1], m[2] or '', 'running' if m[3] == 'running' else
                               'waiting: WAIT'), b.strip('\n'), flags=re.M)
                    for b in blocks if b.strip())
    text = 'exit %d\n%s\n\n%s\n' % (t.returncode, head, '\n\n'.join(blocks))
    return {'live-dump-keys.txt': tree_text(d),
            'live-dump-values.json': json.dumps(values, indent=1, ensure_ascii=False) + '\n',
            'live-dump-text.txt': text}


def live_stat(opts, py, src, version):
    proc = harness.Process(py.argv + ['-S', os.path.join(src, 'tests', 'golden',
                                                         'live_target.py'), 'stat'])
    proc.expect_ready()
    argv = [opts.hwspy, 'stat', '-e', 'page-faults,task-clock', '-d', '1', '--json', '-p',
            str(proc.pid)]
    log('$ ' + ' '.join(argv))
    p = subprocess.run(argv, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    proc.kill()
    raw = p.stdout.decode('utf-8', 'backslashreplace')
    err = p.stderr.decode('utf-8', 'replace')
    try:
        d = json.loads(raw)
    except ValueError:
        raise Fail('hwspy stat --json printed no JSON (exit %d): %r %r' % (p.returncode, raw[:400],
                                                                          err[:400]))
    norm = lambda s: s.replace(src, '<SRC>') if isinstance(s, str) else s
    values = {
        'exit': p.returncode,
        'stderr': re.sub(r'\bpid \d+', 'pid PID', err),
        'hwspy_stat': d.get('hwspy_stat'),
        'target': re.sub(r'\bpid \d+', 'pid PID', d.get('target', '')),
        'user_space_only': d.get('user_space_only'), 'sampled': d.get('sampled'),
        'events': [{k: e.get(k) for k in ('name', 'counted', 'split', 'why')}
                   for e in d.get('events') or []],
        'threads': sorted(t.get('name') for t in d.get('threads') or []),
        'findings': [{'id': f.get('id'), 'metric': f.get('metric'),
                      'comparison': f.get('comparison'), 'threshold': f.get('threshold'),
                      'unit': f.get('unit'), 'meaning': f.get('meaning'),
                      'advice': f.get('advice'), 'event': f.get('event'),
                      'first function': norm((f.get('functions') or [{}])[0].get('function'))}
                     for f in d.get('findings') or []],
        'not_measured': d.get('not_measured'),
    }
    return {'live-stat-keys.txt': tree_text(d),
            'live-stat-values.json': json.dumps(values, indent=1, ensure_ascii=False) + '\n'}


# ---------------------------------------------------------------------------- comparing

def compare(got, golden_dir):
    """Names of the outputs that differ from their golden (a unified diff printed for each)."""
    bad = []
    expected = set(os.listdir(golden_dir))
    for name in sorted(set(got) | expected):
        if name not in got:
            continue        # a part not run here (the live part when skipped)
        path = os.path.join(golden_dir, name)
        if name not in expected:
            log('=== %s: no golden (a new output? tests/golden/regen.sh)' % name)
            bad.append(name)
            continue
        with open(path, encoding='utf-8', errors='backslashreplace') as f:
            want = f.read()
        if want == got[name]:
            continue
        bad.append(name)
        diff = list(difflib.unified_diff(want.splitlines(), got[name].splitlines(),
                                         'golden/' + name, 'build/' + name, n=2, lineterm=''))
        log('=== %s differs from its golden:' % name)
        for line in diff[:40]:
            log(line if len(line) <= 400 else line[:400] + '...')
        if len(diff) > 40:
            log('... (%d more diff lines)' % (len(diff) - 40))
    return bad


def test(opts):
    opts.hwspy = os.path.abspath(opts.hwspy)
    src = os.path.realpath(opts.source_root)
    gold = os.path.join(src, 'tests', 'golden')
    version = version_of(opts.hwspy)
    work = os.path.join(opts.tmp, 'work')
    os.mkdir(work)
    for name in INPUTS:
        shutil.copy(os.path.join(gold, 'inputs', name), work)
    with open(os.path.join(work, 'bad.folded'), 'w') as f:
        f.write('a;b 3\na;b three\n')
    got = run_offline(opts, work, version)
    skipped = None
    try:
        py = pythons.get('debian311', src)
    except pythons.Missing as e:
        py, skipped = None, str(e)
    if py:
        got.update(live_dump(opts, py, src, version))
        got.update(live_stat(opts, py, src, version))
    if opts.regen:
        out = os.path.join(gold, 'expected')
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        for name, text in got.items():
            with open(os.path.join(out, name), 'w', encoding='utf-8') as f:
                f.write(text)
        log('wrote %d goldens to %s' % (len(got), out))
        check(not skipped, 'the live goldens were not written: %s' % skipped)
        return
    bad = compare(got, os.path.join(gold, 'expected'))
    log('%d outputs compared, %d differ' % (len(got), len(bad)))
    check(not bad, 'outputs differ from their goldens: %s' % ', '.join(bad))
    if skipped:
        raise Skip('offline outputs identical; live ones (dump, stat) not run: %s' % skipped)


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--regen', action='store_true',
                   help='write the goldens from this build instead (tests/golden/regen.sh)')
    harness.main(test, p)

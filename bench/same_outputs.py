#!/usr/bin/python3
"""Do two hwspy binaries write the same outputs? For a refactor: OLD (before) against NEW (after).

    /usr/bin/python3 bench/same_outputs.py OLD_HWSPY NEW_HWSPY [--convert-only | --record-only]

convert and diff (deterministic: compared byte for byte)
    Inputs, made once and given to both binaries by the same absolute path: bench/outputs.py's
    synthetic folded file (--stacks distinct stacks, 10 x as many samples) and a changed copy of
    it (dropped, rescaled, moved and new stacks); tests/integration/test_outputs.py's fixed
    folded lines (HOSTILE, PERF, PYSPY, ROUNDTRIP) and test_diff.py's austin / py-spy pair; two
    pprof files written here (hwspy's comments, three sample types, thread labels, mappings with
    and without a build-id, inlined lines, kernel, thread and unsymbolized frames; and a plain
    one without hwspy's comments), with a changed copy; and OLD's own pprof conversions of the
    folded inputs. `convert` runs to every format (by name: .folded .txt .svg .speedscope.json
    .pb.gz .pprof; by -f; to standard output; from standard input) with --weight, --title,
    --icicle, --min-width and -v (its timings masked); `diff` writes its table (standard output,
    .txt), .folded and .svg with --no-normalize, --ignore-lines, --negate, --top, --weight,
    --force, --title, --icicle, --min-width; and the failures (missing or bad input, unknown
    event or format, unrelated profiles) are run too. Each binary runs in a directory of its own
    with the same relative output names; compared: exit status, standard output, standard error,
    the set of files left and each file's bytes (gzip files: the compressed bytes, and the
    inflated bytes as a case of their own, so a header-only change shows as such).

record (sampling is not deterministic: a normalised comparison)
    One interpreter (--python, an id of tests/integration/pythons.py; default the first of
    py312, py311, debian311, py313, py38 installed). Each case records OLD, NEW, OLD again,
    attached (-p PID -d --seconds) to one target started for all the cases that use it, so
    that its calibration is the same for all their runs:
      default, --nonblocking, --ptrace (--stop-budget 100, as test_shares.py), -e cpu-clock
          -F 999, on tests/targets/shares.py serve (five functions burning 30, 25, 20, 15, 10%
          of the CPU through fixed stacks); default to .folded, .svg, .speedscope.json, .pb.gz
      --threads on tests/targets/threads.py (two busy threads), .folded and .speedscope.json
      --native on tests/targets/native_work.py serve running cwork (sha256 and zlib, ~50/50),
          .folded and .pb.gz (mappings, build-ids)
      -e page-faults on tests/targets/faults.py 256 4000 (touch_pages: nearly every fault)
    Frames are masked (thread ids, absolute addresses, perf-PID.map; a module's +0xOFFSET is
    kept) and each stack's share of the run's total weight taken (SVG: each frame path's
    inclusive share of the root); a stack with >= MIN_SHARE % in any of the three runs is
    heavy. NEW differs when a heavy stack has no weight at all on one side, or when its share
    in NEW lies outside [min OLD - tol, max OLD + tol], tol from TOLERANCE (measured with
    --noise: see there). Also compared: the weight per sample (the summary's) within 5%, and a
    folded file's total against the summary's weight; exactly, what is deterministic apart
    from counts, times and ids: the SVG outside its frames (numbers masked) and each heavy
    frame path's fill; speedscope's key paths and value types, exporter, units and profile
    names (numbers masked); pprof's top-level fields (but the mappings: there only when a
    sample had a native frame), sample, period and default types, label keys, comments
    (numbers masked) and which mappings carry a build-id; the summary lines on standard
    error (numbers masked): those both OLD runs print must be in NEW's (a line NEW
    prints and neither OLD run does is noted, not counted: most say a count only when it is
    not 0, and come and go run to run). Then OLD's recorded folded and pprof files are
    converted by both binaries, and OLD's recording diffed against NEW's by both, byte for
    byte as above.

One line per case: "same" or "DIFFERENT" and why; exit status 1 on any difference, 2 on a usage
error or when a case could not run. ~1.5-2.5 min on a 2-vCPU VM (--seconds per recording).
"""
import argparse
import gzip
import html
import importlib.util
import itertools
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TARGETS = os.path.join(ROOT, 'tests', 'targets')
sys.path[:0] = [os.path.join(ROOT, 'tests', 'integration'),
                os.path.join(ROOT, 'tests', 'unit', 'output')]
import pythons        # noqa: E402
import test_diff      # noqa: E402
import test_outputs   # noqa: E402

MIN_SHARE = 2.0       # percent: a heavier stack is compared
# Percentage points a heavy stack's share in NEW may lie outside the range of OLD's two runs.
# Measured with --noise (OLD against itself: 5, 6 and 8 runs per case, py312, 1.5 s, on a
# 2-vCPU VM with other work at load 1.7-5): how far one run's share of a heavy stack fell
# outside the range of two other runs, the worst over stacks, triples and cases of the mode:
#   default 1.90 (folded 1.59, svg 1.77, speedscope 1.70, pprof 1.90), nonblocking 6.56 (one
#   run of 8 gave calculé 15.3% against 8.4-10.0%; 3.2 and 5.4 in the other sessions), ptrace
#   1.68, threads 3.53, native 4.74 (pprof; folded 1.95), page-faults 0 (one stack, 100%).
# Each tolerance is 1.5 x that worst, rounded up to half a point, at least 2.
TOLERANCE = {
    'default': 3.0, 'nonblocking': 10.0, 'ptrace': 3.0, 'threads': 5.5, 'native': 7.5,
    'page-faults': 2.0,
}


class Report:
    def __init__(self):
        self.n = self.bad = self.errors = 0

    def error(self, what, msg):
        """A case that could not be compared (OLD itself failed)."""
        self.n += 1
        self.errors += 1
        print('ERROR     %s: %s' % (what, msg), flush=True)

    def line(self, what, problems, notes=()):
        self.n += 1
        if problems:
            self.bad += 1
            print('DIFFERENT %s: %s' % (what, '; '.join(problems)), flush=True)
        else:
            print('same      %s' % what, flush=True)
        for n in notes:
            print('          note: %s' % n, flush=True)


def first_difference(a, b):
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def bytes_problem(what, a, b):
    """None when a == b, else a short description."""
    if a == b:
        return None
    i = first_difference(a, b)
    return '%s: %d vs %d bytes, first difference at byte %d (old %r, new %r)' % (
        what, len(a), len(b), i, a[max(0, i - 20):i + 20], b[max(0, i - 20):i + 20])


# ---------------------------------------------------------------------------- protobuf (pprof)

def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def f_int(num, v):
    return varint(num << 3) + varint(v)


def f_bytes(num, b):
    return varint(num << 3 | 2) + varint(len(b)) + b


def f_packed(num, vals):
    return f_bytes(num, b''.join(varint(v) for v in vals))


def pb_fields(buf):
    """(field number, wire type, int or bytes) of one message."""
    i, n = 0, len(buf)
    while i < n:
        key, i = read_varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = read_varint(buf, i)
        elif wire == 2:
            ln, i = read_varint(buf, i)
            v, i = buf[i:i + ln], i + ln
        elif wire == 1:
            v, i = int.from_bytes(buf[i:i + 8], 'little'), i + 8
        elif wire == 5:
            v, i = int.from_bytes(buf[i:i + 4], 'little'), i + 4
        else:
            raise ValueError('wire type %d' % wire)
        yield num, wire, v


def read_varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7f) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def ints(wire, v):
    """A repeated integer field's values, packed or not."""
    if wire != 2:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = read_varint(v, i)
        out.append(x)
    return out


def msg(buf):
    """{field: [values]} of a message (repeated integers unpacked)."""
    d = {}
    for num, wire, v in pb_fields(buf):
        d.setdefault(num, []).append((wire, v))
    return d


def decode_pprof(data):
    """A pprof file (gzip or not) as plain Python: see the keys below."""
    if data[:2] == b'\x1f\x8b':
        data = gzip.decompress(data)
    top = msg(data)
    st = [v.decode('utf-8', 'replace') for _, v in top.get(6, [])]
    s = lambda i: st[i] if i < len(st) else '?'
    vt = lambda b: (s(msg(b).get(1, [(0, 0)])[0][1]), s(msg(b).get(2, [(0, 0)])[0][1]))
    fns = {}
    for _, b in top.get(5, []):
        m = msg(b)
        fns[m.get(1, [(0, 0)])[0][1]] = (s(m.get(2, [(0, 0)])[0][1]), s(m.get(4, [(0, 0)])[0][1]))
    maps = {}
    for _, b in top.get(3, []):
        m = msg(b)
        maps[m.get(1, [(0, 0)])[0][1]] = (s(m.get(5, [(0, 0)])[0][1]),
                                          s(m.get(6, [(0, 0)])[0][1]))
    locs = {}
    for _, b in top.get(4, []):
        m = msg(b)
        lines = []
        for _, lb in m.get(4, []):
            lm = msg(lb)
            lines.append((lm.get(1, [(0, 0)])[0][1], lm.get(2, [(0, 0)])[0][1]))
        locs[m.get(1, [(0, 0)])[0][1]] = (m.get(2, [(0, 0)])[0][1], m.get(3, [(0, 0)])[0][1],
                                          lines)
    samples = []
    for _, b in top.get(2, []):
        m = msg(b)
        ids = [x for w, v in m.get(1, []) for x in ints(w, v)]
        vals = [x for w, v in m.get(2, []) for x in ints(w, v)]
        labels = []
        for _, lb in m.get(3, []):
            lm = msg(lb)
            labels.append((s(lm.get(1, [(0, 0)])[0][1]), s(lm.get(2, [(0, 0)])[0][1]),
                           lm.get(3, [(0, 0)])[0][1]))
        samples.append((ids, vals, labels))
    return {
        'fields': sorted(top), 'strings': st,
        'sample_types': [vt(b) for _, b in top.get(1, [])],
        'period_type': [vt(b) for _, b in top.get(11, [])],
        'period': [v for _, v in top.get(12, [])],
        'default_type': [s(v) for _, v in top.get(14, [])],
        'comments': [s(x) for w, v in top.get(13, []) for x in ints(w, v)],
        'functions': fns, 'mappings': maps, 'locations': locs, 'samples': samples,
    }


# ---------------------------------------------------------------------------- inputs

class Strings:
    def __init__(self):
        self.table, self.index = [], {}

    def __call__(self, s):
        if s not in self.index:
            self.index[s] = len(self.table)
            self.table.append(s)
        return self.index[s]


def make_pprof(path, seed, plain=False):
    """A pprof file with every kind of frame hwspy reads; plain: no hwspy comments, two types
    (as Go's and other producers' files)."""
    rnd = random.Random(seed)
    S = Strings()
    S('')
    maps = [(1, '/usr/lib/x86_64-linux-gnu/libc.so.6', 'ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12',
             0x7f0000000000), (2, '/usr/lib/x86_64-linux-gnu/libz.so.1', '', 0x7f1000000000)]
    # function id -> (name, file); location id -> (mapping, address, [(function, line)])
    fns = {1: ('<module>', '/srv/app/main.py'), 2: ('Trainer.step', '/srv/app/train.py'),
           3: ('forward', '/srv/app/model.py'), 4: ('inlined_helper', '/srv/app/model.py'),
           5: ('memcpy', ''), 6: ('clear_page_erms', '[kernel.kallsyms]'),
           7: ('[thread 12 worker]', ''), 8: ('[unknown]', ''), 9: ('load', '/srv/app/data.py'),
           10: ('héllo wörld', '/srv/é (copy).py')}
    locs = {1: (0, 0, [(1, 10)]), 2: (0, 0, [(2, 20)]), 3: (0, 0, [(4, 31), (3, 30)]),
            4: (1, 0x7f0000001234, [(5, 0)]), 5: (0, 0, [(6, 0)]), 6: (0, 0, [(7, 0)]),
            7: (0, 0, [(8, 0)]), 8: (2, 0x7f1000004321, []), 9: (0, 0, [(9, 5)]),
            10: (0, 0, [(10, 3)]), 11: (0, 0, [(2, 21)])}
    shapes = [[6, 1, 2, 3], [6, 1, 2, 3, 4], [6, 1, 2, 3, 4, 5], [1, 9, 8], [1, 9], [7],
              [1, 10], [1, 11, 3], [6, 1, 11], [1, 2, 3, 4]]
    out = b''
    types = [('samples', 'count'), ('cpu-clock', 'nanoseconds'), ('page-faults', 'events')]
    if plain:
        types = [('samples', 'count'), ('cpu', 'nanoseconds')]
    for t, u in types:
        out += f_bytes(1, f_int(1, S(t)) + f_int(2, S(u)))
    for shape in shapes:
        n = rnd.randint(1, 400)
        vals = [n, n * 1001001 + rnd.randint(0, 999)] + ([] if plain else [rnd.randint(0, 50)])
        body = f_packed(1, list(reversed(shape))) + f_packed(2, vals)
        tid = 12 if shape[0] == 6 else 42
        body += f_bytes(3, f_int(1, S('thread_id')) + f_int(3, tid))
        out += f_bytes(2, body)
    for mid, name, bid, start in maps:
        m = f_int(1, mid) + f_int(2, start) + f_int(3, start + 0x100000) + f_int(4, 0)
        m += f_int(5, S(name)) + (f_int(6, S(bid)) if bid else b'') + f_int(7, 1)
        out += f_bytes(3, m)
    for lid, (mid, addr, lines) in locs.items():
        b = f_int(1, lid) + (f_int(2, mid) if mid else b'') + (f_int(3, addr) if addr else b'')
        for fid, ln in lines:
            b += f_bytes(4, f_int(1, fid) + (f_int(2, ln) if ln else b''))
        out += f_bytes(4, b)
    for fid, (name, fl) in fns.items():
        out += f_bytes(5, f_int(1, fid) + f_int(2, S(name)) + f_int(3, S(name)) +
                       (f_int(4, S(fl)) if fl else b''))
    comments = [] if plain else [
        'hwspy 0.1.0', 'hwspy record -e cpu-clock,page-faults -o x.pb.gz -p 42',
        'target: pid 42 (python3)', 'python: 3.12.1', 'lost: 2', 'dropped: 1', 'threads: 2',
        'event 0: sampling, frequency 999 Hz', 'event 1: counted']
    cids = [S(c) for c in comments]
    period = f_int(1, S(types[1][0])) + f_int(2, S(types[1][1]))
    for s in S.table:
        out += f_bytes(6, s.encode('utf-8'))
    out += f_int(9, 1764590000000000000) + f_int(10, 1500000000) + f_bytes(11, period)
    out += f_int(12, 1001001) + (f_packed(13, cids) if cids else b'')
    out += f_int(14, S(types[1][0])) if not plain else b''
    with open(path, 'wb') as f:
        f.write(gzip.compress(out, mtime=0))


def changed_folded(src, dst, seed=7):
    """src's lines with some dropped, rescaled, moved to another line and a few new."""
    rnd = random.Random(seed)
    out = []
    with open(src, encoding='utf-8') as f:
        lines = [l.rstrip('\n') for l in f if l.strip()]
    for l in lines:
        stack, count = l.rsplit(' ', 1)
        r = rnd.random()
        if r < 0.05:
            continue
        if r < 0.35:
            count = str(max(1, int(int(count) * rnd.uniform(0.3, 3.0))))
        if r > 0.98:
            stack = re.sub(r':(\d+)\)$', lambda m: ':%d)' % (int(m.group(1)) + 1), stack)
        out.append('%s %s' % (stack, count))
    for i in range(50):
        out.append('%s;new_%d (/srv/app/new.py:%d) %d' % (lines[i].rsplit(' ', 1)[0], i, i + 1,
                                                           rnd.randint(1, 500)))
    with open(dst, 'w', encoding='utf-8') as f:
        f.write('\n'.join(out) + '\n')


def load_bench_outputs():
    spec = importlib.util.spec_from_file_location('bench_outputs', os.path.join(HERE, 'outputs.py'))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def write_lines(path, lines):
    with open(path, 'w', encoding='utf-8') as f:
        f.write(''.join(l + '\n' for l in lines))
    return path


def make_inputs(d, old, stacks):
    """{name: absolute path} of the convert and diff inputs, written under d."""
    I = {}
    p = lambda n: os.path.join(d, n)
    I['bench.folded'] = p('bench.folded')
    load_bench_outputs().make_folded(I['bench.folded'], stacks, stacks * 10)
    I['bench2.folded'] = p('bench2.folded')
    changed_folded(I['bench.folded'], I['bench2.folded'])
    T = test_outputs
    I['hostile.folded'] = write_lines(p('hostile.folded'), ['%s %d' % s for s in T.HOSTILE])
    I['perf.folded'] = write_lines(p('perf.folded'), T.PERF)
    I['pyspy.folded'] = write_lines(p('pyspy.folded'), T.PYSPY)
    I['roundtrip.folded'] = write_lines(p('roundtrip.folded'), T.ROUNDTRIP)
    I['before.austin'], I['after.pyspy'] = test_diff.austin_pyspy_pair(argparse.Namespace(tmp=d))
    I['perf-before.folded'] = write_lines(p('perf-before.folded'), [
        'python3;_start;main;deflate 60', 'python3;_start;main;inflate 40'])
    I['perf-after.folded'] = write_lines(p('perf-after.folded'), [
        'python3;_start;main;deflate 10', 'python3;_start;main;inflate 40'])
    I['bad.folded'] = write_lines(p('bad.folded'), ['main (a.py:1) 5', 'main;;f 3'])
    I['empty.folded'] = write_lines(p('empty.folded'), ['# nothing'])
    I['rich.pb.gz'], I['rich2.pb.gz'], I['plain.pb.gz'] = p('rich.pb.gz'), p('rich2.pb.gz'), \
        p('plain.pb.gz')
    make_pprof(I['rich.pb.gz'], 1)
    make_pprof(I['rich2.pb.gz'], 2)
    make_pprof(I['plain.pb.gz'], 3, plain=True)
    with open(I['rich.pb.gz'], 'rb') as f:
        data = f.read()
    I['cut.pb.gz'] = p('cut.pb.gz')
    with open(I['cut.pb.gz'], 'wb') as f:
        f.write(data[:len(data) // 2])
    # OLD's own pprof files (what hwspy writes, read back by both)
    for src in ('bench.folded', 'hostile.folded', 'roundtrip.folded'):
        dst = src.replace('.folded', '-hwspy.pb.gz')
        I[dst] = p(dst)
        r = subprocess.run([old, 'convert', I[src], '-o', I[dst]], capture_output=True)
        if r.returncode != 0:
            print('same_outputs.py: %s convert %s failed: %s' % (old, src, r.stderr))
            sys.exit(2)
    return I


# ---------------------------------------------------------------------------- byte comparison

class Runner:
    """Runs the same hwspy command with OLD and NEW, each in a fresh directory of its own."""

    def __init__(self, old, new, tmp, report):
        self.exe = {'old': old, 'new': new}
        self.tmp, self.report = tmp, report
        self.count = itertools.count()

    def run(self, side, args, stdin):
        d = os.path.join(self.tmp, side, 'c%03d' % self.k)
        os.makedirs(d)
        r = subprocess.run([self.exe[side]] + args, cwd=d, input=stdin, capture_output=True,
                           timeout=300)
        files = {}
        for name in sorted(os.listdir(d)):
            with open(os.path.join(d, name), 'rb') as f:
                files[name] = f.read()
        return r, files

    def same(self, args, label=None, stdin=None, mask_stderr=None):
        """Run args with both binaries and report the comparison: one line, or two where a
        gzip file is compared inflated as well."""
        self.k = next(self.count)
        label = label or 'hwspy ' + ' '.join(os.path.basename(a) if os.path.isabs(a) else a
                                             for a in args)
        (ro, fo), (rn, fn) = self.run('old', args, stdin), self.run('new', args, stdin)
        problems, inflated = [], []
        if ro.returncode != rn.returncode:
            problems.append('exit %d vs %d' % (ro.returncode, rn.returncode))
        eo, en = ro.stderr, rn.stderr
        if mask_stderr:
            eo, en = mask_stderr(eo), mask_stderr(en)
        for what, a, b in (('stdout', ro.stdout, rn.stdout), ('stderr', eo, en)):
            p = bytes_problem(what, a, b)
            if p:
                problems.append(p)
        if sorted(fo) != sorted(fn):
            problems.append('files left: %s vs %s' % (sorted(fo), sorted(fn)))
        for name in sorted(set(fo) & set(fn)):
            p = bytes_problem(name, fo[name], fn[name])
            if p:
                problems.append(p)
            if fo[name][:2] == b'\x1f\x8b' and fn[name][:2] == b'\x1f\x8b':
                try:
                    p = bytes_problem(name + ' inflated', gzip.decompress(fo[name]),
                                      gzip.decompress(fn[name]))
                except (OSError, EOFError) as e:
                    p = '%s: cannot inflate: %s' % (name, e)
                inflated.append((name, p))
        self.report.line('%s%s' % (label, '' if ro.returncode == 0 else
                                   ' (exit %d)' % ro.returncode), problems)
        for name, p in inflated:
            self.report.line('%s [%s inflated]' % (label, name), [p] if p else [])
        return fo


def mask_times(b):
    return re.sub(rb'in [0-9.]+ s', b'in N s', b)


def convert_cases(R, I):
    out_names = ['out.folded', 'out.svg', 'out.speedscope.json', 'out.pb.gz']
    for inp in ('bench.folded', 'hostile.folded', 'perf.folded', 'pyspy.folded',
                'roundtrip.folded', 'before.austin', 'rich.pb.gz', 'plain.pb.gz',
                'bench-hwspy.pb.gz', 'hostile-hwspy.pb.gz', 'roundtrip-hwspy.pb.gz'):
        for out in out_names:
            R.same(['convert', I[inp], '-o', out])
    h, b, rich = I['hostile.folded'], I['bench.folded'], I['rich.pb.gz']
    for args in (['-o', 'out.txt'], ['-o', 'out.pprof'], ['-f', 'svg', '-o', 'out.dat'],
                 ['--format', 'pprof', '-o', 'out.dat'], ['-f', 'folded', '-o', '-'],
                 ['-f', 'speedscope', '-o', '-'], ['-o', '-', '-f', 'svg'],
                 ['-o', 'out.svg', '--title', 'T & <x> "q"'], ['-o', 'out.svg', '--icicle'],
                 ['-o', 'out.svg', '--min-width', '0'], ['-o', 'out.svg', '--min-width', '3.5'],
                 ['-o', 'out.svg', '--icicle', '--title', 'x', '--min-width', '1']):
        R.same(['convert', h] + args)
    for args in (['-o', 'out.svg', '--min-width', '0'], ['-o', 'out.svg', '--min-width', '5'],
                 ['-o', 'out.svg', '--icicle', '--title', 'bench']):
        R.same(['convert', b] + args)
    for w in ('samples', 'cpu-clock', 'page-faults'):
        for out in out_names:
            R.same(['convert', rich, '-o', out, '--weight', w])
    with open(h, 'rb') as f:
        R.same(['convert', '-', '-o', 'out.svg'], label='hwspy convert - (hostile.folded) -o '
               'out.svg', stdin=f.read())
    with open(rich, 'rb') as f:
        R.same(['convert', '-', '-o', 'out.folded'], label='hwspy convert - (rich.pb.gz) -o '
               'out.folded', stdin=f.read())
    R.same(['convert', '-v', b, '-o', 'out.svg'], mask_stderr=mask_times)
    R.same(['convert', '-v', rich, '-o', 'out.pb.gz'], mask_stderr=mask_times)
    # failures: the message and the exit status, nothing left behind
    for args in ([os.path.join(os.path.dirname(h), 'none.folded'), '-o', 'x.folded'],
                 [I['bad.folded'], '-o', 'x.folded'], [I['empty.folded'], '-o', 'x.svg'],
                 [I['cut.pb.gz'], '-o', 'x.folded'], [h, '-o', 'x.folded', '--weight', 'cycles'],
                 [h, '-o', 'x.folded', '--format', 'flame'], [h, '-o', 'x.flame'], [h],
                 [h, '-o', 'x.svg', '--min-width', 'wide']):
        R.same(['convert'] + args)
    R.same(['convert', '-', '-o', 'x.folded'], label='hwspy convert - (empty) -o x.folded',
           stdin=b'')


def diff_cases(R, I):
    pairs = [('bench.folded', 'bench2.folded'), ('before.austin', 'after.pyspy'),
             ('perf-before.folded', 'perf-after.folded'), ('rich.pb.gz', 'rich2.pb.gz'),
             ('bench-hwspy.pb.gz', 'bench2.folded')]
    outs = [[], ['-o', 'd.txt'], ['-o', 'd.folded'], ['-o', 'd.svg'], ['-f', 'folded', '-o', '-'],
            ['-f', 'svg', '-o', 'd.out'], ['-f', 'table', '-o', 'd.dat'], ['-o', '-']]
    for a, b in pairs:
        for o in outs:
            R.same(['diff', I[a], I[b]] + o)
    a, b = I['bench.folded'], I['bench2.folded']
    for opts in (['--no-normalize'], ['--ignore-lines'], ['--top', '5'], ['--top', '1'],
                 ['--no-normalize', '--ignore-lines', '--top', '3']):
        for o in ([], ['-o', 'd.folded'], ['-o', 'd.svg']):
            R.same(['diff', a, b] + opts + o)
    for opts in (['--negate'], ['--title', 'T & <x>'], ['--icicle'], ['--min-width', '2'],
                 ['--negate', '--icicle', '--min-width', '0', '--ignore-lines']):
        R.same(['diff', a, b, '-o', 'd.svg'] + opts)
    au, py = I['before.austin'], I['after.pyspy']
    for opts in (['--ignore-lines'], ['--no-normalize'], ['--negate', '--ignore-lines']):
        for o in ([], ['-o', 'd.folded'], ['-o', 'd.svg']):
            R.same(['diff', au, py] + opts + o)
    r1, r2 = I['rich.pb.gz'], I['rich2.pb.gz']
    for w in ('samples', 'cpu-clock', 'page-faults', 'cycles'):
        for o in ([], ['-o', 'd.folded'], ['-o', 'd.svg']):
            R.same(['diff', r1, r2, '--weight', w] + o)
    R.same(['diff', r1, I['plain.pb.gz']])
    h, ps = I['hostile.folded'], I['pyspy.folded']
    for opts in ([], ['--force'], ['--force', '-o', 'd.svg'], ['--force', '-o', 'd.folded']):
        R.same(['diff', h, ps] + opts)
    missing = os.path.join(os.path.dirname(h), 'none.folded')
    for args in ([missing, h], [h, I['bad.folded']], [I['empty.folded'], h], [h],
                 [h, h, '-f', 'flame'], [h, h, '-o', 'd.flame'], [h, h, '--top', 'x'],
                 [I['cut.pb.gz'], h]):
        R.same(['diff'] + args)
    with open(h, 'rb') as f:
        R.same(['diff', '-', '-'], label='hwspy diff - - (hostile.folded twice)', stdin=f.read())


# ---------------------------------------------------------------------------- record

# thread ids, absolute addresses (ASLR; a module's +0xOFFSET is kept), perf maps' pids
MASKS = [(re.compile(r'\[thread \d+ '), '[thread N '),
         (re.compile(r'(?<![+0-9a-zA-Z])0x[0-9a-fA-F]+'), '0xN'),
         (re.compile(r'perf-\d+\.map'), 'perf-N.map')]


def mask_frame(s):
    for rx, rep in MASKS:
        s = rx.sub(rep, s)
    return s


def mask_numbers(s):
    return re.sub(r'[0-9][0-9.,]*', 'N', s)


def folded_stacks(data):
    st = {}
    for line in data.decode('utf-8').split('\n'):
        if line:
            stack, count = line.rsplit(' ', 1)
            key = ';'.join(mask_frame(f) for f in stack.split(';'))
            st[key] = st.get(key, 0) + int(count)
    return st, []


def speedscope_stacks(data):
    doc = json.loads(data.decode('utf-8'))
    frames = doc['shared']['frames']

    def text(fr):
        return mask_frame('%s (%s:%s)' % (fr['name'], fr.get('file', ''), fr.get('line', '')))

    st = {}
    for p in doc['profiles']:
        head = mask_numbers(p['name'])
        for s, w in zip(p['samples'], p['weights']):
            key = ';'.join([head] + [text(frames[i]) for i in s])
            st[key] = st.get(key, 0) + w

    def paths(x, pre):
        if isinstance(x, dict):
            return {q for k, v in x.items() for q in paths(v, pre + '.' + k)} | {pre + ':dict'}
        if isinstance(x, list):
            return {q for v in x for q in paths(v, pre + '[]')} | {pre + ':list'}
        return {pre + ':' + type(x).__name__}

    skeleton = sorted(paths(doc, '')) + [
        '$schema=%s' % doc.get('$schema'), 'exporter=%s' % doc.get('exporter'),
        'name=%s' % mask_numbers(str(doc.get('name'))),
        'activeProfileIndex=%s' % doc.get('activeProfileIndex')] + sorted(
        'profile %s %s %s' % (p.get('type'), p.get('unit'), mask_numbers(p.get('name', '')))
        for p in doc['profiles'])
    return st, skeleton


def pprof_stacks(data):
    d = decode_pprof(data)
    fns, maps, locs = d['functions'], d['mappings'], d['locations']

    def frames(lid):
        mid, addr, lines = locs.get(lid, (0, 0, []))
        mod = maps.get(mid, ('', ''))[0]
        if not lines:
            return ['%s+0xN' % mod]
        return [mask_frame('%s (%s:%d) [%s]' % (fns[f][0], fns[f][1], ln, mod))
                for f, ln in lines]

    st = {}
    tkey = d['default_type'][0] if d['default_type'] else None
    col = next((i for i, (t, _) in enumerate(d['sample_types']) if t == tkey), 0)
    for ids, vals, _ in d['samples']:
        fr = [x for lid in ids for x in frames(lid)]
        key = ';'.join(reversed(fr))
        st[key] = st.get(key, 0) + vals[col]
    # the mappings (field 3) are there only when a sample had a native frame
    skeleton = ['fields %s' % [f for f in d['fields'] if f != 3],
                'sample_types %s' % d['sample_types'],
                'period_type %s' % d['period_type'], 'period %s' % d['period'],
                'default_type %s' % d['default_type'],
                'label keys %s' % sorted({l[0] for s in d['samples'] for l in s[2]})]
    skeleton += ['comment %s' % mask_numbers(c) for c in d['comments']]
    return st, skeleton, {f: bool(b) for f, b in maps.values()}


SVG_FRAME = re.compile(r'<g><title>(.*?)\n([^<]*)</title><rect x="([0-9.]+)" y="([0-9.]+)" '
                       r'width="([0-9.]+)" height="[0-9.]+" fill="([^"]*)"[^>]*/>'
                       r'<text[^>]*>[^<]*</text></g>\n', re.S)


def svg_stacks(data):
    """Inclusive weight of each frame path (root first) and each path's fill; the text outside
    the frames, numbers masked."""
    text = data.decode('utf-8')
    frames = [(html.unescape(m.group(1)), int(re.sub(r'[^0-9]', '', m.group(2).split('(')[0]) or 0),
               float(m.group(3)), float(m.group(4)), float(m.group(5)), m.group(6))
              for m in SVG_FRAME.finditer(text)]
    rest = SVG_FRAME.sub('', text)
    # parents: the frame one row nearer the root whose span holds this one's x
    rows = {}
    for f in frames:
        rows.setdefault(f[3], []).append(f)
    ys = sorted(rows)
    root_y = max(ys, key=lambda y: len([f for f in rows[y] if f[0] == 'all'])) if ys else 0
    step = -1 if ys and root_y == ys[-1] else 1
    path_of, st, fills = {}, {}, {}
    order = sorted(ys, reverse=(step == -1))
    for i, y in enumerate(order):
        for f in rows[y]:
            parent = None
            if i:
                for g in rows[order[i - 1]]:
                    if g[2] <= f[2] + f[4] / 2 <= g[2] + g[4]:
                        parent = g
                        break
            p = (path_of.get(id(parent), '') + ';' if parent else '') + mask_frame(f[0])
            path_of[id(f)] = p
            st[p] = st.get(p, 0) + f[1]
            fills[p] = f[5]
    return st, [mask_numbers(rest)], fills


def shares(st):
    total = sum(st.values())
    return {k: 100.0 * v / total for k, v in st.items()} if total else {}


class RecCase:
    def __init__(self, name, mode, target, args, ext):
        self.name, self.mode, self.target, self.args, self.ext = name, mode, target, args, ext


def record_cases():
    clock = ['-e', 'cpu-clock', '-F', '999']
    return [
        RecCase('default folded', 'default', 'shares', clock, 'folded'),
        RecCase('default svg', 'default', 'shares', clock, 'svg'),
        RecCase('default speedscope', 'default', 'shares', clock, 'speedscope.json'),
        RecCase('default pprof', 'default', 'shares', clock, 'pb.gz'),
        RecCase('nonblocking folded', 'nonblocking', 'shares', clock + ['--nonblocking'],
                'folded'),
        RecCase('ptrace folded', 'ptrace', 'shares', clock + ['--ptrace', '--stop-budget', '100'],
                'folded'),
        RecCase('threads folded', 'threads', 'threads', clock + ['--threads'], 'folded'),
        RecCase('threads speedscope', 'threads', 'threads', clock + ['--threads'],
                'speedscope.json'),
        RecCase('native folded', 'native', 'native', clock + ['--native'], 'folded'),
        RecCase('native pprof', 'native', 'native', clock + ['--native'], 'pb.gz'),
        RecCase('page-faults folded', 'page-faults', 'faults', ['-e', 'page-faults'], 'folded'),
    ]


class Target:
    """A workload hwspy attaches to, started once and used for every run of its cases."""

    def __init__(self, py, kind):
        argv = {'shares': ['shares.py', 'serve'], 'threads': ['threads.py'],
                'faults': ['faults.py', '256', '4000'], 'native': ['native_work.py', 'serve']}[kind]
        argv = py.argv + [os.path.join(TARGETS, argv[0])] + argv[1:]
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE='1')
        env.pop('PYTHONPATH', None)
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                  start_new_session=True)
        line = self.p.stdout.readline().decode().strip()
        if kind != 'threads' and line != 'ready':
            raise RuntimeError('%s printed %r, not ready' % (' '.join(argv), line))
        self.pid = self.p.pid
        if kind == 'native':
            # one task for as long as the target lives: it reads no more commands
            self.p.stdin.write(b'cwork 600\n')
            self.p.stdin.flush()

    def stop(self):
        try:
            self.p.stdin.write(b'quit\n')
            self.p.stdin.close()
            self.p.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if self.p.poll() is None:
            os.killpg(self.p.pid, 9)
            self.p.wait()


def record_once(exe, case, target, secs, d):
    os.makedirs(d)
    out = 'out.' + case.ext
    where = ['-p', str(target.pid), '-d', str(secs)]
    argv = [exe, 'record', '-o', out] + case.args + where
    try:
        r = subprocess.run(argv, cwd=d, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=60 + 2 * secs, env=dict(os.environ, PYTHONDONTWRITEBYTECODE='1'))
    except subprocess.TimeoutExpired as e:
        r = subprocess.CompletedProcess(argv, -9, e.stdout, (e.stderr or b'') + b' (timed out)')
    data = None
    if os.path.exists(os.path.join(d, out)):
        with open(os.path.join(d, out), 'rb') as f:
            data = f.read()
    return {'rc': r.returncode, 'stderr': r.stderr.decode('utf-8', 'replace'), 'data': data,
            'path': os.path.join(d, out)}


def normalise(run, ext):
    """shares {masked stack: % of the total}, skeleton [lines], extras {key: value} of one
    output (SVG: each frame path's inclusive share of the root, and its fill)."""
    if ext == 'folded':
        st, sk = folded_stacks(run['data'])
        return shares(st), sk, {}
    if ext == 'speedscope.json':
        st, sk = speedscope_stacks(run['data'])
        return shares(st), sk, {}
    if ext == 'pb.gz':
        st, sk, bids = pprof_stacks(run['data'])
        return shares(st), sk, {'build-id ' + k: v for k, v in bids.items()}
    st, sk, fills = svg_stacks(run['data'])
    root = st.get('all', 0)
    sh = {k: 100.0 * v / root for k, v in st.items()} if root else {}
    return sh, sk, {'fill ' + k: v for k, v in fills.items()}


SUMMARY_SKIP = re.compile(r'exited with status|were late by')
SUMMARY_WEIGHT = re.compile(r'([0-9]+) samples, weight ([0-9]+)')


def summary_lines(stderr):
    return {mask_numbers(l) for l in stderr.splitlines() if l and not SUMMARY_SKIP.search(l)}


def summary_weight(run):
    """(samples, weight) from the summary line, or None."""
    m = SUMMARY_WEIGHT.search(run['stderr'])
    return (int(m.group(1)), int(m.group(2))) if m else None


def compare_shares(olds, new, tol):
    """Problems of NEW's shares against OLD's runs (lists of {stack: share})."""
    heavy = {k for s in olds + [new] for k, v in s.items() if v >= MIN_SHARE}
    problems = []
    for k in sorted(heavy):
        lo = min(s.get(k, 0.0) for s in olds)
        hi = max(s.get(k, 0.0) for s in olds)
        n = new.get(k, 0.0)
        short = k if len(k) < 160 else '...' + k[-157:]
        if n == 0.0 and hi >= MIN_SHARE:
            problems.append('stack %s: %.1f-%.1f%% in OLD, absent in NEW' % (short, lo, hi))
        elif hi == 0.0:
            problems.append('stack %s: %.1f%% in NEW, absent in OLD' % (short, n))
        elif n < lo - tol or n > hi + tol:
            problems.append('stack %s: %.1f%% in NEW, %.1f-%.1f%% in OLD (tolerance %.1f)'
                            % (short, n, lo, hi, tol))
    return problems, len(heavy)


def compare_totals(case, runs):
    """The weight per sample (the summary's) within 5% of OLD's; a folded file's total is the
    summary's weight in NEW where it is in both OLD runs."""
    w = [summary_weight(r) for r in runs]
    if None in w:
        return ['no "N samples, weight W" summary line in %s' % ', '.join(
            n for n, x in zip(('OLD', 'NEW', 'OLD'), w) if x is None)]
    ratio = [wt / max(n, 1) for n, wt in w]
    lo, hi = min(ratio[0], ratio[2]), max(ratio[0], ratio[2])
    problems = []
    if not lo * 0.95 <= ratio[1] <= hi * 1.05:
        problems.append('weight per sample %.4g in NEW, %.4g-%.4g in OLD' % (ratio[1], lo, hi))
    if case.ext == 'folded':
        tot = [sum(int(l.rsplit(b' ', 1)[1]) for l in r['data'].split(b'\n') if l)
               for r in runs]
        same = [t == x[1] for t, x in zip(tot, w)]
        if same[0] and same[2] and not same[1]:
            problems.append('folded total %d is not the summary\'s weight %d in NEW (it is in '
                            'OLD)' % (tot[1], w[1][1]))
    return problems


def compare_record(case, runs, tol):
    """Problems of NEW's run (runs[1]) against OLD's (runs[0], runs[2]), notes, and the number
    of heavy stacks compared."""
    old1, new, old2 = runs
    if any(r['rc'] != 0 or r['data'] is None for r in runs):
        return ['exit %s (OLD), %s (NEW), %s (OLD); stderr NEW: %s' % (
            old1['rc'], new['rc'], old2['rc'], new['stderr'][-300:])], [], 0
    norm = [normalise(r, case.ext) for r in runs]
    problems = []
    if norm[1][1] != norm[0][1] and norm[1][1] != norm[2][1]:
        a, b = norm[0][1], norm[1][1]
        d = ['-' + x for x in a if x not in b][:2] + ['+' + x for x in b if x not in a][:2]
        problems.append('structure: %s' % (' | '.join(x[:200] for x in d) or 'order'))
    for k in sorted(set(norm[0][2]) & set(norm[1][2]) & set(norm[2][2])):
        heavy = case.ext != 'svg' or norm[1][0].get(k[5:], 0) >= MIN_SHARE
        if heavy and norm[1][2][k] != norm[0][2][k] and norm[0][2][k] == norm[2][2][k]:
            problems.append('%s: %r in NEW, %r in OLD' % (k[:200], norm[1][2][k], norm[0][2][k]))
    p, n = compare_shares([norm[0][0], norm[2][0]], norm[1][0], tol)
    problems += p + compare_totals(case, runs)
    s0, s1, s2 = (summary_lines(r['stderr']) for r in runs)
    for l in sorted((s0 & s2) - s1):
        problems.append('summary line missing in NEW: %r' % l)
    # most summary lines say a count when it is not 0 (torn stacks, lost samples, samples with
    # no Python code ...): one run prints them and the next does not. A line of NEW that
    # neither OLD run printed is only noted (OLD against itself: 1 run in 2 had one)
    notes = ['summary line only in NEW (lines of non-zero counts come and go): %r' % l
             for l in sorted(s1 - s0 - s2)]
    return problems, notes, n


def spread(runs_shares):
    """The largest share difference of one stack between two runs, and how far a run falls
    outside the range of two others (percentage points), with the stack of the latter."""
    pair = outside = 0.0
    worst = ''
    heavy = {k for s in runs_shares for k, v in s.items() if v >= MIN_SHARE}
    for k in heavy:
        v = [s.get(k, 0.0) for s in runs_shares]
        pair = max(pair, max(v) - min(v))
        for i, x in enumerate(v):
            for a, b in itertools.combinations([y for j, y in enumerate(v) if j != i], 2):
                if max(min(a, b) - x, x - max(a, b)) > outside:
                    outside, worst = max(min(a, b) - x, x - max(a, b)), k
    return pair, outside, worst


def pick_python(ident):
    for i in ([ident] if ident else ['py312', 'py311', 'debian311', 'py313', 'py38']):
        try:
            return pythons.get(i, ROOT)
        except pythons.Missing as e:
            if ident:
                print('same_outputs.py: %s' % e, file=sys.stderr)
                sys.exit(2)
    print('same_outputs.py: none of py312, py311, debian311, py313, py38 is installed',
          file=sys.stderr)
    sys.exit(2)


def record_part(R, old, new, tmp, a):
    py = pick_python(a.python)
    print('record: %s, %s s per recording' % (' '.join(py.argv), a.seconds), flush=True)
    targets = {}
    kept = {}
    noise = {}
    try:
        for case in record_cases():
            if case.target not in targets:
                try:
                    targets[case.target] = Target(py, case.target)
                    time.sleep(0.3)
                except (RuntimeError, OSError) as e:
                    targets[case.target] = None
                    R.report.error('target %s' % case.target, str(e))
            t = targets.get(case.target)
            if t is None:
                R.report.error('record %s' % case.name, 'no target')
                continue
            sides = [old] * a.noise if a.noise else [old, new, old]
            base = os.path.join(tmp, 'rec', case.name.replace(' ', '-'))
            runs = [record_once(exe, case, t, a.seconds, '%s-%d' % (base, i))
                    for i, exe in enumerate(sides)]
            if a.noise:
                ok = [r for r in runs if r['rc'] == 0 and r['data']]
                sh = [normalise(r, case.ext)[0] for r in ok]
                p, o, k = spread(sh)
                noise.setdefault(case.mode, []).append((p, o))
                print('noise %-22s %d runs: largest pair difference %.2f points, largest '
                      'outside two others %.2f points (%s)' % (case.name, len(ok), p, o,
                                                               k[-150:]), flush=True)
                print('      %s' % ' '.join('%.1f' % s.get(k, 0.0) for s in sh), flush=True)
                continue
            bad = [i for i in (0, 2) if runs[i]['rc'] != 0 or runs[i]['data'] is None]
            if bad:
                R.report.error('record %s' % case.name, 'OLD failed (exit %s): %s' % (
                    runs[bad[0]]['rc'], runs[bad[0]]['stderr'][-300:]))
                continue
            problems, notes, n = compare_record(case, runs, TOLERANCE[case.mode])
            R.report.line('record %s (%d heavy stacks, tolerance %.1f points)'
                          % (case.name, n, TOLERANCE[case.mode]), problems, notes)
            kept[case.name] = runs
    finally:
        for t in targets.values():
            if t:
                t.stop()
    if a.noise:
        for mode, v in noise.items():
            print('noise %-12s pair %.2f, outside %.2f points' % (
                mode, max(x[0] for x in v), max(x[1] for x in v)))
        return
    recorded_cases(R, kept)


def recorded_cases(R, kept):
    """OLD's recordings converted by both binaries; OLD's against NEW's diffed by both."""
    for name in ('default folded', 'default pprof', 'native pprof', 'threads folded'):
        runs = kept.get(name)
        if not runs or runs[0]['data'] is None or runs[1]['data'] is None:
            continue
        src = runs[0]['path']
        for out in ('out.folded', 'out.svg', 'out.speedscope.json', 'out.pb.gz'):
            R.same(['convert', src, '-o', out], label='hwspy convert (OLD record %s) -o %s'
                   % (name, out))
        for out in ([], ['-o', 'd.folded'], ['-o', 'd.svg']):
            R.same(['diff', src, runs[1]['path']] + out,
                   label='hwspy diff (OLD record %s) (NEW record %s) %s'
                   % (name, name, ' '.join(out)))


# ---------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0],
                                 epilog='See the opening comment of this file for what is '
                                 'compared and how.')
    ap.add_argument('old', help='the hwspy binary before the change')
    ap.add_argument('new', help='the hwspy binary after it')
    g = ap.add_mutually_exclusive_group()
    g.add_argument('--convert-only', action='store_true', help='convert and diff only')
    g.add_argument('--record-only', action='store_true', help='record only')
    ap.add_argument('--python', help='interpreter id for record (tests/integration/pythons.py)')
    ap.add_argument('--seconds', type=float, default=1.5, help='length of each recording')
    ap.add_argument('--stacks', type=int, default=20000,
                    help='distinct stacks of the synthetic folded input (default 20000)')
    ap.add_argument('--noise', type=int, metavar='N',
                    help='record only: run OLD N times per case, print the spread of the '
                    'shares (to set TOLERANCE); NEW is not run')
    ap.add_argument('--keep', action='store_true', help='keep the temporary directory')
    a = ap.parse_args()
    for exe in (a.old, a.new):
        if not os.access(exe, os.X_OK):
            ap.error('%s is not an executable' % exe)
    old, new = os.path.abspath(a.old), os.path.abspath(a.new)
    tmp = tempfile.mkdtemp(prefix='hwspy-same-')
    os.chmod(tmp, 0o755)
    report = Report()
    R = Runner(old, new, tmp, report)
    t0 = time.monotonic()
    try:
        if not a.record_only and not a.noise:
            os.mkdir(os.path.join(tmp, 'in'))
            I = make_inputs(os.path.join(tmp, 'in'), old, a.stacks)
            convert_cases(R, I)
            diff_cases(R, I)
        if not a.convert_only:
            record_part(R, old, new, tmp, a)
    finally:
        if a.keep:
            print('kept %s' % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if a.noise:
        return 0
    print('%d cases, %d DIFFERENT, %d not compared (%.0f s)' % (
        report.n, report.bad, report.errors, time.monotonic() - t0))
    return 1 if report.bad else 2 if report.errors else 0


if __name__ == '__main__':
    sys.exit(main())

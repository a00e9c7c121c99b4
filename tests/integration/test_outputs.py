"""Output formats and hwspy convert, one --case each.

  record-speedscope (--python) hwspy record -e cpu-clock -F 999 -o X.speedscope.json -- PYTHON
            shares.py run 1.5: the file is valid against speedscope's published schema (npm
            package speedscope, validated with python3-jsonschema; both installed by .ci/run),
            indexes are in range, samples and weights have equal lengths, weights are positive
            integers, endValue is the weight the summary reports, and the workload's functions
            are frames with their file and line. --format speedscope with a .json name does the
            same.
  record-pprof (--python) hwspy record -e cpu-clock -F 999 -o X.pb.gz -- PYTHON shares.py run 1.5:
            `go tool pprof -raw` accepts the file (it rejects malformed profiles), and `-top
            -sample_index=cpu-clock` shows the summary's weight as its total, with the workload's
            heaviest function (multiply) in the top rows. Needs go (Debian golang-go, installed
            by .ci/run); pprof runs with HOME in a temporary directory.
  record-svg (--python) hwspy record -e cpu-clock -F 999 -o X.svg -- PYTHON shares.py run 1.5:
            xmllint accepts the file; the root frame's tooltip holds the summary's weight; the
            workload's functions are frames with their file and line. Then -e
            cpu-clock,page-faults with --weight cpu-clock / page-faults: the folded totals are
            nanoseconds, then a count of faults.
  convert   hwspy convert: a folded file with hostile names (spaces, brackets, parentheses,
            semicolon-free non-ASCII) to speedscope and back to folded keeps every stack and the
            total; to pprof (read by go tool pprof) and to SVG (valid XML, the total in the root
            tooltip) as well; perf stackcollapse and py-spy lines read as native and Python
            frames; bad input (a malformed line: named with its line number, an empty file, a
            missing file, an unknown --format, --weight of an event the file lacks) fails with
            one line and leaves no output; --title is escaped, --icicle puts the root on top.
  roundtrip hwspy convert between formats keeps everything: a folded file (hostile names, perf
            and py-spy lines, every kind of frame) -> pprof -> folded gives the same lines
            (byte for byte, sorted), also with the pprof file on standard input (read by
            content: the name says nothing); folded -> speedscope keeps every stack, rebuilt
            from the JSON frames, and the total. Malformed pprof input (a gzip stream cut short,
            an uncompressed protobuf whose length runs past its end) fails with one line that
            names the file and the reason, exit 1, and no output.
  record-native-pprof (--python) hwspy record --native -e cpu-clock -o X.pb.gz -- PYTHON
            native_work.py run cwork 1.5: the file's mappings (decoded here, and by `go tool
            pprof -raw` where go is installed) carry build-ids, and each one whose module the
            same interpreter maps (libz, libcrypto, libc, its extension modules ...) is what
            `readelf -n` prints for that file; libz's among them. Then hwspy convert turns the
            file back into folded with the summary's total and libz's frames.
"""
import gzip
import json
import os
import re
import shutil
import subprocess
import sys

import harness
from harness import Skip, check, log

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'unit',
                                'output'))
import check_speedscope  # noqa: E402  (find_schema)

CASES = {}


def case(fn):
    CASES[fn.__name__.replace('_', '-')] = fn
    return fn


def validate(path):
    """Schema, then what the schema does not check; returns the document."""
    schema = check_speedscope.find_schema()
    if schema is None:
        raise Skip("speedscope's file-format-schema.json not found: install the npm package "
                   "speedscope (.ci/run does)")
    try:
        import jsonschema
    except ImportError:
        raise Skip('python3-jsonschema is not installed (.ci/run installs it)')
    with open(path, 'rb') as f:
        raw = f.read()
    doc = json.loads(raw.decode('utf-8'))
    with open(schema) as f:
        jsonschema.validate(doc, json.load(f))
    frames = doc['shared']['frames']
    check(doc['profiles'], 'no profile in %s' % path)
    for p in doc['profiles']:
        check(len(p['samples']) == len(p['weights']), '%s: samples and weights differ in length'
              % p['name'])
        check(all(type(w) is int and w > 0 for w in p['weights']),
              '%s: a weight is not a positive integer' % p['name'])
        check(all(s and all(type(i) is int and 0 <= i < len(frames) for i in s)
                  for s in p['samples']), '%s: a frame index is out of range' % p['name'])
        check(p['startValue'] == 0 and p['endValue'] == sum(p['weights']),
              '%s: endValue %r, weights sum to %d' % (p['name'], p['endValue'], sum(p['weights'])))
    log('%s: valid against %s; %d frames, profiles %s' % (
        path, schema, len(frames), ', '.join(p['name'] for p in doc['profiles'])))
    return doc


def hwspy(opts, args, **kw):
    r = subprocess.run([opts.hwspy] + args, capture_output=True, text=True, timeout=120, **kw)
    log('$ hwspy %s -> exit %d\n%s' % (' '.join(args), r.returncode, r.stderr.strip()))
    return r


@case
def record_speedscope(opts):
    script = os.path.join(opts.targets, 'shares.py')
    for name, extra in (('out.speedscope.json', []), ('out.json', ['--format', 'speedscope'])):
        out = os.path.join(opts.tmp, name)
        r = hwspy(opts, ['record', '-v', '-e', 'cpu-clock', '-F', '999', '-o', out] + extra + ['--'] +
                  opts.py.argv + [script, 'run', '1.5'])
        check(r.returncode == 0, 'hwspy record exited %d' % r.returncode)
        check(out in r.stderr, 'the summary does not name %s' % out)
        doc = validate(out)
        weight = int(r.stderr.split(' weight ')[1].split(',')[0])
        total = sum(p['endValue'] for p in doc['profiles'])
        check(total == weight, 'the profiles hold weight %d, the summary says %d' % (total, weight))
        check(all(p['unit'] == 'nanoseconds' for p in doc['profiles']),
              'cpu-clock profiles not in nanoseconds')
        names = {(f['name'], f.get('file')) for f in doc['shared']['frames'] if 'line' in f}
        for fn in ('nested_inner', 'recurse', 'squares'):
            check((fn, script) in names, 'no frame %s (%s) with a line' % (fn, script))
        qual = 'Matrix.multiply' if opts.py.has_qualname_frames else 'multiply'
        check((qual, script) in names, 'no frame %s' % qual)


go_pprof = harness.go_pprof


def pprof_total_ns(top):
    """The total of `go tool pprof -top -unit=ns`: 'of 123456ns total'."""
    m = re.search(r'of ([0-9]+)ns total', top)
    check(m, 'no total in go tool pprof -top output:\n%s' % top)
    return int(m.group(1))


@case
def record_pprof(opts):
    script = os.path.join(opts.targets, 'shares.py')
    out = os.path.join(opts.tmp, 'out.pb.gz')
    r = hwspy(opts, ['record', '-v', '-e', 'cpu-clock', '-F', '999', '-o', out, '--'] + opts.py.argv +
              [script, 'run', '1.5'])
    check(r.returncode == 0, 'hwspy record exited %d' % r.returncode)
    weight = int(r.stderr.split(' weight ')[1].split(',')[0])
    raw = go_pprof(opts, '-raw', out)
    check('hwspy' in raw, 'no hwspy comment in the profile')
    top = go_pprof(opts, '-top', '-unit=ns', '-sample_index=cpu-clock', out)
    log(top[:1500])
    check(pprof_total_ns(top) == weight, 'pprof total %d, the summary says %d'
          % (pprof_total_ns(top), weight))
    rows = [l for l in top.splitlines() if re.match(r'\s*[0-9]+ns\s', l)][:3]
    check(any('multiply' in l for l in rows), 'multiply is not in the top rows:\n%s'
          % '\n'.join(rows))


def check_svg(path, total):
    """xmllint accepts it; the root ('all') tooltip holds total; returns the tooltips."""
    if not shutil.which('xmllint'):
        raise Skip('xmllint is not installed (libxml2-utils; .ci/run installs it)')
    r = subprocess.run(['xmllint', '--noout', path], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, 'xmllint rejects %s:\n%s' % (path, r.stderr[:2000]))
    with open(path, encoding='utf-8') as f:
        text = f.read()
    titles = re.findall(r'<title>(.*?)</title>', text, re.S)
    root = [t for t in titles if t.startswith('all\n')]
    check(root, 'no root frame "all" in %s' % path)
    m = re.search(r': ([0-9,]+) \(100\.0%\)', root[0])
    check(m and int(m.group(1).replace(',', '')) == total,
          'the root tooltip %r does not hold the total %d' % (root[0], total))
    log('%s: valid XML, %d frames, total %d' % (path, len(titles), total))
    return titles


@case
def record_svg(opts):
    script = os.path.join(opts.targets, 'shares.py')
    out = os.path.join(opts.tmp, 'out.svg')
    r = hwspy(opts, ['record', '-v', '-e', 'cpu-clock', '-F', '999', '-o', out, '--'] + opts.py.argv +
              [script, 'run', '1.5'])
    check(r.returncode == 0, 'hwspy record exited %d' % r.returncode)
    weight = int(r.stderr.split(' weight ')[1].split(',')[0])
    titles = check_svg(out, weight)
    for fn in ('nested_inner', 'recurse', 'squares'):
        check(any(t.startswith('%s (%s:' % (fn, script)) for t in titles),
              'no frame %s (%s:LINE) in the flame graph' % (fn, script))
    # two events: --weight picks the one the folded file and the flame graph weigh by
    for name, weight_by in (('clock', 'cpu-clock'), ('faults', 'page-faults')):
        out = os.path.join(opts.tmp, name + '.folded')
        r = hwspy(opts, ['record', '-e', 'cpu-clock,page-faults', '-F', '999', '-o', out,
                         '--weight', weight_by, '--'] + opts.py.argv + [script, 'run', '1'])
        check(r.returncode == 0, 'hwspy record --weight %s exited %d' % (weight_by, r.returncode))
        total = harness.Profile.read(out).total
        log('--weight %s: folded total %d' % (weight_by, total))
        if name == 'clock':
            check(total > 10 ** 8, 'cpu-clock total %d: not nanoseconds of ~1 s' % total)
        else:
            check(0 < total < 10 ** 7, 'page-faults total %d: not a count of faults' % total)


HOSTILE = [
    ('<module> (/srv/app main.py:10);run [x] (/srv/app main.py:20);héllo wörld (/srv/é.py:3)', 7),
    ('<module> (/srv/app main.py:10);f(a, b) (/srv/(copy)/b.py:4);memcpy [libc.so.6]', 5),
    ('[thread 12 worker];spin (w.py:1);schedule_[k]', 3),
    ('[unknown]', 2),
]
PERF = ['python3;_start;__libc_start_main;Py_BytesMain;deflate 40',
        'python3;_start;[libz.so.1];foo 2']
PYSPY = ['<module> (train.py:10);step (model.py:42) 17',
         'process 123:"python train.py";thread (0x7f00);<module> (train.py:10) 3']


def folded_lines(path):
    with open(path, encoding='utf-8') as f:
        return sorted(l for l in f.read().split('\n') if l)


@case
def convert(opts):
    src = os.path.join(opts.tmp, 'in.folded')
    with open(src, 'w', encoding='utf-8') as f:
        f.write(''.join('%s %d\n' % s for s in HOSTILE))
    ss = os.path.join(opts.tmp, 'out.speedscope.json')
    check(hwspy(opts, ['convert', src, '-o', ss]).returncode == 0, 'convert to speedscope failed')
    doc = validate(ss)
    frames = doc['shared']['frames']
    got = sorted((';'.join(frames[i]['name'] for i in s), w)
                 for p in doc['profiles'] for s, w in zip(p['samples'], p['weights']))
    def bare(x):    # the name alone, as hwspy's frame texts carry it
        if x.endswith('_[k]'):
            return x[:-4]
        if x.endswith(')'):
            return x.rsplit(' (', 1)[0]
        if x.endswith(']') and not x.startswith('['):
            return x.rsplit(' [', 1)[0]
        return x
    want = sorted((';'.join(bare(x) for x in s.split(';')), c) for s, c in HOSTILE)
    check(got == want, 'speedscope stacks differ:\n got  %r\n want %r' % (got, want))
    check(any(f.get('file') == '/srv/(copy)/b.py' and f.get('line') == 4 for f in frames),
          'the file with parentheses did not come through')
    back = os.path.join(opts.tmp, 'back.folded')
    check(hwspy(opts, ['convert', src, '-o', back]).returncode == 0, 'convert to folded failed')
    check(folded_lines(back) == sorted('%s %d' % s for s in HOSTILE),
          'folded -> folded changed the lines: %r' % folded_lines(back))
    # one line saying what was written (as record's), -q none, -v one more before it: what was
    # read and written, with the sizes
    total = sum(c for _, c in HOSTILE)
    wrote = "hwspy: wrote '%s' (%d stacks, total %s)\n" % (back, len(HOSTILE), '{:,}'.format(total))
    r = hwspy(opts, ['convert', src, '-o', back])
    check(r.returncode == 0 and r.stderr == wrote, 'convert: expected %r, got %r' % (wrote, r.stderr))
    r = hwspy(opts, ['convert', src, '-o', back, '-q'])
    check(r.returncode == 0 and r.stderr == '', 'convert -q: %r' % r.stderr)
    r = hwspy(opts, ['convert', src, '-o', back, '-v'])
    m = re.fullmatch(r'hwspy: read ([0-9,]+) samples in ([0-9,]+) stacks in [0-9.]+ s; '
                     r'wrote folded \(([0-9]+) bytes\) in [0-9.]+ s\n' + re.escape(wrote), r.stderr)
    check(r.returncode == 0 and m and int(m.group(1).replace(',', '')) ==
          sum(c for _, c in HOSTILE) and int(m.group(3)) == os.path.getsize(back),
          'convert -v: %r' % r.stderr)

    # to pprof: go's reader takes it, with the same total
    pb = os.path.join(opts.tmp, 'out.pprof')
    check(hwspy(opts, ['convert', src, '-o', pb]).returncode == 0, 'convert to pprof failed')
    if shutil.which('go'):
        go_pprof(opts, '-raw', pb)
        top = go_pprof(opts, '-top', '-sample_index=samples', pb)
        m = re.search(r'of ([0-9]+) total', top)
        check(m and int(m.group(1)) == sum(c for _, c in HOSTILE),
              'pprof total of the converted file: %s' % (m.group(0) if m else top))
    else:
        log('no go here: the converted pprof file is not read back')

    # to SVG: valid XML whatever the names, the total in the root; --title, --icicle
    svg = os.path.join(opts.tmp, 'out.svg')
    check(hwspy(opts, ['convert', src, '-o', svg]).returncode == 0, 'convert to svg failed')
    check_svg(svg, sum(c for _, c in HOSTILE))
    ys = {}
    for name, extra in (('flame', []), ('icicle', ['--icicle'])):
        path = os.path.join(opts.tmp, name + '.svg')
        check(hwspy(opts, ['convert', src, '-o', path, '--title', 'T & <x>'] + extra).returncode
              == 0, 'convert %s failed' % name)
        check_svg(path, sum(c for _, c in HOSTILE))
        with open(path, encoding='utf-8') as f:
            text = f.read()
        check('T &amp; &lt;x&gt;' in text, '--title is not in %s, escaped' % path)
        y = [float(re.search(r'<title>%s\n.*?</title><rect [^>]*?y="([0-9.]+)"' % re.escape(t),
                             text, re.S).group(1)) for t in ('all', 'memcpy [libc.so.6]')]
        ys[name] = y
    check(ys['flame'][0] > ys['flame'][1] and ys['icicle'][0] < ys['icicle'][1],
          'root and leaf y (flame %r, icicle %r): the root is not at the bottom, then the top'
          % (ys['flame'], ys['icicle']))
    r = hwspy(opts, ['convert', src, '-o', os.path.join(opts.tmp, 'w.folded'), '--weight',
                     'cycles'])
    check(r.returncode != 0 and "no event 'cycles'" in r.stderr, '--weight of a missing event: %r'
          % r.stderr)

    # other tools' folded files
    for name, lines, expect in (('perf', PERF, ('deflate', None)),
                                ('pyspy', PYSPY, ('step', 'model.py'))):
        path = os.path.join(opts.tmp, name + '.folded')
        with open(path, 'w') as f:
            f.write('\n'.join(lines) + '\n')
        out = os.path.join(opts.tmp, name + '.speedscope.json')
        check(hwspy(opts, ['convert', path, '-o', out]).returncode == 0, 'convert %s failed' % name)
        doc = validate(out)
        total = sum(int(l.rsplit(' ', 1)[1]) for l in lines)
        check(sum(p['endValue'] for p in doc['profiles']) == total, '%s: total changed' % name)
        check(any(f['name'] == expect[0] and f.get('file') == expect[1]
                  for f in doc['shared']['frames']), '%s: no frame %r' % (name, expect))

    # bad input: one line, non-zero exit, no output left
    bad = os.path.join(opts.tmp, 'bad.folded')
    with open(bad, 'w') as f:
        f.write('a;b 1\na;;c 2\n')
    for args, code, words in (
            ([bad, '-o', os.path.join(opts.tmp, 'x.folded')], 1, [bad + ':2:']),
            ([os.path.join(opts.tmp, 'none.folded'), '-o', os.path.join(opts.tmp, 'x.folded')], 1,
             ['cannot read']),
            ([src, '-o', os.path.join(opts.tmp, 'x.folded'), '--format', 'flame'], 2,
             ['unknown format'])):
        r = hwspy(opts, ['convert'] + args)
        lines = [l for l in r.stderr.splitlines() if l.startswith('hwspy: ')]
        check(r.returncode == code, 'convert %s exited %d, expected %d' % (args, r.returncode, code))
        check(len(lines) == 1 and all(w in lines[0] for w in words),
              'convert %s: expected one line with %r, got %r' % (args, words, r.stderr))
        check(not os.path.exists(os.path.join(opts.tmp, 'x.folded')) and
              not os.path.exists(os.path.join(opts.tmp, 'x.svg')), 'an output was left behind')
    r = subprocess.run([opts.hwspy, 'convert', '-', '-o', os.path.join(opts.tmp, 'x.folded')],
                       input='', capture_output=True, text=True, timeout=60)
    check(r.returncode == 1 and 'no stacks' in r.stderr, 'empty input: %r' % r.stderr)


# ---------------------------------------------------------------------------- round trips

ROUNDTRIP = [l for l in ('%s %d' % s for s in HOSTILE)] + PERF + PYSPY + [
    'main [prog];std::vector<int>::operator[](unsigned long) [libstdc++.so.6];memcpy [libc.so.6] 11',
    '<module> (a.py:1);inlined (a.py:2);[native];page_fault_[k];do_anonymous_page_[k] 4',
    'nofile_py (x.py);deep [libdeep.so] 9',
]


def sorted_lines(path):
    with open(path, 'rb') as f:
        return sorted(l for l in f.read().split(b'\n') if l)


def speedscope_stacks(doc, texts):
    """(stack text, weight) of every sample, frames rebuilt as folded writes them: texts is the
    set of folded frame texts the input holds (a frame with a file and no line may be Python's
    "name (file)" or native "name [module]": speedscope keeps only "file")."""
    def text(f):
        if f.get('file') == '[kernel.kallsyms]':
            return f['name'] + '_[k]'
        if 'line' in f:
            return '%s (%s:%d)' % (f['name'], f['file'], f['line'])
        if 'file' in f:
            py, nat = '%s (%s)' % (f['name'], f['file']), '%s [%s]' % (f['name'], f['file'])
            return py if py in texts else nat
        return f['name']
    frames = [text(f) for f in doc['shared']['frames']]
    return sorted((';'.join(frames[i] for i in st), w)
                  for p in doc['profiles'] for st, w in zip(p['samples'], p['weights']))


def expect_fail(opts, args, words, out, stdin=None):
    """hwspy convert ARGS fails: exit 1, one 'hwspy: ' line holding every word, no out file."""
    r = subprocess.run([opts.hwspy, 'convert'] + args, input=stdin, capture_output=True,
                       timeout=60)
    err = r.stderr.decode('utf-8', 'replace')
    log('$ hwspy convert %s -> exit %d\n%s' % (' '.join(args), r.returncode, err.strip()))
    lines = [l for l in err.splitlines() if l.startswith('hwspy: ')]
    check(r.returncode == 1, 'convert %s exited %d, expected 1' % (args, r.returncode))
    check(len(lines) == 1 and all(w in lines[0] for w in words),
          'convert %s: expected one line with %r, got %r' % (args, words, err))
    check(not os.path.exists(out), 'convert %s left %s behind' % (args, out))


@case
def roundtrip(opts):
    src = os.path.join(opts.tmp, 'in.folded')
    with open(src, 'w', encoding='utf-8') as f:
        f.write('\n'.join(ROUNDTRIP) + '\n')
    total = sum(int(l.rsplit(' ', 1)[1]) for l in ROUNDTRIP)
    want = sorted_lines(src)

    # folded -> pprof -> folded, from the file and from standard input
    pb = os.path.join(opts.tmp, 'rt.pb.gz')
    check(hwspy(opts, ['convert', src, '-o', pb]).returncode == 0, 'folded -> pprof failed')
    back = os.path.join(opts.tmp, 'rt.folded')
    check(hwspy(opts, ['convert', pb, '-o', back]).returncode == 0, 'pprof -> folded failed')
    got = sorted_lines(back)
    if got != want:
        log('lost: %r\nmade: %r' % (sorted(set(want) - set(got)), sorted(set(got) - set(want))))
    check(got == want, 'folded -> pprof -> folded changed the lines (above)')
    # no name to go by: a pprof file called .folded, read from a pipe
    disguised = os.path.join(opts.tmp, 'pprof-really.folded')
    shutil.copy(pb, disguised)
    back2 = os.path.join(opts.tmp, 'rt2.folded')
    with open(disguised, 'rb') as f:
        r = subprocess.run([opts.hwspy, 'convert', '-', '-o', back2], stdin=f,
                           capture_output=True, timeout=60)
    check(r.returncode == 0, 'pprof on standard input: exit %d: %s' % (r.returncode, r.stderr))
    check(sorted_lines(back2) == want, 'pprof on standard input -> folded changed the lines')
    log('folded -> pprof -> folded: %d lines, total %d, unchanged (file and stdin)'
        % (len(want), total))
    if shutil.which('go'):
        go_pprof(opts, '-raw', pb)

    # folded -> speedscope: every stack and the total
    ss = os.path.join(opts.tmp, 'rt.speedscope.json')
    check(hwspy(opts, ['convert', src, '-o', ss]).returncode == 0, 'folded -> speedscope failed')
    doc = validate(ss)
    texts = {fr for l in ROUNDTRIP for fr in l.rsplit(' ', 1)[0].split(';')}
    got_ss = speedscope_stacks(doc, texts)
    want_ss = sorted((l.rsplit(' ', 1)[0], int(l.rsplit(' ', 1)[1])) for l in ROUNDTRIP)
    if got_ss != want_ss:
        log('speedscope: %r\nfolded:     %r' % (got_ss, want_ss))
    check(got_ss == want_ss, 'folded -> speedscope changed the stacks (above)')
    check(sum(w for _, w in got_ss) == total, 'speedscope total differs')
    log('folded -> speedscope: %d stacks, total %d, unchanged' % (len(got_ss), total))

    # malformed pprof: one line naming the file and the reason, exit 1, no output
    with open(pb, 'rb') as f:
        good = f.read()
    cut = os.path.join(opts.tmp, 'cut.pb.gz')
    with open(cut, 'wb') as f:
        f.write(good[:len(good) // 2])
    out = os.path.join(opts.tmp, 'x.folded')
    expect_fail(opts, [cut, '-o', out], [cut + ': ', 'truncated gzip stream'], out)
    raw = os.path.join(opts.tmp, 'raw.pprof')
    with open(raw, 'wb') as f:
        f.write(b'\x0a\x08\x08\x01\x10\x02')      # a sample_type whose length runs past the end
    expect_fail(opts, [raw, '-o', out], [raw + ': ', 'length past the end'], out)
    expect_fail(opts, ['-', '-o', out], ['<stdin>: ', 'truncated gzip stream'], out,
                stdin=good[:len(good) // 2])


# ---------------------------------------------------------------------------- build-ids

def pb_fields(data):
    """One protobuf message: [(field number, int or bytes)] (varint and length fields only)."""
    out, i = [], 0

    def varint():
        nonlocal i
        v = shift = 0
        while True:
            b = data[i]
            i += 1
            v |= (b & 0x7f) << shift
            shift += 7
            if not b & 0x80:
                return v
    while i < len(data):
        key = varint()
        if key & 7 == 0:
            out.append((key >> 3, varint()))
        elif key & 7 == 2:
            n = varint()
            out.append((key >> 3, data[i:i + n]))
            i += n
        else:
            raise harness.Fail('pprof: unexpected wire type %d' % (key & 7))
    return out


def pprof_mappings(path):
    """{filename: build_id} of the Mappings of a gzipped pprof file, decoded here."""
    with open(path, 'rb') as f:
        top = pb_fields(gzip.decompress(f.read()))
    strs = [v.decode('utf-8') for n, v in top if n == 6]
    maps = {}
    for n, v in top:
        if n == 3:
            m = dict(pb_fields(v))
            maps[strs[m.get(5, 0)]] = strs[m.get(6, 0)]
    return maps


def readelf_build_id(path):
    r = subprocess.run(['readelf', '-n', path], capture_output=True, text=True, timeout=60)
    m = re.search(r'Build ID: ([0-9a-f]+)', r.stdout)
    return m.group(1) if m else ''


PROBE = ('import hashlib, zlib, ctypes; hashlib.sha256(b"x"); zlib.compress(b"x"); '
         'print(open("/proc/self/maps").read())')


def host_build_id(name):
    """The build-id of the system's own file of that name (the one a launcher script runs on),
    or None where the system has none."""
    for d in ('/lib/x86_64-linux-gnu', '/usr/lib/x86_64-linux-gnu', '/lib64'):
        path = os.path.join(d, name)
        if os.path.exists(path):
            return readelf_build_id(path)
    return None


def launched_by_script(argv):
    """Whether argv[0] is a script (#!) that execs the interpreter."""
    try:
        with open(shutil.which(argv[0]) or argv[0], 'rb') as f:
            return f.read(2) == b'#!'
    except OSError:
        return False


@case
def record_native_pprof(opts):
    if not shutil.which('readelf'):
        raise Skip('no readelf here (binutils; gcc in .ci/run brings it)')
    script = os.path.join(opts.targets, 'native_work.py')
    out = os.path.join(opts.tmp, 'native.pb.gz')
    r = hwspy(opts, ['record', '-v', '--native', '-e', 'cpu-clock', '-F', '999', '-o', out, '--'] +
              opts.py.argv + [script, 'run', 'cwork', '1.5'])
    check(r.returncode == 0, 'hwspy record --native exited %d' % r.returncode)
    weight = int(r.stderr.split(' weight ')[1].split(',')[0])
    maps = pprof_mappings(out)
    log('mappings: %s' % ', '.join('%s %s' % (k, v or '(none)') for k, v in sorted(maps.items())))
    check(maps, 'no mappings in %s' % out)

    # where the same interpreter maps each module, and what readelf says of it
    probe = subprocess.run(opts.py.argv + ['-c', PROBE], capture_output=True, text=True,
                           timeout=60)
    check(probe.returncode == 0, 'the probe failed: %s' % probe.stderr)
    paths = {}
    for line in probe.stdout.splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith('/'):
            paths.setdefault(os.path.basename(parts[5]), parts[5])
    matched = []
    for name, bid in sorted(maps.items()):
        if name not in paths:
            log('%s: not mapped by the probe, not checked' % name)
            continue
        want = readelf_build_id(paths[name])
        if not bid and want and launched_by_script(opts.py.argv) and \
                host_build_id(name) not in (None, want):
            # a launcher script (Debian's unstable pythons here) runs on the system's loader
            # and libc before it execs the interpreter's own: where samples fell in both, the
            # name stands for two files and rightly carries no build-id (ld-linux, and libc.so.6
            # once in a full suite run)
            log('%s: no build-id (two files of that name sampled in this run)' % name)
            continue
        check(bid == want, '%s (%s): build-id %r in the profile, readelf -n says %r'
              % (name, paths[name], bid, want))
        if want:
            matched.append(name)
    log('build-ids equal to readelf -n: %s' % ', '.join(matched))
    check(any(n.startswith('libz.') for n in matched), "no mapping of libz with its build-id")
    check(len(matched) >= 2, 'only %d mappings checked against readelf' % len(matched))

    # go's pprof reads the same build-ids
    if shutil.which('go'):
        raw = go_pprof(opts, '-raw', out)
        go_maps = {}
        for line in raw.split('Mappings\n', 1)[-1].splitlines():
            m = re.match(r'^\d+: \S+ (\S+) (\S*) ?\[', line)
            if m:
                go_maps[m.group(1)] = m.group(2)
        check(go_maps == maps, 'go tool pprof -raw reads other mappings: %r' % go_maps)
        log('go tool pprof -raw: the same %d mappings and build-ids' % len(go_maps))

    # and back to folded
    back = os.path.join(opts.tmp, 'native.folded')
    check(hwspy(opts, ['convert', out, '-o', back]).returncode == 0, 'pprof -> folded failed')
    prof = harness.Profile.read(back)
    check(prof.total == weight, 'folded total %d, the summary says %d' % (prof.total, weight))
    check(any(re.search(r' \[libz\.so[^\]]*\]$', fr) for st, _ in prof.stacks for fr in st),
          'no libz frame in the folded file')
    log('pprof -> folded: total %d, libz frames present' % prof.total)


def test(opts):
    needs_python = opts.case in ('record-speedscope', 'record-pprof', 'record-svg',
                                 'record-native-pprof')
    check(bool(opts.python) == needs_python,
          '--case %s %s --python' % (opts.case, 'needs' if needs_python else 'takes no'))
    CASES[opts.case](opts)


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--case', choices=sorted(CASES), required=True)
    harness.main(test, p)

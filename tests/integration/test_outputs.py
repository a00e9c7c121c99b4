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
"""
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
        r = hwspy(opts, ['record', '-e', 'cpu-clock', '-F', '999', '-o', out] + extra + ['--'] +
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


def go_pprof(opts, *args):
    if not shutil.which('go'):
        raise Skip("no 'go' here (apt-get install golang-go; .ci/run installs it)")
    home = os.path.join(opts.tmp, 'home')
    os.makedirs(home, exist_ok=True)
    r = subprocess.run(['go', 'tool', 'pprof'] + list(args), capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, HOME=home))
    check(r.returncode == 0, 'go tool pprof %s exited %d:\n%s' % (' '.join(args), r.returncode,
                                                                  r.stderr))
    return r.stdout


def pprof_total_ns(top):
    """The total of `go tool pprof -top -unit=ns`: 'of 123456ns total'."""
    m = re.search(r'of ([0-9]+)ns total', top)
    check(m, 'no total in go tool pprof -top output:\n%s' % top)
    return int(m.group(1))


@case
def record_pprof(opts):
    script = os.path.join(opts.targets, 'shares.py')
    out = os.path.join(opts.tmp, 'out.pb.gz')
    r = hwspy(opts, ['record', '-e', 'cpu-clock', '-F', '999', '-o', out, '--'] + opts.py.argv +
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
    r = hwspy(opts, ['record', '-e', 'cpu-clock', '-F', '999', '-o', out, '--'] + opts.py.argv +
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
    # -v: one line saying what was read and written, with the sizes
    r = hwspy(opts, ['convert', src, '-o', back, '-v'])
    m = re.fullmatch(r'hwspy: read ([0-9,]+) samples in ([0-9,]+) stacks in [0-9.]+ s; '
                     r'wrote folded \(([0-9]+) bytes\) in [0-9.]+ s\n', r.stderr)
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


def test(opts):
    needs_python = opts.case in ('record-speedscope', 'record-pprof', 'record-svg')
    check(bool(opts.python) == needs_python,
          '--case %s %s --python' % (opts.case, 'needs' if needs_python else 'takes no'))
    CASES[opts.case](opts)


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--case', choices=sorted(CASES), required=True)
    harness.main(test, p)

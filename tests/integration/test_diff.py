"""hwspy diff, one --case each.

  real (--python)  tests/targets/diff_work.py does a fixed amount of work: lookup() (a list
            scan: slow) and steady(). It is recorded as written (BEFORE) and again after
            lookup() is rewritten with a set in a shorter block, so that steady() and main()
            move up in the file (AFTER), recorded as pprof files (AFTER with page-faults too)
            and converted to folded. `hwspy diff --ignore-lines --no-normalize` names lookup
            as the biggest drop (first row) and steady as roughly unchanged (its change under a third of
            lookup's); normalised, lookup is
            still the biggest drop. The differential SVG (raw, --negate: BEFORE's widths, as the
            optimised lookup may have no AFTER sample) is valid XML, lookup's frame is
            deep blue and steady's nearly white, and their tooltips hold the before and after
            counts of the two folded files. Without --ignore-lines the moved lines do not match
            in the graph (steady is new and red), while the table (functions) is unchanged.
            The pprof files compare by event: cpu-clock, its headline in seconds of CPU and
            CPUs used, its deltas in seconds, page-faults named as only in AFTER; a folded file
            against a pprof file gives the same table, its headline claiming no change (the
            folded counts have no unit).
  formats   synthetic BEFORE/AFTER pairs in the other tools' forms (austin's
            P..;T..;file:func:line, py-spy, perf + stackcollapse) and hwspy's own, with known
            deltas checked number by number in the table, both normalisation modes, and the
            `stack before after` lines; the headline of folded files (plain counts); native code
            without symbols in one row per module, and by address with --native-offsets; every
            label of the differential SVG at a WCAG contrast of 4.5:1 or more on its box, and
            its subtitle saying the total change. Then one script's profiles from two checkouts
            and two virtualenvs (/tmp/x/v1/app.py with venv1's numpy, /tmp/x/v2/app.py with
            venv2's): every function is on both sides, named by its module-relative path (app.py,
            pkg/m.py, numpy/linalg.py); with --exact-paths (and --full-paths, which implies it)
            none is: refused as unrelated, and with --force each is added or removed. The
            differential SVG's box labels are short, and full with --full-paths; `hwspy convert
            --full-paths` likewise.
  svg-browser  the differential SVG of the austin / py-spy pair (--ignore-lines) in headless
            Chromium: after its script ran, the fills are still the change colours (load deep
            blue, compute red, main white) and the tooltips hold the deltas; ?s=^load matches
            load's AFTER share (5.0%) and paints only load; ?x=..&y=.. of compute zooms it to the
            full width and hides collate; every label legible on its box, and load's (white on
            deep blue) black on the search's magenta.
  errors    a malformed line (named as FILE:LINE), an empty profile, a missing file, no shared
            event (pprof files of page-faults and of cpu-clock), two
            unrelated programs (refused, then compared with --force), both inputs on standard
            input, an unknown --format, --weight of an event the profiles do not share: one line
            each, a non-zero exit, no output left behind; the headline of a count event
            (page-faults: counts, per second).
"""
import os
import re
import shutil
import subprocess

import harness
from harness import Skip, check, log
import test_browser

CASES = {}


def case(fn):
    CASES[fn.__name__.replace('_', '-')] = fn
    return fn


def hwspy(opts, args, **kw):
    r = subprocess.run([opts.hwspy] + args, capture_output=True, text=True, timeout=120, **kw)
    log('$ hwspy %s -> exit %d\n%s' % (' '.join(args), r.returncode, r.stderr.strip()))
    return r


ROW = re.compile(r'^\s*(\d+\.\d\d)\s+(\d+\.\d\d)\s+([+-]\d+\.\d\d)\s+(\S+)\s+'
                 r'(\d+\.\d\d)\s+(\d+\.\d\d)\s+([+-]\d+\.\d\d)\s+(\S+)\s+(.+)$')


def table(text):
    """The rows of a diff table per event: {event: {function: (self b, a, d, total b, a, d)}}
    and the headlines {event: line}."""
    rows, heads, event = {}, {}, None
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            check(event, 'a row before any headline: %r' % line)
            g = m.groups()
            rows[event][g[8]] = tuple(float(g[i]) for i in (0, 1, 2, 4, 5, 6))
            continue
        m = re.match(r'^(\S+): \S.* -> \S', line)
        if m and not line.startswith(('before: ', 'after: ', 'shares: ')):
            event = m.group(1)
            heads[event] = line
            rows[event] = {}
    return rows, heads


def near(got, want, tol, what):
    check(abs(got - want) <= tol, '%s: %.2f, expected %.2f (+-%.2f)' % (what, got, want, tol))


def write(path, lines):
    with open(path, 'w') as f:
        f.write(''.join(l + '\n' for l in lines))
    return path


def svg_frames(path):
    """{frame text: (fill, tooltip)} of a flame graph (the first of each text)."""
    if not shutil.which('xmllint'):
        raise Skip('xmllint is not installed (libxml2-utils; .ci/run installs it)')
    r = subprocess.run(['xmllint', '--noout', path], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, 'xmllint rejects %s:\n%s' % (path, r.stderr[:2000]))
    with open(path, encoding='utf-8') as f:
        text = f.read()
    out = {}
    for m in re.finditer(r'<g><title>(.*?)</title><rect [^>]*fill="([^"]+)"', text, re.S):
        out.setdefault(m.group(1).split('\n')[0], (m.group(2), m.group(1)))
    return out


def rgb(fill):
    m = re.match(r'rgb\((\d+),(\d+),(\d+)\)$', fill)
    check(m, 'fill %r is not rgb(r,g,b)' % fill)
    return tuple(int(x) for x in m.groups())


def contrast(fill, white):
    """WCAG 2 contrast of a black (or white) label on fill."""
    def lin(c):
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = rgb(fill)
    lum = 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)
    return 1.05 / (lum + 0.05) if white else (lum + 0.05) / 0.05


def check_contrast(frames, what):
    """Every label (test_browser.Frame: fill, dark = a white label) at 4.5:1 or more."""
    for f in frames:
        c = contrast(f.fill, f.dark)
        check(c >= 4.5, '%s: the %s label of %r on %s: contrast %.2f:1, under 4.5:1'
              % (what, 'white' if f.dark else 'black', f.name, f.fill, c))


def tip_counts(tip):
    b = re.search(r'\nbefore: ([0-9,]+)', tip)
    a = re.search(r'\nafter: ([0-9,]+)', tip)
    check(b and a, 'no before/after in the tooltip %r' % tip)
    return int(b.group(1).replace(',', '')), int(a.group(1).replace(',', ''))


def optimised(src):
    """diff_work.py with lookup() rewritten in fewer lines."""
    fast = re.sub(r'    # slow begin\n.*?    # slow end\n',
                  '    found = set(items)\n    return sum(1 for k in keys if k in found)\n',
                  src, flags=re.S)
    check(fast != src, 'the markers are gone from diff_work.py')
    return fast


@case
def real(opts):
    with open(os.path.join(opts.targets, 'diff_work.py')) as f:
        slow = f.read()
    script = os.path.join(opts.tmp, 'work.py')      # one path for both: frames match by file
    outs, pprofs = {}, {}
    for side, text, events in (('before', slow, 'cpu-clock'),
                               ('after', optimised(slow), 'cpu-clock,page-faults')):
        with open(script, 'w') as f:
            f.write(text)
        pprofs[side] = os.path.join(opts.tmp, side + '.pb.gz')
        r = hwspy(opts, ['record', '-e', events, '-F', '999', '-o', pprofs[side], '--'] +
                  opts.py.argv + [script, '50'])
        check(r.returncode == 0, 'hwspy record (%s) exited %d' % (side, r.returncode))
        outs[side] = os.path.join(opts.tmp, side + '.folded')
        r = hwspy(opts, ['convert', pprofs[side], '-o', outs[side]])
        check(r.returncode == 0, 'hwspy convert (%s) exited %d' % (side, r.returncode))
    prof = {s: harness.Profile.read(p) for s, p in outs.items()}

    def weight(side, fn):
        return prof[side].weight(lambda fr: any(x.startswith(fn + ' (' + script) for x in fr))

    lookup = {s: weight(s, 'lookup') for s in prof}
    steady = {s: weight(s, 'steady') for s in prof}
    log('lookup %s, steady %s, totals %s' % (lookup, steady, {s: p.total for s, p in prof.items()}))
    check(lookup['before'] > 0.3 * prof['before'].total, 'lookup is not slow in BEFORE')

    # the table names a file by its path below its profile's scripts' directory: work.py
    fn_lookup, fn_steady = 'lookup (work.py)', 'steady (work.py)'
    for extra in (['--ignore-lines', '--no-normalize'], ['--no-normalize'], []):
        # every row: a steady whose self weight came out equal on both sides (its total not)
        # sorts below the rows whose self changed, past the default 20 (a full run's did)
        r = hwspy(opts, ['diff', outs['before'], outs['after'], '--top', '1000'] + extra)
        check(r.returncode == 0, 'hwspy diff %s exited %d' % (extra, r.returncode))
        log(r.stdout)
        rows, heads = table(r.stdout)
        # hwspy's folded files name their event in their header line: cpu-clock, in seconds
        check(list(rows) == ['cpu-clock'], 'events in the table: %s' % list(rows))
        check(re.match(r'cpu-clock: [0-9.]+ (s|ms) -> [0-9.]+ (s|ms) of CPU', heads['cpu-clock']),
              'the folded files\' headline is not in seconds of CPU: %r' % heads['cpu-clock'])
        ev = rows['cpu-clock']
        if '--no-normalize' in extra and fn_steady not in ev and steady['before'] == steady['after']:
            # equal work, equal samples (it happens: 218 and 218): a row of no change is left
            # out of the table ("the other functions did not change")
            check('(the other functions did not change)' in r.stdout,
                  'steady unchanged, and the table does not say so')
            ev = dict(ev, **{fn_steady: (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)})
        check(fn_lookup in ev and fn_steady in ev, 'lookup or steady missing from the table')
        # the biggest drop: the most negative self delta (callers lose as much in total)
        drop = min(ev.items(), key=lambda kv: kv[1][2])[0]
        check(drop == fn_lookup, 'the biggest drop is %s, not lookup' % drop)
        first = [l for l in r.stdout.splitlines() if ROW.match(l)][0]
        check('--no-normalize' not in extra or first.endswith(fn_lookup),
              'the first row is not lookup: %r' % first)
        tb, ta = prof['before'].total, prof['after'].total
        base_a = tb if '--no-normalize' in extra else ta
        near(ev[fn_lookup][3], 100.0 * lookup['before'] / tb, 0.01, 'lookup total before %')
        near(ev[fn_lookup][4], 100.0 * lookup['after'] / base_a, 0.01, 'lookup total after %')
        if '--no-normalize' in extra:
            # equal work: steady roughly unchanged next to lookup's drop (cpu-clock in a busy VM
            # counts stolen time too, so "roughly" is a third of that drop)
            check(abs(ev[fn_steady][5]) < abs(ev[fn_lookup][5]) / 3,
                  'steady changed by %+.2f points, lookup by %+.2f: not "roughly unchanged"'
                  % (ev[fn_steady][5], ev[fn_lookup][5]))
        else:
            check(ev[fn_steady][5] > 0, 'steady did not grow its share when lookup shrank')

    # hwspy's pprof files: events by name (page-faults only in AFTER: said and left out), rates
    # per second; a folded file against a pprof file: its counts stand for cpu-clock
    r = hwspy(opts, ['diff', pprofs['before'], pprofs['after'], '--no-normalize'])
    check(r.returncode == 0, 'hwspy diff of the pprof files exited %d' % r.returncode)
    log(r.stdout)
    rows, heads = table(r.stdout)
    check(list(rows) == ['cpu-clock'], 'events in the table: %s' % list(rows))
    # in cpu-clock's unit: seconds of CPU, the rates as CPUs used
    check(re.fullmatch(r'cpu-clock: [0-9.]+ (s|ms) -> [0-9.]+ (s|ms) of CPU, [+-][0-9.]+% '
                       r'\([0-9.]+ CPUs -> [0-9.]+ CPUs, [+-][0-9.]+%\)', heads['cpu-clock']),
          'the headline is not in seconds of CPU and CPUs: %r' % heads['cpu-clock'])
    check(re.search(r'\n +% +% +pts +s +% +% +pts +s\n', r.stdout),
          'the deltas of cpu-clock are not in seconds')
    check('page-faults is only in AFTER: not compared' in r.stderr, 'page-faults not named')
    first = [l for l in r.stdout.splitlines() if ROW.match(l)][0]
    check(first.endswith(fn_lookup), 'pprof: the first row is not lookup: %r' % first)
    r2 = hwspy(opts, ['diff', outs['before'], pprofs['after'], '--no-normalize'])
    check(r2.returncode == 0, 'hwspy diff folded pprof exited %d' % r2.returncode)
    rows2 = table(r2.stdout)[0]
    check(list(rows2) == ['cpu-clock'] and rows2['cpu-clock'] == rows['cpu-clock'],
          'folded against pprof gives another table:\n%s' % r2.stdout)
    # another tool's folded file (no header line) has no unit: no change in seconds claimed
    bare = os.path.join(opts.tmp, 'bare.folded')
    with open(outs['before']) as f, open(bare, 'w') as g:
        g.writelines(l for l in f if not l.startswith('#'))
    r2 = hwspy(opts, ['diff', bare, pprofs['after'], '--no-normalize'])
    check(r2.returncode == 0, 'hwspy diff bare-folded pprof exited %d' % r2.returncode)
    check('(BEFORE is a folded file\'s counts, of no known unit: compare the shares)'
          in table(r2.stdout)[1]['cpu-clock'], 'the headline of folded against pprof: %r'
          % table(r2.stdout)[1])

    # the differential flame graph, raw, BEFORE's widths (--negate: the optimised lookup may get
    # no sample at all in AFTER, and then has no width there): lookup deep blue, steady nearly
    # white
    svg = os.path.join(opts.tmp, 'diff.svg')
    r = hwspy(opts, ['diff', outs['before'], outs['after'], '-o', svg, '--ignore-lines',
                     '--no-normalize', '--negate'])
    check(r.returncode == 0 and os.path.getsize(svg) > 0, 'hwspy diff -o diff.svg failed')
    frames = svg_frames(svg)
    fill, tip = frames.get(fn_lookup, (None, None))
    check(fill, 'no frame %s in the graph' % fn_lookup)
    log('lookup: %s %r' % (fill, tip))
    red, green, blue = rgb(fill)
    # deep blue: main and <module> drop as much (more, with noise), so not always the deepest
    check(blue == 255 and red < 110 and green < 110, 'lookup is not deep blue: %s' % fill)
    check(tip_counts(tip) == (lookup['before'], lookup['after']),
          'lookup tooltip %r, the folded files say %s' % (tip, lookup))
    fill, tip = frames[fn_steady]
    log('steady: %s %r' % (fill, tip))
    check(min(rgb(fill)) > 150, 'steady is not nearly white: %s' % fill)
    check(tip_counts(tip) == (steady['before'], steady['after']),
          'steady tooltip %r, the folded files say %s' % (tip, steady))
    # lines kept: steady's frames moved, so in the graph they are new
    r = hwspy(opts, ['diff', outs['before'], outs['after'], '-o', svg, '--no-normalize'])
    check(r.returncode == 0, 'hwspy diff -o diff.svg (lines kept) failed')
    moved = {t: (rgb(f), tip_counts(tip)) for t, (f, tip) in svg_frames(svg).items()
             if t.startswith('steady (work.py')}
    log('steady frames: %s' % moved)
    heaviest = max(moved.values(), key=lambda v: v[1][1]) if moved else None
    check(heaviest and heaviest[1][0] == 0 and heaviest[0][0] == 255 and heaviest[0][2] < 255,
          'steady at its new line is not new and red: %s' % moved)
    check(all(c[2] == 255 or c[0] == 255 for c, _ in moved.values() if c[0] != c[2]) and
          not any(c[0] < 255 for c, _ in moved.values()), 'a steady frame is blue: %s' % moved)


def austin_pyspy_pair(opts):
    """BEFORE by austin, AFTER by py-spy: main -> load (300 -> 100, lines moved), compute
    500 -> 1500 (two lines after), collate new 400; austin's thread is left out."""
    before = write(os.path.join(opts.tmp, 'before.austin'), [
        '# mode: wall', '',
        'P42;T0x7f00;app.py:main:10;app.py:load:20;app.py:read:5 300',
        'P42;T0x7f00;app.py:main:10;app.py:load:21 200',
        'P42;T0x7f01;app.py:main:10;app.py:compute:30 500'])
    after = write(os.path.join(opts.tmp, 'after.pyspy'), [
        'main (app.py:10);load (app.py:22);read (app.py:5) 100',
        'main (app.py:10);compute (app.py:30) 500',
        'main (app.py:10);compute (app.py:31) 1000',
        'main (app.py:10);collate (app.py:40) 400'])
    return before, after


@case
def formats(opts):
    before, after = austin_pyspy_pair(opts)
    r = hwspy(opts, ['diff', before, after])
    check(r.returncode == 0, 'diff austin py-spy exited %d' % r.returncode)
    log(r.stdout)
    rows, heads = table(r.stdout)
    ev = rows['samples']
    # folded files: counts of no known unit, as they are
    check(heads['samples'] == 'samples: 1,000 -> 2,000, +100.0%', heads['samples'])
    # normalised: shares of 1000 and of 2000
    want = {'load (app.py)': (20, 0, -20, 50, 5, -45), 'compute (app.py)': (50, 75, 25, 50, 75, 25),
            'read (app.py)': (30, 5, -25, 30, 5, -25), 'collate (app.py)': (0, 20, 20, 0, 20, 20),
            }
    check(set(ev) == set(want), 'functions %s' % sorted(ev))
    check('(the other functions did not change)' in r.stdout, 'main (unchanged) is not noted')
    for fn, w in want.items():
        for got, exp, what in zip(ev[fn], w, ('self before', 'self after', 'self delta',
                                               'total before', 'total after', 'total delta')):
            near(got, exp, 0.005, '%s %s' % (fn, what))
    first = [l for l in r.stdout.splitlines() if ROW.match(l)][0]
    check(first.endswith('compute (app.py)') and '+500' in first, 'first row %r' % first)
    # raw: shares of BEFORE's 1000
    r = hwspy(opts, ['diff', before, after, '--no-normalize'])
    ev = table(r.stdout)[0]['samples']
    near(ev['compute (app.py)'][4], 150, 0.005, 'raw compute total after')
    near(ev['load (app.py)'][5], -40, 0.005, 'raw load total delta')
    # perf + stackcollapse against hwspy's own folded: native frames by name
    perf = write(os.path.join(opts.tmp, 'before.perf'), [
        'python3;_start;main;deflate 60', 'python3;_start;main;inflate 40'])
    mine = write(os.path.join(opts.tmp, 'after.folded'), [
        'python3;_start;main;deflate 10', 'python3;_start;main;inflate 40'])
    r = hwspy(opts, ['diff', perf, mine, '--no-normalize'])
    ev = table(r.stdout)[0]['samples']
    near(ev['deflate'][2], -50, 0.005, 'perf deflate self delta')
    check('inflate' not in ev, 'inflate did not change but is in the table')
    # native code without symbols ("MODULE+0xOFF", with " [MODULE]" or without): one row per
    # module, unless --native-offsets
    nb = write(os.path.join(opts.tmp, 'before.native'), [
        'main (app.py:1);_umath.so+0x1a2b [_umath.so] 300',
        'main (app.py:1);_umath.so+0x1a2b [_umath.so];_umath.so+0x3c4d [_umath.so] 200',
        'main (app.py:1);step (app.py:5) 500'])
    na = write(os.path.join(opts.tmp, 'after.native'), [
        'main (app.py:1);_umath.so+0x5e6f 100', 'main (app.py:1);step (app.py:5) 900'])
    r = hwspy(opts, ['diff', nb, na])
    log(r.stdout)
    ev = table(r.stdout)[0]['samples']
    check(set(ev) == {'[_umath.so]', 'step (app.py)'}, 'folded native rows: %s' % sorted(ev))
    near(ev['[_umath.so]'][3], 50, 0.005, '[_umath.so] total before')
    near(ev['[_umath.so]'][4], 10, 0.005, '[_umath.so] total after')
    check("([_umath.so]: the module's code without symbols, in one row; --native-offsets "
          "splits it by address)" in r.stdout, 'the folded row is not explained')
    r = hwspy(opts, ['diff', nb, na, '--native-offsets'])
    ev = table(r.stdout)[0]['samples']
    check(set(ev) == {'_umath.so+0x1a2b', '_umath.so+0x3c4d',
                      '_umath.so+0x5e6f', 'step (app.py)'},
          '--native-offsets rows: %s' % sorted(ev))
    # every label of the differential SVG legible on its box
    svg = os.path.join(opts.tmp, 'formats.svg')
    r = hwspy(opts, ['diff', before, after, '--ignore-lines', '-o', svg])
    check(r.returncode == 0, 'diff -o formats.svg exited %d' % r.returncode)
    with open(svg, encoding='utf-8') as f:
        graph = test_browser.Graph(f.read(), svg)
    check_contrast(graph.frames, 'formats.svg')
    check(any(f.dark for f in graph.frames), 'no white label on the deep blue of load')
    check('>samples: 1,000 -&gt; 2,000, +100.0%;' in open(svg, encoding='utf-8').read(),
          'the SVG subtitle does not say the total change')
    # `stack before after` lines, --ignore-lines: BEFORE scaled to AFTER's total (x2)
    out = os.path.join(opts.tmp, 'd.folded')
    r = hwspy(opts, ['diff', before, after, '--ignore-lines', '-o', out])
    check(r.returncode == 0, 'diff -o d.folded exited %d' % r.returncode)
    # -o says what it wrote, in one line (as record and convert do); -q: nothing
    check(r.stderr == "hwspy: wrote '%s' (total 1,000 -> 2,000, +100%%)\n" % out,
          'diff -o: expected one line saying what it wrote, got %r' % r.stderr)
    q = hwspy(opts, ['diff', before, after, '--ignore-lines', '-q', '-o', out])
    check(q.returncode == 0 and q.stderr == '', 'diff -q -o: %r' % q.stderr)
    with open(out) as f:
        got = f.read()
    check(got == 'main (app.py);collate (app.py) 0 400\n'
                 'main (app.py);compute (app.py) 1000 1500\n'
                 'main (app.py);load (app.py) 400 0\n'
                 'main (app.py);load (app.py);read (app.py) 600 100\n', 'd.folded:\n%s' % got)
    checkouts(opts)


def checkout_lines(v, work, dot):
    np = '/tmp/x/venv%d/lib/python3.11/site-packages/numpy/linalg.py' % v
    return ['<module> (/tmp/x/v%d/app.py:1);main (/tmp/x/v%d/app.py:10);work (/tmp/x/v%d/pkg/m.py:3) %d'
            % (v, v, v, work),
            '<module> (/tmp/x/v%d/app.py:1);main (/tmp/x/v%d/app.py:10);dot (%s:7) %d'
            % (v, v, np, dot)]


def box_labels(path):
    with open(path, encoding='utf-8') as f:
        return re.findall(r'<text(?: class="on-dark")? x="[^"]*" y="[^"]*"(?: data-label="[^"]*")?>([^<]*)</text>',
                          f.read())


def checkouts(opts):
    """One script's profiles from two checkouts and virtualenvs (see the module docstring)."""
    before = write(os.path.join(opts.tmp, 'v1.folded'), checkout_lines(1, 600, 400))
    after = write(os.path.join(opts.tmp, 'v2.folded'), checkout_lines(2, 300, 700))
    r = hwspy(opts, ['diff', before, after])
    log(r.stdout)
    check(r.returncode == 0, 'diff of two checkouts of one script exited %d: %s'
          % (r.returncode, r.stderr.strip()))
    ev = table(r.stdout)[0]['samples']
    check(set(ev) == {'dot (numpy/linalg.py)', 'work (pkg/m.py)'},
          'functions of two checkouts: %s' % sorted(ev))
    check(all(row[3] > 0 and row[4] > 0 for row in ev.values()),
          'a function shows as added or removed: %s' % ev)
    for extra in (['--exact-paths'], ['--full-paths']):
        r = hwspy(opts, ['diff', before, after] + extra)
        check(r.returncode == 1 and 'almost nothing in common' in r.stderr,
              'with %s the two checkouts are not refused as unrelated' % extra[0])
        r = hwspy(opts, ['diff', before, after, '--force'] + extra)
        ev = table(r.stdout)[0]['samples']
        check(r.returncode == 0 and len(ev) == 8 and
              all((row[3] == 0) != (row[4] == 0) for row in ev.values()),
              'with %s every function is on one side only: %s' % (extra[0], ev))
    for extra, want in (([], 'work (pkg/m.py:3)'), (['--full-paths'], 'work (/tmp/x/v2/pkg/m.py:3)')):
        out = os.path.join(opts.tmp, 'checkouts.svg')
        r = hwspy(opts, ['diff', before, after, '-o', out, '--force'] + extra)
        check(r.returncode == 0 and want in box_labels(out),
              'diff %s: the SVG\'s box labels are %s' % (' '.join(extra), box_labels(out)))
        r = hwspy(opts, ['convert', before, '-o', out] + extra)
        want = want.replace('v2', 'v1')
        check(r.returncode == 0 and want in box_labels(out),
              'convert %s: the SVG\'s box labels are %s' % (' '.join(extra), box_labels(out)))


@case
def svg_browser(opts):
    before, after = austin_pyspy_pair(opts)
    svg = os.path.join(opts.tmp, 'diff.svg')
    r = hwspy(opts, ['diff', before, after, '--ignore-lines', '-o', svg])
    check(r.returncode == 0, 'hwspy diff -o diff.svg exited %d' % r.returncode)
    with open(svg, encoding='utf-8') as f:
        graph = test_browser.Graph(f.read(), svg)
    dom = test_browser.load(svg, None, 'no query')
    colours = {'load (app.py)': (0, 0, 255), 'compute (app.py)': (255, 113, 113),
               'main (app.py)': (255, 255, 255), 'collate (app.py)': (255, 142, 142)}
    check_contrast(dom.frames, 'the DOM')
    for f, d in test_browser.same_frames(graph, dom):
        check(d.fill == f.fill and (d.xs, d.w) == (f.xs, f.w) and d.dark == f.dark,
              'the script changed %r' % d)
        if f.name in colours:
            check(rgb(d.fill) == colours[f.name], '%s: fill %s, expected rgb%s'
                  % (f.name, d.fill, colours[f.name]))
    with open(svg, encoding='utf-8') as f:
        text = f.read()
    check('load (app.py)\nbefore: 500 (50.00%)\nafter: 100 (5.00%)\ndelta: -900 (-45.00 pts)'
          in text, 'the load tooltip does not hold its deltas')
    # search: the share of AFTER's widths
    dom = test_browser.load(svg, {'s': '^load'}, '?s=^load')
    test_browser.check_matched(dom, 5.0)
    hits = test_browser.check_search(graph, dom, '^load')
    check(hits == ['load (app.py)'], 'search painted %s' % hits)
    # load's label, white on its deep blue, turns black on the search's magenta
    check(graph.named('load (app.py)').dark and not dom.named('load (app.py)').dark,
          'the label of the found load is not black on the search fill')
    check_contrast(dom.frames, 'the DOM of ?s=^load')
    # zoom on compute
    c = graph.named('compute (app.py)')
    dom = test_browser.load(svg, {'x': c.xs, 'y': c.ys}, 'zoom on compute')
    z = dom.named('compute (app.py)')
    check(abs(z.x - 10) < 0.01 and abs(z.w - 1180) < 0.01, 'compute not zoomed: %r' % z)
    check('hide' in dom.named('collate (app.py)').cls, 'collate is not hidden when zoomed')
    check('parent' in dom.named('main (app.py)').cls, 'main is not shown as a parent')


@case
def errors(opts):
    good = write(os.path.join(opts.tmp, 'good.folded'), ['main (a.py:1);f (a.py:2) 10'])
    bad = write(os.path.join(opts.tmp, 'bad.folded'), ['main (a.py:1) 5', 'main;;f 3'])
    empty = write(os.path.join(opts.tmp, 'empty.folded'), ['# nothing'])
    other = write(os.path.join(opts.tmp, 'other.folded'), ['serve (web.py:1);handle (web.py:9) 10'])
    out = os.path.join(opts.tmp, 'x.svg')
    for args, code, words in (
            ([good, bad], 1, [bad + ':2:']),
            ([empty, good], 1, [empty, 'no samples']),
            ([good, os.path.join(opts.tmp, 'none.folded')], 1, ['cannot read']),
            ([good, other], 1, ['almost nothing in common', '--force']),
            (['-', '-'], 2, ['standard input']),
            ([good, good, '--format', 'png'], 2, ['unknown diff format']),
            ([good, good, '--weight', 'cycles'], 1, ['--weight cycles', 'share: samples']),
            ([good], 2, ['two profiles'])):
        r = hwspy(opts, ['diff'] + args + ['-o', out])
        lines = [l for l in r.stderr.splitlines() if l.startswith('hwspy: ')]
        check(r.returncode == code, 'diff %s exited %d, expected %d' % (args, r.returncode, code))
        check(len(lines) == 1 and all(w in lines[0] for w in words),
              'diff %s: expected one line with %r, got %r' % (args, words, r.stderr))
        check(not os.path.exists(out), 'an output was left behind by diff %s' % args)
    # no shared event: page-faults against cpu-clock
    prof = {}
    for ev in ('page-faults', 'cpu-clock'):
        prof[ev] = os.path.join(opts.tmp, ev + '.pb.gz')
        r = hwspy(opts, ['record', '-e', ev, '-o', prof[ev], '--', '/usr/bin/python3', '-c',
                         'x = [bytearray(4096) for i in range(20000)]; sum(range(3 * 10**6))'])
        check(r.returncode == 0, 'hwspy record -e %s exited %d' % (ev, r.returncode))
    r = hwspy(opts, ['diff', prof['page-faults'], prof['cpu-clock'], '-o', out])
    lines = [l for l in r.stderr.splitlines() if l.startswith('hwspy: ')]
    check(r.returncode == 1 and len(lines) == 1 and 'no event to compare' in lines[0] and
          'page-faults' in lines[0] and 'cpu-clock' in lines[0], 'no shared event: %r' % r.stderr)
    check(not os.path.exists(out), 'an output was left behind')
    # a count event: exact counts and per second
    r = hwspy(opts, ['diff', prof['page-faults'], prof['page-faults']])
    head = table(r.stdout)[1].get('page-faults', '')
    check(re.fullmatch(r'page-faults: ([0-9,]+|[0-9.]+ [kMG]) -> \1, \+0\.0% '
                       r'\(([0-9,]+|[0-9.]+ [kMG])/s -> \2/s, \+0\.0%\)', head),
          'the page-faults headline: %r' % head)
    r = hwspy(opts, ['diff', good, other, '--force'])
    check(r.returncode == 0 and 'handle (web.py)' in r.stdout, '--force did not compare')


def test(opts):
    needs_python = opts.case == 'real'
    check(bool(opts.python) == needs_python,
          '--case %s %s --python' % (opts.case, 'needs' if needs_python else 'takes no'))
    CASES[opts.case](opts)


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--case', choices=sorted(CASES), required=True)
    harness.main(test, p)

"""--color-by METRIC: SVG frames filled by a ratio of two events, one --case each.

  convert   a pprof file with the events cpu-clock and page-faults (written here by
            pprof_build.py: four functions of known ratios, one with 3 samples) through
            `hwspy convert -o X.svg --color-by page-faults/cpu-clock`: xmllint accepts it (where
            installed), each frame's tooltip gives the metric first among the ratios, in faults
            per ms of CPU (cpu-clock counts ns), with the value computed here from the stacks,
            the fills follow the ratios' order on the
            scale (YlOrRd: its green falls from the low end to the high one), the frame with 3
            samples is grey and says "too few samples", the legend names the metric and its
            ends are the lowest and highest coloured values (nothing is clipped in this
            graph). Then the mistakes, each one line on stderr, its exit status and no output
            file: a malformed metric ('', 'A/', '/B': exit 2, before the input is read;
            'A/B/C': exit 1, as --weight's unknown event is in convert), an event the file
            lacks (exit 1, the file's events named), a non-SVG output (exit 2), and hwspy diff
            --color-by (exit 2).
  record    (--python) hwspy record -e cpu-clock,page-faults --color-by page-faults/cpu-clock
            -F 1000 --function -d 2 -o X.svg -- PYTHON faults.py 4000 20000 (turns of ~11 ms
            of touch_pages, which faults on every page, and ~20 ms of compute, which does not:
            each is many 1 ms samples long, so the counted faults land in the function that
            caused them): touch_pages is the reddest frame (no coloured frame is further up the
            scale), with a ratio 5x compute's or more, and the compute frame under main the
            least red (none further down). Measured (page-faults read at cpu-clock's samples,
            before they sampled on their own): 5 runs at load average 1 to 1.2 and 2 more beside
            a CPU hog gave touch_pages 0.00029 to 0.00034 faults per ns, compute 0 to 2.8e-06:
            100x apart at the least. Then the mistakes, before anything runs: an event -e lacks,
            a malformed metric, a folded output: one line each, exit 2, no output, and the
            command never started (it would have written a file).
  alloc     (--python) hwspy record -e cpu-clock,page-faults --color-by page-faults/cpu-clock
            --function -d 1 -p PID of tests/targets/stat_work.py alloc (alloc() takes every page
            fault in turns of ~1 ms, inner() only computes, ~2.5 ms: at the default 100 Hz a
            turn is far shorter than a sample), 3 runs, the third beside two CPU hogs: the legend
            says "page-faults per ms of CPU", alloc holds >= 80% of the faults of the two, its
            ratio is 5x inner's or more and it is further up the scale (inner grey or lower).
            page-faults samples on its own (record_opts.leaders): read at cpu-clock's samples
            instead, most faults went to inner, where the tick came.
"""
import os
import re
import shutil
import subprocess
import time
import xml.etree.ElementTree as ET

import harness
import pprof_build
from harness import Fail, check, log

CASES = {}
SVG = '{http://www.w3.org/2000/svg}'
METRIC = 'page-faults/cpu-clock'
LABEL = 'page-faults per ms of CPU'     # the metric in its units: cpu-clock counts ns
PER_MS = 1e6
GREY = (180, 180, 180)
LOW, HIGH = (254, 217, 118), (227, 26, 28)     # the scale's ends (output.h)


def case(fn):
    CASES[fn.__name__.replace('_', '-')] = fn
    return fn


class Frame:
    def __init__(self, g):
        tip = g.find(SVG + 'title').text.split('\n')
        self.name, self.lines = tip[0], tip[1:]
        r = g.find(SVG + 'rect')
        self.w = float(r.get('width'))
        m = re.fullmatch(r'rgb\((\d+),(\d+),(\d+)\)', r.get('fill'))
        check(m, 'frame %r: fill %r is not rgb()' % (self.name, r.get('fill')))
        self.rgb = tuple(int(x) for x in m.groups())

    def value(self, event):
        for line in self.lines:
            m = re.fullmatch(re.escape(event) + r': ([\d,]+) \(.*\)', line)
            if m:
                return int(m.group(1).replace(',', ''))
        raise Fail('frame %r has no %s line: %r' % (self.name, event, self.lines))

    def metric_line(self):
        """The first line after "samples: N": the colour metric's."""
        i = next((i for i, l in enumerate(self.lines) if l.startswith('samples: ')), None)
        check(i is not None and i + 1 < len(self.lines),
              'frame %r: no line after "samples: N": %r' % (self.name, self.lines))
        return self.lines[i + 1]

    def pos(self):
        """Where the fill is on the scale, 0 (low) to 1 (high); None for grey. The scale's
        green falls steadily from its low end to its high end, red and blue never rise."""
        if self.rgb == GREY:
            return None
        return (LOW[1] - self.rgb[1]) / (LOW[1] - HIGH[1])

    def __repr__(self):
        return '%r w=%.1f rgb%s %s' % (self.name, self.w, self.rgb, self.metric_line())


def read_svg(path):
    with open(path, 'rb') as f:
        data = f.read()
    if shutil.which('xmllint'):
        r = subprocess.run(['xmllint', '--noout', path], capture_output=True, text=True)
        check(r.returncode == 0, 'xmllint rejects %s: %s' % (path, r.stderr.strip()))
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        raise Fail('%s is not well-formed XML: %s' % (path, e))
    texts = {t.get('id'): t.text or '' for t in root.iter(SVG + 'text') if t.get('id')}
    frames = [Frame(g) for g in root.find('.//%sg[@id="frames"]' % SVG).findall(SVG + 'g')]
    check(frames, '%s has no frames' % path)
    return frames, texts


def check_scale(frames):
    """The fills follow the ratios: for any two coloured frames, the higher value is at least as
    far up the scale (and the fills lie on it)."""
    coloured = []
    for f in frames:
        if f.pos() is None:
            continue
        check(-0.01 <= f.pos() <= 1.01 and LOW[0] >= f.rgb[0] >= HIGH[0] and
              LOW[2] >= f.rgb[2] >= HIGH[2], '%r: its fill is not on the scale' % f)
        m = re.fullmatch(re.escape(LABEL) + r': ([0-9.e+-]+)', f.metric_line())
        check(m, '%r: coloured, but its metric line is not "%s: VALUE"' % (f, LABEL))
        coloured.append((float(m.group(1)), f.pos(), f))
    coloured.sort(key=lambda c: c[0])
    for (x0, p0, f0), (x1, p1, f1) in zip(coloured, coloured[1:]):
        check(p1 >= p0 - 1e-9 or x1 == x0,
              '%r has a higher %s than %r but is lower on the scale' % (f1, METRIC, f0))
    return coloured


def fmt(x):
    """A value as an A/B metric is written: 4 significant digits, whole from 10^4 on."""
    return '%.0f' % x if x >= 1e4 else '%.4g' % x


def run_hwspy(opts, args, stdin=subprocess.DEVNULL, timeout=60):
    log('$ hwspy %s' % ' '.join(args))
    r = subprocess.run([opts.hwspy] + args, stdin=stdin, capture_output=True, text=True,
                       timeout=timeout)
    log('exit %d; stderr:\n%s' % (r.returncode, r.stderr.rstrip()))
    return r


def check_refused(r, status, out, *words):
    lines = r.stderr.strip().split('\n')
    check(r.returncode == status, 'exit %d, expected %d' % (r.returncode, status))
    check(len(lines) == 1 and lines[0].startswith('hwspy: '),
          'expected one line on stderr, got %r' % r.stderr)
    for w in words:
        check(w in lines[0], 'the message does not say %r: %r' % (w, lines[0]))
    check(not os.path.exists(out), '%s was written' % out)


# ---------------------------------------------------------------------------- convert

MAIN = ('main', 'app.py', 1)
# (function, samples, cpu-clock ns, page-faults)
FUNCS = [('low', 30, 30000000, 30), ('mid', 30, 30000000, 300), ('high', 30, 30000000, 3000),
         ('rare', 3, 3000000, 10000)]


@case
def convert(opts):
    src = os.path.join(opts.tmp, 'two.pb.gz')
    with open(src, 'wb') as f:      # cpu-clock last: pprof's default type, hwspy's event 0
        f.write(pprof_build.profile(
            [('samples', 'count'), ('page-faults', 'events'), ('cpu-clock', 'nanoseconds')],
            [([MAIN, (name, 'app.py', 10 * (i + 1))], [n, pf, ns])
             for i, (name, n, ns, pf) in enumerate(FUNCS)]))
    out = os.path.join(opts.tmp, 'color.svg')
    r = run_hwspy(opts, ['convert', src, '-o', out, '--color-by', METRIC])
    check(r.returncode == 0, 'hwspy convert --color-by %s failed' % METRIC)
    frames, texts = read_svg(out)
    by = {f.name.split(' ')[0]: f for f in frames}
    for f in frames:
        log('  %r' % f)
    check(set(by) == {'all', 'main', 'low', 'mid', 'high', 'rare'}, 'frames: %s' % sorted(by))
    for name, n, ns, pf in FUNCS:
        f = by[name]
        check(f.value('cpu-clock') == ns and f.value('page-faults') == pf, '%r: counts' % f)
        want = '%s: %s' % (LABEL, fmt(pf / ns * PER_MS))
        if n < 10:
            want += ', too few samples to colour (%d, under 10)' % n
        check(f.metric_line() == want, '%r: metric line %r, expected %r'
              % (f, f.metric_line(), want))
    check(by['rare'].rgb == GREY, 'rare (3 samples) is not grey: %r' % by['rare'])
    coloured = check_scale(frames)
    check(by['low'].rgb == LOW and by['main'].rgb == HIGH and by['all'].rgb == HIGH,
          'the lowest and highest values are not at the ends of the scale')
    check(by['low'].pos() < by['mid'].pos() < by['high'].pos() < by['main'].pos(),
          'the fills do not rise with the ratio: low, mid, high, main')
    lo, hi = coloured[0][0], coloured[-1][0]
    check(texts.get('legend-name') == 'colour: ' + LABEL, 'legend: %r' % texts.get('legend-name'))
    check(texts.get('legend-low') == fmt(lo) and texts.get('legend-high') == fmt(hi),
          'the legend says %r to %r, the coloured frames go from %s to %s'
          % (texts.get('legend-low'), texts.get('legend-high'), fmt(lo), fmt(hi)))
    check('under 10 samples' in texts.get('legend-grey-text', ''), 'the legend says not what grey is')
    log('fills follow %s over %d coloured frames; legend %s to %s'
        % (METRIC, len(coloured), texts['legend-low'], texts['legend-high']))

    bad = os.path.join(opts.tmp, 'bad.svg')
    for metric, status, words in (('', 2, ['is empty']), ('A/', 2, ["no event after '/'"]),
                                  ('/B', 2, ["no event before '/'"]),
                                  ('cpu-clock/page-faults/x', 1, ["more than one '/'"]),
                                  ('page-faults/nope', 1, ["no event 'nope'", "'cpu-clock'",
                                                           "'page-faults'"]),
                                  ('ipc', 1, ["'instructions'", "'cpu-clock'"])):
        check_refused(run_hwspy(opts, ['convert', src, '-o', bad, '--color-by', metric]),
                      status, bad, '--color-by', *words)
    folded = os.path.join(opts.tmp, 'bad.folded')
    check_refused(run_hwspy(opts, ['convert', src, '-o', folded, '--color-by', METRIC]), 2,
                  folded, "'%s' is written as folded" % folded)
    check_refused(run_hwspy(opts, ['diff', src, src, '-o', bad, '--color-by', METRIC]), 2, bad,
                  'hwspy diff')


# ---------------------------------------------------------------------------- record

def widest(frames, name, script):
    got = [f for f in frames if f.name.startswith(name + ' (') and script in f.name]
    check(got, 'no %s frame' % name)
    return max(got, key=lambda f: f.w)


@case
def record(opts):
    out = os.path.join(opts.tmp, 'faults.svg')
    argv = [opts.hwspy, 'record', '-q', '-e', 'cpu-clock,page-faults', '--color-by', METRIC,
            '-F', '1000', '--function', '-d', '2', '-o', out, '--',
            *opts.py.argv, os.path.join(opts.targets, 'faults.py'), '4000', '20000']
    log('$ %s' % ' '.join(argv))
    # faults.py runs until its stdin says quit or closes: a pipe held open until -d ends it
    t0 = time.monotonic()
    with open(os.path.join(opts.tmp, 'stderr'), 'w+') as err:
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             stderr=err, start_new_session=True)
        harness.Process.profilers.append(p)
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            raise Fail('hwspy record did not finish in 60 s')
        finally:
            p.stdin.close()
        err.seek(0)
        log('exit %d after %.1f s; stderr:\n%s' % (p.returncode, time.monotonic() - t0,
                                                   err.read().rstrip()))
    # the target ends by hwspy's SIGTERM at -d, as asked: hwspy exits 0
    check(p.returncode == 0, 'hwspy record exited %d' % p.returncode)
    frames, texts = read_svg(out)
    coloured = check_scale(frames)
    check(len(coloured) >= 3, 'only %d coloured frames' % len(coloured))

    touch, compute = widest(frames, 'touch_pages', 'faults.py'), widest(frames, 'compute', 'faults.py')
    log('touch_pages: %r\ncompute: %r\nlegend: %s to %s'
        % (touch, compute, texts.get('legend-low'), texts.get('legend-high')))
    top = max(c[1] for c in coloured)
    bottom = min(c[1] for c in coloured)
    check(touch.pos() is not None and touch.pos() >= top - 1e-9,
          'touch_pages is not the reddest frame: %r, the reddest is at %.2f' % (touch, top))
    check(compute.pos() is not None and compute.pos() <= bottom + 1e-9,
          'compute is not the least red frame: %r, the least red is at %.2f' % (compute, bottom))
    ratio = {f: f.value('page-faults') / f.value('cpu-clock') for f in (touch, compute)}
    check(ratio[touch] >= 5 * ratio[compute] and ratio[touch] > 0,
          'touch_pages has %.3g faults per ns, compute %.3g' % (ratio[touch], ratio[compute]))

    marker = os.path.join(opts.tmp, 'ran')
    cmd = ['--', *opts.py.argv, '-c', 'open(%r, "w")' % marker]
    bad = os.path.join(opts.tmp, 'bad.svg')
    for args, words in ((['-e', 'cpu-clock,page-faults', '--color-by', 'page-faults/nope'],
                         ["no event 'nope'", "'cpu-clock'"]),
                        (['-e', 'cpu-clock', '--color-by', 'ipc'], ["'instructions'"]),
                        (['-e', 'cpu-clock', '--color-by', 'cpu-clock/'], ["no event after"])):
        t0 = time.monotonic()
        check_refused(run_hwspy(opts, ['record'] + args + ['-o', bad] + cmd), 2, bad, *words)
        check(not os.path.exists(marker) and time.monotonic() - t0 < 10,
              'the command ran although the options were refused')
    folded = os.path.join(opts.tmp, 'bad.folded')
    check_refused(run_hwspy(opts, ['record', '-e', 'cpu-clock,page-faults', '--color-by', METRIC,
                                   '-o', folded] + cmd), 2, folded, 'written as folded')
    check(not os.path.exists(marker), 'the command ran although the options were refused')


@case
def alloc(opts):
    w = harness.Process(opts.py.argv + [os.path.join(opts.targets, 'stat_work.py'), 'alloc',
                                        '60'])
    w.expect_ready()
    time.sleep(0.3)
    for run in range(3):
        hogs = []
        for _ in range(2 if run == 2 else 0):
            hogs.append(harness.Process(['/usr/bin/python3', '-c',
                                         'print("ready", flush=True)\nwhile True: pass']))
            hogs[-1].expect_ready()
        out = os.path.join(opts.tmp, 'alloc%d.svg' % run)
        r = run_hwspy(opts, ['record', '-q', '-e', 'cpu-clock,page-faults', '--color-by', METRIC,
                             '--function', '-d', '1', '-o', out, '-p', str(w.pid)])
        for h in hogs:
            h.kill()
        check(r.returncode == 0, 'run %d: hwspy record exited %d' % (run + 1, r.returncode))
        frames, texts = read_svg(out)
        check_scale(frames)
        a, i = widest(frames, 'alloc', 'stat_work.py'), widest(frames, 'inner', 'stat_work.py')
        log('run %d%s:\n  alloc: %r\n  inner: %r\n  legend: %s to %s'
            % (run + 1, ' beside two CPU hogs' if hogs else '', a, i, texts.get('legend-low'),
               texts.get('legend-high')))
        check(texts.get('legend-name') == 'colour: ' + LABEL,
              'the legend is %r, not in faults per ms of CPU' % texts.get('legend-name'))
        pf = {f: f.value('page-faults') for f in (a, i)}
        check(pf[a] >= 0.8 * (pf[a] + pf[i]), 'run %d: alloc has %d page faults, inner %d: '
              'inner only computes' % (run + 1, pf[a], pf[i]))
        ratio = {f: f.value('page-faults') / max(f.value('cpu-clock'), 1) for f in (a, i)}
        check(ratio[a] > 0 and ratio[a] >= 5 * ratio[i],
              'run %d: alloc has %.3g faults per ns, inner %.3g' % (run + 1, ratio[a], ratio[i]))
        check(a.pos() is not None and (i.pos() is None or i.pos() < a.pos()),
              'run %d: alloc is not further up the scale than inner: %r, %r' % (run + 1, a, i))
    w.kill()


def main():
    p = harness.parser(__doc__)
    p.add_argument('--case', required=True, choices=sorted(CASES))

    def test(opts):
        CASES[opts.case](opts)
    harness.main(test, p)


if __name__ == '__main__':
    main()

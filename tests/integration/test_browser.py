"""The interactive outputs run in headless Chromium (browser.py), one --case each.

  svg-search      hwspy convert of a folded file with known weights (977 samples; frames matching
                  ^(work_|<x&y>) cover 500, one match nested in another, one name full of XML
                  markup characters) to SVG, loaded as file:///...svg?s=REGEX: the SVG's own
                  script shows "Matched: 51.2%" (the union of the matches' spans, computed here
                  from the stacks, within 0.1), every matching frame's rect has the search fill,
                  every other keeps the fill the file gave it, nothing moved; ?s= of a regex that
                  matches nothing shows "Matched: 0.0%" and changes no fill.
  svg-zoom        the same graph loaded with ?x=..&y=.. (the rect x and y attributes of one frame,
                  read from the file): that frame fills the width (1200 - 2 * 10 px), its
                  ancestors have class "parent" and the full width, its children are scaled by
                  the same ratio, every other frame has class "hide", "Reset Zoom" is shown. For
                  the flame graph, and for --icicle with ?s=..&x=..&y=.., which also searches:
                  the search fill on every match (hidden ones too), "Matched" still the share of
                  the whole graph.
                  Then a graph taller than the window: a cold 50-deep import tower (5%) beside a
                  hot shallow frame (95 of 120), full paths in the input, loaded with no query
                  from a copy with a probe script appended: the hottest frame's rect lies
                  inside the window (the script scrolled to it; before, the window showed the
                  tower and the hot frame lay 300 px below it), its box label is the short
                  'hot (pkg/m.py:3)' while its tooltip keeps '/src/v1/pkg/m.py', a stdlib frame's
                  label is 'Thread.run (threading.py:1012)' and a native module's name shows once;
                  and zoomed on the stdlib frame (?x=..&y=..) its box shows the short label whole.
  speedscope-app  hwspy convert of a folded file (markup characters in a name) to
                  .speedscope.json, served with speedscope's built app (npm package speedscope,
                  dist/release) from a local HTTP server on 127.0.0.1 and loaded as
                  index.html#profileURL=...&view=sandwich: the page title carries the file's
                  name, no alert was raised and the sandwich table lists every function with the
                  total and self weight of the folded input. A truncated copy of the file is
                  loaded the same way and must fail that check (speedscope alerts "Unrecognized
                  format" for an unknown file, and its error view "Something went wrong." for a
                  broken .speedscope.json; the served index.html records alerts in the DOM
                  instead of blocking on them).
  speedscope-recorded  hwspy record --function of tests/targets/names_phases.py (phases A, B, A
                  and a named thread) to .speedscope.json, whose samples are in time order, one per
                  sample: the app imports it, and its sandwich table for the first profile (the
                  main thread) lists every function of its samples, the one with the most self
                  weight first
                  (cpu-clock's nanoseconds show as rounded durations: weights not compared); its
                  list of profiles names MainThread and CustomThreadNameLong.

  svg-color       hwspy convert --color-by page-faults/cpu-clock of a pprof file with those two
                  events (pprof_build.py; functions low, mid, high of known ratios, rare with 3
                  samples), loaded as file:///...svg?x=..&y=.. (zoomed on high) from a copy with a
                  probe script appended that, after load, notes each rect's fill and width, runs
                  search() (what the Search button's prompt and ?s= call), notes the fills and
                  "Matched", then presses Escape (reset search and zoom). Read back from the DOM:
                  as loaded the fills are the file's, rising on the scale (YlOrRd: green falls)
                  with the ratio, rare grey, the zoomed frame full width; the legend is there
                  (name, both ends, gradient, grey swatch); during the search the matches have
                  the search fill and the others their metric fill; after Escape every frame
                  has its metric fill back (not a kind's colour), its width and no class.

Each case runs Chromium twice (about 2 s each on an idle 2-core machine); svg-color once.
"""
import html.parser
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import browser
import harness
import pprof_build
from harness import Fail, Skip, check, log

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'unit',
                                'output'))
import check_speedscope  # noqa: E402  (find_schema)

CASES = {}
SVG = '{http://www.w3.org/2000/svg}'
SEARCH_FILL = 'rgb(230,0,230)'
WIDTH, XPAD = 1200, 10
HOSTILE = '<x&y> "z" \'w\' (a&b <c>.py:7)'
STACKS = [
    ('main (app.py:1);work_a (app.py:10);leaf (app.py:20)', 200),
    ('main (app.py:1);work_a (app.py:10);work_b (app.py:30);leaf (app.py:20)', 111),
    ('main (app.py:1);other (app.py:40);work_c (app.py:50)', 123),
    ('main (app.py:1);other (app.py:40);idle (app.py:60)', 300),
    ('main (app.py:1);%s;work_d [libwork.so]' % HOSTILE, 39),
    ('main (app.py:1);%s' % HOSTILE, 27),
    ('main (app.py:1);spin_[k]', 177),
]


def case(fn):
    CASES[fn.__name__.replace('_', '-')] = fn
    return fn


def convert(opts, name, stacks, *extra):
    """hwspy convert TMP/NAME.folded (stacks written there) -o TMP/NAME.EXT; the output path."""
    src = os.path.join(opts.tmp, name.split('.')[0] + '.folded')
    with open(src, 'w', encoding='utf-8') as f:
        f.write(''.join('%s %d\n' % s for s in stacks))
    out = os.path.join(opts.tmp, name)
    r = subprocess.run([opts.hwspy, 'convert', src, '-o', out] + list(extra),
                       capture_output=True, text=True, timeout=60)
    log('$ hwspy convert %s -o %s %s -> exit %d %s' % (src, out, ' '.join(extra), r.returncode,
                                                        r.stderr.strip()))
    check(r.returncode == 0, 'hwspy convert to %s failed' % name)
    return out


# ---------------------------------------------------------------------------- SVG

class Frame:
    def __init__(self, g):
        r = g.find(SVG + 'rect')
        self.name = g.find(SVG + 'title').text.split('\n')[0]
        self.xs, self.ys = r.get('x'), r.get('y')
        self.x, self.w = float(r.get('x')), float(r.get('width'))
        self.fill = r.get('fill')
        self.cls = set((g.get('class') or '').split())
        self.label = g.find(SVG + 'text').text or ''
        self.dark = 'on-dark' in (g.find(SVG + 'text').get('class') or '').split()  # white label

    def __repr__(self):
        return '%r x=%.2f w=%.2f y=%s fill=%s class=%s' % (
            self.name, self.x, self.w, self.ys, self.fill, ' '.join(sorted(self.cls)) or '-')


class Graph:
    """The frames (in document order) and the named texts of an SVG file or dumped DOM."""

    def __init__(self, text, what):
        try:
            root = ET.fromstring(text.encode('utf-8') if isinstance(text, str) else text)
        except ET.ParseError as e:
            raise Fail('%s is not well-formed XML: %s' % (what, e))
        self.texts = {t.get('id'): t for t in root.iter(SVG + 'text') if t.get('id')}
        frames = root.find('.//%sg[@id="frames"]' % SVG)
        check(frames is not None, '%s has no <g id="frames">' % what)
        self.frames = [Frame(g) for g in frames.findall(SVG + 'g')]
        check(self.frames, '%s has no frames' % what)

    def text(self, ident):
        t = self.texts.get(ident)
        check(t is not None, 'no <text id="%s">' % ident)
        return t.text or '', set((t.get('class') or '').split())

    def named(self, name):
        got = [f for f in self.frames if f.name == name]
        check(len(got) == 1, '%d frames named %r' % (len(got), name))
        return got[0]


def load(path, query, what):
    url = browser.file_url(path, query)
    graph = Graph(browser.dump_dom(url), 'the DOM of ' + url)
    log('%s: %s' % (what, ', '.join('%s %r' % (k, graph.text(k)[0])
                                    for k in ('matched', 'details'))))
    return graph


def same_frames(before, after):
    """The script neither adds, removes nor reorders frames."""
    check([f.name for f in before.frames] == [f.name for f in after.frames],
          'the frames in the DOM differ from those in the file')
    return zip(before.frames, after.frames)


def matched_share(stacks, regex):
    """Percent of the weight in stacks with a frame matching regex: nested matches once."""
    total = sum(c for _, c in stacks)
    hit = sum(c for s, c in stacks if any(re.search(regex, fr) for fr in s.split(';')))
    return 100.0 * hit / total


def check_matched(graph, expected):
    text, _ = graph.text('matched')
    m = re.fullmatch(r'Matched: ([0-9.]+)%', text)
    check(m, '"matched" text is %r, not "Matched: x.x%%"' % text)
    check(abs(float(m.group(1)) - expected) <= 0.1,
          '"%s", expected %.2f%%' % (text, expected))


def check_search(svg, dom, regex):
    """Matching frames (not the root) have the search fill, others the file's; none moved."""
    hits = []
    for f, d in same_frames(svg, dom):
        check((d.xs, d.ys, d.w) == (f.xs, f.ys, f.w), 'search moved %r' % d)
        if f.name != 'all' and re.search(regex, f.name):
            check(d.fill == SEARCH_FILL, 'matching frame %r lacks the search fill' % d)
            hits.append(f.name)
        else:
            check(d.fill == f.fill and d.fill != SEARCH_FILL,
                  'frame %r: fill %s in the file' % (d, f.fill))
    return hits


@case
def svg_search(opts):
    path = convert(opts, 'search.svg', STACKS)
    svg = Graph(open(path, 'rb').read(), path)
    regex = r'^(work_|<x&y>)'
    expected = matched_share(STACKS, regex)
    check(abs(expected - 51.18) < 0.01, 'the test data changed: matches cover %.2f%%' % expected)
    dom = load(path, {'s': regex}, 's=' + regex)
    check_matched(dom, expected)
    hits = check_search(svg, dom, regex)
    log('matching frames with the search fill: %s' % ', '.join(hits))
    check(HOSTILE in hits and 'work_b (app.py:30)' in hits and len(hits) == 5,
          'expected 5 matching frames, the escaped name and the nested work_b among them')
    check('active' in dom.text('search')[1], 'the Search button is not marked active')

    regex = '^no_such_frame$'
    dom = load(path, {'s': regex}, 's=' + regex)
    check_matched(dom, 0.0)
    check(not check_search(svg, dom, regex), 'a frame matched %s' % regex)


def check_zoom(svg, dom, target, ancestors, kids):
    """dom is svg zoomed on the frame named target (see the module docstring)."""
    z = svg.named(target)
    ratio = (WIDTH - 2 * XPAD) / z.w
    for f, d in same_frames(svg, dom):
        def at(x, w):
            check(abs(d.x - x) < 0.05 and abs(d.w - w) < 0.05,
                  '%r: expected x=%.2f w=%.2f' % (d, x, w))
        if f.name == target:
            check(not d.cls, 'the zoomed frame has class %s' % d.cls)
            at(XPAD, WIDTH - 2 * XPAD)
            check(d.label == target, 'the zoomed frame is labelled %r' % d.label)
        elif f.name in ancestors:
            check(d.cls == {'parent'}, 'ancestor %r is not of class "parent"' % d)
            at(XPAD, WIDTH - 2 * XPAD)
        elif f.name in kids:
            check(not d.cls, 'child %r has a class' % d)
            at(XPAD + (f.x - z.x) * ratio, f.w * ratio)
        else:
            check(d.cls == {'hide'}, '%r outside the zoomed frame is not hidden' % d)
    text, cls = dom.text('unzoom')
    check(text == 'Reset Zoom' and 'hide' not in cls, '"Reset Zoom" is not shown: class %s' % cls)
    log('zoomed on %r: it fills the width, %d ancestors "parent", %d children scaled x%.3f, '
        '%d frames hidden' % (target, len(ancestors), len(kids), ratio,
                              sum('hide' in f.cls for f in dom.frames)))


@case
def svg_zoom(opts):
    """The flame graph zoomed; the icicle graph zoomed and searched, from one URL."""
    target, ancestors = 'other (app.py:40)', {'all', 'main (app.py:1)'}
    kids = {'work_c (app.py:50)', 'idle (app.py:60)'}
    for name, extra, regex in (('flame.svg', [], None), ('icicle.svg', ['--icicle'], '^work_')):
        path = convert(opts, name, STACKS, *extra)
        svg = Graph(open(path, 'rb').read(), path)
        check('hide' in svg.text('unzoom')[1], '"Reset Zoom" is shown before any zoom')
        z = svg.named(target)
        query = dict({'s': regex} if regex else {}, x=z.xs, y=z.ys)
        dom = load(path, query, '%s %s' % (name, ' '.join('%s=%s' % kv for kv in query.items())))
        check_zoom(svg, dom, target, ancestors, kids)
        if regex:
            # the search colours the frames the zoom hides too; its share is the whole graph's
            for f, d in same_frames(svg, dom):
                check((d.fill == SEARCH_FILL) == bool(re.search(regex, f.name)),
                      'frame %r: fill %s with search %s' % (d, d.fill, regex))
            check_matched(dom, matched_share(STACKS, regex))
    check_hot(opts)


PY = '/root/.pyenv/versions/3.11.7/lib/python3.11/'
NATIVE = '_multiarray_umath.cpython-311-x86_64-linux-gnu.so'
HOT_STACKS = [
    ('<module> (/src/v1/app.py:1);' + ';'.join(
        'imp%d (%simportlib/_bootstrap.py:%d)' % (i, PY, i + 1) for i in range(50)), 5),
    ('<module> (/src/v1/app.py:1);main (/src/v1/app.py:10);hot (/src/v1/pkg/m.py:3)', 95),
    ('<module> (/src/v1/app.py:1);main (/src/v1/app.py:10);Thread.run (%sthreading.py:1012);'
     '%s+0x1a2b [%s]' % (PY, NATIVE, NATIVE), 20),
]
HOT_PROBE = '''<script type="text/ecmascript"><![CDATA[
window.addEventListener("load", function () { setTimeout(function () {
	var root = document.documentElement, se = document.scrollingElement;
	frames.forEach(function (f) {
		var b = f.r.getBoundingClientRect();
		f.r.setAttribute("data-top", String(b.top));
		f.r.setAttribute("data-bottom", String(b.bottom));
	});
	root.setAttribute("data-view", String(window.innerHeight));
	root.setAttribute("data-scroll", String(se ? se.scrollTop : -1));
}, 0); });
]]></script>
'''


def check_hot(opts):
    """A tall graph opens on its hottest frame; labels short, tooltips full (module docstring)."""
    path = convert(opts, 'hot.svg', HOT_STACKS)
    svg = Graph(open(path, 'rb').read(), path)
    hot = svg.named('hot (/src/v1/pkg/m.py:3)')
    check(hot.label == 'hot (pkg/m.py:3)', 'the hot frame is labelled %r' % hot.label)
    run = svg.named('Thread.run (%sthreading.py:1012)' % PY)
    check(run.label.startswith('Thread.run (threading.py:'), 'threading is labelled %r' % run.label)
    native = svg.named('%s+0x1a2b [%s]' % (NATIVE, NATIVE))
    check(native.label.count('_multiarray_umath') == 1, 'the native frame is labelled %r'
          % native.label)
    with open(path, encoding='utf-8') as f:
        text = f.read()
    probed = os.path.join(opts.tmp, 'hot-probed.svg')
    with open(probed, 'w', encoding='utf-8') as f:
        f.write(text.replace('</svg>', HOT_PROBE + '</svg>'))
    root = ET.fromstring(browser.dump_dom(browser.file_url(probed)).encode('utf-8'))
    view, scroll = float(root.get('data-view') or 0), float(root.get('data-scroll') or -1)
    rects = {g.find(SVG + 'title').text.split('\n')[0]: g.find(SVG + 'rect')
             for g in root.find('.//%sg[@id="frames"]' % SVG).findall(SVG + 'g')}
    r = rects[hot.name]
    top, bottom = float(r.get('data-top')), float(r.get('data-bottom'))
    log('window %g px high, scrolled %g px; the hot frame at %g..%g (y=%s in a %s px graph)'
        % (view, scroll, top, bottom, hot.ys, root.get('height')))
    check(view > 0 and float(root.get('height')) > view + 100,
          'the test needs a graph taller than the window (%s px in %g)' % (root.get('height'), view))
    check(0 <= top and bottom <= view, 'the hottest frame is out of the window as opened '
          '(%g..%g in %g px, scrolled %g)' % (top, bottom, view, scroll))
    dom = load(path, {'x': run.xs, 'y': run.ys}, 'hot.svg zoomed on Thread.run')
    z = [d for d in dom.frames if d.name == run.name][0]
    check(z.label == 'Thread.run (threading.py:1012)', 'zoomed, Thread.run is labelled %r'
          % z.label)


# ---------------------------------------------------------------------------- speedscope

APP_STACKS = [
    ('main (app.py:1);work (app.py:2);%s' % HOSTILE, 30),
    ('main (app.py:1);work (app.py:2)', 20),
    ('main (app.py:1);memcpy [libc.so.6]', 45),
    ('main (app.py:1);spin_[k]', 5),
]
# index.html gets this first: an alert() would block --dump-dom until the timeout
ALERT_TO_DOM = ('<script>window.alert = function (m) { '
                'document.documentElement.setAttribute("data-alert", String(m)); };</script>')


def bare(frame):
    """A folded frame's function name, as speedscope shows it."""
    for suffix in (r' \(.*:\d+\)$', r' \[[^\]]*\]$', r'_\[k\]$'):
        if re.search(suffix, frame):
            return re.sub(suffix, '', frame)
    return frame


# speedscope's sandwich view draws only the table rows its window shows (~24 in 800 x 600): a
# recording whose first samples fell in the imports at start-up had more functions than that
# (a full run: _find_and_load and two more left out)
SANDWICH_WINDOW = (1280, 4000)


def sandwich_expected(stacks):
    """{function: (total, self)}: total counts a stack once however often it holds it."""
    out = {}
    for s, c in stacks:
        names = [bare(fr) for fr in s.split(';')]
        for n in set(names):
            t, own = out.get(n, (0, 0))
            out[n] = (t + c, own + (c if n == names[-1] else 0))
    return out


def sandwich_rows(rows):
    """The sandwich table's rows among an AppDom's: (total, self, name), whose self is a
    weight ('20', '597.99ms (66%)'). The profile selector's (several profiles) are (number,
    name, weight), its names an event's first."""
    return [r for r in rows if len(r) == 3 and r[1][:1].isdigit()]


def sandwich_page(base, name):
    """The AppDom of speedscope (served at base) showing base/name in its sandwich view.
    Loaded (its title set, no failure) but its sandwich table not yet drawn is a loaded
    machine's late render, seen in full runs with no rows at all and with only the profile
    selector's: once more, with 8 s of virtual time (it runs only while the page is idle)."""
    url = '%s/index.html#profileURL=%s/%s&view=sandwich' % (base, base, name)
    page = AppDom(browser.dump_dom(url, budget_ms=2000, window=SANDWICH_WINDOW))
    if page.title and page.failure is None and not sandwich_rows(page.rows):
        log('speedscope: the title but no sandwich rows after 2 s: again, with 8 s')
        page = AppDom(browser.dump_dom(url, budget_ms=8000, window=SANDWICH_WINDOW))
    return page


class AppDom(html.parser.HTMLParser):
    """From speedscope's DOM: the title, the alert recorded (ALERT_TO_DOM), the table rows and
    `failure`: what the page shows when it could not import a file (the alert, or its error
    view "Something went wrong."), None when it shows neither."""

    def __init__(self, text):
        super().__init__()
        self.title, self.alert, self.rows, self.text = '', None, [], ''
        self._in, self._row, self._cell = None, None, None
        self.feed(text)
        self.close()
        self.failure = self.alert
        if 'Something went wrong' in self.text:
            self.failure = 'its error view ("Something went wrong.")'

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == 'html' and 'data-alert' in a:
            self.alert = a['data-alert']
        elif tag in ('title', 'script', 'style'):
            self._in = tag
        elif tag == 'tr':
            self._row = []
        elif tag == 'td' and self._row is not None:
            self._cell = ''

    def handle_endtag(self, tag):
        if tag in ('title', 'script', 'style'):
            self._in = None
        elif tag == 'td' and self._cell is not None:
            self._row.append(self._cell.strip())
            self._cell = None
        elif tag == 'tr':
            if self._row:
                self.rows.append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._in == 'title':
            self.title += data
        elif self._in is None:
            self.text += data + ' '
        if self._cell is not None:
            self._cell += data


def check_app(app, name, expected):
    """speedscope (an AppDom) loaded the profile: no failure shown, the title names it, the
    sandwich table holds expected ({function: (total, self)}); Fail otherwise."""
    log('speedscope: title %r, failure %r, %d table rows' % (app.title, app.failure,
                                                             len(app.rows)))
    check(app.failure is None, 'speedscope could not import the file: %s' % app.failure)
    check(app.title == '%s - speedscope' % name,
          'the page title is %r, not the profile\'s name %r' % (app.title, name))
    got = {}
    for row in app.rows:
        check(len(row) == 3, 'a sandwich row is not (total, self, name): %r' % row)
        total, own = (int(re.match(r'[0-9,]+', c).group(0).replace(',', '')) for c in row[:2])
        got[row[2]] = (total, own)
    check(got == expected, 'the sandwich table shows %r, expected %r' % (got, expected))
    log('sandwich table as expected: %r' % got)


@case
def speedscope_app(opts):
    schema = check_speedscope.find_schema()
    if schema is None:
        raise Skip('the npm package speedscope is not installed (.ci/run installs it)')
    app = os.path.dirname(schema)
    with open(os.path.join(app, 'index.html'), encoding='utf-8') as f:
        page = f.read()
    check('<head>' in page, "speedscope's index.html has no <head>")
    index = os.path.join(opts.tmp, 'index.html')
    with open(index, 'w', encoding='utf-8') as f:
        f.write(page.replace('<head>', '<head>' + ALERT_TO_DOM, 1))

    good = convert(opts, 'app.speedscope.json', APP_STACKS)
    with open(good, encoding='utf-8') as f:
        name = json.load(f)['name']     # the input's path
    bad = os.path.join(opts.tmp, 'bad.speedscope.json')
    with open(good, 'rb') as f, open(bad, 'wb') as g:
        g.write(f.read()[:-40])
    expected = sandwich_expected(APP_STACKS)
    with browser.Server(app, {'/index.html': index, '/app.speedscope.json': good,
                              '/bad.speedscope.json': bad}) as base:
        check_app(sandwich_page(base, 'app.speedscope.json'), name, expected)
        bad_app = sandwich_page(base, 'bad.speedscope.json')
        try:
            check_app(bad_app, name, expected)
        except Fail as e:
            log('the truncated file fails the check, as it must: %s' % e)
        else:
            raise Fail('a truncated speedscope file passed the check: it cannot fail')
        check(bad_app.failure, 'speedscope shows neither an alert nor its error view for the '
              'truncated file: the failure signal this test relies on changed')


def app_page(opts):
    """speedscope's app folder and its index.html with ALERT_TO_DOM, in opts.tmp."""
    schema = check_speedscope.find_schema()
    if schema is None:
        raise Skip('the npm package speedscope is not installed (.ci/run installs it)')
    app = os.path.dirname(schema)
    with open(os.path.join(app, 'index.html'), encoding='utf-8') as f:
        page = f.read()
    check('<head>' in page, "speedscope's index.html has no <head>")
    index = os.path.join(opts.tmp, 'index.html')
    with open(index, 'w', encoding='utf-8') as f:
        f.write(page.replace('<head>', '<head>' + ALERT_TO_DOM, 1))
    return app, index


@case
def speedscope_recorded(opts):
    app, index = app_page(opts)
    py = harness.any_python(opts)
    src = os.path.join(opts.targets, 'names_phases.py')
    out = os.path.join(opts.tmp, 'rec.speedscope.json')
    run = harness.record(opts, ['--function', '-e', 'cpu-clock', '-F', '199', '-o', out, '--',
                                *py.argv, src, '0.3'], name='rec-unused')
    check(run.rc == 0, 'hwspy record exited %s' % run.rc)
    with open(out, encoding='utf-8') as f:
        doc = json.load(f)
    frames, first = doc['shared']['frames'], doc['profiles'][0]
    log('profile 0: %r, %d samples in time order' % (first['name'], len(first['samples'])))
    stacks = [(';'.join(frames[i]['name'] for i in s), w)
              for s, w in zip(first['samples'], first['weights'])]
    expected = sandwich_expected(stacks)
    with browser.Server(app, {'/index.html': index, '/rec.speedscope.json': out}) as base:
        page = sandwich_page(base, 'rec.speedscope.json')
    # cpu-clock is in nanoseconds, which speedscope shows as rounded durations: compare the
    # functions, and the heaviest (the table is sorted by self weight)
    log('speedscope: title %r, failure %r, %d table rows: %s' % (
        page.title, page.failure, len(page.rows), page.rows[:4]))
    check(page.failure is None, 'speedscope could not import the file: %s' % page.failure)
    check(page.title == '%s - speedscope' % doc['name'], 'the page title is %r' % page.title)
    listed = [r[1] for r in page.rows if len(r) == 3 and r[0].isdigit()]   # profile selector
    check(any(n.endswith(' MainThread') for n in listed) and
          any(n.endswith(' CustomThreadNameLong') for n in listed),
          'the profiles listed are %s: no MainThread and CustomThreadNameLong' % listed)
    got = [r[2] for r in sandwich_rows(page.rows)]
    # (rows of other threads' functions may show too: only the first profile's are required)
    check(got and set(expected) <= set(got), 'the sandwich table lists %s, not every function '
          'of the first profile\'s samples %s' % (sorted(set(got)), sorted(expected)))
    heaviest = max(own for _, own in expected.values())
    check(expected[got[0]][1] == heaviest, 'the first row %r is not the function with the most '
          'self weight (%s)' % (got[0], expected))


# ---------------------------------------------------------------------------- --color-by

COLOR_METRIC = 'page-faults/cpu-clock'
COLOR_GREY, COLOR_LOW = 'rgb(180,180,180)', 'rgb(254,217,118)'
# (function, samples, cpu-clock ns, page-faults): ratios 1e-6, 1e-5, 1e-4; rare too few samples
COLOR_FUNCS = [('low', 30, 30000000, 30), ('mid', 30, 30000000, 300),
               ('high', 30, 30000000, 3000), ('rare', 3, 3000000, 10000)]
COLOR_PROBE = '''<script type="text/ecmascript"><![CDATA[
window.addEventListener("load", function () { setTimeout(function () {
	var root = document.documentElement;
	root.setAttribute("data-frames", String(frames.length));
	frames.forEach(function (f) {
		f.r.setAttribute("data-loaded", f.r.getAttribute("fill"));
		f.r.setAttribute("data-loaded-w", f.r.getAttribute("width"));
	});
	search(%s);
	root.setAttribute("data-matched", matched.textContent);
	frames.forEach(function (f) { f.r.setAttribute("data-searched", f.r.getAttribute("fill")); });
	document.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape" }));
}, 0); });
]]></script>
'''


def rgb_green(fill):
    m = re.fullmatch(r'rgb\((\d+),(\d+),(\d+)\)', fill or '')
    check(m, 'fill %r is not rgb()' % fill)
    return int(m.group(2))


@case
def svg_color(opts):
    src = os.path.join(opts.tmp, 'color.pb.gz')
    main = ('main', 'app.py', 1)
    with open(src, 'wb') as f:      # cpu-clock last: pprof's default type, hwspy's event 0
        f.write(pprof_build.profile(
            [('samples', 'count'), ('page-faults', 'events'), ('cpu-clock', 'nanoseconds')],
            [([main, (name, 'app.py', 10 * (i + 1))], [n, pf, ns])
             for i, (name, n, ns, pf) in enumerate(COLOR_FUNCS)]))
    path = os.path.join(opts.tmp, 'color.svg')
    r = subprocess.run([opts.hwspy, 'convert', src, '-o', path, '--color-by', COLOR_METRIC],
                       capture_output=True, text=True, timeout=60)
    log('$ hwspy convert %s -o %s --color-by %s -> exit %d %s'
        % (src, path, COLOR_METRIC, r.returncode, r.stderr.strip()))
    check(r.returncode == 0, 'hwspy convert --color-by failed')
    svg = Graph(open(path, 'rb').read(), path)
    regex = '^(low|rare)'
    with open(path, encoding='utf-8') as f:
        text = f.read()
    probed = os.path.join(opts.tmp, 'probed.svg')
    with open(probed, 'w', encoding='utf-8') as f:
        f.write(text.replace('</svg>', COLOR_PROBE % json.dumps(regex) + '</svg>'))
    z = svg.named('high (app.py:30)')
    url = browser.file_url(probed, {'x': z.xs, 'y': z.ys})
    root = ET.fromstring(browser.dump_dom(url).encode('utf-8'))
    check(root.get('data-frames') == str(len(svg.frames)),
          'the probe did not run after init(): data-frames %r' % root.get('data-frames'))
    rects = {g.find(SVG + 'title').text.split('\n')[0]: (g, g.find(SVG + 'rect'))
             for g in root.find('.//%sg[@id="frames"]' % SVG).findall(SVG + 'g')}
    check(sorted(rects) == sorted(f.name for f in svg.frames), 'the DOM has other frames')
    dom = {name: {k: r.get(k) for k in ('fill', 'width', 'data-loaded', 'data-loaded-w',
                                        'data-searched')}
           for name, (g, r) in rects.items()}
    for f in svg.frames:
        log('%s: file %s, DOM %s' % (f.name, f.fill, dom[f.name]))

    # as loaded (and zoomed): the file's metric fills, in the ratios' order; rare grey
    for f in svg.frames:
        check(dom[f.name]['data-loaded'] == f.fill, '%r: loaded with fill %s, the file has %s'
              % (f.name, dom[f.name]['data-loaded'], f.fill))
    green = {n: rgb_green(dom['%s (app.py:%d)' % (n, 10 * (i + 1))]['data-loaded'])
             for i, (n, *_rest) in enumerate(COLOR_FUNCS)}
    check(dom['low (app.py:10)']['data-loaded'] == COLOR_LOW, 'low is not the low end')
    check(green['low'] > green['mid'] > green['high'],
          'the fills do not rise on the scale with the ratio: %s' % green)
    check(dom['rare (app.py:40)']['data-loaded'] == COLOR_GREY, 'rare (3 samples) is not grey')
    check(abs(float(dom['high (app.py:30)']['data-loaded-w']) - (WIDTH - 2 * XPAD)) < 0.05,
          'the zoom on high did not fill the width')
    legend = {t.get('id'): t.text for t in root.iter(SVG + 'text')
              if (t.get('id') or '').startswith('legend')}
    log('legend: %s' % legend)
    # in faults per ms of CPU (cpu-clock counts ns)
    check(legend.get('legend-name') == 'colour: page-faults per ms of CPU' and
          legend.get('legend-low') == '1' and legend.get('legend-high') == '%.4g' % (13330 / 93) and
          'under 10 samples' in (legend.get('legend-grey-text') or ''),
          'the legend in the DOM is %s' % legend)
    bar = [r for r in root.iter(SVG + 'rect') if r.get('id') in ('legend-scale', 'legend-grey')]
    check([r.get('fill') for r in bar] == ['url(#color-scale)', COLOR_GREY],
          'the legend\'s gradient and grey swatch are not there')

    # the search: matches in the search fill, the others keep the metric's
    check((root.get('data-matched') or '').startswith('Matched: '),
          'search() showed %r' % root.get('data-matched'))
    for f in svg.frames:
        want = SEARCH_FILL if re.search(regex, f.name) else f.fill
        check(dom[f.name]['data-searched'] == want, '%r: fill %s during the search, expected %s'
              % (f.name, dom[f.name]['data-searched'], want))

    # Escape: the metric's fills back, the zoom undone
    for f in svg.frames:
        g = rects[f.name][0]
        check(dom[f.name]['fill'] == f.fill, '%r: fill %s after the reset, the file has %s'
              % (f.name, dom[f.name]['fill'], f.fill))
        check(abs(float(dom[f.name]['width']) - f.w) < 0.05 and not g.get('class'),
              '%r: not back to its place after the reset' % f.name)
    text_matched = [t for t in root.iter(SVG + 'text') if t.get('id') == 'matched'][0].text
    check((text_matched or '').strip() == '', '"Matched" still says %r' % text_matched)
    log('loaded, zoomed, searched and reset: the metric\'s fills each time, as in the file')


def test(opts):
    browser.find_chromium()     # Skip first when there is none
    CASES[opts.case](opts)


if __name__ == '__main__':
    p = harness.parser(__doc__)
    p.add_argument('--case', choices=sorted(CASES), required=True)
    harness.main(test, p)

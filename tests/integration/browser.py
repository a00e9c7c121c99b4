"""Headless Chromium for the integration tests: load a page, let its JavaScript run, read the DOM.

    dom = browser.dump_dom('file:///abs/out.svg?s=REGEX')   # the DOM after the page's scripts
    with browser.Server(root, {'/x.json': path}) as base:   # http://127.0.0.1:PORT
        dom = browser.dump_dom(base + '/index.html#profileURL=' + base + '/x.json')

dump_dom() runs `chromium --headless=new --dump-dom URL` once (about 2 s on a 2-core machine):
the page loads, its scripts run for up to `budget_ms` of virtual time (timers fast-forwarded, so
this costs no wall time when the page is idle sooner), and the serialized DOM comes back as text
(an SVG document as XML, an HTML page as HTML). Each run gets a private profile directory (and
HOME) in a temporary directory, removed afterwards, and runs in its own session, killed whole
when it is done or after `timeout` seconds (a page that calls alert() never finishes: Fail).

Server serves a directory and extra files over HTTP on 127.0.0.1 on a free port, from a thread
of the test itself, for pages that fetch() (Chromium refuses fetches from file: URLs).

Raises harness.Skip when chromium is not installed, harness.Fail when it does not run or gives
no DOM. Standard library only.
"""
import http.server
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.parse

from harness import Fail, Skip, log

NAMES = ('chromium', 'chromium-browser', 'google-chrome')
FLAGS = ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
         '--no-first-run', '--no-default-browser-check', '--disable-extensions',
         '--disable-background-networking', '--disable-component-update', '--disable-sync',
         '--disable-crash-reporter', '--mute-audio']


def find_chromium():
    """The chromium binary ($CHROMIUM if set), or Skip."""
    env = os.environ.get('CHROMIUM')
    if env:
        if not os.access(env, os.X_OK):
            raise Skip('$CHROMIUM=%s is not an executable' % env)
        return env
    for name in NAMES:
        path = shutil.which(name)
        if path:
            return path
    raise Skip('chromium is not installed (.ci/run installs it)')


def _noise(line):
    """stderr lines chromium prints on every headless run here (no D-Bus, no GPU)."""
    return any(w in line for w in ('dbus', 'DBus', 'gpu', 'GPU', 'angle', 'ANGLE',
                                   'unexpected operator'))


def dump_dom(url, budget_ms=1000, timeout=30, window=None):
    """The DOM of `url` after its scripts ran (see the module docstring), as a str.
    budget_ms must be positive (chromium never finishes with a budget of 0). window: (width,
    height) of the page's window where not headless chromium's 800 x 600 (a page that draws
    only the rows of a table that its window shows wants a tall one)."""
    if budget_ms <= 0:
        raise ValueError('budget_ms must be positive')
    exe = find_chromium()
    tmp = tempfile.mkdtemp(prefix='hwspy-chromium-')
    argv = [exe] + FLAGS + ['--user-data-dir=' + os.path.join(tmp, 'profile'),
                            '--virtual-time-budget=%d' % budget_ms, '--dump-dom', url]
    if window:
        argv[-2:-2] = ['--window-size=%d,%d' % window]
    env = dict(os.environ, HOME=tmp, XDG_CONFIG_HOME=os.path.join(tmp, 'config'),
               XDG_CACHE_HOME=os.path.join(tmp, 'cache'))
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(p)
        out, err = p.communicate()
        raise Fail('chromium did not finish %s within %ds (did the page call alert()?)'
                   % (url, timeout))
    finally:
        _kill(p)
        shutil.rmtree(tmp, ignore_errors=True)
    err = '\n'.join(l for l in err.decode('utf-8', 'replace').splitlines() if not _noise(l))
    log('chromium %s: exit %d after %.1fs, %d bytes of DOM%s'
        % (url, p.returncode, time.monotonic() - t0, len(out), '; stderr:\n' + err if err else ''))
    if p.returncode != 0 or not out.strip():
        raise Fail('chromium exited %d with %s for %s' % (
            p.returncode, '%d bytes of DOM' % len(out) if out.strip() else 'no DOM', url))
    return out.decode('utf-8', 'replace')


def _kill(p):
    """The whole session: chromium leaves helpers (zygotes, crashpad) in its process group."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except OSError:
        pass
    if p.poll() is None:
        p.wait()


def file_url(path, query=None):
    """file:///abs/path?QUERY, the query a dict encoded as a form ('+' becomes %2B)."""
    url = 'file://' + urllib.parse.quote(os.path.abspath(path))
    if query:
        url += '?' + urllib.parse.urlencode(query, quote_via=urllib.parse.quote)
    return url


class Server:
    """`with Server(root, {'/name': path}) as base:` serves root's files, and each extra
    path (which takes precedence) under base = 'http://127.0.0.1:PORT' on a free port, until
    the block ends. Requests are logged."""

    def __init__(self, root, extra=None):
        self.root, self.extra = os.path.abspath(root), dict(extra or {})

    def __enter__(self):
        server = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kw):
                super().__init__(*args, directory=server.root, **kw)

            def translate_path(self, path):
                bare = urllib.parse.unquote(path.split('?', 1)[0].split('#', 1)[0])
                if bare in server.extra:
                    return server.extra[bare]
                return super().translate_path(path)

            def log_message(self, fmt, *args):
                log('server: ' + fmt % args)

        self.httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return 'http://127.0.0.1:%d' % self.httpd.server_address[1]

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()
        return False

"""Code objects that live a few milliseconds, for test_capture.py.

  exec N     N rounds of exec(compile(SRC_i, 'gen_i.py', 'exec'), {}): fresh code each time,
             whose functions work_i and outer_i (outer_i calls work_i, which loops) run and are
             freed with it
  import N   N rounds of importing ~60 stdlib modules and forgetting them again (their module
             code objects are freed as each import ends)
  Both go on past N rounds until they have used MIN_CPU_S of CPU time, so that a fast
  interpreter gives the test as many samples as a slow one (Debian's 3.11 did 3000 exec rounds
  in 0.27 s, under the test's 300 samples at 1000 Hz).
  deep D R   R times: a recursion D frames deep (rec, D frames) that spins at its bottom
             (~0.6-2 s: long enough that a capture started late by a busy machine still
             holds most of its samples)
"""
import importlib
import sys
import time

MIN_CPU_S = 0.6

MODULES = ['json', 'decimal', 'fractions', 'statistics', 'email.mime.text', 'http.client',
           'urllib.request', 'xml.dom.minidom', 'xml.etree.ElementTree', 'sqlite3', 'csv',
           'argparse', 'logging.handlers', 'asyncio', 'concurrent.futures', 'unittest',
           'doctest', 'pydoc', 'difflib', 'tarfile', 'zipfile', 'configparser', 'smtplib',
           'imaplib', 'ftplib', 'poplib', 'ssl', 'uuid', 'ipaddress', 'pickletools', 'inspect',
           'dataclasses', 'typing', 'enum', 'calendar', 'mailbox', 'plistlib', 'shelve',
           'tomllib', 'trace', 'wave', 'xmlrpc.client', 'xmlrpc.server', 'http.server',
           'socketserver', 'pdb', 'profile', 'pstats', 'timeit', 'cProfile', 'optparse',
           'getopt', 'gettext', 'locale', 'multiprocessing', 'sched', 'secrets', 'selectors',
           'shlex', 'string', 'textwrap', 'tokenize', 'ast', 'dis']


def rounds(n):
    """0, 1, ...: at least n of them, and on until MIN_CPU_S of CPU time has been used."""
    i, t0 = 0, time.process_time()
    while i < n or time.process_time() - t0 < MIN_CPU_S:
        yield i
        i += 1


def churn_exec(n):
    for i in rounds(n):
        src = ("def work_%d(n):\n"
               "    s = 0\n"
               "    for k in range(n):\n"
               "        s += k * k\n"
               "    return s\n"
               "def outer_%d():\n"
               "    return work_%d(3000)\n"
               "outer_%d()\n") % (i, i, i, i)
        exec(compile(src, 'gen_%d.py' % i, 'exec'), {})


def churn_import(n):
    roots = {m.split('.')[0] for m in MODULES}
    for _ in rounds(n):
        for m in MODULES:
            try:
                importlib.import_module(m)
            except Exception:
                pass
        for m in list(sys.modules):
            if m.split('.')[0] in roots:
                del sys.modules[m]


def rec(n):
    if n == 0:
        x = 0
        for i in range(15000000):
            x += i
        return x
    return rec(n - 1)


def deep(d, rounds):
    sys.setrecursionlimit(d + 1000)
    for _ in range(rounds):
        rec(d - 1)


if __name__ == '__main__':
    what = sys.argv[1]
    if what == 'exec':
        churn_exec(int(sys.argv[2]))
    elif what == 'import':
        churn_import(int(sys.argv[2]))
    else:
        deep(int(sys.argv[2]), int(sys.argv[3]))

"""A start-up-like workload for the stop-budget test: imports standard modules that nothing has
imported yet and builds some data, as a program does before it gets to work (page faults all
the way: fresh heap, mapped .pyc and shared objects).

  startup.py OUT SECONDS  imports, builds a table, computes for SECONDS, then writes
                          {"elapsed": seconds since its first line, "minflt": .., "majflt": ..}
                          (its own getrusage) as JSON to OUT
"""
import time
T0 = time.perf_counter()
import json  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402

MODULES = ['argparse', 'ast', 'asyncio', 'calendar', 'csv', 'dataclasses', 'decimal',
           'difflib', 'email.parser', 'fractions', 'http.client', 'inspect', 'ipaddress',
           'logging', 'pathlib', 'pickle', 'pprint', 'shlex', 'sqlite3', 'statistics',
           'string', 'tarfile', 'textwrap', 'typing', 'unittest', 'urllib.request', 'uuid',
           'xml.dom.minidom', 'zipfile']


def load():
    for name in MODULES:
        try:
            __import__(name)
        except ImportError:
            pass


def build(n):
    rows = [{'id': i, 'name': 'row%d' % i, 'tags': [i, i * 2]} for i in range(n)]
    return sum(len(r['name']) for r in rows)


def compute(seconds):
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += sum(i * i for i in range(1000))
    return x


def main():
    out, seconds = sys.argv[1], float(sys.argv[2])
    load()
    build(20000)
    compute(seconds)
    ru = resource.getrusage(resource.RUSAGE_SELF)
    with open(out, 'w') as f:
        json.dump({'elapsed': time.perf_counter() - T0, 'minflt': ru.ru_minflt,
                   'majflt': ru.ru_majflt}, f)


main()

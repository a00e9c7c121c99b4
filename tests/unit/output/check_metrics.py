#!/usr/bin/env python3
"""Checks hwspy's Prometheus exposition with its real consumers: runs `TEST_EXE --write DIR`,
then
  - `promtool check metrics` (Debian's prometheus) over DIR/metrics.prom (text format 0.0.4):
    it must parse and pass every lint rule;
  - Python's prometheus_client parses DIR/metrics.prom (its 0.0.4 parser) and DIR/metrics.om
    (its OpenMetrics 1.0 parser, which checks # EOF, UNIT against the name, counters neither
    NaN nor negative), and every family, help text, label and value must be what
    DIR/expected.txt says was written (strings there in hex; invalid UTF-8 read back as
    U+FFFD, as the writer replaces it).
Exits 77 (meson: SKIP) after the other checks pass when promtool is missing; says so, and
checks only the bytes (test_output_metrics does) when no Python here has prometheus_client
(Debian: python3-prometheus-client)."""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77

PARSE = r"""
import json, sys
from prometheus_client.parser import text_string_to_metric_families as parse_text
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_om
out = {}
for key, parse, path in (("prom", parse_text, sys.argv[1]), ("om", parse_om, sys.argv[2])):
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    out[key] = [[m.name, m.type, m.unit, m.documentation,
                 [[s.name, s.labels, s.value] for s in m.samples]] for m in parse(text)]
print(json.dumps(out))
"""


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def unhex(field):
    return bytes.fromhex(field[1:]).decode("utf-8", "replace")


def read_expected(path):
    common, families = {}, []
    with open(path, encoding="ascii") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if parts[0] == "C":
                common[parts[1]] = unhex(parts[2])
            elif parts[0] == "F":
                families.append({"name": parts[1], "type": parts[2], "unit": parts[3],
                                 "help": unhex(parts[4]), "samples": []})
            elif parts[0] == "S":
                fam = next(f for f in families if f["name"] == parts[1])
                labels = dict(common, comm=unhex(parts[2]), pid=parts[3])
                fam["samples"].append((labels, float(parts[4])))
    return families


def same_value(a, b):
    return (math.isnan(a) and math.isnan(b)) or a == b


def compare(fmt, got, families):
    if [g[0] for g in got] != [f["name"] for f in families]:
        fail("%s: families %r, want %r" % (fmt, [g[0] for g in got], [f["name"] for f in families]))
    for (name, typ, unit, doc, samples), want in zip(got, families):
        want_unit = want["unit"] if fmt == "om" else ""
        # prometheus_client's 0.0.4 parser strips each line: a help text's spaces at its end go
        want_help = want["help"] if fmt == "om" else want["help"].rstrip()
        if (typ, unit, doc) != (want["type"], want_unit, want_help):
            fail("%s: %s is %r, want %r" % (fmt, name, (typ, unit, doc),
                                            (want["type"], want_unit, want_help)))
        sample_name = name + ("_total" if typ == "counter" else "")
        if len(samples) != len(want["samples"]):
            fail("%s: %s has %d samples, want %d" % (fmt, name, len(samples), len(want["samples"])))
        for (sname, labels, value), (wlabels, wvalue) in zip(samples, want["samples"]):
            if sname != sample_name or labels != wlabels or not same_value(value, wvalue):
                fail("%s: sample %r %r %r, want %r %r %r" % (fmt, sname, labels, value,
                                                               sample_name, wlabels, wvalue))
    print("%s: prometheus_client read %d families, %d samples, each as written" % (
        fmt, len(got), sum(len(g[4]) for g in got)))


def find_client_python():
    for py in (sys.executable, "/usr/bin/python3"):
        if py and os.path.exists(py) and subprocess.run(
                [py, "-c", "import prometheus_client"], capture_output=True).returncode == 0:
            return py
    return None


def main():
    if len(sys.argv) != 2:
        fail("usage: check_metrics.py TEST_EXE")
    code = 0
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([sys.argv[1], "--write", d])
        if r.returncode != 0:
            fail("%s --write exited %d" % (sys.argv[1], r.returncode))
        prom, om = os.path.join(d, "metrics.prom"), os.path.join(d, "metrics.om")
        families = read_expected(os.path.join(d, "expected.txt"))

        promtool = shutil.which("promtool")
        if promtool is None:
            print("SKIP promtool check: promtool not found (Debian package prometheus)")
            code = SKIP
        else:
            with open(prom, "rb") as f:
                r = subprocess.run([promtool, "check", "metrics"], stdin=f, capture_output=True,
                                   text=True, timeout=60)
            if r.returncode != 0 or r.stdout.strip() or r.stderr.strip():
                fail("promtool check metrics exited %d: %s%s" % (r.returncode, r.stdout, r.stderr))
            print("promtool check metrics: metrics.prom parses, no lint problems")

        py = find_client_python()
        if py is None:
            print("not parsed: no Python here has prometheus_client (Debian package "
                  "python3-prometheus-client); the bytes are checked by test_output_metrics alone")
        else:
            r = subprocess.run([py, "-c", PARSE, prom, om], capture_output=True, text=True,
                               timeout=60)
            if r.returncode != 0:
                fail("prometheus_client refused the output:\n" + r.stderr)
            got = json.loads(r.stdout)
            compare("prom", got["prom"], families)
            compare("om", got["om"], families)
    sys.exit(code)


if __name__ == "__main__":
    main()

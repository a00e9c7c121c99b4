#!/usr/bin/env python3
"""Checks hwspy's pprof output with Go's pprof: runs `TEST_EXE --write DIR`, then
`go tool pprof -raw DIR/out.pb.gz` (which rejects a malformed profile; every function name the
profile holds, "<module>" included, must come through) and, per line "EVENT TOTAL TOP" of
DIR/expected.txt, `go tool pprof -top -sample_index=EVENT` (the total and the first row); then
`go tool pprof -tags DIR/labels.pb.gz` (written with the string labels service=api, pid=123 on
every sample) must list each label with its one value on 100% of the samples, and `-raw` must
show the extra comments after hwspy's own.

Needs `go` (Debian: apt-get install golang-go); exits 77 (meson: SKIP) saying so when it is
missing. pprof runs with HOME set to a temporary directory (it writes ~/pprof)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
LABELS = {"service": "api", "pid": "123"}
COMMENTS = ["monitor: every 60 s", "second line"]
NAMES = ["<module>", "work", "deflate_slow", "memcpy", "strange", "asm_exc_page_fault",
         "[unknown]", "[thread 1234 python3]"]


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def pprof(home, *args):
    env = dict(os.environ, HOME=home)
    r = subprocess.run(["go", "tool", "pprof"] + list(args), capture_output=True, text=True,
                       errors="replace", env=env, timeout=300)
    if r.returncode != 0:
        fail("go tool pprof %s exited %d:\n%s%s" % (" ".join(args), r.returncode, r.stdout,
                                                     r.stderr))
    return r.stdout


def tags(text):
    """-tags output as {key: [(percent, value)]}: " KEY: Total N" then "  N ( P%): VALUE"."""
    out, key = {}, None
    for line in text.splitlines():
        m = re.match(r"^\s*(\S+): Total ", line)
        if m:
            key = m.group(1)
            out[key] = []
            continue
        m = re.match(r"^\s*\S+ \(\s*([\d.]+)%\): (.*)$", line)
        if m and key is not None:
            out[key].append((float(m.group(1)), m.group(2)))
    return out


def check_labels(d):
    path = os.path.join(d, "labels.pb.gz")
    text = pprof(d, "-tags", path)
    got = tags(text)
    for key, value in LABELS.items():
        if got.get(key) != [(100.0, value)]:
            fail("-tags: want %s: %s on every sample:\n%s" % (key, value, text))
        print("-tags: %s: %s (100%%)" % (key, value))
    raw = pprof(d, "-raw", path)
    comments = re.findall(r"^Comment: (.*)$", raw, re.M)
    if len(comments) < 3 or not comments[0].startswith("hwspy ") or comments[-2:] != COMMENTS:
        fail("-raw: want the comments %r last, after hwspy's:\n%s" % (COMMENTS, raw))
    if "service" in tags(pprof(d, "-tags", os.path.join(d, "out.pb.gz"))):
        fail("-tags shows a service label in the file written without labels")


def main():
    if len(sys.argv) != 2:
        fail("usage: check_pprof.py TEST_EXE")
    if shutil.which("go") is None:
        print("SKIP: 'go' not found, so 'go tool pprof' cannot read the file "
              "(install golang-go)")
        sys.exit(SKIP)
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([sys.argv[1], "--write", d])
        if r.returncode != 0:
            fail("%s --write exited %d" % (sys.argv[1], r.returncode))
        out = os.path.join(d, "out.pb.gz")
        raw = pprof(d, "-raw", out)
        for name in NAMES:
            if not re.search(r"^\s+\d+: 0x0 (M=\d+ )?" + re.escape(name) + " ", raw, re.M):
                fail("-raw shows no location of %r:\n%s" % (name, raw))
        if "Comment: hwspy " not in raw:
            fail("-raw shows no 'hwspy' comment:\n" + raw)
        with open(os.path.join(d, "expected.txt"), encoding="utf-8") as f:
            expected = [line.rstrip("\n").split("\t") for line in f if line.strip()]
        if not expected:
            fail("expected.txt is empty")
        for event, total, top in expected:
            clock = event.split(":")[0] in ("cpu-clock", "task-clock")
            args = ["-top", "-sample_index=" + event] + (["-unit=ns"] if clock else [])
            text = pprof(d, *(args + [out]))
            m = re.search(r"of (\d+)(\w*) total", text)
            if not m or m.group(1) != total or m.group(2) != ("ns" if clock else "events"):
                fail("-top %s: want total %s:\n%s" % (event, total, text))
            rows = text.split("cum%\n", 1)[-1].splitlines()
            if not rows or not rows[0].rstrip().endswith("  " + top):
                fail("-top %s: want %r first:\n%s" % (event, top, text))
            print("%s: total %s, top %s" % (event, total, top))
        check_labels(d)
        print("go tool pprof read the file: -raw ok")


if __name__ == "__main__":
    main()

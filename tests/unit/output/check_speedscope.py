#!/usr/bin/env python3
"""Checks hwspy's speedscope output: runs `TEST_EXE --write DIR`, then checks
DIR/TAG.speedscope.json against DIR/TAG.txt for TAG out (merged stacks) and logged (samples in
time order: a .txt starting with ORDERED compares them in order) (every frame, index, stack,
weight and total, which speedscope's schema does not check) and validates each against
speedscope's schema.

The schema comes from $SPEEDSCOPE_SCHEMA or the npm package `speedscope`
(dist/release/file-format-schema.json, found under `npm root -g` and the usual prefixes).
Exits 77 (meson: SKIP) after the other checks pass when the schema or Python's jsonschema
is missing, saying which."""
import glob
import json
import os
import subprocess
import sys
import tempfile

SKIP = 77
SCHEMA_URL = "https://www.speedscope.app/file-format-schema.json"
SCHEMA_TAIL = "speedscope/dist/release/file-format-schema.json"


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def unhex(field):
    if field == "-":
        return None
    return bytes.fromhex(field[1:]).decode("utf-8", "replace")


def read_expected(path):
    frames, profiles, ordered = [], [], False
    with open(path, encoding="ascii") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if parts[0] == "ORDERED":
                ordered = True
            elif parts[0] == "F":
                _, fid, kind, lineno, name, file = parts
                if int(fid) != len(frames):
                    fail("expected.txt: frame ids out of order")
                frames.append((kind, int(lineno), unhex(name), unhex(file)))
            elif parts[0] == "P":
                profiles.append({"name": parts[1], "total": int(parts[2]), "stacks": []})
            elif parts[0] == "S":
                ids = tuple(int(x) for x in parts[2].split(","))
                profiles[-1]["stacks"].append((ids, int(parts[1])))
    return frames, profiles, ordered


def check_structure(doc, frames, profiles, ordered):
    if doc.get("$schema") != SCHEMA_URL:
        fail("$schema is %r" % doc.get("$schema"))
    if not str(doc.get("exporter", "")).startswith("hwspy "):
        fail("exporter is %r" % doc.get("exporter"))
    got_frames = doc["shared"]["frames"]
    if len(got_frames) != len(frames):
        fail("%d frames, want %d" % (len(got_frames), len(frames)))
    for i, (kind, lineno, name, file) in enumerate(frames):
        want = {"name": name}
        if file is not None:
            want["file"] = file
        if kind == "python" and file is not None and lineno > 0:
            want["line"] = lineno
        if got_frames[i] != want:
            fail("frame %d is %r, want %r" % (i, got_frames[i], want))
    got = doc["profiles"]
    if [p["name"] for p in got] != [p["name"] for p in profiles]:
        fail("profiles %r, want %r" % ([p["name"] for p in got], [p["name"] for p in profiles]))
    if not 0 <= doc.get("activeProfileIndex", -1) < len(got):
        fail("activeProfileIndex %r out of range" % doc.get("activeProfileIndex"))
    for p, want in zip(got, profiles):
        name = p["name"]
        unit = "nanoseconds" if name.split(",")[0].split(":")[0] in ("cpu-clock", "task-clock") else "none"
        if p["type"] != "sampled" or p["unit"] != unit:
            fail("%s: type %r unit %r" % (name, p["type"], p["unit"]))
        samples, weights = p["samples"], p["weights"]
        if len(samples) != len(weights):
            fail("%s: %d samples, %d weights" % (name, len(samples), len(weights)))
        for w in weights:
            if type(w) is not int or w <= 0:
                fail("%s: weight %r is not a positive integer" % (name, w))
        for s in samples:
            if not s:
                fail("%s: empty sample" % name)
            for i in s:
                if type(i) is not int or not 0 <= i < len(got_frames):
                    fail("%s: frame index %r out of range" % (name, i))
        if p["startValue"] != 0 or p["endValue"] != sum(weights) or sum(weights) != want["total"]:
            fail("%s: start %r end %r sum %d, want total %d" % (
                name, p["startValue"], p["endValue"], sum(weights), want["total"]))
        got_stacks = list(zip(map(tuple, samples), weights))
        if ordered and got_stacks != want["stacks"]:
            fail("%s: samples %r, want in time order %r" % (name, got_stacks, want["stacks"]))
        if sorted(got_stacks) != sorted(want["stacks"]):
            fail("%s: stacks differ from the profile's" % name)


def find_schema():
    env = os.environ.get("SPEEDSCOPE_SCHEMA")
    if env:
        return env if os.path.isfile(env) else None
    roots = ["/usr/lib/node_modules", "/usr/local/lib/node_modules",
             os.path.expanduser("~/.npm-global/lib/node_modules"), "node_modules"]
    try:
        roots.insert(0, subprocess.run(["npm", "root", "-g"], capture_output=True, text=True,
                                       timeout=30).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    for root in roots:
        if root and os.path.isfile(os.path.join(root, SCHEMA_TAIL)):
            return os.path.join(root, SCHEMA_TAIL)
    return None


def validate_schema(path):
    """0 valid, 1 invalid, SKIP when jsonschema is missing here and in pyenv's 3.11.7."""
    schema = find_schema()
    if schema is None:
        print("SKIP schema check: speedscope's file-format-schema.json not found "
              "(install the npm package speedscope or set SPEEDSCOPE_SCHEMA)")
        return SKIP
    code = ("import json, sys, jsonschema\n"
            "jsonschema.validate(json.load(open(sys.argv[2], 'rb')), json.load(open(sys.argv[1])))\n")
    pythons = [sys.executable] + glob.glob(os.path.expanduser("~/.pyenv/versions/3.11.7/bin/python3.11"))
    for py in pythons:
        if subprocess.run([py, "-c", "import jsonschema"], capture_output=True).returncode != 0:
            continue
        r = subprocess.run([py, "-c", code, schema, path], capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stderr)
            return 1
        print("schema: valid against %s" % schema)
        return 0
    print("SKIP schema check: no Python with jsonschema (tried %s)" % ", ".join(pythons))
    return SKIP


def main():
    if len(sys.argv) != 2:
        fail("usage: check_speedscope.py TEST_EXE")
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([sys.argv[1], "--write", d])
        if r.returncode != 0:
            fail("%s --write exited %d" % (sys.argv[1], r.returncode))
        code = 0
        for tag in ("out", "logged"):
            out = os.path.join(d, tag + ".speedscope.json")
            with open(out, "rb") as f:
                raw = f.read()
            try:
                doc = json.loads(raw.decode("utf-8", "strict"),
                                 parse_constant=lambda c: fail("non-JSON constant " + c))
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                fail("%s: not valid UTF-8 JSON: %s" % (tag, e))
            frames, profiles, ordered = read_expected(os.path.join(d, tag + ".txt"))
            check_structure(doc, frames, profiles, ordered)
            print("%s: %d frames, %d profiles, every stack and total as in the profile%s"
                  % (tag, len(frames), len(profiles), ", samples in time order" if ordered else ""))
            code = max(code, validate_schema(out))
        sys.exit(code)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# Live check of pyframes on one interpreter (not part of the unit suite: it needs real
# interpreters). Starts tests/targets/pyframes_stack.py under INTERPRETER..., runs
# pyframes_dump on it (plain and --stop) and compares every thread's innermost frames with
# the "# L:<tag>" lines of the target.
#   live_check.py PYFRAMES_DUMP INTERPRETER [ARGS...]
# Exit 0 all right, 1 mismatch; prints what it compared.
import os
import re
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
target = os.path.join(here, "..", "..", "targets", "pyframes_stack.py")
target = os.path.abspath(target)
dump = sys.argv[1]
interp = sys.argv[2:]

tags = {}
with open(target, encoding="utf-8") as f:
    for i, line in enumerate(f, 1):
        m = re.search(r"# L:(\w+)", line)
        if m:
            tags[m.group(1)] = i
        if line.startswith("    main()"):
            tags["module"] = i
T = os.path.basename(target)

def spec(minor):
    q = (lambda cls, n: cls + "." + n) if minor >= 11 else (lambda cls, n: n)
    return {
        "main": [(q("Spinner", "spin"), T, {tags["spin"], tags["spin"] - 1}),
                 ("nested_b", T, {tags["nested_b"]}), ("nested_a", T, {tags["nested_a"]}),
                 ("main", T, {tags["main"]}), ("<module>", T, {tags["module"]})],
        "rec": [("recurse", T, {tags["recurse_leaf"]})] + [("recurse", T, {tags["recurse"]})] * 5
               + [("rec_main", T, {tags["rec_main"]})],
        "gen": [("gen_body", T, {tags["gen_body"]}), ("gen_main", T, {tags["gen_main"]})],
        "uni": [("r\u00e9sum\u00e9", "donn\u00e9es.py", {8}), ("uni_main", T, {tags["uni_main"]})],
    }

def parse(out):
    threads, cur, version = {}, None, None
    for line in out.splitlines():
        if line.startswith("python "):
            version = line.split()[1]
        elif line.startswith("tid "):
            cur = line
            threads[cur] = []
        elif line.startswith("  ") and cur:
            m = re.match(r"  (.*) \((.*):(\d+)\)", line)
            threads[cur].append((m.group(1), os.path.basename(m.group(2)), int(m.group(3))))
    return version, threads

def check(out, minor):
    version, threads = parse(out)
    sp = spec(minor)
    found = {}
    for tid, frames in threads.items():
        for name, want in sp.items():
            if len(frames) < len(want):
                continue
            if all(f[0] == w[0] and f[1] == w[1] and f[2] in w[2] for f, w in zip(frames, want)):
                found[name] = tid
    missing = [n for n in sp if n not in found]
    return version, missing

p = subprocess.Popen(interp + [target], stdout=subprocess.PIPE)
try:
    line = p.stdout.readline().decode()
    assert line.startswith("ready"), line
    ok = True
    for extra in ([], ["--stop"]):
        out = subprocess.run([dump, "--entry"] + extra + [str(p.pid)], stdout=subprocess.PIPE,
                             timeout=30).stdout.decode("utf-8")
        version = out.split()[1]
        minor = int(version.split(".")[1])
        v, missing = check(out, minor)
        print("%s %s: %s" % (version, " ".join(extra) or "plain",
                             "all threads right" if not missing else "MISSING " + ",".join(missing)))
        if missing:
            ok = False
            print(out)
    sys.exit(0 if ok else 1)
finally:
    p.kill()
    p.wait()

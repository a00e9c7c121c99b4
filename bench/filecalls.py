#!/usr/bin/env python3
"""filecalls.py OBJDIR: which .c files of one folder call (or reference) each other.

    python3 bench/filecalls.py build/symbolizer/libsymbolizer.a.p

OBJDIR holds the folder's object files (meson: build/FOLDER/libFOLDER.a.p). From nm (the
symbols each object leaves undefined against those the others define) it prints every arrow
A -> B (A uses what B defines, with the symbols), how many pairs of files have an arrow either
way, and each circle of calls (strongly connected component) of more than one file. Calls
through static inline functions of a header and through function pointers are not seen.
"""
import os
import subprocess
import sys


def symbols(path):
    out = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDRBGS":
            defined.add(parts[2])
    return defined, undefined


def sccs(nodes, edges):
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in nodes:
        if v not in index:
            visit(v)
    return out


def main():
    d = sys.argv[1]
    objs = sorted(f for f in os.listdir(d) if f.endswith(".o"))
    syms = {o.removesuffix(".c.o"): symbols(os.path.join(d, o)) for o in objs}
    names = sorted(syms)
    edges = {}
    for a in names:
        for b in names:
            if a != b:
                used = syms[a][1] & syms[b][0]
                if used:
                    edges.setdefault(a, set()).add(b)
                    print(f"{a:>12} -> {b:<12} {' '.join(sorted(used))}")
    pairs = sum(1 for i, a in enumerate(names) for b in names[i + 1:]
                if b in edges.get(a, ()) or a in edges.get(b, ()))
    total = len(names) * (len(names) - 1) // 2
    both = sum(1 for i, a in enumerate(names) for b in names[i + 1:]
               if b in edges.get(a, ()) and a in edges.get(b, ()))
    print(f"files: {len(names)}; pairs with a call: {pairs} of {total}; pairs calling both ways: {both}")
    for comp in sccs(names, edges):
        if len(comp) > 1:
            print(f"circle of {len(comp)}: {' '.join(comp)}")


main()

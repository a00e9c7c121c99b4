#!/usr/bin/python3
"""The layout rules of hwspy's C sources (shared/STYLE.md), checked on the source tree alone.

    python3 tests/check_layers.py SRC_ROOT      (meson: meson test -C build check-layers)

1. The include graph is one way: cli -> record -> {sampler, pyframes, symbolizer, output} -> base.
   Every `#include "DIR/..."` in a .c or .h file under cli/, record/, sampler/, pyframes/,
   symbolizer/, output/ or base/ (at any depth) whose DIR is one of those folders is an arrow
   from the file's folder to DIR, and must be one of
       base       -> (nothing else)
       output     -> base
       sampler, pyframes, symbolizer -> base       (not each other, not output)
       record     -> sampler, pyframes, symbolizer, output, base
       cli        -> any
   (an include of the file's own folder, or of a path that names none of them, is no arrow;
   tests/ and bench/ are not checked). The same holds for the dependencies of each
   static_library() and declare_dependency() in those folders' meson.build files, and of what
   they link_with: a `NAME_dep` or `NAME_lib` (or a list variable holding some) defined in folder
   F is an arrow to F; external dependencies (zlib, libdw, threads ...) are none.
2. The folder record/ exists: the sample pipeline is a stage of its own (the issue "the recorder
   as a stage of its own"), not part of cli/.
3. No C function in those folders is over MAX_LINES lines: a function runs from its line holding
   only `{` at column 0 to the next line starting with `}` at column 0, both counted.

Prints every violation, one per line (FILE:LINE: ...), and exits 1 if there is any; else one
line saying what was checked, exit 0. Standard library only; needs no build.
"""
import os
import re
import sys

MAX_LINES = 120
LAYERS = ['cli', 'record', 'sampler', 'pyframes', 'symbolizer', 'output', 'base']
STAGES = ['sampler', 'pyframes', 'symbolizer']
ALLOWED = {
    'base': set(),
    'output': {'base'},
    'sampler': {'base'},
    'pyframes': {'base'},
    'symbolizer': {'base'},
    'record': {'sampler', 'pyframes', 'symbolizer', 'output', 'base'},
    'cli': set(LAYERS),
}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SIGNATURE_NAME = re.compile(r'([A-Za-z_][A-Za-z_0-9]*)\s*\(')


def sources(root, layer, exts):
    top = os.path.join(root, layer)
    for d, dirs, files in os.walk(top):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(exts):
                yield os.path.join(d, f)


def read_lines(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        return f.read().split('\n')


def arrow_problem(src, dst):
    if dst == src or dst in ALLOWED[src]:
        return None
    if src in STAGES and dst in STAGES:
        why = 'stages do not include each other'
    elif dst in ('cli', 'record'):
        why = '%s is above %s: call up through a callback type %s declares' % (dst, src, src)
    else:
        why = '%s may use only %s' % (src, ', '.join(sorted(ALLOWED[src])) or
                                          'its own files')
    return '%s -> %s not allowed (%s)' % (src, dst, why)


def check_includes(root, out):
    n = 0
    for layer in LAYERS:
        for path in sources(root, layer, ('.c', '.h')):
            for no, line in enumerate(read_lines(path), 1):
                m = INCLUDE.match(line)
                if not m or '/' not in m.group(1):
                    continue
                dst = m.group(1).split('/')[0]
                if dst not in LAYERS:
                    continue
                n += 1
                p = arrow_problem(layer, dst)
                if p:
                    out.append('%s:%d: #include "%s": %s' % (rel(root, path), no, m.group(1), p))
    return n


# ---------------------------------------------------------------------------- meson.build

def calls(text, func):
    """(start offset, argument text) of each call func(...) in text (comments stripped)."""
    for m in re.finditer(r'\b%s\s*\(' % func, text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {'(': 1, ')': -1}.get(text[i], 0)
            i += 1
        yield m.start(), text[m.end():i - 1]


def strip_comments(text):
    return re.sub(r"#[^\n']*(?=\n)|#[^\n]*$", '', text)


def keyword_value(args, key):
    """The text of `key : VALUE` in a call's arguments: a [list] or an identifier."""
    m = re.search(r'\b%s\s*:\s*' % key, args)
    if not m:
        return None
    rest = args[m.end():]
    if rest.startswith('['):
        depth, i = 0, 0
        for i, c in enumerate(rest):
            depth += {'[': 1, ']': -1}.get(c, 0)
            if depth == 0:
                break
        return rest[:i + 1]
    m = re.match(r'[A-Za-z_][A-Za-z_0-9]*', rest)
    return m.group(0) if m else None


def list_vars(text):
    """name -> identifiers of `name = [...]` and `name += ...` assignments."""
    out = {}
    for m in re.finditer(r'^\s*([A-Za-z_]\w*)\s*(\+?=)\s*(\[[^\]]*\]|[A-Za-z_]\w*)\s*$', text,
                         re.M):
        ids = re.findall(r'\b[A-Za-z_]\w*\b', m.group(3))
        if m.group(2) == '=':
            out[m.group(1)] = ids
        else:
            out.setdefault(m.group(1), []).extend(ids)
    return out


def expand(ids, lists, seen=()):
    for i in ids:
        if i in lists and i not in seen:
            yield from expand(lists[i], lists, seen + (i,))
        else:
            yield i


def check_meson(root, out):
    files = {}
    owner = {}          # NAME_dep -> the folder that declares it
    for layer in LAYERS:
        path = os.path.join(root, layer, 'meson.build')
        if os.path.exists(path):
            with open(path, encoding='utf-8') as f:
                files[layer] = (path, strip_comments(f.read()))
    for layer, (_, text) in files.items():
        for m in re.finditer(r'^\s*([A-Za-z_]\w*)\s*=\s*(declare_dependency|static_library|'
                             r'library|shared_library)\s*\(', text, re.M):
            owner[m.group(1)] = layer
    n = 0
    for layer, (path, text) in files.items():
        lists = list_vars(text)
        for func in ('static_library', 'declare_dependency', 'library', 'shared_library'):
            for start, args in calls(text, func):
                no = text.count('\n', 0, start) + 1
                for key in ('dependencies', 'link_with'):
                    value = keyword_value(args, key) or ''
                    ids = re.findall(r'\b[A-Za-z_]\w*\b', value)
                    for dep in expand(ids, lists):
                        if dep not in owner:
                            continue
                        n += 1
                        p = arrow_problem(layer, owner[dep])
                        if p:
                            out.append('%s:%d: %s(... %s: %s): %s'
                                       % (rel(root, path), no, func, key, dep, p))
    return n


# ---------------------------------------------------------------------------- function length

def function_name(lines, brace):
    """The name of the function whose body opens at lines[brace] ('{'), and its line index."""
    i = brace - 1
    head = []
    while i >= 0 and lines[i].strip() and not lines[i].startswith(('}', '#')) and \
            not lines[i].rstrip().endswith((';', '*/')) and len(head) < 12:
        head.insert(0, (i, lines[i]))
        i -= 1
    for idx, text in head:
        m = SIGNATURE_NAME.search(text)
        if m:
            return m.group(1), idx
    return None, brace


def check_lengths(root, out):
    n = 0
    for layer in LAYERS:
        for path in sources(root, layer, ('.c', '.h')):
            lines = read_lines(path)
            i = 0
            while i < len(lines):
                if lines[i].rstrip() != '{':
                    i += 1
                    continue
                name, at = function_name(lines, i)
                end = i + 1
                while end < len(lines) and not lines[end].startswith('}'):
                    end += 1
                if name:
                    n += 1
                    length = end - i + 1
                    if length > MAX_LINES:
                        out.append('%s:%d: %s() is %d lines (over %d)'
                                   % (rel(root, path), at + 1, name, length, MAX_LINES))
                i = end + 1
    return n


def rel(root, path):
    return os.path.relpath(path, root)


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.stderr.write('usage: %s SRC_ROOT\n' % sys.argv[0])
        return 2
    root = sys.argv[1]
    out = []
    if not os.path.isdir(os.path.join(root, 'record')):
        out.append('record/: missing: the recorder (the sample pipeline, now in cli/) is a '
                   'stage of its own: cli -> record -> {sampler, pyframes, symbolizer, output}')
    n_inc = check_includes(root, out)
    n_dep = check_meson(root, out)
    n_fn = check_lengths(root, out)
    for line in out:
        print(line)
    print('%s: %d includes, %d meson dependencies and links, %d functions checked: %d violations'
          % ('FAIL' if out else 'ok', n_inc, n_dep, n_fn, len(out)))
    return 1 if out else 0


if __name__ == '__main__':
    sys.exit(main())

#!/usr/bin/python3
"""The layout rules of hwspy's C sources (shared/STYLE.md), checked on the source tree alone.

    python3 tests/check_layers.py SRC_ROOT      (meson: meson test -C build check-layers)

1. The include graph is one way:
       cli -> include/hwspy.h (lib/: libhwspy) -> analysis -> record
           -> {sampler, pyframes, symbolizer, output} -> base.
   Every `#include "DIR/..."` in a .c or .h file under one of those folders (at any depth)
   whose DIR is one of them is an arrow from the file's folder to DIR, and must be one of
       base       -> (nothing else)
       output     -> base
       sampler, pyframes, symbolizer -> base       (not each other, not output)
       record     -> sampler, pyframes, symbolizer, output, base
       analysis   -> record, sampler, pyframes, symbolizer, output, base
       lib        -> include and every stage (it implements include/hwspy.h over them)
       include    -> (nothing: hwspy.h includes system headers alone)
       cli        -> include, base   (the public header and the leaf helpers; not
                                      base/procfs.h, a /proc reader)
       python     -> include         (the package's extension: a client of hwspy.h alone)
   (an include of the file's own folder, or of a path that names none of them, is no arrow;
   tests/ and bench/ are not checked). The same holds for the dependencies of each
   static_library(), both_libraries(), executable() and declare_dependency() in those folders'
   meson.build files, and of what they link_with / link_whole: a `NAME_dep` or `NAME_lib` (or a
   list variable holding some) defined in folder F is an arrow to F (lib/'s, libhwspy, counts
   as include/: linking the library is using its header); external dependencies (zlib, libdw,
   threads, ncurses ...) are none.
2. The folders record/ and analysis/ exist: the sample pipeline and the analysis (counting,
   findings, the live table) are stages of their own, not part of cli/.
3. No C function in those folders is over MAX_LINES lines: a function runs from its line holding
   only `{` at column 0 to the next line starting with `}` at column 0, both counted.
4. cli/ (and python/, the package's extension, a client like it: its calls and paths checked
   the same way, without the line limit) is the command line only: at most CLI_MAX_LINES lines in all its .c and .h files (under
   3,000, as the libhwspy issue asks; --help texts are generated from doc/options.txt), and no
   call of ptrace(), syscall(), perf_event_open, bpf, process_vm_readv, opendir() and no
   "/proc/..." or "/sys/..." path built or opened there (its messages may name such paths in
   words: only a path given to a call or a format with a conversion counts).

Prints every violation, one per line (FILE:LINE: ...), and exits 1 if there is any; else one
line saying what was checked, exit 0. Standard library only; needs no build.
"""
import os
import re
import sys

MAX_LINES = 120
# issue 20 asks for under 3,000; cli/ is at 3,066 (what is left is mostly message and usage
# text, and the choices noted in the note): the limit holds it there until then
# issue 20 ended at 2,939; a command added since brings its options' parsing alone (monitor:
# 145 lines, its words and engine in lib/), which this allows for
CLI_MAX_LINES = 2999
LAYERS = ['cli', 'python', 'lib', 'include', 'analysis', 'record', 'sampler', 'pyframes', 'symbolizer',
          'output', 'base']
STAGES = ['sampler', 'pyframes', 'symbolizer']
ALLOWED = {
    'base': set(),
    'output': {'base'},
    'sampler': {'base'},
    'pyframes': {'base'},
    'symbolizer': {'base'},
    'record': {'sampler', 'pyframes', 'symbolizer', 'output', 'base'},
    'analysis': {'record', 'sampler', 'pyframes', 'symbolizer', 'output', 'base'},
    'lib': {'include', 'analysis', 'record', 'sampler', 'pyframes', 'symbolizer', 'output',
            'base'},
    'include': set(),
    'cli': {'include', 'base'},
    'python': {'include'},
}
# headers of an allowed folder that a layer still may not include
FORBIDDEN = {'cli': {'base/procfs.h': 'a /proc reader: the library reads /proc, cli words it'}}
# what cli/ may not call or build: the engine's system interfaces
CLI_CALLS = re.compile(r'\b(ptrace|syscall|perf_event_open|sys_perf_event_open|bpf|'
                       r'process_vm_readv|opendir|fdopendir)\s*\(')
CLI_PATHS = re.compile(r'"/(proc|sys)/[^"]*%|\b(open|openat|fopen|opendir|stat|lstat|access|'
                       r'readlink)\s*\(\s*"/(proc|sys)/')
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
    elif src == 'cli':
        why = 'cli/ includes only include/hwspy.h and base/: the engine is libhwspy\'s'
    elif src == 'python':
        why = ('python/ includes only include/hwspy.h (and its own files): what the package '
               'needs goes into libhwspy')
    elif dst in ('cli', 'lib', 'analysis', 'record'):
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
                if not p and m.group(1) in FORBIDDEN.get(layer, {}):
                    p = '%s may not include %s (%s)' % (layer, m.group(1),
                                                       FORBIDDEN[layer][m.group(1)])
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
        paths = [os.path.join(root, layer, 'meson.build')]
        if layer == 'python':       # python/hwspy/meson.build builds the extension
            paths = sorted(p for p in sources(root, layer, ('meson.build',)))
        for path in paths:
            if os.path.exists(path):
                with open(path, encoding='utf-8') as f:
                    files[path] = (layer, strip_comments(f.read()))
    for _, (layer, text) in files.items():
        for m in re.finditer(r'^\s*([A-Za-z_]\w*)\s*=\s*(declare_dependency|static_library|'
                             r'library|shared_library|both_libraries)\s*\(', text, re.M):
            owner[m.group(1)] = layer
    n = 0
    for path, (layer, text) in files.items():
        lists = list_vars(text)
        for func in ('static_library', 'declare_dependency', 'library', 'shared_library',
                     'both_libraries', 'executable', 'shared_module'):
            for start, args in calls(text, func):
                no = text.count('\n', 0, start) + 1
                for key in ('dependencies', 'link_with', 'link_whole'):
                    value = keyword_value(args, key) or ''
                    ids = re.findall(r'\b[A-Za-z_]\w*\b', value)
                    for dep in expand(ids, lists):
                        if dep not in owner:
                            continue
                        n += 1
                        # linking libhwspy is using include/hwspy.h: the library is its body
                        dst = 'include' if owner[dep] == 'lib' and layer != 'lib' else owner[dep]
                        p = arrow_problem(layer, dst)
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


# ---------------------------------------------------------------------------- cli: command line only

def strip_c_comments(text):
    return re.sub(r'/\*.*?\*/|//[^\n]*', lambda m: '\n' * m.group(0).count('\n'), text, flags=re.S)


def check_cli(root, out):
    total = 0
    for path in list(sources(root, 'cli', ('.c', '.h'))) + list(sources(root, 'python',
                                                                         ('.c', '.h'))):
        text = open(path, encoding='utf-8', errors='replace').read()
        if rel(root, path).startswith('cli' + os.sep):
            total += text.count('\n')
        for no, line in enumerate(strip_c_comments(text).split('\n'), 1):
            m = CLI_CALLS.search(line) or CLI_PATHS.search(line)
            if m:
                out.append('%s:%d: %s/ calls or builds %r: the engine\'s, behind '
                           'include/hwspy.h' % (rel(root, path), no,
                                                rel(root, path).split(os.sep)[0], m.group(0)))
    if total > CLI_MAX_LINES:
        out.append('cli/: %d lines (over %d): what is not command line (options, usage, '
                   'messages, exit codes, drawing) belongs in the library' % (total, CLI_MAX_LINES))
    return total


def rel(root, path):
    return os.path.relpath(path, root)


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.stderr.write('usage: %s SRC_ROOT\n' % sys.argv[0])
        return 2
    root = sys.argv[1]
    out = []
    for stage, what in (('record', 'the recorder (the sample pipeline)'),
                        ('analysis', 'the analysis (counting, findings, the live table)')):
        if not os.path.isdir(os.path.join(root, stage)):
            out.append('%s/: missing: %s is a stage of its own, not part of cli/' % (stage, what))
    n_inc = check_includes(root, out)
    n_dep = check_meson(root, out)
    n_fn = check_lengths(root, out)
    n_cli = check_cli(root, out)
    for line in out:
        print(line)
    print('%s: %d includes, %d meson dependencies and links, %d functions, %d lines of cli/ '
          'checked: %d violations' % ('FAIL' if out else 'ok', n_inc, n_dep, n_fn, n_cli,
                                      len(out)))
    return 1 if out else 0


if __name__ == '__main__':
    sys.exit(main())

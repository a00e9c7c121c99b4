#!/usr/bin/env python3
"""gen_options: hwspy's command line, from its one source (doc/options.txt), into what reads it.

    gen_options.py OPTIONS --c-header H --c-source C        (cli/meson.build)
    gen_options.py OPTIONS --man M --bash B --zsh Z [--events EVENTS.c] [--readme README.md]
                   [--version V]                            (doc/meson.build)

writes: H and C, per command the getopt long-option table, the short-options string, the
aliases (a peer's short spelling of one of ours: -r for -F), the options accepted and ignored
(-g), the one-line refusals of a peer's spelling hwspy does not take, and the --help text,
with one OPT_* constant per long option name (its short letter where it has one, the same in
every command); M, the man page hwspy.1 (its EXAMPLES: README.md's usage block); B and Z, the
bash and zsh completions (event names for -e: EVENTS.c's table, sampler/events.c).

The format of OPTIONS (see the file itself): keyword lines at column 0 (program, command NAME,
summary TEXT, args KIND, usage, text, options COLUMN, group NAME COLUMN, use NAME, after,
refuse SPELLING..., section TITLE), option heads at column 0 starting with '-', and blocks of
lines indented by two spaces (an empty line is a blank line of the block) below each. '#' at
column 0 is a comment. Standard library only; any error names OPTIONS:LINE and exits 1.
"""
import argparse
import re
import sys

KINDS = ('none', 'file', 'pid', 'event', 'command', 'words')
ITEM = re.compile(r'(-[A-Za-z]|--[a-z][a-z0-9-]*)(?: (\S+))?$')


class Error(Exception):
    pass


class Option:
    """One option: its short letter and long name (either may be absent), its argument."""
    def __init__(self, short, long, arg):
        self.short, self.long, self.arg = short, long, arg
        self.also, self.complete, self.ignored = [], None, False


class Entry:
    """One head line of the help (one or several options) and its help lines."""
    def __init__(self, head, opts, attrs, line):
        self.head, self.opts, self.attrs, self.line = head, opts, attrs, line
        self.help = []


class Command:
    def __init__(self, name):
        self.name, self.summary, self.args = name, '', 'none'
        self.usage, self.text, self.after = [], [], []
        self.items = []                 # ('entries', column, [Entry]) or ('use', name)
        self.refusals = []              # ([spellings], [lines])


def parse_head(text, line):
    """'-p, --pid PID | complete: pid; also: -r, --freq' -> Entry."""
    head, _, attr_text = text.partition(' |')
    head = head.rstrip()
    attrs = {}
    for a in filter(None, (s.strip() for s in attr_text.split(';'))):
        k, _, v = a.partition(':')
        attrs[k.strip()] = v.strip()
    items = []
    for it in head.split(', '):
        m = ITEM.match(it)
        if not m:
            raise Error('%d: cannot read option %r in head %r' % (line, it, head))
        items.append((m.group(1), m.group(2)))
    opts, i = [], 0
    while i < len(items):
        name, arg = items[i]
        if not name.startswith('--') and i + 1 < len(items) and items[i + 1][0].startswith('--'):
            opts.append(Option(name[1], items[i + 1][0][2:], items[i + 1][1] or arg))
            i += 2
            continue
        opts.append(Option(None if name.startswith('--') else name[1],
                           name[2:] if name.startswith('--') else None, arg))
        i += 1
    e = Entry(head, opts, attrs, line)
    for k, v in attrs.items():
        if k == 'also':
            opts[0].also = [s.strip() for s in v.split(',')]
        elif k == 'complete':
            if v.split()[0] not in KINDS:
                raise Error('%d: unknown completion kind %r' % (line, v))
            for o in opts:
                o.complete = v
        elif k == 'ignored':
            for o in opts:
                o.ignored = True
        else:
            raise Error('%d: unknown attribute %r' % (line, k))
    for o in opts:
        if o.complete is None:
            o.complete = 'none'
    return e


def parse(path):
    program, commands, groups, sections = None, [], {}, []
    block = None            # the list indented lines go to
    cur = None              # the Command (or group's list) being read
    entries = None
    with open(path, encoding='utf-8') as f:
        lines = f.read().split('\n')
    for n, raw in enumerate(lines, 1):
        if raw.startswith('#'):
            continue
        if raw == '' or raw.startswith('  '):
            if block is None:
                if raw == '':
                    continue
                raise Error('%s:%d: indented line outside a block' % (path, n))
            block.append(raw[2:])
            continue
        word, _, rest = raw.partition(' ')
        rest = rest.strip()
        if raw.startswith('-'):
            if entries is None:
                raise Error('%s:%d: option head outside options' % (path, n))
            try:
                e = parse_head(raw, n)
            except Error as err:
                raise Error('%s:%s' % (path, err))
            entries.append(e)
            block = e.help
            continue
        block = None
        if word in ('program', 'command'):
            cur = Command(rest or 'hwspy')
            if word == 'program':
                program = cur
            else:
                commands.append(cur)
            entries = None
        elif word == 'group':
            name, col = rest.split()
            entries = []
            groups[name] = (int(col), entries)
        elif word == 'summary':
            cur.summary = rest
        elif word == 'args':
            cur.args = rest
        elif word in ('usage', 'text', 'after'):
            block = getattr(cur, word)
            entries = None
        elif word == 'options':
            entries = []
            cur.items.append(('entries', int(rest), entries))
        elif word == 'use':
            cur.items.append(('use', rest))
        elif word == 'refuse':
            block = []
            cur.refusals.append((rest.split(), block))
            entries = None
        elif word == 'section':
            block = []
            sections.append((rest, block))
            entries = None
        else:
            raise Error('%s:%d: unknown keyword %r' % (path, n, word))
    for c in [program] + commands + [v[1] for v in sections]:
        for lst in ([c.usage, c.text, c.after] + [r[1] for r in c.refusals]) \
                if isinstance(c, Command) else [c]:
            while lst and lst[-1] == '':
                lst.pop()
    for c in commands:
        for e in all_entries(c, groups):
            while e.help and e.help[-1] == '':
                e.help.pop()
    return program, commands, groups, sections


def all_entries(c, groups):
    for item in c.items:
        if item[0] == 'use':
            if item[1] not in groups:
                raise Error('command %s: no group %r' % (c.name, item[1]))
            yield from groups[item[1]][1]
        else:
            yield from item[2]


def entry_blocks(c, groups):
    """(column, [Entry]) in help order."""
    for item in c.items:
        yield groups[item[1]] if item[0] == 'use' else (item[1], item[2])


def options_of(c, groups):
    return [o for e in all_entries(c, groups) for o in e.opts]


# ---------------------------------------------------------------------------------------------
# --help

def help_text(c, groups, program=False, commands=()):
    out = []
    for i, u in enumerate(c.usage):
        out.append(('usage: ' if i == 0 else '       ') + u)
    if c.text:
        out += [''] + c.text
    if program:
        out += ['', 'commands:'] + ['  %-8s %s' % (k.name, k.summary) for k in commands]
    first = True
    for col, entries in entry_blocks(c, groups):
        if first:
            out.append('')
            first = False
        for e in entries:
            head = ('      ' if e.head.startswith('--') else '  ') + e.head
            lead = head.ljust(col) if len(head) < col else head + '   '
            out.append(lead + (e.help[0] if e.help else ''))
            out += [' ' * col + h if h else '' for h in e.help[1:]]
    if c.after:
        out += [''] + c.after
    return '\n'.join(out) + '\n'


# ---------------------------------------------------------------------------------------------
# C

def c_string(s, indent='\t'):
    """s as C string literal lines, one per line of s."""
    parts = s.split('\n')
    lits = []
    for i, p in enumerate(parts):
        if i == len(parts) - 1 and p == '':
            break
        nl = '\\n' if i < len(parts) - 1 else ''
        lits.append(indent + '"' + p.replace('\\', '\\\\').replace('"', '\\"') + nl + '"')
    return '\n'.join(lits) if lits else indent + '""'


def c_ident(name):
    return name.upper().replace('-', '_')


def opt_values(commands, groups):
    """OPT_NAME -> value, checked: a long name has one short letter in every command."""
    shorts, letters = {}, {}
    for c in commands:
        for o in options_of(c, groups):
            if o.long is None:
                continue
            if o.short:
                if shorts.get(o.long, o.short) != o.short:
                    raise Error('--%s is -%s in one command, -%s in another'
                                % (o.long, shorts[o.long], o.short))
                if letters.get(o.short, o.long) != o.long:
                    raise Error('-%s is --%s in one command, --%s in another'
                                % (o.short, letters[o.short], o.long))
                shorts[o.long] = o.short
                letters[o.short] = o.long
            else:
                shorts.setdefault(o.long, None)
    values, n = {}, 0
    for name in sorted(shorts):
        if shorts[name]:
            values[name] = "'%s'" % shorts[name]
        else:
            values[name] = '0x%x' % (0x100 + n)
            n += 1
    return values


def refusal_rows(c):
    rows = []
    for spellings, lines in c.refusals:
        text = ' '.join(l.strip() for l in lines)
        for sp in spellings:
            rows.append('\t{ "%s", "%s" },' % (sp, text.replace('\\', '\\\\').replace('"', '\\"')))
    return rows + ['\t{ NULL, NULL },']


def write_c(program, commands, groups, hpath, cpath):
    values = opt_values(commands, groups)
    h = ['/* Generated by doc/gen_options.py from doc/options.txt: edit that file, not this one.',
         ' * The options of every command (cli/opts.h says how they are used): OPT_NAME is what',
         ' * getopt_long gives for --NAME (its short letter where it has one). */',
         '#ifndef HWSPY_CLI_OPTIONS_H', '#define HWSPY_CLI_OPTIONS_H', '',
         '#include "cli/opts.h"', '', 'enum {']
    h += ['\tOPT_%s = %s,' % (c_ident(k), v) for k, v in values.items()]
    h += ['};', '']
    h += ['/* "usage: hwspy COMMAND ...": the commands and their summaries */',
          'extern const char cli_main_help[];',
          '/* a peer\'s command hwspy has not (perf report): the line said instead */',
          'extern const struct cli_refusal cli_main_refusals[];']
    for c in commands:
        h.append('extern const struct cli_opts cli_opts_%s;' % c.name)
    h += ['', '#endif', '']
    s = ['/* Generated by doc/gen_options.py from doc/options.txt: edit that file, not this one. */',
         '#include <getopt.h>', '#include <stddef.h>', '', '#include "cli/options.h"', '']
    s += ['const char cli_main_help[] =',
          c_string(help_text(program, groups, True, commands)) + ';', '']
    s += ['const struct cli_refusal cli_main_refusals[] = {'] + refusal_rows(program) + ['};', '']
    for c in commands:
        opts = options_of(c, groups)
        short = '+' if c.args == 'command' else ''
        short += ':'
        long_rows, aliases, ignored = [], [], ''
        for o in opts:
            has = 'required_argument' if o.arg else 'no_argument'
            if o.ignored:
                ignored += o.short
            if o.short:
                short += o.short + (':' if o.arg else '')
            val = 'OPT_%s' % c_ident(o.long) if o.long else "'%s'" % o.short
            if o.long:
                long_rows.append('\t{ "%s", %s, NULL, %s },' % (o.long, has, val))
            for a in o.also:
                if a.startswith('--'):
                    long_rows.append('\t{ "%s", %s, NULL, %s },' % (a[2:], has, val))
                else:
                    short += a[1] + (':' if o.arg else '')
                    aliases.append("\t{ '%s', %s }," % (a[1], val))
        s.append('static const struct option %s_longopts[] = {' % c.name)
        s += long_rows + ['\t{ NULL, 0, NULL, 0 },', '};']
        s.append('static const struct cli_alias %s_aliases[] = {' % c.name)
        s += aliases + ['\t{ 0, 0 },', '};']
        s.append('static const struct cli_refusal %s_refusals[] = {' % c.name)
        s += refusal_rows(c) + ['};']
        s += ['const struct cli_opts cli_opts_%s = {' % c.name,
              '\t.command = "%s",' % c.name,
              '\t.shortopts = "%s",' % short,
              '\t.ignored = "%s",' % ignored,
              '\t.longopts = %s_longopts,' % c.name,
              '\t.aliases = %s_aliases,' % c.name,
              '\t.refusals = %s_refusals,' % c.name,
              '\t.help =', c_string(help_text(c, groups), '\t\t') + ',', '};', '']
    with open(hpath, 'w') as f:
        f.write('\n'.join(h))
    with open(cpath, 'w') as f:
        f.write('\n'.join(s))


# ---------------------------------------------------------------------------------------------
# man page

def roff(s):
    s = s.replace('\\', '\\e').replace('-', '\\-')
    return s


def roff_lines(lines):
    out = []
    for l in lines:
        if l == '':
            out.append('.PP')
            continue
        l = roff(l.strip())
        out.append('\\&' + l if l.startswith(('.', "'")) else l)
    return out


def man_head(e):
    parts = []
    for it in e.head.split(', '):
        m = ITEM.match(it)
        p = '\\fB%s\\fR' % roff(m.group(1))
        if m.group(2):
            p += ' \\fI%s\\fR' % roff(m.group(2))
        parts.append(p)
    also = [a for o in e.opts for a in o.also]
    return ', '.join(parts) + (' (also %s)' % ', '.join('\\fB%s\\fR' % roff(a) for a in also)
                               if also else '')


def readme_examples(path):
    if not path:
        return []
    with open(path, encoding='utf-8') as f:
        text = f.read()
    m = re.search(r'^## Usage\s*\n+```\n(.*?)\n```', text, re.S | re.M)
    return m.group(1).split('\n') if m else []


def write_man(program, commands, groups, sections, path, readme, version):
    out = ['.\\" Generated by doc/gen_options.py from doc/options.txt: edit that file.',
           '.TH HWSPY 1 "" "hwspy %s" "User Commands"' % version, '.nh', '.ad l',
           '.SH NAME', 'hwspy \\- %s' % roff('sample a Python process with perf events and '
                                               'attribute them to Python functions'),
           '.SH SYNOPSIS']
    for c in commands:
        usage = []
        for u in c.usage:       # an indented line continues the one before
            if u.startswith(' ') and usage:
                usage[-1] += ' ' + u.strip()
            else:
                usage.append(u)
        for u in usage:
            out += ['.br', roff(u)]
    out += ['.SH DESCRIPTION'] + roff_lines(program.text)
    out += ['.SH COMMANDS']
    for c in commands:
        out += ['.SS "hwspy %s"' % c.name, roff(c.summary) + '.', '.PP']
        out += roff_lines(c.text)
        for col, entries in entry_blocks(c, groups):
            for e in entries:
                out += ['.TP', man_head(e)] + roff_lines([' '.join(h.strip() for h in e.help)])
        if c.after:
            out += ['.PP'] + roff_lines(c.after)
    for title, lines in sections:
        out += ['.SH %s' % title.upper()] + roff_lines(lines)
    ex = readme_examples(readme)
    if ex:
        out += ['.SH EXAMPLES', '.nf'] + [('\\&' + roff(l)) for l in ex] + ['.fi']
    out += ['.SH SEE ALSO', '\\fBperf\\fR(1), \\fBpy\\-spy\\fR(1), \\fBflamegraph.pl\\fR(1)', '']
    with open(path, 'w') as f:
        f.write('\n'.join(out))


# ---------------------------------------------------------------------------------------------
# completions

def event_names(path):
    if not path:
        return []
    names = []
    with open(path, encoding='utf-8') as f:
        for m in re.finditer(r'\{ "([^"]+)", (?:NULL|"([^"]+)"), EVENT_', f.read()):
            names += [m.group(1)] + ([m.group(2)] if m.group(2) else [])
    return names


def first_sentence(e):
    t = ' '.join(h.strip() for h in e.help)
    t = re.split(r'[;(]| \(', t)[0].strip()
    return t[:70]


def write_bash(commands, groups, events, path):
    names = ' '.join(c.name for c in commands)
    out = ['# bash completion for hwspy; generated by doc/gen_options.py from doc/options.txt',
           "_hwspy_events='%s'" % ' '.join(events), '',
           '_hwspy_arg() {  # the argument of an option: kind, word',
           '\tlocal cur=$2 pre=',
           '\tcase $1 in',
           '\tfile) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")) ;;',
           '\tpid) COMPREPLY=($(compgen -W "$(cd /proc && printf \'%s \' [0-9]*)" -- "$cur")) ;;',
           '\tevent)',
           '\t\t[[ $cur == *,* ]] && pre=${cur%,*},',
           '\t\tCOMPREPLY=($(compgen -P "$pre" -W "$_hwspy_events" -- "${cur##*,}")) ;;',
           '\tcommand) COMPREPLY=($(compgen -c -- "$cur")) ;;',
           '\t*) COMPREPLY=($(compgen -W "${1#words }" -- "$cur")) ;;',
           '\tesac',
           '}', '',
           '_hwspy() {',
           '\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} i',
           '\tCOMPREPLY=()',
           '\tif ((COMP_CWORD == 1)); then',
           '\t\tCOMPREPLY=($(compgen -W "%s --help --version" -- "$cur"))' % names,
           '\t\treturn',
           '\tfi',
           '\tfor ((i = 2; i < COMP_CWORD; i++)); do',
           '\t\tif [[ ${COMP_WORDS[i]} == -- ]]; then',
           '\t\t\tif ((i + 1 == COMP_CWORD)); then _hwspy_arg command "$cur"',
           '\t\t\telse _hwspy_arg file "$cur"; fi',
           '\t\t\treturn',
           '\t\tfi',
           '\tdone',
           '\tcase ${COMP_WORDS[1]} in']
    for c in commands:
        opts = options_of(c, groups)
        words, cases = [], {}
        for o in opts:
            spell = (['-' + o.short] if o.short else []) + (['--' + o.long] if o.long else []) \
                + o.also
            words += spell
            if o.arg:
                cases.setdefault(o.complete, []).extend(spell)
        out.append('\t%s)' % c.name)
        if cases:
            out.append('\t\tcase $prev in')
            for kind, spell in cases.items():
                out.append('\t\t%s) _hwspy_arg "%s" "$cur"; return ;;' % ('|'.join(spell), kind))
            out.append('\t\tesac')
        out += ['\t\tif [[ $cur == -* ]]; then',
                '\t\t\tCOMPREPLY=($(compgen -W "%s" -- "$cur"))' % ' '.join(words),
                '\t\telse',
                '\t\t\t_hwspy_arg %s "$cur"' % ('file' if c.args in ('file', 'command') else
                                                 'none'),
                '\t\tfi ;;']
    out += ['\tesac', '}', 'complete -F _hwspy hwspy', '']
    with open(path, 'w') as f:
        f.write('\n'.join(out))


def zsh_quote(s):
    return s.replace("'", "'\\''").replace('[', '\\[').replace(']', '\\]')


def write_zsh(commands, groups, events, path):
    out = ['#compdef hwspy', '# generated by doc/gen_options.py from doc/options.txt', '',
           '_hwspy_events() { _values -s , event %s }' % ' '.join(events), '',
           '_hwspy() {', '\tlocal -a cmds', '\tcmds=(']
    out += ["\t\t'%s:%s'" % (c.name, zsh_quote(c.summary)) for c in commands]
    out += ['\t)', '\tif (( CURRENT == 2 )); then', "\t\t_describe 'hwspy command' cmds",
            '\t\treturn', '\tfi', '\tlocal cmd=$words[2]', '\tshift words',
            '\t(( CURRENT-- ))', '\tcase $cmd in']
    actions = {'none': '', 'file': '_files', 'pid': '_pids', 'event': '_hwspy_events',
               'command': '_command_names -e'}
    for c in commands:
        specs = []
        for e in all_entries(c, groups):
            desc = zsh_quote(first_sentence(e))
            for o in e.opts:
                spell = (['-' + o.short] if o.short else []) + (['--' + o.long] if o.long else []) \
                    + o.also
                if o.arg:
                    kind = o.complete.split()[0]
                    act = actions.get(kind) if kind != 'words' else \
                        '(%s)' % ' '.join(o.complete.split()[1:])
                    tail = ':%s:%s' % (o.arg.lower().replace(':', ''), act or ' ')
                else:
                    tail = ''
                excl = '(%s)' % ' '.join(spell) if len(spell) > 1 else ''
                group = '{%s}' % ','.join(spell) if len(spell) > 1 else spell[0]
                specs.append("'%s'%s'[%s]%s'" % (excl, group, desc, tail) if excl else
                             "%s'[%s]%s'" % (group, desc, tail))
        if c.args == 'command':
            specs.append("'*::command:_normal'")
        elif c.args == 'file':
            specs.append("'*:file:_files'")
        out.append('\t%s)' % c.name)
        out.append('\t\t_arguments -s \\')
        out += ['\t\t\t%s \\' % sp for sp in specs[:-1]] + ['\t\t\t%s ;;' % specs[-1]]
    out += ['\tesac', '}', '', '_hwspy "$@"', '']
    with open(path, 'w') as f:
        f.write('\n'.join(out))


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('options')
    for a in ('c-header', 'c-source', 'man', 'bash', 'zsh', 'events', 'readme'):
        p.add_argument('--' + a)
    p.add_argument('--version', default='')
    a = p.parse_args()
    try:
        program, commands, groups, sections = parse(a.options)
        if a.c_header:
            write_c(program, commands, groups, a.c_header, a.c_source)
        events = event_names(a.events)
        if a.man:
            write_man(program, commands, groups, sections, a.man, a.readme, a.version)
        if a.bash:
            write_bash(commands, groups, events, a.bash)
        if a.zsh:
            write_zsh(commands, groups, events, a.zsh)
    except Error as e:
        print('gen_options: %s' % e, file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
